// Segmented hierarchical collectives: hierarchical.cpp's phases, run on segments of the
// message so that a node's shared-memory phase of one segment runs while the leaders exchange
// another. Terms as in hierarchical.cpp: P ranks on N nodes, L ranks on a node, S the message
// size, m = ceil(S / s) segments of s bytes (the call's segment_bytes: coll_loom_segment_size
// or a rule's segment=, 256 KiB by default, kDefaultSegmentBytes).
//
// Why: unsegmented, the phases add up (tools/lab/RESULTS.md, "Across nodes: hierarchical
// against flat"): a node's ranks idle while their leader talks to the other leaders, and the
// link between nodes idles while the node reduces or copies. In segments, the leaders' phase of
// segment k (on the network) runs while the node works on segments k+1 and k-1 (in shared
// memory), so the time tends to the slower of the two instead of their sum, plus one segment.
//
//   hierarchical_seg allreduce, a leader (other ranks do the same without step b):
//     for k = 0 .. m:  a. reduce segment k to the leader in the node    (overlaps leaders(k-1))
//                      b. finish leaders(k-1); start leaders(k): allreduce of segment k
//                      c. bcast segment k-1 from the leader in the node (overlaps leaders(k))
//   hierarchical_seg bcast: b. heads' bcast of segment k; c. bcast of segment k-1 in the node.
//   hierarchical_seg allgather: 1. allgather(v) of the node's part in the node (whole, once);
//     then per segment b. the leaders' allgatherv of piece k of every node's part (s bytes of
//     each, into a staging buffer), c. bcast of staging buffer k-1 in the node, each rank copying
//     the pieces to their places.
//   hierarchical (reduce_scatter, reduce_scatter_block; one segment) and hierarchical_seg:
//     blocks in node order, node j's part holding its ranks' blocks; piece k of a part is its
//     k-th run of s bytes. a. every rank packs piece k of every part (its input) and the node
//     reduces that to its leader; b. the leaders reduce-scatter it, each getting its node's
//     piece; c. bcast of the node's piece k-1 in the node, each rank keeping its block's share.
//
// Example, allreduce of 4 segments, 2 nodes: time runs down; R = node reduce, B = node bcast,
// X = leaders' allreduce (on the network) of the segment named.
//     node phase   R0   R1   B0 R2   B1 R3   B2   B3
//     network           X0   X1      X2      X3
//
// The overlap (overlap.hpp): the leaders' flat algorithm (decide() chose it: a rule's
// leaders=, else the table's choice for one rank per node, else the registry's default) runs
// unchanged on a nested fiber whose waits yield while the transport's test_all() says "not
// yet"; the leader resumes it between its node's steps and from its shared-memory waits.
// Only where the node's phases run on shared memory (no messages of their own, so the
// transport's one batch holds only the leaders' messages) and the transport can test without
// blocking; otherwise (a node without a segment, an element larger than a slot, one rank on a
// node, loom-sim's transport) the same segments run one phase after another: correct, not
// overlapped.
//
// Cost (per segment, m segments): the leaders' algorithm on N ranks with s bytes (allreduce,
// bcast; allgather and reduce_scatter: N pieces of up to s bytes each, one per node's part),
// plus the node's shm phase on that segment. Time ~ max(network, node) x m + one segment of
// the other. Messages between nodes: m times the leaders' algorithm's, so small segments
// cost latency (m x lg N steps for recursive doubling). Bytes: allreduce and bcast move what
// hierarchical moves; allgather copies S once more (staging to place); reduce_scatter packs
// its input (S per rank) except for hierarchical with nodes of consecutive ranks, and a node
// bcast gives every rank its node's whole part (S L / P), of which it keeps its block.
// Limits: allreduce and reduce_scatter need a commutative op; every node's ranks agree on the
// segments (sizes all ranks share); the nodes must be known (Needs::topology).
#include "hierarchical_segmented.hpp"

#include "group_transport.hpp"
#include "hierarchical_phases.hpp"
#include "overlap.hpp"

#include <algorithm>
#include <optional>

