// The ring family: allreduce (plain, and pipelined below), reduce-scatter and allgather(v).
// Every rank sends only to rank + 1 and receives only from rank - 1. This header describes
// the plain ring allreduce; each of the others has its own schedule, example and cost below.
//
// Ring allreduce.
//
// Terms: P ranks, S bytes of data per rank, the data split into P blocks (BlockPartition:
// as even as possible, the first count % P blocks one element longer, some empty when
// count < P). Each rank sends only to its right neighbour (rank + 1) and receives only from
// its left neighbour (rank - 1), so every link of a ring carries the same load.
//
// Phase 1, reduce-scatter, P - 1 steps. In step s rank r sends block (r - s) mod P (its
// partial sum so far) and receives block (r - s - 1) mod P, which it reduces into its own
// copy. After the last step rank r holds the fully reduced block (r + 1) mod P.
// Phase 2, allgather, P - 1 steps. In step s rank r forwards block (r + 1 - s) mod P and
// receives block (r - s) mod P straight into the result buffer.
//
// Worked example, P = 3, blocks A B C; "x:y" means block x summed over ranks y:
//   step            rank 0 sends   rank 1 sends   rank 2 sends
//   reduce-scatter 0   A:0            B:1            C:2
//   reduce-scatter 1   C:2,0          A:0,1          B:1,2
//   allgather 0        B:all          C:all          A:all
//   allgather 1        A:all          B:all          C:all
//
// Cost: 2(P - 1) steps, each rank sends and receives 2(P - 1)/P x S bytes and reduces
// (P - 1)/P x S bytes: bandwidth-optimal, latency linear in P. Best for large messages.
// Limits: the op must be commutative (each block is reduced in a different rank order);
// every rank gets bit-identical results because each block is reduced exactly once, on one
// rank, and then copied. Memory: out of place, none beyond the result buffer (partial sums
// are received in place and the input is never copied); in place, one block of scratch.
#include "ring.hpp"

#include "topology.hpp"

#include <algorithm>
#include <cstddef>

namespace loom {

// Topology-aware order. Where the transport knows the layout (topology/topology.hpp), the
// ring runs in its ring order: every node's ranks consecutively, so the ring crosses between
// nodes once per node instead of up to once per rank (round-robin placement puts every pair
// of rank neighbours on different nodes). The schedules below are written in ring
// positions: "rank r" in their comments is position p, its neighbours are the ranks at
// positions p - 1 and p + 1, and a block owned by a rank (reduce-scatter, allgather) is the
// block of the rank at that position. Without a layout, or for the default by-slot
// placement, position and rank coincide.
namespace {
class RingOrder {
public:
    explicit RingOrder(const Transport& net) : P_(net.size())
    {
        const topo::Layout* layout = net.layout();
        if (layout != nullptr && layout->ranks() == P_ && !layout->ring_is_identity()) order_ = layout->ring();
        position_ = order_.empty() ? net.rank() : layout->ring_position(net.rank());
    }
    int position() const { return position_; }
    // The rank at ring position p (any integer, taken mod P).
    int rank_at(int p) const
    {
        const int q = mod(p, P_);
        return order_.empty() ? q : order_[std::size_t(q)];
    }
    int left() const { return rank_at(position_ - 1); }
    int right() const { return rank_at(position_ + 1); }

private:
    int P_;
    std::span<const int> order_;
    int position_;
};
} // namespace

void ring_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size();
    const std::size_t es = args.op.elem_size;
    auto* data = static_cast<std::byte*>(args.recvbuf);
    const auto* input = static_cast<const std::byte*>(args.sendbuf);

    if (P == 1 || args.count == 0) {
        if (!args.in_place()) mem.copy(data, input, args.count * es);
        return;
    }

    const BlockPartition blocks(args.count, P);
    // Blocks are indexed by ring position: any assignment of blocks to ranks gives the sum.
    const RingOrder ring(net);
    const int right = ring.right();
    const int left = ring.left();
    const int r = ring.position();
    auto bytes_of = [&](int b) { return blocks.length(b) * es; };
    auto offset_of = [&](int b) { return blocks.begin(b) * es; };

