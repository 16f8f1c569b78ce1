// Topology as data: where each rank of a communicator runs, and the pure functions that
// group ranks by node and order a ring so that neighbours share a node.
//
// A Place is one rank's record: its node (an index, the same on every rank: nodes are
// numbered in order of their lowest rank), and, within the node, its package (socket), NUMA
// node and core as hwloc's logical indexes, or -1 where unknown (an unbound process has no
// single core). The glue builds one per rank once per communicator (each process publishes
// its hwloc place in Open MPI's modex at start-up; node from Open MPI's host names) and hands the Layout to the
// algorithms through Transport::layout(). Everything here is MPI-free and hwloc-free, so the
// unit tests build any placement by hand: uneven nodes, one rank per node, round-robin.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::topo {

struct Place {
    int node = -1;
    int package = -1;
    int numa = -1;
    int core = -1;
    friend bool operator==(const Place&, const Place&) = default;
};

// Node indexes for a list of host names: equal names share a node, nodes numbered 0, 1, ...
// in order of their first rank.
std::vector<int> node_ids(std::span<const std::string> hostnames);

// The ring order for these places: every node's ranks consecutively, nodes in order of their
// lowest rank, and within a node by package, NUMA node, core (unknowns compare equal), then
// rank. For the default by-slot placement this is the identity. A ring in this order crosses
// between nodes exactly once per node (the fewest possible crossings), and within a node
// keeps neighbours on the same package where it can.
std::vector<int> ring_order(std::span<const Place> places);

// The grouping of a communicator's ranks by node, computed once per communicator.
class Layout {
public:
    // `places[r]` is rank r's record; node indexes must be 0..N-1, each used (node_ids()).
    // Throws std::invalid_argument otherwise.
    explicit Layout(std::vector<Place> places, std::vector<std::string> hostnames = {});

    int ranks() const { return int(places_.size()); }
    int nodes() const { return int(node_ranks_.size()); }
    const Place& place(int rank) const { return places_[std::size_t(rank)]; }
    int node_of(int rank) const { return places_[std::size_t(rank)].node; }
    // A node's ranks in ascending order; its first is the node's leader.
    std::span<const int> node_ranks(int node) const { return node_ranks_[std::size_t(node)]; }
    int leader(int node) const { return node_ranks_[std::size_t(node)].front(); }
    // One rank per node, ascending: every node's leader.
    std::span<const int> leaders() const { return leaders_; }
    // A rank's index among its node's ranks (0 for the leader).
    int local_index(int rank) const { return local_index_[std::size_t(rank)]; }
    int min_ranks_per_node() const { return min_per_node_; }
    int max_ranks_per_node() const { return max_per_node_; }
    // The ring order (ring_order()) and each rank's position in it.
    std::span<const int> ring() const { return ring_; }
    int ring_position(int rank) const { return ring_position_[std::size_t(rank)]; }
    bool ring_is_identity() const { return ring_identity_; }
    // Host name of a node ("" if none was given).
    std::string_view hostname(int node) const;

    // One line per rank ("rank R: node N (HOST) package P numa M core C"), then a summary
    // ("K nodes, A-B ranks per node, ring order ..."): what verbose output prints.
    std::vector<std::string> describe() const;

private:
    std::vector<Place> places_;
    std::vector<std::string> node_hosts_;
    std::vector<std::vector<int>> node_ranks_;
    std::vector<int> leaders_, local_index_, ring_, ring_position_;
    int min_per_node_ = 0, max_per_node_ = 0;
    bool ring_identity_ = true;
};

// This process's own place within its node (node left at -1), from hwloc: `hwloc_topology`
// is an already loaded hwloc_topology_t (Open MPI's) or nullptr to load one. Where loom was
// built without hwloc, or the process is not bound, the fields are -1.
Place local_place(void* hwloc_topology);

} // namespace loom::topo