namespace loom {
namespace {

// n units in segments of `per` units (at least one): segment k is [begin(k), begin(k) + length(k)).
struct Segments {
    Segments(std::size_t n_, std::size_t per_) : n(n_), per(std::max<std::size_t>(per_, 1)), m((n + per - 1) / per) {}
    std::size_t begin(std::size_t k) const { return std::min(k * per, n); }
    std::size_t length(std::size_t k) const { return std::min((k + 1) * per, n) - begin(k); }
    std::size_t n, per, m;
};

std::size_t units_per_segment(std::size_t segment_bytes, std::size_t unit)
{
    return std::max<std::size_t>(1, (segment_bytes != 0 ? segment_bytes : kDefaultSegmentBytes) / unit);
}

// The node's transport, and whether its phases may overlap the leaders' (shared memory only).
struct Node {
    Node(Transport& net, const topo::Layout& layout, std::size_t elem_size)
        : group(net, layout.node_ranks(layout.node_of(net.rank())), net.node_shared_state()),
          shm(group.size() > 1 && node_uses_shm(group, elem_size)), bg(net, shm), pump(group, bg)
    {}
    GroupTransport group;
    bool shm;
    Background bg;
    PumpTransport pump; // the node's phases run on it: their shm waits let the leaders go on
};

} // namespace

void hierarchical_seg_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    if (args.count == 0) return;
    const std::size_t es = args.op.elem_size;
    Node node(net, layout, es);
    const bool leader = node.group.rank() == 0, alone = node.group.size() == 1;
    std::optional<GroupTransport> leaders;
    if (leader && layout.nodes() > 1) leaders.emplace(net, layout.leaders());
    auto* data = static_cast<std::byte*>(args.recvbuf);
    const auto* in = static_cast<const std::byte*>(args.sendbuf);
    const Segments seg(args.count, units_per_segment(args.segment_bytes, es));

    for (std::size_t k = 0; k <= seg.m; ++k) {
        // a. Segment k's node sum, at the leader in recvbuf.
        if (k < seg.m) {
            const std::size_t at = seg.begin(k) * es, n = seg.length(k);
            if (!alone) {
                const void* input = args.in_place() ? (leader ? nullptr : data + at) : in + at;
                node_reduce(node.pump, mem, ReduceArgs{input, leader ? data + at : nullptr, n, args.op, 0});
            } else if (!args.in_place()) {
                mem.copy(data + at, in + at, n * es);
            }
        }
        // b. The leaders combine segment k while the node goes on.
        if (leaders) {
            node.bg.finish();
            if (k < seg.m)
                node.bg.start(*leaders, [&, at = seg.begin(k) * es, n = seg.length(k)](Transport& t) {
                    run_leaders<AllreduceFn>(args.leaders, t, mem,
                                             AllreduceArgs{nullptr, data + at, n, args.op, args.segment_bytes,
                                                           args.buffer_bytes, nullptr, args.radix});
                });
        }
        // c. Segment k-1's result to the node.
        if (k >= 1 && !alone)
            node_bcast(node.pump, mem, BcastArgs{data + seg.begin(k - 1) * es, seg.length(k - 1) * es, 0});
    }
}

void hierarchical_seg_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    if (args.bytes == 0) return;
    const int r = net.rank();
    const std::vector<int> head = heads(layout, args.root);
    const int my_head = head[std::size_t(layout.node_of(r))];
    Node node(net, layout, 0);
    std::optional<GroupTransport> heads_net;
    if (my_head == r && layout.nodes() > 1) heads_net.emplace(net, head);
    auto* buf = static_cast<std::byte*>(args.buf);
    const Segments seg(args.bytes, units_per_segment(args.segment_bytes, 1));

    for (std::size_t k = 0; k <= seg.m; ++k) {
        // b. Segment k reaches every node's head while the node passes on segment k-1.
        if (heads_net) {
            node.bg.finish();
            if (k < seg.m)
                node.bg.start(*heads_net, [&, at = seg.begin(k), n = seg.length(k)](Transport& t) {
                    run_leaders<BcastFn>(args.leaders, t, mem,
                                         BcastArgs{buf + at, n, layout.node_of(args.root), args.segment_bytes, nullptr,
                                                   args.radix});
                });
        }
        // c. Segment k-1 from the head to its node.
        if (k >= 1 && node.group.size() > 1)
            node_bcast(node.pump, mem,
                       BcastArgs{buf + seg.begin(k - 1), seg.length(k - 1), layout.local_index(my_head)});
    }
}

