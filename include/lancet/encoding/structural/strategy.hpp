// structural_strategy<Minor, Policy>: what a file writer of version 2.<Minor> encodes
// with (structural_encodings<Policy> with the minor version fixed). The version's machinery (field ids, one column per leaf, what the version can
// hold, legacy blob columns) around an encoding policy (policy.hpp) that decides how
// each page is encoded. default_strategy<Minor> is it with Lance 12's policy.
//
// This header is the class alone; its members are defined with the field encoders
// (field_encoders.hpp), which header-only programs get through file/structural.hpp.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lancet/arrow/array.hpp"
#include "lancet/encoding/field_encoder.hpp"
#include "lancet/encoding/structural/page_plan.hpp"
#include "lancet/encoding/structural/policy.hpp"

namespace lancet::encoding::structural {

// The machinery of every structural version, with the minor version (1, 2 or 3) a
// run-time value: what differs between 2.1, 2.2 and 2.3 is a few branches, so a program
// writing several of them compiles these members (and the writer over them) once.
template <structural_policy Policy = default_policy>
class structural_encodings {
 public:
  using policy_type = Policy;

  explicit structural_encodings(unsigned minor) : minor_(minor) {}
  structural_encodings(unsigned minor, Policy policy)
      : minor_(minor), policy_(std::make_shared<const Policy>(std::move(policy))) {}

  const Policy& policy() const noexcept { return *policy_; }
  unsigned minor_version() const noexcept { return minor_; }

  // Checks a batch's column before anything is encoded.
  void validate(const arrow::field& f, const arrow::array_data& a) const;
  // The encoder of a top-level field: ids and columns from the cursors, pages sized and
  // planned by the policy.
  field_encoder_ptr make_field_encoder(const arrow::field& f, field_id_cursor& ids, column_index_sequence& columns,
                                       const encoding_options& o) const;

 private:
  // Refuses what the structural encodings cannot hold, naming the field.
  void check_type(const arrow::field& f, const std::string& path) const;
  // Field ids in pre-order, a column per leaf.
  void assign(const arrow::field& f, const std::string& path, field_id_cursor& ids, column_index_sequence& columns,
              std::vector<std::uint32_t>& cols, std::vector<leaf_info>& leaves) const;
  static void skip_ids(const arrow::field& f, field_id_cursor& ids);
  // make_field_encoder, with a rewrite of the pages' layouts (the blob columns').
  field_encoder_ptr make_encoder(const arrow::field& f, field_id_cursor& ids, column_index_sequence& columns,
                                 const encoding_options& o, layout_rewrite rewrite) const;

  unsigned minor_;
  std::shared_ptr<const Policy> policy_ = std::make_shared<const Policy>();
};

// The strategy of files 2.<Minor>: structural_encodings with the version fixed. It adds
// no members, so a writer may hold it as its structural_encodings (`shared_type`).
template <unsigned Minor, structural_policy Policy = default_policy>
class structural_strategy : public structural_encodings<Policy> {
 public:
  static_assert(Minor >= 1 && Minor <= 3, "structural strategies exist for files 2.1, 2.2 and 2.3");
  static constexpr unsigned minor = Minor;
  using shared_type = structural_encodings<Policy>;

  structural_strategy() : shared_type(Minor) {}
  structural_strategy(Policy policy) : shared_type(Minor, std::move(policy)) {}  // NOLINT: implicit
};

// Lance 12's choices for files 2.<Minor>.
template <unsigned Minor>
using default_strategy = structural_strategy<Minor, default_policy>;

}  // namespace lancet::encoding::structural
