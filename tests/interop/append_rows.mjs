// Usage: node append_rows.mjs DATASET --rows N [--seed S] [--first-id K] [--no-struct-nulls]
//                             [--rows-out FILE]
// Has LanceDB append N random rows to DATASET, matching its schema (as LanceDB reads
// it). A column named `id` (int64) gets K, K+1, ... (default 0) so that rows can be
// told apart; every other value is random, nulls included where the field is
// nullable (null structs only without --no-struct-nulls: Lance 2.0 refuses them).
// The appended rows go to FILE (canonical JSON Lines, README.md) with --rows-out.
// Prints {"version": V, "countRows": N} after the append.
import { fail, intArg, makeRng, openDataset, parseArgs, runMain } from "./lib.mjs";
import { appendTable, buildTable, localSchema, randomColumns, writeRowsFile } from "./dataset_lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2), ["no-struct-nulls"]);
  if (args._.length !== 1 || args.rows === undefined)
    fail("usage: append_rows.mjs DATASET --rows N [--seed S] [--first-id K] [--no-struct-nulls] [--rows-out FILE]");
  const rows = intArg(args, "rows", 0);
  const r = makeRng(intArg(args, "seed", 1));
  const firstId = BigInt(args["first-id"] ?? "0");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const schema = localSchema(await table.schema());
    const cols = randomColumns(schema.fields, rows, r, {
      structNulls: !args["no-struct-nulls"],
      ids: (i) => firstId + BigInt(i),
    });
    const data = buildTable(cols, schema.metadata);
    await appendTable(table, data);
    if (args["rows-out"]) writeRowsFile(args["rows-out"], data);
    process.stdout.write(`${JSON.stringify({ version: await table.version(), countRows: await table.countRows() })}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
