// LanceDB's side of bench/bench_merge_insert.cpp: an upsert of a source table into a
// dataset, timed as an application would run it.
//
//   node bench_merge_insert.mjs DATASET SOURCE_DATASET --on id
//
// The source (a Lance dataset lancet wrote) is read into one Arrow table first, untimed;
// then `table.mergeInsert(on).whenMatchedUpdateAll().whenNotMatchedInsertAll()
// .execute(source)` is timed (wall and process CPU: every LanceDB thread). Prints one
// JSON line {"seconds", "cpu_s", "inserted", "updated", "deleted", "countRows", "version"}.
import { fail, openDataset, parseArgs, runMain } from "./lib.mjs";

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 2 || !args.on) fail("usage: bench_merge_insert.mjs DATASET SOURCE_DATASET --on id");
  const src = await openDataset(args._[1]);
  const source = await src.table.query().toArrow();
  src.table.close();
  src.cleanup();
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    const c0 = cpuSeconds();
    const t0 = process.hrtime.bigint();
    const r = await table.mergeInsert(args.on).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(source);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const out = { seconds, cpu_s: cpuSeconds() - c0, inserted: r.numInsertedRows, updated: r.numUpdatedRows,
                  deleted: r.numDeletedRows, countRows: await table.countRows(), version: await table.version() };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
