// The hierarchical family: a collective in phases on groups of ranks, so that the slow links
// between nodes carry each byte once per node instead of once per rank.
//
// Terms: P ranks on N nodes, L ranks on a node (nodes may differ), S the message size. The
// groups come from the transport's Layout (topology/topology.hpp): a node's ranks, and one
// rank per node. A node's leader is its lowest rank; for bcast and reduce the root stands in
// for its node's leader (the node's "head"), so the root's data never makes an extra hop.
//
// Intra-node phases run the shared-memory family (shm.cpp) on the node's ranks, over the
// transport's node_shared_state() slot, so on a real node they copy through one shared
// segment; where the node has no segment they send messages (binomial trees, Bruck): see
// node_reduce below. The inter-node phase runs the flat algorithm the chooser picked for the
// heads (AllreduceArgs::leaders and friends, set by decide(): a rule's leaders=NAME option,
// else the rule table's choice for a communicator of one rank per node, else the registry's
// default: recursive doubling for allreduce, a ring for allgather, a binomial tree for bcast
// and reduce). It is an error to call without it.
//
//   allreduce  1. reduce to the leader in the node   2. allreduce among leaders
//              3. bcast from the leader in the node
//   reduce     1. reduce to the head in the node     2. reduce among heads to the root
//   bcast      1. bcast from the root among heads    2. bcast from the head in the node
//   allgather  1. allgather(v) in the node, into the node's part of the result
//              2. allgatherv among leaders of whole node parts  3. bcast of all in the node
//
// hierarchical_rs (allreduce, every node with the same number L of ranks): every rank of a
// node carries a share of the traffic between nodes, not only the leader.
//   1. reduce-scatter in the node: local rank i gets the node's sum of slice i (of L)
//   2. allreduce of slice i among the ranks with local index i on every node (lane i)
//   3. allgather of the slices in the node
// Each byte crosses between nodes once per node as in `hierarchical`, but in L parallel
// lanes of S/L each, and no rank handles more than its slice between nodes; the intra-node
// phases are bandwidth-optimal (ring). Cost: intra-node 2(L-1)/L S per rank, the lanes'
// algorithm on N ranks with S/L bytes.
//
// Example, allreduce, P = 6 on N = 2 nodes {0,1,2} {3,4,5}:
//   phase          messages between nodes     messages inside nodes
//   1 reduce       -                          1,2 -> 0 and 4,5 -> 3 (or shared memory)
//   2 allreduce    0 <-> 3, S each way        -
//   3 bcast        -                          0 -> 1,2 and 3 -> 4,5
//
// Cost: the inter-node phase is the flat algorithm's cost on N ranks (e.g. S lg N for
// recursive doubling) instead of on P; the intra-node phases add about 2 S of copying per
// rank. allgather's result is gathered in node order: where a node's ranks are not
// consecutive (round-robin placement) it is assembled in scratch and copied into rank order,
// one more pass over S. Limits: allreduce and reduce need a commutative op (ranks are combined
// node by node); every rank gets bit-identical results (one reduction, then copies). The
// nodes must be known (Needs::topology); a transport without a Layout is an internal error.
#include "hierarchical.hpp"

#include "group_transport.hpp"
#include "hierarchical_phases.hpp"
#include "ring.hpp"
#include "topology.hpp"

#include <vector>

namespace loom {

void hierarchical_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    const int r = net.rank();
    const std::size_t bytes = args.count * args.op.elem_size;
    if (args.count == 0) return;
    GroupTransport node(net, layout.node_ranks(layout.node_of(r)), net.node_shared_state());
    const bool leader = node.rank() == 0;

    // 1. The node's sum arrives at its leader, in recvbuf.
    if (node.size() > 1) {
        const void* input = args.in_place() ? (leader ? nullptr : args.recvbuf) : args.sendbuf;
        node_reduce(node, mem, ReduceArgs{input, leader ? args.recvbuf : nullptr, args.count, args.op, 0});
    } else if (!args.in_place()) {
        mem.copy(args.recvbuf, args.sendbuf, bytes);
    }
    // 2. The leaders combine their nodes' sums.
    if (leader && layout.nodes() > 1) {
        GroupTransport leaders(net, layout.leaders());
        run_leaders<AllreduceFn>(
            args.leaders, leaders, mem,
            AllreduceArgs{nullptr, args.recvbuf, args.count, args.op, args.segment_bytes, args.buffer_bytes});
    }
    // 3. Every leader hands the result to its node.
    if (node.size() > 1) node_bcast(node, mem, BcastArgs{args.recvbuf, bytes, 0, args.segment_bytes});
}

