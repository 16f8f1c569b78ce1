// The ring family on the in-process transport, against sequential references: allreduce
// (plain and pipelined), reduce-scatter and allgather(v), for every communicator size of
// comm_sizes() (beyond P = 33 a sample of the combinations, see Sample), the counts of
// counts_for(P), in place and not, plus a few other types and ops. The wire volume and
// message counts are checked against the costs in ring.cpp; the in-process transport checks
// that no buffer is touched between post and wait (what double buffering must get right).
#include "registry.hpp"
#include "ring.hpp"
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

template <class T>
std::vector<Bytes> typed_inputs(int P, std::size_t count)
{
    std::vector<Bytes> in(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) in[std::size_t(r)] = as_bytes(rank_input<T>(r, count));
    return in;
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The largest communicators dominate the runtime (P threads, P - 1 or more steps each), so
// beyond P = 33 only every `stride`-th combination of count, layout and mode runs; with the
// stride coprime to the combinations per count, every combination still meets several counts.
class Sample {
public:
    Sample(int P, int stride) : all_(P <= 33), stride_(stride) {}
    bool operator()() { return all_ || i_++ % stride_ == 0; }

private:
    bool all_;
    int stride_;
    int i_ = 0;
};

// ---- allreduce ------------------------------------------------------------------------

// Runs `fn` on P ranks and checks every rank's result against fold(). `same_buffer` passes
// sendbuf == recvbuf, the other spelling of in place.
RunStats check_allreduce(AllreduceFn fn, int P, std::size_t count, const Reduction& op,
                         const std::vector<Bytes>& inputs, bool in_place, std::size_t segment_bytes = 0,
                         bool same_buffer = false)
{
    const Bytes expected = fold(op, inputs, count);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " count=" << count << " in_place=" << in_place << " segment_bytes=" << segment_bytes);
    auto stats = run_ranks(P, [&](InprocTransport& inproc) {
        Transport& net = inproc;
        const auto r = std::size_t(net.rank());
        Bytes send = inputs[r];
        Bytes recv(send.size(), std::byte{0xAB}); // garbage: every byte must be written
        HostMemory mem;
        if (in_place) {
            fn(net, mem, AllreduceArgs{same_buffer ? send.data() : nullptr, send.data(), count, op, segment_bytes});
            results[r] = send;
        } else {
            fn(net, mem, AllreduceArgs{send.data(), recv.data(), count, op, segment_bytes});
            results[r] = recv;
        }
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected, op.elem_size) == "");
    }
    // Bandwidth-optimal: each element crosses 2(P - 1) links in all.
    std::size_t total = 0;
    for (int r = 0; r < P; ++r) total += stats.bytes_sent[std::size_t(r)];
    CHECK(total == 2 * std::size_t(P - 1) * count * op.elem_size);
    return stats;
}

void check_ring(int P, std::size_t count, const Reduction& op, const std::vector<Bytes>& inputs, bool in_place)
{
    auto stats = check_allreduce(&ring_allreduce, P, count, op, inputs, in_place);
    std::size_t messages = 0;
    for (int r = 0; r < P; ++r) {
        messages += stats.messages_sent[std::size_t(r)];
        CHECK(stats.messages_sent[std::size_t(r)] <= std::size_t(2 * (P - 1)));
    }
    if (count >= std::size_t(P)) CHECK(messages == std::size_t(2 * P * (P - 1)));
}

// The pipelined ring, with its message and step counts checked against ring.cpp: m segments
// per block, 2(P - 1) m steps; rank r sends the non-empty segments of every block but
// r + 1 (reduce-scatter) and every block but r + 2 (allgather).
void check_pipelined(int P, std::size_t count, const Reduction& op, const std::vector<Bytes>& inputs, bool in_place,
                     std::size_t segment_bytes, bool same_buffer = false)
{
    auto stats = check_allreduce(&ring_pipelined_allreduce, P, count, op, inputs, in_place, segment_bytes, same_buffer);
    if (P == 1 || count == 0) return;
    const BlockPartition blocks(count, P);
    const std::size_t wanted = segment_bytes != 0 ? segment_bytes : std::size_t(256) << 10;
    const std::size_t seg = std::min(std::max<std::size_t>(1, wanted / op.elem_size), blocks.max_length());
    const std::size_t m = ceil_div(blocks.max_length(), seg);
    std::size_t all_segments = 0;
    for (int b = 0; b < P; ++b) all_segments += ceil_div(blocks.length(b), seg);
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " count=" << count << " rank=" << r << " segment_bytes=" << segment_bytes);
        CHECK(stats.waits[std::size_t(r)] == 2 * std::size_t(P - 1) * m);
        CHECK(stats.messages_sent[std::size_t(r)] == 2 * all_segments - ceil_div(blocks.length(mod(r + 1, P)), seg) -
                                                         ceil_div(blocks.length(mod(r + 2, P)), seg));
    }
}

