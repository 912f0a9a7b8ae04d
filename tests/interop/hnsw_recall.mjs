// Usage: node hnsw_recall.mjs DATASET --queries FILE --dim D [--column vector] [--k 10]
//        [--nprobes 16] [--ef 100]
//
// LanceDB's recall@k of its index search (nprobes, ef) against its exact search
// (bypassVectorIndex) over the queries in FILE (raw little-endian float32, rows x D).
// Prints {"recall", "queries", "k"}.
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";
import { readVectors } from "./create_index.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.queries) fail("usage: hnsw_recall.mjs DATASET --queries FILE --dim D [options]");
  const dim = intArg(args, "dim", 0);
  if (dim <= 0) fail("--dim is required");
  const queries = readVectors(args.queries, dim);
  const k = intArg(args, "k", 10);
  const nprobes = intArg(args, "nprobes", 16);
  const ef = intArg(args, "ef", 100);
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const n = queries.length / dim;
    let hit = 0;
    let all = 0;
    for (let i = 0; i < n; i++) {
      const q = Array.from(queries.subarray(i * dim, (i + 1) * dim));
      const base = () => table.query().nearestTo(q).column(args.column ?? "vector").limit(k).withRowId();
      const exact = await base().bypassVectorIndex().toArray();
      const ann = await base().nprobes(nprobes).ef(ef).toArray();
      const want = new Set(exact.map((r) => BigInt(r._rowid)));
      all += want.size;
      for (const r of ann) if (want.has(BigInt(r._rowid))) hit++;
    }
    process.stdout.write(`${JSON.stringify({ recall: all ? hit / all : 0, queries: n, k })}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