void hierarchical_seg_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const topo::Layout& layout = layout_of(net);
    const int N = layout.nodes(), my_node = layout.node_of(net.rank());
    // The result in node order, as in hierarchical_allgather: in place where that is rank order.
    const NodeOrderedResult result(layout, mem, args, net.rank());
    if (result.empty()) return;
    const std::vector<std::size_t>& node_bytes = result.order.part;
    std::byte* const all = result.all;
    const BlockOffsets& parts = result.parts;

    Node node(net, layout, 0);
    const bool leader = node.group.rank() == 0, alone = node.group.size() == 1;
    // 1. The node's blocks, gathered into the node's part on every rank of the node.
    result.gather_node_part(node.pump, mem);
    std::byte* my_part = all + parts.begin(my_node);

    if (N > 1) {
        // Piece k of node j's part: its bytes [k s, (k+1) s). Two staging buffers and piece
        // lists, for the segment the leaders exchange and the one the node passes on.
        const std::size_t s = units_per_segment(args.segment_bytes, 1);
        const std::size_t largest = *std::max_element(node_bytes.begin(), node_bytes.end());
        const Segments seg(largest, s);
        std::vector<std::size_t> pieces[2] = {std::vector<std::size_t>(std::size_t(N)),
                                              std::vector<std::size_t>(std::size_t(N))};
        Scratch staging[2] = {mem.scratch(std::size_t(N) * std::min(s, largest)),
                              mem.scratch(std::size_t(N) * std::min(s, largest))};
        std::optional<GroupTransport> leaders;
        if (leader) leaders.emplace(net, layout.leaders());
        for (std::size_t k = 0; k <= seg.m; ++k) {
            if (k < seg.m)
                for (int j = 0; j < N; ++j)
                    pieces[k % 2][std::size_t(j)] = Segments(node_bytes[std::size_t(j)], s).length(k);
            // b. The leaders exchange piece k of every part.
            if (leaders) {
                node.bg.finish();
                if (k < seg.m)
                    node.bg.start(*leaders, [&, k](Transport& t) {
                        run_leaders<AllgatherFn>(args.leaders, t, mem,
                                                 AllgatherArgs{my_part + k * s, staging[k % 2].get(), pieces[k % 2],
                                                               args.buffer_bytes, nullptr, -1, args.radix});
                    });
            }
            // c. Pieces k-1 to the node, and to their places.
            if (k >= 1) {
                const std::size_t b = (k - 1) % 2;
                const BlockOffsets at(pieces[b]);
                if (!alone) node_bcast(node.pump, mem, BcastArgs{staging[b].get(), at.total(), 0});
                for (int j = 0; j < N; ++j)
                    if (j != my_node)
                        mem.copy(all + parts.begin(j) + (k - 1) * s, staging[b].get() + at.begin(j), at.length(j));
            }
        }
    }
    // Node order to rank order, where they differ.
    result.to_rank_order(mem);
}

