// bench_topology: see bench_topology.hpp.
#include "bench_topology.hpp"

#include "combining.hpp"

#include <array>
#include <sstream>

namespace loom::bench {

namespace {
// "AxBx...": extents, each optionally followed by 'p' (periodic).
void parse_extents(const std::string& what, const std::string& text, TopologySpec& spec)
{
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, 'x')) {
        const bool periodic = !part.empty() && part.back() == 'p';
        if (periodic) part.pop_back();
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 6)
            throw BadTopology(what + ": '" + text + "' wants extents like 4x2 (a 'p' after one: periodic)");
        const int extent = std::stoi(part);
        if (extent < 1) throw BadTopology(what + ": an extent of 0");
        spec.dims.push_back(extent);
        spec.periods.push_back(periodic ? 1 : 0);
    }
    if (spec.dims.empty()) throw BadTopology(what + ": no extents");
}

// The 8 Moore neighbours' offsets, row by row: the order of stencil's neighbour lists.
constexpr std::array<std::array<int, 2>, 8> kMoore{
    {{-1, -1}, {-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}, {1, 1}}};
} // namespace

TopologySpec parse_topology(const std::string& text, int ranks)
{
    TopologySpec spec;
    spec.text = text;
    const std::string what = "--topology " + text;
    if (text == "ring") {
        spec.dims = {ranks};
        spec.periods = {1};
        return spec;
    }
    if (text.rfind("cart:", 0) == 0) {
        parse_extents(what, text.substr(5), spec);
    } else if (text.rfind("stencil:", 0) == 0) {
        spec.kind = TopologyKind::dist_graph;
        parse_extents(what, text.substr(8), spec);
        if (spec.dims.size() != 2) throw BadTopology(what + ": a stencil is a 2-D grid, AxB");
    } else {
        throw BadTopology(what + ": want ring, cart:AxB... (a 'p' after an extent: periodic) or stencil:AxB");
    }
    long product = 1;
    for (int d : spec.dims) product *= d;
    if (product != ranks)
        throw BadTopology(what + ": the grid has " + std::to_string(product) + " ranks, the job " +
                          std::to_string(ranks));
    return spec;
}

std::vector<int> topology_neighbours(const TopologySpec& spec, int rank)
{
    if (spec.kind == TopologyKind::cartesian) return cartesian_neighbours(spec.dims, spec.periods, rank);
    // stencil: row-major coordinates (x, y) on a periodic dims[0] x dims[1] grid
    const int A = spec.dims[0], B = spec.dims[1], x = rank / B, y = rank % B;
    std::vector<int> list;
    for (const auto& [dx, dy] : kMoore) list.push_back((x + dx + A) % A * B + (y + dy + B) % B);
    return list;
}

BenchTopology::BenchTopology(const TopologySpec& s, int rank) : spec(s), neighbours(topology_neighbours(s, rank))
{
    if (spec.kind == TopologyKind::cartesian) {
        MPI_Cart_create(MPI_COMM_WORLD, int(spec.dims.size()), spec.dims.data(), spec.periods.data(), 0, &comm);
        return;
    }
    const int n = int(neighbours.size());
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n, neighbours.data(), MPI_UNWEIGHTED, n, neighbours.data(),
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm);
    // A stencil if every rank found the same one (the glue's test: coll_loom_neighbours.c).
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const auto found = detect_stencil(size, rank, neighbours, neighbours);
    const unsigned long long mine = found ? found->fingerprint : 0;
    unsigned long long most[2] = {0, 0};
    const unsigned long long send[2] = {mine, ~mine};
    MPI_Allreduce(send, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    stencil = mine != 0 && most[0] == mine && ~most[1] == mine;
}

BenchTopology::~BenchTopology()
{
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

std::size_t sender_block(const TopologySpec& spec, int rank, const std::vector<int>& neighbours, std::size_t j)
{
    if (spec.kind == TopologyKind::cartesian) return j ^ 1;
    const int source = neighbours[j];
    std::size_t k = 0; // how many times this rank named the source before block j
    for (std::size_t i = 0; i < j; ++i) k += neighbours[i] == source;
    const auto theirs = topology_neighbours(spec, source);
    for (std::size_t i = 0; i < theirs.size(); ++i)
        if (theirs[i] == rank && k-- == 0) return i;
    return theirs.size(); // not reached: a stencil's lists are symmetric
}

} // namespace loom::bench
