// The test transport itself must catch the schedule bugs it exists to catch.
#include "inproc_transport.hpp"

#include "loom_catch.hpp"

using loom::test::InprocTransport;
using loom::test::run_ranks;

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
