// Shared helpers for the interop scripts: argument parsing, a seeded RNG,
// building Arrow data from plain JS values, opening a dataset directory with
// LanceDB, and the canonical JSON form documented in README.md.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as arrow from "apache-arrow";
import * as lancedb from "@lancedb/lancedb";

export { arrow, lancedb };

// Lance, inside LanceDB, leaves two empty ".tmpXXXXXX" directories in the temporary
// directory of every process that builds or writes a dataset: thousands per test run.
// Each script gets a temporary directory of its own, removed when the script exits.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "lancet-node-"));
process.env.TMPDIR = scratch;
process.on("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));

// ---------------------------------------------------------------- CLI

// Parses `positional... --flag value --switch` into {_: [...], flag: value, switch: true}.
// `switches` lists the flags that take no value.
export function parseArgs(argv, switches = []) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const key = a.slice(2);
      if (switches.includes(key)) {
        out[key] = true;
      } else {
        if (i + 1 >= argv.length) fail(`option --${key} needs a value`);
        out[key] = argv[++i];
      }
    } else {
      out._.push(a);
    }
  }
  return out;
}

export function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(2);
}

// Runs an async main, turning any exception into a message and exit code 1.
// process.exit drops stdout that a pipe has not taken yet (a reader slower than a
// 64 KiB burst lost the tail of search output): exit once everything written is flushed.
export function exitAfterFlush(code) {
  process.stdout.write("", () => process.exit(code));
}

export function runMain(main) {
  main().then(
    (code) => exitAfterFlush(code ?? 0),
    (err) => {
      // The stack only helps when debugging the harness itself.
      const text = process.env.LANCET_INTEROP_DEBUG ? err?.stack : err?.message;
      process.stderr.write(`error: ${text ?? err}\n`);
      process.exit(1);
    },
  );
}

export function intArg(args, key, dflt) {
  if (args[key] === undefined) return dflt;
  const v = Number(args[key]);
  if (!Number.isInteger(v) || v < 0) fail(`--${key} must be a non-negative integer, got '${args[key]}'`);
  return v;
}

// ---------------------------------------------------------------- RNG

// mulberry32: tiny, deterministic, good enough for test data.
export function makeRng(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), // inclusive, |range| < 2^53
    u32: () => Math.floor(next() * 4294967296),
    u64: () => (BigInt(r.u32()) << 32n) | BigInt(r.u32()),
    i64: () => BigInt.asIntN(64, r.u64()),
    bigBelow: (n) => { // uniform-ish in [0, n) for BigInt n
      let v = 0n;
      for (let bits = 0n; (1n << bits) < n * 256n; bits += 32n) v = (v << 32n) | BigInt(r.u32());
      return v % n;
    },
    bytes: (n) => Uint8Array.from({ length: n }, () => r.int(0, 255)),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
  };
  return r;
}

// ---------------------------------------------------------------- float16

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

