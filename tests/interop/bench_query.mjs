// LanceDB's side of bench/bench_query.cpp: vector searches and a filtered scan on a
// dataset lancet wrote and indexed, timed as an application would run them.
//
//   node bench_query.mjs DATASET --queries FILE --dim D --cases JSON [--warmup 1] [--scan-reps 3]
//
// The table is opened once; the cases run in order on it. JSON is an array of
//   {"name", "kind": "knn", "k", "nprobes", "select": [...], "where"?}
//     every query of FILE (raw little-endian float32, rows x D) once per warm-up pass,
//     then once more timed: `table.query().nearestTo(q).nprobes(n).select(cols)
//     [.where(f)].limit(k).toArrow()`, awaited one at a time (LanceDB's prefilter is
//     its default).
//   {"name", "kind": "scan", "select": [...], "where"}
//     `table.query().where(f).select(cols).toArrow()`, the whole answer materialised:
//     one warm-up, then the best of --scan-reps.
// Prints one JSON line per case: knn {"name", "queries", "seconds", "qps", "p50_us",
// "p99_us", "cpu_us" (process CPU per query: every LanceDB thread), "ids": [[...]]
// (the `id` column of each answer)}; scan {"name", "rows", "id_sum", "seconds",
// "cpu_s"}.
import * as fs from "node:fs";
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";

function readF32(file, dim) {
  const buf = fs.readFileSync(file);
  if (dim <= 0 || buf.length % (4 * dim) !== 0) fail(`${file}: ${buf.length} bytes is not a whole number of ${dim}-float rows`);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

function idsOf(result) {
  const col = result.getChild("id");
  if (!col) throw new Error("the answer has no `id` column");
  return Array.from(col.toArray(), (v) => Number(v));
}

async function knn(table, c, queries, dim, warmup) {
  const n = queries.length / dim;
  const run = (i) => {
    // `_distance` selected explicitly: what LanceDB returns anyway (and lancet), without
    // its deprecation warning for every query.
    let q = table.query().nearestTo(queries.subarray(i * dim, (i + 1) * dim)).nprobes(c.nprobes)
      .select([...c.select, "_distance"]);
    if (c.where) q = q.where(c.where);
    return q.limit(c.k).toArrow();
  };
  for (let w = 0; w < warmup; w++) for (let i = 0; i < n; i++) await run(i);
  const each = new Array(n);
  const ids = new Array(n);
  const c0 = cpuMicros();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const tq = process.hrtime.bigint();
    const r = await run(i);
    each[i] = Number(process.hrtime.bigint() - tq) / 1e3;
    ids[i] = r;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuMicros() - c0;
  const sorted = [...each].sort((a, b) => a - b);
  return {
    name: c.name, queries: n, seconds, qps: n / seconds,
    p50_us: sorted[Math.floor(n / 2)], p99_us: sorted[Math.min(n - 1, Math.floor((n * 99) / 100))],
    cpu_us: cpu / n, ids: ids.map(idsOf),
  };
}

async function scan(table, c, reps) {
  const run = () => table.query().where(c.where).select(c.select).toArrow();
  await run();
  let best = Infinity, cpu = 0, rows = 0, idSum = 0;
  for (let r = 0; r < reps; r++) {
    const c0 = cpuMicros();
    const t0 = process.hrtime.bigint();
    const result = await run();
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (s < best) {
      best = s;
      cpu = (cpuMicros() - c0) / 1e6;
    }
    rows = result.numRows;
    idSum = 0;
    for (const v of result.getChild("id").toArray()) idSum += Number(v);
  }
  return { name: c.name, rows, id_sum: idSum, seconds: best, cpu_s: cpu };
}

runMain(async () => {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.cases) fail("usage: bench_query.mjs DATASET --queries FILE --dim D --cases JSON [--warmup 1] [--scan-reps 3]");
  const cases = JSON.parse(args.cases);
  const dim = intArg(args, "dim", 0);
  const warmup = intArg(args, "warmup", 1);
  const scanReps = Math.max(1, intArg(args, "scan-reps", 3));
  const needsQueries = cases.some((c) => c.kind === "knn");
  if (needsQueries && !args.queries) fail("knn cases need --queries FILE");
  const queries = needsQueries ? readF32(args.queries, dim) : null;
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    for (const c of cases) {
      let out;
      if (c.kind === "knn") out = await knn(table, c, queries, dim, warmup);
      else if (c.kind === "scan") out = await scan(table, c, scanReps);
      else fail(`unknown case kind '${c.kind}'`);
      process.stdout.write(`${JSON.stringify(out)}\n`);
    }
  } finally {
    table.close();
    cleanup();
  }
});
