// Usage: node object_store_read_many.mjs DB_URI OPTIONS_JSON OUT_DIR TABLE...
// read_many.mjs for tables in a database on an object store (DB_URI such as
// s3://bucket/db; OPTIONS_JSON: LanceDB's storage options): for each TABLE,
// OUT_DIR/<TABLE>.jsonl gets its rows as canonical JSON Lines (README.md) and a last
// line {"countRows": N}, or OUT_DIR/<TABLE>.error the message LanceDB gave. Prints
// {"read": n, "errors": m}.
import * as fs from "node:fs";
import * as path from "node:path";
import { fail, lancedb, runMain } from "./lib.mjs";
import { writeRowsFile } from "./dataset_lib.mjs";

async function main() {
  const [uri, optionsJson, out, ...tables] = process.argv.slice(2);
  if (!uri || !optionsJson || !out) fail("usage: object_store_read_many.mjs DB_URI OPTIONS_JSON OUT_DIR TABLE...");
  fs.mkdirSync(out, { recursive: true });
  const db = await lancedb.connect(uri, { storageOptions: JSON.parse(optionsJson) });
  let read = 0, errors = 0;
  for (const name of tables) {
    try {
      const table = await db.openTable(name);
      try {
        writeRowsFile(path.join(out, `${name}.jsonl`), await table.query().toArrow(), { countRows: await table.countRows() });
        read++;
      } finally {
        table.close();
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
