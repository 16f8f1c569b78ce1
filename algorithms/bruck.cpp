// Bruck et al. (1997): allgather(v), alltoall and the dissemination barrier, in ceil(lg P)
// steps for any P.
//
// Terms: P ranks, rank r, "distance" d = 2^k in step k = 0, 1, ..., ceil(lg P) - 1. All
// arithmetic on ranks and block indices is mod P.
//
// Allgather(v). Rank i contributes block i (bytes[i] bytes, possibly 0). Each rank works in a
// buffer ordered from itself: position j holds block r + j. It starts with its own block at
// position 0; after step k it holds positions 0 .. min(2d, P) - 1. In step k it sends positions
// 0 .. n - 1, n = min(d, P - d), to r - d and receives the same number of positions, which
// are positions 0 .. n - 1 of rank r + d, into its positions d .. d + n - 1. The last step
// sends only what is still missing, so every rank sends P - 1 blocks in all. Finally the
// buffer is rotated into rank order (rank 0's buffer already is: it works in the result).
// A run of positions is contiguous in the buffer but a run of blocks may wrap past P - 1,
// so its size is the bytes of blocks first .. P - 1 plus those of 0 .. first + n - P - 1.
// Worked example, P = 5 (positions as block numbers; "a-b" is a run of blocks, mod P):
//   step  d  n   rank 0 sends  rank 1 sends  rank 2 sends  rank 3 sends  rank 4 sends
//   0     1  1   0 -> 4        1 -> 0        2 -> 1        3 -> 2        4 -> 3
//   1     2  2   0-1 -> 3      1-2 -> 4      2-3 -> 0      3-4 -> 1      4-0 -> 2
//   2     4  1   0 -> 1        1 -> 2        2 -> 3        3 -> 4        4 -> 0
// After step 2 rank 1's buffer holds blocks 1 2 3 4 0; it is rotated to 0 1 2 3 4.
// Cost: ceil(lg P) steps; each rank sends P - 1 blocks, (P - 1)/P S bytes for equal blocks
// (S the total). Empty runs are skipped by both sides (a step may have no message).
// Memory: rank 0 none; other ranks S bytes of scratch, and one extra copy of S (rotation).
//
// Alltoall. Block i of rank r's input goes to rank i; block j of its result comes from rank
// j; every block has B bytes. (1) Rotate: slot i of a scratch buffer holds the input block
// for rank r + i. (2) Step k: the slots i with bit k set (i & d != 0) are packed into one
// message to r + d; the message from r - d is unpacked into the same slots. By induction,
// after bits 0 .. k slot i holds the block from rank r - (i mod 2d) to rank r - (i mod 2d) + i,
// so at the end slot i holds the block from r - i to r. (3) Result block j = slot r - j.
// Worked example, P = 4, rank 1 ("s>t" is the block from s to t):
//   after rotation  slots 0..3 = 1>1 1>2 1>3 1>0
//   step 0 (d = 1)  sends slots 1, 3 to rank 2, gets 0>1 0>3 from rank 0: 1>1 0>1 1>3 0>3
//   step 1 (d = 2)  sends slots 2, 3 to rank 3, gets 3>1 2>1 from rank 3: 1>1 0>1 3>1 2>1
//   result          block j = slot (1 - j) mod 4: 0>1 1>1 2>1 3>1
// Cost: ceil(lg P) steps; each rank sends at most floor(P/2) blocks per step, about
// B P/2 lg P bytes in all (versus (P - 1) B for pairwise): for small blocks only.
// Memory: P B (rotated slots) plus 2 x floor(P/2) B (packs) of scratch; 3 local copies of
// each block (rotation, pack/unpack, final placement).
//
// Barrier (dissemination, Hensgen, Finkel & Manber 1988): step k sends an empty message to
// r + d and receives one from r - d. After step k every rank has heard, directly or through
// a chain, from the 2d - 1 ranks before it, so after ceil(lg P) steps from all P - 1 others.
// Cost: ceil(lg P) steps, one zero-byte message per rank per step; no memory.
//
// Limits: any P >= 1; block sizes may be 0. The collectives move bytes only.
#include "bruck.hpp"

#include <algorithm>

