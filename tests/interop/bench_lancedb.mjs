// LanceDB's side of bench/bench_scan: the same Arrow data, written and scanned by
// LanceDB in the same run as lancet.
//   node bench_lancedb.mjs SOURCE_DATASET OUT_DATASET [--version 2.2] [--reps 2]
// Reads SOURCE_DATASET (lancet's) into memory with LanceDB, then times, best of --reps:
//   write: LanceDB's native createTable from the table's Arrow IPC bytes (no JS
//          sanitising; the IPC encoding is done once, before timing)
//   scan:  a full scan of OUT_DATASET to Arrow (query().toArrow())
//   scan_ours: the same full scan of SOURCE_DATASET
// Prints one JSON line: {"rows", "write_s", "scan_s", "scan_ours_s", "ipc_bytes"}.
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { lancedb, openDataset, parseArgs, runMain, intArg, fail } from "./lib.mjs";

// LanceDB (CommonJS) hands back tables of apache-arrow's CommonJS build; the ESM build
// does not recognise them (tableToIPC gives 0 bytes), so serialise with the same build.
const arrowCjs = createRequire(import.meta.url)("apache-arrow");

async function scanSeconds(dir) {
  const { table, cleanup } = await openDataset(dir);
  try {
    const t0 = process.hrtime.bigint();
    const result = await table.query().toArrow();
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    return { s, rows: result.numRows, result };
  } finally {
    table.close();
    cleanup();
  }
}

runMain(async () => {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 2) fail("usage: bench_lancedb.mjs SOURCE_DATASET OUT_DATASET [--version 2.2] [--reps 2]");
  const [src, out] = args._;
  const version = args.version ?? "2.2";
  const reps = Math.max(1, intArg(args, "reps", 2));
  const first = await scanSeconds(src);
  let scanOurs = first.s;
  const ipc = Buffer.from(arrowCjs.tableToIPC(first.result, "file"));
  first.result = null;
  const abs = path.resolve(out);
  let write = Infinity;
  for (let r = 0; r < reps; r++) {
    fs.rmSync(abs, { recursive: true, force: true });
    const tmp = fs.mkdtempSync(path.join(path.dirname(abs), ".lancet-bench-"));
    try {
      const db = await lancedb.connect(tmp);
      const t0 = process.hrtime.bigint();
      const native = await db.inner.createTable("t", ipc, "create", [], { new_table_data_storage_version: version });
      write = Math.min(write, Number(process.hrtime.bigint() - t0) / 1e9);
      if (native && typeof native.close === "function") native.close();
      fs.renameSync(path.join(tmp, "t.lance"), abs);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  let scan = Infinity;
  for (let r = 0; r < reps; r++) scan = Math.min(scan, (await scanSeconds(out)).s);
  for (let r = 1; r < reps; r++) scanOurs = Math.min(scanOurs, (await scanSeconds(src)).s);
  process.stdout.write(JSON.stringify({ rows: first.rows, write_s: write, scan_s: scan, scan_ours_s: scanOurs, ipc_bytes: ipc.length }) + "\n");
});
