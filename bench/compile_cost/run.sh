#!/usr/bin/env bash
# Compile-cost benchmark: how long and how much memory it takes to compile a
# translation unit that uses lancet, relative to a baseline TU that uses only lancet's
# third-party dependencies (Boost.Asio, xsimd, zstd) and the standard library.
#
#   bench/compile_cost/run.sh [reps]              # reps: compiles per TU, best time kept (default 1)
#   bench/compile_cost/run.sh --rev REV [reps]    # lancet's headers (and src/) as of commit REV
#
# By default the working tree's include/ (and src/lancet.cpp) are compiled. With --rev,
# include/ and src/ are exported from that commit with `git archive` into a temporary
# directory (the repository is only read), so "before" numbers can be reproduced while the
# working tree is being changed; the TUs themselves always come from this directory.
#
# TUs are compiled one after the other (never in parallel), compile only (-c, no link),
# with the flags of the project's test build (scripts/test: -O2, the level the recorded
# figures were measured at; b_ndebug=false -> no -DNDEBUG, warning_level=3, native_arch
# -> -march=native). OPT=-O3 measures at meson's release default instead.
# When src/lancet.cpp exists (lancet's "compiled mode"), each lancet TU is compiled a
# second time with -DLANCET_COMPILED, and src/lancet.cpp itself once (the one-time cost).
#
# Wall seconds and peak memory come from GNU time (`%e %M`): %M is the peak RSS of the
# largest process of the compiler's tree (cc1plus, which g++ forks). CPU seconds (user +
# sys, `%U %S`) are shown too: on a shared machine other jobs stretch wall time (the
# baseline's most of all, in relative terms), CPU time much less. The baseline is compiled
# first and again last (the second row shows how much the load drifted); ratios use the
# better of the two. Targets are judged on the wall-time ratio. Exit status: 0 unless
# a TU fails to compile (its errors are printed); missed targets do not fail the run.
# Environment: CXX (default g++), OPT (default -O2), TUS (a space-separated subset of the
# lancet TUs, e.g. TUS="file_writer.cpp dataset_write.cpp"; default all), COMPILED=0 (skip
# the compiled-mode rows). pb_headers.cpp includes the protobuf message headers and uses
# nothing: what declaring the messages costs every TU that includes them.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
usage() { echo "usage: $0 [--rev REV] [reps]   (reps: a positive integer, default 1)" >&2; exit 2; }
rev=""
if [[ "${1:-}" == --rev ]]; then
  [[ $# -ge 2 ]] || usage
  rev="$2"; shift 2
fi
[[ $# -le 1 ]] || usage
reps="${1:-1}"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || usage
cxx="${CXX:-g++}"
gnu_time=/usr/bin/time
if ! "$gnu_time" -f '%e %M' true >/dev/null 2>&1; then
  echo "$0: needs GNU time at $gnu_time (Debian: apt-get install time)" >&2
  exit 2
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/lancet-compile-cost.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# src: the tree whose include/ and src/ are compiled (the working tree, or an export).
src="$root"
if [[ -n "$rev" ]]; then
  commit="$(git -C "$root" rev-parse --short --verify "$rev^{commit}")" || { echo "$0: unknown revision $rev" >&2; exit 2; }
  mkdir -p "$tmp/tree"
  paths=(include)
  git -C "$root" cat-file -e "$commit:src/lancet.cpp" 2>/dev/null && paths+=(src)
  git -C "$root" archive "$commit" "${paths[@]}" | tar -x -C "$tmp/tree" || { echo "$0: git archive $commit failed" >&2; exit 2; }
  src="$tmp/tree"
  tree_desc="include/ of commit $commit (git archive)"
else
  commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  dirty=""
  [[ -n "$(git -C "$root" status --porcelain -- include src 2>/dev/null)" ]] && dirty=" + uncommitted changes to include/ or src/"
  tree_desc="working tree $root (HEAD $commit$dirty)"
fi

# The flags meson passes to the test suites' compiles (tests/meson.build with the
# defaults of meson.build and meson_options.txt), minus dependency-file and colour flags.
flags=(-D_FILE_OFFSET_BITS=64 -Wall -Winvalid-pch -Wextra -Wpedantic -std=c++20 "${OPT:--O2}" -pthread
       -DBOOST_ALL_NO_LIB -Wno-missing-field-initializers -Wno-restrict -march=native
       "-I$src/include")

echo "== lancet compile cost: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "commit: $commit"
echo "lancet headers: $tree_desc"
echo "compiler: $("$cxx" --version | head -n 1)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $(nproc) cores"
echo "reps: $reps (best wall time kept; peak memory: the largest of the reps)"
echo "TUs: ${TUS:-all}; compiled mode: $([[ "${COMPILED:-1}" == 0 ]] && echo no || echo "if src/lancet.cpp exists")"
echo "uptime at start: $(uptime)"
echo "compile command: $cxx ${flags[*]} [-DLANCET_COMPILED] -c -o $tmp/tu.o <TU>"
echo

failed=0
# compile <TU> [extra flags...]: sets best_s (wall), best_cpu (user + sys) and peak_kb
# over the reps; returns non-zero on error.
compile() {
  local tu="$1"; shift
  best_s=""; best_cpu=""; peak_kb=0
  local i s kb u k cpu
  for ((i = 0; i < reps; ++i)); do
    if ! "$gnu_time" -o "$tmp/time" -f '%e %M %U %S' \
         "$cxx" "${flags[@]}" "$@" -c -o "$tmp/tu.o" "$tu" 2>"$tmp/err"; then
      echo "!! $tu ${*:-} failed to compile:" >&2
      cat "$tmp/err" >&2
      return 1
    fi
    read -r s kb u k < <(tail -n 1 "$tmp/time")
    cpu=$(awk -v u="$u" -v k="$k" 'BEGIN { printf "%.2f", u + k }')
    if [[ -z "$best_s" ]] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then best_s="$s"; fi
    if [[ -z "$best_cpu" ]] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu="$cpu"; fi
    ((kb > peak_kb)) && peak_kb=$kb
    # Warnings are not failures, but say so (the test build would show them too).
    if [[ -s "$tmp/err" && $i -eq 0 ]]; then
      echo "note: $(basename "$tu") ${*:-}: $(grep -c 'warning:' "$tmp/err") warning(s)" >&2
    fi
  done
  return 0
}

# rows: label|seconds|peak MB|ratio|cpu seconds|cpu ratio|target|verdict, printed at the
# end (the ratios are computed then, against the better of the two baseline compiles).
rows=()

# add_row <label> <target kind: writer|dataset|umbrella|none>: records the last compile.
add_row() {
  local mb
  mb=$(awk -v k="$peak_kb" 'BEGIN { printf "%.0f", k / 1024 }')
  rows+=("$1|$best_s|$mb|$best_cpu|$2")
  printf '   %-58s %7s s wall %7s s cpu %6s MB\n' "$1" "$best_s" "$best_cpu" "$mb"
}
add_failed() { rows+=("$1|FAILED|—|—|failed"); }

# The lancet TUs: file|label|target kind
tus=(
  "file_writer.cpp|file_writer.cpp (lancet::file, 2.2 file)|writer"
  "dataset_write.cpp|dataset_write.cpp (dataset::write)|dataset"
  "ivf_pq.cpp|ivf_pq.cpp (build_ivf_index IVF_PQ)|none"
  "umbrella.cpp|umbrella.cpp (lancet/lancet.hpp)|umbrella"
  "pb_headers.cpp|pb_headers.cpp (the lancet/pb message headers alone)|none"
)

echo "compiling baseline.cpp"
if ! compile "$here/baseline.cpp"; then
  echo "baseline failed to compile; no ratios possible" >&2
  exit 1
fi
base_s="$best_s"; base_cpu="$best_cpu"
add_row "baseline.cpp (deps only)" base

# TUS: only those TUs (the baseline is always compiled).
if [[ -n "${TUS:-}" ]]; then
  selected=()
  for spec in "${tus[@]}"; do
    IFS='|' read -r file _ _ <<<"$spec"
    [[ " $TUS " == *" $file "* ]] && selected+=("$spec")
  done
  ((${#selected[@]})) || { echo "$0: TUS names none of the TUs" >&2; exit 2; }
  tus=("${selected[@]}")
fi

run_set() {  # run_set <label suffix> [extra flags...]
  local suffix="$1"; shift
  local spec file label kind
  for spec in "${tus[@]}"; do
    IFS='|' read -r file label kind <<<"$spec"
    echo "compiling $file${suffix:+ $suffix}"
    if compile "$here/$file" "$@"; then
      add_row "$label${suffix:+ $suffix}" "$kind"
    else
      failed=1
      add_failed "$label${suffix:+ $suffix}"
    fi
  done
}

run_set ""

if [[ "${COMPILED:-1}" == 0 ]]; then
  echo "(COMPILED=0: compiled mode not measured)"
elif [[ -f "$src/src/lancet.cpp" ]]; then
  echo "src/lancet.cpp exists: compiled mode (-DLANCET_COMPILED)"
  run_set "(compiled mode)" -DLANCET_COMPILED
  echo "compiling src/lancet.cpp (compiled mode, once per program)"
  if compile "$src/src/lancet.cpp" -DLANCET_COMPILED; then
    add_row "src/lancet.cpp (compiled mode, once)" none
  else
    failed=1
    add_failed "src/lancet.cpp (compiled mode, once)"
  fi
else
  echo "(no src/lancet.cpp: compiled mode not measured)"
fi

echo "compiling baseline.cpp again (load drift)"
if compile "$here/baseline.cpp"; then
  add_row "baseline.cpp (again, last)" base
  awk -v a="$best_s" -v b="$base_s" 'BEGIN { exit !(a < b) }' && base_s="$best_s"
  awk -v a="$best_cpu" -v b="$base_cpu" 'BEGIN { exit !(a < b) }' && base_cpu="$best_cpu"
fi

echo
echo "uptime at end: $(uptime)"
echo
echo "| TU | wall s | peak MB | × baseline wall | cpu s | × baseline cpu | target | result |"
echo "|---|---:|---:|---:|---:|---:|---|---|"
for r in "${rows[@]}"; do
  IFS='|' read -r label s mb cpu kind <<<"$r"
  ratio="—"; cratio="—"; target="—"; verdict="—"
  if [[ "$kind" != failed ]]; then
    ratio=$(awk -v s="$s" -v b="$base_s" 'BEGIN { if (b > 0) printf "%.2f", s / b; else print "—" }')
    cratio=$(awk -v s="$cpu" -v b="$base_cpu" 'BEGIN { if (b > 0) printf "%.2f", s / b; else print "—" }')
  fi
  case "$kind" in
    writer)
      target="≤ 2.5× and < 400 MB"
      verdict=$(awk -v r="$ratio" -v m="$mb" 'BEGIN { print (r <= 2.5 && m < 400) ? "PASS" : "MISS" }') ;;
    dataset)
      target="≤ 4×"
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 4) ? "PASS" : "MISS" }') ;;
    umbrella)
      target="≤ 6×"
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 6) ? "PASS" : "MISS" }') ;;
    failed) verdict="FAILED" ;;
  esac
  echo "| $label | $s | $mb | $ratio | $cpu | $cratio | $target | $verdict |"
done
echo
echo "(wall s, cpu s: best of $reps; peak MB: GNU time %M / 1024, i.e. MiB of the largest"
echo " compiler process; ratios against the better of the two baseline compiles:"
echo " $base_s s wall, $base_cpu s cpu; targets judged on the wall ratio)"

if ((failed)); then
  echo "some TUs failed to compile (errors above)" >&2
  exit 1
fi
exit 0
