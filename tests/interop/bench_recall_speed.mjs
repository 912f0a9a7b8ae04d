// LanceDB's side of bench/bench_recall_speed.cpp: one table, a list of search settings,
// the answers and timings of every query at each setting, in one process (so the index
// cache stays warm from point to point, as a serving process's would).
//
//   node bench_recall_speed.mjs DATASET --queries FILE --dim D --points JSON [--k 10]
//
// FILE: raw little-endian float32 queries, one after another. JSON: an array of
// {"nprobes", "ef", "refine"} (any may be missing: LanceDB's default). Every query runs
// once at the last point first, untimed (the partitions it reads load into the cache).
// Then for each point, one line {"point", "qps", "p50_us", "p99_us", "ids": [[...], ...]}:
// one vectorSearch per query, one at a time, returning `id` (the queries only are timed).
import * as fs from "node:fs";
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";

function readF32(file, dim) {
  const buf = fs.readFileSync(file);
  if (dim <= 0 || buf.length % (4 * dim) !== 0) fail(`${file}: ${buf.length} bytes is not a whole number of ${dim}-float rows`);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: bench_recall_speed.mjs DATASET --queries FILE --dim D --points JSON [--k 10]");
  const dim = intArg(args, "dim", 0);
  if (!args.queries || !args.points) fail("--queries and --points are required");
  const queries = readF32(args.queries, dim);
  const points = JSON.parse(args.points);
  if (!Array.isArray(points) || points.length === 0) fail("--points must be a non-empty JSON array");
  const k = intArg(args, "k", 10);
  const n = queries.length / dim;
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const search = async (q, p) => {
      let query = table.vectorSearch(Array.from(q)).column("vector").select(["id", "_distance"]).limit(k);
      if (p.nprobes !== undefined) query = query.nprobes(p.nprobes);
      if (p.ef !== undefined) query = query.ef(p.ef);
      if (p.refine !== undefined && p.refine > 0) query = query.refineFactor(p.refine);
      return query.toArray();
    };
    const query = (i) => queries.subarray(i * dim, (i + 1) * dim);
    for (let i = 0; i < n; i++) await search(query(i), points[points.length - 1]);
    for (let pi = 0; pi < points.length; pi++) {
      const ids = [];
      const each = [];
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        const tq = process.hrtime.bigint();
        const rows = await search(query(i), points[pi]);
        each.push(Number(process.hrtime.bigint() - tq) / 1e3);
        ids.push(rows.map((r) => Number(r.id)));
      }
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      each.sort((a, b) => a - b);
      process.stdout.write(`${JSON.stringify({ point: pi, qps: n / seconds, p50_us: percentile(each, 50),
        p99_us: percentile(each, 99), ids })}\n`);
    }
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
