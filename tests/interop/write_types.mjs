// Usage: node write_types.mjs OUT_DIR --version 2.0|2.1|2.2 [--rows N] [--seed S]
//                             [--table types|special|big] [--large-list]
// Has LanceDB (Lance 12) write a dataset at OUT_DIR covering every Arrow type
// (--table types), encoding-sensitive patterns (--table special), or a large
// int64/float32/string/vector table (--table big). Prints JSON: the columns
// written, the columns LanceDB refused (with its exact error) and the row count.
// --large-list (types table) adds `large_list_utf8`: apache-arrow 18 for JS has no
// LargeList, so the column is written as list<utf8> and then cast by Lance itself
// (a second dataset version whose new data file holds only that column). JS cannot
// read large_list back: read that dataset with --columns that leave it out.
import { arrow, buildTable, createDataset, fail, intArg, makeRng, openDataset, parseArgs, runMain } from "./lib.mjs";

const A = arrow;
const f = (name, type, nullable = true) => new A.Field(name, type, nullable);

// Null patterns depend on the row index only, so a 10-row table has every case.
const nullAt = (i, k) => i % 7 === k; // one row in seven
const isNullList = (i) => i % 10 === 3;
const isEmptyList = (i) => i % 10 === 6;

const SAMPLE_TEXT = ["", "a", "lance", "héllo", "日本語", "emoji 🦀", "x".repeat(13), "tab\tnew\nline", "\"quoted\"", "zz"];

function str(r, maxLen) {
  if (r.next() < 0.3) return r.pick(SAMPLE_TEXT);
  const n = r.int(0, maxLen);
  let s = "";
  for (let k = 0; k < n; k++) s += String.fromCharCode(r.int(0x20, 0x7e));
  return s;
}

