#!/usr/bin/env bash
# Packaging check: stages `meson install` of the (already built) build directory in a
# temporary DESTDIR, checks what it installs (headers, lancet.pc, the CMake package,
# bin/lancet, and no tests/examples), builds tests/packaging/consumer.cpp against the
# staged installation twice -- with pkg-config and with CMake's find_package(lancet) --,
# runs both consumers and reads the datasets they write back with LanceDB.
#   run.sh BUILD_ROOT SOURCE_ROOT
# Each problem prints a FAIL line; the exit status is non-zero if there was one.
set -uo pipefail
build=$(cd "${1:?usage: run.sh BUILD_ROOT SOURCE_ROOT}" && pwd)
root=$(cd "${2:?usage: run.sh BUILD_ROOT SOURCE_ROOT}" && pwd)
here="$root/tests/packaging"
meson_cmd=${MESON:-meson}
cxx=${CXX:-g++}
# The library is header-only: the consumers' speed does not matter, their build time does.
opt=${LANCET_PACKAGING_OPT:--O0}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lancet-packaging.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
stage="$tmp/stage"
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
die() { echo "FAIL: $*"; echo "packaging: stopped after a failure"; exit 1; }
show() { sed 's/^/    /' "$1" | tail -n 40; }

# ---- install into a staging directory (no rebuild: the test runs after the build) ----
"$meson_cmd" install -C "$build" --no-rebuild --destdir "$stage" >"$tmp/install.log" 2>&1 || {
  show "$tmp/install.log"; die "meson install --destdir"; }
option() {  # a Meson built-in option of the build directory (prefix, libdir, ...)
  "$meson_cmd" introspect "$build" --buildoptions |
    python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}
