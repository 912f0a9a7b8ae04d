// LanceDB's side of bench/bench_btree.cpp: BTREE and BITMAP builds and filtered scans,
// timed as an application would run them.
//
//   node bench_btree.mjs DATASET [--build a,b] [--where JSON] [--reps 5]
//
// --build: createIndex(column, {config: Index.btree()}) for each column in turn (a
// column written `c:bitmap`: Index.bitmap()), each timed; prints {"build": column, "seconds"}. --where: a JSON array of filters, each run
// as `table.query().where(f).select(["id"]).toArrow()`, one warm-up then the best of
// --reps; prints {"where", "rows", "id_sum", "seconds"} (id_sum as a decimal string).
import { fail, intArg, lancedb, openDataset, parseArgs, runMain } from "./lib.mjs";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1) fail("usage: bench_btree.mjs DATASET [--build a,b] [--where JSON] [--reps 5]");
  const reps = intArg(args, "reps", 5);
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    for (const spec of (args.build ?? "").split(",").filter((c) => c.length)) {
      const [column, type] = spec.split(":");
      const config = type === "bitmap" ? lancedb.Index.bitmap() : lancedb.Index.btree();
      const t0 = process.hrtime.bigint();
      await table.createIndex(column, { config });
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      process.stdout.write(`${JSON.stringify({ build: column, seconds })}\n`);
    }
    for (const where of JSON.parse(args.where ?? "[]")) {
      const run = () => table.query().where(where).select(["id"]).toArrow();
      await run();
      let best = Infinity, rows = 0, idSum = 0n;
      for (let r = 0; r < reps; r++) {
        const t0 = process.hrtime.bigint();
        const result = await run();
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        if (s < best) best = s;
        rows = result.numRows;
        idSum = 0n;
        for (const v of result.getChild("id").toArray()) idSum += BigInt(v);
      }
      process.stdout.write(`${JSON.stringify({ where, rows, id_sum: idSum.toString(), seconds: best })}\n`);
    }
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