void hierarchical_rs_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    if (layout.min_ranks_per_node() != layout.max_ranks_per_node())
        throw std::logic_error("hierarchical_rs needs the same number of ranks on every node");
    const int r = net.rank();
    const std::size_t es = args.op.elem_size;
    if (args.count == 0) return;
    const int L = layout.max_ranks_per_node();
    const int i = layout.local_index(r);
    const BlockPartition slices(args.count, L);
    auto* data = static_cast<std::byte*>(args.recvbuf);
    std::byte* mine = data + slices.begin(i) * es;
    GroupTransport node(net, layout.node_ranks(layout.node_of(r)), net.node_shared_state());

    // 1. The node's sum of slice i, at its place in recvbuf on local rank i.
    if (L > 1) {
        std::vector<std::size_t> counts(static_cast<std::size_t>(L));
        for (int b = 0; b < L; ++b) counts[std::size_t(b)] = slices.length(b);
        if (!args.in_place()) {
            ring_reduce_scatter(node, mem, ReduceScatterArgs{args.sendbuf, mine, counts, args.op});
        } else {
            // In place the result lands at the start of recvbuf: move it to slice i's place
            // through scratch (the two ranges may overlap).
            ring_reduce_scatter(node, mem, ReduceScatterArgs{nullptr, data, counts, args.op});
            if (i != 0 && slices.length(i) != 0) {
                Scratch tmp = mem.scratch(slices.length(i) * es);
                mem.copy(tmp.get(), data, slices.length(i) * es);
                mem.copy(mine, tmp.get(), slices.length(i) * es);
            }
        }
    } else if (!args.in_place()) {
        mem.copy(data, args.sendbuf, args.count * es);
    }
    // 2. Lane i: the ranks with local index i, one per node, combine slice i.
    if (layout.nodes() > 1 && slices.length(i) != 0) {
        std::vector<int> lane;
        for (int k = 0; k < layout.nodes(); ++k) lane.push_back(layout.node_ranks(k)[std::size_t(i)]);
        GroupTransport lane_net(net, lane);
        run_leaders<AllreduceFn>(
            args.leaders, lane_net, mem,
            AllreduceArgs{nullptr, mine, slices.length(i), args.op, args.segment_bytes, args.buffer_bytes});
    }
    // 3. Every rank gathers the node's slices.
    if (L > 1) {
        std::vector<std::size_t> bytes(static_cast<std::size_t>(L));
        for (int b = 0; b < L; ++b) bytes[std::size_t(b)] = slices.length(b) * es;
        node_allgather(node, mem, AllgatherArgs{nullptr, data, bytes});
    }
}

void hierarchical_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    const int r = net.rank();
    if (args.bytes == 0) return;
    const std::vector<int> head = heads(layout, args.root);
    const int my_node = layout.node_of(r);

    // 1. The root's data reaches every node's head.
    if (layout.nodes() > 1 && head[std::size_t(my_node)] == r) {
        GroupTransport heads_net(net, head);
        run_leaders<BcastFn>(args.leaders, heads_net, mem,
                             BcastArgs{args.buf, args.bytes, layout.node_of(args.root), args.segment_bytes});
    }
    // 2. Each head hands it to its node.
    GroupTransport node(net, layout.node_ranks(my_node), net.node_shared_state());
    if (node.size() > 1)
        node_bcast(node, mem,
                   BcastArgs{args.buf, args.bytes, layout.local_index(head[std::size_t(my_node)]), args.segment_bytes});
}

void hierarchical_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    const int r = net.rank();
    const std::size_t bytes = args.count * args.op.elem_size;
    if (args.count == 0) return;
    const std::vector<int> head = heads(layout, args.root);
    const int my_node = layout.node_of(r);
    const bool is_root = r == args.root;
    const bool is_head = head[std::size_t(my_node)] == r;
    GroupTransport node(net, layout.node_ranks(my_node), net.node_shared_state());

    // 1. The node's sum arrives at its head: at the root in recvbuf, at other heads in
    // scratch (a head alone on its node keeps its input as the node's sum).
    Scratch partial_buf(nullptr, nullptr);
    const void* partial = is_root ? args.recvbuf : args.sendbuf;
    if (node.size() > 1) {
        std::byte* into = nullptr;
        if (is_root)
            into = static_cast<std::byte*>(args.recvbuf);
        else if (is_head)
            into = (partial_buf = mem.scratch(bytes)).get();
        node_reduce(node, mem,
                    ReduceArgs{is_root && args.in_place() ? nullptr : args.sendbuf, into, args.count, args.op,
                               layout.local_index(head[std::size_t(my_node)])});
        if (is_head && !is_root) partial = into;
    } else if (is_root && !args.in_place()) {
        mem.copy(args.recvbuf, args.sendbuf, bytes);
    }
    // 2. The heads reduce their nodes' sums to the root.
    if (is_head && layout.nodes() > 1) {
        GroupTransport heads_net(net, head);
        run_leaders<ReduceFn>(args.leaders, heads_net, mem,
                              ReduceArgs{is_root ? nullptr : partial, is_root ? args.recvbuf : nullptr, args.count,
                                         args.op, layout.node_of(args.root)});
    }
}

void hierarchical_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    // The result in node order: node 0's blocks (in rank order), node 1's, ... Where that is
    // rank order (each node's ranks consecutive, nodes ascending) it is the result buffer.
    const NodeOrderedResult result(layout, mem, args, net.rank());
    if (result.empty()) return;
    GroupTransport node(net, layout.node_ranks(layout.node_of(net.rank())), net.node_shared_state());
    // 1. The node's blocks, gathered into the node's part on every rank of the node.
    result.gather_node_part(node, mem);
    // 2. Leaders exchange whole node parts.
    if (node.rank() == 0 && layout.nodes() > 1) {
        GroupTransport leaders(net, layout.leaders());
        run_leaders<AllgatherFn>(args.leaders, leaders, mem, AllgatherArgs{nullptr, result.all, result.order.part});
    }
    // 3. Leaders hand everything to their node.
    if (node.size() > 1) node_bcast(node, mem, BcastArgs{result.all, result.parts.total(), 0});
    // 4. Node order to rank order, where they differ.
    result.to_rank_order(mem);
}

} // namespace loom
