#!/usr/bin/env bash
# The MPI driver: `mpirun -np 4 lancet-mpi write` over a temporary directory
# creates a dataset and appends to it from 4 ranks, each commit one version; LanceDB 0.39
# reads every row with its values. A rank whose input has a bad row makes every rank
# exit non-zero, the dataset stays at its previous version and the data files the
# other ranks wrote are removed.
#   mpi.sh LANCET_MPI_BINARY MPIRUN SOURCE_ROOT
set -uo pipefail
lancet_mpi=$1; mpirun=$2; root=$3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
# Root in CI containers; 4 ranks on 2 cores.
run() { "$mpirun" --allow-run-as-root --oversubscribe -np "$@"; }
echo '{"fields": [{"name": "id", "type": "int64", "nullable": false}, {"name": "s", "type": "utf8"},
                  {"name": "v", "type": {"fixed_size_list": "int32", "size": 2}}]}' > "$tmp/schema.json"
# input FILE FIRST COUNT: ids FIRST.., s "r<id>", v [id % 100, -(id % 100)].
input() { awk -v a="$2" -v n="$3" 'BEGIN { for (i = a; i < a + n; i++) printf "{\"id\":%d,\"s\":\"r%d\",\"v\":[%d,%d]}\n", i, i, i % 100, -(i % 100) }' > "$1"; }
canonical() { awk -v a="$1" -v n="$2" 'BEGIN { for (i = a; i < a + n; i++) printf "{\"id\":\"%d\",\"s\":\"r%d\",\"v\":[%d,%d]}\n", i, i, i % 100, -(i % 100) }'; }
lancedb_rows() { node "$root/tests/interop/read_table.mjs" "$1" | grep -v countRows | sort; }
info() { node "$root/tests/interop/dataset_info.mjs" "$1"; }
ds="$tmp/ds"
mkdir "$tmp/in"
# 6 files of unequal sizes over 4 ranks (two ranks get two files).
sizes=(3000 500 2500 1000 2000 1500)
for i in "${!sizes[@]}"; do input "$tmp/in/rows-$i.jsonl" $((i * 10000)) "${sizes[$i]}"; done
out=$(run 4 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/rows-*.jsonl" 2> "$tmp/err"); st=$?
check "mpirun -np 4 write exits 0 ($(tail -n 3 "$tmp/err" | tr '\n' ' '))" test $st -eq 0
# One fragment per rank: a rank's files stream into the same data files.
check "rank 0 reports version 1, 4 fragments of 10500 rows from 6 files on 4 ranks ($out)" \
  bash -c 'grep -q "\"version\":1,\"read_version\":0,\"fragments\":4,\"rows\":10500,\"files\":6,\"ranks\":4" <<< "$0"' "$out"
want=$(for i in "${!sizes[@]}"; do canonical $((i * 10000)) "${sizes[$i]}"; done | sort)
check "LanceDB reads all 10500 rows with their values" test "$(lancedb_rows "$ds")" == "$want"

# Append 2 more files with --max-rows-per-file: version 2.
input "$tmp/in/more-0.jsonl" 100000 700; input "$tmp/in/more-1.jsonl" 200000 300
out=$(run 4 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/more-*.jsonl" --max-rows-per-file 250 2>/dev/null); st=$?
check "append exits 0 with version 2, 3 + 2 = 5 fragments ($out)" \
  bash -c 'test $1 -eq 0 && grep -q "\"version\":2,\"read_version\":1,\"fragments\":5,\"rows\":1000" <<< "$0"' "$out" $st
want=$( (for i in "${!sizes[@]}"; do canonical $((i * 10000)) "${sizes[$i]}"; done; canonical 100000 700; canonical 200000 300) | sort)
check "LanceDB reads the appended rows" test "$(lancedb_rows "$ds")" == "$want"
files_before=$(ls "$ds/data" | wc -l)

# A bad row on one rank: every rank exits non-zero, nothing committed, no files left.
input "$tmp/in/bad-0.jsonl" 300000 4000; input "$tmp/in/bad-1.jsonl" 400000 4000; input "$tmp/in/bad-2.jsonl" 500000 4000
input "$tmp/in/bad-3.jsonl" 600000 10; sed -i '3s/.*/{"id":"three"}/' "$tmp/in/bad-3.jsonl"
out=$(run 4 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/bad-*.jsonl" 2> "$tmp/err"); st=$?
check "a failing rank: mpirun exits non-zero" test $st -ne 0
check "the failure names the rank, file and line" grep -q "rank [0-9]: .*bad-3.jsonl.*line 3, field 'id'" "$tmp/err"
check "every rank exited non-zero, none committed" grep -q "writing fragments failed on 1 of 4 ranks; nothing was committed" "$tmp/err"
check "nothing on stdout" test -z "$out"
check "LanceDB still sees version 2" bash -c 'grep -q "\"version\":2,\"countRows\":11500,\"versions\":\[1,2\]" <<< "$0"' "$(info "$ds")"
check "the other ranks' data files were removed" test "$(ls "$ds/data" | wc -l)" -eq "$files_before"

# Overwrite from 2 ranks, then bad usage.
out=$(run 2 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/more-1.jsonl" --operation overwrite 2>/dev/null); st=$?
check "overwrite: version 3 of 300 rows" bash -c 'test $1 -eq 0 && grep -q "\"version\":3,\"read_version\":2,\"fragments\":1,\"rows\":300" <<< "$0"' "$out" $st
check "LanceDB reads only the overwritten rows" test "$(lancedb_rows "$ds")" == "$(canonical 200000 300 | sort)"
err=$(run 2 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" --input "$tmp/in/none-*.jsonl" 2>&1); st=$?
check "an input glob matching nothing fails, named" bash -c 'test $1 -ne 0 && grep -q "matches no file" <<< "$0"' "$err" $st
err=$(run 2 "$lancet_mpi" write "$ds" --input "$tmp/in/more-1.jsonl" 2>&1); st=$?
check "write without --schema: usage error" bash -c 'test $1 -ne 0 && grep -q "write needs --schema" <<< "$0"' "$err" $st
check "still version 3" bash -c 'grep -q "\"version\":3," <<< "$0"' "$(info "$ds")"
# A rank killed mid-write (SIGKILL): mpirun ends the job and nothing is committed (the
# killed rank's files stay unreferenced for cleanup). The victim is the rank reading the
# one large input, once data files have appeared, so it has not sent its fragments yet.
input "$tmp/in/big-0.jsonl" 1000000 1500000
for i in 1 2 3; do input "$tmp/in/big-$i.jsonl" $((1000000 * (i + 1))) 1000; done
files_now=$(ls "$ds/data" | wc -l)
"$mpirun" --allow-run-as-root --oversubscribe -np 4 "$lancet_mpi" write "$ds" --schema "$tmp/schema.json" \
  --input "$tmp/in/big-*.jsonl" > "$tmp/out" 2> "$tmp/err" &
mp=$!  # mpirun itself: the ranks are its children
victim=
for ((k = 0; k < 600; k++)); do
  if (($(ls "$ds/data" | wc -l) > files_now)); then
    for pid in $(pgrep -P $mp -x lancet-mpi); do
      ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "big-0.jsonl" && victim=$pid
    done
  fi
  [[ -n $victim ]] && break
  sleep 0.05
done
check "found a rank to kill" test -n "$victim"
[[ -n $victim ]] && kill -9 "$victim"
wait $mp; st=$?
check "a killed rank: mpirun exits non-zero" test $st -ne 0
check "a killed rank: nothing reported committed" test ! -s "$tmp/out"
check "a killed rank: LanceDB still sees version 3 of 300 rows" bash -c 'grep -q "\"version\":3,\"countRows\":300," <<< "$0"' "$(info "$ds")"
finish mpi
