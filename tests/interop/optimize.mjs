// Usage: node optimize.mjs DATASET
//
// LanceDB's own optimize() on a dataset (compaction, cleanup of old versions with
// the default 7-day cutoff, and index optimisation with Lance's defaults: the Node
// API takes no index options). Prints {"stats", "version", "countRows", "indices":
// [{name, stats}]} afterwards.
import { fail, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: optimize.mjs DATASET");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const stats = await table.optimize();
    const indices = [];
    for (const i of await table.listIndices()) indices.push({ name: i.name, stats: await table.indexStats(i.name) });
    const out = { stats, version: await table.version(), countRows: await table.countRows(), indices };
    process.stdout.write(`${JSON.stringify(out, (k, v) => (typeof v === "bigint" ? v.toString() : v))}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
