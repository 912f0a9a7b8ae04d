// Usage: node mutate.mjs DATASET --ops OPS
//
// Has LanceDB change a dataset in a sequence of steps, in one process. OPS is a JSON
// array (inline text starting with '[', or a file holding it) of:
//   {"op": "delete", "where": SQL}          table.delete(SQL)
//   {"op": "update", "where": SQL, "set": {COLUMN: SQL}}
//                                           table.update({where, valuesSql}) (no where:
//                                           every row); the line adds "rowsUpdated"
//   {"op": "append", "rows": FILE}          appends the canonical JSON Lines of FILE
//                                           (README.md), read against the table's schema
//   {"op": "merge", "on": [COLUMN], "rows": FILE, "matched": true, "matchedIf": SQL,
//    "insert": true, "deleteBySource": true, "deleteIf": SQL}
//                                           mergeInsert(on) with those clauses, FILE's
//                                           rows as the source; the line adds
//                                           "inserted", "updated", "deleted"
//   {"op": "index", "type": "ivf_flat|ivf_pq|ivf_rq|hnsw_sq|hnsw_pq|btree|bitmap|label_list", "column": "vector",
//    "partitions": P, "subVectors": M, "bits": B, "metric": "l2", "name": N,
//    "replace": true, "m": M, "efConstruction": E}
//                                           createIndex (LanceDB 0.39 has no IVF_SQ)
//   {"op": "optimize"}                      table.optimize(): compaction, then index
//                                           optimisation (the versions older than 7 days
//                                           are cleaned up: none in a test)
// and prints one line per step: {"op": i, "version", "countRows"}, plus "indices":
// [{name, indexType, stats}] after index and optimize, and "stats" after optimize.
// Appended values: 64-bit integers as decimal strings or numbers, time / timestamp /
// duration / date64 as numbers (exact below 2^53) or strings, floats as numbers or
// "NaN" / "Infinity" / "-Infinity", binary as base64, decimals as decimal strings.
import * as fs from "node:fs";

// Lance logs warnings on stderr (indexStats: a deprecation about centroids in the
// statistics) that say nothing about the test: only errors are logged. The setting is
// read when LanceDB's native module loads, hence the dynamic imports.
process.env.LANCEDB_LOG ??= "error";
const { arrow, fail, lancedb, openDataset, parseArgs, runMain } = await import("./lib.mjs");
const { appendTable, buildTable, localSchema } = await import("./dataset_lib.mjs");

const { Type } = arrow;

const json = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));

function unscaled(text, scale) {
  const s = String(text);
  const neg = s.startsWith("-");
  const [whole, frac = ""] = (neg ? s.slice(1) : s).split(".");
  if (frac.length > scale) throw new Error(`decimal '${s}' has more than ${scale} fractional digits`);
  const v = BigInt(whole + frac.padEnd(scale, "0"));
  return neg ? -v : v;
}

// A canonical JSON value as lib.mjs buildData takes it for `type`.
function fromJson(type, v) {
  if (v === null || v === undefined) return null;
  switch (type.typeId) {
    case Type.Null: return null;
    case Type.Bool: return v;
    case Type.Int: return type.bitWidth === 64 ? BigInt(v) : v;
    case Type.Float: return typeof v === "string" ? Number(v) : v;  // "NaN", "Infinity", "-Infinity"
    case Type.Date: return type.unit === arrow.DateUnit.DAY ? v : BigInt(v);
    case Type.Time: return type.bitWidth === 32 ? v : BigInt(v);
    case Type.Timestamp:
    case Type.Duration: return BigInt(v);
    case Type.Decimal: return unscaled(v, type.scale);
    case Type.Utf8:
    case Type.LargeUtf8: return v;
    case Type.Binary:
    case Type.LargeBinary:
    case Type.FixedSizeBinary: return new Uint8Array(Buffer.from(v, "base64"));
    case Type.FixedSizeList:
    case Type.List: return v.map((x) => fromJson(type.children[0].type, x));
    case Type.Struct: {
      const o = {};
      for (const f of type.children) o[f.name] = fromJson(f.type, v[f.name]);
      return o;
    }
    default: throw new Error(`mutate.mjs: cannot append values of type ${type}`);
  }
}

