#!/usr/bin/env bash
# Distributed writes through the CLI: 3 separate `lancet write --uncommitted`
# processes write fragments, `lancet commit` commits them in one transaction, and
# LanceDB 0.39 reads every row with its values; then an append the same way, an
# overwrite with a new schema, and bad input refused with the dataset unchanged. The
# fragment JSON is checked against pylance's FragmentMetadata.from_json (replayed in
# Python below, as python/python/lance/fragment.py has it: pylance is not installed).
#   distributed.sh LANCET_BINARY SOURCE_ROOT
set -uo pipefail
lancet=$1; root=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
echo '{"fields": [{"name": "id", "type": "int64", "nullable": false}, {"name": "s", "type": "utf8"},
                  {"name": "n", "type": "int32"}]}' > "$tmp/schema.json"
ds="$tmp/ds"
# rows FIRST COUNT: ids FIRST.., s "r<id>", n = id % 1000 (null for every 7th id).
rows() {
  local i
  for ((i = $1; i < $1 + $2; i++)); do
    if ((i % 7 == 0)); then echo "{\"id\":$i,\"s\":\"r$i\",\"n\":null}"; else echo "{\"id\":$i,\"s\":\"r$i\",\"n\":$((i % 1000))}"; fi
  done
}
# What LanceDB's read_table.mjs prints for those rows (int64 as strings), sorted.
canonical() {
  local i
  for ((i = $1; i < $1 + $2; i++)); do
    if ((i % 7 == 0)); then echo "{\"id\":\"$i\",\"s\":\"r$i\",\"n\":null}"; else echo "{\"id\":\"$i\",\"s\":\"r$i\",\"n\":$((i % 1000))}"; fi
  done
}
lancedb_rows() { node "$root/tests/interop/read_table.mjs" "$1" | grep -v countRows | sort; }
version() { node "$root/tests/interop/dataset_info.mjs" "$1" | sed 's/.*"version":\([0-9]*\).*/\1/'; }

# 1. Three writers, one commit creating the dataset.
for w in 0 1 2; do
  rows $((w * 1000)) 400 | "$lancet" write "$ds" --schema "$tmp/schema.json" --uncommitted > "$tmp/frag$w.json" 2> "$tmp/err$w" &
done
wait
for w in 0 1 2; do check "writer $w printed one fragment" test "$(wc -l < "$tmp/frag$w.json")" -eq 1; done
check "nothing committed by the writers" test ! -e "$ds/_versions"
check "3 data files written" test "$(ls "$ds/data" | wc -l)" -eq 3
check "fragment JSON is what pylance's FragmentMetadata.from_json takes" python3 - "$tmp"/frag*.json <<'PY'
import json, sys
# pylance (python/python/lance/fragment.py): to_json's keys; from_json reads id, files,
# physical_rows with [] and builds DataFile(**f) / DeletionFile(**d) from the rest.
top = ["id", "files", "physical_rows", "deletion_file", "row_id_meta", "created_at_version_meta",
       "last_updated_at_version_meta"]
def DataFile(path, fields, column_indices=None, file_major_version=0, file_minor_version=0,
             file_size_bytes=None, base_id=None):
    assert isinstance(path, str) and path.endswith(".lance")
    assert all(isinstance(x, int) for x in fields) and len(fields) == len(column_indices)
    assert (file_major_version, file_minor_version) == (2, 2) and file_size_bytes > 0 and base_id is None
for name in sys.argv[1:]:
    for line in open(name):
        d = json.loads(line)
        assert list(d) == top, list(d)
        assert d["id"] == 0 and d["physical_rows"] == 400
        for f in d["files"]:
            assert list(f) == ["path", "fields", "column_indices", "file_major_version", "file_minor_version",
                               "file_size_bytes", "base_id"], list(f)
            DataFile(**f)
        assert d["deletion_file"] is None and d["row_id_meta"] is None
PY
out=$("$lancet" commit "$ds" --operation overwrite --schema "$tmp/schema.json" "$tmp"/frag{0,1,2}.json 2> "$tmp/err")
check "commit creates version 1 with fragment ids 0..2 ($out)" test "$out" == '{"fragments":[0,1,2],"read_version":0,"rows":1200,"version":1}'
check "LanceDB reads every row with its values" test "$(lancedb_rows "$ds")" == "$( (canonical 0 400; canonical 1000 400; canonical 2000 400) | sort)"

# 2. Append: three more writers (reading version 1's schema), committed with a read version.
for w in 3 4 5; do
  rows $((w * 1000)) 100 | "$lancet" write "$ds" --schema "$tmp/schema.json" --uncommitted > "$tmp/frag$w.json" 2>/dev/null &
