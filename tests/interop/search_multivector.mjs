// Usage: node search_multivector.mjs DATASET --queries FILE --dim D --per P [--column vector]
//        [--k 10] [--nprobes N] [--bypass] [--explain]
//
// Multivector search with LanceDB: FILE holds raw little-endian float32 vectors of
// dimension D; every P consecutive vectors form one multivector query
// (table.vectorSearch([v1, ..., vP])). Prints one JSON line per query:
// {"query": i, "rowids": ["..."], "distances": [...]}; --explain first prints
// {"plan": "..."} for the first query.
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";
import { readVectors } from "./create_index.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2), ["bypass", "explain"]);
  if (args._.length !== 1 || !args.queries) fail("usage: search_multivector.mjs DATASET --queries FILE --dim D --per P");
  const dim = intArg(args, "dim", 0);
  const per = intArg(args, "per", 0);
  if (dim <= 0 || per <= 0) fail("--dim and --per are required");
  const flat = readVectors(args.queries, dim);
  const k = intArg(args, "k", 10);
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const build = (i) => {
      const mv = [];
      for (let j = 0; j < per; j++) mv.push(Array.from(flat.subarray((i * per + j) * dim, (i * per + j + 1) * dim)));
      let query = table.vectorSearch(mv).column(args.column ?? "vector").limit(k).withRowId();
      if (args.nprobes !== undefined) query = query.nprobes(intArg(args, "nprobes", 1));
      if (args.bypass) query = query.bypassVectorIndex();
      return query;
    };
    const n = Math.floor(flat.length / dim / per);
    if (args.explain && n > 0) {
      const plan = await build(0).explainPlan(true);
      process.stdout.write(`${JSON.stringify({ plan })}\n`);
    }
    for (let i = 0; i < n; i++) {
      const rows = await build(i).toArray();
      process.stdout.write(
        `${JSON.stringify({ query: i, rowids: rows.map((r) => BigInt(r._rowid).toString()), distances: rows.map((r) => r._distance) })}\n`,
      );
    }
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
