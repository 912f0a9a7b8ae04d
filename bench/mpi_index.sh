#!/usr/bin/env bash
# Distributed build bench: `mpirun -np 1,2,4 lancet-mpi index create` (IVF_PQ) against a
# single-process `lancet index create` with the same parameters. For each build:
# wall time, peak RSS per rank (/usr/bin/time -f %M around every rank) and LanceDB
# 0.39's recall@10 at nprobes 20 (brute-force ground truth from LanceDB's own
# bypassVectorIndex search over NQ queries), plus its difference from the single build.
#
#   bench/mpi_index.sh LANCET_MPI LANCET [SOURCE_ROOT]
# Environment (defaults = the issue's size):
#   ROWS=1000000 DIM=128 FILES=16 NQ=200 NPS="1 2 4" (NPS="": the single build only)
#   PARTITIONS=256 SUB_VECTORS=16 BITS=8
#   WRITE_NP=2 (ranks of `lancet-mpi write`)  FRAGMENT_ROWS=ROWS/16 (--max-rows-per-file: 16
#   fragments, so that 4 ranks get 4 each)  KEEP=DIR (keep the work directory there)
# The data: clustered float32 (256 Gaussian clusters, sigma 0.3, in [-1,1]^DIM), the
# generator of tests/mpi/index_create.sh with a full-period PRNG (mulberry32), as FILES
# JSON Lines files written by `lancet-mpi write`. Every rank and the single build run with --threads 1.
set -uo pipefail
mpi_bin=$(realpath "$1"); lancet=$(realpath "$2"); root=$(realpath "${3:-$(dirname "$0")/..}")
rows=${ROWS:-1000000}; dim=${DIM:-128}; files=${FILES:-16}; nq=${NQ:-200}; nps=${NPS-"1 2 4"}
parts=${PARTITIONS:-256}; subv=${SUB_VECTORS:-16}; bits=${BITS:-8}; write_np=${WRITE_NP:-2}
frag_rows=${FRAGMENT_ROWS:-$(((rows + 15) / 16))}
if [[ -n "${KEEP:-}" ]]; then tmp=$KEEP; mkdir -p "$tmp"; else tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; fi
mpirun_np() { mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$@"; }
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | awk '{ printf "%.1f", $1 }'; }
# LanceDB's node binding has died with SIGBUS now and then on this machine: retry once.
search() {
  local out
  out=$(node "$root/tests/interop/search.mjs" "$@") || out=$(node "$root/tests/interop/search.mjs" "$@") || return 1
  printf '%s\n' "$out"
}
die() { echo "mpi_index.sh: $*" >&2; exit 1; }

echo "# $(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); rows=$rows dim=$dim files=$files"
echo "{\"fields\": [{\"name\": \"id\", \"type\": \"int64\"}, {\"name\": \"vector\", \"type\": {\"fixed_size_list\": \"float32\", \"size\": $dim}}]}" > "$tmp/schema.json"
t=$(now)
node - "$tmp" "$dim" "$files" "$rows" "$nq" <<'EOF'
const [dir, dim, files, rows, nq] = [process.argv[2], ...process.argv.slice(3).map(Number)];
const fs = require("fs");
// mulberry32: the test's LCG (s * 1103515245 in doubles) loses bits past 2^53 and
// falls into a short cycle, which repeats rows (and queries) at this size.
let s = 4242;
const rnd = () => {
  s = (s + 0x6d2b79f5) | 0;
  let t = Math.imul(s ^ (s >>> 15), 1 | s);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const nc = 256;
const centres = Array.from({ length: nc }, () => Array.from({ length: dim }, () => rnd() * 2 - 1));
const near = () => { const c = centres[Math.floor(rnd() * nc)]; return c.map((x) => x + 0.3 * gauss()); };
let id = 0;
for (let f = 0; f < files; f++) {
  const out = fs.openSync(`${dir}/rows-${f}.jsonl`, "w");
  const n = Math.floor(rows / files) + (f < rows % files ? 1 : 0);
  let buf = [];
  for (let r = 0; r < n; r++) {
    buf.push(`{"id":${id++},"vector":[${near().map((x) => x.toFixed(4)).join(",")}]}\n`);
    if (buf.length === 4096) { fs.writeSync(out, buf.join("")); buf = []; }
  }
  fs.writeSync(out, buf.join(""));
  fs.closeSync(out);
}
const q = new Float32Array(nq * dim);
for (let i = 0; i < nq; i++) q.set(near(), i * dim);
fs.writeFileSync(`${dir}/queries.f32`, Buffer.from(q.buffer));
EOF
[[ $? -eq 0 ]] || die "generating the data failed"
echo "generated $rows x $dim in $files JSONL files ($(du -sh "$tmp" | cut -f1)) in $(since "$t")s"

t=$(now)
mpirun_np "$write_np" "$mpi_bin" write "$tmp/base" --schema "$tmp/schema.json" --input "$tmp/rows-*.jsonl" \
  --max-rows-per-file "$frag_rows" > "$tmp/write.json" 2> "$tmp/write.err" || { cat "$tmp/write.err"; die "lancet-mpi write failed"; }
echo "lancet-mpi write ($write_np ranks): $(since "$t")s, dataset $(du -sh "$tmp/base" | cut -f1), $(ls "$tmp/base/data" | wc -l) data files"
rm -f "$tmp"/rows-*.jsonl

# Brute-force ground truth, once, over the unindexed dataset.
t=$(now)
search "$tmp/base" --queries "$tmp/queries.f32" --dim "$dim" --k 10 --bypass \
  > "$tmp/exact" || die "exact search failed"
echo "ground truth ($nq queries, brute force by LanceDB): $(since "$t")s"

recall() {  # DATASET -> mean recall@10 of LanceDB's indexed search (nprobes 20)
  search "$1" --queries "$tmp/queries.f32" --dim "$dim" --k 10 --nprobes 20 > "$tmp/got" ||
    { echo "search-failed"; return; }
  node -e '
    const fs = require("fs");
    const read = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l).rowids);
    const got = read(process.argv[1]), exact = read(process.argv[2]);
    let s = 0;
    for (let i = 0; i < exact.length; i++) s += got[i].filter((r) => exact[i].includes(r)).length / exact[i].length;
    console.log((s / exact.length).toFixed(4));' "$tmp/got" "$tmp/exact"
}

