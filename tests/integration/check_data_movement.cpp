// Checks of the data-movement collectives: allgather, allgatherv, bcast, alltoall and
// barrier. Data is a recognisable function of (source rank, position), so every received
// element says where it came from.
#include "check_harness.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace check {

namespace {
// Element i contributed by rank r.
int value(int r, std::size_t i) { return r * 100003 + int(i % 100003); }
constexpr int kUntouched = -999;
} // namespace

void check_allgather(const Setting& s)
{
    for (int count : {0, 1, 3, 1000, 16384})
        for (bool in_place : {false, true}) {
            const std::size_t n = std::size_t(count);
            std::vector<int> send(n), recv(n * std::size_t(s.size), kUntouched);
            for (std::size_t i = 0; i < n; ++i) send[i] = value(s.rank, i);
            if (in_place) std::copy(send.begin(), send.end(), recv.begin() + std::ptrdiff_t(n * std::size_t(s.rank)));
            const std::string name = "count=" + std::to_string(count) + (in_place ? " in-place" : "");
            expect_call(s, "allgather", count == 0 ? Expect::untouched : Expect::served, name, [&] {
                allgather(in_place ? MPI_IN_PLACE : send.data(), count, MPI_INT, recv.data(), count, MPI_INT, s.comm);
            });
            for (int r = 0; r < s.size; ++r)
                for (std::size_t i = 0; i < n; ++i)
                    if (recv[std::size_t(r) * n + i] != value(r, i)) {
                        fail(s, "allgather " + name + ": wrong element from rank " + std::to_string(r));
                        r = s.size;
                        break;
                    }
        }
    // A receive type with holes (packed and unpacked by loom): holes must stay untouched.
    HoleyTypes types = make_holey_types();
    for (int count : {1, 5, 1000}) {
        const std::size_t n = std::size_t(count);
        std::vector<int> send(2 * n), recv(3 * n * std::size_t(s.size), kUntouched);
        for (std::size_t i = 0; i < 2 * n; ++i) send[i] = value(s.rank, i);
        const std::string name = "vector receive type, count=" + std::to_string(count);
        expect_call(s, "allgather", Expect::served, name,
                    [&] { allgather(send.data(), 2 * count, MPI_INT, recv.data(), count, types.vector, s.comm); });
        bool ok = true;
        for (int r = 0; r < s.size && ok; ++r)
            for (std::size_t e = 0; e < n && ok; ++e) {
                const int* x = &recv[(std::size_t(r) * n + e) * 3];
                ok = x[0] == value(r, 2 * e) && x[2] == value(r, 2 * e + 1) && x[1] == kUntouched;
            }
        if (!ok) fail(s, "allgather " + name + ": wrong data or a hole written");
    }
    free_holey_types(types);
}

void check_allgatherv(const Setting& s)
{
    // Irregular counts (some zero) at displacements with gaps, and a dense layout.
    for (bool gaps : {false, true})
        for (int scale : {1, 300})
            for (bool in_place : {false, true}) {
                std::vector<int> counts(std::size_t(s.size)), displs(std::size_t(s.size));
                int next = 0;
                for (int r = 0; r < s.size; ++r) {
                    counts[std::size_t(r)] = (r % 3 == 2) ? 0 : (r % 4 + 1) * scale;
                    displs[std::size_t(r)] = next;
                    next += counts[std::size_t(r)] + (gaps ? 2 : 0);
                }
                const int mine = counts[std::size_t(s.rank)];
                std::vector<int> send(static_cast<std::size_t>(mine)), recv(std::size_t(next) + 1, kUntouched);
                for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(s.rank, i);
                if (in_place) std::copy(send.begin(), send.end(), recv.begin() + displs[std::size_t(s.rank)]);
                bool any = false;
                for (int c : counts) any = any || c != 0;
                const std::string name = std::string(gaps ? "gaps" : "dense") + " scale=" + std::to_string(scale) +
                                         (in_place ? " in-place" : "");
                // Open MPI passes allgatherv to the component even when every count is 0.
                expect_call(s, "allgatherv", Expect::served, name, [&] {
                    allgatherv(in_place ? MPI_IN_PLACE : send.data(), mine, MPI_INT, recv.data(), counts.data(),
                               displs.data(), MPI_INT, s.comm);
                });
                (void)any;
                bool ok = recv.back() == kUntouched;
                for (int r = 0; r < s.size && ok; ++r) {
                    const std::size_t d = std::size_t(displs[std::size_t(r)]);
                    for (std::size_t i = 0; i < std::size_t(counts[std::size_t(r)]) && ok; ++i)
                        ok = recv[d + i] == value(r, i);
                    if (gaps) ok = ok && recv[d + std::size_t(counts[std::size_t(r)])] == kUntouched;
                }
                if (!ok) fail(s, "allgatherv " + name + ": wrong data or a gap written");
            }
}

