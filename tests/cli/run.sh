#!/usr/bin/env bash
# CLI checks: write/append/cat/inspect round trips, bad input refused with a message
# naming line and field and the dataset left unchanged, LanceDB reading what the CLI wrote.
#   run.sh LANCET_BINARY SOURCE_ROOT
set -uo pipefail
lancet=$1; root=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
cat > "$tmp/schema.json" <<'JSON'
{"fields": [{"name": "id", "type": "int64", "nullable": false},
            {"name": "name", "type": "utf8"},
            {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}},
            {"name": "raw", "type": "binary"},
            {"name": "tags", "type": {"list": "utf8"}},
            {"name": "pt", "type": {"struct": [{"name": "x", "type": "float64"}, {"name": "y", "type": "float32"}]}},
            {"name": "v", "type": {"fixed_size_list": "float32", "size": 2}}]}
JSON
rows='{"id":1,"name":"a","ts":1700000000000000,"raw":"AAEC","tags":["x","y"],"pt":{"x":0.1,"y":2.5},"v":[1,2]}
{"id":2,"name":null,"ts":null,"raw":null,"tags":[],"pt":null,"v":[3,4.5]}
{"id":3,"name":"c","ts":5,"raw":"","tags":null,"pt":{"x":-0.0,"y":null},"v":null}'
for fmt in 2.0 2.1 2.2; do
  ds="$tmp/ds-$fmt"
  r=$rows
  # 2.0 cannot store null structs.
  [[ $fmt == 2.0 ]] && r=${r//'"pt":null'/'"pt":{"x":1,"y":1}'}
  check "write $fmt" bash -c "printf '%s\n' '$r' | '$lancet' write '$ds' --schema '$tmp/schema.json' --format $fmt 2>/dev/null"
  expected=${r//'-0.0'/'-0'}   # floats print in shortest round-trip form
  got=$("$lancet" cat "$ds")
  check "cat $fmt returns the rows" test "$got" == "$expected"
  check "LanceDB counts 3 rows ($fmt)" bash -c "node '$root/tests/interop/read_table.mjs' '$ds' | tail -n 1 | grep -q '\"countRows\":3'"
  # A bad second line: exit status 1, a message naming line and field, no new version.
  err=$(printf '{"id":4}\n{"id":5,"name":7}\n' | "$lancet" write "$ds" --schema "$tmp/schema.json" --mode append 2>&1 >/dev/null)
  status=$?
  check "bad input fails ($fmt)" test $status -eq 1
  check "bad input names line and field ($fmt)" grep -q "line 2, field 'name'" <<< "$err"
  check "dataset unchanged after bad input ($fmt)" test "$("$lancet" cat "$ds")" == "$expected"
  check "append works ($fmt)" bash -c "printf '{\"id\":9,\"pt\":{\"x\":1}}\n' | '$lancet' write '$ds' --schema '$tmp/schema.json' --mode append 2>/dev/null"
  check "cat --offset/--limit/--columns ($fmt)" test "$("$lancet" cat "$ds" --columns id --offset 3 --limit 5)" == '{"id":9}'
  check "cat --version 1 ($fmt)" test "$("$lancet" cat "$ds" --version 1 --columns id | wc -l)" -eq 3
  check "inspect ($fmt)" bash -c "'$lancet' inspect '$ds' | grep -q 'latest version 2: 4 rows, 2 fragments'"
done
err=$(printf '{"id":1}\n' | "$lancet" write "$tmp/x" --schema /nonexistent.json 2>&1); check "missing schema file fails" test $? -eq 1
err=$("$lancet" cat 2>&1); check "usage error exit 2" test $? -eq 2
printf '{"fields":[{"name":"a","type":"int33"}]}' > "$tmp/bad.json"
err=$(printf '{}\n' | "$lancet" write "$tmp/y" --schema "$tmp/bad.json" 2>&1); check "unknown type fails naming it" grep -q 'int33' <<< "$err"
check "malformed JSON fails" bash -c "! printf '{\"id\":1\n' | '$lancet' write '$tmp/z' --schema '$tmp/schema.json' 2>/dev/null"
check "no dataset left by a failed create" test ! -d "$tmp/z/_versions"
# ---- cat / inspect / index list: bad input names the column, version, flag or file -----
ds="$tmp/ds-2.2"
err=$("$lancet" cat "$ds" --columns nope 2>&1); st=$?
check "cat of an unknown column fails naming it" bash -c "test $st -eq 1 && grep -q \"no column 'nope'\" <<< \"\$0\"" "$err"
err=$("$lancet" cat "$ds" --version 99 2>&1); st=$?
check "cat of a missing version fails naming it" bash -c "test $st -eq 1 && grep -q 'no version 99' <<< \"\$0\"" "$err"
err=$("$lancet" cat "$ds" --limit x 2>&1); st=$?
check "cat --limit x is a usage error naming the flag" bash -c "test $st -eq 2 && grep -q -- \"--limit needs a non-negative integer, got 'x'\" <<< \"\$0\"" "$err"
err=$("$lancet" cat "$tmp/missing" 2>&1); st=$?
check "cat of no dataset fails naming the path" bash -c "test $st -eq 1 && grep -q \"'$tmp/missing' is not a Lance dataset\" <<< \"\$0\"" "$err"
head -c 3000 /dev/zero | tr '\0' 'x' > "$tmp/garbage.lance"
for c in cat inspect; do
  err=$("$lancet" $c "$tmp/garbage.lance" 2>&1); st=$?
  check "$c of a file that is not Lance fails naming the file" bash -c "test $st -eq 1 && grep -q \"'$tmp/garbage.lance': corrupt: no LANC magic\" <<< \"\$0\"" "$err"
done
cp -r "$ds" "$tmp/ds-corrupt"
for m in "$tmp"/ds-corrupt/_versions/*.manifest; do head -c 100 /dev/zero > "$m"; done
for c in cat inspect "index list"; do
  # shellcheck disable=SC2086  # "index list" is two words
  err=$("$lancet" $c "$tmp/ds-corrupt" 2>&1); st=$?
  check "$c of a corrupt manifest fails naming it" bash -c "test $st -eq 1 && grep -q \"corrupt: '$tmp/ds-corrupt/_versions/[0-9]*.manifest'\" <<< \"\$0\"" "$err"
done
check "the corrupt manifests are left as they were" bash -c "test \"\$(cat '$tmp'/ds-corrupt/_versions/*.manifest | tr -d '\\0' | wc -c)\" -eq 0"
# ---- index create / list, search --------------------------------------------------
cat > "$tmp/vschema.json" <<'JSON'
{"fields": [{"name": "id", "type": "int64", "nullable": false},
            {"name": "vector", "type": {"fixed_size_list": "float32", "size": 8}}]}
JSON
# 600 rows around 6 centres, deterministic.
awk 'BEGIN { for (i = 0; i < 600; i++) { c = i % 6; s = "{\"id\":" i ",\"vector\":[";
  for (j = 0; j < 8; j++) s = s (j ? "," : "") sprintf("%.4f", sin(c * 7 + j) + 0.05 * sin(i * 13 + j * 5));
  print s "]}" } }' > "$tmp/vrows.jsonl"
vds="$tmp/vds"
check "write vector dataset" bash -c "'$lancet' write '$vds' --schema '$tmp/vschema.json' < '$tmp/vrows.jsonl' 2>/dev/null"
q7=$(sed -n 8p "$tmp/vrows.jsonl" | sed 's/.*"vector":\(\[.*\]\)}/\1/')
err=$("$lancet" index create "$vds" --column vector --type ivf_flat --partitions 4 --threads 2 2>&1 >/dev/null)
check "index create ivf_flat" test $? -eq 0
check "index create shows progress stages" bash -c "grep -q train_ivf <<< '$err' && grep -q merge_partitions <<< '$err' && grep -q 'built IVF_FLAT' <<< '$err'"
check "index list shows IVF_FLAT" bash -c "'$lancet' index list '$vds' | grep -q '\"name\":\"vector_idx\".*\"type\":\"IVF_FLAT\"'"
out=$("$lancet" search "$vds" --column vector --query "$q7" --k 3 --nprobes 4)
check "search finds the query row first at distance 0" bash -c "head -n 1 <<< '$out' | grep -q '^{\"_rowid\":7,\"_distance\":0}$'"
check "search returns k lines" test "$(wc -l <<< "$out")" -eq 3
check "search --columns adds values" bash -c "'$lancet' search '$vds' --column vector --query '$q7' --k 1 --columns id | grep -q '\"_rowid\":7,\"_distance\":0,\"id\":7}'"
err=$("$lancet" index create "$vds" --column vector --type ivf_pq --partitions 4 2>&1 >/dev/null)
check "existing index name refused" bash -c "grep -q \"already has an index named 'vector_idx'\" <<< \"\$0\"" "$err"
check "refused create leaves the version" bash -c "'$lancet' inspect '$vds' | grep -q 'latest version 2:'"
check "index create --replace ivf_pq" bash -c "'$lancet' index create '$vds' --column vector --type ivf_pq --partitions 4 --sub-vectors 4 --replace 2>/dev/null"
check "replaced index is IVF_PQ" bash -c "'$lancet' index list '$vds' | grep -q '\"type\":\"IVF_PQ\"' && test \$('$lancet' index list '$vds' | wc -l) -eq 1"
check "index create ivf_sq cosine" bash -c "'$lancet' index create '$vds' --column vector --type ivf_sq --target-partition-size 200 --metric cosine --name sq 2>/dev/null"
check "index create ivf_rq dot" bash -c "'$lancet' index create '$vds' --column vector --type ivf_rq --partitions 2 --metric dot --name rq 2>/dev/null"
check "index list shows three indexes" test "$("$lancet" index list "$vds" | wc -l)" -eq 3
check "search --index sq finds row 7" bash -c "'$lancet' search '$vds' --column vector --index sq --query '$q7' --k 10 --nprobes 3 | grep -q '\"_rowid\":7,\"_distance\"'"
check "search --refine reports exact distances" bash -c "'$lancet' search '$vds' --column vector --query '$q7' --k 1 --nprobes 4 --refine 5 | grep -q '^{\"_rowid\":7,\"_distance\":0}$'"
check "LanceDB lists the CLI's indexes" bash -c "node '$root/tests/interop/list_indices.mjs' '$vds' | grep -q '\"indexType\":\"IvfPq\"'"
err=$("$lancet" index create "$vds" --column vector --type ivf_pq --sub-vectors 3 --name x 2>&1); st=$?
check "sub-vectors not dividing the dimension refused" bash -c "test $st -eq 1 && grep -q 'does not divide dimension 8' <<< \"\$0\"" "$err"
err=$("$lancet" index create "$vds" --column id --type ivf_flat --name x 2>&1)
check "non-vector column refused" grep -q "not a fixed-size list" <<< "$err"
err=$("$lancet" index create "$vds" --column vector --type ivf_flat --partitions 601 --name x 2>&1)
check "more partitions than rows refused" grep -q "cannot build 601 partitions from 600" <<< "$err"
check "refused creates leave the version" bash -c "'$lancet' inspect '$vds' | grep -q 'latest version 5:'"
err=$("$lancet" search "$vds" --column vector --query '[1,2]' 2>&1); st=$?
check "query of the wrong dimension refused" bash -c "test $st -eq 1 && grep -q 'query vector has 2 values; column .vector. holds vectors of 8' <<< \"\$0\"" "$err"
err=$("$lancet" index create "$vds" --column vector 2>&1); check "index create without --type is a usage error" test $? -eq 2
check "index create ivf_hnsw_sq --m --ef-construction" bash -c "'$lancet' index create '$vds' --column vector --type ivf_hnsw_sq --partitions 2 --m 8 --ef-construction 40 --name hnsw 2>/dev/null"
check "search --index hnsw --ef finds row 7" bash -c "'$lancet' search '$vds' --column vector --index hnsw --query '$q7' --k 10 --nprobes 2 --ef 30 | grep -q '\"_rowid\":7,\"_distance\"'"
check "LanceDB lists the CLI's IVF_HNSW_SQ" bash -c "node '$root/tests/interop/list_indices.mjs' '$vds' | grep -q '\"indexType\":\"IVF_HNSW_SQ\"'"
err=$("$lancet" index create "$vds" --column vector --type ivf_flat --m 8 --name x 2>&1); check "--m without an ivf_hnsw type is a usage error" test $? -eq 2
# --seed: the training's draws (k-means initial rows, samples); the model's fingerprint shows them.
fp() { "$lancet" index train "$vds" --column vector --type ivf_pq --partitions 4 --sub-vectors 4 --out "$tmp/m.$1" "${@:2}" 2>/dev/null | sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p'; }
f7=$(fp a --seed 7); f7b=$(fp b --seed 7); f8=$(fp c --seed 8); fdef=$(fp d); f42=$(fp e --seed 42)
check "index train --seed: a fingerprint" test -n "$f7"
check "the same seed trains the same model" test "$f7" = "$f7b"
check "another seed trains another model" test "$f7" != "$f8"
check "the default seed is 42" test "$fdef" = "$f42"
err=$("$lancet" index create "$vds" --column vector --type ivf_pq --partitions 4 --sub-vectors 4 --seed x --name x 2>&1); st=$?
check "--seed x is a usage error naming the flag" bash -c "test $st -eq 2 && grep -q -- \"--seed needs a non-negative integer, got 'x'\" <<< \"\$0\"" "$err"
for run in a b; do
  rm -rf "$tmp/vds-seed"; cp -r "$vds" "$tmp/vds-seed"
  "$lancet" index create "$tmp/vds-seed" --column vector --type ivf_pq --partitions 4 --sub-vectors 4 --seed 3 --name seeded 2>/dev/null
  "$lancet" search "$tmp/vds-seed" --column vector --index seeded --query "$q7" --k 20 --nprobes 1 > "$tmp/seed.$run"
done
check "index create --seed: the search returns 20 rows" test "$(wc -l < "$tmp/seed.a")" -eq 20
check "index create --seed: the same seed builds the same index" cmp -s "$tmp/seed.a" "$tmp/seed.b"
# A BTREE scalar index (on a copy: the versions above stay as they are).
bds="$tmp/vds-btree"; rm -rf "$bds"; cp -r "$vds" "$bds"
out=$("$lancet" index create "$bds" --column id --type btree 2>/dev/null)
check "index create --type btree" bash -c "grep -q \"created BTREE index 'id_idx'\" <<< \"\$0\" && grep -q '600 rows in 1 pages' <<< \"\$0\"" "$out"
check "index list shows the BTREE" bash -c "'$lancet' index list '$bds' | grep -q '\"name\":\"id_idx\".*\"type\":\"BTREE\"'"
check "LanceDB lists the CLI's BTREE" bash -c "node '$root/tests/interop/list_indices.mjs' '$bds' | grep -q '\"indexType\":\"BTree\"'"
out=$("$lancet" index create "$bds" --column id --type bitmap --name id_bits 2>/dev/null)
check "index create --type bitmap" bash -c "grep -q \"created BITMAP index 'id_bits'\" <<< \"\$0\" && grep -q '600 rows, 600 values' <<< \"\$0\"" "$out"
check "LanceDB lists the CLI's BITMAP" bash -c "node '$root/tests/interop/list_indices.mjs' '$bds' | grep -q '\"indexType\":\"Bitmap\"'"
out=$("$lancet" delete "$bds" --where "id = 7" 2>/dev/null)
check "delete --where on an indexed column" bash -c "grep -q '\"deleted_rows\":1,' <<< '$out'"
check "LanceDB counts the rows left" bash -c "node '$root/tests/interop/read_table.mjs' '$bds' --columns id | tail -n 1 | grep -q '\"countRows\":599'"
err=$("$lancet" index create "$bds" --column id --type label_list 2>&1); st=$?
check "a LABEL_LIST on a column that is not a list refused" bash -c "test $st -eq 1 && grep -q \"LABEL_LIST index cannot be built on column 'id'\" <<< \"\$0\"" "$err"
err=$("$lancet" index create "$bds" --column vector --type btree --name v 2>&1); st=$?
check "a BTREE on a vector column refused" bash -c "test $st -eq 1 && grep -q \"cannot be built on column 'vector'\" <<< \"\$0\"" "$err"
# ---- compact ------------------------------------------------------------------------
cds="$tmp/cds"
for part in 1 2 3 4; do
  mode=append; [[ $part == 1 ]] && mode=create
  sed -n "$(( (part - 1) * 150 + 1 )),$(( part * 150 ))p" "$tmp/vrows.jsonl" | "$lancet" write "$cds" --schema "$tmp/vschema.json" --mode $mode 2>/dev/null
done
check "compact: 4 fragments written" bash -c "'$lancet' inspect '$cds' | grep -q '600 rows, 4 fragments'"
check "compact: index on the small fragments" bash -c "'$lancet' index create '$cds' --column vector --type ivf_flat --partitions 4 2>/dev/null"
out=$("$lancet" compact "$cds" 2>/dev/null); st=$?
check "compact succeeds" test $st -eq 0
check "compact reports 4 fragments into 1 and the remapped index" bash -c "grep -q '\"fragments_added\":1,\"fragments_removed\":4' <<< '$out' && grep -q '\"name\":\"vector_idx\".*\"rows\":600' <<< '$out'"
check "compacted dataset: 600 rows, 1 fragment" bash -c "'$lancet' inspect '$cds' | grep -q 'latest version 7: 600 rows, 1 fragments'"
check "compacted rows in order" test "$("$lancet" cat "$cds" --columns id | md5sum)" == "$(for i in $(seq 0 599); do echo "{\"id\":$i}"; done | md5sum)"
check "search through the remapped index finds row id 7" bash -c "'$lancet' search '$cds' --column vector --query '$q7' --k 1 --nprobes 4 --columns id | grep -q '\"_distance\":0,\"id\":7}'"
check "LanceDB lists the remapped index over 600 rows" bash -c "node '$root/tests/interop/list_indices.mjs' '$cds' | grep -q '\"numIndexedRows\":600'"
err=$("$lancet" compact "$cds" 2>&1 >/dev/null)
check "compact again: nothing to do" grep -q "needs no compaction" <<< "$err"
err=$("$lancet" compact "$cds" --target-rows 0 2>&1); check "compact --target-rows 0 is a usage error" test $? -eq 2
err=$("$lancet" compact "$cds" --target-rows x 2>&1); check "compact --target-rows x is a usage error" test $? -eq 2
err=$("$lancet" compact "$tmp/none" 2>&1); check "compact of no dataset fails" test $? -eq 1
# ---- cleanup --------------------------------------------------------------------------
out=$("$lancet" cleanup "$cds" --keep 1 --dry-run 2>/dev/null); st=$?
check "cleanup --dry-run reports 6 old versions" bash -c "test $st -eq 0 && grep -q '\"old_versions\":6' <<< '$out' && grep -q '\"dry_run\":true' <<< '$out'"
check "cleanup --dry-run removes nothing" bash -c "'$lancet' inspect '$cds' | grep -q ': 7 versions'"
out=$("$lancet" cleanup "$cds" --keep 1 2>/dev/null); st=$?
check "cleanup --keep 1 removes 6 versions and their files" bash -c "test $st -eq 0 && grep -q '\"old_versions\":6' <<< '$out' && grep -q '\"removed_files\":\[.*data/.*\.lance' <<< '$out'"
check "cleanup: 1 version left, rows unchanged" bash -c "'$lancet' inspect '$cds' | grep -q ': 1 versions'"
check "cleanup: rows in order after cleanup" test "$("$lancet" cat "$cds" --columns id | md5sum)" == "$(for i in $(seq 0 599); do echo "{\"id\":$i}"; done | md5sum)"
check "cleanup: LanceDB reads the rows and the index after cleanup" bash -c "node '$root/tests/interop/read_table.mjs' '$cds' --columns id | grep -q '\"countRows\":600' && node '$root/tests/interop/list_indices.mjs' '$cds' | grep -q '\"numIndexedRows\":600'"
err=$("$lancet" cleanup "$cds" --keep 0 2>&1); st=$?
check "cleanup --keep 0: exit 2, named" bash -c "test $st -eq 2 && grep -qF -- '--keep must be at least 1' <<< \"\$0\"" "$err"
err=$("$lancet" cleanup "$cds" --older-than 1d 2>&1); st=$?
check "cleanup --older-than 1d: exit 2, named" bash -c "test $st -eq 2 && grep -qF -- \"--older-than needs a non-negative integer, got '1d'\" <<< \"\$0\"" "$err"
err=$("$lancet" cleanup "$cds" --kep 2 2>&1); st=$?
check "cleanup --kep: exit 2, suggests --keep" bash -c "test $st -eq 2 && grep -qF \"did you mean '--keep'\" <<< \"\$0\"" "$err"
err=$("$lancet" cleanup "$tmp/none" 2>&1); st=$?
check "cleanup of no dataset: exit 1, named" bash -c "test $st -eq 1 && grep -qF 'is not a Lance dataset' <<< \"\$0\"" "$err"
kds="$tmp/kds"
for part in 1 2 3; do
  mode=append; [[ $part == 1 ]] && mode=create
  sed -n "${part}p" "$tmp/vrows.jsonl" | "$lancet" write "$kds" --schema "$tmp/vschema.json" --mode $mode 2>/dev/null
done
oldest=$(ls "$kds/_versions/"*.manifest | sort | tail -n 1)  # v2 names: the largest is version 1
printf 'XXXX' | dd of="$oldest" bs=1 seek=$(( $(stat -c %s "$oldest") - 4 )) conv=notrunc 2>/dev/null
before=$(find "$kds" -type f | sort | md5sum)
err=$("$lancet" cleanup "$kds" --keep 1 2>&1); st=$?
check "cleanup with a corrupt manifest: exit 1, names the manifest" bash -c "test $st -eq 1 && grep -qF '$oldest' <<< \"\$0\" && grep -qF 'LANC magic' <<< \"\$0\"" "$err"
check "cleanup with a corrupt manifest removes nothing" test "$(find "$kds" -type f | sort | md5sum)" == "$before"
check "cleanup --help" bash -c "'$lancet' cleanup --help | grep -q -- '--older-than SECONDS'"
# ---- index optimize -------------------------------------------------------------------
ods="$tmp/ods"
head -n 300 "$tmp/vrows.jsonl" | "$lancet" write "$ods" --schema "$tmp/vschema.json" 2>/dev/null
check "optimize: index on 300 rows" bash -c "'$lancet' index create '$ods' --column vector --type ivf_flat --partitions 2 2>/dev/null"
tail -n 300 "$tmp/vrows.jsonl" | "$lancet" write "$ods" --schema "$tmp/vschema.json" --mode append 2>/dev/null
out=$("$lancet" index optimize "$ods" --target-partition-size 100 2>/dev/null); st=$?
check "index optimize succeeds" test $st -eq 0
check "index optimize writes a delta segment of 300 rows" bash -c "grep -q '\"rows_added\":300' <<< '$out' && grep -q '\"segments_after\":2' <<< '$out'"
check "index list shows two segments" test "$("$lancet" index list "$ods" | grep -c '"name":"vector_idx"')" -eq 2
q407=$(sed -n 408p "$tmp/vrows.jsonl" | sed 's/.*"vector":\(\[.*\]\)}/\1/')
check "search over both segments finds an appended row" bash -c "'$lancet' search '$ods' --column vector --query '$q407' --k 1 --nprobes 2 --columns id | grep -q '\"_distance\":0,\"id\":407}'"
check "search over both segments finds an old row" bash -c "'$lancet' search '$ods' --column vector --query '$q7' --k 1 --nprobes 2 --columns id | grep -q '\"_distance\":0,\"id\":7}'"
check "LanceDB counts 600 indexed rows in 2 segments" bash -c "node '$root/tests/interop/list_indices.mjs' '$ods' | grep -q '\"numIndexedRows\":600.*\"numIndices\":2\|\"numIndices\":2.*\"numIndexedRows\":600'"
out=$("$lancet" index optimize "$ods" --name vector_idx --merge 2 --target-partition-size 100 2>/dev/null)
check "index optimize --merge 2: one segment of 600 rows" bash -c "grep -q '\"segments_after\":1' <<< '$out' && grep -q '\"rows\":600' <<< '$out'"
check "index list shows one segment" test "$("$lancet" index list "$ods" | wc -l)" -eq 1
# An IVF_HNSW_SQ index: the appended rows get a delta segment with its own graphs.
hds="$tmp/hds"
head -n 300 "$tmp/vrows.jsonl" | "$lancet" write "$hds" --schema "$tmp/vschema.json" 2>/dev/null
check "optimize: IVF_HNSW_SQ index on 300 rows" bash -c "'$lancet' index create '$hds' --column vector --type ivf_hnsw_sq --partitions 2 --m 8 --ef-construction 40 2>/dev/null"
tail -n 300 "$tmp/vrows.jsonl" | "$lancet" write "$hds" --schema "$tmp/vschema.json" --mode append 2>/dev/null
out=$("$lancet" index optimize "$hds" --target-partition-size 100 2>/dev/null); st=$?  # small target: no join
check "index optimize of an IVF_HNSW_SQ index: a delta segment of 300 rows" bash -c "test $st -eq 0 && grep -q '\"rows_added\":300' <<< '$out' && grep -q '\"segments_after\":2' <<< '$out'"
check "search --ef over both HNSW segments finds an appended row" bash -c "'$lancet' search '$hds' --column vector --query '$q407' --k 1 --nprobes 2 --ef 30 --columns id | grep -q '\"id\":407}'"
check "LanceDB lists the optimised IVF_HNSW_SQ: 600 rows in 2 segments" bash -c "node '$root/tests/interop/list_indices.mjs' '$hds' | grep -q '\"indexType\":\"IVF_HNSW_SQ\"' && node '$root/tests/interop/list_indices.mjs' '$hds' | grep -q '\"numIndexedRows\":600.*\"numIndices\":2\|\"numIndices\":2.*\"numIndexedRows\":600'"
err=$("$lancet" index optimize "$ods" --merge x 2>&1); check "index optimize --merge x is a usage error" test $? -eq 2
err=$("$lancet" index optimize "$ods" --merge 1 --retrain 2>&1); check "--merge with --retrain is a usage error" test $? -eq 2
err=$("$lancet" index optimize "$ods" --name nope 2>&1); st=$?
check "index optimize of an unknown index fails naming it" bash -c "test $st -eq 1 && grep -q \"no index named 'nope'\" <<< \"\$0\"" "$err"
check "index optimize --retrain rebuilds" bash -c "'$lancet' index optimize '$ods' --retrain 2>/dev/null | grep -q '\"segments_after\":1'"
# ---- queries: filters, deletes, appended rows ------------------------------------------
qds="$tmp/qds"
head -n 400 "$tmp/vrows.jsonl" | "$lancet" write "$qds" --schema "$tmp/vschema.json" 2>/dev/null
"$lancet" index create "$qds" --column vector --type ivf_flat --partitions 4 2>/dev/null
out=$("$lancet" delete "$qds" --where "id % 6 = 1 AND id != 7"); st=$?
check "delete --where prints the rows it deleted" bash -c "test $st -eq 0 && grep -q '\"deleted_rows\":66' <<< '$out'"
check "LanceDB counts the rows left after delete --where" bash -c "node '$root/tests/interop/read_table.mjs' '$qds' --columns id | tail -n 1 | grep -q '\"countRows\":334'"
out=$("$lancet" search "$qds" --column vector --query "$q7" --k 40 --nprobes 4 --columns id)
check "search never returns a deleted row" bash -c "! grep -E '\"id\":([0-9]+)' -o <<< '$out' | cut -d: -f2 | awk '\$1 % 6 == 1 && \$1 != 7 { bad = 1 } END { exit !bad }'"
check "search returns k rows after deletes" test "$(wc -l <<< "$out")" -eq 40
tail -n 200 "$tmp/vrows.jsonl" | "$lancet" write "$qds" --schema "$tmp/vschema.json" --mode append 2>/dev/null
check "search finds a row appended after the index at distance 0" bash -c "'$lancet' search '$qds' --column vector --query '$q407' --k 1 --nprobes 4 --columns id | grep -q '\"_distance\":0,\"id\":407}'"
check "search --fast-search does not search appended rows" bash -c "! '$lancet' search '$qds' --column vector --query '$q407' --k 1 --nprobes 4 --fast-search --columns id | grep -q '\"_distance\":0,'"
check "search --explain names the unindexed fragment" bash -c "'$lancet' search '$qds' --column vector --query '$q7' --explain 2>&1 >/dev/null | grep -q 'exact search over 1 unindexed fragments'"
out=$("$lancet" search "$qds" --column vector --query "$q7" --k 5 --nprobes 4 --where "id >= 100 AND id % 2 = 0" --columns id)
check "search --where: 5 rows, all matching" bash -c "test \$(wc -l <<< '$out') -eq 5 && ! grep -E '\"id\":([0-9]+)' -o <<< '$out' | cut -d: -f2 | awk '\$1 < 100 || \$1 % 2 { bad = 1 } END { exit !bad }'"
out=$("$lancet" search "$qds" --column vector --query "$q7" --k 5 --nprobes 4 --where "id = 7" --postfilter --columns id)
check "search --postfilter: the filter after the k nearest" bash -c "test \$(wc -l <<< '$out') -eq 1 && grep -q '\"id\":7}' <<< '$out'"
out=$("$lancet" search "$qds" --column vector --query "$q7" --k 3 --bypass-index --offset 1 --distance-range 0.0000001, --columns id)
check "search --bypass-index --offset --distance-range" bash -c "test \$(wc -l <<< '$out') -eq 3 && ! grep -q '\"id\":7}' <<< '$out'"
check "cat --where --offset --limit counts matching rows" test "$("$lancet" cat "$qds" --columns id --where "id >= 390" --offset 2 --limit 3)" == $'{"id":393}\n{"id":394}\n{"id":395}'
check "cat --where on a file" test "$("$lancet" cat "$(ls "$vds"/data/*.lance | head -n 1)" --columns id --where "id BETWEEN 3 AND 8 AND id != 7")" == $'{"id":3}\n{"id":4}\n{"id":5}\n{"id":6}\n{"id":8}'
err=$("$lancet" cat "$qds" --where "id >" 2>&1); st=$?
check "a malformed filter: exit 1, the position named" bash -c "test $st -eq 1 && grep -q 'at position 4' <<< \"\$0\"" "$err"
err=$("$lancet" search "$qds" --column vector --query "$q7" --where "nope = 1" 2>&1); st=$?
check "a filter naming an unknown column lists the columns" bash -c "test $st -eq 1 && grep -q \"no column 'nope' (columns: id, vector)\" <<< \"\$0\"" "$err"
# ---- schema changes: drop-columns, alter-columns -----------------------------------------
sds="$tmp/ds-schema"
cp -r "$tmp/ds-2.2" "$sds"
out=$("$lancet" drop-columns "$sds" raw,pt.y); st=$?
check "drop-columns commits a version" bash -c "test $st -eq 0 && grep -q '\"version\":3' <<< '$out'"
out=$("$lancet" alter-columns "$sds" --rename name=label,pt.x=px); st=$?
check "alter-columns --rename commits a version" bash -c "test $st -eq 0 && grep -q '\"version\":4' <<< '$out'"
check "cat shows the new names, the dropped columns gone" bash -c "'$lancet' cat '$sds' --limit 1 | grep -qxF '{\"id\":1,\"label\":\"a\",\"ts\":1700000000000000,\"tags\":[\"x\",\"y\"],\"pt\":{\"px\":0.1},\"v\":[1,2]}'"
check "LanceDB reads the changed schema" bash -c "node '$root/tests/interop/read_table.mjs' '$sds' | tail -n 1 | grep -q '\"countRows\":4'"
err=$("$lancet" alter-columns "$sds" --not-nullable label 2>&1); st=$?
check "alter-columns --not-nullable on a column with NULLs fails, naming it" bash -c "test $st -eq 1 && grep -q \"column 'label'\" <<< \"\$0\"" "$err"
err=$("$lancet" drop-columns "$sds" nope 2>&1); st=$?
check "drop-columns of an unknown column fails, naming it" bash -c "test $st -eq 1 && grep -q \"'nope' does not exist\" <<< \"\$0\"" "$err"
err=$("$lancet" alter-columns "$sds" 2>&1); check "alter-columns without a change is a usage error" test $? -eq 2
err=$("$lancet" drop-columns "$sds" 2>&1); check "drop-columns without columns is a usage error" test $? -eq 2
check "the failed changes committed nothing" bash -c "'$lancet' inspect '$sds' | grep -q 'latest version 4'"
out=$("$lancet" add-columns "$sds" --null note:utf8,n:int32); st=$?
check "add-columns --null commits a version" bash -c "test $st -eq 0 && grep -q '\"version\":5' <<< '$out'"
echo '{"fields": [{"name": "w", "type": "float64"}]}' > "$tmp/w.json"
out=$(printf '{"w":0.5}\n{"w":null}\n{"w":-2}\n{"w":9}\n' | "$lancet" add-columns "$sds" --schema "$tmp/w.json" --from -); st=$?
check "add-columns --from commits a version" bash -c "test $st -eq 0 && grep -q '\"version\":6' <<< '$out'"
check "cat shows the added columns" test "$("$lancet" cat "$sds" --columns id,note,n,w | tr '\n' ' ')" == '{"id":1,"note":null,"n":null,"w":0.5} {"id":2,"note":null,"n":null,"w":null} {"id":3,"note":null,"n":null,"w":-2} {"id":9,"note":null,"n":null,"w":9} '
check "LanceDB reads the added columns" bash -c "node '$root/tests/interop/read_table.mjs' '$sds' --columns w | grep -q '\"w\":-2'"
echo '{"fields": [{"name": "w2", "type": "float64"}]}' > "$tmp/w2.json"
err=$(printf '{"w2":1}\n' | "$lancet" add-columns "$sds" --schema "$tmp/w2.json" --from - 2>&1); st=$?
check "add-columns with too few rows fails, naming the counts" bash -c "test $st -eq 1 && grep -q 'the batches hold 1 rows' <<< \"\$0\"" "$err"
err=$("$lancet" add-columns "$sds" --null id:int64 2>&1); st=$?
check "add-columns of an existing name fails, naming it" bash -c "test $st -eq 1 && grep -q \"'id' already exists\" <<< \"\$0\"" "$err"
err=$("$lancet" add-columns "$sds" 2>&1); check "add-columns without columns is a usage error" test $? -eq 2
out=$("$lancet" add-columns "$sds" --column "twice=id * 2" --column "big=id > 2"); st=$?
check "add-columns --column commits a version" bash -c "test $st -eq 0 && grep -q '\"version\":7' <<< '$out'"
check "cat shows the computed columns" test "$("$lancet" cat "$sds" --columns id,twice,big | tr '\n' ' ')" == '{"id":1,"twice":2,"big":false} {"id":2,"twice":4,"big":false} {"id":3,"twice":6,"big":true} {"id":9,"twice":18,"big":true} '
err=$("$lancet" add-columns "$sds" --column "x=id * 2.5" 2>&1); st=$?
check "add-columns of a badly typed expression fails, naming the constant" bash -c "test $st -eq 1 && grep -q 'constant 2.5' <<< \"\$0\"" "$err"
out=$("$lancet" update "$sds" --where "id >= 3" --set "twice=twice + 1" --set "big=false"); st=$?
check "update prints the rows updated" bash -c "test $st -eq 0 && grep -q '\"rows_updated\":2' <<< '$out'"
check "cat shows the updated rows, moved last" test "$("$lancet" cat "$sds" --columns id,twice,big | tr '\n' ' ')" == '{"id":1,"twice":2,"big":false} {"id":2,"twice":4,"big":false} {"id":3,"twice":7,"big":false} {"id":9,"twice":19,"big":false} '
check "LanceDB reads the updated rows" bash -c "node '$root/tests/interop/read_table.mjs' '$sds' --columns twice | grep -q '\"twice\":\"19\"'"
err=$("$lancet" update "$sds" --set "twice=twice * 2.5" 2>&1); st=$?
check "update with a badly typed value fails" bash -c "test $st -eq 1 && grep -q 'constant 2.5' <<< \"\$0\"" "$err"
err=$("$lancet" update "$sds" --where "id = 1" 2>&1); check "update without --set is a usage error" test $? -eq 2
out=$(printf '{"id":2,"label":"two","ts":null,"tags":null,"pt":null,"v":null,"note":null,"n":null,"w":null,"twice":40,"big":true}\n{"id":50,"twice":100,"big":false}\n' | "$lancet" merge-insert "$sds" --on id --when-matched-update-all --when-not-matched-insert-all); st=$?
check "merge-insert prints its counts" bash -c "test $st -eq 0 && grep -qF '{\"deleted_rows\":0,\"inserted_rows\":1,\"updated_rows\":1' <<< '$out'"
check "cat shows the merged rows, moved last" test "$("$lancet" cat "$sds" --columns id,twice | tr '\n' ' ')" == '{"id":1,"twice":2} {"id":3,"twice":7} {"id":9,"twice":19} {"id":2,"twice":40} {"id":50,"twice":100} '
err=$(printf '{"id":2,"twice":1,"big":true}\n{"id":2,"twice":1,"big":true}\n' | "$lancet" merge-insert "$sds" --on id --when-matched-update-all 2>&1); st=$?
check "merge-insert with a key twice fails, naming it" bash -c "test $st -eq 1 && grep -qF '(id = 2)' <<< \"\$0\"" "$err"
err=$(printf '{"id":2}\n' | "$lancet" merge-insert "$sds" --on id 2>&1); check "merge-insert without a clause is a usage error" test $? -eq 2
out=$("$lancet" alter-columns "$sds" --cast twice:int32,label:large_utf8); st=$?
check "alter-columns --cast commits a version" bash -c "test $st -eq 0 && grep -q '\"version\"' <<< '$out'"
check "cat reads the cast columns" test "$("$lancet" cat "$sds" --columns id,twice --limit 2 | tr '\n' ' ')" == '{"id":1,"twice":2} {"id":3,"twice":7} '
check "LanceDB reads the cast columns" bash -c "node '$root/tests/interop/read_table.mjs' '$sds' --columns twice,label | grep -q '\"twice\":100'"
err=$("$lancet" alter-columns "$sds" --cast id:float64 2>&1); st=$?
check "alter-columns --cast to another kind fails, naming the column" bash -c "test $st -eq 1 && grep -q \"cannot cast column 'id'\" <<< \"\$0\"" "$err"
err=$("$lancet" delete "$qds" 2>&1); check "delete without --where is a usage error" test $? -eq 2
err=$("$lancet" cat "$tmp/nothing-here" 2>&1); st=$?
check "cat of a missing dataset: not found" bash -c "test $st -eq 1 && grep -q 'not found' <<< \"\$0\"" "$err"
# ---- --version, help, unknown commands and flags --------------------------------------
version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$root/meson.build" | head -n 1)
out=$("$lancet" --version); st=$?
check "--version prints 'lancet $version'" test "$st:$out" == "0:lancet $version"
out=$("$lancet" help); st=$?
check "help exits 0" test $st -eq 0
check "help lists every command" bash -c 'for c in write cat inspect "index create" "index list" "index optimize" search delete compact update merge-insert add-columns drop-columns alter-columns; do
  grep -q "^  lancet $c " <<< "$0" || exit 1; done' "$out"
for c in write cat inspect "index create" "index list" "index optimize" search delete compact; do
  for form in "help $c" "$c --help" "$c -h" "$c DATASET --help"; do
    out=$("$lancet" $form 2>/dev/null); st=$?
    check "'lancet $form' exits 0 with the usage of $c" bash -c 'test "$1" -eq 0 && head -n 1 <<< "$0" | grep -q "^usage: lancet $2 "' "$out" "$st" "$c"
  done
done
# The usages agree with README.md's for the one-line ones.
for c in write cat inspect "index list" compact delete drop-columns; do
  line=$(grep -m 1 "^lancet $c " "$root/README.md")
  check "help $c shows README's usage line" bash -c 'test -n "$1" && grep -qxF "usage: $1" <<< "$0"' "$("$lancet" help $c)" "$line"
done
check "'lancet index --help' lists the subcommands" bash -c "'$lancet' index --help | grep -q 'lancet index optimize'"
check "'lancet -h' exits 0" bash -c "'$lancet' -h | grep -q 'lancet help'"
err=$("$lancet" cat "$tmp/ds-2.2" --colums id 2>&1 >/dev/null); st=$?
check "unknown flag: exit 2" test $st -eq 2
check "unknown flag named" grep -qF "lancet: cat: unknown flag '--colums'" <<< "$err"
check "unknown flag: suggestion and usage" bash -c "grep -qF \"did you mean '--columns'\" <<< \"\$0\" && grep -q '^usage: lancet cat ' <<< \"\$0\"" "$err"
err=$("$lancet" index create "$vds" --colum vector --type ivf_flat 2>&1 >/dev/null); st=$?
check "unknown flag of index create named" bash -c "test $st -eq 2 && grep -qF \"lancet: index create: unknown flag '--colum'\" <<< \"\$0\"" "$err"
err=$("$lancet" compact "$cds" --replace 2>&1 >/dev/null); st=$?
check "another command's flag is unknown" bash -c "test $st -eq 2 && grep -qF \"lancet: compact: unknown flag '--replace'\" <<< \"\$0\"" "$err"
err=$("$lancet" cat "$tmp/ds-2.2" -x 2>&1 >/dev/null); st=$?
check "unknown short flag named" bash -c "test $st -eq 2 && grep -qF \"unknown flag '-x'\" <<< \"\$0\"" "$err"
err=$("$lancet" frobnicate x 2>&1 >/dev/null); st=$?
check "unknown command: exit 2, named" bash -c "test $st -eq 2 && grep -qF \"unknown command 'frobnicate'\" <<< \"\$0\"" "$err"
err=$("$lancet" --frobnicate 2>&1 >/dev/null); st=$?
check "unknown top-level flag: exit 2, named" bash -c "test $st -eq 2 && grep -qF \"unknown flag '--frobnicate'\" <<< \"\$0\"" "$err"
err=$("$lancet" help frobnicate 2>&1 >/dev/null); st=$?
check "help of an unknown command: exit 2" bash -c "test $st -eq 2 && grep -qF \"unknown command 'frobnicate'\" <<< \"\$0\"" "$err"
err=$("$lancet" index frobnicate x 2>&1 >/dev/null); st=$?
check "unknown index subcommand: exit 2" test $st -eq 2
check "--name=value options" test "$("$lancet" cat "$tmp/ds-2.2" --columns=id --limit=1)" == '{"id":1}'
check "options before the dataset" test "$("$lancet" cat --columns id --limit 1 "$tmp/ds-2.2")" == '{"id":1}'
err=$("$lancet" cat "$tmp/ds-2.2" --limit 2>&1 >/dev/null); st=$?
check "option without its value: exit 2, named" bash -c "test $st -eq 2 && grep -qF \"option '--limit' needs a value\" <<< \"\$0\"" "$err"
finish cli