// Every column: [name, arrow type, nullable, (i, r) => value]. Values follow
// lib.mjs buildData's shapes.
function typesColumns() {
  const D = 86400000n;
  const structType = new A.Struct([
    f("a", new A.Int32()),
    f("b", new A.Utf8()),
    f("c", new A.Struct([f("d", new A.Float64())])),
  ]);
  const itemStruct = new A.Struct([f("x", new A.Int32()), f("y", new A.Utf8())]);
  const n = (k, g) => (i, r) => (nullAt(i, k) ? null : g(i, r));
  return [
    ["null", new A.Null(), true, () => null],
    ["bool", new A.Bool(), true, n(1, (i, r) => r.next() < 0.5)],
    ["int8", new A.Int8(), true, n(2, (i, r) => r.int(-128, 127))],
    ["int16", new A.Int16(), true, n(3, (i, r) => r.int(-32768, 32767))],
    ["int32", new A.Int32(), true, n(4, (i, r) => r.int(-2147483648, 2147483647))],
    ["int32_nonnull", new A.Int32(), false, (i, r) => r.int(-2147483648, 2147483647)],
    ["int64", new A.Int64(), true, n(5, (i, r) => r.i64())],
    ["uint8", new A.Uint8(), true, n(6, (i, r) => r.int(0, 255))],
    ["uint16", new A.Uint16(), true, n(0, (i, r) => r.int(0, 65535))],
    ["uint32", new A.Uint32(), true, n(1, (i, r) => r.u32())],
    ["uint64", new A.Uint64(), true, n(2, (i, r) => r.u64())],
    ["float16", new A.Float16(), true, n(3, (i, r) => (r.next() - 0.5) * 200)],
    ["float32", new A.Float32(), true, n(4, (i, r) => Math.fround((r.next() - 0.5) * 2e6))],
    ["float64", new A.Float64(), true, n(5, (i, r) => (r.next() - 0.5) * 2e12)],
    ["date32", new A.DateDay(), true, n(6, (i, r) => r.int(-20000, 30000))],
    ["date64", new A.DateMillisecond(), true, n(0, (i, r) => BigInt(r.int(-20000, 30000)) * D)],
    ["time32_s", new A.TimeSecond(), true, n(1, (i, r) => r.int(0, 86399))],
    ["time32_ms", new A.TimeMillisecond(), true, n(2, (i, r) => r.int(0, 86399999))],
    ["time64_us", new A.TimeMicrosecond(), true, n(3, (i, r) => BigInt(r.int(0, 86399999999)))],
    ["time64_ns", new A.TimeNanosecond(), true, n(4, (i, r) => BigInt(r.int(0, 86399999999)) * 1000n + BigInt(r.int(0, 999)))],
    ["ts_s", new A.TimestampSecond(), true, n(5, (i, r) => BigInt(r.int(0, 2e9)))],
    ["ts_ms", new A.TimestampMillisecond(), true, n(6, (i, r) => BigInt(r.int(0, 2e12)))],
    ["ts_us", new A.TimestampMicrosecond(), true, n(0, (i, r) => BigInt(r.int(0, 2e15)))],
    ["ts_ns", new A.TimestampNanosecond(), true, n(1, (i, r) => BigInt(r.int(0, 2e15)) * 1000n)],
    ["ts_s_tz", new A.TimestampSecond("UTC"), true, n(2, (i, r) => BigInt(r.int(0, 2e9)))],
    ["ts_ms_tz", new A.TimestampMillisecond("UTC"), true, n(3, (i, r) => BigInt(r.int(0, 2e12)))],
    ["ts_us_tz", new A.TimestampMicrosecond("UTC"), true, n(4, (i, r) => BigInt(r.int(0, 2e15)))],
    ["ts_ns_tz", new A.TimestampNanosecond("America/New_York"), true, n(5, (i, r) => BigInt(r.int(0, 2e15)) * 1000n)],
    ["duration_s", new A.DurationSecond(), true, n(6, (i, r) => BigInt(r.int(-1e9, 1e9)))],
    ["duration_ms", new A.DurationMillisecond(), true, n(0, (i, r) => BigInt(r.int(-1e12, 1e12)))],
    ["duration_us", new A.DurationMicrosecond(), true, n(1, (i, r) => r.i64())],
    ["duration_ns", new A.DurationNanosecond(), true, n(2, (i, r) => r.i64())],
    ["decimal128", new A.Decimal(4, 20, 128), true, n(3, (i, r) => r.bigBelow(2n * 10n ** 20n) - 10n ** 20n + 1n)],
    ["decimal256", new A.Decimal(6, 50, 256), true, n(4, (i, r) => r.bigBelow(2n * 10n ** 50n) - 10n ** 50n + 1n)],
    ["utf8", new A.Utf8(), true, n(5, (i, r) => str(r, 20))],
    ["utf8_nonnull", new A.Utf8(), false, (i, r) => str(r, 20)],
    ["large_utf8", new A.LargeUtf8(), true, n(6, (i, r) => str(r, 20))],
    ["binary", new A.Binary(), true, n(0, (i, r) => r.bytes(r.int(0, 16)))],
    ["large_binary", new A.LargeBinary(), true, n(1, (i, r) => r.bytes(r.int(0, 16)))],
    ["fixed_size_binary", new A.FixedSizeBinary(16), true, n(2, (i, r) => r.bytes(16))],
    ["vector", new A.FixedSizeList(8, f("item", new A.Float32(), true)), true,
      n(3, (i, r) => Array.from({ length: 8 }, () => Math.fround(r.next() * 2 - 1)))],
    ["vector_nonnull", new A.FixedSizeList(8, f("item", new A.Float32(), false)), false,
      (i, r) => Array.from({ length: 8 }, () => Math.fround(r.next() * 2 - 1))],
    ["vector_item_nulls", new A.FixedSizeList(8, f("item", new A.Float32(), true)), true,
      n(4, (i, r) => Array.from({ length: 8 }, (_, k) => ((i + k) % 5 === 0 ? null : Math.fround(r.next() * 2 - 1))))],
    ["list_int32", new A.List(f("item", new A.Int32())), true,
      (i, r) => (isNullList(i) ? null : isEmptyList(i) ? [] :
        Array.from({ length: r.int(1, 5) }, (_, k) => ((i + k) % 4 === 0 ? null : r.int(-1000, 1000))))],
    ["list_utf8", new A.List(f("item", new A.Utf8())), true,
      (i, r) => (isNullList(i) ? null : isEmptyList(i) ? [] :
        Array.from({ length: r.int(1, 4) }, (_, k) => ((i + k) % 4 === 1 ? null : str(r, 10))))],
    // Lance 2.0 refuses null structs (at any depth), so the struct columns come in
    // two flavours: nulls in the leaves only, and nulls at every level.
    ["struct", structType, true, (i, r) => ({
      a: i % 6 === 1 ? null : r.int(-1e6, 1e6),
      b: i % 6 === 2 ? null : str(r, 12),
      c: { d: i % 6 === 4 ? null : r.next() * 100 },
    })],
    ["struct_nulls", structType, true, (i, r) => (nullAt(i, 5) ? null : {
      a: i % 6 === 1 ? null : r.int(-1e6, 1e6),
      b: i % 6 === 2 ? null : str(r, 12),
      c: i % 6 === 3 ? null : { d: i % 6 === 4 ? null : r.next() * 100 },
    })],
    ["list_struct", new A.List(f("item", itemStruct)), true,
      (i, r) => (isNullList(i) ? null : isEmptyList(i) ? [] :
        Array.from({ length: r.int(1, 3) }, (_, k) => ({
          x: (i + k) % 3 === 1 ? null : r.int(0, 1e6), y: str(r, 8) })))],
    ["list_struct_nulls", new A.List(f("item", itemStruct)), true,
      (i, r) => (isNullList(i) ? null : isEmptyList(i) ? [] :
        Array.from({ length: r.int(1, 3) }, (_, k) => ((i + k) % 5 === 2 ? null : {
          x: (i + k) % 3 === 1 ? null : r.int(0, 1e6), y: str(r, 8) })))],
    ["list_list_int32", new A.List(f("item", new A.List(f("item", new A.Int32())))), true,
      (i, r) => (isNullList(i) ? null : isEmptyList(i) ? [] :
        Array.from({ length: r.int(1, 3) }, (_, k) => ((i + k) % 4 === 2 ? null : (i + k) % 4 === 3 ? [] :
          Array.from({ length: r.int(1, 3) }, () => r.int(0, 99)))))],
  ];
}

