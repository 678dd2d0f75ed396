// <weft/version.hpp>: the macros say the version of weft's meson.build (WEFT_TEST_PROJECT_VERSION, passed in by
// tests/version/meson.build), and <weft/weft.hpp> brings them in.
#include <weft/weft.hpp>

#include <doctest/doctest.h>

#include <string>

#ifndef WEFT_TEST_PROJECT_VERSION
#error "tests/version/meson.build passes the project's version as WEFT_TEST_PROJECT_VERSION"
#endif

// Usable by the preprocessor, where a program picks code by version.
#if !defined(WEFT_VERSION_MAJOR) || !defined(WEFT_VERSION_MINOR) || !defined(WEFT_VERSION_PATCH) || \
    !defined(WEFT_VERSION_STRING) || !defined(WEFT_VERSION)
#error "<weft/weft.hpp> must bring in every macro of <weft/version.hpp>"
#endif
#if WEFT_VERSION < WEFT_VERSION_NUMBER(0, 1, 0)
#error "WEFT_VERSION must be a number the preprocessor compares"
#endif

TEST_CASE("the version macros are the project's version") {
  const std::string project = WEFT_TEST_PROJECT_VERSION;
  CHECK(std::string(WEFT_VERSION_STRING) == project);
  const std::string parts = std::to_string(WEFT_VERSION_MAJOR) + "." + std::to_string(WEFT_VERSION_MINOR) + "." +
                            std::to_string(WEFT_VERSION_PATCH);
  CHECK(parts == project);
  CHECK(WEFT_VERSION == WEFT_VERSION_MAJOR * 1000000 + WEFT_VERSION_MINOR * 1000 + WEFT_VERSION_PATCH);
  // Orders as versions do: a later minor beats any patch of an earlier one.
  CHECK(WEFT_VERSION_NUMBER(0, 2, 0) > WEFT_VERSION_NUMBER(0, 1, 999));
  CHECK(WEFT_VERSION_NUMBER(1, 0, 0) > WEFT_VERSION_NUMBER(0, 999, 999));
}
