// The `lancet` command-line tool.
//
//   lancet write DATASET --schema SCHEMA.json [--format 2.0|2.1|2.2] [--mode create|append|overwrite]
//                < rows.jsonl
//   lancet cat DATASET|FILE.lance [--columns a,b] [--offset N] [--limit N] [--version V]
//   lancet inspect DATASET|FILE.lance
//   lancet index create DATASET --column COL --type ivf_flat|ivf_pq|ivf_sq|ivf_rq
//                [--partitions N | --target-partition-size N] [--sub-vectors M] [--bits B]
//                [--metric l2|cosine|dot|hamming] [--name NAME] [--replace] [--threads T]
//   lancet index list DATASET
//   lancet index optimize DATASET [--name NAME] [--merge N] [--retrain] [--target-partition-size N]
//                [--threads T]
//   lancet search DATASET --column COL --query '[...]' [--k 10] [--nprobes N] [--refine R]
//                [--columns a,b] [--index NAME]
//   lancet compact DATASET [--target-rows N]
//
// Errors go to stderr with a message naming what is wrong; the exit status is 1 for
// failures and 2 for bad usage. A failed write leaves the dataset as it was.
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <charconv>
#include <cmath>
#include <cstdio>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/index/ivf_builder.hpp>
#include <lancet/index/optimize.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/json/rows_reader.hpp>
#include <lancet/json/rows_writer.hpp>
#include <lancet/json/schema_json.hpp>
#include <lancet/lancet.hpp>

namespace fs = std::filesystem;
using namespace lancet;

namespace {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* usage_text =
    "usage:\n"
    "  lancet write DATASET --schema SCHEMA.json [--format 2.0|2.1|2.2] [--mode create|append|overwrite] < rows.jsonl\n"
    "  lancet cat DATASET|FILE.lance [--columns a,b] [--offset N] [--limit N] [--version V]\n"
    "  lancet inspect DATASET|FILE.lance\n"
    "  lancet index create DATASET --column COL --type ivf_flat|ivf_pq|ivf_sq|ivf_rq [--partitions N |\n"
    "               --target-partition-size N] [--sub-vectors M] [--bits B] [--metric l2|cosine|dot|hamming]\n"
    "               [--name NAME] [--replace] [--threads T]\n"
    "  lancet index list DATASET\n"
    "  lancet index optimize DATASET [--name NAME] [--merge N] [--retrain] [--target-partition-size N]\n"
    "               [--threads T]\n"
    "  lancet search DATASET --column COL --query '[...]' [--k 10] [--nprobes N] [--refine R] [--columns a,b]\n"
    "               [--index NAME]\n"
    "  lancet compact DATASET [--target-rows N]\n";

// "--name value" options after the positional argument.
struct args {
  std::string command;
  std::string path;
  std::map<std::string, std::string> options;

