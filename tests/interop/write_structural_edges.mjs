// Columns that exercise Lance 12's structural-encoding choices: all-null list items and
// lists without values (complex all-null pages), an id column with runs, and the
// compression-parameter field metadata (zstd/lz4/none, level, RLE threshold, BSS,
// minichunk size).  Usage: node write_structural_edges.mjs OUT_DIR [--version 2.2] [--rows 3000]
import * as arrow from "apache-arrow";
import { buildTable, createDataset, runMain, parseArgs } from "./lib.mjs";
runMain(async () => {
  const args = parseArgs(process.argv.slice(2));
  const [out] = args._;
  const version = args.version ?? "2.2";
  const n = Number(args.rows ?? 3000);
  const I = (k) => Array.from({ length: n }, (_, i) => k(i));
  const md = (o) => new Map(Object.entries(o));
  const cols = [
    { name: "all_null_items", type: new arrow.List(new arrow.Field("item", new arrow.Int32(), true)), values: I((i) => (i % 3 === 0 ? null : i % 3 === 1 ? [] : [null, null])) },
    { name: "no_values", type: new arrow.List(new arrow.Field("item", new arrow.Int32(), true)), values: I((i) => (i % 2 ? null : [])) },
    { name: "user_id", type: new arrow.Int64(), values: I((i) => BigInt(Math.floor(i / 10))) },
    { name: "zstd_text", type: new arrow.Utf8(), metadata: md({ "lance-encoding:compression": "zstd" }), values: I((i) => "value number " + (i * 7919 % 1000)) },
    { name: "plain_int", type: new arrow.Int32(), metadata: md({ "lance-encoding:compression": "none" }), values: I((i) => i % 50) },
    { name: "status", type: new arrow.Int32(), metadata: md({ "lance-encoding:rle-threshold": "0.9" }), values: I((i) => Math.floor(i / 1000)) },
    { name: "lz4_float", type: new arrow.Float64(), metadata: md({ "lance-encoding:compression": "lz4", "lance-encoding:bss": "on" }), values: I((i) => Math.sin(i) * 100) },
    { name: "zstd_level", type: new arrow.Int64(), metadata: md({ "lance-encoding:compression": "zstd", "lance-encoding:compression-level": "9" }), values: I((i) => BigInt(i * 12345 % 100000)) },
    { name: "chunky", type: new arrow.Int32(), metadata: md({ "lance-encoding:minichunk-size": "16384" }), values: I((i) => i * 2654435761 % 4294967296 - 2147483648) },
  ];
  await createDataset(out, buildTable(cols), version);
});
