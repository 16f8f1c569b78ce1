// The registry: one record per algorithm, the single list that selection, verbose output and
// tools read. Nothing else in loom hard-codes which algorithms exist.
#pragma once

#include "collectives.hpp"
#include "loom_c_api.h"

#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>

namespace loom {

// The collectives, one per row of collectives.def (the C interface's loom_coll_t).
enum class Collective : int {
#define LOOM_COLLECTIVE(name, NAME, ...) name = LOOM_COLL_##NAME,
#include "collectives.def"
#undef LOOM_COLLECTIVE
};
inline constexpr int kCollectiveCount = LOOM_COLL_COUNT;

// Every collective, in the table's order: what tools and tests loop over.
inline constexpr std::array<Collective, kCollectiveCount> kAllCollectives = {
#define LOOM_COLLECTIVE(name, ...) Collective::name,
#include "collectives.def"
#undef LOOM_COLLECTIVE
};
constexpr std::span<const Collective> all_collectives() { return kAllCollectives; }

// The collective's name (rules, parameters, counters, tools).
constexpr std::string_view to_string(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, ...) \
    case Collective::name: return #name;
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return "?";
}

// Does the collective combine data with an op (and so have an op's commutativity)?
constexpr bool reduces(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    case Collective::name: return reduces;
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return false;
}

// What an algorithm needs of a call before it may serve it.
// What each rank's buffers hold (collectives.def's layout column).
enum class Layout : int {
    vector = LOOM_LAYOUT_vector,
    split = LOOM_LAYOUT_split,
    gathered = LOOM_LAYOUT_gathered,
    per_peer = LOOM_LAYOUT_per_peer,
    scattered = LOOM_LAYOUT_scattered,
    per_peer_v = LOOM_LAYOUT_per_peer_v,
    none = LOOM_LAYOUT_none,
    neighbour_gathered = LOOM_LAYOUT_neighbour_gathered,
    per_neighbour = LOOM_LAYOUT_per_neighbour,
};
inline constexpr int kLayoutCount = LOOM_LAYOUT_COUNT;

constexpr Layout layout(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    case Collective::name: return Layout::layout;
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return Layout::none;
}

constexpr bool rooted(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    case Collective::name: return rooted;
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return false;
}

// Which ranks get a result (collectives.def's result column, which says what each means).
enum class ResultRanks : int {
    all = LOOM_RESULT_all,
    root = LOOM_RESULT_root,
    not_first = LOOM_RESULT_not_first,
    none = LOOM_RESULT_none,
};

constexpr ResultRanks result_ranks(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    case Collective::name: return ResultRanks::result;
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return ResultRanks::none;
}

// Whether `rank`'s receive buffer gets a result of a call of c with this root.
constexpr bool has_result(Collective c, int rank, int root)
{
    switch (result_ranks(c)) {
    case ResultRanks::all: return true;
    case ResultRanks::root: return rank == root;
    case ResultRanks::not_first: return rank != 0;
    case ResultRanks::none: return false;
    }
    return false;
}

// How the call gives its counts (collectives.def's counts column).
enum class Counts : int {
    uniform = LOOM_COUNTS_uniform,
    per_rank = LOOM_COUNTS_per_rank,
    root_only = LOOM_COUNTS_root_only,
    per_peer = LOOM_COUNTS_per_peer,
    per_neighbour = LOOM_COUNTS_per_neighbour,
};

constexpr Counts counts(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    case Collective::name: return Counts::counts;
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return Counts::uniform;
}

// Whether the collective gives a count per rank or peer (reduce_scatter, allgatherv, gatherv,
// scatterv, alltoallv, alltoallw) rather than one for all.
constexpr bool per_rank_counts(Collective c) { return counts(c) != Counts::uniform; }

// Whether only the root knows every rank's count (gatherv, scatterv): the other ranks know their
// own. Their message size is then no rank's to choose by (message_bytes: 0), and an algorithm
// listed for them reads only its own count away from the root.
constexpr bool counts_at_root_only(Collective c) { return counts(c) == Counts::root_only; }