done
wait
cat "$tmp/frag4.json" "$tmp/frag5.json" > "$tmp/frag45.json"
out=$("$lancet" commit "$ds" --operation append --read-version 1 "$tmp/frag3.json" - < "$tmp/frag45.json" 2>/dev/null)
check "append commits version 2 with ids 3..5 ($out)" test "$out" == '{"fragments":[3,4,5],"read_version":1,"rows":300,"version":2}'
check "LanceDB reads the appended rows" test "$(lancedb_rows "$ds")" == "$( (for w in 0 1 2; do canonical $((w * 1000)) 400; done; for w in 3 4 5; do canonical $((w * 1000)) 100; done) | sort)"

# 3. Bad input: refused, the dataset stays at version 2.
rows 9000 10 | "$lancet" write "$ds" --schema "$tmp/schema.json" --uncommitted > "$tmp/late.json" 2>/dev/null
err=$("$lancet" commit "$ds" --operation append "$tmp/frag3.json" 2>&1); st=$?
check "fragments committed before: refused ($err)" bash -c 'test $1 -eq 1 && grep -q "already part of version 2" <<< "$0"' "$err" $st
err=$("$lancet" commit "$ds" --operation append "$tmp/late.json" "$tmp/late.json" 2>&1); st=$?
check "the same fragment twice: refused" bash -c 'test $1 -eq 1 && grep -q "is also in fragment 0" <<< "$0"' "$err" $st
rows 0 5 | "$lancet" write "$tmp/other" --schema "$tmp/schema.json" --uncommitted > "$tmp/foreign.json" 2>/dev/null
err=$("$lancet" commit "$ds" --operation append "$tmp/foreign.json" 2>&1); st=$?
check "fragments of another dataset: refused" bash -c 'test $1 -eq 1 && grep -q "does not exist under .*another dataset" <<< "$0"' "$err" $st
printf '%s\n{"id": 0, "files": [}\n' "$(cat "$tmp/late.json")" > "$tmp/broken.json"
err=$("$lancet" commit "$ds" --operation append "$tmp/broken.json" 2>&1); st=$?
check "malformed JSON: refused naming file and line" bash -c 'test $1 -eq 1 && grep -q "broken.json.*not valid JSON at line 2" <<< "$0"' "$err" $st
sed 's/"fields":\[0,1,2\]/"fields":[0,1,5]/' "$tmp/late.json" > "$tmp/badfield.json"
err=$("$lancet" commit "$ds" --operation append "$tmp/badfield.json" 2>&1); st=$?
check "a field the schema lacks: refused" bash -c 'test $1 -eq 1 && grep -q "field id 5" <<< "$0"' "$err" $st
err=$("$lancet" commit "$ds" "$tmp/late.json" 2>&1); st=$?
check "commit without --operation: usage error" test $st -eq 2
err=$("$lancet" commit "$ds" --operation append 2>&1); st=$?
check "commit without fragment files: usage error" test $st -eq 2
check "still version 2 for LanceDB" test "$(version "$ds")" == 2
out=$("$lancet" commit "$ds" --operation append "$tmp/late.json" 2>/dev/null)
check "the good late fragment commits as version 3" test "$out" == '{"fragments":[6],"read_version":2,"rows":10,"version":3}'

# 4. Overwrite with a new schema, from two writers.
echo '{"fields": [{"name": "k", "type": "utf8"}]}' > "$tmp/schema2.json"
for w in 0 1; do
  printf '{"k":"w%d-a"}\n{"k":"w%d-b"}\n' $w $w | "$lancet" write "$ds" --schema "$tmp/schema2.json" --uncommitted --mode overwrite > "$tmp/ow$w.json" 2>/dev/null &
done
wait
out=$("$lancet" commit "$ds" --operation overwrite --schema "$tmp/schema2.json" "$tmp/ow0.json" "$tmp/ow1.json" 2>/dev/null)
check "overwrite commits version 4, ids from 0 ($out)" test "$out" == '{"fragments":[0,1],"read_version":3,"rows":4,"version":4}'
check "LanceDB reads the new schema's rows" test "$(lancedb_rows "$ds" | tr '\n' ' ')" == '{"k":"w0-a"} {"k":"w0-b"} {"k":"w1-a"} {"k":"w1-b"} '
check "LanceDB reads version 3 as before" bash -c "node '$root/tests/interop/read_table.mjs' '$ds' --version 3 | tail -n 1 | grep -q '\"countRows\":1510'"
check "help commit" bash -c "'$lancet' help commit | head -n 1 | grep -q '^usage: lancet commit DATASET --operation'"
finish cli_distributed
