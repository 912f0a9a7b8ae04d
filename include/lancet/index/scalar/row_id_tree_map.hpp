// Lance's RowIdTreeMap serialization: how BITMAP and LABEL_LIST indexes store a set
// of row ids (docs/design/scalar_index_facts.md §1):
//
//   u32 entry count, then per entry ascending by the upper 32 bits of the ids:
//   u32 key (upper bits), u32 byte size, a portable roaring bitmap of the lower bits.
//
// Size 0 means "every row of that fragment"; Lance 12 never writes it but its readers
// accept it, so ours do: such an entry decodes to `all rows` and the caller, which
// knows the fragment's length, expands it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lancet/core/buffer.hpp"
#include "lancet/core/endian.hpp"
#include "lancet/core/error.hpp"
#include "lancet/dataset/roaring.hpp"

namespace lancet::index {

struct row_id_tree_map {
  // Per upper half, the lower halves present; nullopt: every row of that fragment.
  std::vector<std::pair<std::uint32_t, std::optional<dataset::roaring_bitmap>>> entries;

  // The ids, with `rows_of(upper)` the row count of a fragment stored whole.
  template <class RowsOf>
  std::vector<std::uint64_t> ids(RowsOf&& rows_of) const {
    std::vector<std::uint64_t> out;
    for (const auto& [hi, low] : entries) {
      const std::uint64_t base = std::uint64_t(hi) << 32;
      if (!low) {
        const std::uint64_t n = rows_of(hi);
        for (std::uint64_t r = 0; r < n; ++r) out.push_back(base | r);
        continue;
      }
      low->for_each([&](std::uint32_t v) { out.push_back(base | v); });
    }
    return out;
  }
  // The ids of a map with no whole-fragment entry (corrupt_error otherwise).
  std::vector<std::uint64_t> ids() const {
    return ids([](std::uint32_t hi) -> std::uint64_t {
      throw unsupported_error("a row id set stores fragment " + std::to_string(hi) +
                              " whole and its row count is not known here");
    });
  }
  // Ids counted, a whole fragment as `rows_of(upper)`.
  template <class RowsOf>
  std::uint64_t cardinality(RowsOf&& rows_of) const {
    std::uint64_t n = 0;
    for (const auto& [hi, low] : entries) n += low ? low->cardinality() : rows_of(hi);
    return n;
  }
};

// The serialized set of `ascending` ids (strictly increasing).
inline std::string serialize_row_ids(std::span<const std::uint64_t> ascending) {
  std::string out(4, '\0');
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < ascending.size();) {
    const auto hi = std::uint32_t(ascending[i] >> 32);
    std::size_t j = i;
    while (j < ascending.size() && std::uint32_t(ascending[j] >> 32) == hi) ++j;
    dataset::roaring_bitmap low;
    for (std::size_t k = i; k < j; ++k) low.add(std::uint32_t(ascending[k]));
    const auto bytes = low.serialize();
    char head[8];
    le::store<std::uint32_t>(reinterpret_cast<std::uint8_t*>(head), hi);
    le::store<std::uint32_t>(reinterpret_cast<std::uint8_t*>(head) + 4, std::uint32_t(bytes.size()));
    out.append(head, 8);
    out += bytes;
    ++count;
    i = j;
  }
  le::store<std::uint32_t>(reinterpret_cast<std::uint8_t*>(out.data()), count);
  return out;
}

// Parses one serialized set; `what` names it in errors.
inline row_id_tree_map deserialize_row_ids(bytes_view bytes, const std::string& what) {
  std::size_t pos = 0;
  const auto u32 = [&](const char* field) {
    if (bytes.size() - pos < 4)
      throw corrupt_error(what + ": truncated " + field + " at byte " + std::to_string(pos) + " of " +
                          std::to_string(bytes.size()));
    const auto v = le::load<std::uint32_t>(bytes.data() + pos);
    pos += 4;
    return v;
  };
  row_id_tree_map out;
  const auto count = u32("entry count");
  if (std::uint64_t(count) * 8 > bytes.size() - pos)
    throw corrupt_error(what + ": it claims " + std::to_string(count) + " entries in " + std::to_string(bytes.size()) +
                        " bytes");
  for (std::uint32_t e = 0; e < count; ++e) {
    const auto hi = u32("entry key");
    const auto size = u32("entry size");
    if (!out.entries.empty() && hi <= out.entries.back().first)
      throw corrupt_error(what + ": entry keys not ascending (" + std::to_string(hi) + " after " +
                          std::to_string(out.entries.back().first) + ")");
    if (size == 0) {
      out.entries.emplace_back(hi, std::nullopt);
      continue;
    }
    if (bytes.size() - pos < size)
      throw corrupt_error(what + ": entry " + std::to_string(e) + " at byte " + std::to_string(pos) + " holds " +
                          std::to_string(size) + " bytes, " + std::to_string(bytes.size() - pos) + " are left");
    std::size_t used = 0;
    dataset::roaring_bitmap low;
    try {
      low = dataset::roaring_bitmap::deserialize(bytes.subspan(pos, size), &used);
    } catch (const corrupt_error& x) {
      throw corrupt_error(what + ": entry " + std::to_string(e) + ": " + x.what());
    }
    if (used != size)
      throw corrupt_error(what + ": entry " + std::to_string(e) + " at byte " + std::to_string(pos) + " holds " +
                          std::to_string(size) + " bytes, its bitmap " + std::to_string(used));
    pos += size;
    out.entries.emplace_back(hi, std::move(low));
  }
  if (pos != bytes.size()) throw corrupt_error(what + ": " + std::to_string(bytes.size() - pos) + " bytes after the last entry");
  return out;
}

}  // namespace lancet::index
