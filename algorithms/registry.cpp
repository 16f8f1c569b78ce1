#include "registry.hpp"

#include "bcube.hpp"
#include "alltoallv.hpp"
#include "binomial.hpp"
#include "bruck.hpp"
#include "combining.hpp"
#include "gather.hpp"
#include "halving_doubling.hpp"
#include "hierarchical.hpp"
#include "hierarchical_segmented.hpp"
#include "knomial.hpp"
#include "neighbour.hpp"
#include "pairwise.hpp"
#include "pat.hpp"
#include "recursive_doubling.hpp"
#include "ring.hpp"
#include "scan.hpp"
#include "scatter.hpp"
#include "scatter_allgather.hpp"
#include "shm.hpp"
#include "shm_neighbour.hpp"
#include "shm_exchange.hpp"
#include "shm_scan.hpp"
#include "single_copy.hpp"

#include <algorithm>
#include <array>

namespace loom {

namespace {

constexpr Needs kCommutative{.commutative_op = true};
constexpr Needs kAny{};
constexpr Needs kOneNode{.same_node = true, .segment = true};
constexpr Needs kOneNodeCommutative{
    .commutative_op = true, .same_node = true, .segment = true, .element_in_slot = true};
constexpr Needs kOneNodeElement{.same_node = true, .segment = true, .element_in_slot = true};
constexpr Needs kSingleCopy{.same_node = true, .segment = true, .single_copy = true};
constexpr Needs kTopology{.topology = true};
constexpr Needs kTopologyCommutative{.commutative_op = true, .topology = true};
constexpr Needs kEqualNodesCommutative{.commutative_op = true, .topology = true, .equal_nodes = true};

constexpr Reads kSegmented{.segment_size = true};
constexpr Reads kPatBuffer{.pat_buffer = true};
constexpr Reads kLeaders{.leaders = true};
constexpr Reads kLeadersSegmented{.segment_size = true, .leaders = true};
constexpr Reads kRadix{.radix = true};
constexpr Reads kRequests{.max_requests = true};

// S is the collective's message size: the vector for allreduce/reduce/bcast, the whole
// gathered (or scattered) vector for allgather and reduce_scatter, one block for alltoall.
// lg P means floor(lg P). "Off powers of two" the r = P - 2^floor(lg P) extra ranks fold
// into partners first (sending S) and get the result back last; byte counts are for the
// other ranks.
//
// One array per collective, in the order selection and tools list them. reduce_scatter and
// reduce_scatter_block run the same schedules, as do allgather and allgatherv: each such
// family is written once and listed for both collectives (for_collective below).

constexpr std::array kAllreduce = {
    Algorithm{"ring", Collective::allreduce, "ring reduce-scatter then ring allgather", "2(P-1) steps; 2(P-1)/P S",
              kCommutative, AllreduceFn{&ring_allreduce}},
    Algorithm{"ring_pipelined", Collective::allreduce, "ring with segmented blocks: reduction overlaps transfer",
              "2(P-1) m steps, m segments per block; 2(P-1)/P S", kCommutative, AllreduceFn{&ring_pipelined_allreduce},
              kSegmented},
    Algorithm{"halving_doubling", Collective::allreduce,
              "recursive-halving reduce-scatter then recursive-doubling allgather (Rabenseifner)",
              "2 lg P steps (+2 off powers of two); 2(P-1)/P S", kCommutative,
              AllreduceFn{&halving_doubling_allreduce}},
    Algorithm{"recursive_doubling", Collective::allreduce,
              "full-vector exchange at distance 1, 2, 4, ...; order-preserving",
              "lg P steps (+2 off powers of two); S lg P", kAny, AllreduceFn{&recursive_doubling_allreduce}},
    Algorithm{"pat", Collective::allreduce, "PAT reduce-scatter then PAT allgather (Parallel Aggregated Trees)",
              "2 (lg A + D-1) messages, A = blocks per message (buffer-bound), D = 2^ceil(lg P)/A; 2(P-1)/P S",
              kCommutative, AllreduceFn{&pat_allreduce}, kPatBuffer},
    Algorithm{"binomial", Collective::allreduce, "binomial reduce to rank 0 then binomial bcast; order-preserving",
              "2 ceil(lg P) steps; rank 0 sends (and receives) up to S ceil(lg P)", kAny,
              AllreduceFn{&binomial_allreduce}},
    Algorithm{"shm", Collective::allreduce, "shared memory: copy in, each rank reduces a slice, copy out",
              "2 syncs per 32 KiB chunk; S copied in and out, S/P reduced per rank", kOneNodeCommutative,
              AllreduceFn{&shm_allreduce}},
    Algorithm{"cma", Collective::allreduce,
              "single copy (CMA): each rank reduces its slice read straight from the others, then reads theirs",
              "3 syncs; (P-1)/P S read and reduced, (P-1)/P S read per rank", kSingleCopy, AllreduceFn{&cma_allreduce}},
    Algorithm{"hierarchical", Collective::allreduce,
              "reduce in each node, allreduce among node leaders, bcast in each node",
              "intra-node shm phases + the leaders' algorithm on N nodes (S lg N by default)", kTopologyCommutative,
              AllreduceFn{&hierarchical_allreduce}, kLeaders, "recursive_doubling"},
    Algorithm{"hierarchical_rs", Collective::allreduce,
              "reduce-scatter in each node, allreduce of each slice across nodes, allgather in each node",
              "intra-node 2(L-1)/L S (ring) + L lanes of the leaders' algorithm on N ranks with S/L each",
              kEqualNodesCommutative, AllreduceFn{&hierarchical_rs_allreduce}, kLeaders, "recursive_doubling"},
    Algorithm{"hierarchical_seg", Collective::allreduce,
              "hierarchical in segments: a node reduces and bcasts segments while its leader exchanges another",
              "per segment of s bytes: the leaders' algorithm on N nodes + intra-node shm phases, overlapped",
              kTopologyCommutative, AllreduceFn{&hierarchical_seg_allreduce}, kLeadersSegmented, "recursive_doubling"},
    Algorithm{"knomial", Collective::allreduce,
              "recursive k-ing: whole vectors exchanged in groups of k ranks, one base-k digit a step",
              "floor(log_k P) steps (+2 off powers of k); (k-1) S sent and reduced per step", kCommutative,
              AllreduceFn{&knomial_allreduce}, kRadix},
    Algorithm{"bcube", Collective::allreduce,
              "BCube (gloo): reduce-scatter then allgather over a base-B grid, one digit a step, B ranks a group",
              "2 log_B P steps of B-1 messages at P = B^d (other P: 2 per factor <= B, +2 if a prime factor > B); "
              "2(P-1)/P S",
              kCommutative, AllreduceFn{&bcube_allreduce}, kRadix},
};

// reduce_scatter, and the first algorithms of reduce_scatter_block.
constexpr std::array kReduceScatter = {
    Algorithm{"ring", Collective::reduce_scatter, "ring reduce-scatter", "P-1 steps; (P-1)/P S", kCommutative,
              ReduceScatterFn{&ring_reduce_scatter}},
    Algorithm{"halving_doubling", Collective::reduce_scatter, "recursive vector halving, blocks in rank order",
              "lg P steps (+2 off powers of two); (P-1)/P S", kCommutative,
              ReduceScatterFn{&halving_doubling_reduce_scatter}},
    Algorithm{"pat", Collective::reduce_scatter, "PAT: near first, aggregated trees, bounded buffer",
              "lg A + D-1 messages (A blocks per message, D = 2^ceil(lg P)/A); (P-1)/P S", kCommutative,
              ReduceScatterFn{&pat_reduce_scatter}, kPatBuffer},
    Algorithm{"cma", Collective::reduce_scatter, "single copy (CMA): each rank reduces its block read from the others",
              "2 syncs; (P-1)/P S read and reduced per rank", kSingleCopy, ReduceScatterFn{&cma_reduce_scatter}},
    Algorithm{"hierarchical", Collective::reduce_scatter,
              "reduce in each node to its leader, reduce-scatter of node parts among leaders, bcast of the part in each node",
              "intra-node shm reduce of S + the leaders' algorithm on N nodes + a shm bcast of the node's part", kTopologyCommutative,
              ReduceScatterFn{&hierarchical_reduce_scatter}, kLeaders, "ring"},
    Algorithm{"hierarchical_seg", Collective::reduce_scatter,
              "hierarchical in segments: a node reduces and bcasts segments while its leader exchanges another",
              "per segment (s bytes of each node part): the leaders' algorithm on N nodes + intra-node shm phases, overlapped",
              kTopologyCommutative, ReduceScatterFn{&hierarchical_seg_reduce_scatter}, kLeadersSegmented, "ring"},
};

// reduce_scatter_block only: the shared segment holds equal blocks, not reduce_scatter's counts.
constexpr std::array kReduceScatterBlockOnly = {
    Algorithm{"shm", Collective::reduce_scatter_block, "shared memory: copy the input in, each rank reduces its block",
              "1 sync per chunk; S copied in, S/P x P reduced per rank", kOneNodeCommutative,
              ReduceScatterFn{&shm_reduce_scatter_block}},
};

// allgather, and allgatherv alike.
constexpr std::array kAllgather = {
    Algorithm{"ring", Collective::allgather, "ring allgather", "P-1 steps; (P-1)/P S", kAny,
              AllgatherFn{&ring_allgather}},
    Algorithm{"recursive_doubling", Collective::allgather, "exchange doubling block ranges at distance 1, 2, 4, ...",
              "lg P steps (+2 off powers of two); (P-1)/P S", kAny, AllgatherFn{&recursive_doubling_allgather}},
    Algorithm{"bruck", Collective::allgather, "Bruck: ceil(lg P) steps for any P, then a local rotation",
              "ceil(lg P) steps; (P-1)/P S", kAny, AllgatherFn{&bruck_allgather}},
    Algorithm{"pat", Collective::allgather, "PAT: far first, aggregated trees, bounded buffer",
              "lg A + D-1 messages (A blocks per message, D = 2^ceil(lg P)/A); (P-1)/P S", kAny,
              AllgatherFn{&pat_allgather}, kPatBuffer},
    Algorithm{"shm", Collective::allgather, "shared memory: each copies its block in, everyone copies all out",
              "1 sync per chunk; own block in, S out per rank", kOneNode, AllgatherFn{&shm_allgather}},
    Algorithm{"cma", Collective::allgather, "single copy (CMA): each rank reads the others' blocks",
              "2 syncs; (P-1)/P S read per rank", kSingleCopy, AllgatherFn{&cma_allgather}},
    Algorithm{"hierarchical", Collective::allgather,
              "allgather in each node, node parts among leaders, bcast in each node",
              "intra-node shm phases + the leaders' algorithm on N nodes ((N-1)/N S by default)", kTopology,
              AllgatherFn{&hierarchical_allgather}, kLeaders, "ring"},
    Algorithm{"hierarchical_seg", Collective::allgather,
              "hierarchical with the leaders' exchange and the node bcast in segments, overlapped",
              "intra-node shm allgather + per segment (s bytes of each node part) the leaders' algorithm on N nodes "
              "and a shm bcast, overlapped",
              kTopology, AllgatherFn{&hierarchical_seg_allgather}, kLeadersSegmented, "ring"},
};

constexpr std::array kBcast = {
    Algorithm{"binomial", Collective::bcast, "binomial tree from the root, optionally segmented",
              "ceil(lg P) + m-1 steps for m segments; S per edge", kAny, BcastFn{&binomial_bcast}, kSegmented},
    Algorithm{"scatter_allgather", Collective::bcast, "binomial scatter then ring allgather (van de Geijn)",
              "ceil(lg P) + P-1 steps; about 2 S at the root", kAny, BcastFn{&scatter_allgather_bcast}},
    Algorithm{"shm", Collective::bcast, "shared memory: the root copies in, everyone copies out",
              "1 sync per 32 KiB chunk; S in at the root, S out elsewhere", kOneNode, BcastFn{&shm_bcast}},
    Algorithm{"cma", Collective::bcast, "single copy (CMA): every rank reads the root's buffer",
              "2 syncs; S read per non-root", kSingleCopy, BcastFn{&cma_bcast}},
    Algorithm{"hierarchical", Collective::bcast,
              "bcast among node heads (the root's node: the root), then in each node",
              "the leaders' algorithm on N nodes (ceil(lg N) steps by default) + an intra-node shm bcast", kTopology,
              BcastFn{&hierarchical_bcast}, kLeaders, "binomial"},
    Algorithm{"hierarchical_seg", Collective::bcast,
              "hierarchical in segments: a node passes one segment on while the heads bcast the next",
              "per segment of s bytes: the leaders' algorithm on N nodes + an intra-node shm bcast, overlapped", kTopology,
              BcastFn{&hierarchical_seg_bcast}, kLeadersSegmented, "binomial"},
    Algorithm{"knomial", Collective::bcast, "k-nomial tree from the root: up to k-1 children a level",
              "ceil(log_k P) steps; up to (k-1) S sent per level", kAny, BcastFn{&knomial_bcast}, kRadix},
};

constexpr std::array kReduce = {
    Algorithm{"binomial", Collective::reduce, "binomial tree to the root; order-preserving",
              "ceil(lg P) steps; S per edge", kAny, ReduceFn{&binomial_reduce}},
    Algorithm{"halving_doubling", Collective::reduce, "recursive-halving reduce-scatter then gather to the root",
              "2 lg P steps (+1 off powers of two); about 2 S", kCommutative, ReduceFn{&halving_doubling_reduce}},
    Algorithm{"shm", Collective::reduce, "shared memory: copy in, each rank reduces a slice, the root copies out",
              "2 syncs per 32 KiB chunk; S in, S/P reduced per rank", kOneNodeCommutative, ReduceFn{&shm_reduce}},
    Algorithm{"cma", Collective::reduce,
              "single copy (CMA): each rank reduces its slice read from the others, the root reads the slices",
              "2 syncs; (P-1)/P S read and reduced per rank, (P-1)/P S more read at the root", kSingleCopy,
              ReduceFn{&cma_reduce}},
    Algorithm{"hierarchical", Collective::reduce, "reduce in each node to its head, then among heads to the root",
              "an intra-node shm reduce + the leaders' algorithm on N nodes (ceil(lg N) steps by default)",
              kTopologyCommutative, ReduceFn{&hierarchical_reduce}, kLeaders, "binomial"},
    Algorithm{"knomial", Collective::reduce, "k-nomial tree to the root, parts combined in rank order; order-preserving",
              "ceil(log_k P) steps; up to (k-1) S received and reduced per level", kAny, ReduceFn{&knomial_reduce},
              kRadix},
};

constexpr std::array kBarrier = {
    Algorithm{"bruck", Collective::barrier, "dissemination: to rank + 2^k, from rank - 2^k",
              "ceil(lg P) steps; no data", kAny, BarrierFn{&bruck_barrier}},
    Algorithm{"recursive_doubling", Collective::barrier, "pairwise exchange at distance 1, 2, 4, ...",
              "lg P steps (+2 off powers of two); no data", kAny, BarrierFn{&recursive_doubling_barrier}},
    Algorithm{"shm", Collective::barrier, "shared memory: one flag per rank", "1 sync; no data", kOneNode,
              BarrierFn{&shm_barrier}},
    Algorithm{"knomial", Collective::barrier, "empty k-nomial fan-in to rank 0, then fan-out",
              "2 ceil(log_k P) steps; no data", kAny, BarrierFn{&knomial_barrier}, kRadix},
};

constexpr std::array kAlltoall = {
    Algorithm{"bruck", Collective::alltoall, "Bruck: ceil(lg P) steps of packed blocks, then rotations",
              "ceil(lg P) steps; about S P/2 lg P", kAny, AlltoallFn{&bruck_alltoall}},
    Algorithm{"pairwise", Collective::alltoall, "P-1 steps, step k exchanging with rank +- k", "P-1 steps; (P-1) S",
              kAny, AlltoallFn{&pairwise_alltoall}},
    Algorithm{"cma", Collective::alltoall, "single copy (CMA): each rank reads its block from every other",
              "2 syncs; (P-1) S read per rank", kSingleCopy, AlltoallFn{&cma_alltoall}},
    Algorithm{"shm", Collective::alltoall, "shared memory: each copies its blocks in, each copies its own out",
              "1 sync per chunk of 32 KiB / P of each block; (P-1) S in and out per rank", kOneNode,
              AlltoallFn{&shm_alltoall}},
};

constexpr std::array kScan = {
    Algorithm{"linear", Collective::scan,
              "the prefix passed rank to rank in segments, each combining its own after it; order-preserving",
              "P-1 + m-1 steps of a segment (m segments); S sent and S reduced per rank", kAny, ScanFn{&linear_scan},
              kSegmented},
    Algorithm{"recursive_doubling", Collective::scan,
              "partials of aligned blocks exchanged at distance 1, 2, 4, ...; order-preserving",
              "ceil(lg P) steps; S lg P sent, up to 2 S lg P reduced per rank", kAny,
              ScanFn{&recursive_doubling_scan}},
    Algorithm{"shm", Collective::scan,
              "shared memory: each copies its vector in, each rank folds the slots of the ranks below it; "
              "order-preserving",
              "1 publish per chunk, rank r waits for ranks below; S in, r S reduced at rank r", kOneNodeElement,
              ScanFn{&shm_scan}},
};

constexpr std::array kGather = {
    Algorithm{"linear", Collective::gather, "every rank sends its block to the root, which takes them all at once",
              "1 step; the root receives P-1 messages, S - its block", kAny, AllgatherFn{&linear_gather}},
    Algorithm{"binomial", Collective::gather, "binomial tree to the root, each rank forwarding its subtree's blocks",
              "ceil(lg P) steps; a rank sends its subtree's blocks once", kAny, AllgatherFn{&binomial_gather}},
    Algorithm{"knomial", Collective::gather, "k-nomial tree to the root, up to k-1 subtrees a level",
              "ceil(log_k P) steps; a rank sends its subtree's blocks once", kAny, AllgatherFn{&knomial_gather},
              kRadix},
    Algorithm{"cma", Collective::gather, "single copy (CMA): the root reads every rank's block from its buffer",
              "2 syncs; the root reads S - its block", kSingleCopy, AllgatherFn{&cma_gather}},
    Algorithm{"shm", Collective::gather,
              "shared memory: each copies its block into a small slot, the root copies them out; larger blocks by "
              "message",
              "1 publish per rank, the root waits for each; S - its block copied in and out (blocks over 4 KiB: a "
              "message)",
              kOneNode, AllgatherFn{&shm_gather}},
};

constexpr std::array kScatter = {
    Algorithm{"linear", Collective::scatter, "the root sends every rank its block at once",
              "1 step; the root sends P-1 messages, S - its block", kAny, ScatterFn{&linear_scatter}},
    Algorithm{"binomial", Collective::scatter, "binomial tree from the root, each rank forwarding its subtree's blocks",
              "ceil(lg P) steps; a rank receives its subtree's blocks once", kAny, ScatterFn{&binomial_scatter}},
    Algorithm{"knomial", Collective::scatter, "k-nomial tree from the root, up to k-1 subtrees a level",
              "ceil(log_k P) steps; a rank receives its subtree's blocks once", kAny, ScatterFn{&knomial_scatter},
              kRadix},
    Algorithm{"cma", Collective::scatter, "single copy (CMA): each rank reads its block from the root's buffer",
              "2 syncs; each rank reads its block", kSingleCopy, ScatterFn{&cma_scatter}},
    Algorithm{"shm", Collective::scatter,
              "shared memory: the root copies each block into its rank's small slot, each copies its own out; "
              "larger blocks by message",
              "1 publish per rank, each waits for the root; S - its block copied in and out (blocks over 4 KiB: a "
              "message)",
              kOneNode, ScatterFn{&shm_scatter}},
};

// alltoallv and alltoallw: the glue packs alltoallw's per-peer datatypes into the same bytes.
constexpr std::array kAlltoallv = {
    Algorithm{"pairwise", Collective::alltoallv, "P-1 shift steps, one message each way per step",
              "P-1 steps; a rank's own sends", kAny, AlltoallvFn{&pairwise_alltoallv}},
    Algorithm{"linear", Collective::alltoallv,
              "every send and receive posted, at most coll_loom_alltoallv_max_requests each way at once",
              "ceil((P-1)/W) rounds; a rank's own sends", kAny, AlltoallvFn{&linear_alltoallv}, kRequests},
    Algorithm{"cma", Collective::alltoallv, "single copy (CMA): each rank reads its block from each peer's buffer",
              "2 syncs; a rank reads its own receives, plus an 8-byte offset per peer", kSingleCopy,
              AlltoallvFn{&cma_alltoallv}},
    Algorithm{"shm", Collective::alltoallv,
              "shared memory: each copies its blocks into its slot, each copies its own out; larger blocks by "
              "message",
              "1 publish per rank, each waits for its senders; blocks up to 32 KiB / P copied in and out, larger "
              "ones a message",
              kOneNode, AlltoallvFn{&shm_alltoallv}},
};

constexpr std::array kExscan = {
    Algorithm{"linear", Collective::exscan,
              "the prefix passed rank to rank in segments, each keeping it and passing it on with its own after it; "
              "order-preserving",
              "P-1 + m-1 steps of a segment (m segments); S sent and S reduced per rank", kAny,
              ScanFn{&linear_exscan}, kSegmented},
    Algorithm{"recursive_doubling", Collective::exscan,
              "partials of aligned blocks exchanged at distance 1, 2, 4, ...; order-preserving",
              "ceil(lg P) steps; S lg P sent, up to 2 S lg P reduced per rank", kAny,
              ScanFn{&recursive_doubling_exscan}},
    Algorithm{"shm", Collective::exscan,
              "shared memory: each copies its vector in, each rank folds the slots of the ranks below it; "
              "order-preserving",
              "1 publish per chunk, rank r waits for ranks below; S in, (r-1) S reduced at rank r", kOneNodeElement,
              ScanFn{&shm_exscan}},
};

// The neighbourhood collectives: one schedule for all five (NeighbourArgs), listed for each.
constexpr std::array kNeighbour = {
    Algorithm{"linear", Collective::neighbor_allgather,
              "every neighbour's receive and send posted at once (Open MPI's basic and libnbc do the same)",
              "1 round; indegree receives, outdegree sends; a rank's own send and receive blocks", kAny,
              NeighbourFn{&linear_neighbour}},
    Algorithm{"shm", Collective::neighbor_allgather,
              "shared memory: each rank writes what it sends once, with a table of where each neighbour's "
              "blocks start; its neighbours copy theirs out",
              "1 + ceil((M-F)/C) chunks, M the longest rank's bytes, F about 4 KiB, C 4 or 32 KiB; chunk 0 waits "
              "for all, later ones for the sources; every byte copied in and out",
              kOneNode, NeighbourFn{&shm_neighbour}},
};

// neighbor_allgather and neighbor_alltoall only (one block size for every neighbour), on a
// graph or dist graph that every rank agreed is a stencil over a periodic grid (combining.hpp).
constexpr std::array kStencilNeighbour = {
    Algorithm{"combining", Collective::neighbor_allgather,
              "message combining on a stencil over a periodic 2-D or 3-D grid (Traff and Hunold): d phases, each "
              "sending every block that moves along one dimension in one message per direction",
              "2d messages (3^d-1 for linear on a full Moore stencil), d rounds; allgather: the bytes of linear on a Moore stencil; "
              "alltoall: sum over dimensions k of the offsets moving along k (Moore: 2x3^(d-1) blocks per phase)",
              Needs{.stencil = true}, NeighbourFn{&combining_neighbour}},
};

// A family's records for another collective that runs the same schedules.
template <std::size_t N>
constexpr std::array<Algorithm, N> for_collective(std::array<Algorithm, N> family, Collective c)
{
    for (Algorithm& a : family) a.collective = c;
    return family;
}

// The records of `names` in a family, in that order (a name it lacks: a compile-time error).
template <std::size_t N, class... Name>
constexpr std::array<Algorithm, sizeof...(Name)> named(const std::array<Algorithm, N>& family, Name... names)
{
    std::array<Algorithm, sizeof...(Name)> out{};
    std::size_t i = 0;
    for (std::string_view name : {std::string_view(names)...}) {
        const Algorithm* found = nullptr;
        for (const Algorithm& a : family)
            if (a.name == name) found = &a;
        if (found == nullptr) throw "named: no such algorithm in the family";
        out[i++] = *found;
    }
    return out;
}

template <std::size_t... N>
constexpr std::array<Algorithm, (N + ...)> concat(const std::array<Algorithm, N>&... parts)
{
    std::array<Algorithm, (N + ...)> all{};
    auto out = all.begin();
    ((out = std::copy(parts.begin(), parts.end(), out)), ...);
    return all;
}

constexpr auto kAlgorithms =
    concat(kAllreduce, kReduceScatter, for_collective(kReduceScatter, Collective::reduce_scatter_block),
           kReduceScatterBlockOnly, kAllgather, for_collective(kAllgather, Collective::allgatherv), kBcast, kReduce,
           kBarrier, kAlltoall, kScan, kExscan, kGather, kScatter,
           // gatherv and scatterv: only the root knows every count, so only the schedules that
           // read their own count away from the root (the trees forward others' blocks).
           for_collective(named(kGather, "linear", "cma", "shm"), Collective::gatherv),
           for_collective(named(kScatter, "linear", "cma", "shm"), Collective::scatterv), kAlltoallv,
           for_collective(kAlltoallv, Collective::alltoallw), kNeighbour, kStencilNeighbour,
           for_collective(kNeighbour, Collective::neighbor_allgatherv),
           for_collective(kNeighbour, Collective::neighbor_alltoall),
           for_collective(kStencilNeighbour, Collective::neighbor_alltoall),
           for_collective(kNeighbour, Collective::neighbor_alltoallv),
           for_collective(kNeighbour, Collective::neighbor_alltoallw));

// Each collective's algorithms are adjacent, in Collective's order, one name once each.
constexpr bool grouped_and_unique()
{
    for (std::size_t i = 0; i < kAlgorithms.size(); ++i) {
        if (i > 0 && int(kAlgorithms[i].collective) < int(kAlgorithms[i - 1].collective)) return false;
        for (std::size_t j = 0; j < i; ++j)
            if (kAlgorithms[j].collective == kAlgorithms[i].collective && kAlgorithms[j].name == kAlgorithms[i].name)
                return false;
    }
    return true;
}
static_assert(grouped_and_unique(),
              "each collective's algorithms listed together, in Collective's order, names unique");

// Every algorithm takes its collective's argument record (collectives.def's Args column).
constexpr bool take_their_rows_args()
{
    for (const Algorithm& a : kAlgorithms)
        if (a.run.index() != args_index(a.collective)) return false;
    return true;
}
static_assert(take_their_rows_args(), "an algorithm's function takes its collective's Args (collectives.def)");

} // namespace

std::span<const Algorithm> all_algorithms() { return kAlgorithms; }

const Algorithm* find_algorithm(Collective c, std::string_view name)
{
    for (const Algorithm& a : kAlgorithms)
        if (a.collective == c && a.name == name) return &a;
    return nullptr;
}

std::optional<std::string_view> why_not(const Algorithm& algo, const CallShape& call)
{
    if (algo.needs.commutative_op && !call.commutative) return "the op is not commutative";
    if (algo.needs.power_of_two && (call.comm_size & (call.comm_size - 1)) != 0)
        return "the communicator size is not a power of two";
    if (algo.needs.topology && call.nodes == 0)
        return "it needs to know which ranks share a node, and the nodes are unknown";
    if (algo.needs.equal_nodes &&
        (call.nodes == 0 || call.ranks_per_node == 0 || call.nodes * call.ranks_per_node != call.comm_size))
        return call.ranks_per_node == 0 ? "it needs every node to have the same number of ranks, and that is unknown"
                                        : "it needs every node to have the same number of ranks";
    if (algo.needs.same_node && call.nodes != 1)
        return call.nodes == 0 ? "it needs every rank on one node, and the nodes are unknown"
                               : "it needs every rank on one node";
    if (algo.needs.element_in_slot) {
        const std::size_t per_slot =
            call.element_bytes *
            (algo.collective == Collective::reduce_scatter_block ? std::size_t(call.comm_size) : 1);
        if (per_slot > ShmComm::kSlotBytes)
            return "an element (one per rank for reduce_scatter_block) is larger than a 32 KiB slot";
    }
    if (algo.needs.stencil && !call.stencil) return kNoStencil;
    if (algo.needs.segment && !call.segment) return kNoSegment;
    if (algo.needs.single_copy && !call.single_copy) return kNoSingleCopy;
    return std::nullopt;
}

} // namespace loom
