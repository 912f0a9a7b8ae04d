// Rows an operation rewrites into new fragments (compaction, update, merge insert) in a
// dataset with stable row ids: each keeps its row id and the version it was created at
// (compaction also the version it was last updated at), as Lance 12 keeps them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/dataset/dataset.hpp"
#include "lancet/dataset/row_sequences.hpp"
#include "lancet/pb/table.hpp"

namespace lancet::dataset::detail {

// The ids and versions of rows gathered by address, in the order they are written.
class moved_rows {
 public:
  explicit moved_rows(const dataset& d) : d_(d) {}

  void add(std::uint64_t address) {
    const auto& f = fragment(address >> 32);
    const auto off = std::size_t(address & 0xFFFFFFFFull);
    if (off >= f.ids.size())
      throw corrupt_error("dataset '" + d_.path() + "': row address " + std::to_string(address) + " is past fragment " +
                          std::to_string(address >> 32) + "'s " + std::to_string(f.ids.size()) + " rows");
    ids_.push_back(f.ids[off]);
    created_.push_back(f.created[off]);
    updated_.push_back(f.updated[off]);
  }
  void add(std::span<const std::uint64_t> addresses) {
    for (auto a : addresses) add(a);
  }
  std::size_t size() const noexcept { return ids_.size(); }

  // The rows added go, in order, to the first rows of `frags`; rows past them are new
  // (the commit gives them ids). `keep_last_updated` (compaction): the rows were not
  // changed, their last-updated versions stay.
  void assign(std::vector<pb::data_fragment>& frags, bool keep_last_updated) const {
    std::size_t at = 0;
    for (auto& f : frags) {
      const auto n = std::min(std::size_t(f.physical_rows), ids_.size() - at);
      const auto part = [&](const std::vector<std::uint64_t>& v) {
        return std::span<const std::uint64_t>(v).subspan(at, n);
      };
      set_moved_rows(f, part(ids_), part(created_));
      if (keep_last_updated) f.last_updated_at_version_sequence = pb::encode(version_sequence(part(updated_)));
      at += n;
    }
    if (at != ids_.size())
      throw corrupt_error("dataset '" + d_.path() + "': " + std::to_string(ids_.size()) + " rows moved into " +
                          std::to_string(at) + " rows of new fragments");
  }

 private:
  struct fragment_rows {
    std::vector<std::uint64_t> ids, created, updated;
  };

  const fragment_rows& fragment(std::uint64_t id) {
    auto it = cache_.find(id);
    if (it != cache_.end()) return it->second;
    const auto& frags = d_.manifest().fragments;
    const auto f = std::find_if(frags.begin(), frags.end(), [&](const pb::data_fragment& x) { return x.id == id; });
    if (f == frags.end())
      throw corrupt_error("dataset '" + d_.path() + "' version " + std::to_string(d_.version()) + " has no fragment " +
                          std::to_string(id));
    fragment_rows r;
    r.ids = d_.fragment_row_ids(id);
    const std::string what = "fragment " + std::to_string(id);
    const auto created = bytes_of(f->created_at_version_sequence);
    r.created = created ? decode_row_versions(*created, r.ids.size(), 1, what)
                        : std::vector<std::uint64_t>(r.ids.size(), 1);
    const auto updated = bytes_of(f->last_updated_at_version_sequence);
    r.updated = updated ? decode_row_versions(*updated, r.ids.size(), 1, what) : r.created;
    return cache_.emplace(id, std::move(r)).first->second;
  }

  // An inline or external sequence's bytes (nullopt when absent).
  std::optional<std::string> bytes_of(const pb::inline_or_external& seq) const {
    if (const auto* s = std::get_if<std::string>(&seq)) return *s;
    if (const auto* e = std::get_if<pb::external_file>(&seq)) {
      const auto path = (std::filesystem::path(d_.path()) / e->path).string();
      const auto b = d_.sources()(path).read(e->offset, e->size);
      return std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }
    return std::nullopt;
  }

  const dataset& d_;
  std::unordered_map<std::uint64_t, fragment_rows> cache_;
  std::vector<std::uint64_t> ids_, created_, updated_;
};

}  // namespace lancet::dataset::detail
