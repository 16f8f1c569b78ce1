// MPI_Gather's schedules (see gather.hpp for costs, a worked example and limits).
#include "gather.hpp"

#include "knomial.hpp"

namespace loom {

namespace {

// This rank's own block: its sendbuf, or in place its place in recvbuf.
const std::byte* own_block(const AllgatherArgs& args, const BlockOffsets& offsets, int rank)
{
    if (!args.in_place()) return static_cast<const std::byte*>(args.sendbuf);
    return static_cast<const std::byte*>(args.recvbuf) + offsets.begin(rank);
}

} // namespace

void linear_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const int P = net.size(), r = net.rank(), root = args.root;
    const BlockOffsets offsets(args.bytes);
    if (r != root) {
        const std::size_t own = args.bytes[std::size_t(r)];
        if (own != 0) net.post_send(root, own_block(args, offsets, r), own);
        net.wait_all();
        return;
    }
    auto* out = static_cast<std::byte*>(args.recvbuf);
    if (!args.in_place() && args.bytes[std::size_t(r)] != 0)
        mem.copy(out + offsets.begin(r), args.sendbuf, args.bytes[std::size_t(r)]);
    for (int q = 0; q < P; ++q)
        if (q != root && args.bytes[std::size_t(q)] != 0)
            net.post_recv(q, out + offsets.begin(q), args.bytes[std::size_t(q)]);
    net.wait_all();
}

namespace {

void knomial_gather_radix(Transport& net, MemoryOps& mem, const AllgatherArgs& args, int k)
{
    const int P = net.size(), r = net.rank(), root = args.root;
    const BlockOffsets offsets(args.bytes);
    const int v = mod(r - root, P);
    const KnomialTree t = knomial_tree(P, v, k);
    auto real = [&](int vrank) { return mod(vrank + root, P); };
    // Bytes of the virtual ranks [a, b): the real blocks a+root.., turned at P.
    auto span = [&](int a, int b) {
        const int ra = real(a);
        if (a == b) return std::size_t(0);
        if (ra + (b - a) <= P) return offsets.span_length(ra, ra + (b - a));
        return offsets.span_length(ra, P) + offsets.span_length(0, ra + (b - a) - P);
    };
    const std::byte* own = own_block(args, offsets, r);
    const std::size_t own_bytes = args.bytes[std::size_t(r)];
    if (t.children.empty()) { // a leaf: its block goes up as it is
        if (t.parent >= 0 && own_bytes != 0) net.post_send(real(t.parent), own, own_bytes);
        net.wait_all();
        if (t.parent < 0 && !args.in_place() && own_bytes != 0) // P == 1: the root alone
            mem.copy(static_cast<std::byte*>(args.recvbuf) + offsets.begin(r), own, own_bytes);
        return;
    }
    // The subtree's blocks in virtual order: straight in recvbuf at root 0 (virtual = real),
    // else in scratch.
    const std::size_t total = span(v, v + t.extent);
    const bool direct = root == 0 && r == 0;
    Scratch scratch = direct ? no_scratch() : mem.scratch(total);
    std::byte* buf = direct ? static_cast<std::byte*>(args.recvbuf) : scratch.get();
    if (own_bytes != 0 && !(direct && args.in_place())) mem.copy(buf, own, own_bytes);
    for (const auto& c : t.children) {
        const std::size_t n = span(c.vrank, c.vrank + c.extent);
        if (n != 0) net.post_recv(real(c.vrank), buf + span(v, c.vrank), n);
    }
    net.wait_all();
    if (t.parent >= 0) {
        if (total != 0) net.post_send(real(t.parent), buf, total);
        net.wait_all();
    } else if (!direct) {
        // Virtual [0, P - root) is real [root, P), virtual [P - root, P) real [0, root).
        auto* out = static_cast<std::byte*>(args.recvbuf);
        const std::size_t upper = offsets.span_length(root, P);
        if (upper != 0) mem.copy(out + offsets.begin(root), buf, upper);
        if (offsets.begin(root) != 0) mem.copy(out, buf + upper, offsets.begin(root));
    }
}

} // namespace

void binomial_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    knomial_gather_radix(net, mem, args, 2);
}

void knomial_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    knomial_gather_radix(net, mem, args, knomial_radix(args.radix));
}

} // namespace loom
