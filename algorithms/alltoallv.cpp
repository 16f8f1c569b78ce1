// MPI_Alltoallv over messages: pairwise and windowed linear (see alltoallv.hpp for the
// schedules, costs and limits).
#include "alltoallv.hpp"

#include <algorithm>

namespace loom {

namespace {

// One call's blocks: where each starts in the input and the output, and how to post them.
// Empty blocks are skipped on both sides alike (send_bytes[i] here == recv_bytes[r] on i).
struct Blocks {
    Blocks(Transport& net, const AlltoallvArgs& args, const std::byte* in)
        : net(net), args(args), in(in), out(static_cast<std::byte*>(args.recvbuf)), sends(args.send_bytes),
          recvs(args.recv_bytes)
    {}
    std::size_t send_len(int q) const { return args.send_bytes[std::size_t(q)]; }
    std::size_t recv_len(int q) const { return args.recv_bytes[std::size_t(q)]; }
    const std::byte* send_at(int q) const { return in + sends.begin(q); }
    std::byte* recv_at(int q) const { return out + recvs.begin(q); }
    // Posts block q's send or receive unless it is empty; says whether it posted.
    bool send(int q) const
    {
        if (send_len(q) == 0) return false;
        net.post_send(q, send_at(q), send_len(q));
        return true;
    }
    bool recv(int q, std::byte* into) const
    {
        if (recv_len(q) == 0) return false;
        net.post_recv(q, into, recv_len(q));
        return true;
    }

    Transport& net;
    const AlltoallvArgs& args;
    const std::byte* in; // the input: sendbuf, or recvbuf in place
    std::byte* out;
    BlockOffsets sends, recvs;
};

} // namespace

void pairwise_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args)
{
    const int P = net.size(), r = net.rank();
    const auto* input = static_cast<const std::byte*>(args.in_place() ? args.recvbuf : args.sendbuf);
    const Blocks b(net, args, input);
    auto exchange = [&](int to, int from, std::byte* into) {
        const bool posted_recv = b.recv(from, into);
        if (b.send(to) || posted_recv) net.wait_all();
    };

    if (!args.in_place()) {
        if (b.recv_len(r) != 0) mem.copy(b.recv_at(r), b.send_at(r), b.recv_len(r));
        for (int k = 1; k < P; ++k) {
            const int from = mod(r - k, P);
            exchange(mod(r + k, P), from, b.recv_at(from));
        }
        return;
    }

    // In place: steps k and P - k together, block (r - k) received into scratch in between
    // (pairwise_alltoall's order; send_bytes == recv_bytes).
    std::size_t largest = 0;
    for (int k = 1; 2 * k <= P; ++k) largest = std::max(largest, b.recv_len(mod(r - k, P)));
    Scratch stash = largest != 0 ? mem.scratch(largest) : no_scratch();
    for (int k = 1; 2 * k <= P; ++k) {
        const int hi = mod(r + k, P), lo = mod(r - k, P);
        exchange(hi, lo, stash.get());                  // step k
        if (2 * k < P) exchange(lo, hi, b.recv_at(hi)); // step P - k
        if (b.recv_len(lo) != 0) mem.copy(b.recv_at(lo), stash.get(), b.recv_len(lo));
    }
}

void linear_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args)
{
    const int P = net.size(), r = net.rank();
    const std::size_t asked = args.max_requests != 0 ? args.max_requests : kDefaultAlltoallvWindow;
    const int W = int(std::min<std::size_t>(asked, std::size_t(std::max(P - 1, 1))));
    // In place the receives land where the sends read: send from a copy of the input.
    Scratch copy = no_scratch();
    const std::byte* input = static_cast<const std::byte*>(args.sendbuf);
    if (args.in_place()) {
        const std::size_t total = BlockOffsets(args.recv_bytes).total();
        if (P > 1 && total != 0) {
            copy = mem.scratch(total);
            mem.copy(copy.get(), args.recvbuf, total);
        }
        input = copy ? copy.get() : static_cast<const std::byte*>(args.recvbuf);
    }
    const Blocks b(net, args, input);
    if (!args.in_place() && b.recv_len(r) != 0) mem.copy(b.recv_at(r), b.send_at(r), b.recv_len(r));
    for (int first = 1; first < P; first += W) {
        bool posted = false;
        const int last = std::min(first + W, P); // shifts [first, last)
        for (int k = first; k < last; ++k) {
            const int from = mod(r - k, P);
            posted = b.recv(from, b.recv_at(from)) || posted;
        }
        for (int k = first; k < last; ++k) posted = b.send(mod(r + k, P)) || posted;
        if (posted) net.wait_all();
    }
}

} // namespace loom
