// Usage: node check_example_table.mjs DATASET
// Opens DATASET with LanceDB (Lance 12) and checks that it holds exactly the table the
// examples write: 1000 rows, `id` int64 = i, `name` utf8 = "name-" + i, null when
// i % 7 == 3 (compared in id order). Prints `ok 1000`; otherwise `error: <what>` on
// stderr and exit status 1.
import { fail, openDataset, runMain } from "./lib.mjs";

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length !== 1) fail("usage: check_example_table.mjs DATASET");
  const { table, cleanup } = await openDataset(argv[0]);
  try {
    const count = await table.countRows();
    if (count !== 1000) throw new Error(`countRows() is ${count}, expected 1000`);
    const result = await table.query().select(["id", "name"]).toArrow();
    const names = result.schema.fields.map((f) => f.name).join(",");
    if (names !== "id,name") throw new Error(`columns are ${names}, expected id,name`);
    const idType = String(result.schema.fields[0].type), nameType = String(result.schema.fields[1].type);
    if (idType !== "Int64") throw new Error(`id is ${idType}, expected Int64`);
    if (nameType !== "Utf8") throw new Error(`name is ${nameType}, expected Utf8`);
    const ids = result.getChild("id").toArray();
    const nameCol = result.getChild("name");
    const rows = [];
    for (let r = 0; r < result.numRows; r++) rows.push({ id: ids[r], name: nameCol.get(r) });
    if (rows.length !== 1000) throw new Error(`the query returned ${rows.length} rows, expected 1000`);
    rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (let i = 0; i < 1000; i++) {
      const { id, name } = rows[i];
      if (BigInt(id) !== BigInt(i)) throw new Error(`row ${i} in id order has id ${id}, expected ${i}`);
      const want = i % 7 === 3 ? null : `name-${i}`;
      if ((name ?? null) !== want) throw new Error(`id ${i}: name is ${JSON.stringify(name)}, expected ${JSON.stringify(want)}`);
    }
  } finally {
    table.close();
    cleanup();
  }
  process.stdout.write("ok 1000\n");
  return 0;
}

runMain(main);
