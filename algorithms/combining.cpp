// Message combining on stencils (combining.hpp).
#include "combining.hpp"

#include <algorithm>
#include <stdexcept>

namespace loom {

namespace {

// Row-major strides: the last dimension varies fastest.
std::array<int, kMaxStencilDims> strides_of(const Stencil& s)
{
    std::array<int, kMaxStencilDims> strides{};
    int stride = 1;
    for (int d = s.ndims; d-- > 0;) {
        strides[std::size_t(d)] = stride;
        stride *= s.extents[std::size_t(d)];
    }
    return strides;
}

StencilOffset negated(StencilOffset o)
{
    for (int& v : o) v = -v;
    return o;
}

// The one offset of {-1, 0, +1}^d \ {0} that reaches q from rank, or nullopt if none or several do.
std::optional<StencilOffset> offset_of(const Stencil& s, int rank, int q)
{
    std::optional<StencilOffset> found;
    int count = 1;
    for (int d = 0; d < s.ndims; ++d) count *= 3;
    for (int code = 0; code < count; ++code) {
        StencilOffset o{};
        for (int d = 0, c = code; d < s.ndims; ++d, c /= 3) o[std::size_t(d)] = c % 3 - 1;
        if (o == StencilOffset{} || s.neighbour(rank, o) != q) continue;
        if (found) return std::nullopt; // ambiguous: a dimension of extent 1 or 2
        found = o;
    }
    return found;
}

// FNV-1a over the values that make a stencil.
std::uint64_t fingerprint_of(const Stencil& s)
{
    std::uint64_t h = 14695981039346656037ull;
    auto mix = [&h](int v) {
        for (int byte = 0; byte < 4; ++byte) {
            h ^= std::uint64_t((unsigned(v) >> (8 * byte)) & 0xffu);
            h *= 1099511628211ull;
        }
    };
    mix(s.ndims);
    for (int e : s.extents) mix(e);
    for (const auto* list : {&s.sources, &s.destinations}) {
        mix(int(list->size()));
        for (const StencilOffset& o : *list)
            for (int v : o) mix(v);
    }
    return h == 0 ? 1 : h;
}

// Stencil::one_size: the sources' offsets closed under negation, and every rank reached from
// rank 0 by steps along them (a breadth-first walk: P ranks, |sources| steps each, once per
// communicator).
bool one_block_size(const Stencil& s, int comm_size)
{
    for (const StencilOffset& o : s.sources)
        if (std::find(s.sources.begin(), s.sources.end(), negated(o)) == s.sources.end()) return false;
    std::vector<char> seen(std::size_t(comm_size), 0);
    std::vector<int> todo{0};
    seen[0] = 1;
    int reached = 1;
    while (!todo.empty()) {
        const int r = todo.back();
        todo.pop_back();
        for (const StencilOffset& o : s.sources) {
            const int q = s.neighbour(r, o);
            if (seen[std::size_t(q)]) continue;
            seen[std::size_t(q)] = 1;
            ++reached;
            todo.push_back(q);
        }
    }
    return reached == comm_size;
}

std::optional<Stencil> fit(int comm_size, int rank, int ndims, std::span<const int> sources,
                           std::span<const int> destinations)
{
    Stencil s;
    s.ndims = ndims;
    s.extents.fill(1);
    const std::vector<int> dims = balanced_dims(comm_size, ndims);
    std::copy(dims.begin(), dims.end(), s.extents.begin());
    for (auto [list, offsets] : {std::pair{sources, &s.sources}, std::pair{destinations, &s.destinations}}) {
        for (std::size_t i = 0; i < list.size(); ++i) {
            const int q = list[i];
            if (q < 0 || q >= comm_size) return std::nullopt; // MPI_PROC_NULL (or worse)
            if (std::find(list.begin(), list.begin() + std::ptrdiff_t(i), q) != list.begin() + std::ptrdiff_t(i))
                return std::nullopt; // a repeated neighbour
            const auto o = offset_of(s, rank, q);
            if (!o) return std::nullopt;
            offsets->push_back(*o);
        }
    }
    // Symmetric: the destinations are the sources' offsets negated (offsets are unique, since
    // their ranks are).
    if (s.destinations.size() != s.sources.size()) return std::nullopt;
    for (const StencilOffset& o : s.sources)
        if (std::find(s.destinations.begin(), s.destinations.end(), negated(o)) == s.destinations.end())
            return std::nullopt;
    s.fingerprint = fingerprint_of(s);
    s.one_size = one_block_size(s, comm_size);
    return s;
}

} // namespace

int Stencil::neighbour(int rank, const StencilOffset& offset) const
{
    const auto strides = strides_of(*this);
    int out = 0;
    for (int d = 0; d < ndims; ++d) {
        const auto D = std::size_t(d);
        const int e = extents[D];
        const int c = (rank / strides[D]) % e;
        out += ((c + offset[D]) % e + e) % e * strides[D];
    }
    return out;
}

std::vector<int> balanced_dims(int ranks, int ndims)
{
    std::vector<int> factors; // ascending
    for (int f = 2, p = ranks; p > 1; ++f) {
        if (f * f > p) f = p;
        while (p % f == 0) {
            factors.push_back(f);
            p /= f;
        }
    }
    std::vector<int> dims(std::size_t(std::max(ndims, 0)), 1);
    if (dims.empty()) return dims;
    for (auto f = factors.rbegin(); f != factors.rend(); ++f) *std::min_element(dims.begin(), dims.end()) *= *f;
    std::sort(dims.begin(), dims.end(), std::greater<>());
    return dims;
}

std::optional<Stencil> detect_stencil(int comm_size, int rank, std::span<const int> sources,
                                      std::span<const int> destinations)
{
    if (sources.empty() || comm_size < 1 || rank < 0 || rank >= comm_size) return std::nullopt;
    for (int ndims : {2, 3})
        if (auto s = fit(comm_size, rank, ndims, sources, destinations)) return s;
    return std::nullopt;
}

void combining_neighbour(Transport& net, MemoryOps& mem, const NeighbourArgs& args)
{
    const Neighbourhood& n = args.neighbours;
    const Stencil* st = n.stencil;
    if (st == nullptr || st->sources.size() != n.sources.size() || st->destinations.size() != n.destinations.size())
        throw std::invalid_argument("combining_neighbour: the communicator is not a stencil every rank agreed on");
    const std::size_t out = n.destinations.size(), in = n.sources.size();
    const std::size_t b = args.send_bytes.empty() ? 0 : args.send_bytes[0];
    for (std::size_t i = 0; i < out; ++i)
        if (args.send_block_bytes(i) != b)
            throw std::invalid_argument("combining_neighbour: blocks of different sizes (the v and w variants)");
    for (std::size_t j = 0; j < in; ++j)
        if (args.recv_bytes[j] != b)
            throw std::invalid_argument("combining_neighbour: blocks of different sizes (the v and w variants)");
    if (b == 0 || out == 0) return;

    const int r = net.rank();
    const auto* send = static_cast<const std::byte*>(args.sendbuf);
    // at[i]: where the block travelling along destination offset i is on this rank now (the
    // block that left the rank at -t[0..k-1] for the rank at t - t[0..k-1] from here).
    std::vector<const std::byte*> at(out);
    for (std::size_t i = 0; i < out; ++i) at[i] = args.same_block ? send : send + i * b;
    // A phase sends one block per group: per offset (alltoall), per prefix t[0..k-1] (allgather:
    // those blocks hold the same bytes). The groups of one direction, in order of their first
    // offset: the same on every rank, so sender and receiver agree on the message's layout.
    auto group = [&](std::size_t i, int k) {
        if (!args.same_block) return int(i);
        int key = 0;
        for (int d = 0; d < k; ++d) key = key * 3 + st->destinations[i][std::size_t(d)] + 1;
        return key;
    };
    std::vector<Scratch> received; // every phase's receive buffers, until the final copies
    std::vector<int> keys;
    for (int k = 0; k < st->ndims; ++k) {
        const auto K = std::size_t(k);
        struct Direction {
            int dir;
            // The offsets moving this way; each group's first offset; each moving offset's group.
            std::vector<std::size_t> offsets, first, slot;
            Scratch pack = no_scratch(), recv = no_scratch();
        };
        Direction dirs[2] = {{+1, {}, {}, {}}, {-1, {}, {}, {}}};
        for (Direction& D : dirs) {
            keys.clear();
            for (std::size_t i = 0; i < out; ++i) {
                if (st->destinations[i][K] != D.dir) continue;
                const int key = group(i, k);
                const auto it = std::find(keys.begin(), keys.end(), key);
                D.offsets.push_back(i);
                D.slot.push_back(std::size_t(it - keys.begin()));
                if (it == keys.end()) {
                    keys.push_back(key);
                    D.first.push_back(i);
                }
            }
        }
        bool posted = false;
        for (Direction& D : dirs) { // receives first: from the rank at -dir, what moves +dir
            if (D.first.empty()) continue;
            StencilOffset from{};
            from[K] = -D.dir;
            D.recv = mem.scratch(D.first.size() * b);
            net.post_recv(st->neighbour(r, from), D.recv.get(), D.first.size() * b);
            posted = true;
        }
        for (Direction& D : dirs) {
            if (D.first.empty()) continue;
            StencilOffset to{};
            to[K] = D.dir;
            const std::byte* data = at[D.first[0]];
            if (D.first.size() > 1) {
                D.pack = mem.scratch(D.first.size() * b);
                for (std::size_t g = 0; g < D.first.size(); ++g) mem.copy(D.pack.get() + g * b, at[D.first[g]], b);
                data = D.pack.get();
            }
            net.post_send(st->neighbour(r, to), data, D.first.size() * b);
        }
        if (posted) net.wait_all();
        for (Direction& D : dirs) {
            for (std::size_t x = 0; x < D.offsets.size(); ++x) at[D.offsets[x]] = D.recv.get() + D.slot[x] * b;
            if (!D.first.empty()) received.push_back(std::move(D.recv));
        }
    }
    // Receive block j comes from the source at offset s: the block that travelled along -s.
    auto* recv = static_cast<std::byte*>(args.recvbuf);
    for (std::size_t j = 0; j < in; ++j) {
        const auto i = std::size_t(std::find(st->destinations.begin(), st->destinations.end(), negated(st->sources[j])) -
                                   st->destinations.begin());
        mem.copy(recv + j * b, at[i], b);
    }
}

} // namespace loom
