// A sink of any type behind one type: what a storage hands out for a new file (a local
// file_sink, an object store's multipart upload, a user's sink), so that the code writing
// files is compiled once. write / position / finish / abort are one virtual call each;
// writers hand sinks large pieces (file_sink and object_sink buffer), so the call costs
// nothing measurable. abort() discards an unfinished sink (io/abortable_sink.hpp); for a
// sink without abort() it just drops it, which the sink concept says must discard too.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "lancet/core/buffer.hpp"
#include "lancet/core/error.hpp"
#include "lancet/io/abortable_sink.hpp"
#include "lancet/io/sink.hpp"

namespace lancet::io {

class any_sink {
 public:
  template <sink S>
    requires(!std::same_as<std::remove_cvref_t<S>, any_sink>)
  explicit any_sink(S s) : impl_(std::make_unique<model<S>>(std::move(s))) {}
  any_sink(any_sink&&) noexcept = default;
  any_sink& operator=(any_sink&&) noexcept = default;

  void write(bytes_view bytes) { live().write(bytes); }
  std::uint64_t position() const { return live().position(); }
  void finish() { live().finish(); }
  // Discards what was written (nothing appears at the sink's name); never throws.
  void abort() noexcept {
    if (impl_) impl_->abort();
    impl_.reset();
  }

 private:
  struct base {
    virtual ~base() = default;
    virtual void write(bytes_view bytes) = 0;
    virtual std::uint64_t position() = 0;
    virtual void finish() = 0;
    virtual void abort() noexcept = 0;
  };
  template <class S>
  struct model final : base {
    S s;
    explicit model(S sink) : s(std::move(sink)) {}
    void write(bytes_view bytes) override { s.write(bytes); }
    std::uint64_t position() override { return std::uint64_t(s.position()); }
    void finish() override { s.finish(); }
    void abort() noexcept override { abort_sink(s); }
  };

  // const: a const any_sink still reports its position (writers ask it in const
  // members); the unique_ptr's constness is shallow.
  base& live() const {
    if (!impl_) throw invalid_input_error("any_sink: used after it was moved from or aborted");
    return *impl_;
  }

  std::unique_ptr<base> impl_;
};

static_assert(abortable_sink<any_sink>);

}  // namespace lancet::io