// Whether a call's counts may differ from rank to rank, so that no two ranks need agree on them
// (gatherv, scatterv: the root's and the others'; alltoallv, alltoallw: each rank's own). Such a
// call's message size is 0 (message_bytes) and its device buffers are not staged (staging cuts
// blocks into pieces by the counts, which every rank must then cut alike).
constexpr bool counts_differ_by_rank(Collective c)
{
    return counts(c) == Counts::root_only || counts(c) == Counts::per_peer || counts(c) == Counts::per_neighbour;
}

// The neighbourhood collectives with one block size for all neighbours (neighbor_allgather,
// neighbor_alltoall). MPI matches a rank's send block with each neighbour's receive block and
// the other way round, so over a connected topology every rank has the same pair of sizes, and
// a Cartesian grid is always connected: there the larger of the two is a message size every rank
// knows alike (message_bytes; rules may choose by it). So is a graph or distributed graph every
// rank agreed is a stencil whose neighbours are both sources and destinations and reach every
// rank (combining.hpp, Stencil::one_size). Other graphs may come in pieces that agree on nothing:
// 0 there, as for the v and w forms.
constexpr bool uniform_neighbour_blocks(Collective c)
{
    return c == Collective::neighbor_allgather || c == Collective::neighbor_alltoall;
}

struct Needs {
    bool commutative_op = false; // it reorders the reduction
    bool power_of_two = false;   // communicator size must be a power of two
    bool same_node = false;      // every rank on one node (shared memory)
    bool topology = false;       // the nodes must be known (hierarchical algorithms)
    bool equal_nodes = false;    // every node the same number of ranks (and known)
    bool segment = false;        // a shared-memory segment on the communicator (the shm family)
    // The data of one element (reductions: an element of the op; reduce_scatter_block: one
    // element for each rank) fits one 32 KiB slot of the segment (the shm reductions).
    bool element_in_slot = false;
    // Every rank may read the others' memory (CMA, probed when the segment is set up), and
    // the buffers are host memory (the single-copy family).
    bool single_copy = false;
    // The neighbourhood collectives: a graph or dist graph communicator whose every rank's lists
    // are one stencil over a periodic grid (combining.hpp, detect_stencil), agreed by all ranks,
    // of one block size, the blocks equal (combinable).
    bool stencil = false;

    bool operator==(const Needs&) const = default;
};

// The tuning options an algorithm reads (rule options and MCA parameters): tools, the tests'
// forced-algorithm loops and the docs take them from here.
struct Reads {
    bool segment_size = false; // coll_loom_segment_size, a rule's segment=
    bool pat_buffer = false;   // coll_loom_pat_buffer_size, a rule's buffer=
    bool leaders = false;      // a rule's leaders=: the flat algorithm the node leaders run
    bool radix = false;        // coll_loom_knomial_radix, a rule's radix=: a k-nomial tree's radix, bcube's base
    bool max_requests = false; // coll_loom_alltoallv_max_requests, a rule's requests=: linear alltoallv's window

    bool operator==(const Reads&) const = default;
};

// The facts about a call that every rank shares (so every rank decides alike).
struct CallShape {
    int comm_size;
    std::size_t bytes;             // the collective's message size (see message_bytes in entry.cpp)
    bool commutative;              // reductions; true otherwise
    int nodes = 0;                 // nodes the communicator spans; 0: unknown
    int ranks_per_node = 0;        // the most ranks on one node; 0: unknown
    bool segment = true;           // the communicator has a shared-memory segment (or may make one now)
    std::size_t element_bytes = 0; // reductions: bytes of one element of the op; 0 otherwise
    bool single_copy = true;       // the segment's ranks may read each other's memory, and the
                                   // buffers are host memory
    bool stencil = false;          // combinable (entry.cpp): an agreed stencil of one block size, blocks equal
};

