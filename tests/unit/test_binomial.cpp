// Tests of the binomial family: see test_support.hpp for the shared helpers.
// Bcast (segmented or not), order-preserving reduce and allreduce on the in-process transport,
// for every P in comm_sizes(), roots 0, a middle rank and P-1, in place and not, against
// pattern() and the rank-ordered fold(), with a commutative kernel and with matmul().
#include "binomial.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <set>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

int ceil_lg(int P)
{
    int steps = 0;
    while ((1 << steps) < P) ++steps;
    return steps;
}

std::vector<int> roots_for(int P)
{
    const std::set<int> roots{0, P / 2, P - 1};
    return {roots.begin(), roots.end()};
}

bool guard_intact(const std::vector<std::byte>& buf)
{
    return std::all_of(buf.end() - kGuard, buf.end(), [](std::byte b) { return b == kCanary; });
}

// Segment sizes for a bcast of `bytes`: none, one byte, odd sizes, a short last segment,
// exactly the message, and more than the message.
std::vector<std::size_t> segments_for(std::size_t bytes)
{
    std::set<std::size_t> s{0, bytes + 5};
    if (bytes <= 128) s.insert(1);
    if (bytes <= 4096) s.insert(3);
    if (bytes != 0) s.insert(bytes);
    if (bytes >= 4) s.insert((bytes + 3) / 4);
    return {s.begin(), s.end()};
}

void check_bcast(int P, std::size_t bytes, int root, std::size_t segment)
{
    const auto expected = pattern(root, bytes);
    std::vector<std::vector<std::byte>> results(static_cast<std::size_t>(P));
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        std::vector<std::byte> buf(bytes + kGuard, kCanary);
        if (r == root) std::copy(expected.begin(), expected.end(), buf.begin());
        HostMemory mem;
        binomial_bcast(net, mem, BcastArgs{buf.data(), bytes, root, segment});
        results[std::size_t(r)] = std::move(buf);
    });
    const std::size_t seg = segment == 0 ? bytes : std::min(segment, bytes);
    const std::size_t segments = bytes == 0 ? 0 : (bytes + seg - 1) / seg;
    std::size_t messages = 0;
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " bytes=" << bytes << " root=" << root << " segment=" << segment << " rank=" << r);
        REQUIRE(first_difference(prefix(results[std::size_t(r)], bytes), expected) == "");
        REQUIRE(guard_intact(results[std::size_t(r)]));
        // A rank sends each segment to each of its children: at most ceil(lg P) at the root.
        CHECK(stats.messages_sent[std::size_t(r)] <= segments * std::size_t(ceil_lg(P)));
        messages += stats.messages_sent[std::size_t(r)];
    }
    // Every rank but the root receives every segment exactly once.
    CHECK(messages == std::size_t(P - 1) * segments);
}

// HostMemory that counts the bytes it copies and allocates.
class CountingMemory final : public MemoryOps {
public:
    void copy(void* dst, const void* src, std::size_t bytes) override
    {
        copied += bytes;
        host_.copy(dst, src, bytes);
    }
    void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) override
    {
        host_.reduce(op, in, inout, count);
    }
    Scratch scratch(std::size_t bytes) override
    {
        allocated += bytes;
        return host_.scratch(bytes);
    }
    std::size_t copied = 0, allocated = 0;

private:
    HostMemory host_;
};

// A reduction under test and rank r's input for it.
struct Case {
    Reduction op;
    std::vector<std::byte> (*input)(int rank, std::size_t count);
};
template <class T>
std::vector<std::byte> typed_input(int rank, std::size_t count)
{
    return as_bytes(rank_input<T>(rank, count));
}
Case int32_sum() { return {kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), &typed_input<std::int32_t>}; }
Case matmul_case() { return {matmul(), &matmul_input}; }

void check_reduce(int P, std::size_t count, const Case& c, int root, bool in_place)
{
    const Reduction& op = c.op;
    const std::size_t S = count * op.elem_size;
    std::vector<std::vector<std::byte>> inputs;
    for (int r = 0; r < P; ++r) inputs.push_back(c.input(r, count));
    const auto expected = fold(op, inputs, count);
    std::vector<std::byte> result;
    std::vector<std::size_t> copied(static_cast<std::size_t>(P)), allocated(static_cast<std::size_t>(P));
    INFO("P=" << P << " count=" << count << " root=" << root << " in_place=" << in_place
              << " commutative=" << op.commutative);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto& mine = inputs[std::size_t(r)];
        CountingMemory mem;
        struct Record {
            CountingMemory& mem;
            std::size_t& copied;
            std::size_t& allocated;
            ~Record()
            {
                copied = mem.copied;
                allocated = mem.allocated;
            }
        } record{mem, copied[std::size_t(r)], allocated[std::size_t(r)]};
        if (r != root) {
            // Non-root ranks pass no recvbuf; their sendbuf must stay intact.
            const auto send = mine;
            binomial_reduce(net, mem, ReduceArgs{send.data(), nullptr, count, op, root});
            LOOM_RANK_CHECK(send == mine);
            return;
        }
        std::vector<std::byte> recv(S + kGuard, kCanary);
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin());
            binomial_reduce(net, mem, ReduceArgs{nullptr, recv.data(), count, op, root});
        } else {
            const auto send = mine;
            binomial_reduce(net, mem, ReduceArgs{send.data(), recv.data(), count, op, root});
            LOOM_RANK_CHECK(send == mine);
        }
        result = std::move(recv);
    });
    REQUIRE(first_difference(prefix(result, S), expected, op.elem_size) == "");
    REQUIRE(guard_intact(result));
    for (int r = 0; r < P; ++r) {
        // Every rank but the root sends its partial result once; a rank waits once per child
        // and once for its parent: at most ceil(lg P) + 1 (the root ceil(lg P)).
        CHECK(stats.messages_sent[std::size_t(r)] == (count == 0 || r == root ? 0u : 1u));
        CHECK(stats.bytes_sent[std::size_t(r)] == (r == root ? 0 : S));
        CHECK(stats.waits[std::size_t(r)] <= std::size_t(ceil_lg(P)) + (r == root ? 0 : 1));
        // Local work: at most one copy of S (the root's result lands in place otherwise;
        // towards root 0 every partner is above, so nothing is copied for P > 1), at most two
        // buffers of scratch (one at the root, whose result buffer is the other).
        CHECK(copied[std::size_t(r)] <= S);
        if (root == 0 && !in_place && P > 1) CHECK(copied[std::size_t(r)] == 0);
        CHECK(allocated[std::size_t(r)] <= (r == root ? S : 2 * S));
    }
}