    // Both sides of a step compute the same block lengths, so an empty block is skipped by
    // sender and receiver alike.
    auto exchange = [&](const std::byte* send_from, int send_block, std::byte* recv_into, int recv_block) {
        if (bytes_of(recv_block) != 0) net.post_recv(left, recv_into, bytes_of(recv_block));
        if (bytes_of(send_block) != 0) net.post_send(right, send_from, bytes_of(send_block));
        net.wait_all();
    };

    // Reduce-scatter. Out of place, a partial sum is received straight into the result
    // buffer and the local input is reduced into it: no scratch and no copy of the input.
    // In place, the result buffer holds the input, so partial sums arrive in one block of
    // scratch and are reduced into the buffer.
    Scratch incoming(nullptr, nullptr);
    if (args.in_place()) incoming = mem.scratch(blocks.max_length() * es);
    for (int step = 0; step < P - 1; ++step) {
        const int send_block = mod(r - step, P);
        const int recv_block = mod(r - step - 1, P);
        // Our own block enters the ring as raw input; later blocks are partial sums.
        const std::byte* send_from = (step == 0 && !args.in_place() ? input : data) + offset_of(send_block);
        std::byte* target = data + offset_of(recv_block);
        if (args.in_place()) {
            exchange(send_from, send_block, incoming.get(), recv_block);
            mem.reduce(args.op, incoming.get(), target, blocks.length(recv_block));
        } else {
            exchange(send_from, send_block, target, recv_block);
            mem.reduce(args.op, input + offset_of(recv_block), target, blocks.length(recv_block));
        }
    }
    // Allgather: every block except our own ((r + 1) mod P) arrives in its final place.
    for (int step = 0; step < P - 1; ++step) {
        const int send_block = mod(r + 1 - step, P);
        const int recv_block = mod(r - step, P);
        exchange(data + offset_of(send_block), send_block, data + offset_of(recv_block), recv_block);
    }
}

