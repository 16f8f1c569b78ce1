// van de Geijn's broadcast: a binomial scatter of P blocks from the root, then a ring
// allgather of the blocks.
//
// Terms: P ranks, S bytes, split into P blocks (BlockPartition over bytes: the first S mod P
// blocks one byte longer, some empty when S < P). Ranks are renumbered relative to the
// root, v = (r - root) mod P, and virtual rank v owns block v. Renumbering by a rotation
// keeps ring neighbours neighbours (v + 1 is r + 1), so the allgather is the plain ring
// allgather run on the virtual ranks (RootRelative below), and every subtree of the
// binomial tree owns a contiguous byte range of the buffer: one message per tree edge.
//
// Phase 1, binomial scatter, ceil(lg P) rounds. The lowest set bit b of v (for the root,
// the smallest power of two >= P) bounds v's subtree: virtual ranks [v, v + b). Rank v
// receives the blocks of its subtree from v - b, then sends to each child v + c,
// c = b/2, ..., 2, 1 (largest subtree first, children beyond P - 1 omitted), the blocks
// [v + c, v + 2c) of the child's subtree.
// Phase 2, ring allgather, P - 1 steps (ring.cpp): rank v forwards block (v - s) mod P.
//
// Worked example, P = 5, root 2 (virtual ranks 0 1 2 3 4 are ranks 2 3 4 0 1), blocks
// A B C D E:
//   scatter   v0 -> v4: E,  v0 -> v2: C D,  v0 -> v1: B;  then v2 -> v3: D
//   allgather step s: v0..v4 send A B C D E (s = 0), E A B C D (s = 1), ... (s = 3)
//
// Cost: ceil(lg P) + P - 1 steps. The root sends S - |A| bytes in the scatter and
// S - |B| in the allgather, so about 2 S (2(P - 1)/P x S) against S lg P for a binomial
// tree broadcast; any other rank sends about S (P - 1)/P plus its subtree's share of the
// scatter. For large S; latency linear in P. Limits: none (no arithmetic); any root, any
// S (S = 0 returns at once). Memory: none (all data moves within the buffer).
#include "scatter_allgather.hpp"

#include "ring.hpp"

#include <algorithm>
#include <vector>

namespace loom {

namespace {

// The same transport, with ranks renumbered so that `root` is rank 0.
class RootRelative final : public Transport {
public:
    RootRelative(Transport& net, int root) : net_(net), root_(root) {}
    int rank() const override { return mod(net_.rank() - root_, net_.size()); }
    int size() const override { return net_.size(); }
    void post_send(int peer, const void* buf, std::size_t bytes) override { net_.post_send(real(peer), buf, bytes); }
    void post_recv(int peer, void* buf, std::size_t bytes) override { net_.post_recv(real(peer), buf, bytes); }
    void wait_all() override { net_.wait_all(); }

private:
    int real(int virtual_rank) const { return (virtual_rank + root_) % net_.size(); }
    Transport& net_;
    int root_;
};

} // namespace

void scatter_allgather_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args)
{
    const int P = net.size();
    if (P == 1 || args.bytes == 0) return;

    RootRelative vnet(net, args.root);
    const int v = vnet.rank();
    auto* buf = static_cast<std::byte*>(args.buf);
    const BlockPartition blocks(args.bytes, P);
    // Blocks [first, last) as a byte range of the buffer; begin(P) is the total.
    auto range_begin = [&](int first) { return blocks.begin(std::min(first, P)); };
    auto range_bytes = [&](int first, int last) { return range_begin(last) - range_begin(first); };

    int extent = 1; // v's subtree is [v, v + extent)
    if (v == 0) {
        while (extent < P) extent *= 2;
    } else {
        extent = v & -v;
        if (const std::size_t n = range_bytes(v, v + extent); n != 0) {
            vnet.post_recv(v - extent, buf + range_begin(v), n);
            vnet.wait_all();
        }
    }
    for (int c = extent / 2; c >= 1; c /= 2) {
        if (v + c >= P) continue;
        if (const std::size_t n = range_bytes(v + c, v + 2 * c); n != 0)
            vnet.post_send(v + c, buf + range_begin(v + c), n);
    }
    vnet.wait_all();

    // Virtual rank i owns block i, and the blocks lie in virtual-rank order in the buffer:
    // exactly an in-place allgatherv on the renumbered ranks.
    PerRank<std::size_t> lengths(static_cast<std::size_t>(P));
    for (int i = 0; i < P; ++i) lengths[std::size_t(i)] = blocks.length(i);
    ring_allgather(vnet, mem, AllgatherArgs{nullptr, buf, lengths});
}

} // namespace loom
