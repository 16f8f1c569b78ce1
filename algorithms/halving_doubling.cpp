// Recursive vector halving / distance doubling (Rabenseifner; Thakur, Rabenseifner & Gropp
// 2005): allreduce, reduce-scatter, reduce.
//
// Terms: P ranks, p2 = 2^floor(lg P), r = P - p2 "extra" ranks, S bytes of input per rank.
// The p2 ranks that take part in the power-of-two phase are numbered by their "newrank"
// nr = 0..p2-1; the vector is cut into p2 ranges in newrank order, newrank j owning
// elements [bound(j), bound(j + 1)).
//
// Non-power-of-two P: the extra ranks are folded in (MPICH / Open MPI style), not gloo's
// binary blocks. For i < r the pair (2i, 2i + 1) combines first: one rank of the pair sends
// its whole input to the other ("keeper", normally 2i + 1) and sits out; ranks >= 2r keep
// alone. Newrank i < r is the keeper of pair i, newrank i >= r is rank i + r, so newranks are
// in rank order and a newrank range covers a contiguous range of ranks. At the end the
// keeper hands the sitting-out rank its share. Why the fold: it costs two steps and S bytes
// on the r pairs only, keeps one simple power-of-two schedule, and lets the reduce pick the
// root as a keeper. Binary blocks avoid the idle ranks but need a second, unbalanced
// reduction across blocks of different sizes, which buys little at the sizes this serves.
//
// Reduce-scatter phase, recursive halving FROM THE LARGEST DISTANCE DOWN: the newranks
// start with the range [0, p2); at distance d = p2/2, p2/4, ..., 1 a newrank's range [lo, hi)
// splits at mid = lo + d; the lower newrank keeps [lo, mid), the upper one [mid, hi); each
// sends the half it gives up to its partner nr XOR d and reduces the half it keeps with the
// partner's copy. Halving from the top ends with newrank j holding exactly range j, in rank
// order: the bit-reversed ownership that halving from distance 1 up produces (Sack & Gropp
// 2012) never arises, so no final permutation is needed.
// Allgather phase (allreduce), recursive doubling: at d = 1, 2, ..., p2/2 newrank nr holds
// the aligned range of d newranks containing nr and swaps it with partner nr XOR d.
// Gather phase (reduce): the same doubling towards the root, a binomial tree on newrank XOR
// root's newrank: at distance d a rank whose bit d is set sends its range and stops.
//
// Worked example, allreduce, P = 4, ranges A B C D; "x:y" is range x summed over ranks y:
//   step          rank 0             rank 1             rank 2             rank 3
//   halving d=2   w/ 2: gives CD,    w/ 3: gives CD,    w/ 0: gives AB,    w/ 1: gives AB,
//                 keeps AB:02        keeps AB:13        keeps CD:02        keeps CD:13
//   halving d=1   w/ 1: gives B,     w/ 0: gives A,     w/ 3: gives D,     w/ 2: gives C,
//                 keeps A:0123       keeps B:0123       keeps C:0123       keeps D:0123
//   doubling d=1  gets B from 1      gets A from 0      gets D from 3      gets C from 2
//   doubling d=2  gets CD from 2     gets CD from 3     gets AB from 0     gets AB from 1
// P = 6 (p2 = 4, r = 2): ranks 0 and 2 send everything to 1 and 3 and sit out; newranks
// 0 1 2 3 = ranks 1 3 4 5 run the schedule above; 1 and 3 send the result back to 0 and 2.
// Reduce-scatter, P = 6: newrank 0 (rank 1) owns blocks 0-1, newrank 1 (rank 3) blocks 2-3,
// newranks 2 and 3 (ranks 4, 5) blocks 4 and 5; at the end rank 1 sends block 0 to rank 0
// and rank 3 block 2 to rank 2.
//
// Cost, participants (add one step each way and S bytes for the r fold pairs):
//   allreduce       2 lg p2 steps (+2), sends 2(p2-1)/p2 S, reduces (p2-1)/p2 S;
//   reduce-scatter  lg p2 steps (+2), sends (p2-1)/p2 S (S = the whole input);
//   reduce          2 lg p2 steps (+1), the root receives about 2 S in all.
// Limits: the op must be commutative (partial results are combined in the order of the
// butterfly, not of the ranks). Reduce-scatter halves by ranks, not by bytes: with very
// uneven counts the halves, and so the steps, are uneven too. Every range is reduced once, on one rank, and then copied,
// so all ranks get bit-identical results. Memory: allreduce at most S/2 of scratch (S in
// place on a fold keeper); reduce-scatter S + S/2, in place as out of place (in place the
// input in recvbuf is only read: MPI defines just the first counts[rank] elements as output);
// reduce S + S/2 off the root.
#include "halving_doubling.hpp"

#include <vector>

