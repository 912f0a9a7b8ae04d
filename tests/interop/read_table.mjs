// Usage: node read_table.mjs DATASET [--columns a,b] [--version V] [--schema]
// Opens a Lance dataset directory with LanceDB and prints, as JSON Lines:
//   {"schema": {...}}            first, only with --schema
//   one object per row           columns in schema order, canonical values (README.md)
//   {"countRows": N}             last, LanceDB's countRows() of that version
import { fail, openDataset, parseArgs, runMain, schemaJson, writeRows } from "./lib.mjs";

// A closed pipe (e.g. `| head`) is not an error.
process.stdout.on("error", (err) => process.exit(err.code === "EPIPE" ? 0 : 1));

async function main() {
  const args = parseArgs(process.argv.slice(2), ["schema"]);
  if (args._.length !== 1) fail("usage: read_table.mjs DATASET [--columns a,b] [--version V] [--schema]");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.version !== undefined) {
      const v = Number(args.version);
      if (!Number.isInteger(v) || v < 1) fail(`--version must be a positive integer, got '${args.version}'`);
      await table.checkout(v);
    }
    let query = table.query();
    if (args.columns !== undefined) {
      const cols = args.columns.split(",").filter((c) => c.length);
      if (!cols.length) fail("--columns needs at least one column name");
      query = query.select(cols);
    }
    const result = await query.toArrow();
    const out = [];
    const write = (s) => out.push(s);
    if (args.schema) write(`${JSON.stringify({ schema: schemaJson(result.schema) })}\n`);
    writeRows(result, write);
    write(`${JSON.stringify({ countRows: await table.countRows() })}\n`);
    // One write per ~1 MB keeps large tables fast and stdout ordered.
    let chunk = "";
    for (const s of out) {
      chunk += s;
      if (chunk.length > 1 << 20) { process.stdout.write(chunk); chunk = ""; }
    }
    await new Promise((resolve) => process.stdout.write(chunk, resolve));
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
