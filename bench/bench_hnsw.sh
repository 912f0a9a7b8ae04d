#!/usr/bin/env bash
# IVF_HNSW_SQ build time and peak memory, lancet vs LanceDB 0.39's createIndex, and
# LanceDB's QPS / recall@10 over both indexes at ef 50, 100, 200 (nprobes 20).
#
#   bench/bench_hnsw.sh BUILD_DIR [ROWS] [DIM] [PARTITIONS]     (default 100000 128 64)
#
# Data: create_index.mjs's clustered vectors (64 blobs, spread 0.1, seed 1), written by
# LanceDB; both indexes with m 20, ef_construction 150; lancet with 2 threads. Recall
# is against LanceDB's exact search (bypassVectorIndex) of the same queries (200
# vectors uniform in [-0.8, 0.8]^dim, from the generator below).
# bench_hnsw (bench/bench_hnsw.cpp, built with -Dbench=true) does all of this in one
# program and adds lancet's own searcher, FAISS IndexHNSWFlat / IndexHNSWSQ, lancet's
# IVF_PQ and the build's peak RSS.
set -euo pipefail
build=${1:?usage: bench_hnsw.sh BUILD_DIR [ROWS] [DIM] [PARTITIONS]}
rows=${2:-100000}; dim=${3:-128}; parts=${4:-64}
root=$(cd "$(dirname "$0")/.." && pwd)
lancet=$(cd "$build" && pwd)/examples/lancet
work=$(mktemp -d /tmp/lancet-bench-hnsw-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$root/tests/interop"
node create_index.mjs "$work/base" --create --rows "$rows" --dim "$dim" --clusters 64 --type none > /dev/null
cp -r "$work/base" "$work/ours"; cp -r "$work/base" "$work/theirs"
# Queries: 200 random rows' vectors plus N(0, 0.05) noise, raw f32.
node -e '
const fs = require("fs"); const [dim, n, out] = [Number(process.argv[1]), Number(process.argv[2]), process.argv[3]];
let s = 7; const r = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
const q = new Float32Array(200 * dim);
for (let i = 0; i < q.length; i++) q[i] = (r() * 2 - 1) * 0.8;
fs.writeFileSync(out, Buffer.from(q.buffer));' "$dim" "$rows" "$work/q.f32"

echo "## IVF_HNSW_SQ, $rows x $dim, $parts partitions, m 20, ef_construction 150"
t_lance=$(node ivf_acceptance.mjs index "$work/theirs" --type hnsw_sq --partitions "$parts" --m 20 --ef-construction 150 |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).seconds.toFixed(2)))')
/usr/bin/time -f "%e %M" -o "$work/time" "$lancet" index create "$work/ours" --column vector --type ivf_hnsw_sq \
  --partitions "$parts" --m 20 --ef-construction 150 --threads 2 2> /dev/null
read -r t_ours kb < "$work/time"
echo "build seconds: lancet $t_ours (peak RSS $((kb / 1024)) MiB), LanceDB createIndex $t_lance"
node ivf_acceptance.mjs search "$work/base" --queries "$work/q.f32" --dim "$dim" --k 10 --bypass > "$work/truth.jsonl"
for ef in 50 100 200; do
  for which in ours theirs; do
    node ivf_acceptance.mjs search "$work/$which" --queries "$work/q.f32" --dim "$dim" --k 10 --nprobes 20 --ef "$ef" \
      > "$work/$which-$ef.jsonl"
    node -e '
const fs = require("fs"); const rd = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
const t = rd(process.argv[1]), g = rd(process.argv[2]); let hit = 0, n = 0;
for (let i = 0; i < t.length - 1; i++) { const w = new Set(t[i].rowids); for (const id of g[i].rowids) hit += w.has(id); n += w.size; }
console.log(`ef ${process.argv[3]} LanceDB over ${process.argv[4]} index: recall@10 ${(hit / n).toFixed(4)}, QPS ${g[g.length - 1].qps.toFixed(0)}`);
' "$work/truth.jsonl" "$work/$which-$ef.jsonl" "$ef" "$([ $which = ours ] && echo lancet\'s || echo LanceDB\'s)"
  done
done
