// How lancet is compiled into a program.
//
// Header-only (the default): every header carries its definitions; a program includes
// what it uses and nothing else is needed.
//
// Compiled mode (define LANCET_COMPILED for the whole program, and link the `lancet`
// library built from src/lancet.cpp, e.g. meson's `lancet_compiled_dep`): the headers
// leave out the definitions of the heavy non-template code (the encoders, the default
// encoding policy, the 2.1+ field decoder, and everything the public dataset and index
// headers declare, the IVF searcher among them: their X_impl.hpp hold the definitions)
// and declare `extern template`s for the common configurations (file_writer of every
// version to io::file_sink and io::memory_sink with the default strategies, the
// protobuf codecs of the manifest, the transaction and a file's schema), which the
// library instantiates once. A
// translation unit then parses little and compiles less; other configurations still
// compile from the headers (templates over a caller's own types: the X_impl.hpp).
#pragma once

#if defined(LANCET_BUILDING_LIBRARY) && !defined(LANCET_COMPILED)
#define LANCET_COMPILED 1
#endif

#if defined(LANCET_COMPILED) && !defined(LANCET_BUILDING_LIBRARY)
// A program in compiled mode: definitions come from the library.
#define LANCET_HEADER_ONLY 0
#else
#define LANCET_HEADER_ONLY 1
#endif

// Marks the declarations and definitions of the non-template functions compiled mode
// moves into the library: inline in header-only programs; ordinary functions in
// compiled mode (declared for the program, defined once in the library).
#if defined(LANCET_COMPILED)
#define LANCET_INLINE
#else
#define LANCET_INLINE inline
#endif

// Compiled mode needs the library and the program built for the same instruction set:
// the SIMD kernels' inline templates (simd/) have the same names whatever the vector
// width, so the linker would keep one width's copy for code built for the other. The
// library defines a symbol named after the set it was built for and a compiled-mode
// program refers to the one its own flags select: built apart, they fail to link
// (undefined reference to `lancet_compiled_for_<set>`) instead of running wrong code.
#if defined(__AVX512BW__)
#define LANCET_ARCH_TAG avx512bw
#elif defined(__AVX512F__)
#define LANCET_ARCH_TAG avx512f
#elif defined(__AVX2__) && defined(__FMA__)
#define LANCET_ARCH_TAG fma3_avx2
#elif defined(__AVX2__)
#define LANCET_ARCH_TAG avx2
#elif defined(__AVX__) && defined(__FMA__)
#define LANCET_ARCH_TAG fma3_avx
#elif defined(__AVX__)
#define LANCET_ARCH_TAG avx
#elif defined(__SSE4_2__)
#define LANCET_ARCH_TAG sse4_2
#elif defined(__SSE4_1__)
#define LANCET_ARCH_TAG sse4_1
#elif defined(__SSSE3__)
#define LANCET_ARCH_TAG ssse3
#elif defined(__SSE3__)
#define LANCET_ARCH_TAG sse3
#elif defined(__SSE2__)
#define LANCET_ARCH_TAG sse2
#elif defined(__ARM_NEON)
#define LANCET_ARCH_TAG neon
#else
#define LANCET_ARCH_TAG generic
#endif
#define LANCET_DETAIL_CAT2(a, b) a##b
#define LANCET_DETAIL_CAT(a, b) LANCET_DETAIL_CAT2(a, b)
#define LANCET_ARCH_SYMBOL LANCET_DETAIL_CAT(lancet_compiled_for_, LANCET_ARCH_TAG)

#if defined(LANCET_COMPILED) && !defined(LANCET_BUILDING_LIBRARY)
extern "C" const int LANCET_ARCH_SYMBOL;  // defined by the library (src/lancet.cpp)
namespace lancet::detail {
// Each translation unit refers to the symbol (kept though nothing reads it).
[[gnu::used]] static const int* const compiled_library_arch = &LANCET_ARCH_SYMBOL;
}  // namespace lancet::detail
#endif
