// Catch2 as the tests use it, from either major version Debian ships: v2 (Debian 12) is one header,
// v3 (Debian 13) split it and renamed the substring matcher (main: tests/CMakeLists.txt).
#pragma once
#include <string>

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
namespace rill::test {
inline auto contains(const std::string& text) { return Catch::Matchers::ContainsSubstring(text); }
inline auto starts_with(const std::string& text) { return Catch::Matchers::StartsWith(text); }
}  // namespace rill::test
#else
#include <catch2/catch.hpp>
namespace rill::test {
inline auto contains(const std::string& text) { return Catch::Matchers::Contains(text); }
inline auto starts_with(const std::string& text) { return Catch::Matchers::StartsWith(text); }
}  // namespace rill::test
#endif
