// The `lancet` command-line tool.
//
//   lancet write DATASET --schema SCHEMA.json [--format 2.0|2.1|2.2] [--mode create|append|overwrite]
//                < rows.jsonl
//   lancet write DATASET --schema SCHEMA.json --uncommitted [--mode append|overwrite] < rows.jsonl
//   lancet commit DATASET --operation append|overwrite [--schema S] [--read-version V] FRAGMENT.json...
//   lancet cat DATASET|FILE.lance [--columns a,b] [--where EXPR] [--offset N] [--limit N] [--version V]
//   lancet inspect DATASET|FILE.lance
//   lancet index create DATASET --column COL --type ivf_flat|ivf_pq|ivf_sq|ivf_rq|btree|bitmap|label_list
//                [--partitions N | --target-partition-size N] [--sub-vectors M] [--bits B]
//                [--metric l2|cosine|dot|hamming] [--name NAME] [--replace] [--threads T]
//                [--model MODEL] [--fragments 0,1,5 --uncommitted] [--memory-budget BYTES] [--seed S]
//   lancet index train DATASET --column COL --type T [index create's build flags] --out MODEL
//   lancet index merge-segments DATASET SEGMENT.json...
//   lancet index commit DATASET --name NAME --column COL SEGMENT.json...
//   lancet index list DATASET
//   lancet index optimize DATASET [--name NAME] [--merge N] [--retrain] [--target-partition-size N]
//                [--threads T]
//   lancet search DATASET --column COL --query '[...]' [--k 10] [--nprobes N] [--refine R]
//                [--columns a,b] [--index NAME] [--where EXPR] [--postfilter] [--fast-search]
//                [--bypass-index] [--distance-range LO,HI] [--offset N] [--explain]
//   lancet delete DATASET --where EXPR
//   lancet update DATASET [--where EXPR] --set COL=EXPR...
//   lancet merge-insert DATASET --on KEYS [--when-matched-update-all] [--when-not-matched-insert-all] ... < rows.jsonl
//   lancet add-columns DATASET (--column NAME=EXPR | --null name:type | --schema NEW.json --from ROWS.jsonl)
//   lancet drop-columns DATASET a,s.b
//   lancet alter-columns DATASET [--rename a=b] [--nullable c] [--not-nullable d] [--cast e:int64]
//   lancet compact DATASET [--target-rows N]
//   lancet cleanup DATASET [--older-than SECONDS] [--keep N] [--delete-unverified] [--dry-run]
//   lancet help [COMMAND]      (also: lancet COMMAND --help / -h)
//   lancet --version
//
// Errors go to stderr with a message naming what is wrong; the exit status is 1 for
// failures and 2 for bad usage (unknown commands and flags included). A failed write
// leaves the dataset as it was.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <charconv>
#include <cmath>
#include <cstdio>

#include <boost/asio/thread_pool.hpp>

#include <lancet/dataset/cleanup.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/distributed.hpp>
#include <lancet/dataset/distributed_impl.hpp>  // write_fragments from a batch generator
#include <lancet/dataset/fragment_json.hpp>
#include <lancet/dataset/schema_change.hpp>
#include <lancet/dataset/update.hpp>
#include <lancet/dataset/merge_insert.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/optimize/remap.hpp>
#include <lancet/index/distributed/segments.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/index/scalar/scalar_index.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/json/parse.hpp>
#include <lancet/json/rows_reader.hpp>
#include <lancet/json/rows_writer.hpp>
#include <lancet/json/schema_json.hpp>
#include <lancet/json/write.hpp>
#include <lancet/dataset/write_json_lines.hpp>
#include <lancet/lancet.hpp>
#include <lancet/pb/encodings_v2_1.hpp>  // page layouts, for `inspect`

#include "storage_args.hpp"
#include "tool_args.hpp"

#ifndef LANCET_VERSION_STRING
#define LANCET_VERSION_STRING "0.1.0"  // Meson passes the project's version (examples/meson.build)
#endif

namespace fs = std::filesystem;
using namespace lancet;
using namespace lancet_tools;