  static args parse(int argc, char** argv, const std::vector<std::string>& allowed,
                    const std::vector<std::string>& flags = {}) {
    args a;
    if (argc < 3) throw usage_error("missing arguments");
    a.command = argv[1];
    a.path = argv[2];
    for (int i = 3; i < argc; ++i) {
      std::string k = argv[i];
      if (k.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + k + "'");
      k = k.substr(2);
      if (std::find(flags.begin(), flags.end(), k) != flags.end()) {
        a.options[k] = "1";
        continue;
      }
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        throw usage_error("unknown option --" + k + " for '" + a.command + "'");
      if (i + 1 >= argc) throw usage_error("option --" + k + " needs a value");
      a.options[k] = argv[++i];
    }
    return a;
  }
  std::optional<std::string> get(const std::string& k) const {
    auto it = options.find(k);
    if (it == options.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::uint64_t> number(const std::string& k) const {
    auto v = get(k);
    if (!v) return std::nullopt;
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size())
      throw usage_error("--" + k + " needs a non-negative integer, got '" + *v + "'");
    return n;
  }
};

std::vector<std::string> split_columns(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') { out.push_back(cur); cur.clear(); }
    else cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool is_file(const std::string& path) { return fs::is_regular_file(path); }

int cmd_write(const args& a) {
  const auto schema_path = a.get("schema");
  if (!schema_path) throw usage_error("write needs --schema SCHEMA.json");
  const auto schema = json::read_schema_file(*schema_path);
  dataset::write_options o;
  const auto mode = a.get("mode").value_or("create");
  if (mode == "create") o.mode = dataset::write_mode::create;
  else if (mode == "append") o.mode = dataset::write_mode::append;
  else if (mode == "overwrite") o.mode = dataset::write_mode::overwrite;
  else throw usage_error("--mode must be create, append or overwrite, not '" + mode + "'");
  if (auto f = a.get("format")) o.storage_version = file::parse_format_version(*f);
  o.schema = schema;
  json::rows_reader rows(schema, std::cin);
  const auto result = dataset::write(a.path, [&] { return rows.next(); }, o);
  std::cerr << "lancet: wrote " << result.rows_written << " rows to " << a.path << " (version " << result.version
            << ", format " << file::to_string(result.storage_version) << ")\n";
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
  const auto columns = a.get("columns") ? split_columns(*a.get("columns")) : std::vector<std::string>{};
  const auto offset = a.number("offset").value_or(0);
  const auto limit = a.number("limit");
  if (is_file(a.path)) {
    if (a.get("version")) throw usage_error("--version applies to datasets, not to a single file");
    file::file_reader<io::file_source> r{io::file_source(a.path)};
    std::vector<std::string> names = columns;
    std::uint64_t total = 0;
    {
      file::read_request probe{names, std::nullopt, std::nullopt};
      // Resolve the length of the projection (Lance's rules on unequal columns apply).
      auto len_of = [&](const std::string& n) {
        for (std::size_t i = 0; i < r.schema().fields.size(); ++i)
          if (r.schema().fields[i].name == n) return r.field_length(i);
        throw invalid_input_error("the file has no column '" + n + "'");
      };
      if (names.empty()) total = r.num_rows();
      else for (const auto& n : names) total = std::max(total, len_of(n));
    }
    const auto begin = std::min(offset, total);
    const auto end = limit ? std::min(total, begin + *limit) : total;
    for (auto& b : r.read_batches({names, std::pair{begin, end}, std::nullopt}, 8192)) print_batch(b);
    return 0;
  }
  std::optional<std::uint64_t> version;
  if (a.get("version")) version = a.number("version");
  auto ds = dataset::dataset::open(a.path, version);
  dataset::scan_options o;
  o.columns = columns;
  o.offset = offset;
  o.limit = limit;
  auto scan = ds.scan(o);
  while (auto b = scan.next()) print_batch(*b);
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

int cmd_index_create(const args& a) {
  index::build_options o;
  o.column = a.get("column").value_or("");
  if (o.column.empty()) throw usage_error("index create needs --column COL");
  const auto type = a.get("type");
  if (!type) throw usage_error("index create needs --type ivf_flat|ivf_pq|ivf_sq|ivf_rq");
  o.type = index::parse_ivf_index_type(*type);
  if (a.get("partitions") && a.get("target-partition-size"))
    throw usage_error("give --partitions or --target-partition-size, not both");
  if (auto v = a.number("partitions")) o.num_partitions = std::size_t(*v);
  if (auto v = a.number("target-partition-size")) o.target_partition_size = std::size_t(*v);
  if (auto v = a.number("sub-vectors")) o.num_sub_vectors = std::size_t(*v);
  if (auto v = a.number("bits")) o.num_bits = std::uint32_t(*v);
  if (auto m = a.get("metric")) o.metric = index::parse_distance(*m);
  o.name = a.get("name").value_or("");
  o.replace = a.get("replace").has_value();
  const auto threads = a.number("threads").value_or(std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 0) throw usage_error("--threads must be positive");
  std::optional<boost::asio::thread_pool> pool;
  if (threads > 1) {
    pool.emplace(std::size_t(threads));
    o.pool = &*pool;
  }
  progress_bar bar;
  o.on_progress = [&](const index::build_progress& p) { bar(p); };
  index::build_result r;
  try {
    r = index::build_ivf_index(a.path, o);
  } catch (...) {
    bar.finish();
    throw;
  }
  bar.finish();
  std::cerr << "lancet: built " << index::ivf_index_type_name(o.type) << " index '" << r.index.name << "' ("
            << r.num_partitions << " partitions, " << r.rows_indexed << " rows indexed, " << r.rows_skipped
            << " skipped) on " << a.path << ", version " << r.version << "\n";
  return 0;
}

int cmd_index_list(const args& a) {
  const auto s = dataset::load_latest(a.path);
  if (!s) throw invalid_input_error("'" + a.path + "' is not a Lance dataset");
  for (const auto& i : index::list_indices(*s)) {
    nlohmann::json j;
    j["name"] = i.name;
    j["uuid"] = i.uuid.to_string();
    j["type"] = i.index_type;
    j["columns"] = i.columns;
    if (i.distance) j["distance"] = std::string(index::distance_type_name(*i.distance));
    j["dataset_version"] = i.dataset_version;
    j["fragments"] = i.fragment_ids;
    std::cout << j.dump() << "\n";
  }
  return 0;
}

// Vector values of a column, widened to double, for the given rows (refine).
void fetch_vectors(const dataset::dataset& ds, const std::string& column, std::span<const std::uint64_t> ids,
                   std::size_t dim, double* out) {
  const auto b = ds.take(ids, {column});
  const auto& col = *b.columns.at(0);
  const auto& item = *col.children.at(0);
  for (std::size_t r = 0; r < ids.size(); ++r) {
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t i = (std::size_t(col.offset) + r) * dim + j;
      double v = std::nan("");
      if (r < std::size_t(col.length) && col.is_valid(std::int64_t(r))) {
        switch (item.type->id) {
          case arrow::type_id::float16: v = item.values<simd::f16>()[i].to_float(); break;
          case arrow::type_id::float32: v = item.values<float>()[i]; break;
          case arrow::type_id::float64: v = item.values<double>()[i]; break;
          case arrow::type_id::uint8: v = item.values<std::uint8_t>()[i]; break;
          default: break;
        }
      }
      out[r * dim + j] = v;
    }
  }
}

int cmd_search(const args& a) {
  const auto column = a.get("column");
  if (!column) throw usage_error("search needs --column COL");
  const auto qtext = a.get("query");
  if (!qtext) throw usage_error("search needs --query '[v1, v2, ...]'");
  const auto s = dataset::load_latest(a.path);
  if (!s) throw invalid_input_error("'" + a.path + "' is not a Lance dataset");
  auto ix = index::open_vector_index(*s, *column, a.get("index").value_or(""));
  const std::size_t dim = ix.searcher->dimension();
  nlohmann::json q;
  try {
    q = nlohmann::json::parse(*qtext);
  } catch (const std::exception&) {
    throw invalid_input_error("--query is not JSON: '" + *qtext + "'");
  }
  if (!q.is_array() || q.size() != dim)
    throw invalid_input_error("--query must be a JSON array of " + std::to_string(dim) + " numbers (the dimension of '" +
                              *column + "')");
  std::vector<float> query;
  for (const auto& v : q) {
    if (!v.is_number()) throw invalid_input_error("--query holds a non-number: " + v.dump());
    query.push_back(v.get<float>());
  }
  index::search_params sp;
  sp.k = a.number("k").value_or(10);
  sp.nprobes = a.number("nprobes").value_or(20);
  sp.refine_factor = a.number("refine").value_or(0);
  if (sp.k == 0) throw usage_error("--k must be positive");
  if (sp.nprobes == 0) throw usage_error("--nprobes must be positive");
  const auto ds = dataset::dataset::open(a.path, s->version());
  if (sp.refine_factor > 0)
    sp.fetch = [&](std::span<const std::uint64_t> ids, double* out) { fetch_vectors(ds, *column, ids, dim, out); };
  std::vector<index::neighbor> hits;
  if (ix.index_file.distance == simd::distance_type::hamming) {
    std::vector<std::uint8_t> qb;
    for (float f : query) {
      if (!(f >= 0 && f <= 255 && f == std::floor(f)))
        throw invalid_input_error("a hamming query holds bytes (0..255), not " + std::to_string(f));
      qb.push_back(std::uint8_t(f));
    }
    hits = ix.searcher->search(qb.data(), dim, sp);
  } else {
    hits = ix.searcher->search(query.data(), dim, sp);
  }
  const auto columns = a.get("columns") ? split_columns(*a.get("columns")) : std::vector<std::string>{};
  arrow::record_batch values;
  if (!columns.empty() && !hits.empty()) {
    std::vector<std::uint64_t> ids;
    for (const auto& h : hits) ids.push_back(h.row_id);
    values = ds.take(ids, columns);
  }
  std::string row;
  for (std::size_t i = 0; i < hits.size(); ++i) {
    // Distances are f32: printed in their shortest round-trip form.
    char num[64];
    const auto end = std::to_chars(num, num + sizeof num, hits[i].distance).ptr;
    std::string dist(num, end);
    if (!std::isfinite(hits[i].distance)) dist = "null";
    std::string line = "{\"_rowid\":" + std::to_string(hits[i].row_id) + ",\"_distance\":" + dist + "}";
    if (!columns.empty()) {
      row.clear();
      json::append_row(row, values, std::int64_t(i), json::write_options{});
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
  const auto threads = a.number("threads").value_or(std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 0) throw usage_error("--threads must be positive");
  std::optional<boost::asio::thread_pool> pool;
  if (threads > 1) {
    pool.emplace(std::size_t(threads));
    o.pool = &*pool;
  }
  const auto r = index::optimize_indices(a.path, o);
  for (const auto& i : r.indices) {
    nlohmann::json j;
    j["name"] = i.name;
    j["changed"] = i.changed;
    j["segments_before"] = i.segments_before;
    j["segments_after"] = i.segments_after;
    j["segments_merged"] = i.segments_merged;
    j["rows_added"] = i.rows_added;
    j["rows_dropped"] = i.rows_dropped;
    if (i.uuid) j["uuid"] = i.uuid->to_string();
    if (i.changed) j["partitions"] = i.num_partitions, j["rows"] = i.rows_in_segment;
    j["splits"] = nlohmann::json::array();
    for (const auto& s : i.splits) j["splits"].push_back({{"partition", s.partition}, {"ways", s.ways}});
    j["joins"] = i.joins;
    std::cout << j.dump() << "\n";
  }
  if (r.indices.empty()) std::cerr << "lancet: " << a.path << " has no vector index to optimise\n";
  else std::cerr << "lancet: optimised " << r.indices.size() << " index(es) of " << a.path << ", version " << r.version << "\n";
  return 0;
}

// Merges small fragments and drops deleted rows (Lance's compaction); vector indexes
// are remapped in the same commit. Prints the metrics as one JSON line.
int cmd_compact(const args& a) {
  dataset::compaction_options o;
  if (auto n = a.number("target-rows")) {
    if (*n == 0) throw usage_error("--target-rows must be positive");
    o.target_rows_per_fragment = *n;
  }
  const auto r = dataset::compact_files(a.path, o);
  nlohmann::json j;
  j["read_version"] = r.read_version;
  j["version"] = r.version;
  j["fragments_removed"] = r.metrics.fragments_removed;
  j["fragments_added"] = r.metrics.fragments_added;
  j["files_removed"] = r.metrics.files_removed;
  j["files_added"] = r.metrics.files_added;
  j["indices"] = nlohmann::json::array();
  for (const auto& i : r.indices)
    j["indices"].push_back({{"name", i.name}, {"old_uuid", i.old_uuid.to_string()}, {"new_uuid", i.new_uuid.to_string()},
                            {"rows", i.stats.rows_after}, {"rows_dropped", i.stats.rows_dropped}});
  std::cout << j.dump() << "\n";
  if (r.version == r.read_version) std::cerr << "lancet: " << a.path << " needs no compaction (version " << r.version << ")\n";
  else
    std::cerr << "lancet: compacted " << a.path << ": " << r.metrics.fragments_removed << " fragments into "
              << r.metrics.fragments_added << ", " << r.indices.size() << " index(es) remapped, version " << r.version << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw usage_error("missing command");
    const std::string cmd = argv[1];
    if (cmd == "write") return cmd_write(args::parse(argc, argv, {"schema", "format", "mode"}));
    if (cmd == "cat") return cmd_cat(args::parse(argc, argv, {"columns", "offset", "limit", "version"}));
    if (cmd == "inspect") return cmd_inspect(args::parse(argc, argv, {}));
    if (cmd == "index") {
      if (argc < 3) throw usage_error("index needs a subcommand: create, list or optimize");
      const std::string sub = argv[2];
      if (sub == "create")
        return cmd_index_create(args::parse(argc - 1, argv + 1,
                                            {"column", "type", "partitions", "target-partition-size", "sub-vectors",
                                             "bits", "metric", "name", "threads"},
                                            {"replace"}));
      if (sub == "list") return cmd_index_list(args::parse(argc - 1, argv + 1, {}));
      if (sub == "optimize")
        return cmd_index_optimize(
            args::parse(argc - 1, argv + 1, {"name", "merge", "target-partition-size", "threads"}, {"retrain"}));
      throw usage_error("unknown index subcommand '" + sub + "' (create, list or optimize)");
    }
    if (cmd == "compact") return cmd_compact(args::parse(argc, argv, {"target-rows"}));
    if (cmd == "search")
      return cmd_search(args::parse(argc, argv, {"column", "query", "k", "nprobes", "refine", "columns", "index"}));
    if (cmd == "--help" || cmd == "help") {
      std::cout << usage_text;
      return 0;
    }
    throw usage_error("unknown command '" + cmd + "'");
  } catch (const usage_error& e) {
    std::cerr << "lancet: " << e.what() << "\n" << usage_text;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lancet: " << e.what() << "\n";
    return 1;
  }
}
