// Usage: node large_list.mjs write OUT_DIR --version 2.0|2.1|2.2 [--cases N --seed S]
//        node large_list.mjs read DATASET --columns C1,C2,...
//        node large_list.mjs read-many DATASET C1,C2,... [DATASET C1,C2,... ...]
// Arrow JS (apache-arrow 18) can neither build nor decode `large_list`, so LanceDB's
// Rust side does the work both ways:
//  * `write` builds tables whose list columns are Arrow JS `List`s, serializes them as an
//    Arrow IPC file, and rewrites that file so the chosen lists become `LargeList`s
//    (type tag 12 -> 21 in the schema flatbuffers, offsets widened to int64 in the
//    record batch bodies, buffer/block offsets moved). LanceDB's native createTable
//    decodes it in Rust and writes the Lance dataset OUT_DIR (a fixed table) and, with
//    --cases N, N random tables OUT_DIR-random/case-<i>. For each dataset it prints
//    `dataset DIR`, then `type COLUMN TYPE` per column (the Arrow type sent, as lancet's
//    arrow::to_string names it: `large_list<item: ...>`), then `row JSON` per row (the
//    values sent, in the form of `lancet cat`).
//  * `read` has LanceDB read the columns of DATASET with, for each, `arrow_typeof(col)` (the type
//    LanceDB's Rust reader gives, as DataFusion prints it) and `arrow_cast(col, T)` with
//    T that type with every LargeList made a List (which Arrow JS decodes). It prints
//    {"types": {column: DataFusion type}}, then one JSON object per row in the form of
//    `lancet cat`. The test fails on any value or type that differs from what was sent.
//  * `read-many` does `read` for each DATASET and its columns in one process (LanceDB's
//    startup dominates a read), each output after a line `#dataset DATASET`.
import * as path from "node:path";
import { arrow, buildTable, createDataset, fail, intArg, makeRng, openDataset, parseArgs, runMain, valueJson } from "./lib.mjs";

const A = arrow;
const Type = A.Type;
const f = (name, type, nullable = true) => new A.Field(name, type, nullable);

// ---- a minimal flatbuffer reader (little-endian tables, vtables, vectors)

class FB {
  constructor(buf, base) {
    this.v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.base = base;  // where the flatbuffer starts in buf
  }
  root() { return this.base + this.v.getUint32(this.base, true); }
  // Absolute position of field `i` of the table at `t`, or 0 when absent.
  field(t, i) {
    const vt = t - this.v.getInt32(t, true);
    if (4 + 2 * i >= this.v.getUint16(vt, true)) return 0;
    const o = this.v.getUint16(vt + 4 + 2 * i, true);
    return o ? t + o : 0;
  }
  table(t, i) { const p = this.field(t, i); return p ? p + this.v.getUint32(p, true) : 0; }
  // [count, position of element 0] of the vector in field i.
  vector(t, i) {
    const p = this.field(t, i);
    if (!p) return [0, 0];
    const v = p + this.v.getUint32(p, true);
    return [this.v.getUint32(v, true), v + 4];
  }
  tables(t, i) {
    const [n, p] = this.vector(t, i);
    return Array.from({ length: n }, (_, k) => p + 4 * k + this.v.getUint32(p + 4 * k, true));
  }
}

// Arrow flatbuffer field indexes (format/Schema.fbs, Message.fbs, File.fbs).
const FIELD_TYPE_TYPE = 2, FIELD_CHILDREN = 5, SCHEMA_FIELDS = 1;
const MESSAGE_HEADER_TYPE = 1, MESSAGE_HEADER = 2, MESSAGE_BODY_LENGTH = 3;
const RB_BUFFERS = 2, FOOTER_SCHEMA = 1, FOOTER_RECORD_BATCHES = 3, FOOTER_DICTIONARIES = 2;
const TYPE_LIST = 12, TYPE_LARGE_LIST = 21, HEADER_RECORD_BATCH = 3;

// Buffers a field of this Arrow JS type has in an IPC record batch (itself only).
function bufferCount(t) {
  switch (t.typeId) {
    case Type.Null: return 0;
    case Type.Struct: case Type.FixedSizeList: return 1;
    case Type.Utf8: case Type.Binary: case Type.LargeUtf8: case Type.LargeBinary: return 3;
    case Type.Dictionary: case Type.Map: case Type.Union: throw new Error(`large_list.mjs: no ${t} here`);
    default: return 2;  // validity + values, or validity + offsets
  }
}