// ---- reduce-scatter ---------------------------------------------------------------------

// Layouts of `total` elements (or bytes) over P ranks, shared by reduce-scatter and
// allgatherv: equal blocks (rounded up), irregular blocks with some empty, all in one block.
std::vector<std::vector<std::size_t>> layouts(std::size_t total, int P)
{
    const auto p = std::size_t(P);
    std::vector<std::size_t> equal(p, ceil_div(total, p));
    std::vector<std::size_t> irregular(p), one(p, 0);
    std::size_t weights = 0;
    for (std::size_t i = 0; i < p; ++i) weights += (i * 5 + 2) % 7; // zero for i = 1, 8, 15...
    std::size_t used = 0;
    for (std::size_t i = 0; i < p; ++i) used += irregular[i] = total * ((i * 5 + 2) % 7) / weights;
    irregular[0] += total - used;
    one[p / 2] = total;
    return {equal, irregular, one};
}

template <class T>
void check_reduce_scatter(int P, const std::vector<std::size_t>& counts, loom_op_t op_id, loom_type_t type,
                          bool in_place)
{
    const Reduction op = kernel(op_id, type);
    const BlockOffsets offsets(counts);
    const std::size_t es = op.elem_size, total = offsets.total();
    const auto inputs = typed_inputs<T>(P, total);
    const Bytes expected = fold(op, inputs, total);

    std::vector<Bytes> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " total=" << total << " in_place=" << in_place);
    auto stats = run_ranks(P, [&](InprocTransport& inproc) {
        Transport& net = inproc;
        const int r = net.rank();
        Bytes send = inputs[std::size_t(r)];
        Bytes recv(counts[std::size_t(r)] * es, std::byte{0xAB});
        HostMemory mem;
        if (in_place) {
            ring_reduce_scatter(net, mem, ReduceScatterArgs{nullptr, send.data(), counts, op});
            rank_check(tail_intact(send, inputs[std::size_t(r)], recv.size()),
                       "in place, the input past the result was changed");
            send.resize(recv.size());
            results[std::size_t(r)] = send;
        } else {
            ring_reduce_scatter(net, mem, ReduceScatterArgs{send.data(), recv.data(), counts, op});
            results[std::size_t(r)] = recv;
        }
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r << " count=" << counts[std::size_t(r)]);
        const auto block = std::span(expected).subspan(offsets.begin(r) * es, offsets.length(r) * es);
        REQUIRE(first_difference(results[std::size_t(r)], block, es) == "");
        // P - 1 steps; rank r sends every non-empty block but its own.
        std::size_t messages = 0;
        for (int b = 0; b < P; ++b) messages += b != r && counts[std::size_t(b)] != 0;
        CHECK(stats.bytes_sent[std::size_t(r)] == (total - counts[std::size_t(r)]) * es);
        CHECK(stats.messages_sent[std::size_t(r)] == messages);
        CHECK(stats.waits[std::size_t(r)] == std::size_t(P - 1));
    }
}

// ---- allgather ----------------------------------------------------------------------------

