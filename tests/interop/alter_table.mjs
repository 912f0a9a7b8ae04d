// Usage: node alter_table.mjs DATASET [--add NAME=SQL] [--rename OLD=NEW] [--cast COL=TYPE]
//                             [--drop COL]
// Has LanceDB change a dataset's columns, in this order, one version each:
//   --add NAME=SQL    addColumns: a new column computed from an SQL expression (Lance
//                     writes a new data file into every fragment)
//   --rename OLD=NEW  alterColumns: rename (only the manifest's schema changes)
//   --cast COL=TYPE   alterColumns: cast to a type of the same kind, e.g. int64 or
//                     large_string (Lance rewrites the column into a new data file)
//   --drop COL        dropColumns (the field leaves the schema; its data stays)
// Prints {"version": V, "countRows": N, "schema": {...}} afterwards.
import { fail, openDataset, parseArgs, runMain, schemaJson } from "./lib.mjs";

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
      const [col, type] = pair(args.cast, "cast");
      await table.alterColumns([{ path: col, dataType: type }]);
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