// Per field (depth first): its flatbuffer Field table and whether it becomes large.
function walkFields(fb, fieldTables, jsFields, large, out) {
  if (fieldTables.length !== jsFields.length) throw new Error("schema mismatch");
  fieldTables.forEach((ft, k) => {
    const t = jsFields[k].type;
    const isLarge = t.typeId === Type.List && large.has(t);
    out.push({ ft, type: t, isLarge });
    walkFields(fb, fb.tables(ft, FIELD_CHILDREN), t.children ?? [], large, out);
  });
  return out;
}

function patchSchema(fb, schemaTable, schema, large) {
  const fields = walkFields(fb, fb.tables(schemaTable, SCHEMA_FIELDS), schema.fields, large, []);
  for (const fl of fields) {
    if (!fl.isLarge) continue;
    const p = fb.field(fl.ft, FIELD_TYPE_TYPE);
    if (!p || fb.v.getUint8(p) !== TYPE_LIST) throw new Error("expected a List field");
    fb.v.setUint8(p, TYPE_LARGE_LIST);  // List and LargeList are both empty tables
  }
  return fields;
}

// Arrow IPC file bytes of `table`, in which the List types in `large` are LargeLists.
export function largeListIpc(table, large) {
  const src = Buffer.from(A.tableToIPC(table, "file"));
  const out = [];
  let size = 0;
  const push = (b) => { out.push(b); size += b.length; };
  if (src.toString("latin1", 0, 6) !== "ARROW1") throw new Error("not an Arrow file");
  push(src.subarray(0, 8));
  const footerLen = src.readInt32LE(src.length - 10);
  const footerPos = src.length - 10 - footerLen;
  const footer = Buffer.from(src.subarray(footerPos, footerPos + footerLen));
  const ffb = new FB(footer, 0);
  const froot = ffb.root();
  const fields = patchSchema(ffb, ffb.table(froot, FOOTER_SCHEMA), table.schema, large);
  if (ffb.vector(froot, FOOTER_DICTIONARIES)[0] !== 0) throw new Error("no dictionaries here");
  // Blocks by source offset, so that the messages can be moved.
  const [nb, bp] = ffb.vector(froot, FOOTER_RECORD_BATCHES);
  const blocks = new Map();
  for (let k = 0; k < nb; k++) blocks.set(Number(ffb.v.getBigInt64(bp + 24 * k, true)), bp + 24 * k);
  // Buffer roles in a batch: for each field its buffers; offsets of large lists widen.
  const widen = [];
  for (const fl of fields) {
    const n = bufferCount(fl.type);
    for (let b = 0; b < n; b++) widen.push(fl.isLarge && b === 1);
  }
  let pos = 8;
  while (pos < footerPos) {
    let p = pos;
    if (src.readUInt32LE(p) === 0xffffffff) p += 4;
    const metaLen = src.readInt32LE(p);
    if (metaLen === 0) { push(src.subarray(pos, p + 4)); pos = p + 4; continue; }  // end of stream
    const meta = Buffer.from(src.subarray(p + 4, p + 4 + metaLen));
    const mfb = new FB(meta, 0);
    const m = mfb.root();
    const bodyLenPos = mfb.field(m, MESSAGE_BODY_LENGTH);
    const bodyLen = bodyLenPos ? Number(mfb.v.getBigInt64(bodyLenPos, true)) : 0;
    const body = src.subarray(p + 4 + metaLen, p + 4 + metaLen + bodyLen);
    const header = mfb.table(m, MESSAGE_HEADER);
    const newPos = size;
    let newBody = body;
    if (mfb.v.getUint8(mfb.field(m, MESSAGE_HEADER_TYPE)) === HEADER_RECORD_BATCH) {
      const [n, bufs] = mfb.vector(header, RB_BUFFERS);
      if (n !== widen.length) throw new Error(`record batch has ${n} buffers, expected ${widen.length}`);
      const parts = [];
      let at = 0;
      for (let k = 0; k < n; k++) {
        const off = Number(mfb.v.getBigInt64(bufs + 16 * k, true));
        const len = Number(mfb.v.getBigInt64(bufs + 16 * k + 8, true));
        let b = body.subarray(off, off + len);
        if (widen[k] && len > 0) {
          const w = Buffer.alloc(len * 2);
          for (let i = 0; i < len / 4; i++) w.writeBigInt64LE(BigInt(b.readInt32LE(4 * i)), 8 * i);
          b = w;
        }
        mfb.v.setBigInt64(bufs + 16 * k, BigInt(at), true);
        mfb.v.setBigInt64(bufs + 16 * k + 8, BigInt(b.length), true);
        parts.push(b);
        at += b.length;
        const pad = (8 - (at % 8)) % 8;
        if (pad) { parts.push(Buffer.alloc(pad)); at += pad; }
      }
      newBody = Buffer.concat(parts);
      mfb.v.setBigInt64(bodyLenPos, BigInt(newBody.length), true);
    } else {
      patchSchema(mfb, header, table.schema, large);
    }
    push(src.subarray(pos, p + 4));
    push(meta);
    push(newBody);
    const blk = blocks.get(pos);
    if (blk !== undefined) {
      ffb.v.setBigInt64(blk, BigInt(newPos), true);
      ffb.v.setBigInt64(blk + 16, BigInt(newBody.length), true);
    }
    pos = p + 4 + metaLen + bodyLen;
  }
  push(footer);
  const tail = Buffer.alloc(10);
  tail.writeInt32LE(footer.length, 0);
  tail.write("ARROW1", 4, "latin1");
  push(tail);
  return Buffer.concat(out, size);
}

