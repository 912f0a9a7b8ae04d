#!/usr/bin/env bash
# lancet-mpi index create: 4 ranks build an IVF_PQ index over 100k x 64
# clustered vectors in 8 fragments (written by `lancet-mpi write`). LanceDB 0.39 must
# list it over every row (4 segments; 1 with --merge) and its recall@10 (nprobes 20)
# must be within 0.01 of a single-process `lancet index create`. A rank killed
# (SIGKILL) mid-build must leave the dataset at its previous version.
#   index_create.sh LANCET_MPI LANCET SOURCE_ROOT
set -uo pipefail
mpi_bin=$1; lancet=$2; root=$3
source "$(dirname "${BASH_SOURCE[0]}")/../cli/checks.sh"
mpirun_np() { mpirun --allow-run-as-root --oversubscribe -np "$@"; }
dim=64; files=8; rows=12500; nq=200
echo "{\"fields\": [{\"name\": \"id\", \"type\": \"int64\"}, {\"name\": \"vector\", \"type\": {\"fixed_size_list\": \"float32\", \"size\": $dim}}]}" > "$tmp/schema.json"
node - "$tmp" $dim $files $rows $nq <<'EOF'
const [dir, dim, files, rows, nq] = [process.argv[2], ...process.argv.slice(3).map(Number)];
const fs = require("fs");
// mulberry32: 32-bit integer arithmetic throughout (an LCG in doubles loses bits past
// 2^53 and falls into a short cycle, repeating rows).
let s = 4242;
const rnd = () => {
  s = (s + 0x6d2b79f5) | 0;
  let t = Math.imul(s ^ (s >>> 15), 1 | s);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const centres = Array.from({ length: 100 }, () => Array.from({ length: dim }, () => rnd() * 2 - 1));
const near = () => { const c = centres[Math.floor(rnd() * 100)]; return c.map((x) => x + 0.3 * gauss()); };
let id = 0;
for (let f = 0; f < files; f++) {
  const out = fs.openSync(`${dir}/rows-${f}.jsonl`, "w");
  for (let r = 0; r < rows; r++)
    fs.writeSync(out, `{"id":${id++},"vector":[${near().map((x) => x.toFixed(4)).join(",")}]}\n`);
  fs.closeSync(out);
}
const q = new Float32Array(nq * dim);
for (let i = 0; i < nq; i++) q.set(near(), i * dim);
fs.writeFileSync(`${dir}/queries.f32`, Buffer.from(q.buffer));
EOF
ds="$tmp/ds"
mpirun_np 4 "$mpi_bin" write "$ds" --schema "$tmp/schema.json" --input "$tmp/rows-*.jsonl" > "$tmp/write.json" 2>"$tmp/write.err"
check "lancet-mpi write (4 ranks) succeeds" test $? -eq 0
cat "$tmp/write.json"
version() { "$lancet" inspect "$1" | sed -n 's/^latest version \([0-9]*\):.*/\1/p'; }
v0=$(version "$ds")
total=$((files * rows))
cp -r "$ds" "$tmp/single"; cp -r "$ds" "$tmp/same"; cp -r "$ds" "$tmp/merged"; cp -r "$ds" "$tmp/killed"

build=(index create --column vector --type ivf_pq --partitions 64 --sub-vectors 16)
start=$(date +%s.%N)
mpirun_np 4 "$mpi_bin" "${build[@]}" "$ds" --model-out "$tmp/model" > "$tmp/mpi.json" 2>"$tmp/mpi.err"
st=$?
t_mpi=$(echo "$(date +%s.%N) - $start" | bc)
check "lancet-mpi index create (4 ranks) succeeds ($st)" test $st -eq 0
cat "$tmp/mpi.json"; grep -v '^lancet-mpi: built' "$tmp/mpi.err" | head -5
check "one new version" test "$(version "$ds")" -eq $((v0 + 1))
li=$(node "$root/tests/interop/list_indices.mjs" "$ds")
echo "LanceDB lists: $li"
check "LanceDB: 4 segments" grep -q '"numIndices":4' <<< "$li"
check "LanceDB: every row indexed" grep -q "\"numIndexedRows\":$total,\"numUnindexedRows\":0" <<< "$li"

start=$(date +%s.%N)
"$lancet" "${build[@]}" "$tmp/single" --threads 1 2>/dev/null
check "single-process lancet index create succeeds" test $? -eq 0
t_one=$(echo "$(date +%s.%N) - $start" | bc)
echo "build time: 4 ranks ${t_mpi}s, single process ${t_one}s (2 cores)"
"$lancet" index create "$tmp/same" --model "$tmp/model" --threads 1 2>/dev/null
check "single-process lancet index create with the 4 ranks' model succeeds" test $? -eq 0

recall() {  # DATASET -> mean recall@10 of LanceDB's indexed search (nprobes 20)
  node "$root/tests/interop/search.mjs" "$1" --queries "$tmp/queries.f32" --dim $dim --k 10 --nprobes 20 > "$tmp/got"
  [[ -f "$tmp/exact" ]] ||
    node "$root/tests/interop/search.mjs" "$1" --queries "$tmp/queries.f32" --dim $dim --k 10 --bypass > "$tmp/exact"
  node -e '
    const fs = require("fs");
    const read = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l).rowids);
    const got = read(process.argv[1]), exact = read(process.argv[2]);
    let s = 0;
    for (let i = 0; i < exact.length; i++) s += got[i].filter((r) => exact[i].includes(r)).length / exact[i].length;
    console.log((s / exact.length).toFixed(4));' "$tmp/got" "$tmp/exact"
}
within() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 && a > 0.3) }'; }
r_mpi=$(recall "$ds"); r_one=$(recall "$tmp/single"); r_same=$(recall "$tmp/same")
echo "recall@10 (nprobes 20): 4 ranks (4 segments) $r_mpi; single process: own model $r_one, the ranks' model $r_same"
# LanceDB searches each of the 4 segments with nprobes 20 and merges: at least as good
# as one segment with the same model; no worse than 0.01 below a single build.
check "recall of the 4-rank index not below the same model's single build ($r_mpi vs $r_same)" \
  awk -v a="$r_mpi" -v b="$r_same" 'BEGIN { exit !(a >= b - 0.01) }'
