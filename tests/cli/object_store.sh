#!/usr/bin/env bash
# The CLI on a dataset in Azure Blob storage (Azurite, started here on 127.0.0.1 and
# stopped at the end): write, append, cat, delete --where, an exact search, compact and
# cleanup on az://lance/db/t.lance with --storage-option, LanceDB reading each result;
# an IVF_FLAT index built there, searched by lancet and LanceDB; 4 lancet processes and
# LanceDB appending at once; --storage-option refused where it means nothing.
#   object_store.sh LANCET_BINARY SOURCE_ROOT
set -uo pipefail
lancet=$1; root=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

coproc AZURITE { node "$root/tests/interop/azurite.mjs" "$tmp/az" lance; }
read -r -t 60 line <&"${AZURITE[0]}"
port=${line#listening }
[[ $port =~ ^[0-9]+$ ]] || { echo "azurite did not start: $line"; exit 1; }
stop_azurite() { exec {AZURITE[1]}>&-; wait "$AZURITE_PID" 2>/dev/null; }

ds=az://lance/db/t.lance
opts=(--storage-option azure_storage_account_name=devstoreaccount1
      --storage-option "azure_storage_account_key=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
      --storage-option "azure_storage_endpoint=http://127.0.0.1:$port/devstoreaccount1"
      --storage-option allow_http=true)
node_opts="{\"azure_storage_account_name\":\"devstoreaccount1\",\"azure_storage_account_key\":\"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==\",\"azure_storage_endpoint\":\"http://127.0.0.1:$port/devstoreaccount1\",\"allow_http\":\"true\"}"
lancedb_ids() {  # the ids LanceDB reads from the table, comma-separated
  node "$root/tests/interop/object_store_table.mjs" az://lance/db "$node_opts" read t |
    python3 -c 'import json,sys; print(",".join(map(str, json.loads(sys.stdin.read())["ids"])))'
}

cat > "$tmp/schema.json" <<'JSON'
{"fields": [{"name": "id", "type": "int64", "nullable": false}, {"name": "name", "type": "utf8"},
            {"name": "vec", "type": {"fixed_size_list": "float32", "size": 8}}]}
JSON
rows() {  # from to: the rows object_store_table.mjs writes
  python3 -c 'import json,sys
for i in range(int(sys.argv[1]), int(sys.argv[2])):
    print(json.dumps({"id": i, "name": "n%d" % i, "vec": [i + j / 8 for j in range(8)]}))' "$1" "$2"
}

check "write to Azure" bash -c "$(declare -f rows); rows 0 20 | '$lancet' write '$ds' --schema '$tmp/schema.json' ${opts[*]@Q} >/dev/null 2>&1"
check "append to Azure" bash -c "$(declare -f rows); rows 20 30 | '$lancet' write '$ds' --schema '$tmp/schema.json' --mode append ${opts[*]@Q} >/dev/null"
check "cat reads 30 rows" test "$("$lancet" cat "$ds" --columns id "${opts[@]}" | wc -l)" -eq 30
check "delete --where" bash -c "'$lancet' delete '$ds' --where 'id % 7 = 3' ${opts[*]@Q} >/dev/null"
check "LanceDB reads the rows left" test "$(lancedb_ids)" == "0,1,2,4,5,6,7,8,9,11,12,13,14,15,16,18,19,20,21,22,23,25,26,27,28,29"
hits=$("$lancet" search "$ds" --column vec --query '[5.1,5.225,5.35,5.475,5.6,5.725,5.85,5.975]' --k 2 --bypass-index --columns id "${opts[@]}")
check "exact search" test "$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["id"]) for l in sys.stdin))' <<< "$hits")" == "5,6"
check "compact" bash -c "'$lancet' compact '$ds' ${opts[*]@Q} >/dev/null"
check "cleanup" bash -c "'$lancet' cleanup '$ds' --keep 1 ${opts[*]@Q} | grep -q '\"old_versions\":4'"
check "LanceDB reads the compacted version" test "$(lancedb_ids)" == "0,1,2,4,5,6,7,8,9,11,12,13,14,15,16,18,19,20,21,22,23,25,26,27,28,29"
check "index create" bash -c "'$lancet' index create '$ds' --column vec --type ivf_flat --partitions 2 ${opts[*]@Q} >/dev/null"
hits=$("$lancet" search "$ds" --column vec --query '[5.1,5.225,5.35,5.475,5.6,5.725,5.85,5.975]' --k 2 --nprobes 2 --columns id "${opts[@]}")
check "search through the index" test "$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["id"]) for l in sys.stdin))' <<< "$hits")" == "5,6"
found=$(node "$root/tests/interop/object_store_table.mjs" az://lance/db "$node_opts" search t '[[5.1,5.225,5.35,5.475,5.6,5.725,5.85,5.975]]' 2 2)
check "LanceDB searches the index" python3 -c 'import json,sys; f=json.loads(sys.argv[1]); assert f["indices"][0]["indexType"] == "IvfFlat" and f["indices"][0]["indexedRows"] == 26 and f["hits"] == [[5, 6]], f' "$found"

# Concurrent appends on Azurite: 4 lancet processes x 25 appends of 2 rows and 25 of
# LanceDB's at the same time. Conditional creates of the manifest decide each version,
# the losers rebase and retry: every append lands, no row is lost or duplicated.
race=az://lance/db/race.lance
rows 0 2 | "$lancet" write "$race" --schema "$tmp/schema.json" "${opts[@]}" >/dev/null 2>&1
appender() {  # first id: 25 appends of 2 rows; prints the number that failed
  local id=$1 failed=0 i
  for ((i = 0; i < 25; i++)); do
    rows $id $((id + 2)) | "$lancet" write "$race" --schema "$tmp/schema.json" --mode append "${opts[@]}" \
      >/dev/null 2>>"$tmp/race.err" || failed=$((failed + 1))
    id=$((id + 2))
  done
  echo $failed
}
pids=()
for w in 1 2 3 4; do appender $((w * 1000)) > "$tmp/race.$w" & pids+=($!); done
node "$root/tests/interop/object_store_table.mjs" az://lance/db "$node_opts" append race 9000 2 25 \
  > "$tmp/race.lancedb" 2> "$tmp/race.lancedb.err" & pids+=($!)
wait "${pids[@]}"
failed=$(cat "$tmp"/race.[1-4] | awk '{s += $1} END {print s}')
check "racing appends: all 100 of lancet's committed ($failed failed; $(head -c 300 "$tmp/race.err" 2>/dev/null))" test "$failed" -eq 0
check "racing appends: all 25 of LanceDB's committed ($(head -c 300 "$tmp/race.lancedb.err"))" grep -q '"appended":25' "$tmp/race.lancedb"
read=$(node "$root/tests/interop/object_store_table.mjs" az://lance/db "$node_opts" read race)
check "racing appends: LanceDB reads every row once, at version 126" python3 -c '
import json,sys
r = json.loads(sys.argv[1])
want = sorted([0, 1] + [w * 1000 + i for w in range(1, 5) for i in range(50)] + [9000 + i for i in range(50)])
assert r["version"] == 126 and r["ids"] == want and not r["bad"], (r["version"], len(r["ids"]))' "$read"
check "racing appends: lancet reads 252 rows" test "$("$lancet" cat "$race" --columns id "${opts[@]}" | sort -u | wc -l)" -eq 252

err=$("$lancet" cat "$tmp/none" --storage-option a=b 2>&1); status=$?
check "--storage-option refused for a local path" test $status -eq 2
err=$("$lancet" cat "$ds" --storage-option novalue 2>&1); status=$?
check "--storage-option without '=' refused" bash -c "test $status -eq 2 && grep -q 'is not KEY=VALUE' <<< ${err@Q}"
stop_azurite
finish "cli object_store"
