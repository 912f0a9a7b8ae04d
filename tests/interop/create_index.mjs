// Usage:
//   node create_index.mjs DATASET --type ivf_flat|ivf_pq|ivf_rq|hnsw_sq|hnsw_pq|none
//        [--create] [--rows N] [--dim D] [--clusters C] [--spread S] [--seed S]
//        [--vectors FILE] [--element float32|float16|uint8] [--storage 2.0|2.1|2.2]
//        [--column vector] [--partitions P] [--sub-vectors M] [--bits B]
//        [--metric l2|cosine|dot|hamming] [--name NAME] [--replace] [--sample-rate R]
//        [--max-iterations I]
//
// With --create, first writes DATASET (replacing it) with columns `id: int64` and
// `vector: fixed_size_list<float32|float16|uint8, D>`: rows from --vectors (raw
// little-endian float32, rows x D) or clustered random vectors (C Gaussian blobs of
// standard deviation S around uniform [-1, 1) centres, deterministic per seed;
// uint8 maps v to floor((v + 2) * 64) clamped to [0, 255]).
// Then LanceDB creates the index on the column (--type none: no index).
//
// Prints {"dataset", "rows", "version", "indices": [{name, indexType, columns,
// indexUuid, stats}]} where stats is LanceDB's indexStats.
import * as fs from "node:fs";
import { arrow, createDataset, fail, intArg, lancedb, makeRng, openDataset, parseArgs, runMain } from "./lib.mjs";

export function clusteredVectors(rows, dim, clusters, spread, seed) {
  const r = makeRng(seed);
  const gauss = () => {
    const u = Math.max(r.next(), 1e-12), v = r.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
  const centres = Array.from({ length: clusters }, () => Array.from({ length: dim }, () => r.next() * 2 - 1));
  const out = new Float32Array(rows * dim);
  for (let i = 0; i < rows; i++) {
    const c = centres[r.int(0, clusters - 1)];
    for (let j = 0; j < dim; j++) out[i * dim + j] = c[j] + spread * gauss();
  }
  return out;
}

export function readVectors(file, dim) {
  const buf = fs.readFileSync(file);
  if (buf.length % (4 * dim) !== 0) throw new Error(`${file}: ${buf.length} bytes is not a whole number of ${dim}-float rows`);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

function vectorTable(values, dim, element, column) {
  const rows = values.length / dim;
  const itemType = element === "float16" ? new arrow.Float16() : element === "uint8" ? new arrow.Uint8() : new arrow.Float32();
  const item = new arrow.Field("item", itemType, true);
  const type = new arrow.FixedSizeList(dim, item);
  let child;
  if (element === "uint8") {
    // bytes from the values in [-2, 2): floor((v + 2) * 64), clamped
    const b = Uint8Array.from(values, (v) => Math.max(0, Math.min(255, Math.floor((v + 2) * 64))));
    child = arrow.makeData({ type: itemType, length: values.length, nullCount: 0, data: b });
  } else if (element === "float16") {
    const h = new Uint16Array(values.length);
    for (let i = 0; i < values.length; i++) h[i] = arrow.util.float64ToUint16(values[i]);
    child = arrow.makeData({ type: itemType, length: values.length, nullCount: 0, data: h });
  } else {
    child = arrow.makeData({ type: itemType, length: values.length, nullCount: 0, data: values });
  }
  const vec = arrow.makeData({ type, length: rows, nullCount: 0, child });
  const ids = arrow.makeData({ type: new arrow.Int64(), length: rows, nullCount: 0,
    data: BigInt64Array.from({ length: rows }, (_, i) => BigInt(i)) });
  const fields = [new arrow.Field("id", new arrow.Int64(), false), new arrow.Field(column, type, true)];
  const schema = new arrow.Schema(fields);
  const data = arrow.makeData({ type: new arrow.Struct(fields), length: rows, nullCount: 0, children: [ids, vec] });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
}

function indexConfig(args) {
  const opt = (k, v) => (v === undefined ? {} : { [k]: v });
  const num = (k) => (args[k] === undefined ? undefined : Number(args[k]));
  const common = {
    ...opt("numPartitions", num("partitions")),
    ...opt("distanceType", args.metric),
    ...opt("maxIterations", num("max-iterations")),
    ...opt("sampleRate", num("sample-rate")),
  };
  switch (args.type) {
    case "ivf_flat": return lancedb.Index.ivfFlat(common);
    case "ivf_pq": return lancedb.Index.ivfPq({ ...common, ...opt("numSubVectors", num("sub-vectors")), ...opt("numBits", num("bits")) });
    case "ivf_rq": return lancedb.Index.ivfRq({ ...common, ...opt("numBits", num("bits")) });
    case "hnsw_sq": return lancedb.Index.hnswSq(common);
    case "hnsw_pq": return lancedb.Index.hnswPq({ ...common, ...opt("numSubVectors", num("sub-vectors")) });
    case "none": return null;
    default: fail(`unknown --type '${args.type}'`);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ["create", "replace"]);
  if (args._.length !== 1 || !args.type) fail("usage: create_index.mjs DATASET --type TYPE [options]");
  const dir = args._[0];
  const column = args.column ?? "vector";
  if (args.create) {
    const dim = intArg(args, "dim", 16);
    let values;
    if (args.vectors) values = readVectors(args.vectors, dim);
    else values = clusteredVectors(intArg(args, "rows", 1000), dim, intArg(args, "clusters", 8),
      Number(args.spread ?? 0.1), intArg(args, "seed", 1));
    await createDataset(dir, vectorTable(values, dim, args.element ?? "float32", column), args.storage ?? "2.0");
  }
  const { table, cleanup } = await openDataset(dir);
  try {
    const config = indexConfig(args);
    if (config) {
      const options = { config, ...(args.replace ? { replace: true } : {}) };
      if (args.name) options.name = args.name;
      await table.createIndex(column, options);
    }
    const indices = [];
    for (const i of await table.listIndices()) {
      const stats = await table.indexStats(i.name);
      indices.push({ name: i.name, indexType: i.indexType, columns: i.columns, indexUuid: i.indexUuid, stats });
    }
    const out = { dataset: dir, rows: await table.countRows(), version: await table.version(), indices };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) runMain(main);
