// Test topologies and the reference pairing of neighbour blocks (neighbourhoods.hpp).
#include "neighbourhoods.hpp"

#include "combining.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace loom::test {

Neighbourhood Topology::of(int rank) const
{
    Neighbourhood n;
    n.kind = kind;
    n.sources = sources[std::size_t(rank)];
    n.destinations = destinations[std::size_t(rank)];
    n.dims = dims;
    n.periods = periods;
    return n;
}

Topology cartesian(std::vector<int> dims, std::vector<int> periods)
{
    Topology t;
    t.kind = TopologyKind::cartesian;
    int ranks = 1;
    t.name = "cart";
    for (std::size_t d = 0; d < dims.size(); ++d) {
        ranks *= dims[d];
        t.name += (d == 0 ? " " : "x") + std::to_string(dims[d]) + (periods[d] != 0 ? "p" : "");
    }
    t.dims = std::move(dims);
    t.periods = std::move(periods);
    for (int r = 0; r < ranks; ++r) {
        t.sources.push_back(cartesian_neighbours(t.dims, t.periods, r));
        t.destinations.push_back(t.sources.back());
    }
    return t;
}

Topology random_graph(int ranks, int degree, std::uint32_t seed, bool multi)
{
    Topology t;
    t.kind = TopologyKind::graph;
    t.name = "graph P=" + std::to_string(ranks) + " seed " + std::to_string(seed) + (multi ? " multi" : "");
    std::mt19937 rng(seed);
    auto adj = std::vector<std::vector<int>>(std::size_t(ranks));
    std::uniform_int_distribution<int> pick(0, ranks - 1);
    for (int e = 0; e < ranks * degree / 2; ++e) {
        int a = pick(rng), b = pick(rng);
        if (a == b && !multi) continue;
        auto& la = adj[std::size_t(a)];
        if (!multi && std::find(la.begin(), la.end(), b) != la.end()) continue;
        la.push_back(b);
        if (a != b) adj[std::size_t(b)].push_back(a);
        else la.push_back(a); // a self loop is an edge both ways: it appears twice in the list
    }
    for (auto& l : adj) std::sort(l.begin(), l.end());
    t.sources = adj;
    t.destinations = adj;
    return t;
}

Topology random_dist_graph(int ranks, int degree, std::uint32_t seed, bool multi)
{
    Topology t;
    t.kind = TopologyKind::dist_graph;
    t.name = "dist_graph P=" + std::to_string(ranks) + " seed " + std::to_string(seed) + (multi ? " multi" : "");
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(0, ranks - 1);
    t.sources.assign(std::size_t(ranks), {});
    t.destinations.assign(std::size_t(ranks), {});
    for (int r = 0; r < ranks; ++r) {
        std::uniform_int_distribution<int> howmany(0, degree);
        for (int e = howmany(rng); e > 0; --e) {
            int q = pick(rng);
            auto& d = t.destinations[std::size_t(r)];
            if (!multi && (q == r || std::find(d.begin(), d.end(), q) != d.end())) continue;
            d.push_back(q);
        }
    }
    for (int r = 0; r < ranks; ++r)
        for (int q : t.destinations[std::size_t(r)]) t.sources[std::size_t(q)].push_back(r);
    for (auto& s : t.sources) std::shuffle(s.begin(), s.end(), rng);
    return t;
}

Topology stencil(std::vector<int> dims, const std::vector<std::vector<int>>& offsets, TopologyKind kind,
                 const std::string& name)
{
    Topology t;
    t.kind = kind;
    int ranks = 1;
    for (int e : dims) ranks *= e;
    t.name = name + " stencil " + (kind == TopologyKind::graph ? "graph " : "dist_graph ");
    for (std::size_t d = 0; d < dims.size(); ++d) t.name += (d == 0 ? "" : "x") + std::to_string(dims[d]);
    // The rank at offset o (times sign) from r, in row-major order, every dimension periodic.
    auto at = [&](int r, const std::vector<int>& o, int sign) {
        int out = 0, stride = 1;
        for (std::size_t d = dims.size(); d-- > 0;) {
            const int e = dims[d], c = (r / stride) % e;
            out += ((c + sign * o[d]) % e + e) % e * stride;
            stride *= e;
        }
        return out;
    };
    for (int r = 0; r < ranks; ++r) {
        std::vector<int> src, dst;
        for (const auto& o : offsets) src.push_back(at(r, o, +1));
        if (kind == TopologyKind::graph)
            dst = src;
        else
            for (auto o = offsets.rbegin(); o != offsets.rend(); ++o) dst.push_back(at(r, *o, -1));
        t.sources.push_back(src);
        t.destinations.push_back(dst);
    }
    t.stencil = dims == balanced_dims(ranks, int(dims.size()));
    for (std::size_t d = 0; d < dims.size(); ++d)
        for (const auto& o : offsets)
            if (o[d] != 0 && dims[d] < 3) t.stencil = false;
    // One block size: every offset's negation an offset too, and every rank reached from rank 0.
    bool closed = true;
    for (const auto& o : offsets) {
        std::vector<int> minus(o.size());
        std::transform(o.begin(), o.end(), minus.begin(), [](int v) { return -v; });
        closed = closed && std::find(offsets.begin(), offsets.end(), minus) != offsets.end();
    }
    std::vector<char> seen(std::size_t(ranks), 0);
    std::vector<int> todo{0};
    seen[0] = 1;
    int reached = 1;
    while (!todo.empty()) {
        const int r = todo.back();
        todo.pop_back();
        for (int q : t.sources[std::size_t(r)])
            if (!seen[std::size_t(q)]) seen[std::size_t(q)] = 1, ++reached, todo.push_back(q);
    }
    t.one_block_size = t.stencil && closed && reached == ranks;
    return t;
}