// Columns whose encodings depend on the data's shape (constant, sorted, low cardinality...).
function specialColumns() {
  const cities = ["Paris", "Tokyo", "Lima", "Oslo", "Cairo"];
  return [
    ["all_null_int32", new A.Int32(), true, () => null],
    ["all_null_utf8", new A.Utf8(), true, () => null],
    ["const_int32", new A.Int32(), true, () => 42],
    ["const_utf8", new A.Utf8(), true, () => "constant"],
    ["low_card_utf8", new A.Utf8(), true, (i, r) => r.pick(cities)],
    ["sorted_int64", new A.Int64(), false, (i) => 1000000n + BigInt(i) * 3n],
    ["small_int32", new A.Int32(), false, (i, r) => r.int(0, 100)],
    ["small_int32_nulls", new A.Int32(), true, (i, r) => (nullAt(i, 0) ? null : r.int(0, 100))],
    ["bool_all_true", new A.Bool(), false, () => true],
    ["long_utf8", new A.Utf8(), true, (i, r) => (nullAt(i, 1) ? null : "long-".repeat(r.int(50, 80)) + i)],
    ["uuid_like", new A.FixedSizeBinary(16), false, (i, r) => r.bytes(16)],
    ["row_num", new A.Int64(), false, (i) => BigInt(i)],
  ];
}

// A large table built straight into typed arrays (generic builders are too slow for it).
function bigTable(rows, seed) {
  const r = makeRng(seed);
  const ids = new BigInt64Array(rows);
  const xs = new Float32Array(rows);
  const vec = new Float32Array(rows * 128);
  const offsets = new Int32Array(rows + 1);
  const bytes = new Uint8Array(rows * 14);
  for (let i = 0; i < rows; i++) {
    ids[i] = BigInt(i) * 7n + BigInt(r.int(0, 6));
    xs[i] = Math.fround(r.next() * 1000);
    for (let k = 0; k < 14; k++) bytes[i * 14 + k] = 0x61 + r.int(0, 25);
    offsets[i + 1] = (i + 1) * 14;
  }
  for (let k = 0; k < vec.length; k++) vec[k] = r.next() * 2 - 1;
  const vecType = new A.FixedSizeList(128, f("item", new A.Float32(), true));
  const cols = [
    { name: "id", type: new A.Int64(), nullable: false, data: A.makeData({ type: new A.Int64(), length: rows, nullCount: 0, data: ids }) },
    { name: "x", type: new A.Float32(), nullable: true, data: A.makeData({ type: new A.Float32(), length: rows, nullCount: 0, data: xs }) },
    { name: "s", type: new A.Utf8(), nullable: true, data: A.makeData({ type: new A.Utf8(), length: rows, nullCount: 0, valueOffsets: offsets, data: bytes }) },
    { name: "vector", type: vecType, nullable: true, data: A.makeData({ type: vecType, length: rows, nullCount: 0,
      child: A.makeData({ type: new A.Float32(), length: rows * 128, nullCount: 0, data: vec }) }) },
  ];
  return cols.map((c) => ({ ...c, values: { length: rows } }));
}

