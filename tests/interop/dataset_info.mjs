// Usage: node dataset_info.mjs DATASET [--version V]
// What LanceDB says about a dataset: {"version", "countRows", "versions": [numbers],
// "schema": {...} (lib.mjs schemaJson), "indices": [names]}.
import { fail, openDataset, parseArgs, runMain, schemaJson } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: dataset_info.mjs DATASET [--version V]");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.version !== undefined) await table.checkout(Number(args.version));
    const versions = (await table.listVersions()).map((v) => v.version);
    const indices = (await table.listIndices()).map((i) => i.name);
    const out = {
      version: await table.version(),
      countRows: await table.countRows(),
      versions,
      schema: schemaJson(await table.schema()),
      indices,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
