// Pieces the hierarchical families share (hierarchical.cpp, hierarchical_segmented.cpp): the
// node layout, the heads of a rooted call, the leaders' phase and the intra-node phases.
#pragma once

#include "collectives.hpp"
#include "registry.hpp"
#include "topology.hpp"

#include <span>
#include <stdexcept>
#include <variant>
#include <vector>

namespace loom {

class ShmComm;

// The transport's Layout; an internal error where there is none (Needs::topology).
const topo::Layout& layout_of(const Transport& net);

// The rank that stands for each node in the inter-node phase: the root on the root's node,
// the leader elsewhere. Indexed by node.
std::vector<int> heads(const topo::Layout& layout, int root);

// The inter-node phase runs the flat algorithm the chooser picked for the leaders
// (AllreduceArgs::leaders and friends); hierarchical never picks one itself.
template <class Fn, class Args>
void run_leaders(const Algorithm* chosen, Transport& net, MemoryOps& mem, const Args& args)
{
    if (chosen == nullptr || !std::holds_alternative<Fn>(chosen->run))
        throw std::logic_error("hierarchical algorithm without its leaders' algorithm (decide() sets it)");
    std::get<Fn>(chosen->run)(net, mem, args);
}

// The intra-node phases: the shm family over the node's segment (the transport's
// node_shared_state() slot), or, where the node has none (no slot, a rank could not map it,
// an element larger than a slot), messages: binomial trees for reduce and bcast, Bruck for
// allgather. This is hierarchical's own schedule, decided alike on every rank of a node;
// whichever runs, the call is served by "hierarchical".
void node_reduce(Transport& node, MemoryOps& mem, const ReduceArgs& args);
void node_bcast(Transport& node, MemoryOps& mem, const BcastArgs& args);
void node_allgather(Transport& node, MemoryOps& mem, const AllgatherArgs& args);
// Blocks in node order (allgather's and reduce_scatter's node parts): node j's part holds its
// ranks' blocks in rank order, parts in node order. `sizes` are per rank (bytes or elements).
struct NodeOrder {
    NodeOrder(const topo::Layout& layout, std::span<const std::size_t> sizes);
    std::vector<std::size_t> part; // node j's part, summed over its ranks
    bool rank_order = true;        // node order is rank order: each node's ranks consecutive, nodes ascending
};
// Copies a gathered result from node order (`all`) into rank order (`out`).
void node_order_to_rank_order(MemoryOps& mem, const topo::Layout& layout, const BlockOffsets& blocks,
                              const std::byte* all, std::byte* out);

// An allgather's result as both hierarchical allgathers build it: in node order (node 0's
// blocks in rank order, node 1's, ...), in the result buffer where that is rank order, else in
// scratch (`all`), copied into rank order by to_rank_order() at the end.
struct NodeOrderedResult {
    NodeOrderedResult(const topo::Layout& layout, MemoryOps& mem, const AllgatherArgs& args, int rank);
    bool empty() const { return parts.total() == 0; }
    // Step 1 of both: the node's blocks, gathered into the node's part on every rank of `node`
    // (the node's ranks), or this rank's block copied there where it is alone.
    void gather_node_part(Transport& node, MemoryOps& mem) const;
    void to_rank_order(MemoryOps& mem) const;

    const topo::Layout& layout;
    const int rank;
    const BlockOffsets blocks; // rank order
    const NodeOrder order;     // order.part: node j's part; order.rank_order
    const BlockOffsets parts;  // node order
    std::byte* const out;
    const std::byte* const own;
    const bool own_in_place; // this rank's block is already at its place in `all`
    Scratch gathered = no_scratch();
    std::byte* all;
};

// Whether node_reduce (elem_size > 0) or node_bcast/node_allgather (elem_size 0) on `node`
// run on shared memory, sending no messages. May set the node's segment up (messages): call
// it where nothing else is posted.
bool node_uses_shm(Transport& node, std::size_t elem_size);

} // namespace loom
