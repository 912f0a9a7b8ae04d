// Usage: node random_datasets.mjs OUT_DIR --cases N --version 2.0|2.1|2.2 [--seed S]
//                                 [--max-depth D] [--max-rows R]
// Has LanceDB write N datasets OUT_DIR/case-<i> with random schemas (1-4 columns of
// nesting depth <= D, default 3) and 0..R random rows (default 40), in one or two
// writes (create, then sometimes an append). For each, OUT_DIR/case-<i>.jsonl holds
// the rows written (canonical JSON Lines, README.md) and OUT_DIR/case-<i>.schema.json
// the schema (lib.mjs schemaJson); a case LanceDB refuses is retried with a new
// schema. Deterministic for a seed. Prints {"cases": N, "retries": k}.
import * as fs from "node:fs";
import * as path from "node:path";
import { arrow, createDataset, fail, intArg, makeRng, openDataset, parseArgs, runMain, schemaJson } from "./lib.mjs";
import { appendTable, buildTable, randomColumns, randomType, writeRowsFile } from "./dataset_lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.version) fail("usage: random_datasets.mjs OUT_DIR --cases N --version V [--seed S]");
  const out = args._[0];
  const cases = intArg(args, "cases", 10);
  const maxDepth = intArg(args, "max-depth", 3);
  const maxRows = intArg(args, "max-rows", 40);
  const r = makeRng(intArg(args, "seed", 1));
  const structNulls = args.version !== "2.0";
  fs.mkdirSync(out, { recursive: true });
  let retries = 0;
  for (let c = 0; c < cases; c++) {
    for (let attempt = 0; ; attempt++) {
      const n = r.int(1, 4);
      const fields = [new arrow.Field("id", new arrow.Int64(), false)];
      for (let k = 0; k < n; k++) fields.push(new arrow.Field(`c${k}`, randomType(r, 0, maxDepth), r.next() < 0.85));
      const rows1 = r.int(1, maxRows);
      const rows2 = r.next() < 0.5 ? r.int(1, maxRows) : 0;
      const opts = { structNulls };
      const first = buildTable(randomColumns(fields, rows1, r, { ...opts, ids: (i) => BigInt(i) }));
      const dir = path.join(out, `case-${c}`);
      try {
        await createDataset(dir, first, args.version);
        let all = first;
        if (rows2) {
          const second = buildTable(randomColumns(fields, rows2, r, { ...opts, ids: (i) => BigInt(rows1 + i) }));
          const { table, cleanup } = await openDataset(dir);
          try {
            await appendTable(table, second);
          } finally {
            table.close();
            cleanup();
          }
          all = first.concat(second);
        }
        writeRowsFile(path.join(out, `case-${c}.jsonl`), all);
        fs.writeFileSync(path.join(out, `case-${c}.schema.json`), JSON.stringify(schemaJson(first.schema)));
        break;
      } catch (err) {
        fs.rmSync(dir, { recursive: true, force: true });
        if (attempt >= 20) throw new Error(`case ${c}: LanceDB refused 20 random schemas; last: ${err?.message ?? err}`);
        retries++;
      }
    }
  }
  process.stdout.write(`${JSON.stringify({ cases, retries })}\n`);
  return 0;
}

runMain(main);
