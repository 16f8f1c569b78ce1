// The C entry points of loom's core (declared in loom_c_api.h). They adapt the glue's C
// callbacks to the C++ interfaces, run the algorithm loom_choose chose (the registry's
// function, with the argument record of its collective), and turn every C++ exception into
// an error code: no exception ever crosses into Open MPI.
#include "loom_c_api.h"

#include "callback_transport.hpp"
#include "combining.hpp"
#include "guarded.hpp"
#include "layouts.hpp"
#include "reduce_kernels.hpp"
#include "registry.hpp"
#include "shm.hpp"
#include "staging.hpp"
#include "topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <memory>
#include <new>

namespace loom {
namespace {

Reduction to_reduction(const loom_reduction_t& r)
{
    return Reduction{r.elem_size, r.commutative != 0, r.fn, r.ctx, r.fn3};
}

} // namespace
} // namespace loom

using namespace loom;

extern "C" void loom_shm_release(void* state) { shm_release(state); }
extern "C" void loom_shm_pool_limit(std::size_t segments) { SegmentPool::instance().set_limit(segments); }
extern "C" void loom_shm_pool_drain(void) { SegmentPool::instance().drain(); }
extern "C" std::size_t loom_shm_segment_bytes(int comm_size) { return ShmComm::segment_bytes(comm_size); }

extern "C" int loom_shm_setup(const loom_transport_t* transport, int single_copy, int refuse)
{
    int ready = 0;
    const int rc = guarded([&] {
        CallbackTransport net(*transport);
        if (shm_setup(net, single_copy_from(single_copy), refuse != 0))
            ready = loom_shm_verdict(*transport->shared_state);
    });
    return rc != LOOM_SUCCESS ? rc : ready;
}

extern "C" int loom_shm_verdict(void* state)
{
    const ShmComm* shm = state != nullptr ? shm_state_comm(state) : nullptr;
    if (shm == nullptr) return 0;
    return LOOM_SHM_SEGMENT | (shm->single_copy() ? LOOM_SHM_SINGLE_COPY : 0) |
           (shm->peer_map() != nullptr ? LOOM_SHM_MAPPED : 0);
}

extern "C" void loom_shm_refuse(int refuse) { shm_refuse_segments(refuse != 0); }

extern "C" int loom_shm_begin_setup(void** shared_state, uint64_t* turn)
{
    return guarded([&] { *turn = shm_begin_setup(shared_state); });
}

extern "C" const char* loom_call_as_stand_in(loom_call_t* call)
{
    const loom_stand_in_t& instead = call->stand_in;
    call->chosen = instead.algorithm;
    call->leaders = instead.leaders;
    call->segment_bytes = instead.segment_bytes;
    call->buffer_bytes = instead.buffer_bytes;
    call->radix = instead.radix;
    call->max_requests = instead.max_requests;
    return instead.algorithm != nullptr ? static_cast<const Algorithm*>(instead.algorithm)->name.data() : nullptr;
}

extern "C" int loom_chosen_uses_segment(const loom_call_t* call)
{
    return call->chosen != nullptr && static_cast<const Algorithm*>(call->chosen)->needs.segment ? 1 : 0;
}

extern "C" uint64_t loom_shm_take_turn(void* const* shared_state) { return shm_state_turns(*shared_state).take(); }

extern "C" void loom_shm_abandon_turn(void* const* shared_state, uint64_t turn)
{
    shm_state_turns(*shared_state).abandon(turn);
}

extern "C" int loom_find_kernel(loom_op_t op, loom_type_t type, loom_reduction_t* out)
{
    auto k = find_kernel(op, type);
    if (!k) return 0;
    *out = loom_reduction_t{k->elem_size, k->commutative ? 1 : 0, k->fn, k->ctx, k->fn3};
    return 1;
}

