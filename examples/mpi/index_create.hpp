// lancet-mpi index create: a distributed IVF index build, Lance 12's segment contract
// over MPI.
//   1. Rank 0 reads the latest version and deals its fragments out by live rows
//      (largest first, each to the rank with the fewest rows so far).
//   2. Each rank samples its share of the training rows from its own fragments
//      (index::sample_vectors); rank 0 gathers them, trains the IVF centroids and the
//      quantizer once (index::train_model_from_rows) and broadcasts the model's bytes
//      (index::serialize_model: versioned and checksummed, checked on every rank).
//   3. Each rank builds an uncommitted segment over its fragments with that model
//      (index::build_segment) and sends its metadata JSON to rank 0.
//   4. Rank 0 merges the segments into one (--merge, index::merge_segments) and commits
//      them as one index in one CreateIndex (index::commit_segments).
// A rank that fails makes every rank exit non-zero with nothing committed; each rank
// removes the segment it wrote (rank 0 also the merged one). A rank killed outright
// takes the job down through mpirun before the commit: the files it leaves are
// unreferenced (lancet cleanup removes them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <boost/serialization/vector.hpp>

#include <lancet/core/deal.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/index/distributed/model_file.hpp>
#include <lancet/index/distributed/segments.hpp>
#include <lancet/json/write.hpp>

#include "common.hpp"

namespace lancet_mpi {

inline constexpr std::string_view index_create_usage =
    "lancet-mpi index create DATASET --column COL --type ivf_flat|ivf_pq|ivf_sq|ivf_rq [--partitions N |\n"
    "               --target-partition-size N] [--sub-vectors M] [--bits B] [--metric l2|cosine|dot]\n"
    "               [--name NAME] [--merge] [--replace] [--memory-budget BYTES] [--threads T] [--model-out MODEL]";
inline constexpr std::string_view index_create_help =
    "Builds an IVF vector index on a float32 vector column with every rank. Rank 0 trains the\n"
    "model once on a sample gathered from all ranks (each samples its own fragments) and\n"
    "broadcasts it; each rank builds a segment over its share of the fragments (balanced by\n"
    "rows); rank 0 commits the segments as one index (merged into one with --merge) and prints\n"
    "{\"version\", \"name\", \"segments\", \"rows\", \"ranks\", \"partitions\", \"model\"} on stdout. If any\n"
    "rank fails, every rank exits non-zero, nothing is committed and the segments are removed.\n"
    "  --column COL                 the vector column (a fixed-size list of float32)\n"
    "  --type T                     ivf_flat, ivf_pq, ivf_sq or ivf_rq\n"
    "  --partitions N               IVF partitions (default: rows / target partition size)\n"
    "  --target-partition-size N    rows per partition the count is derived from\n"
    "  --sub-vectors M              PQ sub-vectors (must divide the dimension)\n"
    "  --bits B                     bits per code (PQ 8 or 4, SQ 8, RQ 1)\n"
    "  --metric M                   l2 (default), cosine or dot\n"
    "  --name NAME                  index name (default COL_idx)\n"
    "  --merge                      commit one segment (merged on rank 0) instead of one per rank\n"
    "  --replace                    replace an existing index of that name\n"
    "  --memory-budget BYTES        decoded rows each rank holds at once while building (default\n"
    "                               512 MiB; beyond it the shuffle spills to temporary files)\n"
    "  --threads T                  worker threads per rank (default 1)\n"
    "  --model-out MODEL            rank 0 also writes the trained model there (for 'lancet index\n"
    "                               create --model MODEL', e.g. a single-process build to compare)\n"
    "  --storage-option K=V         for an s3:// or az:// DATASET: a LanceDB storage option\n"
    "                               (repeatable; the AWS_* / AZURE_* environment is read too)\n";

namespace index_create_detail {

// What rank 0 decides and broadcasts.
struct plan {
  std::uint64_t version = 0;
  std::size_t dim = 0;
  std::uint64_t total_rows = 0;
  std::size_t sample_rows = 0;                     // training rows over all ranks
  std::vector<std::vector<std::uint64_t>> frags;   // per rank
  std::vector<std::uint64_t> rows;                 // per rank (live)

  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & version & dim & total_rows & sample_rows & frags & rows;
  }
};

// Fragments with live rows, dealt out by live rows (lancet::deal_by_weight).
inline void deal(const std::vector<lancet::dataset::fragment_info>& fragments, int ranks, plan& p) {
  std::vector<std::uint64_t> ids, rows;
  for (const auto& f : fragments)
    if (f.live_rows() > 0) ids.push_back(f.id), rows.push_back(f.live_rows());
  const auto d = lancet::deal_by_weight(rows, std::size_t(ranks));
  p.rows = d.load;
  p.frags.assign(std::size_t(ranks), {});
  for (std::size_t r = 0; r < d.items.size(); ++r) {
    for (const auto i : d.items[r]) p.frags[r].push_back(ids[i]);
    std::sort(p.frags[r].begin(), p.frags[r].end());
  }
}

// Removes a segment this rank wrote that will not be committed (index::
// remove_uncommitted_segment); on the way out of a failure, so a failure to remove is
// reported, not thrown.
inline void remove_segment(const std::string& root, const std::optional<lancet::index::segment_metadata>& s) noexcept {
  if (!s) return;
  try {
    lancet::index::remove_uncommitted_segment(root, *s);
  } catch (const std::exception& e) {
    std::cerr << "lancet-mpi: warning: " << e.what() << "\n";
  }
}

}  // namespace index_create_detail

