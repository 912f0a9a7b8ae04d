// transaction.proto (package lance): the change that produced a dataset version, as a
// oneof of operations (fields 100 onwards), stored under {root}/_transactions and
// inline in the manifest file. Messages of other protos that operations carry (schema
// Fields, MemWAL states) are kept as their encoded bytes.
//
// Lance 12 (LanceDB 0.39) adds to the 1.0-beta proto RewrittenIndex.new_index_files (5).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lancet/core/error.hpp"
#include "lancet/pb/message.hpp"
#include "lancet/pb/table/common.hpp"
#include "lancet/pb/table/fragment.hpp"
#include "lancet/pb/table/index.hpp"

namespace lancet::pb {

struct transaction {
  static constexpr std::string_view message_name = "Transaction";

  // Add fragments (ids not yet assigned).
  struct append {
    static constexpr std::string_view message_name = "Append";
    static constexpr std::uint32_t f_fragments = 1;
    std::vector<data_fragment> fragments;
    static constexpr auto proto_fields() { return pb::fields(pb::field(f_fragments, &append::fragments, "Append.fragments")); }
    friend bool operator==(const append&, const append&) = default;
  };
  // Mark rows deleted ("Delete").
  struct delete_rows {
    static constexpr std::string_view message_name = "Delete";
    static constexpr std::uint32_t f_updated_fragments = 1, f_deleted_fragment_ids = 2, f_predicate = 3;
    std::vector<data_fragment> updated_fragments;
    std::vector<std::uint64_t> deleted_fragment_ids;
    std::string predicate;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_updated_fragments, &delete_rows::updated_fragments, "Delete.updated_fragments"),
                        pb::field(f_deleted_fragment_ids, &delete_rows::deleted_fragment_ids, "Delete.deleted_fragment_ids"),
                        pb::field(f_predicate, &delete_rows::predicate, "Delete.predicate"));
    }
    friend bool operator==(const delete_rows&, const delete_rows&) = default;
  };
  // Create or replace the whole dataset.
  struct overwrite {
    static constexpr std::string_view message_name = "Overwrite";
    static constexpr std::uint32_t f_fragments = 1, f_schema = 2, f_schema_metadata = 3, f_config_upsert_values = 4,
                                   f_initial_bases = 5;
    std::vector<data_fragment> fragments;
    std::vector<std::string> schema_raw;  // encoded lance.file.Field messages
    std::map<std::string, std::string> schema_metadata;
    std::map<std::string, std::string> config_upsert_values;
    std::vector<base_path> initial_bases;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_fragments, &overwrite::fragments, "Overwrite.fragments"),
                        pb::field(f_schema, &overwrite::schema_raw, "Overwrite.schema"),
                        pb::field(f_schema_metadata, &overwrite::schema_metadata, "Overwrite.schema_metadata"),
                        pb::field(f_config_upsert_values, &overwrite::config_upsert_values, "Overwrite.config_upsert_values"),
                        pb::field(f_initial_bases, &overwrite::initial_bases, "Overwrite.initial_bases"));
    }
    friend bool operator==(const overwrite&, const overwrite&) = default;
  };
  // Add, replace or (with no new ones) drop indices.
  struct create_index {
    static constexpr std::string_view message_name = "CreateIndex";
    static constexpr std::uint32_t f_new_indices = 1, f_removed_indices = 2;
    std::vector<index_metadata> new_indices;
    std::vector<index_metadata> removed_indices;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_new_indices, &create_index::new_indices, "CreateIndex.new_indices"),
                        pb::field(f_removed_indices, &create_index::removed_indices, "CreateIndex.removed_indices"));
    }
    friend bool operator==(const create_index&, const create_index&) = default;
  };
  // Compaction: fragments rewritten without changing data.
  struct rewrite {
    static constexpr std::string_view message_name = "Rewrite";
    struct rewritten_index {
      static constexpr std::string_view message_name = "RewrittenIndex";
      static constexpr std::uint32_t f_old_id = 1, f_new_id = 2, f_new_index_details = 3, f_new_index_version = 4,
                                     f_new_index_files = 5;
      lancet::uuid old_id, new_id;
      std::optional<any> new_index_details;
      std::uint32_t new_index_version = 0;
      std::vector<index_file> new_index_files;
      static constexpr auto proto_fields() {
        // The UUIDs are written even when zero (a message field, not a scalar).
        return pb::fields(
            pb::field(f_old_id, &rewritten_index::old_id, "RewrittenIndex.old_id"),
            pb::field(f_new_id, &rewritten_index::new_id, "RewrittenIndex.new_id"),
            pb::field(f_new_index_details, &rewritten_index::new_index_details, "RewrittenIndex.new_index_details"),
            pb::field(f_new_index_version, &rewritten_index::new_index_version, "RewrittenIndex.new_index_version"),
            pb::field(f_new_index_files, &rewritten_index::new_index_files, "RewrittenIndex.new_index_files"));
      }
      friend bool operator==(const rewritten_index&, const rewritten_index&) = default;
    };
    struct rewrite_group {
      static constexpr std::string_view message_name = "RewriteGroup";
      static constexpr std::uint32_t f_old_fragments = 1, f_new_fragments = 2;
      std::vector<data_fragment> old_fragments, new_fragments;
      static constexpr auto proto_fields() {
        return pb::fields(pb::field(f_old_fragments, &rewrite_group::old_fragments, "RewriteGroup.old_fragments"),
                          pb::field(f_new_fragments, &rewrite_group::new_fragments, "RewriteGroup.new_fragments"));
      }
      friend bool operator==(const rewrite_group&, const rewrite_group&) = default;
    };
    static constexpr std::uint32_t f_old_fragments = 1, f_new_fragments = 2, f_groups = 3, f_rewritten_indices = 4;
    std::vector<data_fragment> old_fragments, new_fragments;  // deprecated by Lance: use groups
    std::vector<rewrite_group> groups;
    std::vector<rewritten_index> rewritten_indices;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_old_fragments, &rewrite::old_fragments, "Rewrite.old_fragments"),
                        pb::field(f_new_fragments, &rewrite::new_fragments, "Rewrite.new_fragments"),
                        pb::field(f_groups, &rewrite::groups, "Rewrite.groups"),
                        pb::field(f_rewritten_indices, &rewrite::rewritten_indices, "Rewrite.rewritten_indices"));
    }
    friend bool operator==(const rewrite&, const rewrite&) = default;
  };
  // Add columns (new schema, updated fragments).
  struct merge {
    static constexpr std::string_view message_name = "Merge";
    static constexpr std::uint32_t f_fragments = 1, f_schema = 2, f_schema_metadata = 3, f_preserves_nullability = 4;
    std::vector<data_fragment> fragments;
    std::vector<std::string> schema_raw;
    std::map<std::string, std::string> schema_metadata;
    // False when the new schema makes a column non-nullable: concurrent writes of rows
    // may then have written NULLs there (a retryable conflict with them).
    bool preserves_nullability = false;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_fragments, &merge::fragments, "Merge.fragments"),
                        pb::field(f_schema, &merge::schema_raw, "Merge.schema"),
                        pb::field(f_schema_metadata, &merge::schema_metadata, "Merge.schema_metadata"),
                        pb::field(f_preserves_nullability, &merge::preserves_nullability, "Merge.preserves_nullability"));
    }
    friend bool operator==(const merge&, const merge&) = default;
  };
  struct restore {
    static constexpr std::string_view message_name = "Restore";
    static constexpr std::uint32_t f_version = 1;
    std::uint64_t version = 0;
    static constexpr auto proto_fields() { return pb::fields(pb::field(f_version, &restore::version, "Restore.version")); }
    friend bool operator==(const restore&, const restore&) = default;
  };
  struct reserve_fragments {
    static constexpr std::string_view message_name = "ReserveFragments";
    static constexpr std::uint32_t f_num_fragments = 1;
    std::uint32_t num_fragments = 0;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_num_fragments, &reserve_fragments::num_fragments, "ReserveFragments.num_fragments"));
    }
    friend bool operator==(const reserve_fragments&, const reserve_fragments&) = default;
  };
  // The keys of the rows a merge insert inserted, on a table with an unenforced primary
  // key: two concurrent merge inserts whose filters may share a key conflict.
  struct exact_key_set_filter {
    static constexpr std::string_view message_name = "ExactKeySetFilter";
    static constexpr std::uint32_t f_key_hashes = 1;
    std::vector<std::uint64_t> key_hashes;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_key_hashes, &exact_key_set_filter::key_hashes, "ExactKeySetFilter.key_hashes"));
    }
    friend bool operator==(const exact_key_set_filter&, const exact_key_set_filter&) = default;
  };
  struct bloom_filter {
    static constexpr std::string_view message_name = "BloomFilter";
    static constexpr std::uint32_t f_bitmap = 1, f_num_bits = 2, f_number_of_items = 3, f_probability = 4;
    std::string bitmap;  // split-block bloom filter blocks (8 little-endian u32 words each)
    std::uint32_t num_bits = 0;
    std::uint64_t number_of_items = 0;  // what the filter was sized for
    double probability = 0;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_bitmap, &bloom_filter::bitmap, "BloomFilter.bitmap"),
                        pb::field(f_num_bits, &bloom_filter::num_bits, "BloomFilter.num_bits"),
                        pb::field(f_number_of_items, &bloom_filter::number_of_items, "BloomFilter.number_of_items"),
                        pb::field(f_probability, &bloom_filter::probability, "BloomFilter.probability"));
    }
    friend bool operator==(const bloom_filter&, const bloom_filter&) = default;
  };
  struct key_existence_filter {
    static constexpr std::string_view message_name = "KeyExistenceFilter";
    static constexpr std::uint32_t f_field_ids = 1, f_exact = 2, f_bloom = 3;
    std::vector<std::int32_t> field_ids;
    std::variant<std::monostate, exact_key_set_filter, bloom_filter> data;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_field_ids, &key_existence_filter::field_ids, "KeyExistenceFilter.field_ids"),
                        pb::oneof(&key_existence_filter::data, "KeyExistenceFilter.data", {f_exact, f_bloom}));
    }
    friend bool operator==(const key_existence_filter&, const key_existence_filter&) = default;
  };

  struct update {
    static constexpr std::string_view message_name = "Update";
    static constexpr std::uint32_t f_removed_fragment_ids = 1, f_updated_fragments = 2, f_new_fragments = 3,
                                   f_fields_modified = 4, f_mem_wal_to_merge = 5,
                                   f_fields_for_preserving_frag_bitmap = 6, f_update_mode = 7,
                                   f_inserted_rows_filter = 8;
    enum class mode : std::uint32_t { rewrite_rows = 0, rewrite_columns = 1 };
    std::vector<std::uint64_t> removed_fragment_ids;
    std::vector<data_fragment> updated_fragments;
    std::vector<data_fragment> new_fragments;
    std::vector<std::uint32_t> fields_modified;
    std::optional<std::string> mem_wal_to_merge_raw;  // encoded MemWalIndexDetails.MemWal
    std::vector<std::uint32_t> fields_for_preserving_frag_bitmap;
    mode update_mode = mode::rewrite_rows;
    std::optional<key_existence_filter> inserted_rows_filter;
    static constexpr auto proto_fields() {
      return pb::fields(
          pb::field(f_removed_fragment_ids, &update::removed_fragment_ids, "Update.removed_fragment_ids"),
          pb::field(f_updated_fragments, &update::updated_fragments, "Update.updated_fragments"),
          pb::field(f_new_fragments, &update::new_fragments, "Update.new_fragments"),
          pb::field(f_fields_modified, &update::fields_modified, "Update.fields_modified"),
          pb::field(f_mem_wal_to_merge, &update::mem_wal_to_merge_raw, "Update.mem_wal_to_merge"),
          pb::field(f_fields_for_preserving_frag_bitmap, &update::fields_for_preserving_frag_bitmap,
                    "Update.fields_for_preserving_frag_bitmap"),
          pb::field(f_update_mode, &update::update_mode, "Update.update_mode"),
          pb::field(f_inserted_rows_filter, &update::inserted_rows_filter, "Update.inserted_rows_filter"));
    }
    void check_decoded() const {
      if (update_mode > mode::rewrite_columns)
        throw unsupported_error("Update: unknown update mode " + std::to_string(std::uint32_t(update_mode)));
    }
    friend bool operator==(const update&, const update&) = default;
  };
  struct project {
    static constexpr std::string_view message_name = "Project";
    static constexpr std::uint32_t f_schema = 1, f_preserves_nullability = 2;
    std::vector<std::string> schema_raw;
    bool preserves_nullability = false;  // as Merge's
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_schema, &project::schema_raw, "Project.schema"),
                        pb::field(f_preserves_nullability, &project::preserves_nullability, "Project.preserves_nullability"));
    }
    friend bool operator==(const project&, const project&) = default;
  };
  // Key -> value (absent value: remove the key); entries are UpdateMapEntry {key = 1,
  // optional value = 2}, in order.
  struct update_map {
    static constexpr std::string_view message_name = "UpdateMap";
    static constexpr std::uint32_t f_update_entries = 1, f_replace = 2;
    std::vector<std::pair<std::string, std::optional<std::string>>> entries;
    bool replace = false;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_update_entries, &update_map::entries, "UpdateMap.update_entries"),
                        pb::field(f_replace, &update_map::replace, "UpdateMap.replace"));
    }
    friend bool operator==(const update_map&, const update_map&) = default;
  };
  // The deprecated per-field metadata replacement of UpdateConfig.field_metadata.
  struct field_metadata_update {
    static constexpr std::string_view message_name = "FieldMetadataUpdate";
    static constexpr std::uint32_t f_metadata = 5;
    std::map<std::string, std::string> metadata;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_metadata, &field_metadata_update::metadata, "FieldMetadataUpdate.metadata"));
    }
    friend bool operator==(const field_metadata_update&, const field_metadata_update&) = default;
  };
  struct update_config {
    static constexpr std::string_view message_name = "UpdateConfig";
    static constexpr std::uint32_t f_upsert_values = 1, f_delete_keys = 2, f_schema_metadata = 3, f_field_metadata = 4,
                                   f_config_updates = 6, f_table_metadata_updates = 7, f_schema_metadata_updates = 8,
                                   f_field_metadata_updates = 9;
    std::optional<update_map> config_updates, table_metadata_updates, schema_metadata_updates;
    std::map<std::int32_t, update_map> field_metadata_updates;
    // Deprecated forms, still read.
    std::map<std::string, std::string> upsert_values;
    std::vector<std::string> delete_keys;
    std::map<std::string, std::string> schema_metadata;
    std::map<std::uint32_t, field_metadata_update> field_metadata;
    static constexpr auto proto_fields() {
      return pb::fields(
          pb::field(f_upsert_values, &update_config::upsert_values, "UpdateConfig.upsert_values"),
          pb::field(f_delete_keys, &update_config::delete_keys, "UpdateConfig.delete_keys"),
          pb::field(f_schema_metadata, &update_config::schema_metadata, "UpdateConfig.schema_metadata"),
          pb::field(f_field_metadata, &update_config::field_metadata, "UpdateConfig.field_metadata"),
          pb::field(f_config_updates, &update_config::config_updates, "UpdateConfig.config_updates"),
          pb::field(f_table_metadata_updates, &update_config::table_metadata_updates,
                    "UpdateConfig.table_metadata_updates"),
          pb::field(f_schema_metadata_updates, &update_config::schema_metadata_updates,
                    "UpdateConfig.schema_metadata_updates"),
          pb::field(f_field_metadata_updates, &update_config::field_metadata_updates,
                    "UpdateConfig.field_metadata_updates"));
    }
    friend bool operator==(const update_config&, const update_config&) = default;
  };
  struct data_replacement {
    static constexpr std::string_view message_name = "DataReplacement";
    struct group {
      static constexpr std::string_view message_name = "DataReplacementGroup";
      static constexpr std::uint32_t f_fragment_id = 1, f_new_file = 2;
      std::uint64_t fragment_id = 0;
      std::optional<data_file> new_file;
      static constexpr auto proto_fields() {
        return pb::fields(pb::field(f_fragment_id, &group::fragment_id, "DataReplacementGroup.fragment_id"),
                          pb::field(f_new_file, &group::new_file, "DataReplacementGroup.new_file"));
      }
      friend bool operator==(const group&, const group&) = default;
    };
    static constexpr std::uint32_t f_replacements = 1;
    std::vector<group> replacements;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_replacements, &data_replacement::replacements, "DataReplacement.replacements"));
    }
    friend bool operator==(const data_replacement&, const data_replacement&) = default;
  };
  // MemWAL states are carried as encoded MemWalIndexDetails.MemWal messages.
  struct update_mem_wal_state {
    static constexpr std::string_view message_name = "UpdateMemWalState";
    static constexpr std::uint32_t f_added = 1, f_updated = 2, f_removed = 3;
    std::vector<std::string> added_raw, updated_raw, removed_raw;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_added, &update_mem_wal_state::added_raw, "UpdateMemWalState.added"),
                        pb::field(f_updated, &update_mem_wal_state::updated_raw, "UpdateMemWalState.updated"),
                        pb::field(f_removed, &update_mem_wal_state::removed_raw, "UpdateMemWalState.removed"));
    }
    friend bool operator==(const update_mem_wal_state&, const update_mem_wal_state&) = default;
  };
  struct clone {
    static constexpr std::string_view message_name = "Clone";
    static constexpr std::uint32_t f_is_shallow = 1, f_ref_name = 2, f_ref_version = 3, f_ref_path = 4,
                                   f_branch_name = 5;
    bool is_shallow = false;
    std::optional<std::string> ref_name;
    std::uint64_t ref_version = 0;
    std::string ref_path;
    std::optional<std::string> branch_name;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_is_shallow, &clone::is_shallow, "Clone.is_shallow"),
                        pb::field(f_ref_name, &clone::ref_name, "Clone.ref_name"),
                        pb::field(f_ref_version, &clone::ref_version, "Clone.ref_version"),
                        pb::field(f_ref_path, &clone::ref_path, "Clone.ref_path"),
                        pb::field(f_branch_name, &clone::branch_name, "Clone.branch_name"));
    }
    friend bool operator==(const clone&, const clone&) = default;
  };
  struct update_bases {
    static constexpr std::string_view message_name = "UpdateBases";
    static constexpr std::uint32_t f_new_bases = 1;
    std::vector<base_path> new_bases;
    static constexpr auto proto_fields() {
      return pb::fields(pb::field(f_new_bases, &update_bases::new_bases, "UpdateBases.new_bases"));
    }
    friend bool operator==(const update_bases&, const update_bases&) = default;
  };

  // Variant index i is oneof field f_operation_first + i - 1 (index 0: no operation).
  using operation_t = std::variant<std::monostate, append, delete_rows, overwrite, create_index, rewrite, merge, restore,
                                   reserve_fragments, update, project, update_config, data_replacement,
                                   update_mem_wal_state, clone, update_bases>;

  static constexpr std::uint32_t f_read_version = 1, f_uuid = 2, f_tag = 3, f_transaction_properties = 4;
  static constexpr std::uint32_t f_operation_first = 100;
  // Fields [100, 200) are the operation's: one this library does not know is refused.
  static constexpr std::uint32_t f_operation_reserved_last = 199;

  std::uint64_t read_version = 0;
  std::string uuid;  // hyphenated text form
  std::string tag;
  std::map<std::string, std::string> transaction_properties;
  operation_t operation;

  // "{read_version}-{uuid}.txn": its name under {root}/_transactions.
  std::string file_name() const { return std::to_string(read_version) + "-" + uuid + ".txn"; }

  static constexpr auto proto_fields() {
    return pb::fields(
        pb::field(f_read_version, &transaction::read_version, "Transaction.read_version"),
        pb::field(f_uuid, &transaction::uuid, "Transaction.uuid"),
        pb::field(f_tag, &transaction::tag, "Transaction.tag"),
        pb::field(f_transaction_properties, &transaction::transaction_properties, "Transaction.transaction_properties"),
        pb::oneof(&transaction::operation, "Transaction.operation", f_operation_first)
            .refusing(unknown_field::corrupt, f_operation_first, f_operation_reserved_last));
  }
  void check_encodable() const {
    if (std::holds_alternative<std::monostate>(operation))
      throw invalid_input_error("transaction " + uuid + " has no operation");
  }
  void check_decoded() const {
    // Lance refuses a transaction without an operation.
    if (std::holds_alternative<std::monostate>(operation))
      throw corrupt_error("Transaction " + uuid + ": no operation");
  }
  friend bool operator==(const transaction&, const transaction&) = default;
};

}  // namespace lancet::pb
