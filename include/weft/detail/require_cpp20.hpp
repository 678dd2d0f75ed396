// weft needs C++20 (concepts, designated initializers, std::span...). Every public header includes this first, so
// that a program compiled as C++17 or older gets one clear error naming the fix rather than pages of errors from
// the headers' templates. No #pragma once: it holds nothing but the check, which costs nothing to repeat.
//
// An #error does not stop GCC or Clang, which would go on to parse the header that included this one; the
// #include of a file that cannot exist right after it is a fatal error in every compiler, so the compilation
// ends there. MSVC reports __cplusplus as 199711L unless /Zc:__cplusplus is given; _MSVC_LANG is its real value.
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 202002L
#error "weft needs C++20: compile with -std=c++20 (or later); this translation unit is older than C++20"
#include "(weft stops the compilation here: see the #error above)"
#endif