// ---- values and types as lancet prints them

// The value of row i of Data d, as `lancet cat` prints it.
function catJson(d, i) {
  const t = d.type;
  if (t.typeId === Type.Null || !d.getValid(i)) return "null";
  switch (t.typeId) {
    case Type.List: {
      const parts = [];
      for (let k = d.valueOffsets[i]; k < d.valueOffsets[i + 1]; k++) parts.push(catJson(d.children[0], k));
      return `[${parts.join(",")}]`;
    }
    case Type.FixedSizeList: {
      const n = t.listSize;
      const parts = [];
      for (let k = 0; k < n; k++) parts.push(catJson(d.children[0], i * n + k));
      return `[${parts.join(",")}]`;
    }
    case Type.Struct:
      return `{${t.children.map((c, k) => `${JSON.stringify(c.name)}:${catJson(d.children[k], i)}`).join(",")}}`;
    default:
      return valueJson(d, i);
  }
}

// arrow::to_string of the type, with the Lists in `large` as large_lists.
function lancetType(t, large) {
  const child = (c) => `${c.name}: ${lancetType(c.type, large)}${c.nullable ? "" : " not null"}`;
  switch (t.typeId) {
    case Type.List: return `${large.has(t) ? "large_list" : "list"}<${child(t.children[0])}>`;
    case Type.FixedSizeList: return `fixed_size_list<${child(t.children[0])}>[${t.listSize}]`;
    case Type.Struct: return `struct<${t.children.map(child).join(", ")}>`;
    case Type.Int: return `${t.isSigned ? "" : "u"}int${t.bitWidth}`;
    case Type.Float: return `float${[16, 32, 64][t.precision]}`;
    case Type.Bool: return "bool";
    case Type.Utf8: return "utf8";
    case Type.Binary: return "binary";
    default: throw new Error(`no name for ${t}`);
  }
}

// ---- tables

const WORDS = ["", "a", "lance", "héllo", "日本語", "x".repeat(30), "zz"];