namespace {

// hierarchical and hierarchical_seg reduce_scatter: segments of `per` elements of every node's
// part (per >= the largest part: one segment, hierarchical).
void reduce_scatter_in_pieces(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args, std::size_t per)
{
    const topo::Layout& layout = layout_of(net);
    const int r = net.rank(), N = layout.nodes(), my_node = layout.node_of(r);
    const std::size_t es = args.op.elem_size;
    const BlockOffsets blocks(args.counts); // in elements, rank order
    if (blocks.total() == 0) return;
    const NodeOrder order(layout, args.counts); // node parts, in elements
    const std::vector<std::size_t>& part = order.part;
    const bool rank_order = order.rank_order;
    std::size_t mine_at = 0; // my block's start in my node's part
    for (int q : layout.node_ranks(my_node)) {
        if (q == r) break;
        mine_at += blocks.length(q);
    }
    const std::size_t largest = *std::max_element(part.begin(), part.end());
    per = std::min(std::max<std::size_t>(per, 1), std::max<std::size_t>(largest, 1));
    const Segments seg(largest, per);
    const std::size_t mine = blocks.length(r);
    const auto* input =
        static_cast<const std::byte*>(args.in_place() ? static_cast<const void*>(args.recvbuf) : args.sendbuf);
    // In place the result may overlap input still to be read: it goes to scratch until the end.
    Scratch result_buf = no_scratch();
    auto* result = static_cast<std::byte*>(args.recvbuf);
    if (args.in_place() && mine != 0) result = (result_buf = mem.scratch(mine * es)).get();

    Node node(net, layout, es);
    const bool leader = node.group.rank() == 0, alone = node.group.size() == 1;
    std::optional<GroupTransport> leaders;
    if (leader && N > 1) leaders.emplace(net, layout.leaders());
    // Packing: one segment's input, piece k of every part in node order; not needed for one
    // segment of consecutive nodes (the input is that already).
    const bool pack = !(rank_order && seg.m == 1);
    const std::size_t most = std::size_t(N) * per; // elements of one segment, at most
    Scratch packed = pack ? mem.scratch(most * es) : no_scratch();
    Scratch reduced[2] = {no_scratch(), no_scratch()}, piece_out[2] = {no_scratch(), no_scratch()};
    if (leader)
        for (int b = 0; b < 2 && b < int(seg.m); ++b) {
            reduced[b] = alone ? no_scratch() : mem.scratch(most * es);
            piece_out[b] = mem.scratch(per * es);
        }
    std::vector<std::size_t> pieces[2] = {std::vector<std::size_t>(std::size_t(N)),
                                          std::vector<std::size_t>(std::size_t(N))};
    Scratch alone_copy[2] = {no_scratch(), no_scratch()}; // a leader alone: its packed input, kept

    for (std::size_t k = 0; k <= seg.m; ++k) {
        const std::size_t b = k % 2;
        // a. Segment k, packed, reduced to the leader.
        if (k < seg.m) {
            for (int j = 0; j < N; ++j) pieces[b][std::size_t(j)] = Segments(part[std::size_t(j)], per).length(k);
            const BlockOffsets at(pieces[b]);
            const std::byte* src = input;
            if (pack) {
                std::byte* dst = (alone && leader) ? nullptr : packed.get();
                if (dst == nullptr) dst = (alone_copy[b] = mem.scratch(most * es)).get();
                for (int j = 0; j < N; ++j) { // copy part j's elements [k per, +piece) from the blocks
                    std::size_t from = k * per, left = pieces[b][std::size_t(j)], off = 0;
                    std::byte* to = dst + at.begin(j) * es;
                    for (int q : layout.node_ranks(j)) {
                        const std::size_t len = blocks.length(q);
                        if (left != 0 && from < off + len) {
                            const std::size_t n = std::min(left, off + len - from);
                            mem.copy(to, input + (blocks.begin(q) + from - off) * es, n * es);
                            to += n * es, from += n, left -= n;
                        }
                        off += len;
                    }
                }
                src = dst;
            }
            if (!alone) {
                node_reduce(node.pump, mem,
                            ReduceArgs{src, leader ? reduced[b].get() : nullptr, at.total(), args.op, 0});
                src = leader ? reduced[b].get() : nullptr;
            }
            if (!leaders && leader) // one node: the node's sum is the result's whole part
                mem.copy(piece_out[b].get(), src + at.begin(my_node) * es, pieces[b][std::size_t(my_node)] * es);
            if (leaders) {
                node.bg.finish();
                node.bg.start(*leaders, [&, src, b](Transport& t) {
                    run_leaders<ReduceScatterFn>(args.leaders, t, mem,
                                                 ReduceScatterArgs{src, piece_out[b].get(), pieces[b], args.op,
                                                                   args.buffer_bytes, nullptr, args.segment_bytes});
                });
            }
        } else if (leaders) {
            node.bg.finish();
        }
        // c. The node's piece k-1 to its ranks; each keeps the share of its block.
        if (k >= 1) {
            const std::size_t p = (k - 1) % 2, len = pieces[p][std::size_t(my_node)];
            const std::size_t from = (k - 1) * per;
            Scratch got = no_scratch();
            const std::byte* piece = leader ? piece_out[p].get() : nullptr;
            if (!alone && len != 0) {
                if (!leader) piece = (got = mem.scratch(len * es)).get();
                node_bcast(node.pump, mem, BcastArgs{const_cast<std::byte*>(piece), len * es, 0});
            }
            const std::size_t lo = std::max(from, mine_at), hi = std::min(from + len, mine_at + mine);
            if (lo < hi) mem.copy(result + (lo - mine_at) * es, piece + (lo - from) * es, (hi - lo) * es);
        }
    }
    if (result_buf) mem.copy(args.recvbuf, result, mine * es);
}

} // namespace

void hierarchical_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    reduce_scatter_in_pieces(net, mem, args, ~std::size_t(0));
}

void hierarchical_seg_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    reduce_scatter_in_pieces(net, mem, args, units_per_segment(args.segment_bytes, args.op.elem_size));
}

} // namespace loom