// ---------------------------------------------------------------------------------------
// Pipelined (chunked) ring allreduce, after gloo's allreduce_ring_chunked.
//
// The same two phases and blocks as ring_allreduce, but every block is cut into m segments
// of `seg` elements (args.segment_bytes rounded down to whole elements, at least one; 0
// means 256 KiB), m = ceil(largest block / seg); a block shorter than m x seg has a short
// or empty tail, and empty segments are skipped by sender and receiver alike. Each step of
// the plain ring becomes m units, one segment each, 2(P - 1) m units in all. Unit u of
// reduce-scatter step s moves segment j of the blocks the plain ring moves in step s.
//
// Double buffering: in unit u a rank posts the receive of segment u, posts the send of
// segment u, and only then reduces segment u - 1 (received in the previous unit), so the
// reduction runs while segment u is on the wire. This is safe because a send in unit u
// depends on the reduction of unit u - m (same segment, previous step), finished one unit
// earlier when m >= 2; with m = 1 the reduction of u - 1 is what u sends, so it runs
// before the send is posted (no overlap: the plain ring). Unit u's receive goes to a
// different buffer (or, out of place, a different segment) than the one being reduced.
//
// Worked example, P = 3, m = 2, blocks A B C of segments A0 A1...; at rank 0 ("'" a
// partial sum of two ranks, "*" fully reduced):
//   unit  phase, step       sends  receives  reduces meanwhile
//   0     reduce-scatter 0  A0     C0        -
//   1     reduce-scatter 0  A1     C1        C0
//   2     reduce-scatter 1  C0'    B0        C1
//   3     reduce-scatter 1  C1'    B1        B0
//   4     allgather 0       B0*    A0*       B1
//   5     allgather 0       B1*    A1*       -
//   6     allgather 1       A0*    C0*       -
//   7     allgather 1       A1*    C1*       -
//
// Cost: 2(P - 1) m steps (messages of at most one segment), each rank sends and receives
// 2(P - 1)/P x S bytes and reduces (P - 1)/P x S bytes, as the plain ring. A step costs
// max(transfer, reduction) instead of their sum, for m times as many per-message latencies:
// worth it for large S, where the reduction is a sizable fraction of the transfer time.
// Limits: commutative op (as the plain ring); results are bit-identical on all ranks.
// Memory: in place, two segments of scratch; out of place, none (received segments land in
// the result buffer and the input is reduced into them).
void ring_pipelined_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size();
    const std::size_t es = args.op.elem_size;
    auto* data = static_cast<std::byte*>(args.recvbuf);
    const auto* input = static_cast<const std::byte*>(args.sendbuf);

    if (P == 1 || args.count == 0) {
        if (!args.in_place()) mem.copy(data, input, args.count * es);
        return;
    }

    const BlockPartition blocks(args.count, P);
    const std::size_t seg_bytes = args.segment_bytes != 0 ? args.segment_bytes : kDefaultSegmentBytes;
    const std::size_t seg = std::min(std::max<std::size_t>(1, seg_bytes / es), blocks.max_length());
    const std::size_t m = (blocks.max_length() + seg - 1) / seg; // segments per block
    const std::size_t phase_units = std::size_t(P - 1) * m;
    const RingOrder ring(net);
    const int right = ring.right();
    const int left = ring.left();
    const int r = ring.position();

    // What unit u moves: the blocks of its step, segment u mod m of them.
    struct Unit {
        bool reduce;         // reduce-scatter (received data is reduced) or allgather
        bool first_step;     // reduce-scatter step 0: our own input goes out
        std::size_t send_at; // element offsets and lengths
        std::size_t send_len;
        std::size_t recv_at;
        std::size_t recv_len;
    };
    auto unit = [&](std::size_t u) {
        const bool rs = u < phase_units;
        const std::size_t v = rs ? u : u - phase_units;
        const int step = int(v / m);
        const std::size_t first = (v % m) * seg;
        const int send_block = rs ? mod(r - step, P) : mod(r + 1 - step, P);
        const int recv_block = rs ? mod(r - step - 1, P) : mod(r - step, P);
        auto len = [&](int b) { return first < blocks.length(b) ? std::min(seg, blocks.length(b) - first) : 0; };
        return Unit{rs,
                    rs && step == 0,
                    blocks.begin(send_block) + first,
                    len(send_block),
                    blocks.begin(recv_block) + first,
                    len(recv_block)};
    };

    // In place the result buffer holds the input, so partial sums arrive in two alternating
    // segments of scratch; out of place they arrive in the result buffer.
    Scratch incoming(nullptr, nullptr);
    if (args.in_place()) incoming = mem.scratch(2 * seg * es);
    auto landing = [&](std::size_t u, const Unit& x) {
        if (x.reduce && args.in_place()) return incoming.get() + (u % 2) * seg * es;
        return data + x.recv_at * es;
    };
    auto reduce_unit = [&](std::size_t u) {
        const Unit x = unit(u);
        if (!x.reduce || x.recv_len == 0) return;
        if (args.in_place())
            mem.reduce(args.op, landing(u, x), data + x.recv_at * es, x.recv_len);
        else
            mem.reduce(args.op, input + x.recv_at * es, data + x.recv_at * es, x.recv_len);
    };

    const std::size_t units = 2 * phase_units;
    for (std::size_t u = 0; u < units; ++u) {
        const Unit x = unit(u);
        if (x.recv_len != 0) net.post_recv(left, landing(u, x), x.recv_len * es);
        if (m == 1 && u != 0) reduce_unit(u - 1); // what we send next is what we reduce now
        if (x.send_len != 0) {
            const std::byte* from = (x.first_step && !args.in_place() ? input : data) + x.send_at * es;
            net.post_send(right, from, x.send_len * es);
        }
        if (m > 1 && u != 0) reduce_unit(u - 1); // overlaps the transfer of unit u
        net.wait_all();
    }
}

// Data moves between ring neighbours in one step: receive from the left, send to the
// right. Both sides compute the same lengths, so empty blocks are skipped by both.
namespace {
void ring_step(Transport& net, const RingOrder& ring, const std::byte* send_from, std::size_t send_bytes,
               std::byte* recv_into, std::size_t recv_bytes)
{
    if (recv_bytes != 0) net.post_recv(ring.left(), recv_into, recv_bytes);
    if (send_bytes != 0) net.post_send(ring.right(), send_from, send_bytes);
    net.wait_all();
}
} // namespace

