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

namespace loom {

void ring_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    const std::size_t es = args.op.elem_size;
    auto* data = static_cast<std::byte*>(args.recvbuf);
    const auto* input = static_cast<const std::byte*>(args.sendbuf);

    if (P == 1 || args.count == 0) {
        if (!args.in_place()) mem.copy(data, input, args.count * es);
        return;
    }

    const BlockPartition blocks(args.count, P);
    const int right = mod(r + 1, P);
    const int left = mod(r - 1, P);
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
        const std::byte* send_from =
            (step == 0 && !args.in_place() ? input : data) + offset_of(send_block);
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

} // namespace loom
