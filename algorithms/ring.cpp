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
// rank, and then copied. Scratch: one block.
#include "ring.hpp"

namespace loom {

void ring_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    const std::size_t es = args.op.elem_size;
    auto* data = static_cast<std::byte*>(args.recvbuf);

    if (!args.in_place()) mem.copy(data, args.sendbuf, args.count * es);
    if (P == 1 || args.count == 0) return;

    const BlockPartition blocks(args.count, P);
    const int right = mod(r + 1, P);
    const int left = mod(r - 1, P);
    auto bytes_of = [&](int b) { return blocks.length(b) * es; };
    auto block_at = [&](int b) { return data + blocks.begin(b) * es; };

    // Both sides of a step compute the same block lengths, so an empty block is skipped by
    // sender and receiver alike.
    auto exchange = [&](int send_block, void* recv_into, int recv_block) {
        if (bytes_of(recv_block) != 0) net.post_recv(left, recv_into, bytes_of(recv_block));
        if (bytes_of(send_block) != 0) net.post_send(right, block_at(send_block), bytes_of(send_block));
        net.wait_all();
    };

    Scratch incoming = mem.scratch(blocks.max_length() * es);
    for (int step = 0; step < P - 1; ++step) {
        const int send_block = mod(r - step, P);
        const int recv_block = mod(r - step - 1, P);
        exchange(send_block, incoming.get(), recv_block);
        mem.reduce(args.op, incoming.get(), block_at(recv_block), blocks.length(recv_block));
    }
    for (int step = 0; step < P - 1; ++step) {
        const int send_block = mod(r + 1 - step, P);
        const int recv_block = mod(r - step, P);
        exchange(send_block, block_at(recv_block), recv_block);
    }
}

} // namespace loom
