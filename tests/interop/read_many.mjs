// Usage: node read_many.mjs OUT_DIR DATASET...
// Reads many datasets in one process (LanceDB's startup dominates a single read):
// for each DATASET, OUT_DIR/<basename>.jsonl gets its rows as canonical JSON Lines
// (README.md) and a last line {"countRows": N}; a dataset LanceDB cannot read gets
// OUT_DIR/<basename>.error with the message instead. Prints {"read": n, "errors": m}.
import * as fs from "node:fs";
import * as path from "node:path";
import { fail, openDataset, parseArgs, runMain } from "./lib.mjs";
import { writeRowsFile } from "./dataset_lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length < 1) fail("usage: read_many.mjs OUT_DIR DATASET...");
  const [out, ...datasets] = args._;
  fs.mkdirSync(out, { recursive: true });
  let read = 0;
  let errors = 0;
  for (const ds of datasets) {
    const name = path.basename(ds);
    try {
      const { table, cleanup } = await openDataset(ds);
      try {
        const result = await table.query().toArrow();
        writeRowsFile(path.join(out, `${name}.jsonl`), result, { countRows: await table.countRows() });
        read++;
      } finally {
        table.close();
        cleanup();
      }
    } catch (err) {
      fs.writeFileSync(path.join(out, `${name}.error`), String(err?.message ?? err));
      errors++;
    }
  }
  process.stdout.write(`${JSON.stringify({ read, errors })}\n`);
  return 0;
}

runMain(main);