// The canonical JSON Lines of FILE as an Arrow table of the table's schema.
async function rowsTable(table, file) {
  const schema = localSchema(await table.schema());
  const rows = fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim().length).map((l) => JSON.parse(l));
  const cols = schema.fields.map((f) => ({
    name: f.name, type: f.type, nullable: f.nullable, metadata: f.metadata,
    values: rows.map((r) => fromJson(f.type, r[f.name])),
  }));
  return buildTable(cols, schema.metadata);
}

async function appendRows(table, file) {
  await appendTable(table, await rowsTable(table, file));
}

// mergeInsert(on) with the clauses `op` names, the rows of op.rows as its source.
async function mergeRows(table, op) {
  let b = table.mergeInsert(op.on);
  if (op.matched) b = b.whenMatchedUpdateAll(op.matchedIf ? { where: op.matchedIf } : undefined);
  if (op.insert) b = b.whenNotMatchedInsertAll();
  if (op.deleteBySource) b = b.whenNotMatchedBySourceDelete(op.deleteIf ? { where: op.deleteIf } : undefined);
  return b.execute(await rowsTable(table, op.rows));
}

function indexConfig(op) {
  const opt = (k, v) => (v === undefined ? {} : { [k]: v });
  const common = { ...opt("numPartitions", op.partitions), ...opt("distanceType", op.metric) };
  const pq = { ...opt("numSubVectors", op.subVectors), ...opt("numBits", op.bits) };
  const hnsw = { ...opt("m", op.m), ...opt("efConstruction", op.efConstruction) };
  switch (op.type) {
    case "ivf_flat": return lancedb.Index.ivfFlat(common);
    case "ivf_pq": return lancedb.Index.ivfPq({ ...common, ...pq });
    case "ivf_rq": return lancedb.Index.ivfRq({ ...common, ...opt("numBits", op.bits) });
    case "hnsw_sq": return lancedb.Index.hnswSq({ ...common, ...hnsw });
    case "hnsw_pq": return lancedb.Index.hnswPq({ ...common, ...opt("numSubVectors", op.subVectors), ...hnsw });
    case "btree": return lancedb.Index.btree();
    case "bitmap": return lancedb.Index.bitmap();
    case "label_list": return lancedb.Index.labelList();
    default: throw new Error(`unknown index type '${op.type}'`);
  }
}

async function indices(table) {
  const out = [];
  for (const i of await table.listIndices()) {
    out.push({ name: i.name, indexType: i.indexType, stats: await table.indexStats(i.name) });
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.ops) fail("usage: mutate.mjs DATASET --ops JSON|FILE");
  const ops = JSON.parse(args.ops.trimStart().startsWith("[") ? args.ops : fs.readFileSync(args.ops, "utf8"));
  if (!Array.isArray(ops)) fail("--ops must be a JSON array");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      const out = { op: i };
      switch (op.op) {
        case "delete":
          await table.delete(op.where);
          break;
        case "update": {
          const r = await table.update(op.where === undefined ? { valuesSql: op.set } : { where: op.where, valuesSql: op.set });
          out.rowsUpdated = r.rowsUpdated;
          break;
        }
        case "append":
          await appendRows(table, op.rows);
          break;
        case "merge": {
          const r = await mergeRows(table, op);
          Object.assign(out, { inserted: r.numInsertedRows, updated: r.numUpdatedRows, deleted: r.numDeletedRows });
          break;
        }
        case "index": {
          const options = { config: indexConfig(op), ...(op.replace ? { replace: true } : {}) };
          if (op.name) options.name = op.name;
          await table.createIndex(op.column ?? "vector", options);
          out.indices = await indices(table);
          break;
        }
        case "optimize":
          out.stats = await table.optimize();
          out.indices = await indices(table);
          break;
        default:
          throw new Error(`step ${i}: unknown op '${op.op}'`);
      }
      out.version = await table.version();
      out.countRows = await table.countRows();
      process.stdout.write(`${json(out)}\n`);
    }
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
