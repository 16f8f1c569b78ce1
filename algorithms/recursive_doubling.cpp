// Recursive doubling: allreduce (order-preserving), allgather(v), barrier.
//
// Terms: P ranks, p2 = 2^floor(lg P), r = P - p2 "extra" ranks, S bytes per rank (allreduce:
// the vector; allgather: the whole result).
//
// Non-power-of-two P, by folding (for all three): for i < r the pair (2i, 2i + 1) combines
// first, 2i sending to 2i + 1 (the "keeper"); 2i then sits out and gets the result from its
// keeper at the end. The p2 remaining ranks are numbered by newrank nr: newrank i < r is
// rank 2i + 1 (covering ranks 2i, 2i + 1), newrank i >= r is rank i + r. Newranks are in rank
// order, so any aligned range of newranks covers a contiguous range of ranks - which is what
// keeps the allreduce order-preserving and the allgather's ranges contiguous. The fold was
// chosen over other schemes (MPICH's allgather patch-up, Bruck) for one simple schedule
// shared by the three collectives, at the price of two extra steps on the r pairs.
//
// Schedule: at distance d = 1, 2, ..., p2/2 newrank nr exchanges with newrank nr XOR d. Before
// the exchange nr represents the aligned block of d newranks containing it; after, the
// aligned block of 2d.
//   * allreduce: the whole vector is exchanged; both sides compute (lower block's partial)
//     op (upper block's partial), the lower one always the left operand (`in`). Partials
//     thus always cover contiguous rank ranges in order, and the two sides compute the same
//     operation on the same operands, so every rank ends with the bit-identical
//     x_0 op x_1 op ... op x_{P-1}. The fold computes x_2i op x_2i+1 on rank 2i + 1.
//   * allgather: the blocks of the aligned range are exchanged, straight into their final
//     place in the result buffer; the fold sends block 2i to 2i + 1, and at the end the
//     keeper sends 2i everything but its own block (two messages, before and after it).
//   * barrier: the same exchanges with zero-byte messages.
//
// Worked example, allreduce, P = 6 (p2 = 4, r = 2); "a..b" is x_a op ... op x_b:
//   step    rank 0     rank 1 (nr 0)  rank 2     rank 3 (nr 1)  rank 4 (nr 2)  rank 5 (nr 3)
//   fold    sends 0    holds 0..1     sends 2    holds 2..3     holds 4        holds 5
//   d = 1   -          w/ 3: 0..3     -          w/ 1: 0..3     w/ 5: 4..5     w/ 4: 4..5
//   d = 2   -          w/ 4: 0..5     -          w/ 5: 0..5     w/ 1: 0..5     w/ 3: 0..5
//   unfold  gets 0..5  sends 0..5     gets 0..5  sends 0..5     -              -
// (at d = 1 rank 1 computes (0..1) op (2..3) and so does rank 3: the same bits.)
//
// Cost (participants; the fold adds one step at each end and S bytes for the r pairs):
//   allreduce  lg p2 steps (+2), sends and reduces S lg p2: latency-optimal, bandwidth not;
//              best for small vectors and for non-commutative ops.
//   allgather  lg p2 steps (+2), each rank receives what it lacks: (P-1)/P S for equal blocks;
//              a keeper also sends S to its extra rank.
//   barrier    lg p2 steps (+2), zero-byte messages.
// Limits: allreduce needs only an associative op. Memory: allreduce S of scratch on the
// participants; allgather and barrier none.
#include "recursive_doubling.hpp"

namespace loom {

namespace {

struct Fold {
    int p2 = 1; // 2^floor(lg P)
    int r = 0;  // P - p2 extra ranks

    explicit Fold(int P)
    {
        while (p2 * 2 <= P) p2 *= 2;
        r = P - p2;
    }
    int real(int nr) const { return nr < r ? 2 * nr + 1 : nr + r; }
    // -1 for a rank that sits out (the even rank of a pair).
    int newrank(int rank) const { return rank >= 2 * r ? rank - r : (rank % 2 == 1 ? rank / 2 : -1); }
    // The first rank (block) newrank j covers; first_block(p2) = P.
    int first_block(int j) const { return j < r ? 2 * j : j + r; }
};

} // namespace

void recursive_doubling_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size();
    const int rank = net.rank();
    const std::size_t count = args.count;
    const std::size_t bytes = count * args.op.elem_size;
    auto* R = static_cast<std::byte*>(args.recvbuf);
    const auto* input = args.in_place() ? R : static_cast<const std::byte*>(args.sendbuf);

    if (P == 1 || count == 0) {
        if (!args.in_place()) mem.copy(R, input, bytes);
        return;
    }

    const Fold f(P);
    const int nr = f.newrank(rank);
    if (nr < 0) { // give x_rank to the keeper, get the result back
        net.post_send(rank + 1, input, bytes);
        net.wait_all();
        net.post_recv(rank + 1, R, bytes);
        net.wait_all();
        return;
    }

