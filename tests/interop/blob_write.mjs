// Usage: node blob_write.mjs OUT_DIR VERSION [--sizes JSON] [--fragments K]
// Has LanceDB write a dataset with a blob column, in K fragments (the first by
// create, the others by appends):
//   - VERSION 2.1: legacy blobs: `blob` is large_binary with field metadata
//     lance-encoding:blob = "true" (Lance 12 refuses these from 2.2 on);
//   - VERSION 2.2: blob v2: `blob` is struct<data: large_binary, uri: utf8> with the
//     Arrow extension name "lance.blob.v2".
// Row g (over the whole dataset) has id g and the value sizes[g % sizes.length] bytes
// long (null for null), byte k being (k * 7 + g) & 255. The default sizes cover empty,
// null, inline (<= 64 KiB), packed (64 KiB + 1 .. ~4 MiB) and dedicated (5 MB) values.
// Prints one JSON line: {"rows": [size or null, ...], "scan": [...]} where scan is what
// LanceDB's own query returns for the blob column per row (the description struct, its
// numbers as strings, or null), in id order.
import { arrow, fail, intArg, openDataset, parseArgs, runMain } from "./lib.mjs";
import { appendTable, buildTable } from "./dataset_lib.mjs";
import { buildData, createDataset } from "./lib.mjs";

const DEFAULT_SIZES = [0, null, 10, 1000, 65536, 65537, 70000, 3 << 20, 5000000, null, 5];

function value(size, g) {
  if (size === null) return null;
  const a = new Uint8Array(size);
  for (let k = 0; k < size; k++) a[k] = (k * 7 + g) & 255;
  return a;
}

function blobTable(version, first, sizes) {
  const n = sizes.length;
  const vals = sizes.map((s, i) => value(s, first + i));
  const id = { name: "id", type: new arrow.Int64(), values: sizes.map((_, i) => BigInt(first + i)), nullable: false };
  if (version === "2.1") {
    return buildTable([id, { name: "blob", type: new arrow.LargeBinary(), metadata: new Map([["lance-encoding:blob", "true"]]), values: vals }]);
  }
  const st = new arrow.Struct([new arrow.Field("data", new arrow.LargeBinary(), true), new arrow.Field("uri", new arrow.Utf8(), true)]);
  const validity = new Uint8Array(Math.ceil(n / 8));
  vals.forEach((v, i) => { if (v !== null) validity[i >> 3] |= 1 << (i & 7); });
  const data = arrow.makeData({
    type: st, length: n, nullCount: vals.filter((v) => v === null).length, nullBitmap: validity,
    children: [buildData(new arrow.LargeBinary(), vals), buildData(new arrow.Utf8(), vals.map(() => null))],
  });
  return buildTable([id, { name: "blob", type: st, metadata: new Map([["ARROW:extension:name", "lance.blob.v2"]]), values: vals, data }]);
}

function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return v.toString();
  if (typeof v !== "object") return v;
  if (v instanceof Uint8Array) return { bytes: v.length };
  const o = {};
  for (const [k, x] of Object.entries(v.toJSON ? v.toJSON() : v)) o[k] = plain(x);
  return o;
}

runMain(async () => {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 2) fail("usage: blob_write.mjs OUT_DIR VERSION [--sizes JSON] [--fragments K]");
  const [out, version] = args._;
  if (version !== "2.1" && version !== "2.2") fail(`VERSION must be 2.1 or 2.2, got '${version}'`);
  const sizes = args.sizes ? JSON.parse(args.sizes) : DEFAULT_SIZES;
  const fragments = intArg(args, "fragments", 2);
  const per = Math.ceil(sizes.length / fragments);
  const rows = [];
  for (let f = 0; f < fragments; f++) {
    const part = sizes.slice(f * per, (f + 1) * per);
    if (!part.length) break;
    const t = blobTable(version, rows.length, part);
    if (f === 0) {
      await createDataset(out, t, version);
    } else {
      const { table, cleanup } = await openDataset(out);
      try { await appendTable(table, t); } finally { table.close(); cleanup(); }
    }
    rows.push(...part);
  }
  const { table, cleanup } = await openDataset(out);
  try {
    const res = await table.query().toArrow();
    const ids = res.getChild("id"), col = res.getChild("blob");
    const scan = new Array(rows.length).fill(null);
    for (let i = 0; i < res.numRows; i++) scan[Number(ids.get(i))] = plain(col.get(i));
    process.stdout.write(`${JSON.stringify({ rows, scan })}\n`);
  } finally {
    table.close();
    cleanup();
  }
});
