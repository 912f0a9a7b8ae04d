// Arrow schemas as JSON: the schema file format of the `lancet` tool (documented
// in README.md, "Schema files"). Written by hand, so short forms come first:
//
//   {"fields": [
//     {"name": "id", "type": "int64", "nullable": false},
//     {"name": "ts", "type": {"timestamp": "us", "tz": "UTC"}},
//     {"name": "price", "type": {"decimal128": 20, "scale": 4}},
//     {"name": "v", "type": {"fixed_size_list": "float32", "size": 128}},
//     {"name": "tags", "type": {"list": "utf8"}},
//     {"name": "s", "type": {"struct": [{"name": "a", "type": "int32"}]}},
//     {"name": "m", "type": {"map": ["utf8", "int32"], "keys_sorted": false}},
//     {"name": "d", "type": {"dictionary": "utf8", "index": "int32"}}],
//    "metadata": {"k": "v"}}
//
// A type is a string (types without parameters) or an object with exactly one type
// key whose value is the main parameter, plus that type's other parameters. A list
// item is a type (then the item field is "item", nullable, no metadata) or a whole
// field object, recognised by its "type" member. Metadata values are strings, or
// {"base64": "..."} for bytes that are not UTF-8. Unknown keys are errors, so typos
// do not pass silently. parse_schema(schema_to_json(s)) == s for every valid schema.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lancet/arrow/type.hpp"
#include "lancet/arrow/validate.hpp"
#include "lancet/core/error.hpp"
#include "lancet/json/base64.hpp"
#include "lancet/json/parse.hpp"
#include "lancet/json/value.hpp"
#include "lancet/json/write.hpp"

namespace lancet::json {

namespace detail {

struct simple_type_name {
  std::string_view name;
  arrow::type_id id;
};

// Types written as a bare string. The first spelling of each id is the one written.
inline constexpr simple_type_name simple_type_names[] = {
    {"null", arrow::type_id::null},           {"bool", arrow::type_id::boolean},
    {"int8", arrow::type_id::int8},           {"int16", arrow::type_id::int16},
    {"int32", arrow::type_id::int32},         {"int64", arrow::type_id::int64},
    {"uint8", arrow::type_id::uint8},         {"uint16", arrow::type_id::uint16},
    {"uint32", arrow::type_id::uint32},       {"uint64", arrow::type_id::uint64},
    {"float16", arrow::type_id::float16},     {"float32", arrow::type_id::float32},
    {"float64", arrow::type_id::float64},     {"date32", arrow::type_id::date32},
    {"date64", arrow::type_id::date64},       {"utf8", arrow::type_id::utf8},
    {"large_utf8", arrow::type_id::large_utf8}, {"binary", arrow::type_id::binary},
    {"large_binary", arrow::type_id::large_binary},
    // aliases (Arrow's other spellings)
    {"boolean", arrow::type_id::boolean},     {"string", arrow::type_id::utf8},
    {"large_string", arrow::type_id::large_utf8},
};

struct param_type_info {
  std::string_view name;
  std::string_view params;   // the other keys it takes, as listed in messages
  std::string_view example;  // shown when it is written as a bare string
};

inline constexpr param_type_info param_types[] = {
    {"time32", "", R"({"time32": "ms"})"},
    {"time64", "", R"({"time64": "us"})"},
    {"timestamp", R"("tz")", R"({"timestamp": "us", "tz": "UTC"})"},
    {"duration", "", R"({"duration": "ns"})"},
    {"decimal128", R"("scale")", R"({"decimal128": 20, "scale": 4})"},
    {"decimal256", R"("scale")", R"({"decimal256": 50, "scale": 6})"},
    {"fixed_size_binary", "", R"({"fixed_size_binary": 16})"},
    {"list", "", R"({"list": "int32"})"},
    {"large_list", "", R"({"large_list": "int32"})"},
    {"fixed_size_list", R"("size")", R"({"fixed_size_list": "float32", "size": 128})"},
    {"struct", "", R"({"struct": [{"name": "a", "type": "int32"}]})"},
    {"map", R"("keys_sorted")", R"({"map": ["utf8", "int32"], "keys_sorted": false})"},
    {"dictionary", R"("index")", R"({"dictionary": "utf8", "index": "int32"})"},
};

inline const param_type_info* find_param_type(std::string_view name) noexcept {
  for (const auto& p : param_types)
    if (p.name == name) return &p;
  return nullptr;
}
inline bool is_simple_type_name(std::string_view name) noexcept {
  for (const auto& s : simple_type_names)
    if (s.name == name) return true;
  return false;
}

class schema_parser {
 public:
  arrow::schema parse(const value& root) {
    if (root.k != value::kind::object)
      fail("", "expected a JSON object with \"fields\", got " + describe(root));
    no_duplicate_keys(root, "");
    arrow::schema s;
    const value* fields = nullptr;
    for (const auto& [key, v] : root.members) {
      if (key == "fields") fields = &v;
      else if (key == "metadata") s.metadata = parse_metadata(v, "");
      else fail("", "unknown key " + quote(key) + " (expected \"fields\" or \"metadata\")");
    }
    if (!fields) fail("", "missing \"fields\"");
    s.fields = parse_fields(*fields, "", "\"fields\"");
    return s;
  }

