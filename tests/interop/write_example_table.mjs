// Usage: node write_example_table.mjs OUT_DIR [--version 2.0|2.1|2.2]
// Has LanceDB (Lance 12) write the table the examples use (examples/user_source.cpp
// reads it): 1000 rows, `id` int64 = i, `name` utf8 = "name-" + i, null when
// i % 7 == 3. OUT_DIR is created (or replaced). Prints {"dataset", "version", "rows"}.
import { arrow, buildTable, createDataset, fail, parseArgs, runMain } from "./lib.mjs";

function exampleTable() {
  const ids = Array.from({ length: 1000 }, (_, i) => BigInt(i));
  const names = Array.from({ length: 1000 }, (_, i) => (i % 7 === 3 ? null : `name-${i}`));
  return buildTable([
    { name: "id", type: new arrow.Int64(), nullable: false, values: ids },
    { name: "name", type: new arrow.Utf8(), nullable: true, values: names },
  ]);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: write_example_table.mjs OUT_DIR [--version 2.0|2.1|2.2]");
  const version = args.version ?? "2.1";
  const rows = await createDataset(args._[0], exampleTable(), version);
  process.stdout.write(`${JSON.stringify({ dataset: args._[0], version, rows })}\n`);
  return rows === 1000 ? 0 : 1;
}

runMain(main);
