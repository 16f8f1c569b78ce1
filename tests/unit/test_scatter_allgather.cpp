// van de Geijn's broadcast (binomial scatter + ring allgather) on the in-process transport:
// every communicator size of comm_sizes(), the sizes of counts_for(P) as bytes, roots 0,
// P - 1 and one in the middle; the bytes and messages on the wire are checked against the
// cost in scatter_allgather.cpp.
#include "registry.hpp"
#include "scatter_allgather.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

using Bytes = std::vector<std::byte>;

void check_bcast(int P, std::size_t bytes, int root)
{
    const Bytes expected = pattern(root, bytes, 5);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    auto stats = run_ranks(P, [&](InprocTransport& inproc) {
        Transport& net = inproc;
        const int r = net.rank();
        // Non-roots start with different bytes, so anything not delivered shows.
        Bytes buf = r == root ? expected : pattern(r, bytes, 9);
        HostMemory mem;
        scatter_allgather_bcast(net, mem, BcastArgs{buf.data(), bytes, root});
        results[std::size_t(r)] = buf;
    });
    INFO("P=" << P << " bytes=" << bytes << " root=" << root);
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected) == "");
    }
    if (P == 1 || bytes == 0) {
        for (int r = 0; r < P; ++r) CHECK(stats.messages_sent[std::size_t(r)] == 0);
        return;
    }

    // The cost in scatter_allgather.cpp. The scatter sends to each virtual rank v > 0 the
    // blocks of its subtree, [v, v + lowest set bit of v); the allgather sends (P - 1) S in
    // all; the root sends S - |block 0| in the scatter and S - |block 1| in the allgather.
    const BlockPartition blocks(bytes, P);
    auto range = [&](int first, int last) { return blocks.begin(std::min(last, P)) - blocks.begin(first); };
    std::size_t scatter_bytes = 0;
    for (int v = 1; v < P; ++v) scatter_bytes += range(v, v + (v & -v));
    std::size_t total = 0, messages = 0;
    for (int r = 0; r < P; ++r) {
        total += stats.bytes_sent[std::size_t(r)];
        messages += stats.messages_sent[std::size_t(r)];
    }
    CHECK(total == scatter_bytes + std::size_t(P - 1) * bytes);
    CHECK(stats.bytes_sent[std::size_t(root)] == 2 * bytes - blocks.length(0) - blocks.length(1));
    if (bytes >= std::size_t(P)) { // no empty blocks: one message per tree edge and ring step
        int lg = 0;
        while ((1 << lg) < P) ++lg;
        CHECK(messages == std::size_t(P - 1) + std::size_t(P) * std::size_t(P - 1));
        CHECK(stats.messages_sent[std::size_t(root)] == std::size_t(lg + P - 1));
    }
}

} // namespace

TEST_CASE("scatter_allgather bcast: every P and size, roots 0, middle and last", "[scatter_allgather][bcast]")
{
    for (int P : comm_sizes())
        for (std::size_t bytes : counts_for(P))
            for (int root : {0, P / 2, P - 1}) check_bcast(P, bytes, root);
}

TEST_CASE("scatter_allgather bcast: every root at a few sizes", "[scatter_allgather][bcast]")
{
    for (int P : {2, 3, 5, 6, 7, 8, 12})
        for (std::size_t bytes : {std::size_t(1), std::size_t(P - 1), std::size_t(P + 3), std::size_t(1001)})
            for (int root = 0; root < P; ++root) check_bcast(P, bytes, root);
}

TEST_CASE("scatter_allgather bcast is registered for any op and size", "[scatter_allgather][registry]")
{
    const Algorithm* a = find_algorithm(Collective::bcast, "scatter_allgather");
    REQUIRE(a != nullptr);
    CHECK_FALSE(why_not(*a, CallShape{7, 100, true}).has_value());
    CHECK_FALSE(why_not(*a, CallShape{7, 100, false}).has_value());
}