check "recall of the 4-rank index not 0.01 below the single build ($r_mpi vs $r_one)" \
  awk -v a="$r_mpi" -v b="$r_one" 'BEGIN { exit !(a >= b - 0.01 && a > 0.3) }'

mpirun_np 4 "$mpi_bin" "${build[@]}" --merge "$tmp/merged" > "$tmp/merged.json" 2>/dev/null
check "lancet-mpi index create --merge succeeds" test $? -eq 0
li=$(node "$root/tests/interop/list_indices.mjs" "$tmp/merged")
check "LanceDB: the merged index has 1 segment over every row" \
  bash -c 'grep -q "\"numIndices\":1" <<< "$0" && grep -q "\"numIndexedRows\":$1,\"numUnindexedRows\":0" <<< "$0"' "$li" $total
check "the merged build leaves only its own index directory" test "$(ls "$tmp/merged/_indices" | wc -l)" -eq 1
r_m=$(recall "$tmp/merged")
echo "recall@10 (nprobes 20): merged $r_m"
check "recall of the merged index within 0.01 of the single build with its model ($r_m vs $r_same)" within "$r_m" "$r_same"
check "recall of the merged index within 0.01 of the single build ($r_m vs $r_one)" within "$r_m" "$r_one"

# A failing rank: every rank exits non-zero, nothing committed, no segment left.
mpirun_np 4 "$mpi_bin" index create "$ds" --column vector --type ivf_pq --sub-vectors 7 --name other > /dev/null 2>"$tmp/bad.err"
st=$?
check "a bad parameter fails the job ($st)" test $st -ne 0
check "... naming it" grep -q "num_sub_vectors 7" "$tmp/bad.err"
check "... nothing committed" test "$(version "$ds")" -eq $((v0 + 1))
mpirun_np 4 "$mpi_bin" "${build[@]}" "$ds" > /dev/null 2>"$tmp/dup.err"
check "an existing index name fails the job without --replace" \
  bash -c 'test $0 -ne 0 && grep -q "already has an index named" "$1"' $? "$tmp/dup.err"

# A rank killed (SIGKILL) while the segments are being built.
mpirun --allow-run-as-root --oversubscribe -np 4 "$mpi_bin" "${build[@]}" --memory-budget 1048576 "$tmp/killed" \
  > /dev/null 2>"$tmp/killed.err" &
mpi_pid=$!
victim=""
rank0() {  # the pid of rank 0 (the committer) among mpirun's children
  local p
  for p in $(pgrep -P $mpi_pid -f lancet-mpi); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=0; then echo $p; return; fi
  done
}
for ((i = 0; i < 2000; i++)); do
  [[ -n "$victim" ]] && break
  sleep 0.01
  # Rank 0 once segments are being written: it commits only after every rank's segment
  # is in, so killing it while they are built can never leave a commit behind (killing
  # another rank could come after that rank had already handed over its segment).
  if compgen -G "$tmp/killed/_indices/*" > /dev/null; then victim=$(rank0); fi
done
if [[ -n "$victim" ]]; then kill -9 "$victim"; fi
wait $mpi_pid; st=$?
check "a rank was killed mid-build (pid ${victim:-none})" test -n "$victim"
check "the job exits non-zero ($st)" test $st -ne 0
check "the dataset stays at its previous version" test "$(version "$tmp/killed")" -eq "$v0"
check "LanceDB reads it, without an index" \
  bash -c 'out=$(node "$0/tests/interop/list_indices.mjs" "$1") && grep -q "\"indices\":\[\]" <<< "$out" && grep -q "\"countRows\":$2" <<< "$out"' \
  "$root" "$tmp/killed" $total

finish index_create.sh
