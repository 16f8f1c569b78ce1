// MPI_Scatter's schedules (see scatter.hpp for costs, a worked example and limits).
#include "scatter.hpp"

#include "knomial.hpp"

namespace loom {

void linear_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args)
{
    const int P = net.size(), r = net.rank(), root = args.root;
    if (r != root) { // bytes[rank] only: MPI_Scatterv's other entries are 0 here
        const std::size_t own = args.bytes[std::size_t(r)];
        if (own != 0) net.post_recv(root, args.recvbuf, own);
        net.wait_all();
        return;
    }
    const BlockOffsets offsets(args.bytes);
    const auto* in = static_cast<const std::byte*>(args.sendbuf);
    for (int q = 0; q < P; ++q)
        if (q != root && offsets.length(q) != 0) net.post_send(q, in + offsets.begin(q), offsets.length(q));
    if (!args.root_in_place() && offsets.length(r) != 0)
        mem.copy(args.recvbuf, in + offsets.begin(r), offsets.length(r));
    net.wait_all();
}

namespace {

void knomial_scatter_radix(Transport& net, MemoryOps& mem, const ScatterArgs& args, int k)
{
    const int P = net.size(), r = net.rank(), root = args.root;
    const BlockOffsets offsets(args.bytes);
    const int v = mod(r - root, P);
    const KnomialTree t = knomial_tree(P, v, k);
    auto real = [&](int vrank) { return mod(vrank + root, P); };
    // The virtual ranks [a, b) (b - a <= P) as the real blocks real(a).. up to P, then from 0:
    // each piece's place in sendbuf and length (the second one empty unless the range wraps).
    struct Piece {
        std::size_t begin, length;
    };
    struct Pieces {
        Piece lo, hi;
        std::size_t total() const { return lo.length + hi.length; }
    };
    auto pieces = [&](int a, int b) {
        const int ra = real(a), n = b - a;
        if (ra + n <= P) return Pieces{{offsets.begin(ra), offsets.span_length(ra, ra + n)}, {0, 0}};
        return Pieces{{offsets.begin(ra), offsets.span_length(ra, P)}, {0, offsets.span_length(0, ra + n - P)}};
    };
    const std::size_t own = args.bytes[std::size_t(r)];
    auto* out = static_cast<std::byte*>(args.recvbuf);
    if (t.parent < 0) { // the root: every child's range straight from sendbuf, in one or two pieces
        const auto* in = static_cast<const std::byte*>(args.sendbuf);
        for (const auto& c : t.children) {
            const Pieces p = pieces(c.vrank, c.vrank + c.extent);
            if (p.lo.length != 0) net.post_send(real(c.vrank), in + p.lo.begin, p.lo.length);
            if (p.hi.length != 0) net.post_send(real(c.vrank), in + p.hi.begin, p.hi.length);
        }
        if (!args.root_in_place() && own != 0) mem.copy(out, in + offsets.begin(r), own);
        net.wait_all();
        return;
    }
    const int parent = real(t.parent);
    if (t.children.empty()) { // a leaf: its block straight into recvbuf
        if (own != 0) net.post_recv(parent, out, own);
        net.wait_all();
        return;
    }
    // An inner rank: its subtree's blocks in virtual order (its own first) into scratch, from the
    // root in the pieces it sends, from another parent in one message.
    const Pieces range = pieces(v, v + t.extent);
    const std::size_t total = range.total();
    Scratch scratch = total != 0 ? mem.scratch(total) : no_scratch();
    std::byte* buf = scratch.get();
    if (t.parent == 0) {
        if (range.lo.length != 0) net.post_recv(parent, buf, range.lo.length);
        if (range.hi.length != 0) net.post_recv(parent, buf + range.lo.length, range.hi.length);
    } else if (total != 0) {
        net.post_recv(parent, buf, total);
    }
    net.wait_all();
    for (const auto& c : t.children) {
        const std::size_t at = pieces(v, c.vrank).total(), n = pieces(c.vrank, c.vrank + c.extent).total();
        if (n != 0) net.post_send(real(c.vrank), buf + at, n);
    }
    if (own != 0) mem.copy(out, buf, own);
    net.wait_all();
}

} // namespace

void binomial_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args)
{
    knomial_scatter_radix(net, mem, args, 2);
}

void knomial_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args)
{
    knomial_scatter_radix(net, mem, args, knomial_radix(args.radix));
}

} // namespace loom
