// Usage: node types_roundtrip.mjs write OUT_DIR --table map|dict --version 2.0|2.1|2.2
//        node types_roundtrip.mjs random OUT_DIR --cases N --version V [--seed S]
//        node types_roundtrip.mjs read DATASET
//        node types_roundtrip.mjs read-many DATASET...
// `write` has LanceDB (Lance 12) write a small fixed table of map or dictionary columns
// (nulls, empty maps, null values; dictionaries at the top level, in a struct and in a
// list) as dataset OUT_DIR. `read` prints {"schema": ...} (lib.mjs schemaJson, so a
// dictionary column shows up as {"type": "dictionary", ...}), then one JSON object per
// row in the form of `lancet cat`: maps as arrays of {"key": ..., "value": ...} objects,
// dictionaries as their values, other values in lib.mjs's canonical form.
// `read-many` prints, for each DATASET, a line `#dataset DATASET` and then what `read`
// prints for it: one process for many datasets (LanceDB's startup dominates a read).
// `random` has LanceDB write N datasets OUT_DIR/case-<i> of random tables (an int64
// `id`, then 1-3 columns nesting structs, lists and, at 2.2, maps up to 3 levels deep,
// with dictionary fields at every level, over leaves of every primitive type (float16,
// dates, times, timestamps with and without time zones, durations, decimal128/256,
// fixed-size binary, large utf8/binary), fixed-size lists of them and null) and prints
// {"cases": N, "retries": k}. Tables go to LanceDB as Arrow IPC (lib.mjs createDataset).
import * as path from "node:path";
import { arrow, buildTable, createDataset, fail, intArg, makeRng, openDataset, parseArgs, runMain, schemaJson, valueJson } from "./lib.mjs";

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

// ---- random tables

// (Arrow JS cannot build int64-indexed dictionaries.)
const DICT_INDEX = () => [new A.Int32(), new A.Uint8(), new A.Int16(), new A.Uint32(), new A.Int8()];
const WORDS_R = ["", "a", "lance", "héllo", "日本語", "x".repeat(30), "zz", "q"];

// Leaf types: every primitive Lance 12 stores, fixed-size lists of them, and null.
const TZS = [undefined, "UTC", "America/New_York", "Asia/Kolkata"];  // (Lance 12 refuses offsets such as "+05:30")
const PRIMS = [
  () => new A.Bool(), () => new A.Int8(), () => new A.Int16(), () => new A.Int32(), () => new A.Int64(),
  () => new A.Uint8(), () => new A.Uint16(), () => new A.Uint32(), () => new A.Uint64(),
  () => new A.Float16(), () => new A.Float32(), () => new A.Float64(),
  () => new A.DateDay(), () => new A.DateMillisecond(),
  () => new A.TimeSecond(), () => new A.TimeMillisecond(), () => new A.TimeMicrosecond(), () => new A.TimeNanosecond(),
  (r) => new A.Timestamp(r.pick([A.TimeUnit.SECOND, A.TimeUnit.MILLISECOND, A.TimeUnit.MICROSECOND, A.TimeUnit.NANOSECOND]), r.pick(TZS)),
  (r) => new A.Duration(r.pick([A.TimeUnit.SECOND, A.TimeUnit.MILLISECOND, A.TimeUnit.MICROSECOND, A.TimeUnit.NANOSECOND])),
  (r) => new A.Decimal(r.int(0, 6), r.int(7, 38), 128), (r) => new A.Decimal(r.int(0, 10), r.int(39, 76), 256),
  (r) => new A.FixedSizeBinary(r.int(1, 9)),
  () => new A.Utf8(), () => new A.LargeUtf8(), () => new A.Binary(), () => new A.LargeBinary(),
];

// Null only at the top level (Lance 12 refuses null arrays under a struct or list);
// fixed-size list items nullable (a null list's items are nulls).
function randomLeaf(r, depth) {
  const k = r.int(0, 9);
  if (k === 0 && depth === 0) return new A.Null();
  if (k === 1) {  // a fixed-size list of a primitive
    const item = r.pick(PRIMS.slice(0, 24))(r);
    return new A.FixedSizeList(r.int(1, 4), f("item", item, true));
  }
  return r.pick(PRIMS)(r);
}

