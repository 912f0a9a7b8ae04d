// A 2.1 table with a legacy blob column (large_binary with lance-encoding:blob = true;
// Lance 12 refuses these from 2.2 on), values of growing sizes and some nulls.
// Usage: node write_legacy_blobs.mjs OUT_DIR 2.1
import * as arrow from "apache-arrow";
import { buildTable, createDataset, runMain } from "./lib.mjs";
runMain(async () => {
  const [out, version] = process.argv.slice(2);
  const n = 20;
  const vals = Array.from({ length: n }, (_, i) => (i % 5 === 3 ? null : new Uint8Array(Array.from({ length: 100 + i * 50 }, (_, k) => (k * 7 + i) & 255))));
  const cols = [
    { name: "id", type: new arrow.Int32(), values: Array.from({ length: n }, (_, i) => i) },
    { name: "blob", type: new arrow.LargeBinary(), metadata: new Map([["lance-encoding:blob", "true"]]), values: vals },
  ];
  await createDataset(out, buildTable(cols), version);
});
