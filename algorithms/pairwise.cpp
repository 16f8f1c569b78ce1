// Pairwise-exchange alltoall.
//
// Terms: P ranks, blocks of B bytes; block i of rank r's input goes to rank i, block j of
// its output comes from rank j.
//
// Schedule: the own block is copied locally; then P - 1 steps, in step k (1 <= k < P) rank r
// sends block (r + k) mod P to rank (r + k) mod P and receives block (r - k) mod P from rank
// (r - k) mod P, straight into its place. Every step is a shift permutation, so each rank
// sends one message and receives one per step, and no link is shared within a step.
//
// In place (input and output share recvbuf), step k's incoming block would overwrite block
// (r - k), which still has to go out in step P - k. So the steps run in the order
// 1, P - 1, 2, P - 2, ...: step k receives block (r - k) into one block of scratch, step
// P - k sends block (r - k) and receives block (r + k) into its place (sent in step k), and
// then the scratch block is copied into place. For even P, step P/2 pairs with itself.
//
// Worked example, P = 4, at rank 1 (input blocks a0 a1 a2 a3; "x<-y" block x from rank y):
//   step (out of place)     1        2        3
//   sends to rank           2: a2    3: a3    0: a0
//   receives                0<-0     3<-3     2<-2
//   in place, the steps run 1, 3, 2: after steps 1 and 3 the scratch block (from rank 0)
//   is copied into block 0; step 2 receives into scratch and copies into block 3.
//
// Cost: P - 1 steps; each rank sends (P - 1) B bytes in P - 1 messages, the minimum for a
// direct alltoall. Latency linear in P: for large blocks (Bruck's ceil(lg P) steps wins for
// small ones). Limits: none (no arithmetic). Memory: none out of place; in place, one block
// of scratch and about P/2 local block copies.
#include "pairwise.hpp"

namespace loom {

void pairwise_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    const std::size_t B = args.block_bytes;
    auto* out = static_cast<std::byte*>(args.recvbuf);
    const auto* in = static_cast<const std::byte*>(args.sendbuf);
    auto at = [B](auto* base, int block) { return base + std::size_t(block) * B; };

    if (B == 0) return;
    auto exchange = [&](int to, const std::byte* send_from, int from, std::byte* recv_into) {
        net.post_recv(from, recv_into, B);
        net.post_send(to, send_from, B);
        net.wait_all();
    };

    if (!args.in_place()) {
        mem.copy(at(out, r), at(in, r), B);
        for (int k = 1; k < P; ++k) {
            const int to = mod(r + k, P), from = mod(r - k, P);
            exchange(to, at(in, to), from, at(out, from));
        }
        return;
    }

    if (P == 1) return;
    Scratch stash = mem.scratch(B);
    for (int k = 1; 2 * k <= P; ++k) {
        const int hi = mod(r + k, P), lo = mod(r - k, P);
        exchange(hi, at(out, hi), lo, stash.get());                // step k
        if (2 * k < P) exchange(lo, at(out, lo), hi, at(out, hi)); // step P - k
        mem.copy(at(out, lo), stash.get(), B);
    }
}

} // namespace loom