prefix=$(option prefix) || die "meson introspect: no prefix"
below() { [[ $1 == /* ]] && echo "$1" || echo "$prefix/$1"; }  # options may be relative to the prefix
libdir=$(below "$(option libdir)"); includedir=$(below "$(option includedir)"); bindir=$(below "$(option bindir)")
version=$("$meson_cmd" introspect "$build" --projectinfo | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
pass "meson install staged lancet $version under $stage (prefix $prefix)"

# ---- what is installed, and what is not ---------------------------------------------
for f in "$includedir/lancet/lancet.hpp" "$includedir/lancet/dataset/write.hpp" \
         "$libdir/pkgconfig/lancet.pc" "$libdir/cmake/lancet/lancetConfig.cmake" \
         "$libdir/cmake/lancet/lancetConfigVersion.cmake" "$bindir/lancet"; do
  if [[ -f $stage$f ]]; then pass "installed $f"; else fail "not installed: $f"; fi
done
[[ -x $stage$bindir/lancet ]] || fail "$bindir/lancet is not executable"
# Every header of the source tree is installed, and nothing else under include/lancet
# (the consumers below include only what they use).
want_headers=$(cd "$root/include" && find lancet -type f | sort)
got_headers=$(cd "$stage$includedir" 2>/dev/null && find lancet -type f | sort)
if [[ -n $want_headers && $want_headers == "$got_headers" ]]; then
  pass "installed all $(wc -l <<<"$want_headers") headers of include/lancet"
else
  fail "installed headers differ from include/lancet: $(diff <(echo "$want_headers") <(echo "$got_headers") | grep '^[<>]' | head -n 5 | tr '\n' ' ')"
fi
extra=$(cd "$stage" && find . -type f \( -name 'quickstart' -o -name 'test_*' -o -name 'bench_*' -o -name '*.a' \
        -o -name 'doctest*' \) | head -n 5)
if [[ -z $extra ]]; then pass "no tests, quickstart or benchmarks installed"; else fail "installed what should not be: $extra"; fi

# ---- the installed CLI ----------------------------------------------------------------
cli="$stage$bindir/lancet"
out=$("$cli" --version 2>&1); st=$?
if [[ $st -eq 0 && $out == "lancet $version" ]]; then pass "$bindir/lancet --version: $out"
else fail "$bindir/lancet --version gave '$out' (status $st), expected 'lancet $version'"; fi
"$cli" help cat >/dev/null 2>&1 && pass "$bindir/lancet help cat" || fail "$bindir/lancet help cat"

expected_lancedb='{"id":"1","name":"alpha","score":0.5}
{"id":"2","name":null,"score":-1.25}
{"id":"3","name":"gamma","score":null}
{"countRows":3}'
expected_cat='{"id":1,"name":"alpha","score":0.5}
{"id":2,"name":null,"score":-1.25}
{"id":3,"name":"gamma","score":null}'
node_ok=1
if ! command -v node >/dev/null || [[ ! -d $root/tests/interop/node_modules/@lancedb/lancedb ]]; then
  fail "Node or tests/interop/node_modules (LanceDB) missing: run scripts/install-deps"; node_ok=0
fi

check_consumer() {  # how (pkg-config|cmake), consumer binary
  local how=$1 bin=$2 ds="$tmp/ds-$1"
  local out st
  out=$("$bin" "$ds" 2>&1); st=$?
  if [[ $st -ne 0 || $out != "wrote 3 rows to $ds (version 1, format 2.2)" ]]; then
    fail "$how consumer: status $st, output: $out"; return
  fi
  pass "$how consumer: $out"
  if "$cli" inspect "$ds" 2>&1 | grep -q ': Lance 2.2 '; then pass "$how dataset: data file is Lance 2.2 (lancet inspect)"
  else fail "$how dataset: lancet inspect does not show a Lance 2.2 data file"; fi
  out=$("$cli" cat "$ds" 2>&1)
  if [[ $out == "$expected_cat" ]]; then pass "$how dataset: installed lancet cat prints the rows"
  else fail "$how dataset: lancet cat printed:"$'\n'"$out"; fi
  ((node_ok)) || return
  out=$(node "$root/tests/interop/read_table.mjs" "$ds" 2>&1)
  if [[ $out == "$expected_lancedb" ]]; then pass "$how dataset: LanceDB reads the exact values"
  else fail "$how dataset: LanceDB read:"$'\n'"$out"$'\n'"  expected:"$'\n'"$expected_lancedb"; fi
}

# ---- consumer 1: pkg-config -------------------------------------------------------------
# The sysroot maps the installed paths (prefix=...) into the staging directory.
export PKG_CONFIG_PATH="$stage$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_SYSROOT_DIR="$stage"
if pcv=$(pkg-config --modversion lancet 2>"$tmp/pc.err") && [[ $pcv == "$version" ]]; then
  pass "pkg-config --modversion lancet: $pcv"
else
  fail "pkg-config --modversion lancet gave '$pcv' ($(cat "$tmp/pc.err")), expected $version"
fi
if flags=$(pkg-config --cflags --libs lancet 2>"$tmp/pc.err"); then
  [[ $flags == *"-I$stage$includedir"* ]] || fail "pkg-config --cflags lacks -I$stage$includedir: $flags"
  for want in -std=c++20 -lzstd -llz4 -pthread; do
    [[ " $flags " == *" $want "* ]] || fail "pkg-config --libs lancet lacks $want: $flags"
  done
  # shellcheck disable=SC2086  # the flags are words
  # No -std here: the package's Cflags must bring C++20 (g++ 12 defaults to gnu++17).
  if "$cxx" $opt -o "$tmp/consumer-pc" "$here/consumer.cpp" $flags >"$tmp/pc-build.log" 2>&1; then
    pass "built the consumer with $cxx \$(pkg-config --cflags --libs lancet)"
    check_consumer pkg-config "$tmp/consumer-pc"
  else
    show "$tmp/pc-build.log"; fail "building the consumer with pkg-config flags: $flags"
  fi
else
  fail "pkg-config --cflags --libs lancet: $(cat "$tmp/pc.err")"
fi
unset PKG_CONFIG_SYSROOT_DIR

# ---- consumer 2: CMake find_package(lancet) -------------------------------------------------
if ! command -v cmake >/dev/null; then
  fail "cmake is not installed (scripts/install-deps installs it)"
elif cmake -S "$here" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$stage$prefix" -DCMAKE_BUILD_TYPE=None \
       -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$opt" >"$tmp/cmake.log" 2>&1; then
  found=$(sed -n 's/^lancet_DIR:PATH=//p' "$tmp/cmake-build/CMakeCache.txt")
  if [[ $found == "$stage$libdir/cmake/lancet" ]]; then pass "find_package(lancet) found $found"
  else fail "find_package(lancet) used '$found', not the staged $stage$libdir/cmake/lancet"; fi
  if cmake --build "$tmp/cmake-build" >"$tmp/cmake-build.log" 2>&1; then
    pass "built the consumer with CMake (lancet::lancet)"
    check_consumer cmake "$tmp/cmake-build/consumer"
  else
    show "$tmp/cmake-build.log"; fail "building the consumer with CMake"
  fi
else
  show "$tmp/cmake.log"; fail "cmake configure with find_package(lancet CONFIG REQUIRED)"
fi
# Version checks of the CMake package: 0.x is compatible with 0.1, 1.0 is not.
cat > "$tmp/version.cmake" <<'CMAKE'
set(CMAKE_SIZEOF_VOID_P 8)
foreach(want IN ITEMS 0.1 1.0)
  set(PACKAGE_FIND_VERSION ${want})
  string(REGEX MATCH "^[0-9]+" PACKAGE_FIND_VERSION_MAJOR ${want})
  unset(PACKAGE_VERSION_COMPATIBLE)
  include(${file})
  message("${want}:${PACKAGE_VERSION_COMPATIBLE}")
endforeach()
CMAKE
if command -v cmake >/dev/null; then
  vout=$(cmake -Dfile="$stage$libdir/cmake/lancet/lancetConfigVersion.cmake" -P "$tmp/version.cmake" 2>&1 | tr '\n' ' ')
  if [[ $vout == "0.1:TRUE 1.0:FALSE " ]]; then pass "lancetConfigVersion.cmake: 0.1 compatible, 1.0 not"
  else fail "lancetConfigVersion.cmake answers: $vout"; fi
fi

if ((fails)); then echo "packaging: $fails failure(s)"; exit 1; fi
echo "packaging: all checks passed"
