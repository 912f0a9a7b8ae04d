// Usage: node object_store_table.mjs DB_URI OPTIONS_JSON write ROWS
//        node object_store_table.mjs DB_URI OPTIONS_JSON read [TABLE]
// A LanceDB table ("t", or TABLE for read) in a database on an object store (DB_URI
// such as s3://bucket/db or az://container/db; OPTIONS_JSON: the storage options
// LanceDB's connect takes).
// write: creates it with ROWS rows (id int64, name utf8 "n<id>", vec
//   fixed_size_list<float32, 8> with vec[j] = id + j / 8), deletes the rows with
//   id % 7 = 3, then appends ROWS / 4 rows more (ids ROWS..) alike.
// read: reads every row of it back.
// Both print {"version": V, "countRows": N, "ids": [...ascending], "bad": [ids whose
// name or vector is not as written]}.
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

async function main() {
  const [uri, optionsJson, action, n] = process.argv.slice(2);
  if (!uri || !optionsJson || !["write", "read"].includes(action) || (action === "write" && !n))
    fail("usage: object_store_table.mjs DB_URI OPTIONS_JSON write ROWS | read [TABLE]");
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
    process.stdout.write(`${JSON.stringify(await describe(table))}\n`);
  } finally {
    table.close();
  }
  return 0;
}

runMain(main);
