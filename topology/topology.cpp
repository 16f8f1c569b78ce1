// Grouping and ring ordering over per-rank places (topology.hpp): pure functions.
#include "topology.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace loom::topo {

std::vector<int> node_ids(std::span<const std::string> hostnames)
{
    std::unordered_map<std::string_view, int> index;
    std::vector<int> ids;
    ids.reserve(hostnames.size());
    for (const std::string& h : hostnames) ids.push_back(index.emplace(h, int(index.size())).first->second);
    return ids;
}

std::vector<int> ring_order(std::span<const Place> places)
{
    // A node's key is its lowest rank, so nodes keep the order of their first rank.
    std::unordered_map<int, int> first_rank;
    for (int r = 0; r < int(places.size()); ++r) first_rank.emplace(places[std::size_t(r)].node, r);
    // -1 (unknown) sorts like any other value: when nobody knows their core, ties go to rank.
    auto key = [&](int r) {
        const Place& p = places[std::size_t(r)];
        return std::tuple(first_rank.at(p.node), p.package, p.numa, p.core, r);
    };
    std::vector<int> order(places.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    return order;
}

Layout::Layout(std::vector<Place> places, std::vector<std::string> hostnames) : places_(std::move(places))
{
    const int P = int(places_.size());
    if (P == 0) throw std::invalid_argument("topology: no ranks");
    if (!hostnames.empty() && int(hostnames.size()) != P)
        throw std::invalid_argument("topology: one host name per rank");
    int nodes = 0;
    for (const Place& p : places_) {
        if (p.node < 0 || p.node >= P) throw std::invalid_argument("topology: node index out of range");
        nodes = std::max(nodes, p.node + 1);
    }
    node_ranks_.resize(std::size_t(nodes));
    node_hosts_.resize(std::size_t(nodes));
    local_index_.resize(std::size_t(P));
    for (int r = 0; r < P; ++r) {
        auto& members = node_ranks_[std::size_t(places_[std::size_t(r)].node)];
        local_index_[std::size_t(r)] = int(members.size());
        members.push_back(r);
        if (!hostnames.empty()) node_hosts_[std::size_t(places_[std::size_t(r)].node)] = hostnames[std::size_t(r)];
    }
    min_per_node_ = P;
    for (const auto& members : node_ranks_) {
        if (members.empty()) throw std::invalid_argument("topology: a node index has no rank");
        leaders_.push_back(members.front());
        min_per_node_ = std::min(min_per_node_, int(members.size()));
        max_per_node_ = std::max(max_per_node_, int(members.size()));
    }
    std::sort(leaders_.begin(), leaders_.end());
    ring_ = ring_order(places_);
    ring_position_.resize(std::size_t(P));
    for (int i = 0; i < P; ++i) {
        ring_position_[std::size_t(ring_[std::size_t(i)])] = i;
        ring_identity_ = ring_identity_ && ring_[std::size_t(i)] == i;
    }
}

std::string_view Layout::hostname(int node) const { return node_hosts_[std::size_t(node)]; }

std::vector<std::string> Layout::describe() const
{
    std::vector<std::string> lines;
    for (int r = 0; r < ranks(); ++r) {
        const Place& p = place(r);
        lines.push_back("rank " + std::to_string(r) + ": node " + std::to_string(p.node) + " (" +
                        std::string(hostname(p.node)) + ") package " + std::to_string(p.package) + " numa " +
                        std::to_string(p.numa) + " core " + std::to_string(p.core));
    }
    std::string summary = std::to_string(nodes()) + (nodes() == 1 ? " node, " : " nodes, ") +
                          std::to_string(min_per_node_) + "-" + std::to_string(max_per_node_) +
                          " ranks per node, ring order";
    for (int r : ring_) summary += " " + std::to_string(r);
    lines.push_back(summary);
    return lines;
}

} // namespace loom::topo
