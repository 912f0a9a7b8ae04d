#!/usr/bin/env bash
# IVF_PQ recall, lancet vs LanceDB 0.39, over dimensions x sub-vector widths x bits x
# metrics: tests/interop/pq_recall_sweep.mjs does the work (see its header).
#
#   bench/pq_recall_sweep.sh BUILD_DIR [OUT.jsonl] [extra pq_recall_sweep.mjs options]
#
# Defaults: dims 16,32,128,768; widths 2,4,8,16; bits 4,8; l2, cosine, dot; 3 builds
# (3 datasets of 10,000 clustered rows each); 2,000 queries, searched over both indexes
# (the table reports the paired difference with its standard errors); 16 partitions, nprobes 16
# (every partition: the IVF stage is not the bottleneck, recall@10 measures PQ); lancet
# with 1 thread and a seed of its own per cell and build (LanceDB draws afresh for every
# index; --lancet-seed S fixes it). OUT (default pq_recall_sweep.jsonl in the current
# directory) gets one line per (cell, build) as it completes; re-running with the same
# OUT resumes. The markdown table is printed at the end (or any time with
# `node tests/interop/pq_recall_sweep.mjs --table OUT`). When BUILD_DIR has
# bench/index_recall (meson -Dbench=true), both indexes are also searched by lancet
# (--index-recall: the last two columns of the table).
set -euo pipefail
build=${1:?usage: pq_recall_sweep.sh BUILD_DIR [OUT.jsonl] [options]}
out=$(realpath -m "${2:-pq_recall_sweep.jsonl}")
shift $(( $# >= 2 ? 2 : 1 ))
root=$(cd "$(dirname "$0")/.." && pwd)
lancet=$(cd "$build" && pwd)/examples/lancet
[ -x "$lancet" ] || { echo "no $lancet: ninja -C $build examples/lancet" >&2; exit 2; }
work=$(mktemp -d /tmp/lancet-pq-sweep-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$root/tests/interop"
recall=()
if [ -x "$(dirname "$lancet")/../bench/index_recall" ]; then
  recall=(--index-recall "$(cd "$(dirname "$lancet")/../bench" && pwd)/index_recall")
fi
node pq_recall_sweep.mjs --lancet "$lancet" --work "$work" --out "$out" "${recall[@]}" "$@"
