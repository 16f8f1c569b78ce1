// K-nomial trees (see knomial.hpp for the schedules, a worked example and costs).
#include "knomial.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace loom {

int knomial_radix(std::size_t radix)
{
    if (radix == 0) return int(kDefaultRadix);
    return int(std::clamp<std::size_t>(radix, 2, kMaxRadix));
}

KnomialTree knomial_tree(int P, int v, int k)
{
    KnomialTree t;
    long long m = 1;
    while (m < P && v % (k * m) == 0) m *= k;
    if (m < P) t.parent = int(v - v % (k * m));
    t.extent = int(std::min<long long>(m, P - v));
    for (m /= k; m >= 1; m /= k)
        for (int j = k - 1; j >= 1; --j) // farthest first: the largest subtree
            if (v + j * m < P) t.children.push_back({int(v + j * m), int(std::min<long long>(m, P - v - j * m))});
    return t;
}

void knomial_bcast(Transport& net, MemoryOps&, const BcastArgs& args)
{
    const int P = net.size(), k = knomial_radix(args.radix);
    if (args.bytes == 0 || P == 1) return;
    const int v = mod(net.rank() - args.root, P);
    const KnomialTree t = knomial_tree(P, v, k);
    if (t.parent >= 0) {
        net.post_recv(mod(t.parent + args.root, P), args.buf, args.bytes);
        net.wait_all();
    }
    for (const auto& c : t.children) net.post_send(mod(c.vrank + args.root, P), args.buf, args.bytes);
    net.wait_all();
}

void knomial_barrier(Transport& net, MemoryOps&, const BarrierArgs& args)
{
    const int P = net.size();
    if (P == 1) return;
    const KnomialTree t = knomial_tree(P, net.rank(), knomial_radix(args.radix));
    std::byte none{};
    for (const auto& c : t.children) net.post_recv(c.vrank, &none, 0);
    net.wait_all();
    if (t.parent >= 0) {
        net.post_send(t.parent, &none, 0);
        net.wait_all();
        net.post_recv(t.parent, &none, 0);
        net.wait_all();
    }
    for (const auto& c : t.children) net.post_send(c.vrank, &none, 0);
    net.wait_all();
}

namespace {

// This rank's part of the order-preserving reduce tree: per level (outermost first) the owners
// it receives from with their part's place (below its own or above), and its parent.
struct ReducePlan {
    struct Child {
        int rank;
        int part; // the part's index at its level; the owner's own part is `own`
    };
    struct Level {
        FixedList<Child, kMaxRadix> children;
        int own = 0;
    };
    FixedList<Level, 32> levels; // only the levels where this rank owns its range
    int parent = -1;
};

ReducePlan reduce_plan(int P, int r, int root, int k)
{
    ReducePlan plan;
    int lo = 0, hi = P, owner = root;
    while (hi - lo > 1) {
        const int n = hi - lo, parts = std::min(k, n);
        const BlockPartition split(std::size_t(n), parts);
        auto first = [&](int i) { return lo + int(split.begin(i)); };
        auto last = [&](int i) { return lo + int(split.begin(i) + split.length(i)) - 1; };
        auto part_of = [&](int x) {
            int i = 0;
            while (x > last(i)) ++i;
            return i;
        };
        const int j = part_of(owner), mine = part_of(r);
        // Each other part's owner: its rank next to the owner's part.
        auto owner_of = [&](int i) { return i == j ? owner : i < j ? last(i) : first(i); };
        if (r == owner) {
            ReducePlan::Level level;
            level.own = j;
            for (int i = 0; i < parts; ++i)
                if (i != j) level.children.push_back({owner_of(i), i});
            plan.levels.push_back(level);
        } else if (r == owner_of(mine)) {
            plan.parent = owner;
        }
        const int next_lo = first(mine), next_hi = last(mine) + 1; // before lo changes
        owner = owner_of(mine);
        lo = next_lo;
        hi = next_hi;
    }
    return plan;
}

} // namespace

