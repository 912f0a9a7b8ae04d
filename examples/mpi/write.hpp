// lancet-mpi write: a distributed write of JSON Lines files, Lance 12's contract over
// MPI. Rank 0 expands the input glob and deals the files out by size (largest first,
// each to the rank with the fewest bytes so far); every rank writes its files'
// rows as fragments (dataset::write_fragments) and sends their metadata JSON to rank 0,
// which commits them all in one Append or Overwrite (dataset::commit) with the version
// read before the write as its read version. A rank that fails makes every rank exit
// non-zero; then nothing is committed and every rank removes the data files it wrote.
#pragma once

#include <glob.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <lancet/dataset/distributed.hpp>
#include <lancet/dataset/fragment_json.hpp>
#include <lancet/core/deal.hpp>
#include <lancet/json/files_reader.hpp>
#include <lancet/json/schema_json.hpp>
#include <lancet/json/write.hpp>

#include "common.hpp"

namespace lancet_mpi {

inline constexpr std::string_view write_usage =
    "lancet-mpi write DATASET --schema SCHEMA.json --input 'rows-*.jsonl' [--operation append|overwrite]\n"
    "               [--format 2.0|2.1|2.2] [--max-rows-per-file N] [--max-retries N]";
inline constexpr std::string_view write_help =
    "Writes the rows of the JSON Lines files matching --input as one new version of DATASET.\n"
    "The files are dealt out to the ranks by size; each rank writes its rows as fragments and\n"
    "rank 0 commits every rank's fragments in one transaction, then prints\n"
    "{\"version\", \"read_version\", \"fragments\", \"rows\", \"files\", \"retries\"} on stdout. If any\n"
    "rank fails (a bad row names its file and line), every rank exits non-zero, nothing is\n"
    "committed and the data files written are removed.\n"
    "  --schema FILE          the table's Arrow schema as JSON (README.md, \"Schema files\")\n"
    "  --input GLOB           the input files (quote it: rank 0 expands it)\n"
    "  --operation OP         append (default when DATASET exists) or overwrite (default when\n"
    "                         it does not: creates it)\n"
    "  --format V             data file format of a new or overwritten dataset (default 2.2)\n"
    "  --max-rows-per-file N  rows per fragment (default 1048576)\n"
    "  --max-retries N        rebase the commit on other writers' commits at most N times (default 20)\n"
    "  --storage-option K=V   for an s3:// or az:// DATASET: a LanceDB storage option\n"
    "                         (repeatable; the AWS_* / AZURE_* environment is read too)\n";

namespace write_detail {

// The plan rank 0 broadcasts: each rank's input files, the operation, the read version.
struct plan {
  std::vector<std::vector<std::string>> files;  // per rank
  std::size_t total_files = 0;
  bool overwrite = false;
  std::int64_t read_version = -1;  // -1: the dataset did not exist

  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & files & total_files & overwrite & read_version;
  }
};

inline std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc == GLOB_NOMATCH) throw lancet::invalid_input_error("--input '" + pattern + "' matches no file");
  if (rc != 0) throw lancet::io_error("--input '" + pattern + "': cannot read the directories it names");
  return out;
}

// The files dealt out by size (lancet::deal_by_weight; + 1 byte each, so that empty
// files still spread out), each rank's in name order.
inline std::vector<std::vector<std::string>> deal(std::vector<std::string> files, int ranks) {
  std::vector<std::uint64_t> sizes;
  for (const auto& f : files) {
    if (!std::filesystem::is_regular_file(f)) throw lancet::invalid_input_error("input '" + f + "' is not a file");
    sizes.push_back(std::uint64_t(std::filesystem::file_size(f)) + 1);
  }
  const auto d = lancet::deal_by_weight(sizes, std::size_t(ranks));
  std::vector<std::vector<std::string>> out(d.items.size());
  for (std::size_t r = 0; r < d.items.size(); ++r) {
    for (const auto i : d.items[r]) out[r].push_back(files[i]);
    std::sort(out[r].begin(), out[r].end());
  }
  return out;
}

}  // namespace write_detail