// IEEE binary16 bits of a number, round to nearest even.
export function toHalfBits(x) {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

export function fromHalfBits(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

// ---------------------------------------------------------------- building Arrow data

const { Type } = arrow;

function validity(values) {
  const n = values.length;
  const bitmap = new Uint8Array(((n + 63) & ~63) >> 3);
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    if (values[i] === null || values[i] === undefined) nulls++;
    else bitmap[i >> 3] |= 1 << (i & 7);
  }
  return { nullBitmap: nulls ? bitmap : undefined, nullCount: nulls };
}

function storeDecimal(words, at, value, nwords) {
  let v = BigInt.asUintN(32 * nwords, value);
  for (let k = 0; k < nwords; k++) {
    words[at + k] = Number(v & 0xffffffffn);
    v >>= 32n;
  }
}

const textEncoder = new TextEncoder();

// Builds arrow Data of `type` from JS values (null = null). Value shapes:
// bool: boolean; 8..32-bit ints, float, date32, time32: number; 64-bit ints,
// date64, time64, timestamp, duration, decimal: BigInt (decimal: unscaled);
// float16: number; utf8: string; binary / fixed_size_binary: Uint8Array;
// (fixed-size) list: array; struct: object keyed by child name.
export function buildData(type, values) {
  const length = values.length;
  const { nullBitmap, nullCount } = validity(values);
  const base = { type, length, nullCount, nullBitmap };
  switch (type.typeId) {
    case Type.Null:
      return arrow.makeData({ type, length, nullCount: length });
    case Type.Bool: {
      const data = new Uint8Array(((length + 63) & ~63) >> 3);
      values.forEach((v, i) => { if (v) data[i >> 3] |= 1 << (i & 7); });
      return arrow.makeData({ ...base, data });
    }
    case Type.Int:
    case Type.Float:
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
    case Type.Duration: {
      const Ctor = type.ArrayType;
      const stride = type.typeId === Type.Date && type.unit === arrow.DateUnit.MILLISECOND && Ctor === Int32Array ? 2 : 1;
      const data = new Ctor(length * stride);
      const big = Ctor === BigInt64Array || Ctor === BigUint64Array;
      const half = type.typeId === Type.Float && type.precision === arrow.Precision.HALF;
      values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        if (half) data[i] = toHalfBits(v);
        else if (big) data[i] = BigInt(v);
        else if (stride === 2) { const b = BigInt(v); data[2 * i] = Number(BigInt.asIntN(32, b)); data[2 * i + 1] = Number(b >> 32n); }
        else data[i] = Number(v);
      });
      return arrow.makeData({ ...base, data });
    }
    case Type.Decimal: {
      const nwords = type.bitWidth / 32;
      const data = new Uint32Array(length * nwords);
      values.forEach((v, i) => { if (v !== null && v !== undefined) storeDecimal(data, i * nwords, BigInt(v), nwords); });
      return arrow.makeData({ ...base, data });
    }
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary: {
      const large = type.typeId === Type.LargeUtf8 || type.typeId === Type.LargeBinary;
      const parts = values.map((v) => (v === null || v === undefined ? new Uint8Array(0) : typeof v === "string" ? textEncoder.encode(v) : v));
      const total = parts.reduce((s, p) => s + p.length, 0);
      const data = new Uint8Array(total);
      const valueOffsets = large ? new BigInt64Array(length + 1) : new Int32Array(length + 1);
      let at = 0;
      parts.forEach((p, i) => { data.set(p, at); at += p.length; valueOffsets[i + 1] = large ? BigInt(at) : at; });
      return arrow.makeData({ ...base, valueOffsets, data });
    }
    case Type.FixedSizeBinary: {
      const w = type.byteWidth;
      const data = new Uint8Array(length * w);
      values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        if (v.length !== w) throw new Error(`fixed_size_binary(${w}) value of ${v.length} bytes`);
        data.set(v, i * w);
      });
      return arrow.makeData({ ...base, data });
    }
    case Type.FixedSizeList: {
      const n = type.listSize;
      const items = [];
      values.forEach((v) => {
        if (v === null || v === undefined) for (let k = 0; k < n; k++) items.push(null);
        else {
          if (v.length !== n) throw new Error(`fixed_size_list(${n}) value of ${v.length} items`);
          items.push(...v);
        }
      });
      return arrow.makeData({ ...base, child: buildData(type.children[0].type, items) });
    }
    case Type.List: {
      const items = [];
      const valueOffsets = new Int32Array(length + 1);
      values.forEach((v, i) => { if (v) items.push(...v); valueOffsets[i + 1] = items.length; });
      return arrow.makeData({ ...base, valueOffsets, child: buildData(type.children[0].type, items) });
    }
    case Type.Struct: {
      const children = type.children.map((f) =>
        buildData(f.type, values.map((v) => (v === null || v === undefined ? null : v[f.name] ?? null))));
      return arrow.makeData({ ...base, children });
    }
    case Type.Map: {  // values: JS Maps
      const entries = [];
      const valueOffsets = new Int32Array(length + 1);
      values.forEach((v, i) => {
        if (v) for (const [key, value] of v) entries.push({ key, value });
        valueOffsets[i + 1] = entries.length;
      });
      const et = type.children[0].type;
      const [kf, vf] = et.children;
      const child = arrow.makeData({ type: et, length: entries.length, nullCount: 0, children: [
        buildData(kf.type, entries.map((e) => e.key)), buildData(vf.type, entries.map((e) => e.value))] });
      return arrow.makeData({ ...base, valueOffsets, child });
    }
    case Type.Dictionary: {  // values: the plain values; the dictionary holds each once
      const keyOf = (v) => (v instanceof Uint8Array ? `b:${Array.from(v).join(",")}` : `${typeof v}:${v}`);
      const seen = new Map();
      const dict = [];
      const data = new type.indices.ArrayType(length);
      values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        const k = keyOf(v);
        if (!seen.has(k)) { seen.set(k, dict.length); dict.push(v); }
        data[i] = type.indices.bitWidth === 64 ? BigInt(seen.get(k)) : seen.get(k);
      });
      const dictionary = arrow.makeVector(buildData(type.dictionary, dict));
      return arrow.makeData({ ...base, data, dictionary });
    }
    default:
      throw new Error(`buildData: unsupported arrow type ${type}`);
  }
}