namespace loom {
namespace {

// Bytes of the run of n consecutive blocks first, first + 1, ... (mod P), 0 <= n <= P.
std::size_t run_bytes(const BlockOffsets& blocks, int P, int first, int n)
{
    if (n <= 0) return 0;
    const int end = first + n;
    if (end <= P) return blocks.span_length(first, end);
    return blocks.span_length(first, P) + blocks.span_length(0, end - P);
}

} // namespace

void bruck_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    const BlockOffsets blocks(args.bytes);
    auto* result = static_cast<std::byte*>(args.recvbuf);
    const std::size_t own = blocks.length(r);
    if (!args.in_place()) mem.copy(result + blocks.begin(r), args.sendbuf, own);
    if (P == 1) return;

    // Work buffer ordered from this rank: rank 0's order is the rank order, so it works in
    // the result; the others work in scratch and rotate at the end.
    Scratch scratch(nullptr, nullptr);
    std::byte* work = result;
    if (r != 0) {
        scratch = mem.scratch(blocks.total());
        work = scratch.get();
        mem.copy(work, result + blocks.begin(r), own);
    }

    for (int d = 1; d < P; d *= 2) {
        const int n = std::min(d, P - d);
        const int from = mod(r + d, P);
        const int to = mod(r - d, P);
        // Both sides compute the same run sizes, so an empty run is skipped by both.
        const std::size_t send_bytes = run_bytes(blocks, P, r, n);
        const std::size_t recv_bytes = run_bytes(blocks, P, from, n);
        if (recv_bytes != 0) net.post_recv(from, work + run_bytes(blocks, P, r, d), recv_bytes);
        if (send_bytes != 0) net.post_send(to, work, send_bytes);
        if (recv_bytes != 0 || send_bytes != 0) net.wait_all();
    }

    if (r != 0) {
        // Positions 1 .. P-r-1 are blocks r+1 .. P-1; positions P-r .. P-1 are blocks 0 .. r-1.
        const std::size_t upper = blocks.span_length(r, P); // positions 0 .. P-r-1
        mem.copy(result + blocks.begin(r) + own, work + own, upper - own);
        mem.copy(result, work + upper, blocks.begin(r));
    }
}

void bruck_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    const std::size_t B = args.block_bytes;
    auto* result = static_cast<std::byte*>(args.recvbuf);
    const auto* input = args.in_place() ? result : static_cast<const std::byte*>(args.sendbuf);
    if (P == 1 || B == 0) {
        if (!args.in_place()) mem.copy(result, input, std::size_t(P) * B);
        return;
    }

    const std::size_t pack_blocks = std::size_t(P / 2); // slots with bit k set, at most
    Scratch scratch = mem.scratch((std::size_t(P) + 2 * pack_blocks) * B);
    std::byte* slots = scratch.get();
    std::byte* out_pack = slots + std::size_t(P) * B;
    std::byte* in_pack = out_pack + pack_blocks * B;
    auto slot = [&](int i) { return slots + std::size_t(i) * B; };

    // (1) Slot i = input block r + i: two contiguous copies.
    mem.copy(slots, input + std::size_t(r) * B, std::size_t(P - r) * B);
    mem.copy(slot(P - r), input, std::size_t(r) * B);

    // (2) The slots with bit k set come in runs of d consecutive slots starting at d, 3d, ...
    for (int d = 1; d < P; d *= 2) {
        std::size_t packed = 0;
        for (int i = d; i < P; i += 2 * d) {
            const std::size_t len = std::size_t(std::min(d, P - i)) * B;
            mem.copy(out_pack + packed, slot(i), len);
            packed += len;
        }
        net.post_recv(mod(r - d, P), in_pack, packed);
        net.post_send(mod(r + d, P), out_pack, packed);
        net.wait_all();
        std::size_t unpacked = 0;
        for (int i = d; i < P; i += 2 * d) {
            const std::size_t len = std::size_t(std::min(d, P - i)) * B;
            mem.copy(slot(i), in_pack + unpacked, len);
            unpacked += len;
        }
    }

    // (3) Result block j (from rank j) = slot r - j.
    for (int j = 0; j < P; ++j) mem.copy(result + std::size_t(j) * B, slot(mod(r - j, P)), B);
}

void bruck_barrier(Transport& net, MemoryOps&, const BarrierArgs&)
{
    const int P = net.size();
    const int r = net.rank();
    std::byte token{}, sink{};
    for (int d = 1; d < P; d *= 2) {
        net.post_recv(mod(r - d, P), &sink, 0);
        net.post_send(mod(r + d, P), &token, 0);
        net.wait_all();
    }
}

} // namespace loom
