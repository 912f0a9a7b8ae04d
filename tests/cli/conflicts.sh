#!/usr/bin/env bash
# Concurrent writers through the CLI: 4 `lancet write --mode append`
# processes x 25 appends to one dataset, then lancet processes and LanceDB (Node
# table.add) appending at the same time. Every append must commit (Lance rebases
# appends on appends), every row must be present exactly once (checked by lancet and
# by LanceDB), and every version in between must open.
#   conflicts.sh LANCET_BINARY SOURCE_ROOT
set -uo pipefail
lancet=$1; root=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
echo '{"fields": [{"name": "id", "type": "int64"}]}' > "$tmp/schema.json"
ds="$tmp/ds"
printf '{"id":0}\n' | "$lancet" write "$ds" --schema "$tmp/schema.json" 2>/dev/null
check "create" test $? -eq 0

# appender K N R FIRST: N appends of R rows, ids FIRST.. in order; prints failures.
appender() {
  local n=$1 r=$2 id=$3 failed=0 i k
  for ((i = 0; i < n; i++)); do
    local rows=""
    for ((k = 0; k < r; k++)); do rows+="{\"id\":$id}"$'\n'; id=$((id + 1)); done
    printf '%s' "$rows" | "$lancet" write "$ds" --schema "$tmp/schema.json" --mode append 2>>"$tmp/stderr" >/dev/null ||
      failed=$((failed + 1))
  done
  echo $failed
}

# 1. 4 processes x 25 appends of 3 rows.
procs=4; appends=25; rows=3
for ((p = 0; p < procs; p++)); do appender $appends $rows $((1000 + p * appends * rows)) > "$tmp/fail.$p" & done
wait
failed=$(cat "$tmp"/fail.* | awk '{s += $1} END {print s}')
check "4 x 25 appends: none failed ($failed failed)" test "$failed" -eq 0
grep -v "^lancet: wrote\|^lancet: committed after" "$tmp/stderr" | head -5
retried=$(grep -c "^lancet: committed after" "$tmp/stderr")
echo "appends that needed retries: $retried"
total=$((1 + procs * appends * rows))
ids=$("$lancet" cat "$ds" | sed 's/{"id":\([0-9]*\)}/\1/' | sort -n)
check "lancet counts $total rows" test "$(wc -l <<< "$ids")" -eq $total
check "lancet: every id once" test -z "$(uniq -d <<< "$ids")"
want=$( (echo 0; seq 1000 $((1000 + procs * appends * rows - 1))) | sort -n)
check "lancet: exactly the ids written" test "$ids" == "$want"
last=$((1 + procs * appends))
check "$last versions" bash -c "'$lancet' cat '$ds' --version $last >/dev/null && ! '$lancet' cat '$ds' --version $((last + 1)) >/dev/null 2>&1"
bad=0
for ((v = 1; v <= last; v++)); do
  n=$("$lancet" cat "$ds" --version $v | wc -l)
  [[ $n -eq $((1 + (v - 1) * rows)) ]] || bad=$((bad + 1))
done
check "every version opens with its rows ($bad bad)" test $bad -eq 0
sum=$(awk '{s += $1} END {print s}' <<< "$ids")
out=$(node "$root/tests/interop/dataset_ids.mjs" "$ds")
check "LanceDB reads every row once ($out)" \
  bash -c 'grep -q "\"countRows\":$1," <<< "$0" && grep -q "\"distinct\":$1," <<< "$0" && grep -q "\"sum\":\"$2\"" <<< "$0"' "$out" $total $sum
bad=0
for v in 2 $((last / 2)) $last; do
  out=$(node "$root/tests/interop/dataset_ids.mjs" "$ds" --version $v)
  grep -q "\"countRows\":$((1 + (v - 1) * rows))," <<< "$out" || bad=$((bad + 1))
done
check "LanceDB opens versions in between" test $bad -eq 0

# 2. Mixed: 2 lancet appenders and 2 LanceDB appenders at once, 10 appends of 2 rows each.
: > "$tmp/stderr"
rm -f "$tmp"/fail.*
appender 10 2 100000 > "$tmp/fail.a" &
appender 10 2 200000 > "$tmp/fail.b" &
node "$root/tests/interop/concurrent_append.mjs" "$ds" --appends 10 --rows 2 --first-id 300000 > "$tmp/node.c" 2> "$tmp/node.c.err" &
pc=$!
node "$root/tests/interop/concurrent_append.mjs" "$ds" --appends 10 --rows 2 --first-id 400000 > "$tmp/node.d" 2> "$tmp/node.d.err" &
pd=$!
wait $pc; sc=$?
wait $pd; sd=$?
wait
failed=$(cat "$tmp"/fail.* | awk '{s += $1} END {print s}')
check "mixed: lancet appends all committed ($failed failed)" test "$failed" -eq 0
check "mixed: LanceDB appends all committed ($(cat "$tmp/node.c" "$tmp/node.c.err" "$tmp/node.d.err" | head -c 400))" \
  test $sc -eq 0 -a $sd -eq 0
total2=$((total + 4 * 10 * 2))
ids=$("$lancet" cat "$ds" | sed 's/{"id":\([0-9]*\)}/\1/' | sort -n)
check "mixed: lancet reads $total2 rows, LanceDB's included" \
  bash -c 'test "$(wc -l <<< "$0")" -eq $1 && grep -qx 300000 <<< "$0" && grep -qx 400019 <<< "$0" && test -z "$(uniq -d <<< "$0")"' "$ids" $total2