 private:
  [[noreturn]] static void fail(const std::string& where, const std::string& what) {
    throw invalid_input_error("schema: " + (where.empty() ? what : where + ": " + what));
  }
  static std::string at_field(const std::string& path) { return "field '" + path + "'"; }
  static std::string join(const std::string& parent, const std::string& name) {
    return parent.empty() ? name : parent + "." + name;
  }

  static void no_duplicate_keys(const value& obj, const std::string& where) {
    std::unordered_set<std::string_view> seen;
    for (const auto& m : obj.members)
      if (!seen.insert(m.first).second) fail(where, "key " + quote(m.first) + " given twice");
  }

  // `what` names the array in messages: "fields" at the top, "struct" inside a type.
  std::vector<arrow::field> parse_fields(const value& v, const std::string& parent, const std::string& what) {
    const std::string where = parent.empty() ? "" : at_field(parent);
    if (v.k != value::kind::array) fail(where, what + " must be an array of fields, got " + describe(v));
    std::vector<arrow::field> out;
    std::unordered_set<std::string> names;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      const std::string unnamed =
          parent.empty() ? "fields[" + std::to_string(i) + "]" : at_field(parent) + ", member " + std::to_string(i);
      auto f = parse_field(v.items[i], parent, unnamed);
      if (!names.insert(f.name).second) fail(at_field(join(parent, f.name)), "duplicate field name");
      out.push_back(std::move(f));
    }
    return out;
  }

  arrow::field parse_field(const value& v, const std::string& parent, const std::string& unnamed) {
    if (v.k != value::kind::object) fail(unnamed, "expected a field object, got " + describe(v));
    no_duplicate_keys(v, unnamed);
    const value* name = v.find("name");
    if (!name) fail(unnamed, "missing \"name\"");
    if (name->k != value::kind::string) fail(unnamed, "\"name\" must be a string, got " + describe(*name));
    arrow::field f;
    f.name = name->text;
    const std::string path = join(parent, f.name);
    const std::string where = at_field(path);
    const value* type = nullptr;
    for (const auto& [key, m] : v.members) {
      if (key == "name") continue;
      if (key == "type") {
        type = &m;
      } else if (key == "nullable") {
        if (m.k != value::kind::boolean) fail(where, "\"nullable\" must be true or false, got " + describe(m));
        f.nullable = m.b;
      } else if (key == "metadata") {
        f.metadata = parse_metadata(m, where);
      } else {
        fail(where, "unknown key " + quote(key) + " (expected \"name\", \"type\", \"nullable\" or \"metadata\")");
      }
    }
    if (!type) fail(where, "missing \"type\"");
    f.type = parse_type(*type, path);
    return f;
  }

  // A list item: a type (the default "item" field) or a field object.
  arrow::field parse_item(const value& v, const std::string& path) {
    if (v.k == value::kind::object && v.find("type") != nullptr)
      return parse_field(v, path, at_field(path) + ", item");
    return arrow::field{"item", parse_type(v, join(path, "item")), true, {}};
  }

