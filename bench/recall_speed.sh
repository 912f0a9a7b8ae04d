#!/usr/bin/env bash
# Recall-QPS curves of every index type, lancet vs LanceDB 0.39 vs FAISS 1.7.3, on three
# data sets, then the plots and the leader table (bench/plot_recall_speed.py).
#
#   bench/recall_speed.sh BUILD_DIR [OUT_DIR]      (OUT_DIR default: bench/plots)
#
# BUILD_DIR: a meson build with benchmarks (bench/bench_recall_speed; FAISS found for
# the FAISS lines). Needs gnuplot (apt-get install gnuplot-nox) and tests/interop's
# node_modules (scripts/install-deps). Writes OUT_DIR/recall_speed.csv, one SVG per data
# set and index type, recall_speed_summary.md; PNGs too with PNG=1.
# Data sets (sizes chosen so that the whole run takes under 20 minutes on 2 cores):
#   clustered-128  50,000 x 128, 1,000 Gaussian blobs (spread 0.25), queries drawn like
#                  the rows (bench_ivf's data); IVF 128 partitions, PQ 16 x 8-d; every type
#   clustered-768  20,000 x 768, the same generator; IVF 64, PQ 96 x 8-d; flat, pq8 and sq
#                  (the other types at this width: the low-rank set)
#   low-rank-768   20,000 x 768, 16 latent dimensions (100 blobs, spread 0.3) mapped
#                  linearly into 768 plus noise 0.01, queries off the data (noise 0.05);
#                  IVF 64, PQ 96 x 8-d; every type
# IVF_HNSW: 16 partitions (32 at 128 dims), m 20, ef_construction 150. 200 queries.
set -euo pipefail
build=${1:?usage: recall_speed.sh BUILD_DIR [OUT_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/bench/plots}
bin=$(cd "$build" && pwd)/bench/bench_recall_speed
[[ -x $bin ]] || { echo "recall_speed.sh: $bin not built (meson -Dbench=true)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "recall_speed.sh: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$out"
csv=$out/recall_speed.csv
rm -f "$csv"
start=$(date +%s)
run() {
  echo "== $*"
  "$bin" --csv "$csv" --queries 200 "$@" | grep -v '^  '
}
run --label clustered-128 --data clustered --rows 50000 --dim 128 --clusters 1000 --spread 0.25 \
  --partitions 128 --hnsw-partitions 32 --sub-vectors 16
run --label clustered-768 --data clustered --rows 20000 --dim 768 --clusters 1000 --spread 0.25 \
  --partitions 64 --hnsw-partitions 16 --sub-vectors 96 --types flat,pq8,sq
run --label low-rank-768 --data low-rank --rows 20000 --dim 768 --latent 16 --clusters 100 --spread 0.3 \
  --partitions 64 --hnsw-partitions 16 --sub-vectors 96
python3 "$root/bench/plot_recall_speed.py" "$csv" "$out" ${PNG:+--png}
echo "recall_speed.sh: $(($(date +%s) - start)) s"