namespace loom {

namespace {

// Which ranks take part in the power-of-two phase, and as which newrank.
struct Fold {
    int p2 = 1;           // 2^floor(lg P)
    int r = 0;            // P - p2 extra ranks; pairs (2i, 2i+1) for i < r
    int even_keeper = -1; // the pair whose EVEN rank keeps (reduce to an even root), or -1

    Fold(int P, int even_keeper_pair = -1) : even_keeper(even_keeper_pair)
    {
        while (p2 * 2 <= P) p2 *= 2;
        r = P - p2;
    }
    int real(int nr) const { return nr < r ? 2 * nr + (nr == even_keeper ? 0 : 1) : nr + r; }
    // -1 for a rank that sits out.
    int newrank(int rank) const
    {
        if (rank >= 2 * r) return rank - r;
        return real(rank / 2) == rank ? rank / 2 : -1;
    }
    // The first block (of P rank blocks) that newrank j covers; first_block(p2) = P.
    int first_block(int j) const { return j < r ? 2 * j : j + r; }
};

// The fold and the recursive-halving reduce-scatter shared by all three collectives.
// bound[j], j = 0..p2, is the element offset of newrank j's range (bound[p2] = the total).
// `input` is this rank's input while it is not yet in `acc` (out of place), else nullptr and
// `acc` holds it. On return newrank nr's range of `acc` is fully reduced; the rest of `acc`
// is undefined. Returns nr, or -1 on a rank that sent its input to its keeper and sat out.
int fold_and_halve(Transport& net, MemoryOps& mem, const Reduction& op, const Fold& f,
                   const std::vector<std::size_t>& bound, const std::byte* input, std::byte* acc)
{
    const int rank = net.rank();
    const std::size_t es = op.elem_size;
    const std::size_t total = bound.back();
    const int nr = f.newrank(rank);

    if (nr < 0) { // give everything to the keeper of our pair
        if (total != 0) net.post_send(rank ^ 1, input != nullptr ? input : acc, total * es);
        net.wait_all();
        return -1;
    }

    Scratch incoming(nullptr, nullptr);
    std::size_t incoming_bytes = 0;
    // Receive [recv_at, +recv_n) from peer and reduce it into acc while sending
    // [send_at, +send_n). Out of place, the first receive lands in acc itself and the local
    // input is reduced into it (commutative op), so the input is never copied.
    auto exchange = [&](int peer, std::size_t send_at, std::size_t send_n, std::size_t recv_at, std::size_t recv_n) {
        std::byte* target = acc + recv_at * es;
        std::byte* into = target;
        if (input == nullptr && recv_n * es > incoming_bytes) {
            incoming = mem.scratch(recv_n * es); // ranges shrink: the first one is the largest
            incoming_bytes = recv_n * es;
        }
        if (input == nullptr) into = incoming.get();
        if (recv_n != 0) net.post_recv(peer, into, recv_n * es);
        if (send_n != 0) net.post_send(peer, (input != nullptr ? input : acc) + send_at * es, send_n * es);
        net.wait_all();
        if (input != nullptr)
            mem.reduce(op, input + recv_at * es, target, recv_n);
        else
            mem.reduce(op, into, target, recv_n);
        input = nullptr;
    };

    if (nr < f.r) exchange(rank ^ 1, 0, 0, 0, total); // the fold: take the partner's input

    int lo = 0, hi = f.p2;
    for (int d = f.p2 / 2; d >= 1; d /= 2) {
        const int mid = lo + d;
        const bool lower = nr < mid;
        const int peer = f.real(lower ? nr + d : nr - d);
        const int give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
        if (lower)
            hi = mid;
        else
            lo = mid;
        exchange(peer, bound[give_lo], bound[give_hi] - bound[give_lo], bound[lo], bound[hi] - bound[lo]);
    }
    if (input != nullptr) mem.copy(acc, input, total * es); // p2 == 1: nothing was exchanged
    return nr;
}

} // namespace

void halving_doubling_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int P = net.size();
    const int rank = net.rank();
    const std::size_t es = args.op.elem_size;
    auto* acc = static_cast<std::byte*>(args.recvbuf);
    const auto* input = args.in_place() ? nullptr : static_cast<const std::byte*>(args.sendbuf);

    if (P == 1 || args.count == 0) {
        if (input != nullptr) mem.copy(acc, input, args.count * es);
        return;
    }

    const Fold f(P);
    const BlockPartition ranges(args.count, f.p2);
    std::vector<std::size_t> bound(std::size_t(f.p2) + 1);
    for (int j = 0; j <= f.p2; ++j) bound[std::size_t(j)] = ranges.begin(j);

    const int nr = fold_and_halve(net, mem, args.op, f, bound, input, acc);
    if (nr < 0) { // sat out: the keeper sends the result
        net.post_recv(rank ^ 1, acc, args.count * es);
        net.wait_all();
        return;
    }

