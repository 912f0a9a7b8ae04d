#!/usr/bin/env bash
# A distributed index through the CLI: `lancet index train` once, two
# `lancet index create --uncommitted` processes over disjoint fragments, `lancet index
# commit`. LanceDB 0.39 must list the index with 2 segments covering every row, and
# its recall@10 (nprobes 20) over it must be within 0.01 of a single-process lancet
# build with the same model; the merged variant (`index merge-segments`) is listed
# with 1 segment. Bad input (overlapping segments, another model, a fragment gone,
# another name / column, a damaged model) is refused and commits nothing.
#   segments.sh LANCET_BINARY SOURCE_ROOT
set -uo pipefail
lancet=$1; root=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
dim=32; frags=4; rows=3000; nq=100
echo "{\"fields\": [{\"name\": \"id\", \"type\": \"int64\"}, {\"name\": \"vector\", \"type\": {\"fixed_size_list\": \"float32\", \"size\": $dim}}]}" > "$tmp/schema.json"

# Clustered rows (64 centres), one JSONL file per fragment, and queries near them.
node - "$tmp" $dim $frags $rows $nq <<'EOF'
const [dir, dim, frags, rows, nq] = [process.argv[2], ...process.argv.slice(3).map(Number)];
const fs = require("fs");
let s = 12345;
const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const centres = Array.from({ length: 64 }, () => Array.from({ length: dim }, () => rnd() * 2 - 1));
const near = () => { const c = centres[Math.floor(rnd() * 64)]; return c.map((x) => x + 0.25 * gauss()); };
let id = 0;
for (let f = 0; f < frags; f++) {
  const lines = [];
  for (let r = 0; r < rows; r++) lines.push(JSON.stringify({ id: id++, vector: near().map((x) => Math.fround(x)) }));
  fs.writeFileSync(`${dir}/rows.${f}.jsonl`, lines.join("\n") + "\n");
}
const q = new Float32Array(nq * dim);
for (let i = 0; i < nq; i++) q.set(near(), i * dim);
fs.writeFileSync(`${dir}/queries.f32`, Buffer.from(q.buffer));
EOF
ds="$tmp/ds"
for ((f = 0; f < frags; f++)); do
  mode=append; [[ $f -eq 0 ]] && mode=create
  "$lancet" write "$ds" --schema "$tmp/schema.json" --mode $mode < "$tmp/rows.$f.jsonl" 2>/dev/null ||
    { echo "FAILED: write fragment $f"; exit 1; }
done
version() { "$lancet" inspect "$1" | sed -n 's/^latest version \([0-9]*\):.*/\1/p'; }
v0=$(version "$ds")
check "dataset: $frags fragments, version $v0" test "$v0" -eq $frags

# Train once; build 2 segments in 2 processes at the same time.
"$lancet" index train "$ds" --column vector --type ivf_pq --partitions 64 --sub-vectors 8 --out "$tmp/model" \
  > "$tmp/train.json" 2>"$tmp/train.err"
