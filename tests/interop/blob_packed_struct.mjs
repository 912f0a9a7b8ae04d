// Usage: node blob_packed_struct.mjs OUT_DIR ROWS LONG
// A 2.2 table with a packed struct holding a variable-width member (Lance 12 writes it
// as a VariablePackedStruct, the encoding of blob v2 descriptions; 2.1 refuses it):
//   packed: struct<a: int32, s: utf8> (lance-encoding:packed = "true", non-null)
// Row i: a = i, s = "x" repeated (LONG > 0 ? LONG + i : i % 13) times, then i in decimal.
// Enough rows make Lance compress the member with FSST, long strings with zstd.
import * as arrow from "apache-arrow";
import { buildTable, createDataset, fail, runMain } from "./lib.mjs";
runMain(async () => {
  const [out, rowsArg, longArg] = process.argv.slice(2);
  if (!out || rowsArg === undefined || longArg === undefined) fail("usage: blob_packed_struct.mjs OUT_DIR ROWS LONG");
  const n = Number(rowsArg), long = Number(longArg);
  const st = new arrow.Struct([new arrow.Field("a", new arrow.Int32(), false), new arrow.Field("s", new arrow.Utf8(), false)]);
  const cols = [
    { name: "id", type: new arrow.Int32(), values: Array.from({ length: n }, (_, i) => i) },
    {
      name: "packed", type: st, metadata: new Map([["lance-encoding:packed", "true"]]), nullable: false,
      values: Array.from({ length: n }, (_, i) => ({ a: i, s: "x".repeat(long > 0 ? long + i : i % 13) + i })),
    },
  ];
  await createDataset(out, buildTable(cols), "2.2");
});