// 8 rows over large_list<int64>, <utf8>, <struct<.., large_list>>, <large_list>,
// <fixed_size_list>, a struct of a large_list, and a list of large_lists: nulls, empty
// lists, null items, null structs (from 2.1).
function fixedTable(large, version) {
  const L = (name, item, nullable = true) => {
    const t = new A.List(f(name, item, nullable));
    large.add(t);
    return t;
  };
  const lInt = L("item", new A.Int64());
  const lStr = L("item", new A.Utf8());
  const lInner = L("item", new A.Utf8());
  const lStruct = L("item", new A.Struct([f("a", new A.Int32()), f("s", lInner)]));
  const lLeaf = L("item", new A.Int32(), false);
  const lNested = L("item", lLeaf);
  const lFsl = L("item", new A.FixedSizeList(2, f("item", new A.Int16())));
  const lF64 = L("item", new A.Float64());
  const st = new A.Struct([f("x", lF64), f("y", new A.Bool())]);
  const lIn = L("item", new A.Int64());
  const mixed = new A.List(f("item", lIn));  // a list of large_lists
  const n = 8;
  const pick = (i, vals) => vals[i % vals.length];
  const cols = [
    { name: "id", type: new A.Int64(), nullable: false, values: Array.from({ length: n }, (_, i) => BigInt(i)) },
    { name: "ints", type: lInt, values: [[1n, null, -3n], null, [], [9223372036854775807n], [0n, 0n], [], [-9223372036854775808n, 5n, null, 7n], null] },
    { name: "strs", type: lStr, values: Array.from({ length: n }, (_, i) => (i === 2 ? null : i === 3 ? [] : WORDS.slice(i % 3, i % 3 + (i % 4)).concat(i % 2 ? [null] : []))) },
    { name: "structs", type: lStruct, values: Array.from({ length: n }, (_, i) => (i === 1 ? null : i === 4 ? [] : [
      { a: i, s: [pick(i, WORDS), null] }, i % 3 === 0 && version !== "2.0" ? null : { a: null, s: i % 2 ? null : [] }, { a: -i, s: [pick(i + 2, WORDS)] }].slice(0, 1 + (i % 3)))) },
    { name: "nested", type: lNested, values: [[[1, 2], [], null], null, [], [[3]], [null, [4, 5, 6]], [[]], [[7], [8], [9]], [null]] },
    { name: "fsl", type: lFsl, values: Array.from({ length: n }, (_, i) => (i === 5 ? null : Array.from({ length: i % 3 }, (_, k) => (k === 1 && i % 2 ? null : [i, k === 0 ? null : -k])))) },
    { name: "st", type: st, values: Array.from({ length: n }, (_, i) => ({ x: i === 2 ? null : Array.from({ length: i % 4 }, (_, k) => (k === 2 ? null : i * 0.5 - k)), y: i % 3 === 0 ? null : i % 2 === 0 })) },
    { name: "mixed", type: mixed, values: [[[1n], null, []], null, [], [[2n, 3n]], [[null]], [[], []], [[4n, 5n, 6n]], null] },
  ];
  return buildTable(cols);
}

// Random tables: an int64 `id`, then 1-3 columns nesting structs, lists and large_lists
// up to 3 levels deep over a few leaf types; each list is large with probability 2/3,
// and at least one per column.
const LEAVES = [() => new A.Int64(), () => new A.Int32(), () => new A.Utf8(), () => new A.Float64(), () => new A.Bool(),
                () => new A.Binary(), () => new A.FixedSizeList(2, f("item", new A.Int16())), () => new A.Uint8()];

function randomType(r, depth, large) {
  const kind = depth >= 3 ? 0 : r.int(0, 4);
  if (kind === 0) return r.pick(LEAVES)();
  if (kind === 4) {
    const n = r.int(1, 3);
    return new A.Struct(Array.from({ length: n }, (_, i) => f(`f${i}`, randomType(r, depth + 1, large))));
  }
  const t = new A.List(f("item", randomType(r, depth + 1, large), r.next() < 0.8));
  if (r.next() < 0.67) large.add(t);
  return t;
}

function hasLarge(t, large) { return large.has(t) || (t.children ?? []).some((c) => hasLarge(c.type, large)); }