check "index train succeeds" test $? -eq 0
check "index train prints the fingerprint" grep -q '"fingerprint":"[0-9a-f]\{16\}"' "$tmp/train.json"
check "index train commits nothing" test "$(version "$ds")" -eq "$v0"
"$lancet" index create "$ds" --model "$tmp/model" --fragments 0,2 --uncommitted > "$tmp/seg.a" 2>"$tmp/a.err" &
pa=$!
"$lancet" index create "$ds" --model "$tmp/model" --fragments 1,3 --uncommitted > "$tmp/seg.b" 2>"$tmp/b.err" &
pb=$!
wait $pa; sa=$?; wait $pb; sb=$?
check "2 index create --uncommitted processes succeed ($sa, $sb)" test $sa -eq 0 -a $sb -eq 0
cat "$tmp/a.err" "$tmp/b.err" | tr "\r" "\n" | grep "^lancet:"
check "segment JSON names its fragments" grep -q '"fragment_ids":\[0,2\]' "$tmp/seg.a"
check "index create --uncommitted commits nothing" test "$(version "$ds")" -eq "$v0"
fp=$(sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p' "$tmp/train.json")
check "segments carry the model's fingerprint" grep -q "\"model\":\"$fp\"" "$tmp/seg.b"

# A copy for the merged variant, and one for the single-process build (same model).
cp -r "$ds" "$tmp/merged"; cp -r "$ds" "$tmp/single"
"$lancet" index create "$tmp/single" --model "$tmp/model" 2>/dev/null
check "single-process build with the model commits" test "$(version "$tmp/single")" -eq $((v0 + 1))

# Bad input: refused, nothing committed.
refused() {  # description, expected message, command...
  local what=$1 msg=$2; shift 2
  local err
  err=$("$@" 2>&1 >/dev/null); local st=$?
  check "$what: exit 1 ($st)" test $st -eq 1
  check "$what: says '$msg' ($err)" grep -qF -- "$msg" <<< "$err"
  check "$what: nothing committed" test "$(version "$ds")" -eq "$v0"
}
"$lancet" index create "$ds" --model "$tmp/model" --fragments 2,3 --uncommitted > "$tmp/seg.over" 2>/dev/null
refused "overlapping segments" "fragment 2 is covered by" \
  "$lancet" index commit "$ds" --name vector_idx --column vector "$tmp/seg.a" "$tmp/seg.over"
"$lancet" index create "$ds" --type ivf_pq --column vector --partitions 64 --sub-vectors 8 --fragments 1,3 \
  --uncommitted > "$tmp/seg.own" 2>/dev/null
refused "a segment trained with its own model" "share one trained model" \
  "$lancet" index commit "$ds" --name vector_idx --column vector "$tmp/seg.a" "$tmp/seg.own"
refused "another index name" "was built as index 'vector_idx'" \
  "$lancet" index commit "$ds" --name other --column vector "$tmp/seg.a" "$tmp/seg.b"
refused "another column" "indexes column 'vector'" \
  "$lancet" index commit "$ds" --name vector_idx --column id "$tmp/seg.a" "$tmp/seg.b"
head -c 100 "$tmp/model" > "$tmp/model.cut"
refused "a truncated model" "model file '$tmp/model.cut'" \
  "$lancet" index create "$ds" --model "$tmp/model.cut" --fragments 0 --uncommitted
refused "not a segment file" "not a lancet index segment" \
  "$lancet" index commit "$ds" --name vector_idx --column vector "$tmp/schema.json"
check "usage: merge-segments needs segments (exit 2)" bash -c "'$lancet' index merge-segments '$ds' 2>/dev/null; test \$? -eq 2"
# A fragment deleted since the segment was built (LanceDB deletes all of fragment 0's rows).
cp -r "$tmp/merged" "$tmp/gone"
node "$root/tests/interop/delete_rows.mjs" "$tmp/gone" --where "id < $rows" >/dev/null
vg=$(version "$tmp/gone")
err=$("$lancet" index commit "$tmp/gone" --name vector_idx --column vector "$tmp/seg.a" "$tmp/seg.b" 2>&1 >/dev/null)
check "a segment over a fragment deleted since: refused ($err)" grep -qF "covers fragment 0" <<< "$err"
check "a segment over a fragment deleted since: nothing committed" test "$(version "$tmp/gone")" -eq "$vg"

# Commit the 2 segments.
"$lancet" index commit "$ds" --name vector_idx --column vector "$tmp/seg.a" "$tmp/seg.b" > "$tmp/commit.json" 2>/dev/null
check "index commit succeeds" test $? -eq 0
check "index commit: one new version" test "$(version "$ds")" -eq $((v0 + 1))
li=$(node "$root/tests/interop/list_indices.mjs" "$ds")
echo "LanceDB lists: $li"
total=$((frags * rows))
check "LanceDB: one index of 2 segments" bash -c 'grep -q "\"numIndices\":2" <<< "$0" && test $(grep -o "\"name\":\"vector_idx\"" <<< "$0" | wc -l) -eq 1' "$li"
check "LanceDB: every row indexed" grep -q "\"numIndexedRows\":$total,\"numUnindexedRows\":0" <<< "$li"

# Recall@10, nprobes 20, against the exact neighbours.
recall() {  # DATASET -> mean recall@10 of LanceDB's indexed search
  node "$root/tests/interop/search.mjs" "$1" --queries "$tmp/queries.f32" --dim $dim --k 10 --nprobes 20 > "$tmp/got"
  node "$root/tests/interop/search.mjs" "$1" --queries "$tmp/queries.f32" --dim $dim --k 10 --bypass > "$tmp/exact"
  node -e '
    const fs = require("fs");
    const read = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l).rowids);
    const got = read(process.argv[1]), exact = read(process.argv[2]);
    let s = 0;
    for (let i = 0; i < exact.length; i++) s += got[i].filter((r) => exact[i].includes(r)).length / exact[i].length;
    console.log((s / exact.length).toFixed(4));' "$tmp/got" "$tmp/exact"
}
r_seg=$(recall "$ds"); r_one=$(recall "$tmp/single")
echo "recall@10 (nprobes 20): 2 segments $r_seg, single-process build $r_one"
check "recall of the 2-segment index within 0.01 of the single build ($r_seg vs $r_one)" \
  awk -v a="$r_seg" -v b="$r_one" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 && a > 0.5) }'

# The merged variant: one physical segment.
"$lancet" index merge-segments "$tmp/merged" "$tmp/seg.a" "$tmp/seg.b" > "$tmp/seg.m" 2>/dev/null
check "index merge-segments succeeds" test $? -eq 0
check "merged segment covers all fragments" grep -q '"fragment_ids":\[0,1,2,3\]' "$tmp/seg.m"
"$lancet" index commit "$tmp/merged" --name vector_idx --column vector "$tmp/seg.m" >/dev/null 2>&1
check "merged segment commits" test $? -eq 0
li=$(node "$root/tests/interop/list_indices.mjs" "$tmp/merged")
echo "LanceDB lists (merged): $li"
check "LanceDB: the merged index has 1 segment" grep -q '"numIndices":1' <<< "$li"
check "LanceDB: the merged index covers every row" grep -q "\"numIndexedRows\":$total,\"numUnindexedRows\":0" <<< "$li"
r_m=$(recall "$tmp/merged")
echo "recall@10 (nprobes 20): merged $r_m"
check "recall of the merged index within 0.01 of the single build ($r_m vs $r_one)" \
  awk -v a="$r_m" -v b="$r_one" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 && a > 0.5) }'

finish segments.sh
