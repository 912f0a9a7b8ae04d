// Encoding policies for the structural (2.1, 2.2, 2.3) files: the compile-time hook
// through which a program decides how its columns are encoded.
//
// A policy is a copyable class with these members; the encoders call them on the
// policy's own type (no virtual functions, nothing to clone, no slicing):
//
//   page_plan plan_page(const leaf_info&, const data_block& values, const page_facts&) const;
//       the layout (mini-block, full-zip, constant), dictionary, value codec and
//       general compression of one page of one leaf column;
//   page_sizing size_pages(const arrow::field& top_level, const page_sizing& configured) const;
//       how many bytes a field buffers before its pages are cut, and the row groups
//       pages are sized by;
//   field_compression resolve(const std::string& column, const arrow::data_type&,
//                             const arrow::metadata&) const;      (optional)
//       a leaf's compression parameters (default: its lance-encoding:* metadata).
//
// default_policy makes Lance 12's choices, byte for byte. A user policy derives from it,
// redefines the members it cares about and calls default_policy's for the rest:
//
//   struct zstd9_for_payload : lancet::encoding::structural::default_policy {
//     page_plan plan_page(const leaf_info& l, const data_block& v, const page_facts& f) const {
//       auto p = default_policy::plan_page(l, v, f);
//       if (l.column == "payload") { p.general = compression_scheme::zstd; p.general_level = 9; }
//       return p;
//     }
//   };
//   file::file_writer<file::v2_2, io::file_sink, zstd9_for_payload> w(io::file_sink(path));
//
// A class that is not a policy is refused at compile time by a static_assert naming the
// member it lacks (check_structural_policy). A policy that throws while a page is
// planned fails the write with the policy's lancet::error, or an invalid_input_error
// naming the column for any other exception.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <utility>

#include "lancet/arrow/array.hpp"
#include "lancet/core/config.hpp"
#include "lancet/encoding/compression_params.hpp"
#include "lancet/encoding/structural/page_plan.hpp"

namespace lancet::encoding::structural {

using compression_scheme = enc21::compression_scheme;

// How a top-level field's pages are cut.
struct page_sizing {
  // Bytes of the field's arrays buffered (per leaf column) before they become pages.
  std::uint64_t cache_bytes_per_column = 8ull << 20;
  // Arrays are measured this many rows at a time (0: whole arrays), so that a large
  // batch is cut into pages of about cache_bytes_per_column (encoding_options::group_rows).
  std::uint64_t group_rows = 0;
  bool operator==(const page_sizing&) const = default;
};


// Lance 12's choices for the structural files (the minor version comes with each leaf).
class default_policy {
 public:
  default_policy() = default;
  // Compression rules per column (lance-encoding:* metadata still overrides them).
  default_policy(compression_params params) : params_(std::move(params)) {}  // NOLINT: implicit

  // Lance 12's plan for a page: layout, dictionary, value codec, general compression.
  page_plan plan_page(const leaf_info& leaf, const data_block& values, const page_facts& f) const;

  // Page sizing as Lance 12 sizes pages: what the writer was configured with.
  page_sizing size_pages(const arrow::field&, const page_sizing& configured) const { return configured; }

  // The compression parameters of a leaf: the field's lance-encoding:* metadata over
  // the rules this policy was made with (compression_params).
  field_compression resolve(const std::string& column, const arrow::data_type& type,
                            const arrow::metadata& metadata) const {
    return params_.resolve(column, type, metadata);
  }

  const compression_params& params() const noexcept { return params_; }

 protected:
  // Lance 12's choice for fixed-width mini-block values: BSS when a general compression
  // is asked for and the bytes look like floats; otherwise the smallest of plain, RLE
  // (when runs are below the field's threshold, if it sets one) and inline bit-packing.
  value_codec choose_fixed(const data_block& b, const field_compression& params) const;

 private:
  compression_params params_;
};

// What the encoders require of a policy.
template <class P>
concept structural_policy =
    std::copy_constructible<P> &&
    requires(const P& p, const leaf_info& l, const data_block& v, const page_facts& f, const arrow::field& field,
             const page_sizing& s) {
      { p.plan_page(l, v, f) } -> std::same_as<page_plan>;
      { p.size_pages(field, s) } -> std::same_as<page_sizing>;
    };

// The same requirements, one static_assert each, so that a compile error names the
// member a class lacks instead of listing overloads.
template <class P>
constexpr bool check_structural_policy() {
  static_assert(requires(const P& p, const leaf_info& l, const data_block& v, const page_facts& f) {
    { p.plan_page(l, v, f) } -> std::same_as<page_plan>;
  }, "lancet: an encoding policy needs the member `page_plan plan_page(const leaf_info&, const data_block&, "
     "const page_facts&) const` (derive from lancet::encoding::structural::default_policy to inherit Lance 12's)");
  static_assert(requires(const P& p, const arrow::field& field, const page_sizing& s) {
    { p.size_pages(field, s) } -> std::same_as<page_sizing>;
  }, "lancet: an encoding policy needs the member `page_sizing size_pages(const arrow::field&, const "
     "page_sizing&) const` (derive from lancet::encoding::structural::default_policy to inherit Lance 12's)");
  static_assert(std::copy_constructible<P>, "lancet: an encoding policy must be copy-constructible");
  return true;
}

static_assert(structural_policy<default_policy>);

}  // namespace lancet::encoding::structural

#if LANCET_HEADER_ONLY
#include "lancet/encoding/structural/policy_impl.hpp"
#endif