namespace {
// Every offset of {-1, 0, +1}^d \ {0} (in the order of d base-3 digits) that `keep` keeps.
template <class Keep>
std::vector<std::vector<int>> offsets_where(int ndims, Keep keep)
{
    std::vector<std::vector<int>> out;
    int count = 1;
    for (int d = 0; d < ndims; ++d) count *= 3;
    for (int code = 0; code < count; ++code) {
        std::vector<int> o;
        int nonzero = 0;
        for (int d = 0, c = code; d < ndims; ++d, c /= 3) {
            o.push_back(c % 3 - 1);
            nonzero += o.back() != 0;
        }
        if (nonzero > 0 && keep(o, nonzero)) out.push_back(o);
    }
    return out;
}
} // namespace

std::vector<std::vector<int>> von_neumann(int ndims)
{
    return offsets_where(ndims, [](const std::vector<int>&, int nonzero) { return nonzero == 1; });
}
std::vector<std::vector<int>> moore(int ndims)
{
    return offsets_where(ndims, [](const std::vector<int>&, int) { return true; });
}
std::vector<std::vector<int>> faces_and_corners(int ndims)
{
    return offsets_where(ndims, [ndims](const std::vector<int>&, int nonzero) { return nonzero == 1 || nonzero == ndims; });
}
std::vector<std::vector<int>> corners(int ndims)
{
    return offsets_where(ndims, [ndims](const std::vector<int>&, int nonzero) { return nonzero == ndims; });
}
std::vector<std::vector<int>> upwind(int ndims)
{
    return offsets_where(ndims, [](const std::vector<int>& o, int) {
        return std::all_of(o.begin(), o.end(), [](int v) { return v >= 0; });
    });
}

BlockSource block_source(const Topology& t, int r, int j)
{
    const auto& src = t.sources[std::size_t(r)];
    const int q = src[std::size_t(j)];
    if (q == kNoNeighbour) return {};
    if (t.kind == TopologyKind::cartesian) return {q, j ^ 1};
    int k = int(std::count(src.begin(), src.begin() + j, q)); // r names q k times before j
    const auto& dst = t.destinations[std::size_t(q)];
    for (std::size_t i = 0; i < dst.size(); ++i)
        if (dst[i] == r && k-- == 0) return {q, int(i)};
    throw std::logic_error(t.name + ": rank " + std::to_string(q) + " does not name rank " + std::to_string(r) +
                           " among its destinations often enough");
}

std::vector<Topology> topologies_for(int ranks, std::uint32_t seed)
{
    std::vector<Topology> out;
    out.push_back(cartesian({ranks}, {1}));
    out.push_back(cartesian({ranks}, {0}));
    for (int a = 2; a * a <= ranks; ++a)
        if (ranks % a == 0) {
            out.push_back(cartesian({a, ranks / a}, {1, 0}));
            out.push_back(cartesian({ranks / a, 1, a}, {1, 1, 0}));
            break;
        }
    if (ranks % 2 == 0) out.push_back(cartesian({2, ranks / 2}, {1, 1}));
    out.push_back(cartesian({1, ranks}, {0, 1}));
    out.push_back(random_graph(ranks, 3, seed));
    out.push_back(random_graph(ranks, 4, seed + 1, true));
    out.push_back(random_dist_graph(ranks, 4, seed + 2));
    out.push_back(random_dist_graph(ranks, 5, seed + 3, true));
    // Stencils over MPI_Dims_create's grids, where they are unambiguous (extents of 3 or more).
    const std::vector<int> d2 = balanced_dims(ranks, 2), d3 = balanced_dims(ranks, 3);
    if (d2[1] >= 3) {
        out.push_back(stencil(d2, moore(2), TopologyKind::graph, "moore"));
        out.push_back(stencil(d2, corners(2), TopologyKind::dist_graph, "corners"));
        out.push_back(stencil(d2, upwind(2), TopologyKind::dist_graph, "upwind"));
    }
    if (d3[2] >= 3) {
        out.push_back(stencil(d3, moore(3), TopologyKind::dist_graph, "moore"));
        out.push_back(stencil(d3, faces_and_corners(3), TopologyKind::graph, "faces+corners"));
    }
    return out;
}

} // namespace loom::test
