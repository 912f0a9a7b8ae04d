// Helpers for the dataset interop scripts (append_rows, delete_rows, filter,
// dataset_info, read_many, random_datasets): random values for any Arrow type that
// LanceDB's JS client handles, random schemas, appending Arrow data without the JS
// client's type sanitising, and writing canonical JSON (README.md) to a file.
import * as fs from "node:fs";
import { arrow, buildTable, writeRows } from "./lib.mjs";

const { Type } = arrow;
const A = arrow;

const TEXT = ["", "a", "lance", "héllo", "日本語", "emoji 🦀", "tab\tnew\nline", "\"quoted\"", "back\\slash"];

function randomText(r, maxLen) {
  if (r.next() < 0.3) return r.pick(TEXT);
  const n = r.int(0, maxLen);
  let s = "";
  for (let k = 0; k < n; k++) s += String.fromCharCode(r.int(0x20, 0x7e));
  return s;
}

// A random value of `type` in lib.mjs buildData's shapes. `nullable`: the value may be
// null (with probability opts.nullProbability); opts.structNulls: structs may be
// null (Lance 2.0 cannot store null structs).
export function randomValue(type, r, nullable, opts = {}) {
  const p = opts.nullProbability ?? 0.15;
  if (type.typeId === Type.Null) return null;
  if (nullable && (type.typeId !== Type.Struct || opts.structNulls) && r.next() < p) return null;
  switch (type.typeId) {
    case Type.Bool: return r.next() < 0.5;
    case Type.Int: {
      if (type.bitWidth === 64) return type.isSigned ? r.i64() : r.u64();
      const bits = type.bitWidth;
      return type.isSigned ? r.int(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) : r.int(0, 2 ** bits - 1);
    }
    case Type.Float:
      if (type.precision === A.Precision.HALF) return r.int(-4000, 4000) / 8;
      if (type.precision === A.Precision.SINGLE) return Math.fround((r.next() - 0.5) * 2e6);
      return (r.next() - 0.5) * 2e12;
    case Type.Date:
      return type.unit === A.DateUnit.DAY ? r.int(-20000, 30000) : BigInt(r.int(-20000, 30000)) * 86400000n;
    case Type.Time: {
      const perDay = [86400n, 86400000n, 86400000000n, 86400000000000n][type.unit];
      const v = r.bigBelow(perDay);
      return type.bitWidth === 32 ? Number(v) : v;
    }
    case Type.Timestamp:
    case Type.Duration:
      return BigInt(r.int(-2e9, 2e9)) * BigInt(r.int(1, 1000));
    case Type.Decimal: {
      const digits = Math.min(type.precision, 30);
      const v = r.bigBelow(10n ** BigInt(digits));
      return r.next() < 0.5 ? -v : v;
    }
    case Type.Utf8:
    case Type.LargeUtf8:
      return randomText(r, 20);
    case Type.Binary:
    case Type.LargeBinary:
      return r.bytes(r.int(0, 16));
    case Type.FixedSizeBinary:
      return r.bytes(type.byteWidth);
    case Type.FixedSizeList: {
      const c = type.children[0];
      return Array.from({ length: type.listSize }, () => randomValue(c.type, r, c.nullable, opts));
    }
    case Type.List: {
      const c = type.children[0];
      return Array.from({ length: r.int(0, 4) }, () => randomValue(c.type, r, c.nullable, opts));
    }
    case Type.Struct: {
      const o = {};
      for (const c of type.children) o[c.name] = randomValue(c.type, r, c.nullable, opts);
      return o;
    }
    default:
      throw new Error(`randomValue: unsupported arrow type ${type}`);
  }
}

// Leaf types LanceDB's JS client writes and reads back (large_list: it cannot).
export function leafTypes() {
  return [
    new A.Null(), new A.Bool(), new A.Int8(), new A.Int16(), new A.Int32(), new A.Int64(), new A.Uint8(),
    new A.Uint16(), new A.Uint32(), new A.Uint64(), new A.Float16(), new A.Float32(), new A.Float64(),
    new A.DateDay(), new A.DateMillisecond(), new A.TimeSecond(), new A.TimeMillisecond(), new A.TimeMicrosecond(),
    new A.TimeNanosecond(), new A.TimestampSecond(), new A.TimestampMillisecond("UTC"), new A.TimestampMicrosecond(),
    new A.TimestampNanosecond("America/New_York"), new A.DurationSecond(), new A.DurationNanosecond(),
    new A.Decimal(4, 20, 128), new A.Decimal(6, 50, 256), new A.Utf8(), new A.LargeUtf8(), new A.Binary(),
    new A.LargeBinary(), new A.FixedSizeBinary(5),
  ];
}

