// MPI_Alltoallv over messages (AlltoallvArgs): block i of rank r's input (send_bytes[i] bytes)
// goes to rank i, block j of its output (recv_bytes[j] bytes) comes from rank j, each buffer's
// blocks end to end in rank order. A rank knows only its own counts; MPI makes send_bytes[i] on
// rank r equal recv_bytes[r] on rank i, so a pair of ranks agrees on every message's size, and
// an empty one is skipped on both sides alike (the sender sees 0 in send_bytes, the receiver in
// recv_bytes). The own block is copied locally.
//
// Terms: P ranks; S_r = sum(send_bytes) the bytes rank r sends (its own block included), W the
// window (max_requests).
//
// Pairwise: P - 1 steps, in step k (1 <= k < P) rank r sends block (r + k) mod P to that rank
// and receives block (r - k) mod P from that rank, straight into its place, then waits (as
// pairwise_alltoall, pairwise.hpp). Each step is a shift permutation: one message each way per
// rank, no link shared within a step. Cost: P - 1 steps (a step with nothing either way waits
// for nothing); S_r minus the own block sent, in at most P - 1 messages. In place (sendbuf
// nullptr) the steps run 1, P-1, 2, P-2, ... as pairwise_alltoall's: step k receives block
// (r - k) into scratch, step P - k sends that block and receives block (r + k) into the place
// it was sent from in step k, then the scratch is copied in: scratch for one block (the largest
// of blocks r-1 .. r-P/2) and a local copy of about half the blocks, no copy of the input.
//
// Linear: every rank posts its receives and sends to all P - 1 peers, at most W of each at
// once: round b posts the sends to shifts k = bW+1 .. (b+1)W (rank r + k) and the receives from
// the same shifts (rank r - k), then waits for all of them. A pair's two messages fall in the
// same round on both ranks (shift k on the sender is shift k on the receiver), so rounds never
// wait for each other, and every rank sends to W different ranks and receives from W different
// ranks per round: no rank is the target of everyone at once. Sends start at r + 1, so the ranks
// do not all send to rank 0 first. W = max_requests, 0 meaning kDefaultAlltoallvWindow (32, as
// MPICH's alltoall throttle); W >= P - 1 posts everything at once (Open MPI basic's linear).
// Cost: ceil((P-1)/W) rounds of up to W messages each way; S_r minus the own block sent. The
// Transport can only wait for all that is posted (transport.hpp), so the window does not
// slide: a round waits for its slowest exchange before the next round starts. A window counts
// peers, not messages: an empty block (skipped) still takes its peer's place in its round, so
// both sides of every pair put it in the same round. In place: the input is copied to scratch
// first (S_r bytes of scratch, one local copy of S_r), since receives land where sends read.
//
// Limits: any P >= 1; any blocks, empty or not; the counts must match pairwise as MPI requires
// (a mismatch is a size mismatch on the transport). No arithmetic.
#pragma once

#include "collectives.hpp"

namespace loom {

// Linear's requests in flight per direction when AlltoallvArgs::max_requests is 0.
constexpr std::size_t kDefaultAlltoallvWindow = 32;

void pairwise_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args);
void linear_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args);

} // namespace loom