inline int run_index_create(const mpi::communicator& world, const std::vector<std::string>& argv) {
  namespace ix = lancet::index;
  using namespace index_create_detail;
  const auto o = args::parse({"index create",
                              {"column", "type", "partitions", "target-partition-size", "sub-vectors", "bits", "metric",
                               "name", "memory-budget", "threads", "model-out"},
                              {"merge", "replace"}},
                             argv);
  lancet_tools::storage_options_of(o);  // usage errors first, alike on every rank
  step(world, "opening the dataset's object store", [&] { lancet_tools::mount_object_store(o); });
  const bool merge = o.has("merge"), replace = o.has("replace");
  // The build flags; every rank parses the same, so a bad --type or --metric is a usage
  // error on all of them at once.
  ix::build_options bo;
  try {
    bo = lancet_tools::build_flags(o, nullptr);
  } catch (const usage_error&) {
    throw;
  } catch (const lancet::error& e) {
    throw usage_error(e.what());
  }
  const std::string name = o.get("name").value_or(bo.column + "_idx");
  bo.name = name;
  const auto& root = o.path;

  std::optional<boost::asio::thread_pool> pool;
  plan p;
  step(world, "planning", [&] {
    bo.pool = lancet_tools::worker_pool(o, pool, 1);
    if (world.rank() != 0) return;
    const auto ds = lancet::dataset::dataset::open(root);
    if (!replace)
      for (const auto& i : ix::list_indices(ds))
        if (i.name == name)
          throw lancet::invalid_input_error("the dataset already has an index named '" + name +
                                            "' (--replace it, or choose another --name)");
    p.version = ds.version();
    p.dim = ix::float_vector_dimension(ds, bo.column);
    deal(ds.fragments(), world.size(), p);
    for (auto n : p.rows) p.total_rows += n;
    if (p.total_rows == 0) throw lancet::invalid_input_error("'" + root + "' has no rows to index");
    p.sample_rows = ix::training_sample_rows(bo, p.dim, p.total_rows);
  });
  mpi::broadcast(world, p, 0);
  const auto r = std::size_t(world.rank());

  // Training: each rank samples its share, rank 0 trains and broadcasts the model.
  std::vector<float> sample;
  step(world, "sampling training rows", [&] {
    const auto share = std::size_t((std::uint64_t(p.sample_rows) * p.rows[r] + p.total_rows - 1) / p.total_rows);
    sample = ix::sample_vectors(root, p.version, bo, p.frags[r], share, bo.seed + r);
  });
  std::vector<std::vector<float>> samples;
  mpi::gather(world, sample, samples, 0);
  std::vector<float>().swap(sample);
  std::string model_bytes;
  step(world, "training", [&] {
    if (world.rank() != 0) return;
    std::vector<float> all;
    for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
    samples.clear();
    const auto m = ix::train_model_from_rows(bo, p.dim, all, p.total_rows);
    model_bytes = ix::serialize_model(m);
    if (auto out = o.get("model-out")) ix::write_model_file(*out, m);
  });
  mpi::broadcast(world, model_bytes, 0);
  ix::trained_model model;
  step(world, "reading the model", [&] { model = ix::parse_model(model_bytes, "the model broadcast by rank 0"); });

  // Each rank's segment.
  std::optional<ix::segment_metadata> mine;
  std::string json;
  try {
    step(world, "building segments", [&] {
      if (p.frags[r].empty()) return;  // more ranks than fragments
      mine = ix::build_segment(root, bo, model, p.frags[r]);
      json = ix::segment_to_json(*mine);
    });
  } catch (const step_failed&) {
    remove_segment(root, mine);
    throw;
  }
  std::vector<std::string> gathered;
  mpi::gather(world, json, gathered, 0);

  // Rank 0 merges (optionally) and commits.
  const bool merging = merge && std::count_if(p.frags.begin(), p.frags.end(), [](const auto& f) { return !f.empty(); }) > 1;
  std::optional<ix::segment_metadata> merged;
  std::vector<ix::segment_metadata> segs;
  ix::commit_segments_result result;
  try {
    step(world, "committing", [&] {
      if (world.rank() != 0) return;
      for (std::size_t k = 0; k < gathered.size(); ++k)
        if (!gathered[k].empty()) segs.push_back(ix::segment_from_json(gathered[k], "the segment of rank " + std::to_string(k)));
      if (merging) merged = ix::merge_segments(root, segs);
      result = ix::commit_segments(root, name, bo.column, merged ? std::vector<ix::segment_metadata>{*merged} : segs);
    });
  } catch (const step_failed&) {
    remove_segment(root, mine);
    remove_segment(root, merged);
    throw;
  }
  // Merged away: the ranks' own segments are referenced by no version.
  if (merging) remove_segment(root, mine);
  if (world.rank() == 0) {
    std::uint64_t rows = 0;
    for (const auto& s : segs) rows += s.rows_indexed;
    lancet::json::object_writer j;  // the name escaped
    j.field("version", result.version)
        .field("name", name)
        .field("segments", merged ? std::size_t(1) : segs.size())
        .field("rows", rows)
        .field("ranks", world.size())
        .field("partitions", model.ivf.centroids.rows)
        .field("sample_rows", p.sample_rows)
        .field("model", ix::model_fingerprint(model))
        .field("retries", result.retries);
    std::cout << j.str() << std::endl;
    std::cerr << "lancet-mpi: built " << ix::ivf_index_type_name(bo.type) << " index '" << name << "' over " << rows
              << " rows on " << world.size() << " ranks (" << (merged ? 1 : segs.size()) << " segment(s)), version "
              << result.version << "\n";
  }
  return 0;
}

}  // namespace lancet_mpi
