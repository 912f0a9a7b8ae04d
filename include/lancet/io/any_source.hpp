// any_source: a type-erased source. Anything that satisfies io::source (a local file,
// a memory buffer, a user's object-store client) can be held as an any_source, so
// that code reading many files through user-supplied sources (datasets) instantiates
// file::file_reader<io::any_source> once instead of once per source type.
//
//   io::any_source s = io::file_source("/data/a.lance");
//   file::file_reader<io::any_source> r(s);
//
// Readers detect optional capabilities of their source at compile time; any_source
// answers each of them at run time for the source it holds, so a file_source read
// through an any_source costs one virtual call per read and nothing else:
//   is_zero_copy()        the source hands out views (memory, mapped files): readers
//                         neither merge nearby ranges nor split large ones
//   prefers_whole_reads() one read of any size is one request and splitting it gains
//                         nothing (local files read with pread, io::file_source):
//                         what the held source's prefers_whole_reads() says, else false
//   read_into(ranges, out) many ranges end to end into one buffer (io::read_into):
//                         the held source's read_into(), else one read() per range
//   name()                what errors call the source (a file_source's path); the
//                         held source's name(), else "source"
//
// Copies share the held source (reads are const and thread-safe by the source
// contract). target<S>() gives the held object back when it is an S.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/io/source.hpp"

namespace lancet::io {

class any_source {
 public:
  template <source S>
    requires(!std::same_as<std::remove_cvref_t<S>, any_source>)
  any_source(S s)  // NOLINT(google-explicit-constructor): any source converts
      : impl_(std::make_shared<const model<S>>(std::move(s))) {}

  std::uint64_t size() const { return impl_->size(); }
  shared_bytes read(std::uint64_t offset, std::uint64_t length) const { return impl_->read(offset, length); }
  bool is_zero_copy() const noexcept { return impl_->is_zero_copy(); }
  bool prefers_whole_reads() const noexcept { return impl_->prefers_whole_reads(); }
  void read_into(std::span<const byte_range> ranges, std::uint8_t* out) const { impl_->read_into(ranges, out); }
  const std::string& name() const noexcept { return impl_->name; }

  // The held source when it is an S, else nullptr.
  template <class S>
  const S* target() const noexcept {
    auto* m = dynamic_cast<const model<S>*>(impl_.get());
    return m ? &m->s : nullptr;
  }

 private:
  struct base {
    std::string name;
    explicit base(std::string n) : name(std::move(n)) {}
    virtual ~base() = default;
    virtual std::uint64_t size() const = 0;
    virtual shared_bytes read(std::uint64_t offset, std::uint64_t length) const = 0;
    virtual bool is_zero_copy() const noexcept { return false; }
    virtual bool prefers_whole_reads() const noexcept { return false; }
    virtual void read_into(std::span<const byte_range> ranges, std::uint8_t* out) const = 0;
  };

  template <class S>
  struct model final : base {
    S s;
    explicit model(S src) : base(io::source_name(src)), s(std::move(src)) {}
    std::uint64_t size() const override { return s.size(); }
    shared_bytes read(std::uint64_t offset, std::uint64_t length) const override { return s.read(offset, length); }
    bool is_zero_copy() const noexcept override {
      if constexpr (requires { s.is_zero_copy(); }) return s.is_zero_copy();
      else return false;
    }
    bool prefers_whole_reads() const noexcept override {
      if constexpr (requires { s.prefers_whole_reads(); }) return s.prefers_whole_reads();
      else return false;
    }
    void read_into(std::span<const byte_range> ranges, std::uint8_t* out) const override {
      io::read_into(s, ranges, out);
    }
  };

  std::shared_ptr<const base> impl_;
};

static_assert(source<any_source>);

}  // namespace lancet::io
