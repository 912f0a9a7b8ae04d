// Usage: node search_ids.mjs DATASET --column COL --query '[x, y, ...]' [--k 10] [--nprobes N]
// Has LanceDB search the vector index of COL for one query and prints
// {"ids": [...]}: the int64 column `id` of the results, in LanceDB's order, so a caller
// can check that the index returns live rows only (deleted rows never come back).
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.column || !args.query)
    fail("usage: search_ids.mjs DATASET --column COL --query '[...]' [--k K] [--nprobes N]");
  const query = JSON.parse(args.query);
  if (!Array.isArray(query) || query.some((x) => typeof x !== "number")) fail("--query must be a JSON array of numbers");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    let q = table.query().nearestTo(query).column(args.column).limit(intArg(args, "k", 10)).select(["id"]);
    if (args.nprobes !== undefined) q = q.nprobes(intArg(args, "nprobes", 1));
    const rows = await q.toArray();
    process.stdout.write(`${JSON.stringify({ ids: rows.map((r) => Number(r.id)) })}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