void check_bcast(const Setting& s)
{
    for (int root : {0, s.size - 1, s.size / 2})
        for (int count : {0, 1, 7, 1000, 100003, 1 << 20}) {
            const std::size_t n = std::size_t(count);
            std::vector<std::uint8_t> buf(n + 1, 0xEE);
            if (s.rank == root)
                for (std::size_t i = 0; i < n; ++i) buf[i] = std::uint8_t(i * 31 + std::size_t(root) * 7 + 1);
            const std::string name = "bytes=" + std::to_string(count) + " root=" + std::to_string(root);
            expect_call(s, "bcast", count == 0 ? Expect::untouched : Expect::served, name,
                        [&] { bcast(buf.data(), count, MPI_BYTE, root, s.comm); });
            bool ok = buf[n] == 0xEE;
            for (std::size_t i = 0; i < n && ok; ++i) ok = buf[i] == std::uint8_t(i * 31 + std::size_t(root) * 7 + 1);
            if (!ok) fail(s, "bcast " + name + ": wrong data");
        }
    // A datatype with holes: every rank unpacks into its own layout.
    HoleyTypes types = make_holey_types();
    const int root = s.size - 1;
    for (int count : {1, 33, 4000}) {
        const std::size_t n = std::size_t(count);
        std::vector<int> buf(4 * n, kUntouched);
        if (s.rank == root)
            for (std::size_t e = 0; e < n; ++e) buf[4 * e] = value(root, e), buf[4 * e + 2] = -value(root, e);
        const std::string name = "resized vector count=" + std::to_string(count);
        expect_call(s, "bcast", Expect::served, name, [&] { bcast(buf.data(), count, types.padded, root, s.comm); });
        bool ok = true;
        for (std::size_t e = 0; e < n && ok; ++e)
            ok = buf[4 * e] == value(root, e) && buf[4 * e + 2] == -value(root, e) && buf[4 * e + 1] == kUntouched &&
                 buf[4 * e + 3] == kUntouched;
        if (!ok) fail(s, "bcast " + name + ": wrong data or a hole written");
    }
    free_holey_types(types);
}

void check_barrier(const Setting& s)
{
    // A barrier holds every rank until the last one arrives. The late rank sleeps, notes when
    // it enters, and tells everyone; no rank may have left before that moment. steady_clock
    // is the kernel's monotonic clock, shared by all processes of one machine.
    using clock = std::chrono::steady_clock;
    for (int late : {0, s.size - 1}) {
        long long entered = 0;
        if (s.rank == late) {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            entered = clock::now().time_since_epoch().count();
        }
        expect_call(s, "barrier", Expect::served, "late rank " + std::to_string(late), [&] { barrier(s.comm); });
        const long long left = clock::now().time_since_epoch().count();
        MPI_Bcast(&entered, 1, MPI_LONG_LONG, late, s.comm); // the checker's own, always blocking
        if (left < entered)
            fail(s, "barrier returned " + std::to_string((entered - left) / 1000) + " us before rank " +
                        std::to_string(late) + " entered it");
    }
    for (int i = 0; i < 50; ++i) expect_call(s, "barrier", Expect::served, "repeated", [&] { barrier(s.comm); });
}

