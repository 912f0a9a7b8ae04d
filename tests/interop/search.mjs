// Usage: node search.mjs DATASET --queries FILE --dim D [--column vector] [--k 10]
//        [--nprobes N] [--refine R] [--metric l2|cosine|dot] [--bypass] [--explain]
//
// Vector search with LanceDB for each query (FILE: raw little-endian float32, rows x
// D). Prints one JSON line per query: {"query": i, "rowids": ["..."], "distances": [...]}
// (row ids as decimal strings), in LanceDB's result order. --bypass searches without
// the index (exact); --explain first prints {"plan": "..."} (explainPlan(true) of the
// first query).
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";
import { readVectors } from "./create_index.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2), ["bypass", "explain"]);
  if (args._.length !== 1 || !args.queries) fail("usage: search.mjs DATASET --queries FILE --dim D [options]");
  const dim = intArg(args, "dim", 0);
  if (dim <= 0) fail("--dim is required");
  const queries = readVectors(args.queries, dim);
  const k = intArg(args, "k", 10);
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const build = (q) => {
      let query = table.query().nearestTo(Array.from(q)).column(args.column ?? "vector").limit(k).withRowId();
      if (args.nprobes !== undefined) query = query.nprobes(intArg(args, "nprobes", 1));
      if (args.refine !== undefined) query = query.refineFactor(intArg(args, "refine", 1));
      if (args.metric) query = query.distanceType(args.metric);
      if (args.bypass) query = query.bypassVectorIndex();
      return query;
    };
    const n = queries.length / dim;
    if (args.explain && n > 0) {
      const plan = await build(queries.subarray(0, dim)).explainPlan(true);
      process.stdout.write(`${JSON.stringify({ plan })}\n`);
    }
    for (let i = 0; i < n; i++) {
      const rows = await build(queries.subarray(i * dim, (i + 1) * dim)).toArray();
      const out = {
        query: i,
        rowids: rows.map((r) => BigInt(r._rowid).toString()),
        distances: rows.map((r) => r._distance),
      };
      process.stdout.write(`${JSON.stringify(out)}\n`);
    }
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