inline int run_write(const mpi::communicator& world, const std::vector<std::string>& argv) {
  namespace ds = lancet::dataset;
  const auto o = args::parse({"write", {"schema", "input", "operation", "format", "max-rows-per-file", "max-retries"}, {}},
                             argv);
  lancet_tools::storage_options_of(o);  // usage errors first, alike on every rank
  step(world, "opening the dataset's object store", [&] { lancet_tools::mount_object_store(o); });
  const auto schema_path = o.get("schema");
  if (!schema_path) throw usage_error("write needs --schema SCHEMA.json");
  const auto pattern = o.get("input");
  if (!pattern) throw usage_error("write needs --input 'GLOB'");
  const auto op = o.get("operation");
  if (op && *op != "append" && *op != "overwrite")
    throw usage_error("--operation must be append or overwrite, not '" + *op + "'");
  ds::write_options wo;
  if (auto n = o.number<std::uint64_t>("max-rows-per-file", 1)) wo.max_rows_per_file = *n;
  ds::fragment_commit_options co;
  if (auto n = o.number("max-retries")) co.max_retries = unsigned(std::min<std::uint64_t>(*n, 1000000));
  const auto& root = o.path;

  std::shared_ptr<const lancet::arrow::schema> schema;
  write_detail::plan p;
  step(world, "reading the schema and planning", [&] {
    schema = std::make_shared<const lancet::arrow::schema>(lancet::json::read_schema_file(*schema_path));
    if (auto f = o.get("format")) wo.storage_version = lancet::file::parse_format_version(*f);
    if (world.rank() != 0) return;
    const auto latest = ds::latest_version(root);
    if (latest) p.read_version = std::int64_t(latest->version);
    p.overwrite = op ? *op == "overwrite" : !latest;
    if (!p.overwrite && !latest)
      throw lancet::invalid_input_error("cannot append to '" + root +
                                        "': it is not a dataset yet (use --operation overwrite to create it)");
    auto files = write_detail::expand_glob(*pattern);
    p.total_files = files.size();
    p.files = write_detail::deal(std::move(files), world.size());
  });
  mpi::broadcast(world, p, 0);
  wo.mode = p.overwrite ? ds::write_mode::overwrite : ds::write_mode::append;
  wo.schema = *schema;

  // Each rank writes its share.
  ds::fragments_written mine;
  std::string json;
  try {
    step(world, "writing fragments", [&] {
      const auto& files = p.files.at(std::size_t(world.rank()));
      if (files.empty()) return;  // more ranks than files
      mine = ds::write_fragments(root, lancet::json::files_reader(schema, files), wo);
      json = ds::fragments_to_json_lines(mine.fragments);
    });
  } catch (const step_failed&) {
    ds::remove_uncommitted(root, mine.fragments);
    throw;
  }

  // Rank 0 commits everyone's fragments, read back from their JSON form.
  std::vector<std::string> gathered;
  mpi::gather(world, json, gathered, 0);
  ds::fragment_commit_result result;
  try {
    step(world, "committing", [&] {
      if (world.rank() != 0) return;
      std::vector<ds::fragment_metadata> all;
      for (std::size_t r = 0; r < gathered.size(); ++r) {
        if (gathered[r].empty()) continue;
        auto frags = ds::fragments_from_json(gathered[r], "fragments of rank " + std::to_string(r));
        all.insert(all.end(), std::make_move_iterator(frags.begin()), std::make_move_iterator(frags.end()));
      }
      co.read_version = std::uint64_t(std::max<std::int64_t>(p.read_version, 0));
      ds::commit_operation cop = ds::operation::append{};
      if (p.overwrite) cop = ds::operation::overwrite{*schema};
      try {
        result = ds::commit(root, cop, std::move(all), co);
      } catch (const ds::committed_io_error& e) {
        // Committed, only not made durable: the files are the dataset's now; keep them.
        std::cerr << "lancet-mpi: warning: " << e.what() << "\n";
        result.version = e.version;
      }
    });
  } catch (const step_failed&) {
    ds::remove_uncommitted(root, mine.fragments);
    throw;
  }
  if (world.rank() == 0) {
    lancet::json::object_writer j;
    j.field("version", result.version)
        .field("read_version", result.read_version)
        .field("fragments", result.fragments.size())
        .field("rows", result.rows)
        .field("files", p.total_files)
        .field("ranks", world.size())
        .field("retries", result.retries);
    std::cout << j.str() << std::endl;
    if (result.retries)
      std::cerr << "lancet-mpi: committed after " << result.retries << (result.retries == 1 ? " retry" : " retries")
                << " (other writers committed first; rebased on their commits)\n";
    std::cerr << "lancet-mpi: wrote " << result.rows << " rows from " << p.total_files << " files on " << world.size()
              << " ranks to " << root << " (version " << result.version << ")\n";
  }
  return 0;
}

}  // namespace lancet_mpi