// ---------------------------------------------------------------------------------------
// Ring reduce-scatter (MPI_Reduce_scatter and _block): block i holds counts[i] elements.
//
// The reduce-scatter phase of the ring allreduce, shifted by one block so that rank r ends
// with block r rather than r + 1: in step s (0 <= s < P - 1) rank r sends block
// (r - s - 1) mod P (its input at step 0, a partial sum after) and receives block
// (r - s - 2) mod P, into which it reduces its own input. The last block received is r.
//
// Worked example, P = 3, blocks A B C; "x:y" block x summed over ranks y:
//   step   rank 0 sends   rank 1 sends   rank 2 sends
//   0      C:0            A:1            B:2
//   1      B:2,0          C:0,1          A:1,2
//   result A:1,2,0        B:2,0,1        C:0,1,2
//
// Cost: P - 1 steps; rank r sends every block but its own, (sum(counts) - counts[r])
// elements, (P - 1)/P x S on average, and reduces as many. Limits: commutative op (block i
// is reduced in the rank order i+1, i+2, ..., i). Memory: two blocks (the largest) of
// scratch: recvbuf only has room for the result, so partial sums alternate between two
// blocks, one sent while the next arrives in the other (one block at P = 2 in place, none out
// of place). In place the input stays untouched: MPI defines only the first counts[r]
// elements of recvbuf as output, so the rest must keep the input, and the result is written
// there once, after the last step.
void ring_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    const int P = net.size();
    const std::size_t es = args.op.elem_size;
    const BlockOffsets blocks(args.counts);
    const RingOrder ring(net);
    const int p = ring.position();
    const int r = net.rank();
    auto* out = static_cast<std::byte*>(args.recvbuf);
    const auto* input = args.in_place() ? out : static_cast<const std::byte*>(args.sendbuf);

    if (P == 1) {
        if (!args.in_place()) mem.copy(out, input, blocks.length(0) * es);
        return;
    }

    std::size_t largest = 0;
    for (int b = 0; b < P; ++b) largest = std::max(largest, blocks.length(b));
    const std::size_t slots = P > 2 ? 2 : args.in_place() ? 1 : 0;
    Scratch scratch(nullptr, nullptr);
    if (slots != 0 && largest != 0) scratch = mem.scratch(slots * largest * es);
    auto slot = [&](int s) { return scratch.get() + std::size_t(s % 2) * largest * es; };

    for (int step = 0; step < P - 1; ++step) {
        const int send_block = ring.rank_at(p - step - 1);
        const int recv_block = ring.rank_at(p - step - 2);
        const bool last = step == P - 2;
        const std::size_t n = blocks.length(recv_block);
        const std::byte* from = step == 0 ? input + blocks.begin(send_block) * es : slot(step - 1);
        // Out of place the last partial sum arrives in the result itself.
        std::byte* into = last && !args.in_place() ? out : slot(step);
        ring_step(net, ring, from, blocks.length(send_block) * es, into, n * es);
        if (n != 0) mem.reduce(args.op, input + blocks.begin(recv_block) * es, into, n);
    }
    // The last block received is our own (recv_block of step P - 2 is r).
    if (args.in_place() && blocks.length(r) != 0) mem.copy(out, slot(P - 2), blocks.length(r) * es);
}

// ---------------------------------------------------------------------------------------
// Ring allgather (MPI_Allgather and v): rank i contributes bytes[i] bytes (may be 0).
//
// The allgather phase of the ring allreduce: in step s (0 <= s < P - 1) rank r forwards
// block (r - s) mod P and receives block (r - s - 1) mod P straight into its final place.
//
// Worked example, P = 3, blocks A B C of ranks 0 1 2:
//   step   rank 0 sends   rank 1 sends   rank 2 sends
//   0      A              B              C
//   1      C              A              B
//
// Cost: P - 1 steps; rank r sends every block but block r + 1, (P - 1)/P x S bytes when the
// blocks are equal. Bandwidth-optimal, latency linear in P: for large S or few ranks.
// Limits: none (no arithmetic); zero-sized blocks are skipped. Memory: none; out of place,
// one local copy of the own block.
void ring_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    const BlockOffsets blocks(args.bytes);
    const RingOrder ring(net);
    const int p = ring.position();
    auto* out = static_cast<std::byte*>(args.recvbuf);
    if (!args.in_place()) mem.copy(out + blocks.begin(r), args.sendbuf, blocks.length(r));
    for (int step = 0; step < P - 1; ++step) {
        const int send_block = ring.rank_at(p - step);
        const int recv_block = ring.rank_at(p - step - 1);
        ring_step(net, ring, out + blocks.begin(send_block), blocks.length(send_block), out + blocks.begin(recv_block),
                  blocks.length(recv_block));
    }
}

} // namespace loom
