// Usage:
//   node compact_check.mjs info DATASET
//       {"version", "countRows", "ids": [sorted id values], "indices": [{name, indexType,
//        indexUuid, stats}]}
//   node compact_check.mjs search DATASET --queries FILE --dim D [--k 10] [--nprobes N]
//       [--explain]
//       one JSON line per query: {"query": i, "ids": [id values in result order]}
//       (--explain first prints {"plan": "..."} of the first query)
//   node compact_check.mjs optimize DATASET
//       LanceDB's table.optimize() (compaction, then index optimisation); prints
//       {"version", "compaction": {...}, "countRows"}
//   node compact_check.mjs create DATASET --vectors FILE --dim D --fragments F
//       [--partitions P] [--sub-vectors M] [--delete-mod K]
//       LanceDB writes `id: int64`, `vector: fixed_size_list<float32, D>` in F appends
//       (one fragment each), builds IVF_PQ on `vector`, then deletes the rows with
//       id % K == 0 (K = 0: none). Prints {"version", "countRows"}.
//
// The compaction interop test (tests/test_interop_compact.cpp) drives it.
import * as fs from "node:fs";
import { arrow, createDataset, fail, intArg, lancedb, openDataset, parseArgs, runMain } from "./lib.mjs";

function readF32(file, dim) {
  const buf = fs.readFileSync(file);
  if (buf.length % (4 * dim) !== 0) throw new Error(`${file}: ${buf.length} bytes is not rows of ${dim} float32`);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

// id: int64 (first, first + 1, ...), vector: fixed_size_list<float32, dim>.
function idVectorTable(values, dim, first) {
  const rows = values.length / dim;
  const itemType = new arrow.Float32();
  const type = new arrow.FixedSizeList(dim, new arrow.Field("item", itemType, true));
  const child = arrow.makeData({ type: itemType, length: values.length, nullCount: 0, data: values });
  const vec = arrow.makeData({ type, length: rows, nullCount: 0, child });
  const idValues = BigInt64Array.from({ length: rows }, (_, i) => BigInt(first + i));
  const ids = arrow.makeData({ type: new arrow.Int64(), length: rows, nullCount: 0, data: idValues });
  const schema = new arrow.Schema([new arrow.Field("id", new arrow.Int64(), false), new arrow.Field("vector", type, true)]);
  return new arrow.Table(schema, new arrow.RecordBatch(schema, arrow.makeData({
    type: new arrow.Struct(schema.fields), length: rows, nullCount: 0, children: [ids, vec] })));
}

const json = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));

async function info(dir) {
  const { table, cleanup } = await openDataset(dir);
  try {
    const rows = await table.query().select(["id"]).toArray();
    const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    const indices = [];
    for (const i of await table.listIndices()) {
      indices.push({ name: i.name, indexType: i.indexType, indexUuid: i.indexUuid, stats: await table.indexStats(i.name) });
    }
    process.stdout.write(`${json({ version: await table.version(), countRows: await table.countRows(), ids, indices })}\n`);
  } finally {
    table.close();
    cleanup();
  }
}

async function search(dir, args) {
  const dim = intArg(args, "dim", 0);
  if (dim <= 0 || !args.queries) fail("search needs --queries FILE --dim D");
  const q = readF32(args.queries, dim);
  const k = intArg(args, "k", 10);
  const { table, cleanup } = await openDataset(dir);
  try {
    const build = (v) => {
      let query = table.query().nearestTo(Array.from(v)).column("vector").limit(k).select(["id", "_distance"]);
      if (args.nprobes !== undefined) query = query.nprobes(intArg(args, "nprobes", 1));
      return query;
    };
    const n = q.length / dim;
    if (args.explain && n > 0) process.stdout.write(`${json({ plan: await build(q.subarray(0, dim)).explainPlan(true) })}\n`);
    for (let i = 0; i < n; i++) {
      const rows = await build(q.subarray(i * dim, (i + 1) * dim)).toArray();
      process.stdout.write(`${json({ query: i, ids: rows.map((r) => Number(r.id)) })}\n`);
    }
  } finally {
    table.close();
    cleanup();
  }
}

async function optimize(dir) {
  const { table, cleanup } = await openDataset(dir);
  try {
    const stats = await table.optimize();
    process.stdout.write(`${json({ version: await table.version(), compaction: stats.compaction, countRows: await table.countRows() })}\n`);
  } finally {
    table.close();
    cleanup();
  }
}

async function create(dir, args) {
  const dim = intArg(args, "dim", 0);
  const frags = intArg(args, "fragments", 1);
  if (dim <= 0 || !args.vectors || frags < 1) fail("create needs --vectors FILE --dim D --fragments F");
  const values = readF32(args.vectors, dim);
  const rows = values.length / dim;
  const per = Math.ceil(rows / frags);
  await createDataset(dir, idVectorTable(values.subarray(0, per * dim), dim, 0), "2.2");
  const { table, cleanup } = await openDataset(dir);
  try {
    for (let f = 1; f * per < rows; f++) {
      const end = Math.min(rows, (f + 1) * per);
      await table.add(idVectorTable(values.subarray(f * per * dim, end * dim), dim, f * per));
    }
    await table.createIndex("vector", { config: lancedb.Index.ivfPq({
      numPartitions: intArg(args, "partitions", 4), numSubVectors: intArg(args, "sub-vectors", 4) }) });
    const mod = intArg(args, "delete-mod", 0);
    if (mod > 0) await table.delete(`id % ${mod} = 0`);
    process.stdout.write(`${json({ version: await table.version(), countRows: await table.countRows() })}\n`);
  } finally {
    table.close();
    cleanup();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ["explain"]);
  const [cmd, dir] = args._;
  if (!cmd || !dir) fail("usage: compact_check.mjs info|search|optimize|create DATASET [options]");
  if (cmd === "info") await info(dir);
  else if (cmd === "search") await search(dir, args);
  else if (cmd === "optimize") await optimize(dir);
  else if (cmd === "create") await create(dir, args);
  else fail(`unknown command '${cmd}'`);
  return 0;
}

runMain(main);
