// Usage: node filter.mjs DATASET --where PREDICATE [--columns a,b] [--version V] [--with-row-id]
// LanceDB's answer to a filtered query: the matching rows as canonical JSON Lines
// (README.md), then {"countRows": N} with countRows(PREDICATE). --with-row-id adds
// LanceDB's `_rowid` column (row addresses, or stable row ids where enabled).
// PREDICATE "true" selects every row.
import { fail, openDataset, parseArgs, runMain, writeRows } from "./lib.mjs";

process.stdout.on("error", (err) => process.exit(err.code === "EPIPE" ? 0 : 1));

async function main() {
  const args = parseArgs(process.argv.slice(2), ["with-row-id"]);
  if (args._.length !== 1 || !args.where) fail("usage: filter.mjs DATASET --where PREDICATE [--columns a,b] [--version V]");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.version !== undefined) await table.checkout(Number(args.version));
    let query = table.query().where(args.where);
    if (args.columns !== undefined) query = query.select(args.columns.split(",").filter((c) => c.length));
    if (args["with-row-id"]) query = query.withRowId();
    const result = await query.toArrow();
    const out = [];
    writeRows(result, (s) => out.push(s));
    out.push(`${JSON.stringify({ countRows: await table.countRows(args.where) })}\n`);
    await new Promise((resolve) => process.stdout.write(out.join(""), resolve));
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
