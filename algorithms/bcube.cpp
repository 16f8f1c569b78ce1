// BCube allreduce (see bcube.hpp for the grid, the schedule, a worked example and costs).
#include "bcube.hpp"

#include "knomial.hpp"

#include <algorithm>

namespace loom {

namespace {

// The grid the ranks below `size` form: digit i of rank r is r / stride[i] % digits[i].
struct Grid {
    int size = 1;
    FixedList<int, 32> digits, stride; // at most 31 digits of at least 2 below 2^31
};

// n's digits, the largest divisor of what is left up to B first; false if a prime factor of n
// is above B.
bool factor(int n, int B, Grid& g)
{
    g = Grid{};
    g.size = n;
    for (int stride = 1; n > 1; n /= g.digits[g.digits.size() - 1]) {
        int b = std::min(B, n);
        while (b > 1 && n % b != 0) --b;
        if (b == 1) return false;
        g.digits.push_back(b);
        g.stride.push_back(stride);
        stride *= b;
    }
    return true;
}

// P itself if it factors over B; else c B^m (B^m the largest power of B <= P, c = P / B^m).
Grid grid_for(int P, int B)
{
    Grid g;
    if (factor(P, B, g)) return g;
    int m = 1;
    while (m <= P / B) m *= B;
    factor(m * (P / m), B, g);
    return g;
}

} // namespace

void bcube_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size(), r = net.rank();
    const std::size_t es = args.op.elem_size, bytes = args.count * es;
    if (bytes == 0) return;
    auto* mine = static_cast<std::byte*>(args.recvbuf);
    if (!args.in_place()) mem.copy(mine, args.sendbuf, bytes);
    if (P == 1) return;
    const Grid g = grid_for(P, std::min(knomial_radix(args.radix), P));
    const int Q = g.size;
    if (r >= Q) { // off the grid: hand the vector to rank r - Q, get the result back
        net.post_send(r - Q, mine, bytes);
        net.wait_all();
        net.post_recv(r - Q, mine, bytes);
        net.wait_all();
        return;
    }
    const bool partner = r + Q < P;

    // A step's group: the ranks base + j stride, j = 0 .. b-1, this one j = own; its slice before
    // the step: elements [lo, lo + n), split in b parts, part j to rank j.
    struct Step {
        int b, stride, own, base;
        std::size_t lo, n;
        BlockPartition parts() const { return BlockPartition(n, b); }
        std::size_t at(int j) const { return lo + parts().begin(j); }
        std::size_t length(int j) const { return parts().length(j); }
        int peer(int j) const { return base + j * stride; }
    };
    FixedList<Step, 32> steps;
    std::size_t most = partner ? args.count : 0; // scratch, in elements
    for (std::size_t i = 0, lo = 0, n = args.count; i < g.digits.size(); ++i) {
        const int b = g.digits[i], stride = g.stride[i], own = r / stride % b;
        const Step s{b, stride, own, r - own * stride, lo, n};
        steps.push_back(s);
        most = std::max(most, std::size_t(b - 1) * s.length(own)); // its part from b-1 others
        lo = s.at(own);
        n = s.length(own);
    }
    Scratch buf = most != 0 ? mem.scratch(most * es) : no_scratch();
    auto elem = [&](std::size_t i) { return mine + i * es; };

    if (partner) {
        net.post_recv(r + Q, buf.get(), bytes);
        net.wait_all();
        mem.reduce(args.op, buf.get(), mine, args.count);
    }
    for (const Step& s : steps) { // reduce-scatter: own part from each, the others' parts to them
        const std::size_t n = s.length(s.own);
        bool posted = false;
        for (int j = 0, slot = 0; j < s.b; ++j)
            if (j != s.own && n != 0) {
                net.post_recv(s.peer(j), buf.get() + std::size_t(slot++) * n * es, n * es);
                posted = true;
            }
        for (int j = 0; j < s.b; ++j)
            if (j != s.own && s.length(j) != 0) {
                net.post_send(s.peer(j), elem(s.at(j)), s.length(j) * es);
                posted = true;
            }
        if (posted) net.wait_all();
        for (int slot = 0; n != 0 && slot < s.b - 1; ++slot)
            mem.reduce(args.op, buf.get() + std::size_t(slot) * n * es, elem(s.at(s.own)), n);
    }
    for (std::size_t i = steps.size(); i-- > 0;) { // allgather: own part to each, theirs into place
        const Step& s = steps[i];
        const std::size_t n = s.length(s.own);
        bool posted = false;
        for (int j = 0; j < s.b; ++j)
            if (j != s.own && s.length(j) != 0) {
                net.post_recv(s.peer(j), elem(s.at(j)), s.length(j) * es);
                posted = true;
            }
        for (int j = 0; j < s.b; ++j)
            if (j != s.own && n != 0) {
                net.post_send(s.peer(j), elem(s.at(s.own)), n * es);
                posted = true;
            }
        if (posted) net.wait_all();
    }
    if (partner) {
        net.post_send(r + Q, mine, bytes);
        net.wait_all();
    }
}

} // namespace loom