void knomial_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args)
{
    const int P = net.size(), r = net.rank(), k = knomial_radix(args.radix);
    const std::size_t es = args.op.elem_size, bytes = args.count * es;
    if (bytes == 0) return;
    const bool root = r == args.root;
    const void* input = root && args.in_place() ? args.recvbuf : args.sendbuf;
    const ReducePlan plan = reduce_plan(P, r, args.root, k);
    if (plan.levels.empty()) { // a leaf: its input goes up as it is
        if (root) {
            if (!args.in_place()) mem.copy(args.recvbuf, args.sendbuf, bytes);
        } else {
            net.post_send(plan.parent, input, bytes);
            net.wait_all();
        }
        return;
    }
    // acc and the received parts live in a pool of buffers; at the root the pool holds its
    // recvbuf, where acc starts. A commutative op folds every part into acc (theirs op acc, in
    // place): the root's result is in recvbuf with no copy out. A non-commutative one folds the
    // parts above as "acc op theirs", which leaves the result in theirs, then acc.
    std::size_t most = 0;
    for (const auto& level : plan.levels) most = std::max(most, level.children.size());
    std::vector<Scratch> pool;
    pool.reserve(most + 1);
    std::byte* buf[kMaxRadix + 1];
    std::size_t nbuf = 0;
    if (root) buf[nbuf++] = static_cast<std::byte*>(args.recvbuf);
    while (nbuf <= most) {
        pool.push_back(mem.scratch(bytes));
        buf[nbuf++] = pool.back().get();
    }
    std::byte* acc = buf[0];
    if (acc != input) mem.copy(acc, input, bytes);
    for (std::size_t l = plan.levels.size(); l-- > 0;) { // innermost first
        const auto& level = plan.levels[l];
        const std::size_t n = level.children.size();
        // The parts' buffers: every pool buffer but acc's.
        std::byte* into[kMaxRadix];
        for (std::size_t i = 0, b = 0; i < n; ++i, ++b) {
            if (buf[b] == acc) ++b;
            into[i] = buf[b];
        }
        for (std::size_t i = 0; i < n; ++i) net.post_recv(level.children[i].rank, into[i], bytes);
        net.wait_all();
        // Rank order: the parts below, nearest first, on the left; then those above, on the right.
        for (std::size_t i = n; i-- > 0;)
            if (level.children[i].part < level.own || args.op.commutative)
                mem.reduce(args.op, into[i], acc, args.count);
        for (std::size_t i = 0; i < n && !args.op.commutative; ++i)
            if (level.children[i].part > level.own) {
                mem.reduce(args.op, acc, into[i], args.count); // into = acc op theirs
                acc = into[i];
            }
    }
    if (root) {
        if (acc != args.recvbuf) mem.copy(args.recvbuf, acc, bytes);
    } else {
        net.post_send(plan.parent, acc, bytes);
        net.wait_all();
    }
}

void knomial_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size(), r = net.rank();
    const std::size_t bytes = args.count * args.op.elem_size;
    if (bytes == 0) return;
    if (!args.in_place()) mem.copy(args.recvbuf, args.sendbuf, bytes);
    if (P == 1) return;
    const int k = std::min(knomial_radix(args.radix), P);
    int Q = 1;
    while (Q <= P / k) Q *= k;
    auto* mine = static_cast<std::byte*>(args.recvbuf);
    // Off powers of k: the ranks past Q hand their vectors to rank r mod Q and wait.
    if (r >= Q) {
        net.post_send(r % Q, mine, bytes);
        net.wait_all();
        net.post_recv(r % Q, mine, bytes);
        net.wait_all();
        return;
    }
    std::vector<Scratch> pool;
    pool.reserve(std::size_t(k - 1));
    for (int j = 0; j < k - 1; ++j) pool.push_back(mem.scratch(bytes));
    for (int e = r + Q; e < P; e += Q) {
        net.post_recv(e, pool[0].get(), bytes);
        net.wait_all();
        mem.reduce(args.op, pool[0].get(), mine, args.count);
    }
    for (int mask = 1; mask < Q; mask *= k) {
        const int digit = r / mask % k, base = r - digit * mask;
        // The group's vectors by position: mine where it is, the others in the pool.
        std::byte* v[kMaxRadix];
        for (int j = 0, b = 0; j < k; ++j) v[j] = j == digit ? mine : pool[std::size_t(b++)].get();
        for (int j = 0; j < k; ++j)
            if (j != digit) {
                net.post_send(base + j * mask, mine, bytes);
                net.post_recv(base + j * mask, v[j], bytes);
            }
        net.wait_all();
        // v_0 op (v_1 op (... op v_{k-1})), the same order on every rank of the group.
        std::byte* acc = v[k - 1];
        for (int j = k - 2; j >= 0; --j) mem.reduce(args.op, v[j], acc, args.count);
        if (acc != mine) mem.copy(mine, acc, bytes);
    }
    for (int e = r + Q; e < P; e += Q) net.post_send(e, mine, bytes);
    net.wait_all();
}

} // namespace loom
