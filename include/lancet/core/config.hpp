// How lancet is compiled into a program.
//
// Header-only (the default): every header carries its definitions; a program includes
// what it uses and nothing else is needed.
//
// Compiled mode (define LANCET_COMPILED for the whole program, and link the `lancet`
// library built from src/lancet.cpp, e.g. meson's `lancet_compiled_dep`): the headers
// leave out the definitions of the heavy non-template code (the encoders, the default
// encoding policy, the 2.1+ field decoder, and everything the public dataset and index
// headers declare: their X_impl.hpp hold the definitions) and declare `extern template`s
// for the common configurations (file_writer of every version to io::file_sink and
// io::memory_sink with the default strategies), which the library instantiates once. A
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