void check_allreduce(int P, std::size_t count, const Case& c, bool in_place)
{
    const Reduction& op = c.op;
    const std::size_t S = count * op.elem_size;
    std::vector<std::vector<std::byte>> inputs;
    for (int r = 0; r < P; ++r) inputs.push_back(c.input(r, count));
    const auto expected = fold(op, inputs, count);
    std::vector<std::vector<std::byte>> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " count=" << count << " in_place=" << in_place << " commutative=" << op.commutative);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto& mine = inputs[std::size_t(r)];
        std::vector<std::byte> recv(S + kGuard, kCanary);
        HostMemory mem;
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin());
            binomial_allreduce(net, mem, AllreduceArgs{nullptr, recv.data(), count, op});
        } else {
            const auto send = mine;
            binomial_allreduce(net, mem, AllreduceArgs{send.data(), recv.data(), count, op});
            LOOM_RANK_CHECK(send == mine);
        }
        results[std::size_t(r)] = std::move(recv);
    });
    std::size_t bytes = 0;
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(prefix(results[std::size_t(r)], S), expected, op.elem_size) == "");
        REQUIRE(guard_intact(results[std::size_t(r)]));
        bytes += stats.bytes_sent[std::size_t(r)];
    }
    // P - 1 messages of S up the tree, P - 1 down.
    CHECK(bytes == 2 * std::size_t(P - 1) * S);
}

// matmul() inputs are 16 bytes an element: keep the largest counts moderate.
std::vector<std::size_t> matmul_counts(int P)
{
    std::vector<std::size_t> c;
    for (std::size_t n : counts_for(P)) c.push_back(std::min<std::size_t>(n, 4099));
    return c;
}

} // namespace

TEST_CASE("binomial bcast: every P, counts_for(P) bytes, roots 0, P/2, P-1, segmented or not", "[binomial][bcast]")
{
    for (int P : comm_sizes())
        for (std::size_t bytes : counts_for(P))
            for (int root : roots_for(P))
                for (std::size_t segment : segments_for(bytes)) {
                    // Many tiny segments over many ranks is slow on the test transport and
                    // adds nothing over small P.
                    if (P > 16 && segment != 0 && bytes / std::max<std::size_t>(segment, 1) > 16) continue;
                    check_bcast(P, bytes, root, segment);
                }
}

TEST_CASE("binomial reduce: int32 sum, every P, roots 0, P/2, P-1, in place and not", "[binomial][reduce]")
{
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (int root : roots_for(P))
                for (bool in_place : {false, true}) check_reduce(P, count, int32_sum(), root, in_place);
}

TEST_CASE("binomial reduce preserves rank order: matmul, every P and root", "[binomial][reduce]")
{
    for (int P : comm_sizes())
        for (std::size_t count : matmul_counts(P))
            for (int root : roots_for(P))
                for (bool in_place : {false, true}) check_reduce(P, count, matmul_case(), root, in_place);
    // Every root for the small sizes: each gives a differently shaped tree.
    for (int P = 2; P <= 12; ++P)
        for (int root = 0; root < P; ++root) check_reduce(P, 5, matmul_case(), root, root % 2 == 0);
}

TEST_CASE("binomial allreduce: int32 sum and matmul, every P, in place and not", "[binomial][allreduce]")
{
    for (int P : comm_sizes()) {
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true}) check_allreduce(P, count, int32_sum(), in_place);
        for (std::size_t count : matmul_counts(P))
            for (bool in_place : {false, true}) check_allreduce(P, count, matmul_case(), in_place);
    }
}

TEST_CASE("binomial reduce and allreduce: other kernels", "[binomial][reduce][allreduce]")
{
    const Case cases[] = {{kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), &typed_input<double>},
                          {kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), &typed_input<float>},
                          {kernel(LOOM_OP_PROD, LOOM_TYPE_INT64), &typed_input<std::int64_t>},
                          {kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), &typed_input<std::uint8_t>}};
    for (int P : {2, 3, 6, 7, 13})
        for (const Case& c : cases)
            for (std::size_t count : {std::size_t(1), std::size_t(37), std::size_t(1000)}) {
                check_reduce(P, count, c, P / 2, count % 2 == 0);
                check_allreduce(P, count, c, count % 2 == 1);
            }
}
