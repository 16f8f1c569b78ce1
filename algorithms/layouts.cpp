// kLayouts: one record per layout of collectives.def (layouts.hpp).
#include "layouts.hpp"

#include <array>

namespace loom {
namespace {

std::size_t count_units(const loom_call_t& call, int) { return call.count; }

std::size_t sum_of_counts(const loom_call_t& call, int comm_size)
{
    std::size_t total = 0;
    for (int i = 0; i < comm_size; ++i) total += call.counts[i];
    return total;
}

std::size_t no_units(const loom_call_t&, int) { return 0; }

// In Layout's order (static_asserts below).
constexpr std::array<LayoutOps, kLayoutCount> kLayouts = {{
    {Layout::vector, count_units, "the vector", staged::vector},
    {Layout::split, sum_of_counts, "the whole input vector", staged::split},
    {Layout::gathered, sum_of_counts, "the whole gathered vector", staged::gathered},
    {Layout::per_peer, count_units, "one block, the bytes each rank sends to each peer", staged::per_peer},
    {Layout::scattered, sum_of_counts, "the whole scattered vector", staged::scattered},
    // Its counts differ from rank to rank: message_bytes never asks (counts_differ_by_rank).
    {Layout::per_peer_v, no_units, "always 0 (its counts differ from rank to rank)", staged::per_peer_v},
    {Layout::none, no_units, "always 0", staged::none},
    // A uniform count here is the same for one rank's neighbours only (collectives.def, counts
    // per_neighbour): message_bytes never asks, and the glue runs device calls on host copies.
    {Layout::neighbour_gathered, no_units, "always 0 (its counts differ from rank to rank)", staged::neighbours},
    {Layout::per_neighbour, no_units, "always 0 (its counts differ from rank to rank)", staged::neighbours},
}};

constexpr bool in_layout_order()
{
    for (std::size_t i = 0; i < kLayouts.size(); ++i)
        if (int(kLayouts[i].layout) != int(i) || kLayouts[i].message_units == nullptr || kLayouts[i].stage == nullptr)
            return false;
    return true;
}
static_assert(in_layout_order(), "kLayouts: one complete record per layout, in Layout's order");

} // namespace

const LayoutOps& layout_ops(Layout l) { return kLayouts[std::size_t(l)]; }

} // namespace loom
