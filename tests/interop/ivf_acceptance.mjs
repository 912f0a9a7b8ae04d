// LanceDB's side of the IVF acceptance checks (tests/test_interop_ivf.cpp) and of
// bench/bench_ivf.cpp. One script, three commands:
//
//   node ivf_acceptance.mjs create DATASET --vectors FILE --dim D [--element float32|float16]
//        [--fragment-rows N] [--delete PREDICATE] [--storage 2.0|2.1|2.2]
//     Writes DATASET (replacing it) with `id: int64` (0, 1, ... in file order) and
//     `vector: fixed_size_list<float32|float16, D>` from FILE (raw little-endian
//     float32, rows x D), one fragment per N rows (the first by createTable, the others
//     appended), then deletes the rows matching PREDICATE. Prints {"version",
//     "countRows", "fragments"}.
//
//   node ivf_acceptance.mjs index DATASET --type ivf_flat|ivf_pq|ivf_rq|hnsw_sq|hnsw_pq
//        --partitions P [--metric l2|cosine|dot] [--sub-vectors M] [--bits B]
//        [--sample-rate R] [--max-iterations I] [--m M] [--ef-construction E]
//     LanceDB's createIndex on `vector`, timed. Prints {"seconds", "indices": [...]}.
//
//   node ivf_acceptance.mjs search DATASET --queries FILE --dim D [--k 10] [--nprobes N]
//        [--refine R] [--ef E] [--metric M] [--bypass] [--plan]
//     One vectorSearch per query (FILE as above). With --plan first prints
//     {"explain": explainPlan(true), "analyze": analyzePlan()} of the first query.
//     Then one line per query {"q", "rowids": ["..."], "distances": [...]} and last
//     {"seconds", "qps"} (the queries only, one at a time, plans excluded).
import * as fs from "node:fs";
import { arrow, createDataset, fail, intArg, lancedb, openDataset, parseArgs, runMain } from "./lib.mjs";

function readF32(file, dim) {
  const buf = fs.readFileSync(file);
  if (dim <= 0 || buf.length % (4 * dim) !== 0) fail(`${file}: ${buf.length} bytes is not a whole number of ${dim}-float rows`);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

// Rows [first, first + rows) of values as an Arrow table (id, vector).
function vectorTable(values, dim, first, rows, element) {
  const itemType = element === "float16" ? new arrow.Float16() : new arrow.Float32();
  const type = new arrow.FixedSizeList(dim, new arrow.Field("item", itemType, true));
  const slice = values.subarray(first * dim, (first + rows) * dim);
  let data = slice;
  if (element === "float16") {
    data = new Uint16Array(slice.length);
    for (let i = 0; i < slice.length; i++) data[i] = arrow.util.float64ToUint16(slice[i]);
  }
  const child = arrow.makeData({ type: itemType, length: slice.length, nullCount: 0, data });
  const vec = arrow.makeData({ type, length: rows, nullCount: 0, child });
  const ids = arrow.makeData({ type: new arrow.Int64(), length: rows, nullCount: 0,
    data: BigInt64Array.from({ length: rows }, (_, i) => BigInt(first + i)) });
  const fields = [new arrow.Field("id", new arrow.Int64(), false), new arrow.Field("vector", type, true)];
  const schema = new arrow.Schema(fields);
  const batch = arrow.makeData({ type: new arrow.Struct(fields), length: rows, nullCount: 0, children: [ids, vec] });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, batch)]);
}