function randomValue(r, t, nullable, structNulls) {
  if (nullable && r.next() < 0.15 && (t.typeId !== Type.Struct || structNulls)) return null;
  switch (t.typeId) {
    case Type.Bool: return r.next() < 0.5;
    case Type.Int: return t.bitWidth === 64 ? r.i64() : t.bitWidth === 32 ? r.int(-2147483648, 2147483647) : t.bitWidth === 16 ? r.int(-32768, 32767) : r.int(0, 255);
    case Type.Float: return (r.next() - 0.5) * 1e6;
    case Type.Utf8: return r.pick(WORDS);
    case Type.Binary: return new TextEncoder().encode(r.pick(WORDS));
    case Type.FixedSizeList: return Array.from({ length: t.listSize }, () => randomValue(r, t.children[0].type, true, structNulls));
    case Type.List: return Array.from({ length: r.int(0, 3) }, () => randomValue(r, t.children[0].type, t.children[0].nullable, structNulls));
    case Type.Struct: {
      const o = {};
      for (const c of t.children) o[c.name] = randomValue(r, c.type, c.nullable, structNulls);
      return o;
    }
    default: throw new Error(`no random values for ${t}`);
  }
}

function randomTable(r, version, large) {
  const rows = r.int(1, 30);
  const columns = [{ name: "id", type: new A.Int64(), nullable: false, values: Array.from({ length: rows }, (_, i) => BigInt(i)) }];
  for (let k = 0, n = r.int(1, 3); k < n; k++) {
    let t;
    do t = randomType(r, 0, large); while (!hasLarge(t, large));
    const nullable = r.next() < 0.85;
    columns.push({ name: `c${k}`, type: t, nullable, values: Array.from({ length: rows }, () => randomValue(r, t, nullable, version !== "2.0")) });
  }
  return buildTable(columns);
}

async function writeOne(dir, table, large, version) {
  await createDataset(dir, largeListIpc(table, large), version);
  const rows = [];
  const d = table.batches[0].data;
  for (let i = 0; i < table.numRows; i++)
    rows.push(`{${table.schema.fields.map((fl, k) => `${JSON.stringify(fl.name)}:${catJson(d.children[k], i)}`).join(",")}}`);
  const types = table.schema.fields.map((fl) => `type ${fl.name} ${lancetType(fl.type, large)}\n`);
  return `dataset ${dir}\n${types.join("")}${rows.map((l) => `row ${l}\n`).join("")}`;
}

async function write(out, args) {
  const version = args.version ?? "2.2";
  let text = "";
  const large = new Set();
  text += await writeOne(out, fixedTable(large, version), large, version);
  const cases = intArg(args, "cases", 0);
  const r = makeRng(intArg(args, "seed", 1));
  for (let c = 0; c < cases; c++) {
    const lg = new Set();
    text += await writeOne(path.join(`${out}-random`, `case-${c}`), randomTable(r, version, lg), lg, version);
  }
  await new Promise((resolve) => process.stdout.write(text, resolve));
}

async function read(dir, names) {
  const { table, cleanup } = await openDataset(dir);
  try {
    const typeSel = Object.fromEntries(names.map((n) => [n, `arrow_typeof(${n})`]));
    const typeRow = (await table.query().select(typeSel).limit(1).toArray())[0] ?? {};
    const sel = {};
    for (const n of names) {
      const dt = typeRow[n];
      sel[n] = dt && dt.includes("LargeList") ? `arrow_cast(${n}, '${dt.replaceAll("LargeList(", "List(")}')` : n;
    }
    const result = await table.query().select(sel).toArrow();
    let text = `${JSON.stringify({ types: typeRow })}\n`;
    for (const batch of result.batches)
      for (let i = 0; i < batch.numRows; i++)
        text += `{${batch.schema.fields.map((fl, k) => `${JSON.stringify(fl.name)}:${catJson(batch.data.children[k], i)}`).join(",")}}\n`;
    return text;
  } catch (err) {
    throw new Error(`${dir}: ${err?.message ?? err}`);
  } finally {
    table.close();
    cleanup();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [cmd, dir] = args._;
  let text;
  if (cmd === "write" && dir) await write(dir, args);
  else if (cmd === "read" && dir && args.columns) text = await read(dir, String(args.columns).split(","));
  else if (cmd === "read-many" && args._.length >= 3 && args._.length % 2 === 1) {
    text = "";
    for (let i = 1; i < args._.length; i += 2)
      text += `#dataset ${args._[i]}\n${await read(args._[i], String(args._[i + 1]).split(","))}`;
  } else fail("usage: large_list.mjs write|read|read-many DIR ...");
  if (text !== undefined) await new Promise((resolve) => process.stdout.write(text, resolve));
  return 0;
}

runMain(main);
