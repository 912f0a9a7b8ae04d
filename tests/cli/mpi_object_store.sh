#!/usr/bin/env bash
# The MPI driver on a dataset in Azure Blob storage (Azurite, started here on 127.0.0.1
# and stopped at the end): `mpirun -np 4 lancet-mpi write` creates az://lance/db/m.lance
# from 4 ranks and `lancet-mpi index create` builds an IVF_PQ index there from 4 ranks
# (a segment each); LanceDB reads every row, lists the index over all of them and its
# searches find the exact nearest rows. Bad storage options fail on every rank.
#   mpi_object_store.sh LANCET_MPI_BINARY MPIRUN SOURCE_ROOT
set -uo pipefail
lancet_mpi=$1; mpirun=$2; root=$3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
run() { "$mpirun" --allow-run-as-root --oversubscribe -np "$@"; }

coproc AZURITE { node "$root/tests/interop/azurite.mjs" "$tmp/az" lance; }
read -r -t 60 line <&"${AZURITE[0]}"
port=${line#listening }
[[ $port =~ ^[0-9]+$ ]] || { echo "azurite did not start: $line"; exit 1; }
stop_azurite() { exec {AZURITE[1]}>&-; wait "$AZURITE_PID" 2>/dev/null; }

ds=az://lance/db/m.lance
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
opts=(--storage-option azure_storage_account_name=devstoreaccount1 --storage-option "azure_storage_account_key=$key"
      --storage-option "azure_storage_endpoint=http://127.0.0.1:$port/devstoreaccount1" --storage-option allow_http=true)
node_opts="{\"azure_storage_account_name\":\"devstoreaccount1\",\"azure_storage_account_key\":\"$key\",\"azure_storage_endpoint\":\"http://127.0.0.1:$port/devstoreaccount1\",\"allow_http\":\"true\"}"
lancedb() { node "$root/tests/interop/object_store_table.mjs" az://lance/db "$node_opts" "$@"; }

cat > "$tmp/schema.json" <<'JSON'
{"fields": [{"name": "id", "type": "int64", "nullable": false}, {"name": "name", "type": "utf8"},
            {"name": "vec", "type": {"fixed_size_list": "float32", "size": 8}}]}
JSON
mkdir "$tmp/in"
for f in 0 1 2 3 4; do  # 5 files of 120 rows over 4 ranks, as object_store_table.mjs writes rows
  python3 -c 'import json,sys
for i in range(int(sys.argv[1]), int(sys.argv[1]) + 120):
    print(json.dumps({"id": i, "name": "n%d" % i, "vec": [i + j / 8 for j in range(8)]}))' $((f * 120)) > "$tmp/in/rows-$f.jsonl"
done

out=$(run 4 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/rows-*.jsonl" "${opts[@]}" 2> "$tmp/err"); st=$?
check "mpirun -np 4 write to Azure exits 0 ($(tail -n 3 "$tmp/err" | tr '\n' ' '))" test $st -eq 0
check "version 1 of 600 rows from 4 ranks ($out)" bash -c 'grep -q "\"version\":1,.*\"rows\":600,\"files\":5,\"ranks\":4" <<< "$0"' "$out"
read=$(lancedb read m)
check "LanceDB reads the 600 rows with their values" python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["ids"] == list(range(600)) and not r["bad"], r' "$read"

out=$(run 4 "$lancet_mpi" index create "$ds" --column vec --type ivf_pq --partitions 4 --sub-vectors 2 "${opts[@]}" 2> "$tmp/err"); st=$?
check "mpirun -np 4 index create on Azure exits 0 ($(tail -n 3 "$tmp/err" | tr '\n' ' '))" test $st -eq 0
check "4 segments over 600 rows ($out)" bash -c 'grep -q "\"segments\":4" <<< "$0" && grep -q "\"rows\":600" <<< "$0"' "$out"
found=$(lancedb search m '[[10.01,10.135,10.26,10.385,10.51,10.635,10.76,10.885],[333.01,333.135,333.26,333.385,333.51,333.635,333.76,333.885],[598.01,598.135,598.26,598.385,598.51,598.635,598.76,598.885]]' 3 4)
check "LanceDB lists the IVF_PQ index over every row and finds the nearest rows ($found)" python3 -c '
import json,sys
f=json.loads(sys.argv[1]); i=f["indices"]
assert len(i) == 1 and i[0]["indexType"] == "IvfPq" and i[0]["indexedRows"] == 600 and i[0]["unindexedRows"] == 0, i
assert f["hits"] == [[10, 11, 9], [333, 334, 332], [598, 599, 597]], f["hits"]' "$found"

err=$(run 2 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/rows-0.jsonl" "${opts[@]}" --storage-option aws_nonsense=1 2>&1); st=$?
check "an unknown storage option fails on every rank, named" bash -c 'test $1 -eq 1 && grep -q "aws_nonsense" <<< "$0" && grep -q "failed on 2 of 2 ranks" <<< "$0"' "$err" $st
err=$(run 2 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/rows-0.jsonl" --storage-option novalue 2>&1); st=$?
check "--storage-option without '=': usage error" bash -c 'test $1 -eq 2 && grep -q "is not KEY=VALUE" <<< "$0"' "$err" $st
check "the failed writes leave version 2 (the rows and the index)" bash -c 'grep -q "\"version\":2" <<< "$0"' "$(lancedb read m)"
stop_azurite
finish "cli mpi_object_store"
