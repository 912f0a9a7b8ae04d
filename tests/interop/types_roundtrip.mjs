// Usage: node types_roundtrip.mjs write OUT_DIR --table map|dict --version 2.0|2.1|2.2
//        node types_roundtrip.mjs read DATASET
// `write` has LanceDB (Lance 12) write a small fixed table of map or dictionary columns
// (nulls, empty maps, null values; dictionaries at the top level, in a struct and in a
// list) as dataset OUT_DIR. `read` prints {"schema": ...} (lib.mjs schemaJson, so a
// dictionary column shows up as {"type": "dictionary", ...}), then one JSON object per
// row in the form of `lancet cat`: maps as arrays of {"key": ..., "value": ...} objects,
// dictionaries as their values, other values in lib.mjs's canonical form.
import { arrow, createDataset, fail, openDataset, parseArgs, runMain, schemaJson, valueJson } from "./lib.mjs";

const A = arrow;
const Type = A.Type;

// The value of row i of Data d, as `lancet cat` prints it.
function catJson(d, i) {
  const t = d.type;
  if (t.typeId === Type.Null || !d.getValid(i)) return "null";
  switch (t.typeId) {
    case Type.Map: {
      const lo = d.valueOffsets[i];
      const hi = d.valueOffsets[i + 1];
      const e = d.children[0];
      const [kf, vf] = e.type.children;
      const parts = [];
      for (let k = lo; k < hi; k++)
        parts.push(`{${JSON.stringify(kf.name)}:${catJson(e.children[0], k)},${JSON.stringify(vf.name)}:${catJson(e.children[1], k)}}`);
      return `[${parts.join(",")}]`;
    }
    case Type.List:
    case Type.LargeList: {
      const lo = Number(d.valueOffsets[i]);
      const hi = Number(d.valueOffsets[i + 1]);
      const parts = [];
      for (let k = lo; k < hi; k++) parts.push(catJson(d.children[0], k));
      return `[${parts.join(",")}]`;
    }
    case Type.FixedSizeList: {
      const n = t.listSize;
      const parts = [];
      for (let k = 0; k < n; k++) parts.push(catJson(d.children[0], i * n + k));
      return `[${parts.join(",")}]`;
    }
    case Type.Struct:
      return `{${t.children.map((f, k) => `${JSON.stringify(f.name)}:${catJson(d.children[k], i)}`).join(",")}}`;
    case Type.Dictionary:
      return catJson(d.dictionary.data[0], Number(d.values[i]));
    default:
      return valueJson(d, i);
  }
}

const f = (name, type, nullable = true) => new A.Field(name, type, nullable);

function vector(type, values) {
  const b = A.makeBuilder({ type, nullValues: [null, undefined] });
  for (const v of values) b.append(v);
  return b.finish().toVector();
}

// Rows: 7. Maps: entries, null, empty, null values, one entry, many entries.
const MAPS = [{ a: 1, x: 2 }, null, {}, { q: null, r: 5 }, { z: 7 }, {}, { k1: 10, k2: -3, k3: null, k4: 2147483647 }];
const WORDS = ["aa", "bb", null, "aa", "cc", "bb", "zz"];

function mapTable() {
  const mapT = new A.Map_(f("entries", new A.Struct([f("key", new A.Utf8(), false), f("value", new A.Int32())]), false), false);
  const mapL = new A.Map_(f("entries", new A.Struct([f("key", new A.Int64(), false), f("value", new A.Utf8())]), false), false);
  const m = vector(mapT, MAPS.map((r) => (r === null ? null : new Map(Object.entries(r)))));
  const m2 = vector(mapL, MAPS.map((r, i) => (i === 4 ? null : new Map(Object.keys(r ?? {}).map((k, j) => [BigInt(i * 10 + j), j === 1 ? null : `v${k}`])))));
  const id = vector(new A.Int32(), MAPS.map((_, i) => i));
  const schema = new A.Schema([f("id", new A.Int32(), false), f("m", mapT), f("m2", mapL)]);
  return new A.Table(schema, { id, m, m2 });
}

function dictTable() {
  // Each field gets its own dictionary type (Arrow JS: one dictionary id per field).
  const dUtf8 = new A.Dictionary(new A.Utf8(), new A.Int32());
  const dUtf8s = new A.Dictionary(new A.Utf8(), new A.Int32());
  const dUtf8l = new A.Dictionary(new A.Utf8(), new A.Int32());
  const dU8 = new A.Dictionary(new A.Int64(), new A.Uint8());
  const dBin = new A.Dictionary(new A.Binary(), new A.Int16());
  const d = vector(dUtf8, WORDS);
  const e = vector(dU8, [5n, 7n, null, 5n, 9n, 7n, 1n]);
  const bin = vector(dBin, WORDS.map((w) => (w === null ? null : new TextEncoder().encode(w))));
  const stT = new A.Struct([f("x", new A.Int32()), f("d", dUtf8s)]);
  const st = vector(stT, WORDS.map((w, i) => (i === 5 ? { x: null, d: null } : { x: i, d: w })));
  const lT = new A.List(f("item", dUtf8l));
  const l = vector(lT, WORDS.map((w, i) => (i === 1 ? null : i === 2 ? [] : [w, "qq", w])));
  const schema = new A.Schema([f("d", dUtf8), f("e", dU8), f("bin", dBin), f("st", stT), f("l", lT)]);
  return new A.Table(schema, { d, e, bin, st, l });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [cmd, dir] = args._;
  if (!dir || (cmd !== "write" && cmd !== "read")) fail("usage: types_roundtrip.mjs write|read DIR ...");
  if (cmd === "write") {
    const table = args.table === "map" ? mapTable() : args.table === "dict" ? dictTable() : fail("--table map|dict");
    await createDataset(dir, table, args.version ?? "2.2");
    return 0;
  }
  const { table, cleanup } = await openDataset(dir);
  try {
    const result = await table.query().toArrow();
    let out = `${JSON.stringify({ schema: schemaJson(result.schema) })}\n`;
    for (const batch of result.batches) {
      for (let i = 0; i < batch.numRows; i++) {
        const parts = batch.schema.fields.map((fl, k) => `${JSON.stringify(fl.name)}:${catJson(batch.data.children[k], i)}`);
        out += `{${parts.join(",")}}\n`;
      }
    }
    await new Promise((resolve) => process.stdout.write(out, resolve));
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
