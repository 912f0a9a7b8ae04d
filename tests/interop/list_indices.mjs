// Usage: node list_indices.mjs DATASET [--version V]
// LanceDB's view of a dataset's indices: {"version", "countRows", "indices": [{name,
// indexType, columns, indexUuid, stats}]} (stats = indexStats(name)).
import { fail, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: list_indices.mjs DATASET [--version V]");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.version !== undefined) await table.checkout(Number(args.version));
    const indices = [];
    for (const i of await table.listIndices()) {
      const stats = await table.indexStats(i.name);
      indices.push({ name: i.name, indexType: i.indexType, columns: i.columns, indexUuid: i.indexUuid, stats });
    }
    const out = { version: await table.version(), countRows: await table.countRows(), indices };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
