// Usage: node query.mjs DATASET --queries FILE [--version V]
//
// Runs a batch of queries with LanceDB on one dataset and prints one JSON line per
// query, in order. FILE holds a JSON array of query specs:
//   {"where": SQL, "prefilter": true|false, "columns": [...], "limit": N, "offset": N,
//    "withRowId": true, "fastSearch": true,
//    "nearest": {"column": "vector", "vector": [...], "nprobes": N, "minimumNprobes": N,
//                "maximumNprobes": N, "refineFactor": N, "distanceRange": [lo, hi],
//                "distanceType": "l2", "fastSearch": true, "bypassVectorIndex": true,
//                "ef": N}}
// Every key is optional (no "nearest": a scan; "prefilter": false: LanceDB's
// postfilter(); a null bound of distanceRange: none). Output per query:
//   {"query": i, "count": N, "fields": [...], "rows": [...]}
// ("plan" first, LanceDB's explainPlan(true), when the spec has "explain": true)
// with `fields` LanceDB's result schema (lib.mjs fieldJson) and `rows` the rows in the
// canonical JSON of README.md (`_distance` and `_rowid` are columns like any other),
// or {"query": i, "error": "..."} when LanceDB refuses the query.
import * as fs from "node:fs";

// Lance warns on stderr for every vector search whose columns leave out `_distance`
// (a deprecation): hundreds of lines per batch. Only errors are logged; the setting is
// read when LanceDB's native module loads, hence the dynamic import.
process.env.LANCEDB_LOG ??= "error";
const { fail, fieldJson, openDataset, parseArgs, runMain, writeRows } = await import("./lib.mjs");

function build(table, spec) {
  let q = table.query();
  const n = spec.nearest;
  if (n) {
    q = q.nearestTo(n.vector);
    if (n.column !== undefined) q = q.column(n.column);
    if (n.nprobes !== undefined) q = q.nprobes(n.nprobes);
    if (n.minimumNprobes !== undefined) q = q.minimumNprobes(n.minimumNprobes);
    if (n.maximumNprobes !== undefined) q = q.maximumNprobes(n.maximumNprobes);
    if (n.refineFactor !== undefined) q = q.refineFactor(n.refineFactor);
    if (n.distanceRange !== undefined) {
      const [lo, hi] = n.distanceRange;
      q = q.distanceRange(lo ?? undefined, hi ?? undefined);
    }
    if (n.distanceType !== undefined) q = q.distanceType(n.distanceType);
    if (n.ef !== undefined) q = q.ef(n.ef);
    if (n.bypassVectorIndex) q = q.bypassVectorIndex();
    if (n.fastSearch) q = q.fastSearch();
    if (spec.prefilter === false) q = q.postfilter();
  }
  if (spec.fastSearch) q = q.fastSearch();
  if (spec.where !== undefined) q = q.where(spec.where);
  if (spec.columns !== undefined) q = q.select(spec.columns);
  if (spec.limit !== undefined) q = q.limit(spec.limit);
  if (spec.offset !== undefined) q = q.offset(spec.offset);
  if (spec.withRowId) q = q.withRowId();
  return q;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args._.length !== 1 || !args.queries) fail("usage: query.mjs DATASET --queries FILE [--version V]");
  const specs = JSON.parse(fs.readFileSync(args.queries, "utf8"));
  if (!Array.isArray(specs)) fail("--queries must hold a JSON array of query specs");
  const { table, cleanup } = await openDataset(args._[0]);
  try {
    if (args.version !== undefined) await table.checkout(Number(args.version));
    for (let i = 0; i < specs.length; i++) {
      let line;
      try {
        const query = build(table, specs[i]);
        const plan = specs[i].explain ? `"plan":${JSON.stringify(await query.explainPlan(true))},` : "";
        const result = await query.toArrow();
        const rows = [];
        writeRows(result, (s) => rows.push(s.slice(0, -1)));
        const fields = JSON.stringify(result.schema.fields.map(fieldJson));
        line = `{"query":${i},${plan}"count":${result.numRows},"fields":${fields},"rows":[${rows.join(",")}]}\n`;
      } catch (err) {
        line = `${JSON.stringify({ query: i, error: String(err?.message ?? err) })}\n`;
      }
      // Written line by line: a batch may hold more than a pipe takes at once.
      if (!process.stdout.write(line)) await new Promise((resolve) => process.stdout.once("drain", resolve));
    }
  } finally {
    table.close();
    cleanup();
  }
  return 0;
}

runMain(main);
