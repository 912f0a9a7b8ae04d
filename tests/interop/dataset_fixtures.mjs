// Usage: node dataset_fixtures.mjs OUT_DIR
// Has LanceDB (Lance 12) write the small datasets that tests/test_dataset.cpp reads
// from tests/fixtures/datasets/ (regenerate them with this script; file names are
// random, the rows are not):
//   deletions_2.0   id: int32 (not null). Fragment 0: ids 0..99, fragment 1: 100..8099,
//                   fragment 2: 8100..11099. Deleted: ids 3, 13, ..., 93 (an Arrow
//                   deletion file of 10 rows), 100..6099 (6,000 rows: a bitmap file),
//                   even ids in 8100..10999 (1,450 rows: a ZSTD-compressed Arrow file).
//   stable_ids_2.0  id: int32, stable row ids. Ids 0..9 then 10..19 (append), ids 3
//                   and 15 deleted, then the row with id 7 updated to id 107.
// Prints {"datasets": [{name, version, countRows}]}.
import * as fs from "node:fs";
import * as path from "node:path";
import { arrow, buildTable, createDataset, fail, openDataset, parseArgs, runMain } from "./lib.mjs";

const ids = (from, to) => buildTable([{ name: "id", type: new arrow.Int32(), nullable: false,
  values: Array.from({ length: to - from }, (_, i) => from + i) }]);

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: dataset_fixtures.mjs OUT_DIR");
  const out = args._[0];
  fs.mkdirSync(out, { recursive: true });
  const report = [];

  const del = path.join(out, "deletions_2.0");
  await createDataset(del, ids(0, 100), "2.0");
  {
    const { table, cleanup } = await openDataset(del);
    try {
      await table.add(ids(100, 8100));
      await table.add(ids(8100, 11100));
      await table.delete("id < 100 AND id % 10 = 3");
      await table.delete("id >= 100 AND id < 6100");
      await table.delete("id >= 8100 AND id < 11000 AND id % 2 = 0");
      report.push({ name: "deletions_2.0", version: await table.version(), countRows: await table.countRows() });
    } finally {
      table.close();
      cleanup();
    }
  }

  const st = path.join(out, "stable_ids_2.0");
  await createDataset(st, ids(0, 10), "2.0", { new_table_enable_stable_row_ids: "true" });
  {
    const { table, cleanup } = await openDataset(st);
    try {
      await table.add(ids(10, 20));
      await table.delete("id = 3 OR id = 15");
      await table.update({ where: "id = 7", values: { id: "107" } });
      report.push({ name: "stable_ids_2.0", version: await table.version(), countRows: await table.countRows() });
    } finally {
      table.close();
      cleanup();
    }
  }
  process.stdout.write(`${JSON.stringify({ datasets: report })}\n`);
  return 0;
}

runMain(main);