void check_alltoall(const Setting& s)
{
    auto item = [](int from, int to, std::size_t i) { return from * 1000003 + to * 1009 + int(i); };
    for (int count : {0, 1, 5, 1000, 8192})
        for (bool in_place : {false, true}) {
            const std::size_t n = std::size_t(count), P = std::size_t(s.size);
            std::vector<int> send(n * P), recv(n * P, kUntouched);
            for (std::size_t to = 0; to < P; ++to)
                for (std::size_t i = 0; i < n; ++i) send[to * n + i] = item(s.rank, int(to), i);
            if (in_place) recv = send;
            const std::string name = "count=" + std::to_string(count) + (in_place ? " in-place" : "");
            expect_call(s, "alltoall", count == 0 ? Expect::untouched : Expect::served, name, [&] {
                alltoall(in_place ? MPI_IN_PLACE : send.data(), count, MPI_INT, recv.data(), count, MPI_INT, s.comm);
            });
            bool ok = true;
            for (std::size_t from = 0; from < P && ok; ++from)
                for (std::size_t i = 0; i < n && ok; ++i) ok = recv[from * n + i] == item(int(from), s.rank, i);
            if (!ok) fail(s, "alltoall " + name + ": wrong data");
        }
}

} // namespace check

namespace check {

namespace {
// Roots for the rooted collectives: 0, the last rank and a middle one.
std::vector<int> roots_of(int size)
{
    std::vector<int> roots = {0};
    for (int root : {size - 1, size / 2})
        if (root != roots.back() && root != 0) roots.push_back(root);
    return roots;
}
} // namespace

// ---- gather: every rank's block at its place in the root's receive buffer; the others'
// receive buffers (not significant in MPI) untouched ----

void check_gather(const Setting& s)
{
    for (int root : roots_of(s.size))
        for (int count : {0, 1, 3, 1000, 16384})
            for (bool in_place : {false, true}) {
                const bool is_root = s.rank == root;
                const std::size_t n = std::size_t(count);
                std::vector<int> send(n), recv(n * std::size_t(s.size), kUntouched);
                for (std::size_t i = 0; i < n; ++i) send[i] = value(s.rank, i);
                const bool here_in_place = in_place && is_root; // MPI_IN_PLACE is the root's
                if (here_in_place) std::copy(send.begin(), send.end(), recv.begin() + std::ptrdiff_t(n * std::size_t(root)));
                const std::string name = "root=" + std::to_string(root) + " count=" + std::to_string(count) +
                                         (in_place ? " in-place" : "");
                expect_call(s, "gather", count == 0 ? Expect::untouched : Expect::served, name, [&] {
                    gather(here_in_place ? MPI_IN_PLACE : send.data(), count, MPI_INT, recv.data(), count, MPI_INT,
                           root, s.comm);
                });
                bool ok = true;
                for (int r = 0; r < s.size && ok; ++r)
                    for (std::size_t i = 0; i < n && ok; ++i)
                        ok = recv[std::size_t(r) * n + i] == (is_root ? value(r, i) : kUntouched);
                if (!ok) fail(s, "gather " + name + (is_root ? ": wrong block" : ": a non-root's buffer written"));
            }
    // A receive type with holes at the root (packed and unpacked by loom): holes stay untouched;
    // the other ranks pass their receive arguments as garbage-free but unused.
    HoleyTypes types = make_holey_types();
    for (int count : {1, 5, 1000}) {
        const std::size_t n = std::size_t(count);
        std::vector<int> send(2 * n), recv(3 * n * std::size_t(s.size), kUntouched);
        for (std::size_t i = 0; i < 2 * n; ++i) send[i] = value(s.rank, i);
        const std::string name = "vector receive type, count=" + std::to_string(count);
        expect_call(s, "gather", Expect::served, name,
                    [&] { gather(send.data(), 2 * count, MPI_INT, recv.data(), count, types.vector, 0, s.comm); });
        bool ok = true;
        for (int r = 0; r < s.size && ok; ++r)
            for (std::size_t e = 0; e < n && ok; ++e) {
                const int* x = &recv[(std::size_t(r) * n + e) * 3];
                ok = s.rank == 0 ? x[0] == value(r, 2 * e) && x[2] == value(r, 2 * e + 1) && x[1] == kUntouched
                                 : x[0] == kUntouched && x[1] == kUntouched && x[2] == kUntouched;
            }
        if (!ok) fail(s, "gather " + name + ": wrong data or a hole written");
    }
    free_holey_types(types);
}

// ---- scatter: block r of the root's send buffer in rank r's receive buffer; the root's send
// buffer unchanged, and in place (MPI_IN_PLACE as its receive buffer) its block left there ----

void check_scatter(const Setting& s)
{
    for (int root : roots_of(s.size))
        for (int count : {0, 1, 3, 1000, 16384})
            for (bool in_place : {false, true}) {
                const bool is_root = s.rank == root;
                const std::size_t n = std::size_t(count), P = std::size_t(s.size);
                std::vector<int> send(is_root ? n * P : 0), recv(n, kUntouched);
                for (std::size_t i = 0; i < send.size(); ++i) send[i] = value(int(i / std::max<std::size_t>(n, 1)), i);
                const std::vector<int> sent = send;
                const bool here_in_place = in_place && is_root; // MPI_IN_PLACE is the root's
                const std::string name = "root=" + std::to_string(root) + " count=" + std::to_string(count) +
                                         (in_place ? " in-place" : "");
                expect_call(s, "scatter", count == 0 ? Expect::untouched : Expect::served, name, [&] {
                    scatter(is_root ? send.data() : nullptr, count, MPI_INT, here_in_place ? MPI_IN_PLACE : recv.data(),
                            count, MPI_INT, root, s.comm);
                });
                bool ok = send == sent;
                for (std::size_t i = 0; i < n && ok; ++i)
                    ok = recv[i] == (here_in_place ? kUntouched : value(s.rank, std::size_t(s.rank) * n + i));
                if (!ok) fail(s, "scatter " + name + (send == sent ? ": wrong block" : ": the root's send buffer written"));
            }
    // A send type with holes at the root (packed by loom): every block right, the root's buffer
    // (holes included) unchanged.
    HoleyTypes types = make_holey_types();
    for (int count : {1, 5, 1000}) {
        const std::size_t n = std::size_t(count), P = std::size_t(s.size);
        std::vector<int> send(s.rank == 0 ? 3 * n * P : 0, kUntouched), recv(2 * n, kUntouched);
        for (std::size_t q = 0; q < send.size() / 3; ++q) {
            send[3 * q] = value(int(q / n), 2 * (q % n));
            send[3 * q + 2] = value(int(q / n), 2 * (q % n) + 1);
        }
        const std::vector<int> sent = send;
        const std::string name = "vector send type, count=" + std::to_string(count);
        expect_call(s, "scatter", Expect::served, name, [&] {
            scatter(s.rank == 0 ? send.data() : nullptr, count, types.vector, recv.data(), 2 * count, MPI_INT, 0, s.comm);
        });
        bool ok = send == sent;
        for (std::size_t i = 0; i < 2 * n && ok; ++i) ok = recv[i] == value(s.rank, i);
        if (!ok) fail(s, "scatter " + name + ": wrong data or the root's buffer written");
    }
    free_holey_types(types);
}

// ---- gatherv, scatterv: irregular blocks (some empty) at reversed displacements with gaps; only
// the root passes counts and displacements (the others pass null, as MPI allows) ----

namespace {
struct Irregular {
    std::vector<int> counts, displs;
    int extent = 0; // ints the root's buffer spans
};
Irregular irregular_blocks(int size, int scale)
{
    Irregular b;
    b.counts.resize(std::size_t(size)), b.displs.resize(std::size_t(size));
    for (int r = size - 1; r >= 0; --r) { // reversed, one int of gap before each block
        b.counts[std::size_t(r)] = r % 3 == 1 ? 0 : (r * 7 + 1) % 5 * scale + 1;
        b.displs[std::size_t(r)] = b.extent + 1;
        b.extent += b.counts[std::size_t(r)] + 1;
    }
    return b;
}
} // namespace

void check_gatherv(const Setting& s)
{
    for (int root : roots_of(s.size))
        for (int scale : {1, 1000})
            for (bool in_place : {false, true}) {
                const Irregular b = irregular_blocks(s.size, scale);
                const bool is_root = s.rank == root, here_in_place = in_place && is_root;
                const std::size_t mine = std::size_t(b.counts[std::size_t(s.rank)]);
                std::vector<int> send(mine), recv(std::size_t(b.extent), kUntouched);
                for (std::size_t i = 0; i < mine; ++i) send[i] = value(s.rank, i);
                if (here_in_place) std::copy(send.begin(), send.end(), recv.begin() + b.displs[std::size_t(s.rank)]);
                const std::string name = "root=" + std::to_string(root) + " scale=" + std::to_string(scale) +
                                         (in_place ? " in-place" : "");
                expect_call(s, "gatherv", Expect::served, name, [&] {
                    gatherv(here_in_place ? MPI_IN_PLACE : send.data(), int(mine), MPI_INT, is_root ? recv.data() : nullptr,
                            is_root ? b.counts.data() : nullptr, is_root ? b.displs.data() : nullptr, MPI_INT, root,
                            s.comm);
                });
                std::vector<int> expected(std::size_t(b.extent), kUntouched);
                if (is_root)
                    for (int r = 0; r < s.size; ++r)
                        for (int i = 0; i < b.counts[std::size_t(r)]; ++i)
                            expected[std::size_t(b.displs[std::size_t(r)] + i)] = value(r, std::size_t(i));
                if (recv != expected) fail(s, "gatherv " + name + ": wrong block, or a gap or another rank's buffer written");
            }
}

void check_scatterv(const Setting& s)
{
    for (int root : roots_of(s.size))
        for (int scale : {1, 1000})
            for (bool in_place : {false, true}) {
                const Irregular b = irregular_blocks(s.size, scale);
                const bool is_root = s.rank == root, here_in_place = in_place && is_root;
                const std::size_t mine = std::size_t(b.counts[std::size_t(s.rank)]);
                std::vector<int> send(is_root ? std::size_t(b.extent) : 0, kUntouched), recv(mine, kUntouched);
                if (is_root)
                    for (int r = 0; r < s.size; ++r)
                        for (int i = 0; i < b.counts[std::size_t(r)]; ++i)
                            send[std::size_t(b.displs[std::size_t(r)] + i)] = value(r, std::size_t(i));
                const std::vector<int> sent = send;
                const std::string name = "root=" + std::to_string(root) + " scale=" + std::to_string(scale) +
                                         (in_place ? " in-place" : "");
                expect_call(s, "scatterv", Expect::served, name, [&] {
                    scatterv(is_root ? send.data() : nullptr, is_root ? b.counts.data() : nullptr,
                             is_root ? b.displs.data() : nullptr, MPI_INT, here_in_place ? MPI_IN_PLACE : recv.data(),
                             int(mine), MPI_INT, root, s.comm);
                });
                bool ok = send == sent;
                for (std::size_t i = 0; i < mine && ok; ++i)
                    ok = recv[i] == (here_in_place ? kUntouched : value(s.rank, i));
                if (!ok) fail(s, "scatterv " + name + (send == sent ? ": wrong block" : ": the root's send buffer written"));
            }
}

// ---- alltoallv, alltoallw: a different count for every pair of ranks (some empty), the send
// blocks in reversed rank order and the receive blocks in rank order, each with a gap before
// it. In place (MPI_IN_PLACE) the receive layout serves both ways, so the counts are symmetric.
// alltoallw sends every other block as a vector type with holes, with displacements in bytes. ----

namespace {
int pair_count(int from, int to, int scale, bool symmetric)
{
    const int a = symmetric ? std::min(from, to) : from, b = symmetric ? std::max(from, to) : to;
    const int k = (a * 7 + b * 3) % 5;
    return k == 0 ? 0 : k * scale;
}
int pair_value(int from, int to, int i) { return from * 1000003 + to * 1009 + i; }

// One side of rank me's call: per-peer counts and displacements (ints), blocks in rank order or
// reversed, each after a gap of 2.
struct PeerBlocks {
    std::vector<int> counts, displs;
    int extent = 0;
};
PeerBlocks peer_blocks(int size, int me, bool sending, bool reversed, int scale, bool symmetric)
{
    PeerBlocks b;
    b.counts.resize(std::size_t(size)), b.displs.resize(std::size_t(size));
    for (int k = 0; k < size; ++k) {
        const int q = reversed ? size - 1 - k : k;
        b.counts[std::size_t(q)] = sending ? pair_count(me, q, scale, symmetric) : pair_count(q, me, scale, symmetric);
        b.displs[std::size_t(q)] = b.extent + 2;
        b.extent += b.counts[std::size_t(q)] + 2;
    }
    return b;
}

// Rank me's alltoallv (w: as alltoallw, odd peers' blocks sent as `holey`, {int, hole, int} of
// half the count) with its reference result.
void alltoall_v_case(const Setting& s, bool w, MPI_Datatype holey, int scale, bool in_place)
{
    const PeerBlocks sb = peer_blocks(s.size, s.rank, true, true, scale, in_place);
    const PeerBlocks rb = peer_blocks(s.size, s.rank, false, false, scale, in_place);
    // alltoallw's holey blocks lie past the dense layout, 3/2 the ints each (counts are even:
    // scale 2 and 700): three times its extent holds both.
    std::vector<int> send(std::size_t(sb.extent) * 3, kUntouched), recv(std::size_t(rb.extent), kUntouched);
    std::vector<int> expected = recv, scounts = sb.counts, sdispls(std::size_t(s.size)), rdispls(std::size_t(s.size));
    std::vector<MPI_Datatype> stypes(std::size_t(s.size), MPI_INT), rtypes(std::size_t(s.size), MPI_INT);
    for (int q = 0, at = 0; q < s.size; ++q) {
        const auto Q = std::size_t(q);
        for (int i = 0; i < rb.counts[Q]; ++i) expected[std::size_t(rb.displs[Q] + i)] = pair_value(q, s.rank, i);
        rdispls[Q] = w ? rb.displs[Q] * int(sizeof(int)) : rb.displs[Q];
        if (in_place) {
            for (int i = 0; i < rb.counts[Q]; ++i) recv[std::size_t(rb.displs[Q] + i)] = pair_value(s.rank, q, i);
            continue;
        }
        const bool holey_block = w && q % 2 == 1;
        sdispls[Q] = w ? sb.displs[Q] * int(sizeof(int)) : sb.displs[Q];
        if (holey_block) {
            // Its own region past the dense layout: ints at [base, base + 3 n / 2).
            const int base = sb.extent + at;
            sdispls[Q] = base * int(sizeof(int));
            stypes[Q] = holey;
            scounts[Q] = sb.counts[Q] / 2;
            for (int e = 0; e < scounts[Q]; ++e) {
                send[std::size_t(base + 3 * e)] = pair_value(s.rank, q, 2 * e);
                send[std::size_t(base + 3 * e + 2)] = pair_value(s.rank, q, 2 * e + 1);
            }
            at += 3 * scounts[Q] + 1;
        } else {
            for (int i = 0; i < sb.counts[Q]; ++i) send[std::size_t(sb.displs[Q] + i)] = pair_value(s.rank, q, i);
        }
    }
    const std::vector<int> sent = send;
    const char* coll = w ? "alltoallw" : "alltoallv";
    const std::string name = "scale=" + std::to_string(scale) + (in_place ? " in-place" : "");
    expect_call(s, coll, Expect::served, name, [&] {
        const void* sbuf = in_place ? MPI_IN_PLACE : send.data();
        if (w)
            alltoallw(sbuf, scounts.data(), sdispls.data(), stypes.data(), recv.data(), rb.counts.data(), rdispls.data(),
                      rtypes.data(), s.comm);
        else
            alltoallv(sbuf, sb.counts.data(), sb.displs.data(), MPI_INT, recv.data(), rb.counts.data(), rb.displs.data(),
                      MPI_INT, s.comm);
    });
    if (send != sent) fail(s, std::string(coll) + " " + name + ": the send buffer written");
    if (recv != expected) fail(s, std::string(coll) + " " + name + ": wrong block, or a gap written");
}
} // namespace

void check_alltoallv(const Setting& s)
{
    for (int scale : {2, 700})
        for (bool in_place : {false, true}) alltoall_v_case(s, false, MPI_INT, scale, in_place);
}

void check_alltoallw(const Setting& s)
{
    HoleyTypes types = make_holey_types();
    for (int scale : {2, 700})
        for (bool in_place : {false, true}) alltoall_v_case(s, true, types.vector, scale, in_place);
    free_holey_types(types);
}

} // namespace check