using AllreduceFn = void (*)(Transport&, MemoryOps&, const AllreduceArgs&);
using ReduceScatterFn = void (*)(Transport&, MemoryOps&, const ReduceScatterArgs&);
using AllgatherFn = void (*)(Transport&, MemoryOps&, const AllgatherArgs&);
using BcastFn = void (*)(Transport&, MemoryOps&, const BcastArgs&);
using ReduceFn = void (*)(Transport&, MemoryOps&, const ReduceArgs&);
using BarrierFn = void (*)(Transport&, MemoryOps&, const BarrierArgs&);
using AlltoallFn = void (*)(Transport&, MemoryOps&, const AlltoallArgs&);
using ScanFn = void (*)(Transport&, MemoryOps&, const ScanArgs&);
using ScatterFn = void (*)(Transport&, MemoryOps&, const ScatterArgs&);
using AlltoallvFn = void (*)(Transport&, MemoryOps&, const AlltoallvArgs&);
using NeighbourFn = void (*)(Transport&, MemoryOps&, const NeighbourArgs&);
using Runner = std::variant<AllreduceFn, ReduceScatterFn, AllgatherFn, BcastFn, ReduceFn, BarrierFn, AlltoallFn, ScanFn,
                            ScatterFn, AlltoallvFn, NeighbourFn>;

// The argument record of c's algorithms (collectives.def's Args column): Runner's alternative for
// it. registry.cpp asserts that every algorithm listed for c takes it.
template <class Args>
using FnOf = void (*)(Transport&, MemoryOps&, const Args&);
template <class Fn, std::size_t I = 0>
constexpr std::size_t runner_index()
{
    if constexpr (std::is_same_v<std::variant_alternative_t<I, Runner>, Fn>)
        return I;
    else
        return runner_index<Fn, I + 1>();
}
constexpr std::size_t args_index(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    case Collective::name: return runner_index<FnOf<Args>>();
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return std::variant_size_v<Runner>;
}

struct Algorithm {
    std::string_view name; // user-facing, e.g. in coll_loom_allreduce_algorithm
    Collective collective;
    std::string_view summary; // one line for tools and docs
    std::string_view cost;    // steps and bytes sent per rank; P ranks, S the message size
    Needs needs;
    Runner run;
    Reads reads{};
    // Algorithms that read leaders: the flat algorithm of the same collective the node leaders
    // run when neither a rule's leaders= nor the rule table for one rank per node names one.
    std::string_view default_leaders{};
};

std::span<const Algorithm> all_algorithms();

const Algorithm* find_algorithm(Collective c, std::string_view name);

// why_not's answer for an algorithm that needs a shared-memory segment the communicator
// does not have.
inline constexpr std::string_view kNoSegment = "the communicator has no shared-memory segment";
inline constexpr std::string_view kNoSingleCopy =
    "single-copy transfers (XPMEM or CMA) are off: refused on this node, disabled by coll_loom_single_copy, or device buffers";

inline constexpr std::string_view kNoStencil =
    "the communicator is not a graph or dist graph that every rank agreed is a stencil over a periodic 2-D or 3-D grid "
    "whose neighbours are both sources and destinations and reach every rank, or its send and receive blocks differ";

// Why `algo` cannot serve a call of this shape, or nullopt if it can.
std::optional<std::string_view> why_not(const Algorithm& algo, const CallShape& call);

// The call's message size in bytes, by loom's one definition per collective (entry.cpp).
std::size_t message_bytes(const loom_call_t& call, int comm_size);

// Whether combining may serve the call (CallShape::stencil): neighbor_allgather or
// neighbor_alltoall on a graph or dist graph every rank agreed is a stencil of one block size
// (combining.hpp, Stencil::one_size), its send and receive blocks the same size - which is then
// the same on every rank (entry.cpp).
bool combinable(const loom_call_t& call);

// Runs `algorithm` on one call described as the glue describes it (entry.cpp): the same path
// production takes, for tools that run algorithms on other transports and memory.
void run_call(const Algorithm& algorithm, Transport& net, MemoryOps& mem, const loom_call_t& call);

} // namespace loom
