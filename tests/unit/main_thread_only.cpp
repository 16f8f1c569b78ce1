// Catch2 (v2 and v3) is not thread-safe: an assertion on a rank thread of run_ranks() (or any
// other thread) races with the test's thread and with the other ranks on Catch2's state, which
// corrupts results or crashes now and then. Rank threads record what they find instead
// (rank_check(), LOOM_RANK_CHECK(): tests/support/rank_checks.hpp) and the test asserts after
// run_ranks() returns.
//
// This listener makes that rule hold: Catch2 tells it about every assertion before it runs
// (assertionStarting; v2 only after the fact for CHECK_THROWS and CHECK_NOTHROW, hence
// assertionEnded too), and an assertion on any thread but the one that runs the tests stops
// the program at once, naming the assertion, the test case and the rank. Stopping is the only
// safe answer: Catch2's state is already being touched from two threads, and an exception
// would be caught and reported by Catch2 itself (v2), on the wrong thread. A test of the
// [inproc] family (test_inproc_transport.cpp) checks it in a child process. INFO and CAPTURE
// tell the listener nothing; they only matter with an assertion after them, which is caught.
#define CATCH_CONFIG_EXTERNAL_INTERFACES // v2: the listener interfaces
#include "loom_catch.hpp"

#if LOOM_CATCH2_MAJOR >= 3
#include <catch2/catch_test_case_info.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#endif

#include "rank_checks.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

#if LOOM_CATCH2_MAJOR >= 3
using ListenerBase = Catch::EventListenerBase;
#else
using ListenerBase = Catch::TestEventListenerBase;
#endif

std::thread::id g_main_thread;  // the thread that runs the tests, set when the run starts
std::string g_test_case;        // written on that thread only, before the test case runs
std::atomic<bool> g_run{false}; // g_main_thread is set

thread_local bool t_stopping = false; // this thread is stopping the program

[[noreturn]] void stop(const Catch::AssertionInfo& info)
{
    static std::atomic_flag reported = ATOMIC_FLAG_INIT;
    if (reported.test_and_set()) // another thread is already stopping the program
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    t_stopping = true;
    const int rank = loom::test::this_thread_rank();
    const std::string where =
        rank >= 0 ? "rank " + std::to_string(rank) + "'s thread of run_ranks()" : "another thread";
    std::fprintf(stderr,
                 "\nloom-unit-tests: %.*s( %.*s ) at %s:%zu ran on %s, not on the thread that runs the tests "
                 "(test case \"%s\").\nCatch2 is not thread-safe: record the check on the rank with rank_check() or "
                 "LOOM_RANK_CHECK() (tests/support/rank_checks.hpp) and assert after run_ranks() returns.\n",
                 int(info.macroName.size()), info.macroName.data(), int(info.capturedExpression.size()),
                 info.capturedExpression.data(), info.lineInfo.file, std::size_t(info.lineInfo.line), where.c_str(),
                 g_test_case.c_str());
    std::fflush(stderr);
    std::abort();
}

void require_main_thread(const Catch::AssertionInfo& info)
{
    // Catch2 reports the SIGABRT of stop() as a failed assertion: let it, on this thread.
    if (t_stopping) return;
    if (g_run.load(std::memory_order_acquire) && std::this_thread::get_id() != g_main_thread) stop(info);
}

class MainThreadOnly : public ListenerBase {
public:
    using ListenerBase::ListenerBase;

    void testRunStarting(const Catch::TestRunInfo& info) override
    {
        g_main_thread = std::this_thread::get_id();
        g_run.store(true, std::memory_order_release);
        ListenerBase::testRunStarting(info);
    }
    void testCaseStarting(const Catch::TestCaseInfo& info) override
    {
        g_test_case = info.name;
        ListenerBase::testCaseStarting(info);
    }
    void assertionStarting(const Catch::AssertionInfo& info) override { require_main_thread(info); }
#if LOOM_CATCH2_MAJOR < 3
    bool assertionEnded(const Catch::AssertionStats& stats) override
    {
        require_main_thread(stats.assertionResult.m_info);
        return true;
    }
#endif
};

} // namespace

CATCH_REGISTER_LISTENER(MainThreadOnly)
