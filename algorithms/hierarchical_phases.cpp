#include "hierarchical_phases.hpp"

#include "binomial.hpp"
#include "bruck.hpp"
#include "shm.hpp"

namespace loom {

const topo::Layout& layout_of(const Transport& net)
{
    const topo::Layout* layout = net.layout();
    if (layout == nullptr || layout->ranks() != net.size())
        throw std::logic_error("hierarchical algorithm without a topology");
    return *layout;
}

std::vector<int> heads(const topo::Layout& layout, int root)
{
    std::vector<int> h(std::size_t(layout.nodes()));
    for (int k = 0; k < layout.nodes(); ++k) h[std::size_t(k)] = layout.leader(k);
    h[std::size_t(layout.node_of(root))] = root;
    return h;
}

void node_reduce(Transport& node, MemoryOps& mem, const ReduceArgs& args)
{
    ShmComm* shm = shm_comm(node);
    if (shm != nullptr && args.op.elem_size <= shm->slot_bytes())
        shm_reduce(*shm, mem, args);
    else
        binomial_reduce(node, mem, args);
}

void node_bcast(Transport& node, MemoryOps& mem, const BcastArgs& args)
{
    if (ShmComm* shm = shm_comm(node))
        shm_bcast(*shm, mem, args);
    else
        binomial_bcast(node, mem, args);
}

void node_allgather(Transport& node, MemoryOps& mem, const AllgatherArgs& args)
{
    if (ShmComm* shm = shm_comm(node))
        shm_allgather(*shm, mem, args);
    else
        bruck_allgather(node, mem, args);
}

NodeOrder::NodeOrder(const topo::Layout& layout, std::span<const std::size_t> sizes)
    : part(std::size_t(layout.nodes()), 0)
{
    int expected = 0;
    for (int j = 0; j < layout.nodes(); ++j)
        for (int q : layout.node_ranks(j)) {
            part[std::size_t(j)] += sizes[std::size_t(q)];
            rank_order = rank_order && q == expected++;
        }
}

void node_order_to_rank_order(MemoryOps& mem, const topo::Layout& layout, const BlockOffsets& blocks,
                              const std::byte* all, std::byte* out)
{
    std::size_t at = 0;
    for (int j = 0; j < layout.nodes(); ++j)
        for (int q : layout.node_ranks(j)) {
            mem.copy(out + blocks.begin(q), all + at, blocks.length(q));
            at += blocks.length(q);
        }
}

NodeOrderedResult::NodeOrderedResult(const topo::Layout& layout_, MemoryOps& mem, const AllgatherArgs& args, int rank_)
    : layout(layout_), rank(rank_), blocks(args.bytes), order(layout_, args.bytes), parts(order.part),
      out(static_cast<std::byte*>(args.recvbuf)),
      own(args.in_place() ? out + blocks.begin(rank_) : static_cast<const std::byte*>(args.sendbuf)),
      own_in_place(order.rank_order && args.in_place()), all(out)
{
    if (!order.rank_order && !empty()) all = (gathered = mem.scratch(parts.total())).get();
}

void NodeOrderedResult::gather_node_part(Transport& node, MemoryOps& mem) const
{
    const int my_node = layout.node_of(rank);
    std::byte* my_part = all + parts.begin(my_node);
    if (node.size() > 1) {
        std::vector<std::size_t> member_bytes;
        for (int q : layout.node_ranks(my_node)) member_bytes.push_back(blocks.length(q));
        node_allgather(node, mem, AllgatherArgs{own_in_place ? nullptr : own, my_part, member_bytes});
    } else if (!own_in_place) {
        mem.copy(my_part, own, blocks.length(rank));
    }
}

void NodeOrderedResult::to_rank_order(MemoryOps& mem) const
{
    if (!order.rank_order) node_order_to_rank_order(mem, layout, blocks, all, out);
}

bool node_uses_shm(Transport& node, std::size_t elem_size)
{
    if (node.size() == 1) return true; // no intra-node phase at all
    ShmComm* shm = shm_comm(node);
    return shm != nullptr && elem_size <= shm->slot_bytes();
}

} // namespace loom
