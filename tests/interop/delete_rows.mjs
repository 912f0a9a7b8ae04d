// Usage: node delete_rows.mjs DATASET --where PREDICATE
// Has LanceDB delete the rows matching an SQL predicate (Lance writes an Arrow
// deletion file for fewer than 5,000 rows of a fragment, a roaring bitmap otherwise).
// Prints {"version": V, "countRows": N} after the delete.
import { fail, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.where) fail("usage: delete_rows.mjs DATASET --where PREDICATE");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    await table.delete(args.where);
    process.stdout.write(`${JSON.stringify({ version: await table.version(), countRows: await table.countRows() })}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