void check_allgather(int P, const std::vector<std::size_t>& bytes, bool in_place)
{
    const BlockOffsets offsets(bytes);
    Bytes expected;
    for (int r = 0; r < P; ++r) {
        const Bytes mine = pattern(r, bytes[std::size_t(r)]);
        expected.insert(expected.end(), mine.begin(), mine.end());
    }
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    auto stats = run_ranks(P, [&](InprocTransport& inproc) {
        Transport& net = inproc;
        const int r = net.rank();
        const Bytes mine = pattern(r, bytes[std::size_t(r)]);
        Bytes recv(offsets.total(), std::byte{0xAB});
        HostMemory mem;
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin() + std::ptrdiff_t(offsets.begin(r)));
            ring_allgather(net, mem, AllgatherArgs{nullptr, recv.data(), bytes});
        } else {
            ring_allgather(net, mem, AllgatherArgs{mine.data(), recv.data(), bytes});
        }
        results[std::size_t(r)] = recv;
    });
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " total=" << offsets.total() << " rank=" << r << " in_place=" << in_place);
        REQUIRE(first_difference(results[std::size_t(r)], expected) == "");
        // P - 1 steps; rank r forwards every non-empty block but r + 1.
        const int skipped = mod(r + 1, P);
        std::size_t messages = 0;
        for (int b = 0; b < P; ++b) messages += b != skipped && bytes[std::size_t(b)] != 0;
        CHECK(stats.bytes_sent[std::size_t(r)] == (P > 1 ? offsets.total() - bytes[std::size_t(skipped)] : 0));
        CHECK(stats.messages_sent[std::size_t(r)] == (P > 1 ? messages : 0));
    }
}

} // namespace

TEST_CASE("ring allreduce: int32 sum, every P and count, in place and not", "[ring][allreduce]")
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes()) {
        Sample sample(P, 3);
        for (std::size_t count : counts_for(P)) {
            const auto inputs = typed_inputs<std::int32_t>(P, count);
            for (bool in_place : {false, true})
                if (sample()) check_ring(P, count, op, inputs, in_place);
        }
    }
}

TEST_CASE("ring allreduce: other types and ops", "[ring][allreduce]")
{
    for (int P : {2, 3, 5, 8, 13}) {
        for (std::size_t count :
             {std::size_t(0), std::size_t(1), std::size_t(P - 1), std::size_t(31), std::size_t(1000)}) {
            check_ring(P, count, kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), typed_inputs<float>(P, count), false);
            check_ring(P, count, kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_inputs<double>(P, count), true);
            check_ring(P, count, kernel(LOOM_OP_MIN, LOOM_TYPE_DOUBLE), typed_inputs<double>(P, count), false);
            check_ring(P, count, kernel(LOOM_OP_PROD, LOOM_TYPE_INT64), typed_inputs<std::int64_t>(P, count), false);
            check_ring(P, count, kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), typed_inputs<std::uint8_t>(P, count), true);
            check_ring(P, count, kernel(LOOM_OP_LOR, LOOM_TYPE_INT16), typed_inputs<std::int16_t>(P, count), false);
        }
    }
}

TEST_CASE("pipelined ring allreduce: int32 sum, every P and count, in place and not", "[ring][allreduce]")
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes()) {
        Sample sample(P, 3);
        bool odd = false;
        for (std::size_t count : counts_for(P)) {
            const auto inputs = typed_inputs<std::int32_t>(P, count);
            // The default segment (256 KiB: one segment, or a few for the large count at
            // small P), or about three segments per block, the last one often shorter;
            // alternating so that both meet both modes.
            const std::size_t third = std::max<std::size_t>(1, (BlockPartition(count, P).max_length() + 2) / 3);
            for (bool in_place : {false, true})
                if (sample()) check_pipelined(P, count, op, inputs, in_place, in_place != odd ? third * 4 : 0);
            odd = !odd;
        }
    }
}

TEST_CASE("pipelined ring allreduce: 1, 2, many segments and an odd tail", "[ring][allreduce]")
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : {2, 3, 4, 5, 7, 8, 13}) {
        for (std::size_t count :
             {std::size_t(1), std::size_t(P - 1), std::size_t(P), std::size_t(97), std::size_t(1001)}) {
            const auto inputs = typed_inputs<std::int32_t>(P, count);
            const std::size_t L = BlockPartition(count, P).max_length(); // largest block
            const std::size_t segments[] = {
                L * 4,                 // one segment
                (L + 1) / 2 * 4,       // two (one when L = 1)
                4,                     // one element each: L segments
                3 * 4,                 // an odd tail when L mod 3 != 0
                7 * 4 + 3,             // not a whole number of elements: 7
                1,                     // less than an element: 1
                (std::size_t(1) << 40) // far more than the data: one
            };
            for (std::size_t segment_bytes : segments)
                for (bool in_place : {false, true}) check_pipelined(P, count, op, inputs, in_place, segment_bytes);
        }
        // sendbuf == recvbuf is in place too.
        check_pipelined(P, 1000, op, typed_inputs<std::int32_t>(P, 1000), true, 40, true);
    }
}