    // The partial result lives in R or in scratch T; `cur` is the writable one holding it, or
    // nullptr while it is still the (read-only, out of place) input.
    Scratch T(nullptr, nullptr);
    std::byte* cur = args.in_place() ? R : nullptr;
    auto mine = [&]() -> const std::byte* { return cur != nullptr ? cur : input; };
    auto other = [&]() -> std::byte* {
        if (cur != R) return R;
        if (!T) T = mem.scratch(bytes);
        return T.get();
    };
    // One exchange with `peer`: its partial arrives in the buffer we do not hold ours in.
    // If the peer's ranks are lower, its partial is the left operand and ours is updated in
    // place; otherwise ours is the left operand and the received buffer becomes ours.
    auto combine = [&](int peer, bool peer_is_lower, bool send) {
        if (peer_is_lower && cur == nullptr) { // ours must be writable: copy the input once
            mem.copy(R, input, bytes);
            cur = R;
        }
        std::byte* theirs = other();
        net.post_recv(peer, theirs, bytes);
        if (send) net.post_send(peer, mine(), bytes);
        net.wait_all();
        if (peer_is_lower) {
            mem.reduce(args.op, theirs, cur, count); // cur = theirs op cur
        } else {
            mem.reduce(args.op, mine(), theirs, count); // theirs = mine op theirs
            cur = theirs;
        }
    };

    if (nr < f.r) combine(rank - 1, true, false); // the fold: x_2i op x_2i+1
    for (int d = 1; d < f.p2; d *= 2) {
        const int peer_nr = nr ^ d;
        combine(f.real(peer_nr), peer_nr < nr, true);
    }
    if (nr < f.r) { // the unfold
        net.post_send(rank - 1, cur, bytes);
        net.wait_all();
    }
    if (cur != R) mem.copy(R, cur, bytes);
}

void recursive_doubling_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const int P = net.size();
    const int rank = net.rank();
    auto* out = static_cast<std::byte*>(args.recvbuf);
    const BlockOffsets blocks(args.bytes);

    if (!args.in_place()) mem.copy(out + blocks.begin(rank), args.sendbuf, blocks.length(rank));
    if (P == 1 || blocks.total() == 0) return;

    // Sends or receives blocks [first, last) to or from `peer`, skipping empty ranges on both
    // sides alike.
    auto send_blocks = [&](int peer, int first, int last) {
        if (blocks.span_length(first, last) != 0)
            net.post_send(peer, out + blocks.begin(first), blocks.span_length(first, last));
    };
    auto recv_blocks = [&](int peer, int first, int last) {
        if (blocks.span_length(first, last) != 0)
            net.post_recv(peer, out + blocks.begin(first), blocks.span_length(first, last));
    };

    const Fold f(P);
    const int nr = f.newrank(rank);
    if (nr < 0) { // give our block to the keeper, get all the others back
        send_blocks(rank + 1, rank, rank + 1);
        net.wait_all();
        recv_blocks(rank + 1, 0, rank);
        recv_blocks(rank + 1, rank + 1, P);
        net.wait_all();
        return;
    }
    if (nr < f.r) {
        recv_blocks(rank - 1, rank - 1, rank);
        net.wait_all();
    }
    for (int d = 1; d < f.p2; d *= 2) {
        const int mine = nr & ~(d - 1);
        const int theirs = (nr ^ d) & ~(d - 1);
        const int peer = f.real(nr ^ d);
        recv_blocks(peer, f.first_block(theirs), f.first_block(theirs + d));
        send_blocks(peer, f.first_block(mine), f.first_block(mine + d));
        net.wait_all();
    }
    if (nr < f.r) {
        send_blocks(rank - 1, 0, rank - 1);
        send_blocks(rank - 1, rank, P);
        net.wait_all();
    }
}

void recursive_doubling_barrier(Transport& net, MemoryOps&, const BarrierArgs&)
{
    const int P = net.size();
    const int rank = net.rank();
    if (P == 1) return;

    std::byte in{}, out{}; // zero-byte messages still need valid addresses
    const Fold f(P);
    const int nr = f.newrank(rank);
    if (nr < 0) { // "entered" to the keeper, then wait for "everyone entered"
        net.post_send(rank + 1, &out, 0);
        net.wait_all();
        net.post_recv(rank + 1, &in, 0);
        net.wait_all();
        return;
    }
    if (nr < f.r) {
        net.post_recv(rank - 1, &in, 0);
        net.wait_all();
    }
    for (int d = 1; d < f.p2; d *= 2) {
        const int peer = f.real(nr ^ d);
        net.post_recv(peer, &in, 0);
        net.post_send(peer, &out, 0);
        net.wait_all();
    }
    if (nr < f.r) {
        net.post_send(rank - 1, &out, 0);
        net.wait_all();
    }
}

} // namespace loom