    // Recursive doubling: ranges arrive straight in their final place.
    for (int d = 1; d < f.p2; d *= 2) {
        const int mine = nr & ~(d - 1);
        const int theirs = (nr ^ d) & ~(d - 1);
        const std::size_t send_n = bound[std::size_t(mine + d)] - bound[std::size_t(mine)];
        const std::size_t recv_n = bound[std::size_t(theirs + d)] - bound[std::size_t(theirs)];
        const int peer = f.real(nr ^ d);
        if (recv_n != 0) net.post_recv(peer, acc + bound[std::size_t(theirs)] * es, recv_n * es);
        if (send_n != 0) net.post_send(peer, acc + bound[std::size_t(mine)] * es, send_n * es);
        net.wait_all();
    }
    if (nr < f.r) { // hand the result to the rank that sat out
        net.post_send(rank ^ 1, acc, args.count * es);
        net.wait_all();
    }
}

void halving_doubling_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    const int P = net.size();
    const int rank = net.rank();
    const std::size_t es = args.op.elem_size;
    auto* out = static_cast<std::byte*>(args.recvbuf);
    // In place recvbuf holds the whole input, and MPI defines only its first counts[rank]
    // elements as output: the input is read where it is and never written.
    const auto* input = args.in_place() ? out : static_cast<const std::byte*>(args.sendbuf);
    const BlockOffsets blocks(args.counts);
    const std::size_t own_at = blocks.begin(rank) * es, own_bytes = blocks.length(rank) * es;

    if (P == 1) {
        if (!args.in_place()) mem.copy(out, input, own_bytes);
        return;
    }
    if (blocks.total() == 0) return;

    const Fold f(P);
    std::vector<std::size_t> bound(std::size_t(f.p2) + 1);
    for (int j = 0; j <= f.p2; ++j) bound[std::size_t(j)] = blocks.begin(f.first_block(j));

    // The partial results live in scratch (a rank that sits out needs none).
    Scratch work(nullptr, nullptr);
    if (f.newrank(rank) >= 0) work = mem.scratch(blocks.total() * es);
    std::byte* acc = work.get();

    const int nr = fold_and_halve(net, mem, args.op, f, bound, input, acc);
    if (nr < 0) { // sat out: the keeper sends our block
        if (own_bytes != 0) net.post_recv(rank ^ 1, out, own_bytes);
        net.wait_all();
        return;
    }
    if (nr < f.r) { // a keeper holds its partner's block too
        const int partner = rank ^ 1;
        if (blocks.length(partner) != 0)
            net.post_send(partner, acc + blocks.begin(partner) * es, blocks.length(partner) * es);
        net.wait_all();
    }
    mem.copy(out, acc + own_at, own_bytes);
}

void halving_doubling_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args)
{
    const int P = net.size();
    const int rank = net.rank();
    const std::size_t es = args.op.elem_size;
    const bool root = rank == args.root;
    const auto* input = root && args.in_place() ? nullptr : static_cast<const std::byte*>(args.sendbuf);

    if (P == 1 || args.count == 0) {
        if (root && input != nullptr) mem.copy(args.recvbuf, input, args.count * es);
        return;
    }

    // An even root below 2r keeps for its pair instead of sitting out, so the result never
    // needs a last hop off the power-of-two ranks.
    const int r_extra = P - Fold(P).p2;
    const Fold f(P, args.root < 2 * r_extra && args.root % 2 == 0 ? args.root / 2 : -1);
    const BlockPartition ranges(args.count, f.p2);
    std::vector<std::size_t> bound(std::size_t(f.p2) + 1);
    for (int j = 0; j <= f.p2; ++j) bound[std::size_t(j)] = ranges.begin(j);

    // The root reduces in its result buffer; other participants in scratch.
    Scratch work(nullptr, nullptr);
    std::byte* acc = static_cast<std::byte*>(args.recvbuf);
    if (!root) {
        if (f.newrank(rank) >= 0) work = mem.scratch(args.count * es);
        acc = work.get();
    }

    const int nr = fold_and_halve(net, mem, args.op, f, bound, input, acc);
    if (nr < 0) return;

    // Binomial gather on newrank XOR root's newrank: the aligned range of d newranks around
    // nr is complete at distance d; a rank whose bit d is set sends it and is done.
    const int rel = nr ^ f.newrank(args.root);
    for (int d = 1; d < f.p2; d *= 2) {
        const int peer = f.real(nr ^ d);
        if ((rel & d) != 0) {
            const int mine = nr & ~(d - 1);
            const std::size_t n = bound[std::size_t(mine + d)] - bound[std::size_t(mine)];
            if (n != 0) net.post_send(peer, acc + bound[std::size_t(mine)] * es, n * es);
            net.wait_all();
            return;
        }
        const int theirs = (nr ^ d) & ~(d - 1);
        const std::size_t n = bound[std::size_t(theirs + d)] - bound[std::size_t(theirs)];
        if (n != 0) net.post_recv(peer, acc + bound[std::size_t(theirs)] * es, n * es);
        net.wait_all();
    }
}

} // namespace loom