sum=$(awk '{s += $1} END {print s}' <<< "$ids")
out=$(node "$root/tests/interop/dataset_ids.mjs" "$ds")
check "mixed: LanceDB reads $total2 rows, lancet's included ($out)" \
  bash -c 'grep -q "\"distinct\":$1," <<< "$0" && grep -q "\"rows\":$1," <<< "$0" && grep -q "\"sum\":\"$2\"" <<< "$0"' "$out" $total2 $sum
# 3. Writers against maintenance: appends while `index create`, `compact` and `index
#    optimize` run and LanceDB deletes rows. Each maintenance command commits, or fails
#    with a conflict naming the other operation; no row is lost or duplicated; every
#    version opens; LanceDB's search over the final index returns live rows only.
echo '{"fields": [{"name": "id", "type": "int64"}, {"name": "v", "type": {"fixed_size_list": "float32", "size": 2}}]}' \
  > "$tmp/vschema.json"
vds="$tmp/vds"
vrows() {  # first count
  local id=$1 k out=""
  for ((k = 0; k < $2; k++)); do out+="{\"id\":$id,\"v\":[$((id % 7)).5,$((id % 3))]}"$'\n'; id=$((id + 1)); done
  printf '%s' "$out"
}
vrows 0 64 | "$lancet" write "$vds" --schema "$tmp/vschema.json" 2>/dev/null
vappender() {  # appends first
  local n=$1 id=$2 failed=0 i
  for ((i = 0; i < n; i++)); do
    vrows $id 4 | "$lancet" write "$vds" --schema "$tmp/vschema.json" --mode append 2>>"$tmp/vstderr" >/dev/null ||
      failed=$((failed + 1))
    id=$((id + 4))
  done
  echo $failed
}
maint() {  # name, command...: exit 0, or 1 with a conflict message
  local name=$1; shift
  if "$@" > /dev/null 2> "$tmp/maint.$name"; then echo "$name: committed"
  elif grep -q "conflict\|preempted\|incompatible" "$tmp/maint.$name"; then echo "$name: conflict"
  else echo "$name: FAILED $(head -c 300 "$tmp/maint.$name")"; fi
}
deleter() {  # LanceDB deletes rows of the first 64, one commit each; prints the ids it deleted
  local id
  for id in 3 13 23 33 43 53 63; do
    if node "$root/tests/interop/delete_rows.mjs" "$vds" --where "id = $id" >/dev/null 2>>"$tmp/vdelete.err"; then
      echo "$id"
    fi
  done
}
vappender 15 1000 > "$tmp/vfail.a" &
vappender 15 2000 > "$tmp/vfail.b" &
deleter > "$tmp/vdeleted" &
{ maint index_create "$lancet" index create "$vds" --column v --type ivf_flat --partitions 2 --threads 1
  maint compact "$lancet" compact "$vds"
  maint index_optimize "$lancet" index optimize "$vds" --threads 1; } > "$tmp/maint.out"
wait
cat "$tmp/maint.out"
failed=$(cat "$tmp"/vfail.* | awk '{s += $1} END {print s}')
check "maintenance: appends all committed ($failed failed)" test "$failed" -eq 0
check "maintenance: each command committed or met a typed conflict" bash -c '! grep -q FAILED "$0"' "$tmp/maint.out"
deleted=$(sort -n "$tmp/vdeleted")
ndeleted=$(grep -c . <<< "$deleted")
check "maintenance: LanceDB's deletes committed ($ndeleted of 7; $(head -c 300 "$tmp/vdelete.err" 2>/dev/null))" test "$ndeleted" -eq 7
vtotal=$((64 + 2 * 15 * 4 - ndeleted))
ids=$("$lancet" cat "$vds" --columns id | sed 's/{"id":\([0-9]*\)}/\1/' | sort -n)
want=$( (seq 0 63; seq 1000 1059; seq 2000 2059) | grep -vxF -f <(echo "$deleted") | sort -n)
check "maintenance: every row once ($(wc -l <<< "$ids") rows)" test "$ids" == "$want"
out=$(node "$root/tests/interop/dataset_ids.mjs" "$vds")
check "maintenance: LanceDB reads every row once" bash -c 'grep -q "\"distinct\":$1," <<< "$0" && grep -q "\"rows\":$1," <<< "$0"' "$out" $vtotal
bad=0
vlast=$(ls "$vds/_versions" | grep -c '\.manifest$')
for ((v = 1; v <= vlast; v++)); do "$lancet" cat "$vds" --version $v --columns id > /dev/null 2>&1 || bad=$((bad + 1)); done
check "maintenance: all $vlast versions open" test $bad -eq 0
# The final index (committed by index create or optimize above) searched by LanceDB: the
# query is each deleted row's own vector, which other live rows share; the deleted row
# never comes back.
if "$lancet" index list "$vds" 2>/dev/null | grep -q v_idx; then
  for id in $deleted; do
    out=$(node "$root/tests/interop/search_ids.mjs" "$vds" --column v --query "[$((id % 7)).5,$((id % 3))]" --k 40 --nprobes 2 2>/dev/null)
    check "maintenance: LanceDB's search for deleted row $id returns live rows only" \
      bash -c 'python3 -c "
import json, sys
got = json.loads(sys.argv[1])[\"ids\"]
live = set(map(int, sys.argv[2].split()))
sys.exit(0 if got and all(i in live for i in got) and int(sys.argv[3]) not in got else 1)" "$0" "$1" "$2"' "$out" "$ids" "$id"
  done
else
  check "maintenance: an index was committed" false
fi
finish conflicts
