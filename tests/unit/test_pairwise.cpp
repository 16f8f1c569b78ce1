// Pairwise-exchange alltoall on the in-process transport: every communicator size of
// comm_sizes(), the sizes of counts_for(P) as block bytes, in place
// (sendbuf nullptr or == recvbuf) and not; the bytes and messages on the wire are checked
// against the cost in pairwise.cpp.
#include "pairwise.hpp"
#include "registry.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

using Bytes = std::vector<std::byte>;

Bytes blocks_of(int rank, int P, std::size_t B, bool sent)
{
    Bytes v(std::size_t(P) * B);
    for (int peer = 0; peer < P; ++peer)
        for (std::size_t i = 0; i < B; ++i)
            v[std::size_t(peer) * B + i] = sent ? tag(rank, peer, i) : tag(peer, rank, i);
    return v;
}

enum class Mode { out_of_place, in_place_null, in_place_same };

void check_alltoall(int P, std::size_t B, Mode mode)
{
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    auto stats = run_ranks(P, [&](InprocTransport& inproc) {
        Transport& net = inproc;
        const int r = net.rank();
        Bytes send = blocks_of(r, P, B, true);
        Bytes recv(send.size(), std::byte{0xAB});
        HostMemory mem;
        switch (mode) {
        case Mode::out_of_place: pairwise_alltoall(net, mem, AlltoallArgs{send.data(), recv.data(), B}); break;
        case Mode::in_place_null: pairwise_alltoall(net, mem, AlltoallArgs{nullptr, send.data(), B}); break;
        case Mode::in_place_same: pairwise_alltoall(net, mem, AlltoallArgs{send.data(), send.data(), B}); break;
        }
        results[std::size_t(r)] = mode == Mode::out_of_place ? recv : send;
    });
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " block_bytes=" << B << " rank=" << r << " mode=" << int(mode));
        REQUIRE(first_difference(results[std::size_t(r)], blocks_of(r, P, B, false)) == "");
        // P - 1 steps of one message of B bytes each.
        const std::size_t steps = B != 0 ? std::size_t(P - 1) : 0;
        CHECK(stats.messages_sent[std::size_t(r)] == steps);
        CHECK(stats.bytes_sent[std::size_t(r)] == steps * B);
        CHECK(stats.waits[std::size_t(r)] == steps);
    }
}

} // namespace

TEST_CASE("pairwise alltoall: every P and block size, in place and not", "[pairwise][alltoall]")
{
    for (int P : comm_sizes())
        for (std::size_t B : counts_for(P))
            for (Mode mode : {Mode::out_of_place, Mode::in_place_null}) check_alltoall(P, B, mode);
}

TEST_CASE("pairwise alltoall: sendbuf == recvbuf is in place", "[pairwise][alltoall]")
{
    for (int P : {1, 2, 3, 4, 7, 8, 16, 17})
        for (std::size_t B : {std::size_t(1), std::size_t(13), std::size_t(4096)})
            check_alltoall(P, B, Mode::in_place_same);
}

TEST_CASE("pairwise alltoall is registered for any call", "[pairwise][registry]")
{
    const Algorithm* a = find_algorithm(Collective::alltoall, "pairwise");
    REQUIRE(a != nullptr);
    CHECK_FALSE(why_not(*a, CallShape{7, 100, true}).has_value());
    CHECK_FALSE(why_not(*a, CallShape{6, 100, false}).has_value());
}