async function create(args) {
  const dim = intArg(args, "dim", 0);
  if (!args.vectors) fail("create needs --vectors FILE");
  const element = args.element ?? "float32";
  if (element !== "float32" && element !== "float16") fail(`--element must be float32 or float16, got '${element}'`);
  const values = readF32(args.vectors, dim);
  const n = values.length / dim;
  const per = intArg(args, "fragment-rows", n) || n;
  await createDataset(args._[1], vectorTable(values, dim, 0, Math.min(per, n), element), args.storage ?? "2.0");
  const { table, cleanup } = await openDataset(args._[1]);
  try {
    for (let first = per; first < n; first += per) await table.add(vectorTable(values, dim, first, Math.min(per, n - first), element));
    if (args.delete) await table.delete(args.delete);
    const stats = await table.stats();
    const out = { version: await table.version(), countRows: await table.countRows(),
      fragments: stats.fragmentStats.numFragments };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
}

async function index(args) {
  const opt = (k, v) => (v === undefined ? {} : { [k]: Number(v) });
  const common = {
    ...opt("numPartitions", args.partitions),
    ...(args.metric ? { distanceType: args.metric } : {}),
    ...opt("maxIterations", args["max-iterations"]),
    ...opt("sampleRate", args["sample-rate"]),
  };
  let config;
  switch (args.type) {
    case "ivf_flat": config = lancedb.Index.ivfFlat(common); break;
    case "ivf_pq": config = lancedb.Index.ivfPq({ ...common, ...opt("numSubVectors", args["sub-vectors"]), ...opt("numBits", args.bits) }); break;
    case "ivf_rq": config = lancedb.Index.ivfRq({ ...common, ...opt("numBits", args.bits) }); break;
    case "hnsw_sq": config = lancedb.Index.hnswSq({ ...common, ...opt("m", args.m), ...opt("efConstruction", args["ef-construction"]) }); break;
    case "hnsw_pq": config = lancedb.Index.hnswPq({ ...common, ...opt("numSubVectors", args["sub-vectors"]),
      ...opt("m", args.m), ...opt("efConstruction", args["ef-construction"]) }); break;
    default: fail(`--type must be ivf_flat, ivf_pq, ivf_rq, hnsw_sq or hnsw_pq (LanceDB 0.39's Node API builds no IVF_SQ), got '${args.type}'`);
  }
  const { table, cleanup } = await openDataset(args._[1]);
  try {
    const t0 = process.hrtime.bigint();
    await table.createIndex("vector", { config });
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const indices = [];
    for (const i of await table.listIndices()) indices.push({ name: i.name, indexType: i.indexType, indexUuid: i.indexUuid });
    process.stdout.write(`${JSON.stringify({ seconds, indices })}\n`);
  } finally {
    table.close();
    cleanup();
  }
}

async function search(args) {
  const dim = intArg(args, "dim", 0);
  if (!args.queries) fail("search needs --queries FILE");
  const queries = readF32(args.queries, dim);
  const k = intArg(args, "k", 10);
  const { table, cleanup } = await openDataset(args._[1]);
  try {
    const build = (q) => {
      let query = table.vectorSearch(Array.from(q)).column("vector").limit(k).withRowId();
      if (args.nprobes !== undefined) query = query.nprobes(intArg(args, "nprobes", 1));
      if (args.refine !== undefined) query = query.refineFactor(intArg(args, "refine", 1));
      if (args.ef !== undefined) query = query.ef(intArg(args, "ef", 1));
      if (args.metric) query = query.distanceType(args.metric);
      if (args.bypass) query = query.bypassVectorIndex();
      return query;
    };
    const n = queries.length / dim;
    if (args.plan && n > 0) {
      const first = queries.subarray(0, dim);
      const out = { explain: await build(first).explainPlan(true), analyze: await build(first).analyzePlan() };
      process.stdout.write(`${JSON.stringify(out)}\n`);
    }
    const lines = [];
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const rows = await build(queries.subarray(i * dim, (i + 1) * dim)).toArray();
      lines.push(JSON.stringify({ q: i, rowids: rows.map((r) => BigInt(r._rowid).toString()),
        distances: rows.map((r) => r._distance) }));
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stdout.write(`${lines.join("\n")}${lines.length ? "\n" : ""}`);
    process.stdout.write(`${JSON.stringify({ seconds, qps: n / seconds })}\n`);
  } finally {
    table.close();
    cleanup();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ["bypass", "plan"]);
  if (args._.length !== 2) fail("usage: ivf_acceptance.mjs create|index|search DATASET [options]");
  switch (args._[0]) {
    case "create": await create(args); break;
    case "index": await index(args); break;
    case "search": await search(args); break;
    default: fail(`unknown command '${args._[0]}' (create, index, search)`);
  }
  return 0;
}

runMain(main);