// A random type of nesting depth at most maxDepth (0: a leaf).
export function randomType(r, depth, maxDepth) {
  const leaves = leafTypes();
  const kind = depth >= maxDepth ? 0 : r.int(0, 9);
  const f = (name, t, nullable = true) => new A.Field(name, t, nullable);
  switch (kind) {
    case 6:
    case 7:
      return new A.List(f("item", randomType(r, depth + 1, maxDepth), r.next() < 0.8));
    case 8: {
      // Lance keeps only the item type of a fixed-size list: leaves other than null.
      const item = leaves[r.int(1, leaves.length - 1)];
      return new A.FixedSizeList(r.int(1, 4), f("item", item, true));
    }
    case 9: {
      const n = r.int(1, 3);
      return new A.Struct(Array.from({ length: n }, (_, i) => f(`f${i}`, randomType(r, depth + 1, maxDepth), true)));
    }
    default:
      return leaves[r.int(0, leaves.length - 1)];
  }
}

// The same type built with this module's apache-arrow. LanceDB's client loads the
// CommonJS build of apache-arrow and lib.mjs the ES module build: their classes
// differ, and apache-arrow's visitors refuse the other build's types.
export function localType(t) {
  const kids = () => t.children.map(localField);
  switch (t.typeId) {
    case Type.Null: return new A.Null();
    case Type.Bool: return new A.Bool();
    case Type.Int: return new A.Int(t.isSigned, t.bitWidth);
    case Type.Float: return new A.Float(t.precision);
    case Type.Date: return new A.Date_(t.unit);
    case Type.Time: return new A.Time(t.unit, t.bitWidth);
    case Type.Timestamp: return new A.Timestamp(t.unit, t.timezone);
    case Type.Duration: return new A.Duration(t.unit);
    case Type.Decimal: return new A.Decimal(t.scale, t.precision, t.bitWidth);
    case Type.Utf8: return new A.Utf8();
    case Type.LargeUtf8: return new A.LargeUtf8();
    case Type.Binary: return new A.Binary();
    case Type.LargeBinary: return new A.LargeBinary();
    case Type.FixedSizeBinary: return new A.FixedSizeBinary(t.byteWidth);
    case Type.FixedSizeList: return new A.FixedSizeList(t.listSize, kids()[0]);
    case Type.List: return new A.List(kids()[0]);
    case Type.Struct: return new A.Struct(kids());
    default: throw new Error(`localType: unsupported arrow type ${t}`);
  }
}
export function localField(f) {
  return new A.Field(f.name, localType(f.type), f.nullable, f.metadata ? new Map(f.metadata) : new Map());
}
export function localSchema(s) {
  return new A.Schema(s.fields.map(localField), s.metadata ? new Map(s.metadata) : new Map());
}

// Columns [{name, type, nullable, values}] for a schema and row count.
export function randomColumns(fields, rows, r, opts = {}) {
  return fields.map((fl) => ({
    name: fl.name,
    type: fl.type,
    nullable: fl.nullable,
    metadata: fl.metadata,
    values: Array.from({ length: rows }, (_, i) =>
      opts.ids && fl.name === "id" ? opts.ids(i) : randomValue(fl.type, r, fl.nullable, opts)),
  }));
}

// Appends an arrow Table to an open LanceDB table. The IPC bytes go to the native
// add, as lib.mjs's createDataset does for createTable: the JS client's sanitize step
// refuses large_utf8 / large_binary, which Lance itself takes.
export async function appendTable(table, data) {
  const ipc = Buffer.from(arrow.tableToIPC(data, "file"));
  await table.inner.add(ipc, "append", undefined);
}

// Writes the rows of an arrow Table as canonical JSON Lines to `file`, and a last line
// `tail` (an object) when given.
export function writeRowsFile(file, table, tail) {
  const parts = [];
  writeRows(table, (s) => parts.push(s));
  if (tail) parts.push(`${JSON.stringify(tail)}\n`);
  fs.writeFileSync(file, parts.join(""));
}

export { buildTable };
