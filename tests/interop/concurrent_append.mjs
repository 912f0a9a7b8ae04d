// Usage: node concurrent_append.mjs DATASET --appends N --rows R --first-id K
// Has LanceDB (table.add) append N batches of R rows, one version each, to a dataset
// other writers (lancet processes, other LanceDB processes) append to at the same time:
// ids K, K+1, ... in order (int64 column `id`; every other column null / default).
// Lance rebases each add on what was committed meanwhile. Prints
// {"appends": N, "failed": F, "version": V} and exits 1 when an append failed.
import * as arrow from "apache-arrow";
import { fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: concurrent_append.mjs DATASET --appends N --rows R --first-id K");
  const appends = intArg(args, "appends", 1);
  const rows = intArg(args, "rows", 1);
  let next = BigInt(args["first-id"] ?? "0");
  const { table, cleanup } = await openDataset(args._[0]);
  let failed = 0;
  try {
    for (let i = 0; i < appends; ++i) {
      const ids = [];
      for (let r = 0; r < rows; ++r) ids.push(next++);
      const data = arrow.tableFromArrays({ id: BigInt64Array.from(ids) });
      try {
        await table.add(data, { mode: "append" });
      } catch (err) {
        ++failed;
        process.stderr.write(`append ${i} failed: ${err.message}\n`);
      }
    }
    process.stdout.write(`${JSON.stringify({ appends, failed, version: await table.version() })}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return failed ? 1 : 0;
}

runMain(main);