namespace loom {
namespace {

Collective collective_of(const loom_call_t& call) { return static_cast<Collective>(call.coll); }

static_assert(int(TopologyKind::cartesian) == LOOM_TOPO_CARTESIAN && int(TopologyKind::graph) == LOOM_TOPO_GRAPH &&
                  int(TopologyKind::dist_graph) == LOOM_TOPO_DIST_GRAPH && kNoNeighbour == LOOM_NO_NEIGHBOUR,
              "loom_c_api.h's topology values are neighbourhood.hpp's");

// Whether every rank of the call's communicator has the same pair of block sizes: a Cartesian
// grid, or an agreed stencil of one block size (combining.hpp, Stencil::one_size).
bool one_block_pair(const loom_neighbourhood_t& n)
{
    return n.kind == LOOM_TOPO_CARTESIAN ||
           (n.stencil != nullptr && static_cast<const Stencil*>(n.stencil)->one_size);
}

// The call's block sizes (loom_c_api.h: the send side's, then one per source): the smallest and
// the largest.
std::pair<std::size_t, std::size_t> block_range(const loom_call_t& call, const loom_neighbourhood_t& n)
{
    const bool same_block = layout(collective_of(call)) == Layout::neighbour_gathered;
    const auto entries = std::size_t(same_block ? 1 : n.outdegree) + std::size_t(n.indegree);
    const auto [lo, hi] = std::minmax_element(call.counts, call.counts + entries);
    return {*lo, *hi};
}

// The uniform neighbourhood collectives' agreed size (message_bytes): the largest of the call's
// block sizes where every rank holds the same pair of them (one_block_pair), else 0.
std::size_t agreed_neighbour_block(const loom_call_t& call)
{
    const loom_neighbourhood_t* n = call.neighbours;
    if (n == nullptr || call.counts == nullptr || !one_block_pair(*n)) return 0;
    return block_range(call, *n).second;
}
} // namespace

bool combinable(const loom_call_t& call)
{
    // The glue sets a neighbourhood's stencil only on a graph or dist graph every rank agreed on.
    const loom_neighbourhood_t* n = call.neighbours;
    const auto* stencil = n != nullptr ? static_cast<const Stencil*>(n->stencil) : nullptr;
    if (stencil == nullptr || !stencil->one_size || !uniform_neighbour_blocks(collective_of(call)) ||
        call.counts == nullptr)
        return false;
    const auto [lo, hi] = block_range(call, *n);
    return lo == hi;
}

// The one definition of "message size", used for selection (and, with the rule table, by
// rules, tools and verbose output), by the collective's layout (collectives.def; its record in
// kLayouts, layouts.cpp), in bytes:
//   vector     the vector: count units (allreduce, reduce, scan, bcast)
//   split      the whole input vector: sum(counts) units (reduce_scatter)
//   gathered   the whole gathered vector: sum(counts) units (allgather)
//   scattered  the whole scattered vector: sum(counts) units (scatter)
//   per_peer   one block: what each rank sends to each peer (alltoall)
//   per_peer_v 0 (alltoallv, alltoallw: below)
//   none       0 (barrier)
//   neighbour_gathered, per_neighbour  0 (the neighbourhood collectives: below)
// neighbor_allgather and neighbor_alltoall on a Cartesian communicator, or a graph or distributed
// graph every rank agreed is a stencil of one block size (combining.hpp): the larger of a send and
// a receive block (registry.hpp, uniform_neighbour_blocks); on other graphs, 0.
// A unit is an element of the op for a reduction, a byte otherwise. Where the counts differ from
// rank to rank (gatherv, scatterv: only the root knows them all; alltoallv, alltoallw) it is 0:
// the size must be one that every rank knows, so that every rank chooses alike, and their rules
// can choose by the communicator alone.
std::size_t message_bytes(const loom_call_t& call, int comm_size)
{
    const Collective c = collective_of(call);
    if (counts_differ_by_rank(c)) return uniform_neighbour_blocks(c) ? agreed_neighbour_block(call) : 0;
    const std::size_t unit = reduces(c) ? call.op.elem_size : 1;
    return layout_ops(layout(c)).message_units(call, comm_size) * unit;
}

namespace {

// Calls the algorithm with the argument record of its collective.
struct Dispatch {
    Transport& net;
    MemoryOps& mem;
    const loom_call_t& call;

