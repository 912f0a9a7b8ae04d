// IVF_PQ recall sweep, lancet vs LanceDB 0.39: driven by bench/pq_recall_sweep.sh.
//
//   node pq_recall_sweep.mjs --lancet PATH/examples/lancet --work DIR --out RESULTS.jsonl
//        [--dims 16,32,128,768] [--widths 2,4,8,16] [--bits 4,8] [--metrics l2,cosine,dot]
//        [--builds 3] [--rows 10000] [--queries 2000] [--partitions 16] [--nprobes 16]
//        [--clusters 64] [--k 10] [--threads 1] [--lancet-seed S] [--index-recall PATH/bench/index_recall]
//   node pq_recall_sweep.mjs --table RESULTS.jsonl     (prints the markdown table only)
//
// For every dimension and build b (1..builds) one dataset of clustered rows of its own
// (seed b, written by LanceDB) and --queries query vectors from the same mixture; for
// every cell (sub-vector width, bits, metric) two copies of the dataset get an IVF_PQ
// index with the same parameters: one by `lancet index create`, one by LanceDB's
// createIndex. LanceDB searches both (same nprobes, k, no refine) and recall@k is
// against the exact neighbours (computed here in float64). Both indexes answer the same
// queries, so each line also has the paired difference lancet - LanceDB and its
// standard error over the queries (diff_se: the query-sampling noise of that build).
// lancet trains with a seed of its own per (cell, build) (cellSeed below), as LanceDB
// draws its k-means initial rows afresh for every index: with one fixed seed every l2 /
// cosine cell of a dataset would share one draw of IVF centroids (the IVF stage does not
// depend on the PQ parameters), so the cells' differences would not be independent.
// --lancet-seed S trains every cell with seed S instead (the sweeps of 2026-12-02/03
// used lancet's default, 42). The seed is recorded in each line.
// --index-recall: bench/index_recall also searches both indexes with lancet's searcher
// (every partition, exact f32 distances: what the codes are worth apart from LanceDB's
// search kernel) and, for 4-bit dot indexes, with a model of Lance's 4-bit scan; each
// line then has lancet_index / lancedb_index (and lancet_kernel / lancedb_kernel).
// One JSON line per (cell, build) goes to --out as it completes; lines already there
// are skipped, so an interrupted sweep resumes. Cells where the width exceeds the dimension do not exist;
// cells one library refuses are recorded with its error message.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { arrow, createDataset, fail, intArg, makeRng, openDataset, parseArgs, runMain, lancedb } from "./lib.mjs";

const list = (s, dflt) => (s === undefined ? dflt : String(s).split(",").filter((x) => x.length));