function materialise(specs, rows, seed) {
  // One RNG per column so that dropping a refused column leaves the others unchanged.
  return specs.map(([name, type, nullable, gen], k) => {
    const r = makeRng(seed * 1000003 + k);
    const values = Array.from({ length: rows }, (_, i) => gen(i, r));
    return { name, type, nullable, values };
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ["large-list"]);
  const [outDir] = args._;
  if (!outDir || args._.length !== 1) fail("usage: write_types.mjs OUT_DIR --version 2.0|2.1|2.2 [--rows N] [--seed S] [--table types|special|big]");
  const version = args.version;
  if (!["2.0", "2.1", "2.2"].includes(version)) fail(`--version must be 2.0, 2.1 or 2.2, got '${version}'`);
  const kind = args.table ?? "types";
  const seed = intArg(args, "seed", 1);

  let columns;
  if (kind === "types") columns = materialise(typesColumns(), intArg(args, "rows", 1000), seed);
  else if (kind === "special") columns = materialise(specialColumns(), intArg(args, "rows", 5000), seed);
  else if (kind === "big") columns = bigTable(intArg(args, "rows", 1000000), seed);
  else fail(`--table must be types, special or big, got '${kind}'`);

  // Try everything at once; on failure find the refused columns one by one.
  const largeList = Boolean(args["large-list"]);
  if (largeList && kind !== "types") fail("--large-list applies to --table types only");
  if (largeList) {
    const r = makeRng(seed * 1000003 + 999);
    const rows = columns[0].values.length;
    columns.push({ name: "large_list_utf8", type: new A.List(f("item", new A.Utf8())), nullable: true,
      values: Array.from({ length: rows }, (_, i) => (isNullList(i) ? null : isEmptyList(i) ? [] :
        Array.from({ length: r.int(1, 4) }, (_, k) => ((i + k) % 4 === 1 ? null : str(r, 10))))) });
  }
  const refused = kind === "types" && !largeList ? [{ column: "large_list_utf8", type: "LargeList<Utf8>",
    error: "not attempted (pass --large-list): apache-arrow 18 for JavaScript has no LargeList type" }] : [];
  let accepted = columns;
  try {
    const rows = await createDataset(outDir, buildTable(accepted), version);
    if (largeList) await castToLargeList(outDir, "large_list_utf8");
    return report(outDir, version, kind, accepted, refused, rows);
  } catch (err) {
    if (columns.length === 1) throw err;
  }
  accepted = [];
  for (const c of columns) {
    try {
      await createDataset(`${outDir}.probe`, buildTable([c]), version);
      accepted.push(c);
    } catch (err) {
      refused.push({ column: c.name, type: String(c.type), error: String(err && err.message ? err.message : err) });
    }
  }
  const { rmSync } = await import("node:fs");
  rmSync(`${outDir}.probe`, { recursive: true, force: true });
  const rows = await createDataset(outDir, buildTable(accepted), version);
  if (largeList && accepted.some((c) => c.name === "large_list_utf8")) await castToLargeList(outDir, "large_list_utf8");
  return report(outDir, version, kind, accepted, refused, rows);
}

// Lance casts list<utf8> to large_list<utf8> when given its JSON type form through the
// native alterColumns (the JS wrapper would need an arrow JS LargeList type).
async function castToLargeList(dir, column) {
  const { table, cleanup } = await openDataset(dir);
  try {
    const dataType = JSON.stringify({ type: "large_list", fields: [{ name: "item", type: { type: "string" }, nullable: true }] });
    await table.inner.alterColumns([{ path: column, dataType }]);
  } finally {
    table.close();
    cleanup();
  }
}

function report(outDir, version, kind, accepted, refused, rows) {
  process.stdout.write(`${JSON.stringify({
    dataset: outDir, version, table: kind, rows,
    columns: accepted.map((c) => ({ name: c.name, type: String(c.type), nullable: c.nullable })),
    refused,
  })}\n`);
  return 0;
}

runMain(main);