    std::span<const std::size_t> counts() const { return {call.counts, std::size_t(net.size())}; }
    const Algorithm* leaders() const { return static_cast<const Algorithm*>(call.leaders); }
    void operator()(AllreduceFn f) const
    {
        f(net, mem,
          AllreduceArgs{call.sbuf, call.rbuf, call.count, to_reduction(call.op), call.segment_bytes, call.buffer_bytes,
                        leaders(), call.radix});
    }
    void operator()(ReduceScatterFn f) const
    {
        f(net, mem,
          ReduceScatterArgs{call.sbuf, call.rbuf, counts(), to_reduction(call.op), call.buffer_bytes, leaders(),
                            call.segment_bytes});
    }
    void operator()(AllgatherFn f) const
    {
        f(net, mem,
          AllgatherArgs{call.sbuf, call.rbuf, counts(), call.buffer_bytes, leaders(),
                        rooted(collective_of(call)) ? call.root : -1, call.radix, call.segment_bytes});
    }
    void operator()(BcastFn f) const
    {
        f(net, mem, BcastArgs{call.rbuf, call.count, call.root, call.segment_bytes, leaders(), call.radix});
    }
    void operator()(ReduceFn f) const
    {
        f(net, mem, ReduceArgs{call.sbuf, call.rbuf, call.count, to_reduction(call.op), call.root, leaders(), call.radix});
    }
    void operator()(BarrierFn f) const { f(net, mem, BarrierArgs{call.radix}); }
    void operator()(AlltoallFn f) const { f(net, mem, AlltoallArgs{call.sbuf, call.rbuf, call.count}); }
    void operator()(ScanFn f) const
    {
        f(net, mem, ScanArgs{call.sbuf, call.rbuf, call.count, to_reduction(call.op), call.segment_bytes});
    }
    void operator()(ScatterFn f) const { f(net, mem, ScatterArgs{call.sbuf, call.rbuf, counts(), call.root, call.radix}); }
    void operator()(AlltoallvFn f) const
    {
        const std::size_t P = std::size_t(net.size());
        f(net, mem,
          AlltoallvArgs{call.sbuf, call.rbuf, {call.counts, P}, {call.counts + P, P}, call.max_requests});
    }
    // The neighbourhood layouts: the send side's counts (one for neighbour_gathered: the block
    // every destination gets), then the receive side's (loom_c_api.h).
    void operator()(NeighbourFn f) const
    {
        const loom_neighbourhood_t* n = call.neighbours;
        if (n == nullptr) throw std::invalid_argument("a neighbourhood collective without its neighbours");
        const auto in = std::size_t(n->indegree), out = std::size_t(n->outdegree);
        const bool same_block = layout(collective_of(call)) == Layout::neighbour_gathered;
        const std::size_t sends = same_block ? 1 : out;
        const auto ndims = std::size_t(n->kind == LOOM_TOPO_CARTESIAN ? n->ndims : 0);
        NeighbourArgs args{
            Neighbourhood{TopologyKind(n->kind), {n->sources, in}, {n->destinations, out}, {n->dims, ndims},
                          {n->periods, ndims}, static_cast<const Stencil*>(n->stencil)},
            call.sbuf, call.rbuf, {call.counts, sends}, {call.counts + sends, in}, same_block, call.max_requests};
        f(net, mem, args);
    }
};

} // namespace
} // namespace loom

extern "C" void loom_cartesian_neighbours(int ndims, const int* dims, const int* periods, int rank, int* out)
{
    const auto n = std::size_t(ndims);
    const std::vector<int> list = cartesian_neighbours({dims, n}, {periods, n}, rank);
    std::copy(list.begin(), list.end(), out);
}

extern "C" void* loom_stencil_detect(int comm_size, int rank, int indegree, const int* sources, int outdegree,
                                     const int* destinations, uint64_t* fingerprint)
{
    *fingerprint = 0;
    try {
        auto s = detect_stencil(comm_size, rank, {sources, std::size_t(std::max(indegree, 0))},
                                {destinations, std::size_t(std::max(outdegree, 0))});
        if (!s) return nullptr;
        auto* out = new Stencil(std::move(*s));
        *fingerprint = out->fingerprint;
        return out;
    } catch (...) {
        return nullptr;
    }
}

extern "C" void loom_stencil_free(void* stencil) { delete static_cast<Stencil*>(stencil); }

extern "C" std::size_t loom_message_bytes(const loom_call_t* call, int comm_size)
{
    return message_bytes(*call, comm_size);
}

extern "C" const char* loom_coll_name(loom_coll_t coll) { return to_string(static_cast<Collective>(coll)).data(); }

extern "C" int loom_algorithm_exists(loom_coll_t coll, const char* name)
{
    return name != nullptr && find_algorithm(static_cast<Collective>(coll), name) != nullptr;
}

extern "C" void loom_algorithm_names(loom_coll_t coll, char* buf, std::size_t size)
{
    std::string names;
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != static_cast<Collective>(coll)) continue;
        if (!names.empty()) names += ", ";
        names += a.name;
    }
    if (size == 0) return;
    const std::size_t n = std::min(names.size(), size - 1);
    names.copy(buf, n);
    buf[n] = '\0';
}

void loom::run_call(const Algorithm& algorithm, Transport& net, MemoryOps& mem, const loom_call_t& call)
{
    std::visit(Dispatch{net, mem, call}, algorithm.run);
}

extern "C" int loom_run(const char* algorithm, const loom_transport_t* transport, const loom_call_t* call)
{
    return guarded([&] {
        // loom_choose leaves the algorithm itself in the call: no lookup per call.
        const Collective c = collective_of(*call);
        const auto* algo = static_cast<const Algorithm*>(call->chosen);
        if (algo == nullptr || algo->name.data() != algorithm || algo->collective != c)
            algo = find_algorithm(c, algorithm);
        if (algo == nullptr) throw std::invalid_argument("unknown algorithm");
        CallbackTransport net(*transport);
        if (call->copier != nullptr) {
            // Buffers the network cannot read (device memory): staged through host buffers.
            run_staged(*algo, net, *static_cast<AsyncCopier*>(call->copier), *call);
            return;
        }
        HostMemory mem;
        run_call(*algo, net, mem, *call);
    });
}