// A random type; `maps` allows map nodes (2.2 only).
function randomType(r, depth, maxDepth, maps) {
  const kind = depth >= maxDepth ? r.int(0, 4) : r.int(0, maps ? 8 : 7);
  switch (kind) {
    case 0:
    case 1:
    case 2: return randomLeaf(r, depth);
    case 3:
    case 4: {  // a dictionary of strings, binaries or integers
      const v = r.pick([() => new A.Utf8(), () => new A.Binary(), () => new A.Int64()])();
      return new A.Dictionary(v, r.pick(DICT_INDEX()));
    }
    case 5: return new A.List(f("item", randomType(r, depth + 1, maxDepth, maps), r.next() < 0.8));
    case 6:
    case 7: {
      const n = r.int(1, 3);
      return new A.Struct(Array.from({ length: n }, (_, i) => f(`f${i}`, randomType(r, depth + 1, maxDepth, maps))));
    }
    default: {
      const key = r.next() < 0.5 ? new A.Utf8() : new A.Int32();
      const value = randomType(r, depth + 1, maxDepth, maps);
      return new A.Map_(f("entries", new A.Struct([f("key", key, false), f("value", value, r.next() < 0.8)]), false), false);
    }
  }
}

const UNIT_RANGE = [2e9, 2e12, 2e15, 2e18];  // timestamps and durations per unit

// A random value of type t (null allowed when `nullable`); `structNulls`: 2.1+.
function randomValue(r, t, nullable, structNulls) {
  if (t.typeId === Type.Null) return null;
  if (nullable && r.next() < 0.15 && (t.typeId !== Type.Struct || structNulls)) return null;
  switch (t.typeId) {
    case Type.Bool: return r.next() < 0.5;
    case Type.Int: {
      if (t.bitWidth === 64) return t.isSigned ? r.i64() : r.u64();
      const lo = t.isSigned ? -(2 ** (t.bitWidth - 1)) : 0;
      return r.int(lo, lo + 2 ** t.bitWidth - 1);
    }
    case Type.Float:
      if (t.precision === A.Precision.HALF) return r.int(-2048, 2048) / 4;
      return t.precision === A.Precision.SINGLE ? Math.fround(r.int(-1e6, 1e6) / 8) : (r.next() - 0.5) * 1e6;
    case Type.Date: return t.unit === A.DateUnit.DAY ? r.int(-20000, 40000) : BigInt(r.int(-20000, 40000)) * 86400000n;
    case Type.Time: {
      const perSec = [1, 1e3, 1e6, 1e9][t.unit];
      const v = r.int(0, 86399) * perSec + (perSec > 1 ? r.int(0, perSec - 1) : 0);
      return t.bitWidth === 64 ? BigInt(v) : v;
    }
    case Type.Timestamp: return BigInt(r.int(0, UNIT_RANGE[t.unit]));
    case Type.Duration: return BigInt(r.int(-UNIT_RANGE[t.unit], UNIT_RANGE[t.unit]));
    case Type.Decimal: {
      const lim = 10n ** BigInt(t.precision);
      return r.bigBelow(2n * lim - 1n) - lim + 1n;
    }
    case Type.FixedSizeBinary: return r.bytes(t.byteWidth);
    case Type.Utf8:
    case Type.LargeUtf8: return r.pick(WORDS_R);
    case Type.Binary:
    case Type.LargeBinary: return new TextEncoder().encode(r.pick(WORDS_R));
    case Type.Dictionary: return randomValue(r, t.dictionary, false, structNulls);
    case Type.FixedSizeList:
      return Array.from({ length: t.listSize }, () => randomValue(r, t.children[0].type, t.children[0].nullable, structNulls));
    case Type.List: {
      const n = r.int(0, 3);
      return Array.from({ length: n }, () => randomValue(r, t.children[0].type, t.children[0].nullable, structNulls));
    }
    case Type.Struct: {
      const o = {};
      for (const c of t.children) o[c.name] = randomValue(r, c.type, c.nullable, structNulls);
      return o;
    }
    case Type.Map: {
      const [kf, vf] = t.children[0].type.children;
      const m = new Map();
      const n = r.int(0, 3);
      for (let k = 0; k < n; k++) m.set(randomValue(r, kf.type, false, structNulls), randomValue(r, vf.type, vf.nullable, structNulls));
      return m;
    }
    default: throw new Error(`no random values for ${t}`);
  }
}

