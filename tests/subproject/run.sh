#!/usr/bin/env bash
# Builds tests/subproject as an independent Meson project that vendors lancet under
# subprojects/lancet (a symlink to the checkout under test, created in a temporary
# directory: nothing is committed), runs the consumer and checks its output.
# Usage: run.sh LANCET_SOURCE_ROOT
set -euo pipefail

root=$(cd "${1:?usage: run.sh LANCET_SOURCE_ROOT}" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
meson_cmd=${MESON:-meson}

work=$(mktemp -d "${TMPDIR:-/tmp}/lancet-subproject.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/src/subprojects"
cp "$here/meson.build" "$here/main.cpp" "$work/src/"
ln -s "$root" "$work/src/subprojects/lancet"

# --force-fallback-for: use the vendored copy even if a lancet is installed system-wide.
"$meson_cmd" setup "$work/build" "$work/src" --force-fallback-for=lancet >"$work/setup.log" 2>&1 || {
  cat "$work/setup.log"; echo "FAIL: meson setup of the consumer project"; exit 1; }
grep -q "lancet.*subproject" "$work/setup.log" || {
  cat "$work/setup.log"; echo "FAIL: lancet was not taken from subprojects/"; exit 1; }
"$meson_cmd" compile -C "$work/build" >"$work/build.log" 2>&1 || {
  cat "$work/build.log"; echo "FAIL: building the consumer"; exit 1; }

out_path="$work/out/nested/consumer.bin"
output=$("$work/build/consumer" "$out_path")
echo "$output"

[[ -f "$out_path" ]] || { echo "FAIL: $out_path was not written"; exit 1; }
size=$(stat -c %s "$out_path")
[[ "$size" -gt 0 ]] || { echo "FAIL: $out_path is empty"; exit 1; }
[[ "$output" == "wrote $size bytes to $out_path" ]] || {
  echo "FAIL: unexpected consumer output (file has $size bytes)"; exit 1; }
# Publication by rename leaves no temporary files next to the output.
leftover=$(find "$work/out" -name '.*.tmp' | head -n 1)
[[ -z "$leftover" ]] || { echo "FAIL: temporary file left behind: $leftover"; exit 1; }
echo "PASS: consumer built against lancet as a subproject and wrote $size bytes"
