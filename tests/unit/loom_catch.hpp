// Catch2 for the unit tests, v2 or v3, natively. Every test file includes this header instead
// of Catch2's. tests/unit/meson.build finds the installed Catch2 and sets LOOM_CATCH2_MAJOR:
//   * 3 (Debian 13: Catch2 3.x): the headers of the features the tests use; main() comes from
//     the catch2-with-main library;
//   * 2 (Debian 12: Catch2 2.13): the single header; main.cpp defines main().
// The tests are written with v3's names. v2 lacks two of them, Catch::Approx (v2: global
// Approx) and Catch::Matchers::ContainsSubstring (v2: Catch::Matchers::Contains), which are
// supplied below. v2 is frozen, so these names cannot collide with a later release of it.
//
// Catch2 is not thread-safe: assert only on the test's own thread, never in the body of
// run_ranks() or on any other thread (rank_checks.hpp; main_thread_only.cpp enforces it).
#pragma once

#if !defined(LOOM_CATCH2_MAJOR)
#error "LOOM_CATCH2_MAJOR is not defined: build the unit tests through tests/unit/meson.build"
#elif LOOM_CATCH2_MAJOR >= 3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/catch_tostring.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#else
#include <catch2/catch.hpp>

#include <string>

namespace Catch {
using Detail::Approx;
namespace Matchers {
inline StdString::ContainsMatcher ContainsSubstring(const std::string& text,
                                                    CaseSensitive::Choice sensitivity = CaseSensitive::Yes)
{
    return Contains(text, sensitivity);
}
} // namespace Matchers
} // namespace Catch
#endif
