// Usage: node dataset_ids.mjs DATASET [--version V]
// Has LanceDB read the int64 column `id` of a dataset (the latest version, or V) and
// prints {"version": V, "countRows": N, "distinct": D, "duplicates": [...first 10],
// "sum": "S"} (sum as a decimal string) so that a caller can check every row is
// present exactly once.
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: dataset_ids.mjs DATASET [--version V]");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.version !== undefined) await table.checkout(intArg(args, "version", 1));
    const rows = await table.query().select(["id"]).toArray();
    const seen = new Set();
    const dups = [];
    let sum = 0n;
    for (const r of rows) {
      const id = BigInt(r.id);
      if (seen.has(id)) { if (dups.length < 10) dups.push(id.toString()); }
      else seen.add(id);
      sum += id;
    }
    const out = { version: await table.version(), countRows: await table.countRows(), rows: rows.length,
                  distinct: seen.size, duplicates: dups, sum: sum.toString() };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
