// A packed struct column (lance-encoding:packed = true, non-null fixed-width members),
// or (fsl) a fixed_size_list<utf8>, which Lance 12 cannot write.
// Usage: node write_packed_struct.mjs OUT_DIR 2.1|2.2 packed|fsl
import * as arrow from "apache-arrow";
import { buildTable, createDataset, runMain } from "./lib.mjs";
runMain(async () => {
  const [out, version, what] = process.argv.slice(2);
  const n = 50;
  const st = new arrow.Struct([new arrow.Field("a", new arrow.Int32(), false), new arrow.Field("b", new arrow.Float64(), false)]);
  const cols = what === "fsl" ? [
    { name: "fsl_utf8", type: new arrow.FixedSizeList(2, new arrow.Field("item", new arrow.Utf8(), true)), values: Array.from({ length: n }, (_, i) => (i % 4 === 1 ? null : ["a" + i, i % 3 ? null : "b"])) },
  ] : [
    { name: "packed", type: st, metadata: new Map([["lance-encoding:packed", "true"]]), nullable: false, values: Array.from({ length: n }, (_, i) => ({ a: i, b: i * 0.5 })) },
  ];
  await createDataset(out, buildTable(cols), version);
});
