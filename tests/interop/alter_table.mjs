// Usage: node alter_table.mjs DATASET [--add NAME=SQL] [--rename OLD=NEW] [--cast COL=TYPE]
//                             [--drop COL]
// Has LanceDB change a dataset's columns, in this order, one version each:
//   --add NAME=SQL    addColumns: a new column computed from an SQL expression (Lance
//                     writes a new data file into every fragment)
//   --rename OLD=NEW  alterColumns: rename (only the manifest's schema changes)
//   --cast COL=TYPE   alterColumns: cast to a type of the same kind, e.g. int64 or
//                     large_string, or a list by its items: list:int32,
//                     fixed_size_list<2>:float16 (Lance rewrites the column into a new
//                     data file)
//   --drop COL        dropColumns (the field leaves the schema; its data stays)
// Prints {"version": V, "countRows": N, "schema": {...}} afterwards.
import { arrow, fail, openDataset, parseArgs, runMain, schemaJson } from "./lib.mjs";

// A cast's target: list forms as Arrow types (items nullable, named "item", as Lance's),
// any other name as LanceDB takes it.
function castType(text) {
  const items = { float16: arrow.Float16, float32: arrow.Float32, float64: arrow.Float64, int8: arrow.Int8,
                  int16: arrow.Int16, int32: arrow.Int32, int64: arrow.Int64 };
  const item = (name) => {
    if (!items[name]) fail(`unknown list item type '${name}'`);
    return new arrow.Field("item", new items[name](), true);
  };
  const fixed = /^fixed_size_list<(\d+)>:(\w+)$/.exec(text);
  if (fixed) return new arrow.FixedSizeList(Number(fixed[1]), item(fixed[2]));
  const list = /^list:(\w+)$/.exec(text);
  if (list) return new arrow.List(item(list[1]));
  return text;
}

function pair(text, flag) {
  const eq = text.indexOf("=");
  if (eq <= 0) fail(`--${flag} needs NAME=VALUE, got '${text}'`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: alter_table.mjs DATASET [--add NAME=SQL] [--rename OLD=NEW] [--cast COL=TYPE] [--drop COL]");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.add) {
      const [name, sql] = pair(args.add, "add");
      await table.addColumns([{ name, valueSql: sql }]);
    }
    if (args.rename) {
      const [from, to] = pair(args.rename, "rename");
      await table.alterColumns([{ path: from, rename: to }]);
    }
    if (args.cast) {
      for (const c of [].concat(args.cast)) {
        const [col, type] = pair(c, "cast");
        await table.alterColumns([{ path: col, dataType: castType(type) }]);
      }
    }
    if (args.drop) await table.dropColumns([args.drop]);
    const out = { version: await table.version(), countRows: await table.countRows(), schema: schemaJson(await table.schema()) };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
