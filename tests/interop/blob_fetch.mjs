// Usage: node blob_fetch.mjs DATASET COLUMN
// Reads every row's blob v2 bytes of COLUMN with LanceDB (query().withRowId(), then
// table.fetchBlobs) and prints one JSON line per row, in the order of an `id` column:
// {"id": "<id>", "size": N, "fnv": <FNV-1a 32 of the bytes>} or {"id": ..., "blob": null}.
import { fail, openDataset, parseArgs, runMain } from "./lib.mjs";

function fnv1a(buf) {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) h = Math.imul(h ^ buf[i], 0x01000193) >>> 0;
  return h;
}

runMain(async () => {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 2) fail("usage: blob_fetch.mjs DATASET COLUMN");
  const [dir, column] = args._;
  const { table, cleanup } = await openDataset(dir);
  try {
    const res = await table.query().select(["id"]).withRowId().toArrow();
    const ids = res.getChild("id").toArray();
    const rowIds = Array.from(res.getChild("_rowid").toArray());
    const blobs = await table.fetchBlobs(column, rowIds);
    const rows = ids.length ? Array.from(ids, (id, i) => ({ id: String(id), b: blobs[i] })) : [];
    rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    let out = "";
    for (const { id, b } of rows)
      out += `${JSON.stringify(b === null || b === undefined ? { id, blob: null } : { id, size: b.length, fnv: fnv1a(b) })}\n`;
    await new Promise((resolve) => process.stdout.write(out, resolve));
  } finally {
    table.close();
    cleanup();
  }
  return 0;
});
