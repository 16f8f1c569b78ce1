// Checks made on the rank threads of run_ranks(). Catch2 (v2 and v3) is not thread-safe: its
// assertion macros must run only on the thread that runs the test case. So a rank's body never
// asserts; it records what it found with rank_check() or LOOM_RANK_CHECK(), and run_ranks()
// (inproc_transport.hpp), once every rank has finished, throws a RankCheckFailure on the
// calling thread that lists every rank's failures. The test's own thread then fails with that
// message, under the INFO() context in scope. Each rank writes only its own record, so
// nothing is shared between the ranks.
//
// The unit tests enforce the rule: tests/unit/main_thread_only.cpp stops the program when a
// Catch2 assertion runs on any other thread, naming it and the rank.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loom::test {

// The rank whose body this thread runs inside run_ranks(), or -1 on any other thread.
int this_thread_rank();

// On a rank thread: records `what` as a failure of this rank unless `ok`; returns `ok`.
// Outside a rank thread it throws std::logic_error (the test's thread asserts with Catch2).
bool rank_check(bool ok, std::string_view what);

// On a rank thread: records a failure unless `got` equals `expected` byte for byte, as
// "<what>: " followed by first_difference(). Returns whether they are equal.
bool rank_check_bytes(std::span<const std::byte> got, std::span<const std::byte> expected, std::string_view what,
                      std::size_t elem_size = 1);

#define LOOM_RANK_CHECK_STR2(x) #x
#define LOOM_RANK_CHECK_STR(x)  LOOM_RANK_CHECK_STR2(x)
// rank_check() with the condition's text and place as the message.
#define LOOM_RANK_CHECK(...)                                 \
    ::loom::test::rank_check(static_cast<bool>(__VA_ARGS__), \
                             "LOOM_RANK_CHECK(" #__VA_ARGS__ ") at " __FILE__ ":" LOOM_RANK_CHECK_STR(__LINE__))

// Where `got` first differs from `expected`: "" if they are equal, else for instance
// "byte 12 of 400: expected 0x0b, got 0xcd (3 bytes differ)", or with elements of
// `elem_size` bytes "element 3 of 100 (bytes 12..15): expected 0b 00 00 00, got cd cd cd cd
// (...)", or the two sizes when they differ. For failure messages on any thread.
std::string first_difference(std::span<const std::byte> got, std::span<const std::byte> expected,
                             std::size_t elem_size = 1);

// What run_ranks() throws when a rank recorded a failed check: one line per failure, each
// naming its rank.
class RankCheckFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// For run_ranks(): one rank's failed checks, and the scope in which this thread is that rank.
struct RankFailures {
    std::vector<std::string> messages; // the first kKept of them
    std::size_t more = 0;              // and how many more
    static constexpr std::size_t kKept = 8;
};
class RankScope {
public:
    RankScope(int rank, RankFailures& failures);
    ~RankScope();
    RankScope(const RankScope&) = delete;
    RankScope& operator=(const RankScope&) = delete;
};
// The message of a RankCheckFailure for these ranks' failures, "" if there are none.
std::string describe_failures(const std::vector<RankFailures>& by_rank);

} // namespace loom::test