# Every rank under /usr/bin/time: peak RSS (KiB) in mem.<rank>.
cat > "$tmp/timed.sh" <<'EOF'
#!/bin/sh
out=$1; shift
exec /usr/bin/time -f '%M %e' -o "$out.${OMPI_COMM_WORLD_RANK:-0}" "$@"
EOF
chmod +x "$tmp/timed.sh"
# Size of the newest manifest (bytes): the commit's growth per segment.
# (Version v is _versions/(2^64 - 1 - v).manifest: the newest sorts first.)
manifest_bytes() { stat -c %s "$1/_versions/$(ls "$1/_versions" | grep '\.manifest$' | sort | head -1)"; }
mib() { awk '{ printf "%s%.0f", (NR > 1 ? " / " : ""), $1 / 1024 }' "$@"; }

params=(--column vector --type ivf_pq --partitions "$parts" --sub-vectors "$subv" --bits "$bits" --threads 1)
declare -A wall mem rec grow
t=$(now)
cp -r "$tmp/base" "$tmp/single"
m0=$(manifest_bytes "$tmp/single")
/usr/bin/time -f '%M %e' -o "$tmp/mem-single.0" "$lancet" index create "$tmp/single" "${params[@]}" 2> "$tmp/single.err" ||
  { cat "$tmp/single.err"; die "lancet index create failed"; }
wall[single]=$(since "$t"); mem[single]=$(mib "$tmp/mem-single.0"); rec[single]=$(recall "$tmp/single")
grow[single]=$(($(manifest_bytes "$tmp/single") - m0))
echo "single: ${wall[single]}s, peak ${mem[single]} MiB, recall ${rec[single]}"
rm -rf "$tmp/single"

for np in $nps; do
  cp -r "$tmp/base" "$tmp/ds$np"
  m0=$(manifest_bytes "$tmp/ds$np")
  t=$(now)
  mpirun_np "$np" "$tmp/timed.sh" "$tmp/mem-$np" "$mpi_bin" index create "$tmp/ds$np" "${params[@]}" \
    > "$tmp/mpi$np.json" 2> "$tmp/mpi$np.err" || { cat "$tmp/mpi$np.err"; die "lancet-mpi index create -np $np failed"; }
  wall[$np]=$(since "$t")
  mem[$np]=$(for ((r = 0; r < np; r++)); do cat "$tmp/mem-$np.$r"; done | mib)
  rec[$np]=$(recall "$tmp/ds$np")
  grow[$np]=$(($(manifest_bytes "$tmp/ds$np") - m0))
  echo "np $np: ${wall[$np]}s, peak per rank ${mem[$np]} MiB, recall ${rec[$np]} ($(cat "$tmp/mpi$np.json"))"
  echo "  index files (bytes): $(cd "$tmp/ds$np/_indices" && find . -name '*.idx' -printf '%s %P, ' | sort -k2)"
  rm -rf "$tmp/ds$np"
done

echo
echo "| build | wall (s) | peak RSS per rank (MiB) | recall@10, nprobes 20 | vs single | manifest growth (B) |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| lancet index create (1 process) | ${wall[single]} | ${mem[single]} | ${rec[single]} | — | ${grow[single]} |"
for np in $nps; do
  d=$(awk -v a="${rec[$np]}" -v b="${rec[single]}" 'BEGIN { printf "%+.4f", a - b }')
  echo "| mpirun -np $np lancet-mpi index create | ${wall[$np]} | ${mem[$np]} | ${rec[$np]} | $d | ${grow[$np]} |"
done
