// encoding::legacy::default_strategy: how Lance 12 encodes the fields of a 2.0 file (one
// column per primitive, offsets columns for lists, header columns for structs). The
// class alone; its members are defined with the field encoders (field_encoders.hpp),
// which header-only programs get through file/legacy.hpp.
#pragma once

#include "lancet/arrow/array.hpp"
#include "lancet/encoding/field_encoder.hpp"

namespace lancet::encoding::legacy {

struct default_strategy {
  // Checks a batch's column before anything is encoded (2.0 cannot store null structs).
  void validate(const arrow::field& f, const arrow::array_data& a) const;
  field_encoder_ptr make_field_encoder(const arrow::field& f, field_id_cursor& ids, column_index_sequence& columns,
                                       const encoding_options& o) const;
};

}  // namespace lancet::encoding::legacy