namespace {

// One command: its name ("cat", "index create"), usage and help text, and the options
// it takes ("--name value") and its flags ("--name").
struct command_spec {
  std::string_view name;
  std::string_view usage;  // the synopsis, as in README.md
  std::string_view help;   // what it does and its options
  std::vector<std::string_view> options;
  std::vector<std::string_view> flags;
  bool more_files = false;  // takes files after DATASET
};

const std::vector<command_spec>& commands() {
  static const std::vector<command_spec> all = {
      {"write",
       "lancet write DATASET --schema SCHEMA.json [--format 2.0|2.1|2.2] [--mode create|append|overwrite]\n"
       "               [--max-retries N] [--uncommitted] < rows.jsonl",
       "Reads JSON Lines (one object per row) from stdin and commits them as one new version of\n"
       "DATASET. A bad line stops the write with a message naming the line and the field; the\n"
       "dataset stays as it was. When another writer commits first, the write is rebased on its\n"
       "commit as Lance does (appends never conflict with appends, deletes, indexes, compaction)\n"
       "and takes the next version; the retries are reported on stderr.\n"
       "  --schema FILE   the table's Arrow schema as JSON (README.md, \"Schema files\")\n"
       "  --format V      data file format of a new dataset: 2.0, 2.1 or 2.2 (default 2.2)\n"
       "  --mode M        create (default: a new dataset), append or overwrite\n"
       "  --max-retries N rebase on other writers' commits at most N times (default 20, Lance's;\n"
       "                  0: fail with a conflict when another writer commits first)\n"
       "  --uncommitted   write the data files only and print their fragment metadata, one JSON\n"
       "                  line per fragment (Lance's FragmentMetadata.to_json), for 'lancet commit';\n"
       "                  --mode is then append (the default: the dataset's schema, or --schema\n"
       "                  when there is no dataset yet) or overwrite (--schema)\n",
       {"schema", "format", "mode", "max-retries"},
       {"uncommitted"}},
      {"commit",
       "lancet commit DATASET --operation append|overwrite [--schema SCHEMA.json] [--read-version V]\n"
       "               [--max-retries N] FRAGMENT.json...",
       "Commits fragments written by 'lancet write --uncommitted' (by any number of processes) as\n"
       "one new version of DATASET: Lance's Append or Overwrite of fragment metadata. Each file\n"
       "holds fragment JSON (one object, an array, or one object per line; '-' reads stdin).\n"
       "Fragment ids are assigned here. Fragments whose data files are not in DATASET, whose\n"
       "fields do not match its schema, or given twice are refused and nothing is committed.\n"
       "Prints {\"version\", \"read_version\", \"fragments\", \"rows\"} as one JSON line.\n"
       "  --operation OP   append (to an existing dataset) or overwrite (creates it when missing)\n"
       "  --schema FILE    the new schema of an overwrite (default: the dataset's)\n"
       "  --read-version V the version the fragments were written against (default: the latest);\n"
       "                   commits after it are checked and rebased on as Lance does\n"
       "  --max-retries N  rebase on other writers' commits at most N times (default 20)\n",
       {"operation", "schema", "read-version", "max-retries"},
       {},
       true},
      {"cat",
       "lancet cat DATASET|FILE.lance [--columns a,b] [--where EXPR] [--offset N] [--limit N] [--version V]",
       "Prints rows of a dataset or of a single Lance file as JSON Lines.\n"
       "  --columns a,b   only these columns, in this order (a struct's field: st.x)\n"
       "  --where EXPR    only rows where the SQL filter is true (e.g. \"price > 10 AND tag = 'x'\")\n"
       "  --offset N      skip the first N (matching) rows\n"
       "  --limit N       print at most N rows\n"
       "  --version V     read version V of a dataset (default: the latest)\n",
       {"columns", "where", "offset", "limit", "version"},
       {}},
      {"delete",
       "lancet delete DATASET --where EXPR [--max-retries N]",
       "Deletes the rows where the SQL filter is true and commits a new version (Lance's delete,\n"
       "with the filter recorded in its transaction). Prints {\"version\", \"deleted_rows\"} as one\n"
       "JSON line. A concurrent commit that preempts it makes it run again on the new version.\n"
       "  --where EXPR      the rows to delete (a SQL filter; \"true\" deletes every row)\n"
       "  --max-retries N   run again on other writers' commits at most N times (default 20)\n",
       {"where", "max-retries"},
       {}},
      {"drop-columns",
       "lancet drop-columns DATASET a,s.b [--max-retries N]",
       "Removes columns (top-level ones or struct members: s.b; a struct left without members goes\n"
       "too) and commits a new version, as Lance's drop_columns: only the schema changes, the data\n"
       "files stay (a file no longer holding any column leaves its fragment) and indexes on the\n"
       "dropped columns go. Prints {\"version\"} as one JSON line.\n"
       "  --max-retries N   rebase on other writers' commits at most N times (default 20)\n",
       {"max-retries"},
       {},
       true},
      {"update",
       "lancet update DATASET [--where EXPR] --set COL=EXPR... [--max-retries N]",
       "Sets columns of the rows where the SQL filter is true (every row without --where) and\n"
       "commits a new version, as LanceDB's update({where, valuesSql}): the rows move to a new\n"
       "fragment with their new values. Each EXPR is SQL over the row's old values (\"x + 1\",\n"
       "\"'done'\"). Prints {\"version\", \"rows_updated\"} as one JSON line.\n"
       "  --where EXPR        the rows to update (a SQL filter)\n"
       "  --set COL=EXPR      a column and its new value (repeatable)\n"
       "  --max-retries N     run again on other writers' commits at most N times (default 20)\n",
       {"where", "set", "max-retries"},
       {}},
      {"merge-insert",
       "lancet merge-insert DATASET --on id[,k2] [--when-matched-update-all [--matched-if EXPR]]\n"
       "               [--when-not-matched-insert-all] [--when-not-matched-by-source-delete [--source-delete-if EXPR]]\n"
       "               [--max-retries N] < rows.jsonl",
       "Merges the rows of stdin (JSON Lines, read with the dataset's schema) into DATASET on the key\n"
       "columns and commits a new version, as LanceDB's mergeInsert: matched rows take the new\n"
       "values, unmatched ones are inserted, target rows no source row matches are deleted, as the\n"
       "flags say. Prints {\"version\", \"inserted_rows\", \"updated_rows\", \"deleted_rows\"}.\n"
       "  --on COLS                           the key columns\n"
       "  --when-matched-update-all           update the matched target rows\n"
       "  --matched-if EXPR                   only where EXPR holds (SQL over target.COL, source.COL)\n"
       "  --when-not-matched-insert-all       insert the source rows no target row matches\n"
       "  --when-not-matched-by-source-delete delete the target rows no source row matches\n"
       "  --source-delete-if EXPR             only those where EXPR holds (SQL over the target's columns)\n"
       "  --max-retries N                     run again on other writers' commits at most N times (default 20)\n",
       {"on", "matched-if", "source-delete-if", "max-retries"},
       {"when-matched-update-all", "when-not-matched-insert-all", "when-not-matched-by-source-delete"}},
      {"add-columns",
       "lancet add-columns DATASET (--column NAME=EXPR... | --null name:type,... | --schema NEW.json --from ROWS.jsonl)\n"
       "               [--max-retries N]",
       "Adds columns and commits a new version, as Lance's add_columns (one Merge): the dataset's\n"
       "data files stay as they are. Prints {\"version\"} as one JSON line.\n"
       "  --column NAME=EXPR     a column computed by a SQL expression over each live row (repeatable;\n"
       "                         the filter grammar's arithmetic, columns and constants: \"id * 2\");\n"
       "                         each fragment gets one new data file holding it\n"
       "  --null name:type,...   columns whose every value is NULL (no data is written); types as in\n"
       "                         schema files: int64, float32, utf8, bool, date32, ...\n"
       "  --schema NEW.json      the new columns (a schema file, README.md \"Schema files\")\n"
       "  --from ROWS.jsonl      their values as JSON Lines, one line per live row in row order ('-':\n"
       "                         stdin); each fragment gets one new data file holding them\n"
       "  --max-retries N        rebase on other writers' commits at most N times (default 20)\n",
       {"column", "null", "schema", "from", "max-retries"},
       {}},
      {"alter-columns",
       "lancet alter-columns DATASET [--rename a=b,s.x=y] [--nullable c,d] [--not-nullable e] [--cast f:int64,g:large_utf8]\n"
       "               [--max-retries N]",
       "Renames columns and changes whether they allow NULLs, and commits a new version, as\n"
       "Lance's alter_columns: only the schema changes (field ids stay, so indexes keep working).\n"
       "A column holding a NULL in a live row cannot be made non-nullable. Prints {\"version\"}.\n"
       "  --rename OLD=NEW,...   new names (a struct member: s.x=y renames s.x to s.y)\n"
       "  --nullable a,b         allow NULLs in these columns\n"
       "  --not-nullable a,b     refuse NULLs in these columns\n"
       "  --cast c:type,...      new types of the same kind (integers, floats, utf8 / large_utf8, binary /\n"
       "                         large_binary): the column is rewritten into a new file per fragment\n"
       "  --max-retries N        rebase on other writers' commits at most N times (default 20)\n",
       {"rename", "nullable", "not-nullable", "cast", "max-retries"},
       {}},
      {"inspect",
       "lancet inspect DATASET|FILE.lance",
       "Summarises versions, fragments, columns, page layouts and sizes.\n",
       {},
       {}},
      {"index create",
       "lancet index create DATASET --column COL --type ivf_flat|ivf_pq|ivf_sq|ivf_rq|ivf_hnsw_flat|ivf_hnsw_sq|\n"
       "               ivf_hnsw_pq|btree|bitmap|label_list [--partitions N | --target-partition-size N] [--sub-vectors M] [--bits B]\n"
       "               [--metric l2|cosine|dot|hamming] [--m M] [--ef-construction E] [--name NAME] [--replace]\n"
       "               [--threads T] [--model MODEL] [--fragments 0,1,5 --uncommitted] [--memory-budget BYTES]\n"
       "               [--seed S]",
       "Builds an IVF vector index (or, with --type btree, bitmap or label_list, a scalar index: only\n"
       "--column, --name and --replace apply) on a column and commits it as a new version. Commits of other\n"
       "writers meanwhile are rebased on as Lance does (rows appended stay unindexed); the retries\n"
       "are reported on stderr. With --uncommitted it builds one segment of a distributed index\n"
       "over --fragments, commits nothing and prints the segment's metadata as one JSON line (for\n"
       "'lancet index merge-segments' / 'lancet index commit').\n"
       "  --column COL                 the vector column (a fixed-size list)\n"
       "  --type T                     ivf_flat, ivf_pq, ivf_sq, ivf_rq, or ivf_hnsw_flat, ivf_hnsw_sq,\n"
       "                               ivf_hnsw_pq (an HNSW graph in each partition); btree (a scalar\n"
       "                               index over a column of numbers, strings, booleans, dates or times);\n"
       "                               bitmap (the rows of each distinct value; no floats); label_list\n"
       "                               (the rows of each item of a list column)\n"
       "  --partitions N               number of IVF partitions (default: rows / target partition size)\n"
       "  --target-partition-size N    rows per partition the count is derived from\n"
       "  --sub-vectors M              PQ sub-vectors (must divide the dimension)\n"
       "  --bits B                     bits per code (PQ 8 or 4, SQ 8, RQ 1)\n"
       "  --metric M                   l2 (default), cosine, dot or hamming\n"
       "  --m M                        HNSW: neighbours per node (2M on level 0; default 20)\n"
       "  --ef-construction E          HNSW: beam width while building (default 150)\n"
       "  --name NAME                  index name (default COL_idx)\n"
       "  --replace                    replace an existing index of that name\n"
       "  --threads T                  worker threads (default: the number of cores)\n"
       "  --model MODEL                use this trained model ('lancet index train'): no training;\n"
       "                               --column / --type / --metric default to the model's\n"
       "  --fragments 0,1,5            index only these fragments (with --uncommitted)\n"
       "  --uncommitted                write the segment, commit nothing, print its JSON\n"
       "  --memory-budget BYTES        decoded rows held at once (default 512 MiB)\n"
       "  --seed S                     seed of the training's random draws (k-means initial rows,\n"
       "                               samples) and of the HNSW levels; default 42. The same seed,\n"
       "                               data and options build the same index\n",
       {"column", "type", "partitions", "target-partition-size", "sub-vectors", "bits", "metric", "m",
        "ef-construction", "name", "threads", "model", "fragments", "memory-budget", "seed"},
       {"replace", "uncommitted"}},
      {"index train",
       "lancet index train DATASET --column COL --type ivf_flat|ivf_pq|ivf_sq|ivf_rq [--partitions N |\n"
       "               --target-partition-size N] [--sub-vectors M] [--bits B] [--metric l2|cosine|dot|hamming]\n"
       "               [--fragments 0,1,5] [--threads T] [--memory-budget BYTES] [--seed S] --out MODEL",
       "Trains the IVF centroids and the quantizer (PQ codebook, SQ bounds, RaBitQ rotation) of a\n"
       "distributed index once, as 'index create' would, and writes them to MODEL (a versioned,\n"
       "checksummed file) for 'lancet index create --model MODEL'. Commits nothing. Prints the\n"
       "model's fingerprint as one JSON line.\n"
       "  --out MODEL                  the model file to write\n"
       "  --fragments 0,1,5            train on these fragments only (default: all)\n"
       "  (the other options: as 'lancet index create')\n",
       {"column", "type", "partitions", "target-partition-size", "sub-vectors", "bits", "metric", "threads",
        "fragments", "memory-budget", "seed", "out"},
       {}},
      {"index merge-segments",
       "lancet index merge-segments DATASET SEGMENT.json...",
       "Merges uncommitted segments of one index, built with one model over disjoint fragments,\n"
       "into one new uncommitted segment covering all their fragments (Lance's\n"
       "merge_existing_index_segments). Prints its metadata as one JSON line; commits nothing.\n",
       {},
       {},
       true},
      {"index commit",
       "lancet index commit DATASET --name NAME --column COL SEGMENT.json...",
       "Commits uncommitted segments as index NAME on COL in one new version (Lance's\n"
       "commit_existing_index_segments). They must cover disjoint fragments that the dataset\n"
       "still has and share one trained model; existing segments of NAME whose fragments they\n"
       "cover entirely are replaced. Anything else is refused and nothing is committed.\n"
       "  --name NAME     the index's name (the segments were built under it)\n"
       "  --column COL    the indexed column\n",
       {"name", "column"},
       {},
       true},
      {"index list",
       "lancet index list DATASET",
       "Prints the dataset's indexes as JSON Lines (one line per index segment).\n",
       {},
       {}},
      {"index optimize",
       "lancet index optimize DATASET [--name NAME] [--merge N] [--retrain] [--target-partition-size N]\n"
       "               [--threads T]",
       "Indexes appended rows (a delta segment), merges segments and splits or joins partitions,\n"
       "as Lance's optimize_indices. Prints one JSON line per index. Commits of other writers\n"
       "meanwhile are rebased on as Lance does; the retries are reported on stderr.\n"
       "  --name NAME                  only this index (default: every vector index)\n"
       "  --merge N                    merge the newest N segments with the delta\n"
       "  --retrain                    rebuild the index over all rows\n"
       "  --target-partition-size N    the partition size to aim at\n"
       "  --threads T                  worker threads (default: the number of cores)\n",
       {"name", "merge", "target-partition-size", "threads"},
       {"retrain"}},
      {"search",
       "lancet search DATASET --column COL --query '[...]' [--k 10] [--nprobes N] [--refine R] [--columns a,b]\n"
       "               [--index NAME] [--ef E] [--where EXPR] [--postfilter] [--fast-search] [--bypass-index]\n"
       "               [--distance-range LO,HI] [--metric M] [--offset N] [--max-nprobes N] [--explain]",
       "Finds the nearest rows to a query vector, as LanceDB does: through the column's index, rows\n"
       "no index covers searched exactly and merged, deleted rows never returned. Prints\n"
       "{\"_rowid\":...,\"_distance\":...} lines (and --columns' values), nearest first.\n"
       "  --column COL          the vector column\n"
       "  --query JSON          the query vector, a JSON array of numbers\n"
       "  --k N                 number of results (default 10)\n"
       "  --nprobes N           partitions searched (default 20)\n"
       "  --max-nprobes N       search more partitions, up to N (0: all), while fewer than k rows\n"
       "                        pass the filter (default: --nprobes)\n"
       "  --refine R            re-rank k * R candidates by exact distance\n"
       "  --columns a,b         add these columns' values to each result\n"
       "  --index NAME          the index to use when the column has several\n"
       "  --ef E                IVF_HNSW_* indexes: the graph search's beam width (default 1.5 x k)\n"
       "  --where EXPR          a SQL filter, applied before the search (a prefilter)\n"
       "  --postfilter          apply --where to the k nearest instead (fewer rows may come back)\n"
       "  --fast-search         search the index only, not rows appended after it was built\n"
       "  --bypass-index        an exact search over every row\n"
       "  --distance-range L,H  only distances in [L, H) (either may be empty: ',0.5')\n"
       "  --metric M            the distance (l2, cosine, dot, hamming); another than the index's\n"
       "                        searches exactly, as LanceDB does\n"
       "  --offset N            skip the N nearest\n"
       "  --explain             print how the search runs to stderr\n",
       {"column", "query", "k", "nprobes", "max-nprobes", "refine", "columns", "index", "ef", "where",
        "distance-range", "metric", "offset"},
       {"postfilter", "fast-search", "bypass-index", "explain"}},
      {"compact",
       "lancet compact DATASET [--target-rows N] [--max-retries N]",
       "Merges small fragments and drops deleted rows, remapping vector indexes in the same commit.\n"
       "Prints the metrics as one JSON line. Commits of other writers meanwhile are checked as\n"
       "Lance does: appends are rebased on, a delete of a fragment being rewritten is a conflict.\n"
       "  --target-rows N   rows per new fragment (default 1048576)\n"
       "  --max-retries N   rebase on other writers' commits at most N times (default 20)\n",
       {"target-rows", "max-retries"},
       {}},
      {"cleanup",
       "lancet cleanup DATASET [--older-than SECONDS] [--keep N] [--delete-unverified] [--dry-run]",
       "Removes old versions and the files no kept version references (Lance's cleanup_old_versions):\n"
       "data, deletion, transaction and index files, and the leftovers of killed writes (on S3, their\n"
       "unfinished multipart uploads are aborted: \"aborted_uploads\"). The latest\n"
       "version and tagged versions are always kept. Files no manifest references are removed only\n"
       "when older than 7 days (or with --delete-unverified); nothing modified after the oldest kept\n"
       "version was committed is removed. Prints what it removed as one JSON line.\n"
       "  --older-than SECONDS   remove versions committed more than SECONDS ago (default 604800,\n"
       "                         7 days, unless --keep is given)\n"
       "  --keep N               keep the newest N versions (N >= 1); with --older-than, a version\n"
       "                         goes only when it meets both\n"
       "  --delete-unverified    also remove unreferenced files younger than 7 days: only when no\n"
       "                         write to the dataset is in progress\n"
       "  --dry-run              report what would be removed, remove nothing\n",
       {"older-than", "keep"},
       {"delete-unverified", "dry-run"}},
  };
  return all;
}

const command_spec* find_command(std::string_view name) {
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

std::string usage_text() {
  std::string s = "usage:\n";
  for (const auto& c : commands()) s += "  " + std::string(c.usage) + "\n";
  s += "  lancet help [COMMAND]\n  lancet --version\n";
  s += "\nA DATASET may be an s3:// or az:// URI: every command then takes --storage-option KEY=VALUE\n"
       "(repeatable; LanceDB's storageOptions names, e.g. aws_region, aws_endpoint, allow_http,\n"
       "azure_storage_account_name) and reads the AWS_* / AZURE_* environment variables LanceDB reads.\n";
  return s;
}

void print_command_help(const command_spec& c) {
  std::cout << "usage: " << c.usage << "\n\n" << c.help;
}

bool is_file(const std::string& path) { return fs::is_regular_file(path); }

// Other writers committed first this many times; the commit was rebased each time.
void report_retries(unsigned retries) {
  if (retries)
    std::cerr << "lancet: committed after " << retries << (retries == 1 ? " retry" : " retries")
              << " (other writers committed first; rebased on their commits)\n";
}

// write --uncommitted: data files only; their fragment metadata, one JSON line each.
int cmd_write_uncommitted(const args& a, const arrow::schema& schema) {
  if (a.get("max-retries")) throw usage_error("--max-retries applies to commits; give it to 'lancet commit'");
  dataset::write_options o;
  o.schema = schema;
  const auto mode = a.get("mode").value_or("append");
  if (mode == "append") o.mode = dataset::write_mode::append;
  else if (mode == "overwrite") o.mode = dataset::write_mode::overwrite;
  else if (mode == "create") o.mode = dataset::write_mode::create;
  else throw usage_error("--mode must be create, append or overwrite, not '" + mode + "'");
  if (auto f = a.get("format")) o.storage_version = file::parse_format_version(*f);
  json::rows_reader rows(schema, std::cin);
  const auto w = dataset::write_fragments(a.path, [&] { return rows.next(); }, o);
  std::cout << dataset::fragments_to_json_lines(w.fragments) << std::flush;
  std::cerr << "lancet: wrote " << w.rows_written << " rows to " << a.path << " as " << w.fragments.size()
            << " uncommitted fragment(s) (format " << file::to_string(w.storage_version) << "); commit them with "
            << "'lancet commit " << a.path
            << (mode == "append" && w.read_version ? " --operation append"
                                                   : " --operation overwrite --schema " + *a.get("schema"))
            << " FRAGMENT.json...'\n";
  return 0;
}

int cmd_write(const args& a) {
  const auto schema_path = a.get("schema");
  if (!schema_path) throw usage_error("write needs --schema SCHEMA.json");
  const auto schema = json::read_schema_file(*schema_path);
  if (a.get("uncommitted")) return cmd_write_uncommitted(a, schema);
  dataset::write_options o;
  const auto mode = a.get("mode").value_or("create");
  if (mode == "create") o.mode = dataset::write_mode::create;
  else if (mode == "append") o.mode = dataset::write_mode::append;
  else if (mode == "overwrite") o.mode = dataset::write_mode::overwrite;
  else throw usage_error("--mode must be create, append or overwrite, not '" + mode + "'");
  if (auto f = a.get("format")) o.storage_version = file::parse_format_version(*f);
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  const auto result = dataset::write_json_lines(a.path, schema, std::cin, o);
  std::cerr << "lancet: wrote " << result.rows_written << " rows to " << a.path << " (version " << result.version
            << ", format " << file::to_string(result.storage_version) << ")\n";
  report_retries(result.retries);
  return 0;
}

// Commits fragment metadata written by `write --uncommitted` (Lance's Append /
// Overwrite of fragments); prints the new version as one JSON line.
int cmd_commit(const args& a) {
  const auto op_name = a.get("operation");
  if (!op_name) throw usage_error("commit needs --operation append|overwrite");
  if (a.files.empty()) throw usage_error("commit needs FRAGMENT.json files (or '-' for stdin)");
  dataset::commit_operation op = dataset::operation::append{};
  if (*op_name == "overwrite") {
    dataset::operation::overwrite ow;
    if (auto s = a.get("schema")) ow.schema = json::read_schema_file(*s);
    op = std::move(ow);
  } else if (*op_name != "append") {
    throw usage_error("--operation must be append or overwrite, not '" + *op_name + "'");
  } else if (a.get("schema")) {
    throw usage_error("--schema applies to an overwrite; an append keeps the dataset's schema");
  }
  dataset::fragment_commit_options o;
  if (a.get("read-version")) o.read_version = a.number("read-version");
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  std::vector<dataset::fragment_metadata> fragments;
  bool stdin_read = false;
  for (const auto& f : a.files) {
    std::string text;
    if (f == "-") {
      if (stdin_read) throw usage_error("'-' (stdin) given twice");
      stdin_read = true;
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::ifstream in(f, std::ios::binary);
      if (!in) throw io_error("cannot open '" + f + "'");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto got = dataset::fragments_from_json(text, f == "-" ? std::string("stdin") : "'" + f + "'");
    fragments.insert(fragments.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
  }
  const auto r = dataset::commit(a.path, op, std::move(fragments), o);
  report_retries(r.retries);
  std::vector<std::uint64_t> ids;
  for (const auto& f : r.fragments) ids.push_back(f.id());
  json::object_writer j;  // members in name order, as before
  j.field("fragments", ids).field("read_version", r.read_version).field("rows", r.rows).field("version", r.version);
  std::cout << j.str() << "\n";
  std::cerr << "lancet: committed " << r.fragments.size() << " fragment(s), " << r.rows << " rows, to " << a.path
            << " as version " << r.version << " (" << *op_name << ")\n";
  return 0;
}

void print_batch(const arrow::record_batch& b) {
  std::string out;
  for (std::int64_t r = 0; r < b.num_rows(); ++r) {
    out.clear();
    json::append_row(out, b, r, json::write_options{});
    std::cout << out << '\n';
  }
}

int cmd_cat(const args& a) {
  const auto columns = a.get("columns") ? split_list(*a.get("columns")) : std::vector<std::string>{};
  const auto offset = a.number("offset").value_or(0);
  const auto limit = a.number("limit");
  if (is_file(a.path)) {
    if (a.get("version")) throw usage_error("--version applies to datasets, not to a single file");
    file::file_reader<io::file_source> r{io::file_source(a.path)};
    query::file_rows rows(r, {columns, a.get("where").value_or(""), offset, limit});
    while (auto b = rows.next()) print_batch(*b);
    return 0;
  }
  std::optional<std::uint64_t> version;
  if (a.get("version")) version = a.number("version");
  query::request q;
  q.columns = columns;
  q.filter = a.get("where").value_or("");
  q.offset = offset;
  q.limit = limit;
  auto rows = query::table::open(a.path, version).execute(q);
  while (auto b = rows.next()) print_batch(*b);
  return 0;
}

int cmd_delete(const args& a) {
  const auto where = a.get("where");
  if (!where) throw usage_error("delete needs --where EXPR (\"true\" deletes every row)");
  dataset::delete_options o;
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(*n);
  o.find_rows = query::indexed_row_finder();  // scalar indexes answer selective predicates
  const auto r = dataset::delete_where(a.path, *where, o);
  report_retries(r.retries);
  std::cout << json::object_writer{}.field("deleted_rows", r.deleted_rows).field("version", r.version).str() << "\n";
  return 0;
}

dataset::schema_change_options schema_change_options(const args& a) {
  dataset::schema_change_options o;
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  return o;
}

int cmd_drop_columns(const args& a) {
  if (a.files.size() != 1) throw usage_error("drop-columns needs the columns to drop after DATASET (a,s.b)");
  const auto r = dataset::drop_columns(a.path, split_list(a.files[0]), schema_change_options(a));
  report_retries(r.retries);
  std::cout << json::object_writer{}.field("version", r.version).str() << "\n";
  return 0;
}

int cmd_update(const args& a) {
  std::vector<std::pair<std::string, std::string>> set;
  for (const auto& item : a.all("set")) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw usage_error("--set takes COL=EXPR, got '" + item + "'");
    set.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  if (set.empty()) throw usage_error("update needs --set COL=EXPR");
  dataset::update_options o;
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  o.find_rows = query::indexed_row_finder();
  const auto r = dataset::update(a.path, a.get("where").value_or(""), set, o);
  report_retries(r.retries);
  std::cout << json::object_writer{}.field("rows_updated", r.rows_updated).field("version", r.version).str() << "\n";
  return 0;
}

int cmd_merge_insert(const args& a) {
  dataset::merge_insert_options o;
  if (auto on = a.get("on")) o.on = split_list(*on);
  if (o.on.empty()) throw usage_error("merge-insert needs --on KEY[,KEY2]");
  o.when_matched_update_all = a.has("when-matched-update-all");
  o.when_not_matched_insert_all = a.has("when-not-matched-insert-all");
  o.when_not_matched_by_source_delete = a.has("when-not-matched-by-source-delete");
  if (!o.when_matched_update_all && !o.when_not_matched_insert_all && !o.when_not_matched_by_source_delete)
    throw usage_error("merge-insert needs --when-matched-update-all, --when-not-matched-insert-all or "
                      "--when-not-matched-by-source-delete");
  if (auto e = a.get("matched-if")) {
    if (!o.when_matched_update_all) throw usage_error("--matched-if applies to --when-matched-update-all");
    o.matched_if = *e;
  }
  if (auto e = a.get("source-delete-if")) {
    if (!o.when_not_matched_by_source_delete)
      throw usage_error("--source-delete-if applies to --when-not-matched-by-source-delete");
    o.by_source_delete_if = *e;
  }
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  const auto d = dataset::dataset::open(a.path);
  json::rows_reader rows(d.schema(), std::cin);  // streamed: the source may exceed memory
  const auto r = dataset::merge_insert(a.path, [&] { return rows.next(); }, o);
  report_retries(r.retries);
  std::cout << json::object_writer{}
                   .field("deleted_rows", r.deleted_rows)
                   .field("inserted_rows", r.inserted_rows)
                   .field("updated_rows", r.updated_rows)
                   .field("version", r.version)
                   .str()
            << "\n";
  return 0;
}

int cmd_add_columns(const args& a) {
  const auto nulls = a.get("null");
  const auto from = a.get("from");
  const auto schema_file = a.get("schema");
  const auto sql = a.all("column");
  if (int(bool(nulls)) + int(bool(from)) + int(!sql.empty()) != 1)
    throw usage_error("add-columns needs one of --column NAME=EXPR, --null name:type,... or --from ROWS.jsonl");
  if (bool(from) != bool(schema_file)) throw usage_error("--from needs --schema NEW.json (and --schema needs --from)");
  dataset::schema_change_result r;
  if (!sql.empty()) {
    std::vector<std::pair<std::string, std::string>> columns;
    for (const auto& item : sql) {
      const auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
        throw usage_error("--column takes NAME=EXPR, got '" + item + "'");
      columns.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    r = dataset::add_columns(a.path, columns, schema_change_options(a));
  } else if (nulls) {
    // name:type pairs, read as a schema file's fields.
    std::string text = "{\"fields\": [";
    for (const auto& item : split_list(*nulls)) {
      const auto colon = item.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
        throw usage_error("--null takes name:type pairs, got '" + item + "'");
      if (text.back() != '[') text += ", ";
      text += "{\"name\": " + json::quote(item.substr(0, colon)) + ", \"type\": " + json::quote(item.substr(colon + 1)) + "}";
    }
    const auto s = json::parse_schema(text + "]}");
    r = dataset::add_null_columns(a.path, s.fields, schema_change_options(a));
  } else {
    const auto s = json::read_schema_file(*schema_file);
    std::string text;
    if (*from == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::ifstream in(*from, std::ios::binary);
      if (!in) throw lancet::not_found_error("cannot open '" + *from + "'");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const std::vector<arrow::record_batch> rows{json::read_rows(s, text)};
    r = dataset::add_columns(a.path, rows, schema_change_options(a));
  }
  report_retries(r.retries);
  std::cout << json::object_writer{}.field("version", r.version).str() << "\n";
  return 0;
}

int cmd_alter_columns(const args& a) {
  std::vector<dataset::column_alteration> changes;
  if (auto v = a.get("rename"))
    for (const auto& pair : split_list(*v)) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size())
        throw usage_error("--rename takes OLD=NEW pairs, got '" + pair + "'");
      changes.push_back({pair.substr(0, eq), pair.substr(eq + 1), std::nullopt});
    }
  for (const auto& [flag, allow] : {std::pair{"nullable", true}, std::pair{"not-nullable", false}})
    if (auto v = a.get(flag))
      for (const auto& c : split_list(*v)) changes.push_back({c, std::nullopt, allow});
  if (auto v = a.get("cast")) {
    std::string text = "{\"fields\": [";
    std::vector<std::string> names;
    for (const auto& item : split_list(*v)) {
      const auto colon = item.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
        throw usage_error("--cast takes column:type pairs, got '" + item + "'");
      if (text.back() != '[') text += ", ";
      text += "{\"name\": \"c" + std::to_string(names.size()) + "\", \"type\": " + json::quote(item.substr(colon + 1)) + "}";
      names.push_back(item.substr(0, colon));
    }
    const auto types = json::parse_schema(text + "]}");
    for (std::size_t i = 0; i < names.size(); ++i) {
      dataset::column_alteration c{names[i], std::nullopt, std::nullopt, types.fields[i].type};
      changes.push_back(std::move(c));
    }
  }
  if (changes.empty()) throw usage_error("alter-columns needs --rename, --nullable, --not-nullable or --cast");
  const auto r = dataset::alter_columns(a.path, changes, schema_change_options(a));
  report_retries(r.retries);
  std::cout << json::object_writer{}.field("version", r.version).str() << "\n";
  return 0;
}

std::string describe_layout(const pb::file2::column_metadata::page& p) {
  if (!p.encoding) return "no encoding";
  auto any = p.encoding->direct_any();
  std::string name(any.type_name());
  if (any.type_url == pb::enc21::page_layout::type_url) {
    auto pl = pb::unpack_any<pb::enc21::page_layout>(any);
    switch (pl.value.index()) {
      case 1: return "mini-block";
      case 2: return "constant/all-null";
      case 3: return "full-zip";
      case 4: return "blob";
      default: return "structural";
    }
  }
  auto enc = pb::unpack_any<pb::enc20::array_encoding>(any);
  static const char* names[] = {"?", "flat", "nullable", "fixed_size_list", "list", "struct", "binary", "dictionary",
                                "fsst", "packed_struct", "bitpacked", "fixed_size_binary", "bitpacked_for_non_neg",
                                "constant", "inline_bitpacking", "out_of_line_bitpacking", "variable",
                                "packed_struct_fixed_width_mini_block", "block", "rle", "general_mini_block",
                                "byte_stream_split"};
  return enc.value.index() < std::size(names) ? names[enc.value.index()] : "?";
}

template <class Reader>
void inspect_file(const Reader& r, const std::string& label, const std::string& indent) {
  std::cout << indent << label << ": Lance " << file::to_string(r.version()) << " (footer " << r.major() << "."
            << r.minor() << "), " << r.num_rows() << " rows, " << r.num_columns() << " columns, "
            << r.num_global_buffers() << " global buffers, " << r.source().size() << " bytes\n";
  for (std::size_t f = 0; f < r.schema().fields.size(); ++f)
    std::cout << indent << "  field " << r.schema().fields[f].name << ": " << r.schema().fields[f].logical_type
              << (r.schema().fields[f].nullable ? "" : " not null") << ", " << r.field_length(f) << " rows\n";
  for (std::size_t c = 0; c < r.num_columns(); ++c) {
    const auto& col = r.column(c);
    std::uint64_t bytes = 0;
    std::map<std::string, int> layouts;
    for (const auto& p : col.metadata.pages) {
      for (auto s : p.buffer_sizes) bytes += s;
      ++layouts[describe_layout(p)];
    }
    std::cout << indent << "  column " << c << ": " << col.metadata.pages.size() << " pages, " << bytes << " bytes";
    for (const auto& [k, n] : layouts) std::cout << ", " << n << "x " << k;
    std::cout << "\n";
  }
}

int cmd_inspect(const args& a) {
  if (is_file(a.path)) {
    file::file_reader<io::file_source> r{io::file_source(a.path)};
    inspect_file(r, a.path, "");
    return 0;
  }
  auto versions = dataset::dataset::list_dataset_versions(a.path);
  std::cout << a.path << ": " << versions.size() << " versions\n";
  for (const auto& v : versions)
    std::cout << "  version " << v.version << " by " << (v.writer.empty() ? "?" : v.writer) << "\n";
  auto ds = dataset::dataset::open(a.path);
  std::cout << "latest version " << ds.version() << ": " << ds.count_rows() << " rows, " << ds.fragments().size()
            << " fragments\n";
  for (const auto& f : ds.fragments()) {
    std::cout << "  fragment " << f.id << ": " << f.physical_rows << " rows, " << f.deleted_rows << " deleted\n";
    for (const auto& path : f.data_files) {
      file::file_reader<io::file_source> r{io::file_source(path)};
      inspect_file(r, fs::path(path).filename().string(), "    ");
    }
  }
  return 0;
}

// ---- index create / list, search --------------------------------------------------

// A progress line per stage on stderr, redrawn in place while the stage runs.
struct progress_bar {
  index::build_stage stage{};
  bool started = false;
  int last_pct = -1;
  void operator()(const index::build_progress& p) {
    if (!started || p.stage != stage) {
      if (started) std::cerr << "\n";
      started = true;
      stage = p.stage;
      last_pct = -1;
    }
    const int pct = p.total ? int(100.0 * double(std::min(p.done, p.total)) / double(p.total)) : 100;
    if (pct == last_pct) return;
    last_pct = pct;
    const int width = 30, fill = pct * width / 100;
    std::cerr << "\r" << index::build_stage_name(stage) << " [" << std::string(std::size_t(fill), '#')
              << std::string(std::size_t(width - fill), ' ') << "] " << p.done << "/" << p.total << std::flush;
  }
  void finish() {
    if (started) std::cerr << "\n";
  }
};

// A scalar index (--type btree|bitmap|label_list): the column and the index's name; --replace.
int cmd_scalar_create(const args& a, const std::string& type) {
  index::scalar_index_options o;
  o.column = a.get("column").value_or("");
  if (o.column.empty()) throw usage_error("--column is required");
  o.name = a.get("name").value_or("");
  o.replace = a.get("replace").has_value();
  if (type == "btree") {
    const auto r = index::build_btree_index(a.path, o);
    std::cout << "created BTREE index '" << r.name << "' (" << r.uuid.to_string() << ") on '" << o.column << "': " << r.rows
              << " rows in " << r.pages << " pages; version " << r.version << "\n";
    return 0;
  }
  const bool labels = type == "label_list";
  const auto r = labels ? index::build_label_list_index(a.path, o) : index::build_bitmap_index(a.path, o);
  std::cout << "created " << (labels ? "LABEL_LIST" : "BITMAP") << " index '" << r.name << "' (" << r.uuid.to_string()
            << ") on '" << o.column << "': " << r.rows << " rows, " << r.pages << (labels ? " labels" : " values")
            << "; version " << r.version << "\n";
  return 0;
}

int cmd_index_create(const args& a) {
  if (const auto t = a.get("type"); t == "btree" || t == "bitmap" || t == "label_list") return cmd_scalar_create(a, *t);
  std::optional<index::trained_model> model;
  if (auto m = a.get("model")) model = index::read_model_file(*m);
  index::build_options o = build_flags(a, model ? &*model : nullptr);
  o.name = a.get("name").value_or("");
  o.replace = a.get("replace").has_value();
  const bool uncommitted = a.get("uncommitted").has_value();
  if (o.fragment_ids && !uncommitted)
    throw usage_error("--fragments builds a segment: add --uncommitted (and commit the segments with 'lancet index commit')");
  if (uncommitted && o.replace)
    throw usage_error("--replace applies when committing: give it to 'lancet index commit' (which replaces covered segments)");
  if (model && (o.num_partitions || o.target_partition_size || o.num_sub_vectors || o.num_bits))
    throw usage_error("the model fixes the partitions and the quantizer: drop --partitions / --target-partition-size / "
                      "--sub-vectors / --bits");
  std::optional<boost::asio::thread_pool> pool;
  o.pool = worker_pool(a, pool);
  progress_bar bar;
  o.on_progress = [&](const index::build_progress& p) { bar(p); };
  try {
    if (uncommitted) {
      // One segment of a distributed build: with the given model, or one trained on
      // these fragments (which 'index commit' will only combine with its own).
      if (!o.fragment_ids) {
        std::vector<std::uint64_t> all;
        for (const auto& f : dataset::dataset::open(a.path).fragments()) all.push_back(f.id);
        o.fragment_ids = all;
      }
      if (!model) model = index::train_model(a.path, o);
      const auto frags = *o.fragment_ids;
      const auto seg = index::build_segment(a.path, o, *model, frags);
      bar.finish();
      std::cout << index::segment_to_json(seg) << "\n";
      std::cerr << "lancet: built segment " << seg.uuid().to_string() << " of index '" << seg.name() << "' ("
                << seg.num_partitions << " partitions, " << seg.rows_indexed << " rows, " << frags.size()
                << " fragments) on " << a.path << "; not committed\n";
      return 0;
    }
    if (model) {
      if (o.column != model->column || o.type != model->type || o.metric != model->metric)
        throw invalid_input_error("the model is an " + std::string(index::ivf_index_type_name(model->type)) + " " +
                                  std::string(simd::distance_name(model->metric)) + " model of column '" +
                                  model->column + "'; the flags ask for another");
      o.ivf_centroids = model->ivf.centroids;
      o.quantizer = model->ivf.quantizer;
    }
    const auto r = index::build_ivf_index(a.path, o);
    bar.finish();
    report_retries(r.retries);
    std::cerr << "lancet: built " << index::ivf_index_type_name(o.type) << " index '" << r.index.name << "' ("
              << r.num_partitions << " partitions, " << r.rows_indexed << " rows indexed, " << r.rows_skipped
              << " skipped) on " << a.path << ", version " << r.version << "\n";
  } catch (...) {
    bar.finish();
    throw;
  }
  return 0;
}

// Trains a distributed build's model once and writes it to --out.
int cmd_index_train(const args& a) {
  const auto out = a.get("out");
  if (!out) throw usage_error("index train needs --out MODEL");
  index::build_options o = build_flags(a, nullptr);
  std::optional<boost::asio::thread_pool> pool;
  o.pool = worker_pool(a, pool);
  progress_bar bar;
  o.on_progress = [&](const index::build_progress& p) { bar(p); };
  index::trained_model m;
  try {
    m = index::train_model(a.path, o);
  } catch (...) {
    bar.finish();
    throw;
  }
  bar.finish();
  index::write_model_file(*out, m);
  json::object_writer j;
  j.field("column", m.column)
      .field("dimension", m.ivf.centroids.cols)
      .field("distance_type", simd::distance_name(m.metric))
      .field("fingerprint", index::model_fingerprint(m))
      .field("model", *out)
      .field("partitions", m.ivf.centroids.rows)
      .field("type", index::ivf_index_type_name(m.type));
  std::cout << j.str() << "\n";
  std::cerr << "lancet: trained " << index::ivf_index_type_name(m.type) << " model (" << m.ivf.centroids.rows
            << " partitions) of '" << m.column << "' on " << a.path << " into " << *out << "\n";
  return 0;
}

// The segments named on the command line (one JSON file each).
std::vector<index::segment_metadata> read_segments(const args& a) {
  if (a.files.empty()) throw usage_error(a.command + " needs at least one SEGMENT.json");
  std::vector<index::segment_metadata> out;
  for (const auto& f : a.files) {
    std::ifstream in(f);
    if (!in) throw invalid_input_error("cannot open the segment file '" + f + "'");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out.push_back(index::segment_from_json(text, "segment file '" + f + "'"));
  }
  return out;
}

int cmd_index_merge_segments(const args& a) {
  const auto segs = read_segments(a);
  const auto m = index::merge_segments(a.path, segs);
  std::cout << index::segment_to_json(m) << "\n";
  std::cerr << "lancet: merged " << segs.size() << " segments of index '" << m.name() << "' into segment "
            << m.uuid().to_string() << " (" << m.rows_indexed << " rows, " << m.fragment_ids().size()
            << " fragments); not committed\n";
  return 0;
}

int cmd_index_commit(const args& a) {
  const auto name = a.get("name");
  if (!name) throw usage_error("index commit needs --name NAME");
  const auto column = a.get("column");
  if (!column) throw usage_error("index commit needs --column COL");
  const auto segs = read_segments(a);
  const auto r = index::commit_segments(a.path, *name, *column, segs);
  report_retries(r.retries);
  std::vector<std::string> seg_uuids, replaced;
  for (const auto& s : segs) seg_uuids.push_back(s.uuid().to_string());
  for (const auto& im : r.replaced) replaced.push_back(im.uuid.to_string());
  json::object_writer j;
  j.field("name", *name).field("replaced", replaced).field("segments", seg_uuids).field("version", r.version);
  std::cout << j.str() << "\n";
  std::cerr << "lancet: committed " << segs.size() << " segment(s) as index '" << *name << "' on " << a.path
            << ", version " << r.version << "\n";
  return 0;
}

int cmd_index_list(const args& a) {
  for (const auto& i : index::list_indices(dataset::dataset::open(a.path))) {
    json::object_writer j;
    j.field("columns", i.columns).field("dataset_version", i.dataset_version);
    if (i.distance) j.field("distance", index::distance_type_name(*i.distance));
    j.field("fragments", i.fragment_ids).field("name", i.name).field("type", i.index_type).field("uuid", i.uuid.to_string());
    std::cout << j.str() << "\n";
  }
  return 0;
}

// "0.5,2" / ",2" / "0.5," -> the bounds of --distance-range.
std::pair<std::optional<float>, std::optional<float>> parse_range(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) throw usage_error("--distance-range needs LO,HI (either may be empty), got '" + text + "'");
  const auto bound = [&](const std::string& part) -> std::optional<float> {
    if (part.empty()) return std::nullopt;
    float v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || p != part.data() + part.size())
      throw usage_error("--distance-range: '" + part + "' is not a number");
    return v;
  };
  return {bound(text.substr(0, comma)), bound(text.substr(comma + 1))};
}

int cmd_search(const args& a) {
  const auto column = a.get("column");
  if (!column) throw usage_error("search needs --column COL");
  const auto qtext = a.get("query");
  if (!qtext) throw usage_error("search needs --query '[v1, v2, ...]'");
  json::value q;
  json::syntax_error bad;
  if (!json::try_parse(*qtext, q, bad)) throw invalid_input_error("--query is not JSON: '" + *qtext + "'");
  if (q.k != json::value::kind::array) throw invalid_input_error("--query must be a JSON array of numbers");
  std::vector<double> vec;
  for (const auto& v : q.items) {
    if (v.k == json::value::kind::integer) vec.push_back(double(v.i));
    else if (v.k == json::value::kind::unsigned_) vec.push_back(double(v.u));
    else if (v.k == json::value::kind::number) vec.push_back(std::strtod(v.text.c_str(), nullptr));
    else throw invalid_input_error("--query holds a non-number: " + json::write(v));
  }
  const auto k = a.number("k").value_or(10);
  if (k == 0) throw usage_error("--k must be positive");
  const auto nprobes = a.number("nprobes").value_or(20);
  if (nprobes == 0) throw usage_error("--nprobes must be positive");
  const auto user_columns = a.get("columns") ? split_list(*a.get("columns")) : std::vector<std::string>{};
  auto t = query::table::open(a.path);
  auto b = t.query().nearest(*column, std::move(vec)).k(k).nprobes(nprobes).offset(a.number("offset").value_or(0));
  if (auto m = a.number("max-nprobes")) b.maximum_nprobes(*m);
  if (auto r = a.number("refine")) b.refine_factor(*r);
  if (auto e = a.number("ef")) b.ef(*e);
  if (auto i = a.get("index")) b.index(*i);
  if (auto w = a.get("where")) b.where(*w);
  if (a.get("postfilter")) {
    if (!a.get("where")) throw usage_error("--postfilter applies to --where");
    b.postfilter();
  }
  if (a.get("fast-search")) b.fast_search();
  if (a.get("bypass-index")) b.bypass_vector_index();
  if (auto r = a.get("distance-range")) {
    const auto [lo, hi] = parse_range(*r);
    b.distance_range(lo, hi);
  }
  if (auto m = a.get("metric")) b.distance_type(index::parse_distance(*m));
  // The user's columns, then _distance and _rowid (printed first).
  std::vector<std::string> cols = user_columns;
  cols.push_back("_distance");
  b.select(cols).with_row_id();
  if (a.get("explain")) std::cerr << b.explain();
  const auto hits = b.to_batch();
  const auto n = user_columns.size();
  arrow::record_batch values;
  values.schema = std::make_shared<arrow::schema>();
  for (std::size_t c = 0; c < n; ++c) {
    const_cast<arrow::schema&>(*values.schema).fields.push_back(hits.schema->fields[c]);
    values.columns.push_back(hits.columns[c]);
  }
  const auto& dist = *hits.columns[n];
  const auto& ids = *hits.columns[n + 1];
  std::string row;
  for (std::int64_t i = 0; i < hits.num_rows(); ++i) {
    // Distances are f32: printed in their shortest round-trip form.
    const float d = dist.value<float>(i);
    char num[64];
    const auto end = std::to_chars(num, num + sizeof num, d).ptr;
    std::string line = json::object_writer{}
                           .field("_rowid", ids.value<std::uint64_t>(i))
                           .raw("_distance", std::isfinite(d) ? std::string_view(num, std::size_t(end - num)) : "null")
                           .str();
    if (n > 0) {
      row.clear();
      json::append_row(row, values, i, json::write_options{});
      if (row.size() > 2) line = line.substr(0, line.size() - 1) + "," + row.substr(1);
    }
    std::cout << line << "\n";
  }
  return 0;
}

// Indexes appended rows (a delta segment), merges segments and splits / joins
// partitions (Lance's optimize_indices). One JSON line per index on stdout.
int cmd_index_optimize(const args& a) {
  index::optimize_options o;
  o.name = a.get("name").value_or("");
  if (auto n = a.number("merge")) o.num_indices_to_merge = std::size_t(*n);
  o.retrain = a.get("retrain").has_value();
  if (o.retrain && o.num_indices_to_merge) throw usage_error("give --merge or --retrain, not both");
  if (auto n = a.number("target-partition-size")) {
    if (*n == 0) throw usage_error("--target-partition-size must be positive");
    o.target_partition_size = std::size_t(*n);
  }
  std::optional<boost::asio::thread_pool> pool;
  o.pool = worker_pool(a, pool);
  const auto r = index::optimize_indices(a.path, o);
  report_retries(r.retries);
  for (const auto& i : r.indices) {
    std::vector<std::string> splits;
    for (const auto& s : i.splits)
      splits.push_back(json::object_writer{}.field("partition", s.partition).field("ways", s.ways).str());
    json::object_writer j;  // members in name order, as before
    j.field("changed", i.changed).field("joins", i.joins).field("name", i.name);
    if (i.changed) j.field("partitions", i.num_partitions).field("rows", i.rows_in_segment);
    j.field("rows_added", i.rows_added)
        .field("rows_dropped", i.rows_dropped)
        .field("segments_after", i.segments_after)
        .field("segments_before", i.segments_before)
        .field("segments_merged", i.segments_merged)
        .raw("splits", json::raw_list(splits));
    if (i.uuid) j.field("uuid", i.uuid->to_string());
    std::cout << j.str() << "\n";
  }
  if (r.indices.empty()) std::cerr << "lancet: " << a.path << " has no vector index to optimise\n";
  else std::cerr << "lancet: optimised " << r.indices.size() << " index(es) of " << a.path << ", version " << r.version << "\n";
  return 0;
}

// Merges small fragments and drops deleted rows (Lance's compaction); vector indexes
// are remapped in the same commit. Prints the metrics as one JSON line.
int cmd_compact(const args& a) {
  dataset::compaction_options o;
  o.remap_indexes = index::compaction_remapper();
  if (auto n = a.number("target-rows")) {
    if (*n == 0) throw usage_error("--target-rows must be positive");
    o.target_rows_per_fragment = *n;
  }
  if (auto n = a.number("max-retries")) o.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  const auto r = dataset::compact_files(a.path, o);
  report_retries(r.retries);
  std::vector<std::string> indices;
  for (const auto& i : r.indices)
    indices.push_back(json::object_writer{}
                          .field("name", i.name)
                          .field("new_uuid", i.new_uuid.to_string())
                          .field("old_uuid", i.old_uuid.to_string())
                          .field("rows", i.stats.rows_after)
                          .field("rows_dropped", i.stats.rows_dropped)
                          .str());
  json::object_writer j;  // members in name order, as before
  j.field("files_added", r.metrics.files_added)
      .field("files_removed", r.metrics.files_removed)
      .field("fragments_added", r.metrics.fragments_added)
      .field("fragments_removed", r.metrics.fragments_removed)
      .raw("indices", json::raw_list(indices))
      .field("read_version", r.read_version)
      .field("version", r.version);
  std::cout << j.str() << "\n";
  if (r.version == r.read_version) std::cerr << "lancet: " << a.path << " needs no compaction (version " << r.version << ")\n";
  else
    std::cerr << "lancet: compacted " << a.path << ": " << r.metrics.fragments_removed << " fragments into "
              << r.metrics.fragments_added << ", " << r.indices.size() << " index(es) remapped, version " << r.version << "\n";
  return 0;
}

// Removes old versions and unreferenced files (Lance's cleanup_old_versions); prints
// the removal stats as one JSON line.
int cmd_cleanup(const args& a) {
  dataset::cleanup_options o;
  if (auto n = a.number("keep")) {
    if (*n == 0) throw usage_error("--keep must be at least 1 (the latest version is always kept)");
    o.keep_versions = *n;
  }
  if (auto s = a.number("older-than")) o.older_than = std::chrono::seconds(*s);
  else if (!o.keep_versions) o.older_than = std::chrono::hours(24 * 7);
  o.delete_unverified = a.get("delete-unverified").has_value();
  o.dry_run = a.get("dry-run").has_value();
  const auto st = dataset::cleanup_old_versions(a.path, o);
  json::object_writer j;  // members in name order, as before
  j.field("aborted_uploads", st.aborted_uploads)
      .field("bytes_removed", st.bytes_removed)
      .field("dry_run", o.dry_run)
      .field("files_removed", st.files_removed)
      .field("latest_version", st.latest_version)
      .field("old_versions", st.old_versions)
      .field("removed_files", st.removed_files)
      .field("removed_versions", st.removed_versions)
      .field("tagged_versions_kept", st.tagged_versions_kept);
  std::cout << j.str() << "\n";
  std::cerr << "lancet: " << (o.dry_run ? "would remove " : "removed ") << st.old_versions << " old version(s) and "
            << st.files_removed << " file(s), " << st.bytes_removed << " bytes, from " << a.path << "\n";
  return 0;
}

// Runs one command; a help request prints the command's help and succeeds.
// cat and inspect of a single file: the library's errors about its bytes (a missing
// footer, a bad page) do not know the file's name; say which file it was.
struct file_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
template <class F>
int naming_file(const std::string& path, F&& f) {
  if (!is_file(path)) return f();
  try {
    return f();
  } catch (const lancet::error& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    throw file_error("'" + path + "': " + what);
  }
}

int run(const command_spec& spec, const std::vector<std::string>& rest) {
  const auto a = args::parse({spec.name, spec.options, spec.flags, spec.more_files}, rest);
  if (a.help) {
    print_command_help(spec);
    return 0;
  }
  mount_object_store(a);
  if (spec.name == "write") return cmd_write(a);
  if (spec.name == "commit") return cmd_commit(a);
  if (spec.name == "cat") return naming_file(a.path, [&] { return cmd_cat(a); });
  if (spec.name == "inspect") return naming_file(a.path, [&] { return cmd_inspect(a); });
  if (spec.name == "index create") return cmd_index_create(a);
  if (spec.name == "index train") return cmd_index_train(a);
  if (spec.name == "index merge-segments") return cmd_index_merge_segments(a);
  if (spec.name == "index commit") return cmd_index_commit(a);
  if (spec.name == "index list") return cmd_index_list(a);
  if (spec.name == "index optimize") return cmd_index_optimize(a);
  if (spec.name == "search") return cmd_search(a);
  if (spec.name == "delete") return cmd_delete(a);
  if (spec.name == "drop-columns") return cmd_drop_columns(a);
  if (spec.name == "add-columns") return cmd_add_columns(a);
  if (spec.name == "update") return cmd_update(a);
  if (spec.name == "merge-insert") return cmd_merge_insert(a);
  if (spec.name == "alter-columns") return cmd_alter_columns(a);
  if (spec.name == "compact") return cmd_compact(a);
  if (spec.name == "cleanup") return cmd_cleanup(a);
  throw std::logic_error("no handler for '" + std::string(spec.name) + "'");
}

// "index" alone (or "index --help") describes its subcommands.
void print_index_help() {
  std::cout << "usage:\n";
  for (const auto& c : commands())
    if (c.name.rfind("index ", 0) == 0) std::cout << "  " << c.usage << "\n";
  std::cout << "\nRun 'lancet help index create' (train, merge-segments, commit, list, optimize) for one subcommand's\n"
               "options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all(argv + 1, argv + argc);
  const command_spec* current = nullptr;  // for the usage printed after a usage error
  try {
    if (all.empty()) throw usage_error("missing command");
    const std::string& cmd = all[0];
    if (cmd == "--version" || cmd == "version") {
      std::cout << "lancet " << LANCET_VERSION_STRING << "\n";
      return 0;
    }
    if (cmd == "help" || is_help(cmd)) {
      if (all.size() == 1) {
        std::cout << usage_text() << "\nRun 'lancet help COMMAND' for a command's options.\n";
        return 0;
      }
      std::string name = all[1];
      if (name == "index" && all.size() == 2) {
        print_index_help();
        return 0;
      }
      std::size_t words = 2;
      if (name == "index") name += " " + all[2], words = 3;
      const auto* spec = find_command(name);
      if (!spec) throw usage_error("help: unknown command '" + name + "'");
      if (all.size() > words) throw usage_error("help: unexpected argument '" + all[words] + "'");
      print_command_help(*spec);
      return 0;
    }
    if (cmd == "index") {
      if (all.size() < 2) throw usage_error("index needs a subcommand: create, train, merge-segments, commit, list or optimize");
      if (is_help(all[1])) {
        print_index_help();
        return 0;
      }
      current = find_command("index " + all[1]);
      if (!current) throw usage_error("unknown index subcommand '" + all[1] + "' (create, train, merge-segments, commit, list or optimize)");
      return run(*current, {all.begin() + 2, all.end()});
    }
    current = find_command(cmd);
    if (!current || cmd.find(' ') != std::string::npos)  // "index create" is two arguments
      throw usage_error(cmd.rfind("-", 0) == 0 ? "unknown flag '" + cmd + "'" : "unknown command '" + cmd + "'");
    return run(*current, {all.begin() + 1, all.end()});
  } catch (const usage_error& e) {
    std::cerr << "lancet: " << e.what() << "\n";
    if (current) std::cerr << "usage: " << current->usage << "\n(run 'lancet help " << current->name << "' for its options)\n";
    else std::cerr << usage_text();
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lancet: " << e.what() << "\n";
    return 1;
  }
}
