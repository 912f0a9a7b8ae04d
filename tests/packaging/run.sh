#!/usr/bin/env bash
# Packaging check: stages `meson install` of the (already built) build directory in a
# temporary DESTDIR, checks what it installs (headers, lancet.pc, the CMake package,
# bin/lancet, liblancet.a for compiled mode, and no tests/examples), builds
# tests/packaging/consumer.cpp against the staged installation four times -- with
# pkg-config and with CMake's find_package(lancet), each header-only and in compiled
# mode --, runs the consumers and reads the datasets they write back with LanceDB.
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
         "$libdir/pkgconfig/lancet.pc" "$libdir/pkgconfig/lancet-compiled.pc" "$libdir/liblancet.a" \
         "$libdir/cmake/lancet/lancetConfig.cmake" "$libdir/cmake/lancet/lancetConfigVersion.cmake" \
         "$bindir/lancet"; do
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
extra=$(cd "$stage" && find . -type f \( -name 'quickstart' -o -name 'test_*' -o -name 'bench_*' -o -name 'doctest*' \
        -o \( -name '*.a' ! -name 'liblancet.a' \) \) | head -n 5)
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

check_consumer() {  # how (a label), consumer binary
  local how=$1 bin=$2 ds="$tmp/ds-${1//[^A-Za-z0-9_-]/_}"
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

# ---- consumers 1 and 2: pkg-config, header-only (lancet) and compiled mode (lancet-compiled) ----
# The sysroot maps the installed paths (prefix=...) into the staging directory.
export PKG_CONFIG_PATH="$stage$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_SYSROOT_DIR="$stage"
# The consumer calls dataset::dataset::open: a header-only object defines it (inline),
# a compiled-mode object only refers to it (liblancet.a defines it).
open_symbol='lancet::dataset::dataset::open('
# (grep without -q: with pipefail, an early exit of grep -q would fail nm by SIGPIPE.)
defines_open() { nm -C --defined-only "$1" | grep -F " $open_symbol" >/dev/null; }
refers_to_open() { nm -C --undefined-only "$1" | grep -F " $open_symbol" >/dev/null; }
check_object() {  # mode (header-only|compiled), label, object file
  local mode=$1 how=$2 obj=$3
  if [[ $mode == header-only ]]; then
    # Only at -O0: an optimised header-only build may inline open() entirely.
    [[ $opt == -O0 ]] || return 0
    if defines_open "$obj"; then pass "$how: the header-only object defines $open_symbol...)"
    else fail "$how: the header-only object '$obj' does not define $open_symbol...)"; fi
  elif [[ -n $obj ]] && ! defines_open "$obj" && refers_to_open "$obj"; then
    pass "$how: the compiled-mode object refers to $open_symbol...) and leaves its definition to liblancet.a"
  else
    fail "$how: the compiled-mode object '${obj:-none}' defines $open_symbol...) itself or does not call it (LANCET_COMPILED not in effect?)"
  fi
}
for module in lancet lancet-compiled; do
  if pcv=$(pkg-config --modversion "$module" 2>"$tmp/pc.err") && [[ $pcv == "$version" ]]; then
    pass "pkg-config --modversion $module: $pcv"
  else
    fail "pkg-config --modversion $module gave '$pcv' ($(cat "$tmp/pc.err")), expected $version"
  fi
  if ! cflags=$(pkg-config --cflags "$module" 2>"$tmp/pc.err") || ! libs=$(pkg-config --libs "$module" 2>>"$tmp/pc.err"); then
    fail "pkg-config --cflags / --libs $module: $(cat "$tmp/pc.err")"; continue
  fi
  flags="$cflags $libs"
  [[ $flags == *"-I$stage$includedir"* ]] || fail "pkg-config --cflags $module lacks -I$stage$includedir: $flags"
  wants=(-std=c++20 -lzstd -llz4 -pthread)
  [[ $module == lancet-compiled ]] && wants+=(-DLANCET_COMPILED=1 -llancet "-L$stage$libdir")
  for want in "${wants[@]}"; do
    [[ " $flags " == *" $want "* ]] || fail "pkg-config --cflags --libs $module lacks $want: $flags"
  done
  # No -std here: the package's Cflags must bring C++20 (g++ 12 defaults to gnu++17).
  obj="$tmp/consumer-$module.o" bin="$tmp/consumer-$module"
  # shellcheck disable=SC2086  # the flags are words
  if "$cxx" $opt -c -o "$obj" "$here/consumer.cpp" $cflags >"$tmp/pc-build.log" 2>&1 &&
     "$cxx" -o "$bin" "$obj" $libs >>"$tmp/pc-build.log" 2>&1; then
    pass "built the consumer with $cxx \$(pkg-config --cflags --libs $module)"
    check_object "$([[ $module == lancet ]] && echo header-only || echo compiled)" "pkg-config $module" "$obj"
    check_consumer "pkg-config $module" "$bin"
  else
    show "$tmp/pc-build.log"; fail "building the consumer with pkg-config $module: $flags"
  fi
done
unset PKG_CONFIG_SYSROOT_DIR

# ---- consumers 3 and 4: CMake find_package(lancet), lancet::lancet and lancet::compiled ----
if ! command -v cmake >/dev/null; then
  fail "cmake is not installed (scripts/install-deps installs it)"
elif cmake -S "$here" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$stage$prefix" -DCMAKE_BUILD_TYPE=None \
       -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$opt" >"$tmp/cmake.log" 2>&1; then
  found=$(sed -n 's/^lancet_DIR:PATH=//p' "$tmp/cmake-build/CMakeCache.txt")
  if [[ $found == "$stage$libdir/cmake/lancet" ]]; then pass "find_package(lancet) found $found"
  else fail "find_package(lancet) used '$found', not the staged $stage$libdir/cmake/lancet"; fi
  if cmake --build "$tmp/cmake-build" >"$tmp/cmake-build.log" 2>&1; then
    pass "built the consumer with CMake twice (lancet::lancet, lancet::compiled)"
    check_consumer "cmake lancet::lancet" "$tmp/cmake-build/consumer"
    check_consumer "cmake lancet::compiled" "$tmp/cmake-build/consumer_compiled"
    check_object header-only "cmake lancet::lancet" "$(find "$tmp/cmake-build" -path '*/consumer.dir/*' -name '*.o' | head -n 1)"
    check_object compiled "cmake lancet::compiled" "$(find "$tmp/cmake-build" -path '*/consumer_compiled.dir/*' -name '*.o' | head -n 1)"
  else
    show "$tmp/cmake-build.log"; fail "building the consumers with CMake"
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
