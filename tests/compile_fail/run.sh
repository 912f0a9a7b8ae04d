#!/usr/bin/env bash
# Compile-failure tests: each case must fail to compile with a message naming what is
# wrong; the control must compile (with -fsyntax-only: these check the front end only).
# Usage: run.sh COMPILER LANCET_SOURCE_ROOT [extra compiler flags...]
set -uo pipefail
cxx=${1:?usage: run.sh COMPILER LANCET_SOURCE_ROOT}
root=${2:?usage: run.sh COMPILER LANCET_SOURCE_ROOT}
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
flags=(-std=c++20 -fsyntax-only -I "$root/include" "$@")
failed=0

expect_error() {  # file, text the error must contain
  local out
  if out=$("$cxx" "${flags[@]}" "$here/$1" 2>&1); then
    echo "FAIL: $1 compiled, but must not"; failed=1; return
  fi
  if grep -qF -- "$2" <<<"$out"; then echo "PASS: $1 fails naming '$2'"
  else echo "FAIL: $1 failed without naming '$2':"; head -40 <<<"$out"; failed=1; fi
}

if out=$("$cxx" "${flags[@]}" "$here/good_policy.cpp" 2>&1); then echo "PASS: good_policy.cpp compiles"
else echo "FAIL: the control good_policy.cpp does not compile:"; head -40 <<<"$out"; exit 1; fi

expect_error not_a_policy.cpp "an encoding policy needs the member \`page_plan plan_page("
expect_error no_size_pages.cpp "an encoding policy needs the member \`page_sizing size_pages("
expect_error policy_for_2_0.cpp "Lance 2.0 files are written with the legacy encodings, which take no encoding policy"
exit $failed