  arrow::type_ptr parse_type(const value& v, const std::string& path) {
    const std::string where = at_field(path);
    if (v.k == value::kind::string) {
      for (const auto& s : simple_type_names)
        if (s.name == v.text) return arrow::make(s.id);
      if (const auto* p = find_param_type(v.text))
        fail(where, "type " + quote(v.text) + " needs parameters, e.g. " + std::string(p->example));
      fail(where, "unknown type name " + quote(v.text));
    }
    if (v.k != value::kind::object) fail(where, "expected a type name or a type object, got " + describe(v));
    no_duplicate_keys(v, where);
    if (v.members.empty()) fail(where, "empty type object");
    const param_type_info* kind = nullptr;
    const value* main = nullptr;
    for (const auto& [key, m] : v.members) {
      if (const auto* p = find_param_type(key)) {
        if (kind) fail(where, "type object has two type keys, " + quote(kind->name) + " and " + quote(key));
        kind = p;
        main = &m;
      } else if (is_simple_type_name(key)) {
        fail(where, "type " + quote(key) + " takes no parameters: write " + quote(key));
      }
    }
    if (!kind) {
      const std::string& first = v.members.front().first;
      if (first == "size" || first == "scale" || first == "tz")
        fail(where, "type object has no type key (such as \"list\" or \"timestamp\")");
      fail(where, "unknown type name " + quote(first));
    }
    // The other keys must be parameters of this kind.
    for (const auto& [key, m] : v.members) {
      if (key == kind->name) continue;
      if (kind->params.find("\"" + key + "\"") == std::string_view::npos)
        fail(where, "unknown key " + quote(key) + " in a " + std::string(kind->name) + " type" +
                        (kind->params.empty() ? " (it takes none)" : " (allowed: " + std::string(kind->params) + ")"));
    }
    const std::string_view k = kind->name;
    auto unit_of = [&](bool time32, bool time64) {
      if (main->k != value::kind::string)
        fail(where, std::string(k) + " unit must be a string, got " + describe(*main));
      arrow::time_unit u;
      if (main->text == "s") u = arrow::time_unit::second;
      else if (main->text == "ms") u = arrow::time_unit::milli;
      else if (main->text == "us") u = arrow::time_unit::micro;
      else if (main->text == "ns") u = arrow::time_unit::nano;
      else fail(where, "bad time unit " + quote(main->text) + " (expected \"s\", \"ms\", \"us\" or \"ns\")");
      if (time32 && u != arrow::time_unit::second && u != arrow::time_unit::milli)
        fail(where, "time32 takes \"s\" or \"ms\", got " + quote(main->text));
      if (time64 && u != arrow::time_unit::micro && u != arrow::time_unit::nano)
        fail(where, "time64 takes \"us\" or \"ns\", got " + quote(main->text));
      return u;
    };
    auto int_of = [&](const value& m, std::string_view what, std::int64_t lo, std::int64_t hi) {
      std::int64_t x = 0;
      bool ok = false;
      if (m.k == value::kind::integer) ok = true, x = m.i;
      else if (m.k == value::kind::unsigned_ && m.u <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        ok = true, x = std::int64_t(m.u);
      if (!ok || x < lo || x > hi)
        fail(where, std::string(what) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                        "], got " + describe(m));
      return std::int32_t(x);
    };
    constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
    if (k == "time32") return arrow::time32(unit_of(true, false));
    if (k == "time64") return arrow::time64(unit_of(false, true));
    if (k == "duration") return arrow::duration(unit_of(false, false));
    if (k == "timestamp") {
      const auto u = unit_of(false, false);
      std::string tz;
      if (const value* z = v.find("tz")) {
        if (z->k != value::kind::string) fail(where, "\"tz\" must be a string, got " + describe(*z));
        tz = z->text;
      }
      return arrow::timestamp(u, std::move(tz));
    }
    if (k == "decimal128" || k == "decimal256") {
      const int max_p = k == "decimal128" ? 38 : 76;
      const auto precision = int_of(*main, std::string(k) + " precision", 1, max_p);
      std::int32_t scale = 0;
      if (const value* s = v.find("scale")) scale = int_of(*s, "\"scale\"", -128, precision);
      return k == "decimal128" ? arrow::decimal128(precision, scale) : arrow::decimal256(precision, scale);
    }
    if (k == "fixed_size_binary") return arrow::fixed_size_binary(int_of(*main, "fixed_size_binary width", 0, int32_max));
    if (k == "list") return arrow::list(parse_item(*main, path));
    if (k == "large_list") return arrow::large_list(parse_item(*main, path));
    if (k == "fixed_size_list") {
      const value* size = v.find("size");
      if (!size) fail(where, "fixed_size_list needs \"size\", e.g. " + std::string(kind->example));
      const auto n = int_of(*size, "\"size\"", 0, int32_max);
      return arrow::fixed_size_list(parse_item(*main, path), n);
    }
    if (k == "map") {
      // [key, value]: each a type (fields "key" not null and "value" nullable) or a field object.
      if (main->k != value::kind::array || main->items.size() != 2)
        fail(where, "map needs [KEY_TYPE, VALUE_TYPE], e.g. " + std::string(kind->example));
      auto entry = [&](const value& e, const char* dflt, bool nullable) {
        if (e.k == value::kind::object && e.find("type") != nullptr)
          return parse_field(e, join(path, "entries"), at_field(path) + ", " + dflt);
        return arrow::field{dflt, parse_type(e, join(join(path, "entries"), dflt)), nullable, {}};
      };
      auto key = entry(main->items[0], "key", false);
      if (key.nullable && main->items[0].k == value::kind::object && main->items[0].find("nullable"))
        fail(where, "a map key cannot be nullable");
      bool sorted = false;
      if (const value* ks = v.find("keys_sorted")) {
        if (ks->k != value::kind::boolean) fail(where, "\"keys_sorted\" must be true or false, got " + describe(*ks));
        sorted = ks->b;
      }
      return arrow::map(std::move(key), entry(main->items[1], "value", true), sorted);
    }
    if (k == "dictionary") {
      auto value_type = parse_type(*main, path);
      arrow::type_ptr index = arrow::int32();
      if (const value* ix = v.find("index")) index = parse_type(*ix, path);
      return arrow::dictionary(std::move(index), std::move(value_type));
    }
    // struct
    return arrow::struct_(parse_fields(*main, path, "\"struct\""));
  }

  arrow::metadata parse_metadata(const value& v, const std::string& where) {
    if (v.k != value::kind::object) fail(where, "\"metadata\" must be an object of strings, got " + describe(v));
    no_duplicate_keys(v, where);
    arrow::metadata md;
    for (const auto& [key, m] : v.members) {
      const std::string at = (where.empty() ? "" : where + ", ") + "metadata key " + quote(key);
      if (m.k == value::kind::string) {
        md.emplace_back(key, m.text);
        continue;
      }
      const value* b64 = m.k == value::kind::object && m.members.size() == 1 ? m.find("base64") : nullptr;
      if (!b64 || b64->k != value::kind::string)
        throw invalid_input_error("schema: " + at + ": expected a string or {\"base64\": \"...\"}, got " + describe(m));
      std::string bytes;
      if (auto err = base64_decode(b64->text, bytes)) throw invalid_input_error("schema: " + at + ": invalid base64: " + *err);
      md.emplace_back(key, std::move(bytes));
    }
    return md;
  }
};

// ---- writing ------------------------------------------------------------------------

inline void append_name(std::string& out, std::string_view name, std::string_view what) {
  if (!arrow::is_valid_utf8(name))
    throw invalid_input_error("schema_to_json: " + std::string(what) + " is not valid UTF-8");
  append_quoted(out, name);
}

inline void append_metadata(std::string& out, const arrow::metadata& md, const std::string& owner) {
  out += '{';
  for (std::size_t i = 0; i < md.size(); ++i) {
    if (i) out += ", ";
    append_name(out, md[i].first, "a metadata key of " + owner);
    out += ": ";
    if (arrow::is_valid_utf8(md[i].second)) {
      append_quoted(out, md[i].second);
    } else {
      out += "{\"base64\": \"";
      append_base64(out, md[i].second);
      out += "\"}";
    }
  }
  out += '}';
}

inline void append_type(std::string& out, const arrow::data_type& t, const std::string& path);

inline void append_field(std::string& out, const arrow::field& f, const std::string& path) {
  out += "{\"name\": ";
  append_name(out, f.name, "the name of field '" + path + "'");
  out += ", \"type\": ";
  append_type(out, *f.type, path);
  if (!f.nullable) out += ", \"nullable\": false";
  if (!f.metadata.empty()) {
    out += ", \"metadata\": ";
    append_metadata(out, f.metadata, "field '" + path + "'");
  }
  out += '}';
}

inline void append_item(std::string& out, const arrow::field& item, const std::string& path) {
  const std::string sub = path + "." + item.name;
  if (item.name == "item" && item.nullable && item.metadata.empty()) append_type(out, *item.type, sub);
  else append_field(out, item, sub);
}

inline void append_type(std::string& out, const arrow::data_type& t, const std::string& path) {
  using arrow::type_id;
  for (const auto& s : simple_type_names) {
    if (s.id == t.id) {
      append_quoted(out, s.name);
      return;
    }
  }
  auto unit = [&](const char* key) {
    out += std::string("{\"") + key + "\": \"" + arrow::unit_name(t.unit) + "\"";
  };
  switch (t.id) {
    case type_id::time32: unit("time32"); break;
    case type_id::time64: unit("time64"); break;
    case type_id::duration: unit("duration"); break;
    case type_id::timestamp:
      unit("timestamp");
      if (!t.timezone.empty()) {
        out += ", \"tz\": ";
        append_name(out, t.timezone, "the time zone of field '" + path + "'");
      }
      break;
    case type_id::decimal128:
    case type_id::decimal256:
      out += std::string("{\"") + (t.id == type_id::decimal128 ? "decimal128" : "decimal256") +
             "\": " + std::to_string(t.precision);
      if (t.scale != 0) out += ", \"scale\": " + std::to_string(t.scale);
      break;
    case type_id::fixed_size_binary: out += "{\"fixed_size_binary\": " + std::to_string(t.byte_width); break;
    case type_id::list:
    case type_id::large_list:
      out += t.id == type_id::list ? "{\"list\": " : "{\"large_list\": ";
      append_item(out, t.children[0], path);
      break;
    case type_id::fixed_size_list:
      out += "{\"fixed_size_list\": ";
      append_item(out, t.children[0], path);
      out += ", \"size\": " + std::to_string(t.list_size);
      break;
    case type_id::map: {
      const auto& e = t.children[0];
      const auto& kv = e.type->children;
      const std::string sub = path + "." + e.name;
      out += "{\"map\": [";
      if (e.name == "entries" && kv[0].name == "key" && kv[0].metadata.empty()) append_type(out, *kv[0].type, sub + ".key");
      else append_field(out, kv[0], sub + "." + kv[0].name);
      out += ", ";
      if (e.name == "entries" && kv[1].name == "value" && kv[1].nullable && kv[1].metadata.empty())
        append_type(out, *kv[1].type, sub + ".value");
      else append_field(out, kv[1], sub + "." + kv[1].name);
      out += std::string("], \"keys_sorted\": ") + (t.keys_sorted ? "true" : "false");
      break;
    }
    case type_id::dictionary:
      out += "{\"dictionary\": ";
      append_type(out, *t.children[0].type, path);
      out += ", \"index\": ";
      append_type(out, *t.index_type, path);
      break;
    case type_id::struct_:
      out += "{\"struct\": [";
      for (std::size_t i = 0; i < t.children.size(); ++i) {
        if (i) out += ", ";
        append_field(out, t.children[i], path + "." + t.children[i].name);
      }
      out += ']';
      break;
    default: break;  // every simple type was handled above
  }
  out += '}';
}

}  // namespace detail

// Parses a schema document (see the format above and README.md). Errors are
// invalid_input_error: "schema: field 's.a': unknown type name \"int33\"", or
// "schema: malformed JSON at line 3, column 7: ...".
inline arrow::schema parse_schema(std::string_view text) {
  value root;
  syntax_error err;
  if (!try_parse(text, root, err)) {
    if (!err.malformed)
      throw invalid_input_error("schema: " + (err.path.empty() ? "" : "at '" + err.path + "': ") + err.message);
    std::string at = err.line ? " at line " + std::to_string(err.line) + ", column " + std::to_string(err.column) : "";
    throw invalid_input_error("schema: malformed JSON" + at + ": " + err.message);
  }
  auto s = detail::schema_parser().parse(root);
  for (const auto& f : s.fields) arrow::validate_type(*f.type, f.name);  // guards the parser's own checks
  return s;
}

// Reads and parses a schema file; errors name the file.
inline arrow::schema read_schema_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open schema file '" + path.string() + "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw io_error("cannot read schema file '" + path.string() + "'");
  try {
    return parse_schema(text);
  } catch (const invalid_input_error& e) {
    std::string what = e.what();
    constexpr std::string_view prefix = "invalid input: ";
    if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
    throw invalid_input_error(path.string() + ": " + what);
  }
}

// The JSON text of a schema in the format parse_schema reads, shortest forms
// first. `pretty` puts each top-level field on its own line; otherwise one line.
inline std::string schema_to_json(const arrow::schema& s, bool pretty = true) {
  for (const auto& f : s.fields) {
    if (!f.type) throw invalid_input_error("schema_to_json: field '" + f.name + "' has no type");
    arrow::validate_type(*f.type, f.name);
  }
  std::string out = pretty ? "{\n  \"fields\": [" : "{\"fields\": [";
  for (std::size_t i = 0; i < s.fields.size(); ++i) {
    out += pretty ? (i ? ",\n    " : "\n    ") : (i ? ", " : "");
    detail::append_field(out, s.fields[i], s.fields[i].name);
  }
  out += pretty ? (s.fields.empty() ? "]" : "\n  ]") : "]";
  if (!s.metadata.empty()) {
    out += pretty ? ",\n  \"metadata\": " : ", \"metadata\": ";
    detail::append_metadata(out, s.metadata, "the schema");
  }
  out += pretty ? "\n}\n" : "}";
  return out;
}

}  // namespace lancet::json