TEST_CASE("pipelined ring allreduce: other types and ops", "[ring][allreduce]")
{
    for (int P : {2, 3, 5, 8, 13}) {
        for (std::size_t count :
             {std::size_t(0), std::size_t(1), std::size_t(P - 1), std::size_t(31), std::size_t(1000)}) {
            for (std::size_t segment_bytes : {std::size_t(0), std::size_t(40)}) {
                check_pipelined(P, count, kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), typed_inputs<float>(P, count), false,
                                segment_bytes);
                check_pipelined(P, count, kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_inputs<double>(P, count), true,
                                segment_bytes);
                check_pipelined(P, count, kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), typed_inputs<std::uint8_t>(P, count),
                                true, segment_bytes);
                check_pipelined(P, count, kernel(LOOM_OP_PROD, LOOM_TYPE_INT64), typed_inputs<std::int64_t>(P, count),
                                false, segment_bytes);
            }
        }
    }
}

TEST_CASE("ring reduce-scatter: int32 sum, every P, equal and irregular blocks, in place and not",
          "[ring][reduce_scatter]")
{
    for (int P : comm_sizes()) {
        Sample sample(P, 5);
        for (std::size_t total : counts_for(P))
            for (const auto& counts : layouts(total, P))
                for (bool in_place : {false, true})
                    if (sample()) check_reduce_scatter<std::int32_t>(P, counts, LOOM_OP_SUM, LOOM_TYPE_INT32, in_place);
    }
}

TEST_CASE("ring reduce-scatter: other types and ops", "[ring][reduce_scatter]")
{
    for (int P : {2, 3, 5, 8, 13}) {
        for (std::size_t total : {std::size_t(0), std::size_t(P - 1), std::size_t(31), std::size_t(1000)}) {
            for (const auto& counts : layouts(total, P)) {
                check_reduce_scatter<float>(P, counts, LOOM_OP_SUM, LOOM_TYPE_FLOAT, false);
                check_reduce_scatter<double>(P, counts, LOOM_OP_MAX, LOOM_TYPE_DOUBLE, true);
                check_reduce_scatter<std::uint8_t>(P, counts, LOOM_OP_BXOR, LOOM_TYPE_UINT8, false);
                check_reduce_scatter<std::int64_t>(P, counts, LOOM_OP_PROD, LOOM_TYPE_INT64, true);
            }
        }
    }
}

TEST_CASE("ring allgather(v): every P, equal, irregular and empty blocks, in place and not", "[ring][allgather]")
{
    for (int P : comm_sizes()) {
        Sample sample(P, 5);
        for (std::size_t total : counts_for(P))
            for (const auto& bytes : layouts(total, P))
                for (bool in_place : {false, true})
                    if (sample()) check_allgather(P, bytes, in_place);
    }
}

TEST_CASE("the ring algorithms decline non-commutative ops where they reorder", "[ring][registry]")
{
    for (auto [c, name] :
         {std::pair{Collective::allreduce, "ring"}, std::pair{Collective::allreduce, "ring_pipelined"},
          std::pair{Collective::reduce_scatter, "ring"}, std::pair{Collective::reduce_scatter_block, "ring"}}) {
        const Algorithm* ring = find_algorithm(c, name);
        REQUIRE(ring != nullptr);
        CHECK(why_not(*ring, CallShape{4, 100, false}).has_value());
        CHECK_FALSE(why_not(*ring, CallShape{4, 100, true}).has_value());
        CHECK_FALSE(why_not(*ring, CallShape{7, 0, true}).has_value());
    }
    for (Collective c : {Collective::allgather, Collective::allgatherv}) {
        const Algorithm* ring = find_algorithm(c, "ring");
        REQUIRE(ring != nullptr);
        CHECK_FALSE(why_not(*ring, CallShape{5, 100, false}).has_value());
    }
}