async function randomCases(out, args) {
  const version = args.version ?? "2.2";
  const cases = intArg(args, "cases", 10);
  const r = makeRng(intArg(args, "seed", 1));
  let retries = 0;
  for (let c = 0; c < cases; c++) {
    for (let attempt = 0; ; attempt++) {
      const n = r.int(1, 3);
      const rows = r.int(1, 30);
      const fields = [f("id", new A.Int64(), false)];
      for (let k = 0; k < n; k++) {
        const t = randomType(r, 0, 3, version === "2.2");
        fields.push(f(`c${k}`, t, t.typeId === Type.Null || r.next() < 0.85));
      }
      const columns = [{ name: "id", type: new A.Int64(), nullable: false, values: Array.from({ length: rows }, (_, i) => BigInt(i)) }];
      for (const fl of fields.slice(1))
        columns.push({ name: fl.name, type: fl.type, nullable: fl.nullable,
                       values: Array.from({ length: rows }, () => randomValue(r, fl.type, fl.nullable, version !== "2.0")) });
      const table = buildTable(columns);
      const dir = path.join(out, `case-${c}`);
      try {
        await createDataset(dir, table, version);
        break;
      } catch (err) {
        if (attempt >= 20) throw new Error(`case ${c}: LanceDB refused 20 random tables; last: ${err?.message ?? err}`);
        retries++;
        if (process.env.LANCET_DEBUG) process.stderr.write(`case ${c} refused: ${String(err?.message ?? err).slice(0, 300)}\n`);
      }
    }
  }
  process.stdout.write(`${JSON.stringify({ cases, retries })}\n`);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [cmd, dir] = args._;
  if (cmd === "random" && dir) {
    await randomCases(dir, args);
    return 0;
  }
  if (cmd === "read-many") {
    let out = "";
    for (const ds of args._.slice(1)) out += `#dataset ${ds}\n${await readView(ds)}`;
    await new Promise((resolve) => process.stdout.write(out, resolve));
    return 0;
  }
  if (!dir || (cmd !== "write" && cmd !== "read")) fail("usage: types_roundtrip.mjs write|random|read|read-many DIR ...");
  if (cmd === "write") {
    const table = args.table === "map" ? mapTable() : args.table === "dict" ? dictTable() : fail("--table map|dict");
    await createDataset(dir, table, args.version ?? "2.2");
    return 0;
  }
  const out = await readView(dir);
  await new Promise((resolve) => process.stdout.write(out, resolve));
  return 0;
}

// What `read` prints for one dataset: the schema line, then one line per row.
async function readView(dir) {
  let opened;
  try {
    opened = await openDataset(dir);
  } catch (err) {
    throw new Error(`${dir}: ${err?.message ?? err}`);
  }
  const { table, cleanup } = opened;
  try {
    const result = await table.query().toArrow();
    let out = `${JSON.stringify({ schema: schemaJson(result.schema) })}\n`;
    for (const batch of result.batches) {
      for (let i = 0; i < batch.numRows; i++) {
        const parts = batch.schema.fields.map((fl, k) => `${JSON.stringify(fl.name)}:${catJson(batch.data.children[k], i)}`);
        out += `{${parts.join(",")}}\n`;
      }
    }
    return out;
  } catch (err) {
    throw new Error(`${dir}: ${err?.message ?? err}`);
  } finally {
    table.close();
    cleanup();
  }
}

runMain(main);
