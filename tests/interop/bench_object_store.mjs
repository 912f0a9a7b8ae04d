// LanceDB's side of bench/bench_object_store: the same Arrow data written to and
// scanned from an object store by LanceDB, in the same run as lancet.
//   node bench_object_store.mjs SOURCE_DATASET DB_URI OPTIONS_JSON OURS [--version 2.2] [--reps 1]
// Reads SOURCE_DATASET (lancet's, local) into memory, then times, best of --reps:
//   write:     LanceDB's native createTable of the table's Arrow IPC bytes as table
//              "lancedb" in the database DB_URI (storage options OPTIONS_JSON);
//   scan:      a full scan of that table to Arrow (query().toArrow());
//   scan_ours: the same scan of table OURS there (what lancet wrote).
// Prints one JSON line: {"rows", "write_s", "scan_s", "scan_ours_s", "ipc_bytes"}.
import { createRequire } from "node:module";
import { lancedb, openDataset, parseArgs, runMain, intArg, fail } from "./lib.mjs";

// LanceDB (CommonJS) hands back tables of apache-arrow's CommonJS build; serialise with it.
const arrowCjs = createRequire(import.meta.url)("apache-arrow");

async function scanSeconds(db, name) {
  const table = await db.openTable(name);
  try {
    const t0 = process.hrtime.bigint();
    const result = await table.query().toArrow();
    return { s: Number(process.hrtime.bigint() - t0) / 1e9, rows: result.numRows };
  } finally {
    table.close();
  }
}

runMain(async () => {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 4) fail("usage: bench_object_store.mjs SOURCE_DATASET DB_URI OPTIONS_JSON OURS [--version 2.2] [--reps 1]");
  const [src, uri, optionsJson, ours] = args._;
  const version = args.version ?? "2.2";
  const reps = Math.max(1, intArg(args, "reps", 1));
  let ipc;
  {
    const { table, cleanup } = await openDataset(src);
    try {
      ipc = Buffer.from(arrowCjs.tableToIPC(await table.query().toArrow(), "file"));
    } finally {
      table.close();
      cleanup();
    }
  }
  const db = await lancedb.connect(uri, { storageOptions: JSON.parse(optionsJson) });
  let write = Infinity;
  for (let r = 0; r < reps; r++) {
    const mode = r === 0 ? "create" : "overwrite";
    const t0 = process.hrtime.bigint();
    const native = await db.inner.createTable("lancedb", ipc, mode, [], { new_table_data_storage_version: version });
    write = Math.min(write, Number(process.hrtime.bigint() - t0) / 1e9);
    if (native && typeof native.close === "function") native.close();
  }
  let scan = Infinity, scanOurs = Infinity, rows = 0;
  for (let r = 0; r < reps; r++) {
    const a = await scanSeconds(db, "lancedb");
    scan = Math.min(scan, a.s);
    rows = a.rows;
    scanOurs = Math.min(scanOurs, (await scanSeconds(db, ours)).s);
  }
  process.stdout.write(JSON.stringify({ rows, write_s: write, scan_s: scan, scan_ours_s: scanOurs, ipc_bytes: ipc.length }) + "\n");
});
