// The test transport itself must catch the schedule bugs it exists to catch; and checks on
// rank threads are recorded and reported on the test's thread, never asserted there.
#include "inproc_transport.hpp"

#include "loom_catch.hpp"

#include <csignal>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace loom::test;

TEST_CASE("in-process transport delivers messages in posting order", "[inproc]")
{
    std::vector<int> got(3, -1);
    run_ranks(2, [&](InprocTransport& net) {
        int a = 1, b = 2, c = 3;
        if (net.rank() == 0) {
            net.post_send(1, &a, sizeof a);
            net.post_send(1, &b, sizeof b);
            net.post_send(1, &c, sizeof c);
            net.wait_all();
        } else {
            for (int& g : got) net.post_recv(0, &g, sizeof g);
            net.wait_all();
        }
    });
    CHECK(got == std::vector<int>{1, 2, 3});
}

TEST_CASE("in-process transport reports a deadlock instead of hanging", "[inproc]")
{
    // Both ranks receive first and send later: a deadlock under synchronous sends.
    CHECK_THROWS_WITH(run_ranks(2,
                                [](InprocTransport& net) {
                                    int x = 0, y = 1;
                                    net.post_recv(1 - net.rank(), &x, sizeof x);
                                    net.wait_all();
                                    net.post_send(1 - net.rank(), &y, sizeof y);
                                    net.wait_all();
                                }),
                      Catch::Matchers::ContainsSubstring("deadlock"));
}

TEST_CASE("in-process transport reports size mismatches and sends nobody receives", "[inproc]")
{
    CHECK_THROWS_WITH(run_ranks(2,
                                [](InprocTransport& net) {
                                    int x[2] = {0, 0};
                                    if (net.rank() == 0)
                                        net.post_send(1, x, sizeof x);
                                    else
                                        net.post_recv(0, x, sizeof x[0]);
                                    net.wait_all();
                                }),
                      Catch::Matchers::ContainsSubstring("expected"));
    CHECK_THROWS_WITH(run_ranks(3,
                                [](InprocTransport& net) {
                                    int x = 5;
                                    // Rank 0 sends to 1 and 2, but only rank 1 receives; rank 0's wait never
                                    // completes, which is reported as a deadlock.
                                    if (net.rank() == 0) {
                                        net.post_send(1, &x, sizeof x);
                                        net.post_send(2, &x, sizeof x);
                                    } else if (net.rank() == 1) {
                                        net.post_recv(0, &x, sizeof x);
                                    }
                                    net.wait_all();
                                }),
                      Catch::Matchers::ContainsSubstring("deadlock"));
}

TEST_CASE("first_difference: where and how two buffers differ", "[inproc]")
{
    const std::vector<std::byte> a{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    std::vector<std::byte> b = a;
    CHECK(first_difference(a, b) == "");
    b[2] = std::byte{0xcd};
    CHECK(first_difference(b, a) == "byte 2 of 4: expected 0x03, got 0xcd (1 byte differs)");
    b[3] = std::byte{0xcd};
    CHECK(first_difference(b, a, 2) == "element 1 of 2 (bytes 2..3): expected 03 04, got cd cd (2 bytes differ)");
    b.pop_back();
    CHECK(first_difference(b, a) == "expected 4 bytes, got 3; byte 2 of 4: expected 0x03, got 0xcd (1 byte differs)");
    CHECK(first_difference(std::span(a).first(2), a) == "expected 4 bytes, got 2");
}

TEST_CASE("checks recorded on rank threads fail the run on the calling thread and name the rank", "[inproc]")
{
    CHECK_NOTHROW(run_ranks(4, [](InprocTransport& net) { LOOM_RANK_CHECK(net.rank() < 4); }));
    const auto rank_1_fails = [](InprocTransport& net) { LOOM_RANK_CHECK(net.rank() != 1); };
    CHECK_THROWS_WITH(run_ranks(3, rank_1_fails),
                      Catch::Matchers::StartsWith("1 check failed on 1 of 3 ranks:\n"
                                                  "  rank 1: LOOM_RANK_CHECK(net.rank() != 1) at ") &&
                          Catch::Matchers::ContainsSubstring("test_inproc_transport.cpp:"));
    CHECK_THROWS_AS(run_ranks(3, rank_1_fails), RankCheckFailure);
    CHECK_THROWS_WITH(run_ranks(2,
                                [](InprocTransport& net) {
                                    const std::vector<std::byte> want(8, std::byte{1});
                                    std::vector<std::byte> got = want;
                                    got[5] = std::byte(net.rank());
                                    rank_check_bytes(got, want, "the result", 4);
                                }),
                      "1 check failed on 1 of 2 ranks:\n  rank 0: the result: element 1 of 2 (bytes 4..7): expected "
                      "01 01 01 01, got 01 00 01 01 (1 byte differs)");
    // A rank keeps its first few failures and counts the rest.
    CHECK_THROWS_WITH(run_ranks(1,
                                [](InprocTransport&) {
                                    for (int i = 0; i < 20; ++i) rank_check(false, "failure " + std::to_string(i));
                                }),
                      Catch::Matchers::ContainsSubstring("20 checks failed on 1 of 1 ranks:") &&
                          Catch::Matchers::ContainsSubstring("rank 0: failure 7\n  rank 0: ... and 12 more"));
    // A failure of the transport itself comes first.
    CHECK_THROWS_WITH(run_ranks(2,
                                [](InprocTransport& net) {
                                    int x[2] = {0, 0};
                                    rank_check(false, "before a size mismatch");
                                    if (net.rank() == 0)
                                        net.post_send(1, x, sizeof x);
                                    else
                                        net.post_recv(0, x, sizeof x[0]);
                                    net.wait_all();
                                }),
                      "rank 1 expected 4 bytes from rank 0, got 8");
    // Outside a rank thread there is nothing to record into: the test's thread uses Catch2.
    CHECK(this_thread_rank() == -1);
    CHECK_THROWS_AS(rank_check(false, "on the test's thread"), std::logic_error);
}

// main_thread_only.cpp stops the program when a Catch2 assertion runs on a rank thread. A
// child process makes one and must die of SIGABRT, its output naming the assertion and rank.
TEST_CASE("a Catch2 assertion on a rank thread stops the program and names the assertion and the rank", "[inproc]")
{
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        dup2(pipe_fds[1], STDOUT_FILENO);
        dup2(pipe_fds[1], STDERR_FILENO);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        alarm(60);
        try {
            run_ranks(2, [](InprocTransport& net) {
                if (net.rank() == 1) CHECK(net.rank() == 1); // the mistake the guard stops
            });
        } catch (...) {}
        _exit(0); // not stopped: the parent fails
    }
    close(pipe_fds[1]);
    std::string output;
    char buf[4096];
    for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) output.append(buf, std::size_t(n));
    close(pipe_fds[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    INFO("the child's output:\n" << output);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK_THAT(output, Catch::Matchers::ContainsSubstring("CHECK( net.rank() == 1 ) at "));
    CHECK_THAT(output, Catch::Matchers::ContainsSubstring("ran on rank 1's thread of run_ranks()"));
    CHECK_THAT(output, Catch::Matchers::ContainsSubstring(
                           "(test case \"a Catch2 assertion on a rank thread stops the program and names the "
                           "assertion and the rank\")"));
}
