// Usage: node object_store_table.mjs DB_URI OPTIONS_JSON write ROWS
//        node object_store_table.mjs DB_URI OPTIONS_JSON read [TABLE]
//        node object_store_table.mjs DB_URI OPTIONS_JSON index TABLE
//        node object_store_table.mjs DB_URI OPTIONS_JSON search TABLE QUERIES_JSON K NPROBES
//        node object_store_table.mjs DB_URI OPTIONS_JSON append TABLE FROM COUNT TIMES
// A LanceDB table ("t", or TABLE for read) in a database on an object store (DB_URI
// such as s3://bucket/db or az://container/db; OPTIONS_JSON: the storage options
// LanceDB's connect takes).
// write: creates it with ROWS rows (id int64, name utf8 "n<id>", vec
//   fixed_size_list<float32, 8> with vec[j] = id + j / 8), deletes the rows with
//   id % 7 = 3, then appends ROWS / 4 rows more (ids ROWS..) alike.
// read: reads every row of it back.
// write and read print {"version": V, "countRows": N, "ids": [...ascending], "bad": [ids
// whose name or vector is not as written]}.
// index: builds IVF_PQ on "vec" (1 partition, 2 sub-vectors, l2) and prints what read
// prints.
// append: TIMES appends (one commit each) of COUNT rows, ids from FROM on; prints
// {"appended": TIMES}.
// search and index add "indices": [{name, indexType, columns, indexedRows,
// unindexedRows}]; search adds "hits": the ids of the K nearest rows to each query
// (QUERIES_JSON: a list of vectors), nearest first, with the index (NPROBES) and a
// refine factor of 10.
import { arrow, buildTable, fail, lancedb, runMain } from "./lib.mjs";

const dim = 8;

function rows(from, to) {
  const ids = [], names = [], vecs = [];
  for (let id = from; id < to; ++id) {
    ids.push(BigInt(id));
    names.push(`n${id}`);
    vecs.push(Array.from({ length: dim }, (_, j) => id + j / dim));
  }
  return buildTable([
    { name: "id", type: new arrow.Int64(), nullable: false, values: ids },
    { name: "name", type: new arrow.Utf8(), values: names },
    {
      name: "vec",
      type: new arrow.FixedSizeList(dim, new arrow.Field("item", new arrow.Float32(), true)),
      values: vecs,
    },
  ]);
}

async function describe(table) {
  const got = await table.query().select(["id", "name", "vec"]).toArrow();
  const ids = [], bad = [];
  for (let i = 0; i < got.numRows; ++i) {
    const id = Number(got.getChild("id").get(i));
    ids.push(id);
    const vec = Array.from(got.getChild("vec").get(i));
    const ok = got.getChild("name").get(i) === `n${id}` && vec.length === dim && vec.every((v, j) => v === Math.fround(id + j / dim));
    if (!ok) bad.push(id);
  }
  ids.sort((a, b) => a - b);
  return { version: await table.version(), countRows: await table.countRows(), ids, bad };
}

async function indices(table) {
  const out = [];
  for (const i of await table.listIndices()) {
    const stats = await table.indexStats(i.name);
    out.push({ name: i.name, indexType: i.indexType, columns: i.columns, indexedRows: stats?.numIndexedRows,
      unindexedRows: stats?.numUnindexedRows });
  }
  return out;
}

async function search(table, queries, k, nprobes) {
  const hits = [];
  for (const q of queries) {
    const rows = await table.query().nearestTo(q).column("vec").limit(k).nprobes(nprobes).refineFactor(10).select(["id"]).toArray();
    hits.push(rows.map((r) => Number(r.id)));
  }
  return hits;
}

async function main() {
  const [uri, optionsJson, action, n, queries, k, nprobes] = process.argv.slice(2);
  if (!uri || !optionsJson || !["write", "read", "index", "search", "append"].includes(action) ||
      (action !== "read" && !n) || (["search", "append"].includes(action) && !nprobes))
    fail("usage: object_store_table.mjs DB_URI OPTIONS_JSON write ROWS | read [TABLE] | index TABLE | " +
      "search TABLE QUERIES_JSON K NPROBES | append TABLE FROM COUNT TIMES");
  const db = await lancedb.connect(uri, { storageOptions: JSON.parse(optionsJson) });
  let table;
  if (action === "write") {
    const count = Number(n);
    table = await db.createTable("t", rows(0, count));
    await table.delete("id % 7 = 3");
    await table.add(rows(count, count + Math.floor(count / 4)));
  } else {
    table = await db.openTable(n ?? "t");
  }
  try {
    if (action === "append") {
      const [from, count, times] = [Number(queries), Number(k), Number(nprobes)];
      for (let i = 0; i < times; ++i) await table.add(rows(from + i * count, from + (i + 1) * count));
      process.stdout.write(`${JSON.stringify({ appended: times })}\n`);
      return 0;
    }
    if (action === "index") {
      await table.createIndex("vec", { config: lancedb.Index.ivfPq({ numPartitions: 1, numSubVectors: 2, distanceType: "l2" }) });
    }
    const out = action === "search" ? { version: await table.version() } : await describe(table);
    if (action === "index" || action === "search") out.indices = await indices(table);
    if (action === "search") out.hits = await search(table, JSON.parse(queries), Number(k), Number(nprobes));
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
  }
  return 0;
}

runMain(main);
