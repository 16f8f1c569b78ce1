// The neighbourhood collectives over messages (neighbour.hpp).
#include "neighbour.hpp"

#include <cstddef>

namespace loom {

namespace {

// Where the blocks of one side lie (end to end in neighbour order); the allgathers' send side
// is one block that every destination gets.
class SideBlocks {
public:
    SideBlocks(std::span<const std::size_t> bytes, bool one_block) : offsets_(bytes), one_(one_block) {}
    std::size_t begin(std::size_t i) const { return one_ ? 0 : offsets_.begin(int(i)); }
    std::size_t length(std::size_t i) const { return one_ ? offsets_.length(0) : offsets_.length(int(i)); }

private:
    BlockOffsets offsets_;
    bool one_;
};

// The send block that a self edge's receive block j gets: Cartesian, j ^ 1; graphs, the k-th
// time the rank names itself among its destinations for the k-th time among its sources.
std::size_t own_send_block(const Neighbourhood& n, int rank, std::size_t j)
{
    if (n.kind == TopologyKind::cartesian) return j ^ 1;
    std::size_t k = 0;
    for (std::size_t s = 0; s < j; ++s) k += n.sources[s] == rank ? 1 : 0;
    for (std::size_t i = 0; i < n.destinations.size(); ++i)
        if (n.destinations[i] == rank && k-- == 0) return i;
    throw std::invalid_argument("linear_neighbour: a self edge among the sources but not the destinations");
}

} // namespace

void linear_neighbour(Transport& net, MemoryOps& mem, const NeighbourArgs& args)
{
    const Neighbourhood& n = args.neighbours;
    const int r = net.rank();
    const SideBlocks in(args.recv_bytes, false), out(args.send_bytes, args.same_block);
    auto* recv = static_cast<std::byte*>(args.recvbuf);
    const auto* send = static_cast<const std::byte*>(args.sendbuf);
    bool posted = false;
    for (std::size_t k = 0; k < n.sources.size(); ++k) {
        const std::size_t j = recv_match_order(n, k);
        const int q = n.sources[j];
        if (q == kNoNeighbour || q == r || in.length(j) == 0) continue;
        net.post_recv(q, recv + in.begin(j), in.length(j));
        posted = true;
    }
    for (std::size_t i = 0; i < n.destinations.size(); ++i) {
        const int q = n.destinations[i];
        if (q == kNoNeighbour || q == r || out.length(i) == 0) continue;
        net.post_send(q, send + out.begin(i), out.length(i));
        posted = true;
    }
    // Self edges: local copies, while the messages fly.
    for (std::size_t j = 0; j < n.sources.size(); ++j) {
        if (n.sources[j] != r || in.length(j) == 0) continue;
        const std::size_t i = own_send_block(n, r, j);
        if (out.length(i) != in.length(j))
            throw std::invalid_argument("linear_neighbour: a self edge's send and receive blocks differ in size");
        mem.copy(recv + in.begin(j), send + out.begin(i), in.length(j));
    }
    if (posted) net.wait_all();
}

} // namespace loom
