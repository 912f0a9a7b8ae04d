#!/usr/bin/env bash
# Runs one example program from examples/ and checks what it did, with LanceDB as
# the oracle (tests/interop/).
#   run.sh user_sink       EXE SOURCE_ROOT   the sink's checksums match the files on
#                                            disk; LanceDB reads the table it wrote
#   run.sh user_source     EXE SOURCE_ROOT   reads, through the user's source, a table
#                                            LanceDB wrote (and one lancet wrote)
#   run.sh encoding_policy EXE SOURCE_ROOT   LanceDB reads the table it wrote
set -euo pipefail
kind=$1; exe=$2; root=$3
interop="$root/tests/interop"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ds="$tmp/ds"

check_table() {  # LanceDB must read exactly the example table from $1
  local got
  got=$(node "$interop/check_example_table.mjs" "$1")
  [[ $got == "ok 1000" ]] || { echo "FAILED: check_example_table.mjs printed '$got'"; exit 1; }
}

case $kind in
  user_sink)
    "$exe" "$ds" > "$tmp/out"
    cat "$tmp/out"
    # Lines "<fnv1a64 hex> <bytes> <path>": recompute both over the file on disk.
    python3 - "$tmp/out" <<'PY'
import os, re, sys
checked = data = 0
for line in open(sys.argv[1]):
    m = re.fullmatch(r"([0-9a-f]{16}) (\d+) (.+)\n?", line)
    if not m:
        continue
    want, size, path = int(m.group(1), 16), int(m.group(2)), m.group(3)
    body = open(path, "rb").read()
    h = 0xCBF29CE484222325
    for b in body:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    if len(body) != size or h != want:
        sys.exit(f"FAILED: {path}: {len(body)} bytes, fnv1a64 {h:016x}; the sink reported {size} bytes, {want:016x}")
    checked += 1
    data += path.endswith(".lance") and os.path.basename(os.path.dirname(path)) == "data"
if data == 0:
    sys.exit(f"FAILED: no data file among the {checked} files the sink reported")
print(f"{checked} checksums verified ({data} data files)")
PY
    check_table "$ds"
    ;;
  user_source)
    for version in 2.0 2.1 2.2; do  # LanceDB writes the table in each file format
      rm -rf "$ds"
      node "$interop/write_example_table.mjs" "$ds" --version "$version" > /dev/null
      echo "LanceDB's table, format $version:"
      "$exe" "$ds" | tee "$tmp/out"
      grep -qx "ok 1000" "$tmp/out" || { echo "FAILED: no 'ok 1000' ($version)"; exit 1; }
      served=$(sed -n 's/.*bytes served \([0-9]*\).*/\1/p' "$tmp/out")
      [[ -n $served && $served -gt 0 ]] || { echo "FAILED: the user source served no bytes ($version)"; exit 1; }
    done
    # Without a dataset the example writes one with lancet first, then reads it.
    "$exe" "$tmp/ours" > "$tmp/out2"
    grep -qx "ok 1000" "$tmp/out2" || { cat "$tmp/out2"; echo "FAILED: lancet's table through the user source"; exit 1; }
    check_table "$tmp/ours"
    ;;
  encoding_policy)
    "$exe" "$ds"
    check_table "$ds"
    ;;
  *)
    echo "run.sh: unknown example '$kind'"; exit 2 ;;
esac
echo "ok"