// columns: [{name, type, nullable, values, metadata?}] -> arrow.Table
export function buildTable(columns, metadata = new Map()) {
  const fields = columns.map((c) => new arrow.Field(c.name, c.type, c.nullable ?? true, c.metadata ?? new Map()));
  const schema = new arrow.Schema(fields, metadata);
  const length = columns.length ? columns[0].values.length : 0;
  const children = columns.map((c) => {
    if (c.values.length !== length) throw new Error(`column ${c.name} has ${c.values.length} rows, expected ${length}`);
    return c.data ?? buildData(c.type, c.values);
  });
  const data = arrow.makeData({ type: new arrow.Struct(fields), length, nullCount: 0, children });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
}

// ---------------------------------------------------------------- datasets

// LanceDB addresses a table as `<db dir>/<name>.lance`. Any dataset directory is
// reached through a temporary database whose `t.lance` is a symlink to it.
export async function openDataset(dir) {
  const abs = path.resolve(dir);
  if (!fs.existsSync(path.join(abs, "_versions"))) throw new Error(`${dir} is not a Lance dataset (no _versions/)`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lancet-interop-"));
  const cleanup = () => fs.rmSync(tmp, { recursive: true, force: true });
  try {
    fs.symlinkSync(abs, path.join(tmp, "t.lance"));
    const db = await lancedb.connect(tmp);
    const table = await db.openTable("t");
    return { db, table, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

// Creates the dataset at `outDir` (which must not exist, or is replaced) from an arrow
// Table (or the bytes of an Arrow IPC file), with the given data storage version ("2.0",
// "2.1", "2.2", "stable", ...). The table is written into a temporary database and moved
// into place, so `outDir` needs no `.lance` suffix. Lance stores relative paths, so the
// move is safe.
export async function createDataset(outDir, table, version, extraStorageOptions = {}) {
  const abs = path.resolve(outDir);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  const tmp = fs.mkdtempSync(path.join(path.dirname(abs), ".lancet-interop-"));
  try {
    const db = await lancedb.connect(tmp);
    const storageOptions = { new_table_data_storage_version: version, ...extraStorageOptions };
    // LanceDB's JS `sanitize` step refuses types it does not know (large_utf8,
    // large_binary), although Lance itself takes them; the connection's native
    // createTable takes the same Arrow IPC file bytes without that step.
    const ipc = Buffer.isBuffer(table) ? table : Buffer.from(arrow.tableToIPC(table, "file"));
    const native = await db.inner.createTable("t", ipc, "create", [], storageOptions);
    const t = await db.openTable("t");
    const rows = await t.countRows();
    t.close();
    if (native && typeof native.close === "function") native.close();
    fs.rmSync(abs, { recursive: true, force: true });
    fs.renameSync(path.join(tmp, "t.lance"), abs);
    return rows;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- canonical JSON

// Shortest decimal text that round-trips at the given binary width (16, 32, 64).
// NaN and infinities become the JSON strings "NaN", "Infinity", "-Infinity".
export function floatText(x, width) {
  if (Number.isNaN(x)) return '"NaN"';
  if (x === Infinity) return '"Infinity"';
  if (x === -Infinity) return '"-Infinity"';
  if (Object.is(x, -0)) return "-0";
  if (width === 64) return String(x);
  const round = width === 32 ? Math.fround : (v) => fromHalfBits(toHalfBits(v));
  for (let p = 1; p <= 17; p++) {
    const s = x.toPrecision(p);
    if (round(Number(s)) === x) return String(Number(s));
  }
  return String(x);
}

function decimalText(unscaled, scale) {
  const neg = unscaled < 0n;
  let s = (neg ? -unscaled : unscaled).toString();
  if (scale > 0) {
    s = s.padStart(scale + 1, "0");
    s = `${s.slice(0, s.length - scale)}.${s.slice(s.length - scale)}`;
  } else if (scale < 0) {
    s = s + "0".repeat(-scale);
  }
  return (neg ? "-" : "") + s;
}

function loadDecimal(words, at, nwords) {
  let v = 0n;
  for (let k = nwords - 1; k >= 0; k--) v = (v << 32n) | BigInt(words[at + k]);
  return BigInt.asIntN(32 * nwords, v);
}

function base64(bytes) {
  return JSON.stringify(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"));
}

const textDecoder = new TextDecoder("utf-8", { fatal: true });

// JSON text of element i of arrow Data `d` (see README.md for the rules).
export function valueJson(d, i) {
  const t = d.type;
  if (t.typeId === Type.Null || !d.getValid(i)) return "null";
  switch (t.typeId) {
    case Type.Bool: {
      const bit = d.offset + i;
      return (d.values[bit >> 3] >> (bit & 7)) & 1 ? "true" : "false";
    }
    case Type.Int: {
      const v = d.values[i];
      return t.bitWidth === 64 ? JSON.stringify(v.toString()) : String(v);
    }
    case Type.Float:
      if (t.precision === arrow.Precision.HALF) return floatText(fromHalfBits(d.values[i]), 16);
      return floatText(d.values[i], t.precision === arrow.Precision.SINGLE ? 32 : 64);
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
    case Type.Duration: {
      const vals = d.values;
      if (vals instanceof Int32Array && t.typeId === Type.Date && t.unit === arrow.DateUnit.MILLISECOND) {
        return ((BigInt(vals[2 * i + 1]) << 32n) | BigInt(vals[2 * i] >>> 0)).toString();
      }
      return vals[i].toString();
    }
    case Type.Decimal: {
      const nwords = t.bitWidth / 32;
      return JSON.stringify(decimalText(loadDecimal(d.values, i * nwords, nwords), t.scale));
    }
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary: {
      const lo = Number(d.valueOffsets[i]);
      const hi = Number(d.valueOffsets[i + 1]);
      const bytes = d.values.subarray(lo, hi);
      return t.typeId === Type.Utf8 || t.typeId === Type.LargeUtf8 ? JSON.stringify(textDecoder.decode(bytes)) : base64(bytes);
    }
    case Type.FixedSizeBinary:
      return base64(d.values.subarray(i * t.byteWidth, (i + 1) * t.byteWidth));
    case Type.FixedSizeList: {
      const n = t.listSize;
      const c = d.children[0];
      const parts = [];
      for (let k = 0; k < n; k++) parts.push(valueJson(c, i * n + k));
      return `[${parts.join(",")}]`;
    }
    case Type.List:
    case Type.LargeList: {
      const lo = Number(d.valueOffsets[i]);
      const hi = Number(d.valueOffsets[i + 1]);
      const c = d.children[0];
      const parts = [];
      for (let k = lo; k < hi; k++) parts.push(valueJson(c, k));
      return `[${parts.join(",")}]`;
    }
    case Type.Struct:
      return `{${t.children.map((f, k) => `${JSON.stringify(f.name)}:${valueJson(d.children[k], i)}`).join(",")}}`;
    case Type.Map: {
      const lo = d.valueOffsets[i];
      const hi = d.valueOffsets[i + 1];
      const entries = d.children[0];
      const parts = [];
      for (let k = lo; k < hi; k++) parts.push(`[${valueJson(entries.children[0], k)},${valueJson(entries.children[1], k)}]`);
      return `[${parts.join(",")}]`;
    }
    case Type.Dictionary:
      return valueJson(d.dictionary.data[0], Number(d.values[i]));
    default:
      throw new Error(`no canonical form for arrow type ${t}`);
  }
}

const timeUnit = (u) => ["s", "ms", "us", "ns"][u];

// Our own compact type names (see README.md).
export function typeJson(t) {
  switch (t.typeId) {
    case Type.Null: return { type: "null" };
    case Type.Bool: return { type: "bool" };
    case Type.Int: return { type: `${t.isSigned ? "int" : "uint"}${t.bitWidth}` };
    case Type.Float: return { type: ["float16", "float32", "float64"][t.precision] };
    case Type.Date: return { type: t.unit === arrow.DateUnit.DAY ? "date32" : "date64" };
    case Type.Time: return { type: t.bitWidth === 32 ? "time32" : "time64", unit: timeUnit(t.unit) };
    case Type.Timestamp: return { type: "timestamp", unit: timeUnit(t.unit), timezone: t.timezone ?? null };
    case Type.Duration: return { type: "duration", unit: timeUnit(t.unit) };
    case Type.Decimal: return { type: `decimal${t.bitWidth}`, precision: t.precision, scale: t.scale };
    case Type.Utf8: return { type: "utf8" };
    case Type.LargeUtf8: return { type: "large_utf8" };
    case Type.Binary: return { type: "binary" };
    case Type.LargeBinary: return { type: "large_binary" };
    case Type.FixedSizeBinary: return { type: "fixed_size_binary", byte_width: t.byteWidth };
    case Type.FixedSizeList: return { type: "fixed_size_list", list_size: t.listSize, children: t.children.map(fieldJson) };
    case Type.List: return { type: "list", children: t.children.map(fieldJson) };
    case Type.LargeList: return { type: "large_list", children: t.children.map(fieldJson) };
    case Type.Struct: return { type: "struct", children: t.children.map(fieldJson) };
    case Type.Map: return { type: "map", children: t.children.map(fieldJson) };
    case Type.Dictionary: return { type: "dictionary", index: typeJson(t.indices), value: typeJson(t.dictionary) };
    default: return { type: String(t) };
  }
}

export function fieldJson(f) {
  const out = { name: f.name, ...typeJson(f.type), nullable: f.nullable };
  if (f.metadata && f.metadata.size) out.metadata = Object.fromEntries(f.metadata);
  return out;
}

export function schemaJson(schema) {
  const out = { fields: schema.fields.map(fieldJson) };
  if (schema.metadata && schema.metadata.size) out.metadata = Object.fromEntries(schema.metadata);
  return out;
}

// Writes rows of an arrow Table as JSON Lines, columns in schema order.
export function writeRows(table, write) {
  const names = table.schema.fields.map((f) => JSON.stringify(f.name));
  for (const batch of table.batches) {
    const cols = batch.data.children;
    for (let i = 0; i < batch.numRows; i++) {
      write(`{${names.map((n, k) => `${n}:${valueJson(cols[k], i)}`).join(",")}}\n`);
    }
  }
}