// n rows of dim values around `clusters` centres (N(0,1) coordinates, spread 0.3 per
// coordinate, a random positive scale per centre so dot and l2 rank differently), then
// q queries drawn the same way.
function clustered(dim, n, q, clusters, seed) {
  const rng = makeRng(0x9e3779b9 ^ (seed * 7919 + dim));
  const gauss = () => {
    const u = Math.max(rng.next(), 1e-12), v = rng.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
  const centres = new Float64Array(clusters * dim);
  const scale = new Float64Array(clusters);
  for (let c = 0; c < clusters; c++) {
    scale[c] = 0.5 + rng.next();
    for (let t = 0; t < dim; t++) centres[c * dim + t] = gauss();
  }
  const draw = (count) => {
    const out = new Float32Array(count * dim);
    for (let r = 0; r < count; r++) {
      const c = Math.floor(rng.next() * clusters);
      for (let t = 0; t < dim; t++) out[r * dim + t] = scale[c] * (centres[c * dim + t] + 0.3 * gauss());
    }
    return out;
  };
  return { rows: draw(n), queries: draw(q) };
}

// lancet's seed for one (cell, build): FNV-1a of the cell's key, fixed in advance so a
// rerun trains the same indexes.
function cellSeed(dim, width, bits, metric, build) {
  let h = 0x811c9dc5;
  for (const ch of `${dim}/${width}/${bits}/${metric}/${build}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

function vectorTable(values, dim) {
  const n = values.length / dim;
  const itemType = new arrow.Float32();
  const type = new arrow.FixedSizeList(dim, new arrow.Field("item", itemType, true));
  const child = arrow.makeData({ type: itemType, length: values.length, nullCount: 0, data: values });
  const vec = arrow.makeData({ type, length: n, nullCount: 0, child });
  const ids = arrow.makeData({ type: new arrow.Int64(), length: n, nullCount: 0,
    data: BigInt64Array.from({ length: n }, (_, i) => BigInt(i)) });
  const fields = [new arrow.Field("id", new arrow.Int64(), false), new arrow.Field("vector", type, true)];
  const schema = new arrow.Schema(fields);
  const batch = arrow.makeData({ type: new arrow.Struct(fields), length: n, nullCount: 0, children: [ids, vec] });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, batch)]);
}

// Exact top-k ids per query under the metric (l2: squared distance; cosine: 1 - cos;
// dot: -x.y), in float64.
function exactTopK(rows, queries, dim, k, metric) {
  const n = rows.length / dim, nq = queries.length / dim;
  const rnorm = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let t = 0; t < dim; t++) s += rows[r * dim + t] * rows[r * dim + t];
    rnorm[r] = Math.sqrt(s);
  }
  const out = [];
  const dist = new Float64Array(n);
  for (let i = 0; i < nq; i++) {
    const qo = i * dim;
    let qn = 0;
    for (let t = 0; t < dim; t++) qn += queries[qo + t] * queries[qo + t];
    for (let r = 0; r < n; r++) {
      let dot = 0;
      const ro = r * dim;
      for (let t = 0; t < dim; t++) dot += queries[qo + t] * rows[ro + t];
      dist[r] = metric === "l2" ? qn + rnorm[r] * rnorm[r] - 2 * dot
        : metric === "cosine" ? 1 - dot / (Math.sqrt(qn) * rnorm[r]) : -dot;
    }
    const idx = Array.from({ length: n }, (_, r) => r);
    idx.sort((a, b) => dist[a] - dist[b] || a - b);
    out.push(new Set(idx.slice(0, k)));
  }
  return out;
}

// recall@k of each query (hits / k) over LanceDB's search of the index in dir.
async function recallsOf(dir, queries, dim, k, nprobes, metric, truth) {
  const { table, cleanup } = await openDataset(dir);
  try {
    const nq = queries.length / dim;
    const out = new Float64Array(nq);
    const one = async (i) => {
      const q = Array.from(queries.subarray(i * dim, (i + 1) * dim));
      const rows = await table.vectorSearch(q).column("vector").distanceType(metric).nprobes(nprobes).limit(k)
        .select(["id", "_distance"]).toArray();
      let hit = 0;
      for (const r of rows) hit += truth[i].has(Number(r.id));
      out[i] = hit / truth[i].size;
    };
    // A few searches in flight at once: each is a round trip through LanceDB's runtime.
    for (let i = 0; i < nq; i += 8) {
      const batch = [];
      for (let j = i; j < Math.min(i + 8, nq); j++) batch.push(one(j));
      await Promise.all(batch);
    }
    return out;
  } finally {
    table.close();
    cleanup();
  }
}

const mean = (a) => a.reduce((s, x) => s + x, 0) / a.length;
// Sample standard deviation (n - 1).
const stdev = (a) => {
  const m = mean(a);
  return Math.sqrt(a.reduce((s, x) => s + (x - m) * (x - m), 0) / (a.length - 1));
};

function errorText(err) {
  const s = String(err?.stderr?.toString?.() || err?.message || err).trim().split("\n").filter((l) => l.trim());
  return (s.find((l) => /error/i.test(l)) ?? s[0] ?? "failed").replace(/, \/usr\/local\/cargo.*$/, "").slice(0, 160);
}

async function sweep(args) {
  const lancet = path.resolve(args.lancet ?? fail("--lancet PATH is required"));
  const work = path.resolve(args.work ?? fail("--work DIR is required"));
  const outFile = path.resolve(args.out ?? fail("--out FILE is required"));
  const dims = list(args.dims, ["16", "32", "128", "768"]).map(Number);
  const widths = list(args.widths, ["2", "4", "8", "16"]).map(Number);
  const bitsList = list(args.bits, ["4", "8"]).map(Number);
  const metrics = list(args.metrics, ["l2", "cosine", "dot"]);
  const builds = intArg(args, "builds", 3), rows = intArg(args, "rows", 10000);
  const nq = intArg(args, "queries", 2000), parts = intArg(args, "partitions", 16);
  const nprobes = intArg(args, "nprobes", parts), clusters = intArg(args, "clusters", 64);
  const indexRecall = args["index-recall"] ? path.resolve(args["index-recall"]) : null;
  if (indexRecall && !fs.existsSync(indexRecall)) fail(`--index-recall: no ${indexRecall}`);
  const k = intArg(args, "k", 10), threads = intArg(args, "threads", 1);
  const fixedSeed = args["lancet-seed"] === undefined ? undefined : intArg(args, "lancet-seed", 42);
  fs.mkdirSync(work, { recursive: true });
  const done = new Set();
  if (fs.existsSync(outFile))
    for (const line of fs.readFileSync(outFile, "utf8").split("\n").filter((l) => l.trim())) {
      const o = JSON.parse(line);
      done.add(`${o.dim}/${o.width}/${o.bits}/${o.metric}/${o.build}`);
    }
  const emit = (o) => {
    fs.appendFileSync(outFile, `${JSON.stringify(o)}\n`);
    process.stderr.write(`${JSON.stringify(o)}\n`);
  };
  for (const dim of dims) {
    for (let b = 1; b <= builds; b++) {
      const cells = [];
      for (const width of widths)
        for (const bits of bitsList)
          for (const metric of metrics)
            if (width <= dim && dim % width === 0 && !done.has(`${dim}/${width}/${bits}/${metric}/${b}`))
              cells.push({ width, bits, metric });
      if (!cells.length) continue;
      const { rows: data, queries } = clustered(dim, rows, nq, clusters, b);
      const base = path.join(work, `base-${dim}-${b}`);
      await createDataset(base, vectorTable(data, dim), "2.0");
      const truths = {};
      const files = { rows: path.join(work, "rows.f32"), queries: path.join(work, "queries.f32") };
      if (indexRecall) {
        fs.writeFileSync(files.rows, data);
        fs.writeFileSync(files.queries, queries);
      }
      for (const cell of cells) {
        const { width, bits, metric } = cell;
        if (!truths[metric]) {
          truths[metric] = exactTopK(data, queries, dim, k, metric);
          // The exact neighbours of each query, k uint32 ids (exactTopK's order).
          if (indexRecall) fs.writeFileSync(path.join(work, `truth-${metric}.u32`),
            Uint32Array.from(truths[metric].flatMap((t) => [...t])));
        }
        // lancet's search of one index (and the Lance 4-bit scan model): fields of rec.
        const searchedByLancet = (dir, who) => {
          if (!indexRecall) return;
          try {
            const out = JSON.parse(execFileSync(indexRecall, [dir, files.queries, path.join(work, `truth-${metric}.u32`),
              "--k", String(k), "--rows", files.rows], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
            rec[`${who}_index`] = out.recall;
            if (out.lance_4bit_kernel_recall !== undefined) rec[`${who}_kernel`] = out.lance_4bit_kernel_recall;
          } catch (err) {
            rec[`${who}_index_error`] = errorText(err);
          }
        };
        const m = dim / width;
        const seed = fixedSeed ?? cellSeed(dim, width, bits, metric, b);
        const rec = { dim, width, sub_vectors: m, bits, metric, build: b, rows, queries: nq, partitions: parts, nprobes, k,
          lancet_seed: seed };
        const ours = path.join(work, "ours"), theirs = path.join(work, "theirs");
        for (const d of [ours, theirs]) {
          fs.rmSync(d, { recursive: true, force: true });
          fs.cpSync(base, d, { recursive: true });
        }
        let ourRecalls, theirRecalls;
        try {
          const t0 = process.hrtime.bigint();
          execFileSync(lancet, ["index", "create", ours, "--column", "vector", "--type", "ivf_pq", "--partitions",
            String(parts), "--sub-vectors", String(m), "--bits", String(bits), "--metric", metric,
            "--threads", String(threads), "--seed", String(seed)], { stdio: ["ignore", "ignore", "pipe"] });
          rec.lancet_seconds = Number(process.hrtime.bigint() - t0) / 1e9;
          ourRecalls = await recallsOf(ours, queries, dim, k, nprobes, metric, truths[metric]);
          rec.lancet = mean(ourRecalls);
          searchedByLancet(ours, "lancet");
        } catch (err) {
          rec.lancet_error = errorText(err);
        }
        try {
          const { table, cleanup } = await openDataset(theirs);
          try {
            const t0 = process.hrtime.bigint();
            await table.createIndex("vector", { config: lancedb.Index.ivfPq({ numPartitions: parts, distanceType: metric,
              numSubVectors: m, numBits: bits }) });
            rec.lancedb_seconds = Number(process.hrtime.bigint() - t0) / 1e9;
          } finally {
            table.close();
            cleanup();
          }
          theirRecalls = await recallsOf(theirs, queries, dim, k, nprobes, metric, truths[metric]);
          rec.lancedb = mean(theirRecalls);
          searchedByLancet(theirs, "lancedb");
        } catch (err) {
          rec.lancedb_error = errorText(err);
        }
        if (ourRecalls && theirRecalls) {
          const d = Array.from(ourRecalls, (x, i) => x - theirRecalls[i]);
          rec.diff = mean(d);
          rec.diff_se = stdev(d) / Math.sqrt(d.length);
        }
        emit(rec);
      }
      fs.rmSync(base, { recursive: true, force: true });
    }
  }
  for (const d of ["ours", "theirs"]) fs.rmSync(path.join(work, d), { recursive: true, force: true });
  printTable(outFile);
}

// One row per cell: mean recall of each side over its builds, the mean paired
// difference and two standard errors of it: across builds (the spread of the per-build
// differences: training randomness and query sampling together; needs 2 builds) and
// from the queries alone (each build's diff_se, combined). A cell trailing by more than
// 0.005 is flagged, "beyond 2 SE" when its difference is also below -2 x the larger SE
// (with at least 2 builds).
function printTable(file) {
  const cells = new Map();
  for (const line of fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim())) {
    const o = JSON.parse(line);
    const key = `${o.dim}/${o.width}/${o.bits}/${o.metric}`;
    if (!cells.has(key)) cells.set(key, { ...o, ours: [], theirs: [], diffs: [], qse: [], idx: [], ker: [], errors: new Set() });
    const c = cells.get(key);
    if (o.lancet !== undefined && o.lancedb !== undefined) {
      c.ours.push(o.lancet);
      c.theirs.push(o.lancedb);
      c.diffs.push(o.lancet - o.lancedb);
      if (o.diff_se !== undefined) c.qse.push(o.diff_se);
    }
    if (o.lancet_index !== undefined && o.lancedb_index !== undefined) c.idx.push(o.lancet_index - o.lancedb_index);
    if (o.lancet_kernel !== undefined && o.lancedb_kernel !== undefined) c.ker.push(o.lancet_kernel - o.lancedb_kernel);
    if (o.lancet_error) c.errors.add(`lancet: ${o.lancet_error}`);
    if (o.lancedb_error) c.errors.add(`LanceDB: ${o.lancedb_error}`);
  }
  const order = [...cells.values()].sort((a, b) => a.dim - b.dim || a.width - b.width || a.bits - b.bits ||
    ["l2", "cosine", "dot"].indexOf(a.metric) - ["l2", "cosine", "dot"].indexOf(b.metric));
  const fmt = (x) => `${x >= 0 ? "+" : ""}${x.toFixed(4)}`;
  // The last two columns (with --index-recall): the mean difference when lancet's
  // searcher reads both indexes, and under the model of Lance's 4-bit scan.
  console.log("| dim | width | sub-vectors | bits | metric | builds | queries | lancet | LanceDB | lancet - LanceDB | SE (builds) | SE (queries) | |" +
    " both searched by lancet | Lance 4-bit scan model |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  let worst = Infinity, trailing = 0, beyond = 0;
  const byBits = new Map();
  for (const c of order) {
    if (c.errors.size || !c.diffs.length) {
      console.log(`| ${c.dim} | ${c.width} | ${c.sub_vectors} | ${c.bits} | ${c.metric} | 0 | ${c.queries} | - | - | - | - | - | ${[...c.errors].join("; ")} | - | - |`);
      continue;
    }
    const b = c.diffs.length, diff = mean(c.diffs);
    const seBuilds = b >= 2 ? stdev(c.diffs) / Math.sqrt(b) : NaN;
    const seQueries = c.qse.length === b ? Math.sqrt(c.qse.reduce((s, x) => s + x * x, 0)) / b : NaN;
    const se = Math.max(Number.isNaN(seBuilds) ? 0 : seBuilds, Number.isNaN(seQueries) ? 0 : seQueries);
    worst = Math.min(worst, diff);
    let flag = "";
    if (diff < -0.005) {
      trailing++;
      // One build says nothing about the training noise: no verdict.
      const out = b >= 2 && diff < -2 * se;
      beyond += out;
      flag = `**trails > 0.005**, ${b >= 2 ? (out ? "**beyond 2 SE**" : "within 2 SE") : "one build"}`;
    }
    if (!byBits.has(c.bits)) byBits.set(c.bits, []);
    byBits.get(c.bits).push(...c.diffs);
    const show = (x) => (Number.isNaN(x) ? "-" : x.toFixed(4));
    console.log(`| ${c.dim} | ${c.width} | ${c.sub_vectors} | ${c.bits} | ${c.metric} | ${b} | ${c.queries} | ${mean(c.ours).toFixed(4)} | ${mean(c.theirs).toFixed(4)} | ${fmt(diff)} | ${show(seBuilds)} | ${show(seQueries)} | ${flag} | ${c.idx.length ? `${fmt(mean(c.idx))} (${c.idx.length})` : "-"} | ${c.ker.length ? `${fmt(mean(c.ker))} (${c.ker.length})` : "-"} |`);
  }
  console.log(`\ncells: ${order.length}; lancet trails by more than 0.005 in ${trailing} (${beyond} of them beyond 2 standard errors); worst difference ${worst.toFixed(4)}`);
  for (const [bits, d] of [...byBits].sort((x, y) => x[0] - y[0]))
    console.log(`${bits} bits: ${d.length} builds, mean difference ${fmt(mean(d))}, standard error ${d.length >= 2 ? (stdev(d) / Math.sqrt(d.length)).toFixed(4) : "-"}`);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.table) printTable(args.table);
  else await sweep(args);
  return 0;
}

runMain(main);
