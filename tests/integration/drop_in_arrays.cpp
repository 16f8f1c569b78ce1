// drop_in_check --part arrays: a non-blocking call's or a persistent init's count and
// displacement arrays, derived datatypes and user-defined op scribbled over and freed as soon as
// the call returns (drop_in_check.cpp says why). Over pml ucx (--types-freed-late) the datatypes
// are freed after completion instead: Open MPI 4.1.4's pml ucx drops its own datatype at
// MPI_Type_free, and libnbc (which gets what loom hands on) then fails. A persistent request's op
// is freed after the request: Open MPI 4.1.4's libnbc keeps no reference to it.
#include "drop_in_check.hpp"
#include "mpi_persistent.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>

namespace drop_in {

namespace {

// Fills an array with junk and frees it: what a binding's garbage collector may do.
void scribble_and_free(int* a, int n)
{
    for (int i = 0; i < n; ++i) a[i] = (i & 1) ? -123456789 : 0x7fffffff;
    std::free(a);
}

// Allocations of the size just freed, filled with junk, so freed memory is likely reused.
struct Junk {
    std::vector<std::unique_ptr<int[]>> blocks;
    void make(int n)
    {
        for (int k = 0; k < 4; ++k) {
            blocks.emplace_back(new int[std::size_t(n)]);
            std::fill_n(blocks.back().get(), n, -7);
        }
    }
};

void commutative_sum(void* in, void* inout, int* len, MPI_Datatype*)
{
    const int* a = static_cast<const int*>(in);
    int* b = static_cast<int*>(inout);
    for (int i = 0; i < 2 * *len; ++i) b[i] += a[i]; // the datatype is two ints
}

// Per-rank counts 0, 1, 2, ... (rank q contributes q % 4 + n0 elements of the pair type), placed
// in reverse rank order with a gap of 3 pairs between blocks.
struct Layout {
    std::vector<int> counts, displs;
    int total = 0; // pairs in the receive buffer, gaps included
    explicit Layout(int n0)
    {
        counts.resize(std::size_t(size));
        displs.resize(std::size_t(size));
        for (int q = 0; q < size; ++q) counts[std::size_t(q)] = q % 4 + n0;
        int at = 3;
        for (int q = size - 1; q >= 0; --q) {
            displs[std::size_t(q)] = at;
            at += counts[std::size_t(q)] + 3;
        }
        total = at;
    }
};

int* heap_copy(const std::vector<int>& v)
{
    int* a = static_cast<int*>(std::malloc(sizeof(int) * std::max<std::size_t>(1, v.size())));
    std::copy(v.begin(), v.end(), a);
    return a;
}

// MPI_Iallgatherv (persistent: MPI_Allgatherv_init) of pairs of ints with a derived datatype;
// counts, displacements and datatype scribbled and freed right after the call.
void allgatherv_arrays(bool persistent, int n0, int salt)
{
    const Layout l(n0);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    const int mine = l.counts[std::size_t(rank)];
    std::vector<int> send(std::size_t(2 * mine)), recv(std::size_t(2 * l.total), -1);
    int* counts = heap_copy(l.counts);
    int* displs = heap_copy(l.displs);
    MPI_Request req;
    if (persistent)
        PERSISTENT(Allgatherv)(send.data(), mine, pair, recv.data(), counts, displs, pair, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &req);
    else {
        for (int i = 0; i < 2 * mine; ++i) send[std::size_t(i)] = value(rank, i, salt);
        MPI_Iallgatherv(send.data(), mine, pair, recv.data(), counts, displs, pair, MPI_COMM_WORLD, &req);
    }
    scribble_and_free(counts, size);
    scribble_and_free(displs, size);
    if (types_freed_early) MPI_Type_free(&pair);
    Junk junk;
    junk.make(size);
    for (int start = 0; start < (persistent ? 3 : 1); ++start) {
        const int s = salt + start;
        if (persistent) {
            for (int i = 0; i < 2 * mine; ++i) send[std::size_t(i)] = value(rank, i, s);
            std::fill(recv.begin(), recv.end(), -1);
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        std::vector<int> expected(std::size_t(2 * l.total), -1);
        for (int q = 0; q < size; ++q)
            for (int i = 0; i < 2 * l.counts[std::size_t(q)]; ++i)
                expected[std::size_t(2 * l.displs[std::size_t(q)] + i)] = value(q, i, s);
        if (recv != expected)
            fail(std::string(persistent ? "allgatherv_init" : "iallgatherv") + " with freed arrays, n0 " +
                 std::to_string(n0) + ", start " + std::to_string(start) + ": wrong result");
    }
    if (persistent) MPI_Request_free(&req);
    if (!types_freed_early) MPI_Type_free(&pair);
}

// MPI_Ireduce_scatter (persistent: MPI_Reduce_scatter_init) of pairs with a user-defined op;
// counts, datatype and op freed right after the call.
void reduce_scatter_arrays(bool persistent, int n0, int salt)
{
    const Layout l(n0);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op op;
    MPI_Op_create(commutative_sum, 1, &op);
    int sum = 0;
    for (int c : l.counts) sum += c;
    const int mine = l.counts[std::size_t(rank)];
    std::vector<int> send(std::size_t(2 * sum)), recv(std::size_t(2 * mine), -1);
    int* counts = heap_copy(l.counts);
    MPI_Request req;
    auto fill = [&](int s) {
        for (int i = 0; i < 2 * sum; ++i) send[std::size_t(i)] = value(rank, i, s);
    };
    if (persistent)
        PERSISTENT(Reduce_scatter)(send.data(), recv.data(), counts, pair, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else {
        fill(salt);
        MPI_Ireduce_scatter(send.data(), recv.data(), counts, pair, op, MPI_COMM_WORLD, &req);
    }
    scribble_and_free(counts, size);
    if (types_freed_early) MPI_Type_free(&pair);
    // A persistent request's op is freed after the request: Open MPI 4.1.4's libnbc, which gets what
    // loom hands on, crashes at MPI_Start when the op was freed after the init (it keeps no reference).
    if (!persistent) MPI_Op_free(&op);
    Junk junk;
    junk.make(size);
    int first = 0;
    for (int q = 0; q < rank; ++q) first += l.counts[std::size_t(q)];
    for (int start = 0; start < (persistent ? 3 : 1); ++start) {
        const int s = salt + start;
        if (persistent) {
            fill(s);
            std::fill(recv.begin(), recv.end(), -1);
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2 * mine; ++i) {
            int expected = 0;
            for (int q = 0; q < size; ++q) expected += value(q, 2 * first + i, s);
            if (recv[std::size_t(i)] != expected) {
                fail(std::string(persistent ? "reduce_scatter_init" : "ireduce_scatter") + " with freed arrays, n0 " +
                     std::to_string(n0) + ", start " + std::to_string(start) + ": element " + std::to_string(i));
                break;
            }
        }
    }
    if (persistent) MPI_Request_free(&req);
    if (persistent) MPI_Op_free(&op);
    if (!types_freed_early) MPI_Type_free(&pair);
}

// MPI_Iallreduce (persistent: MPI_Allreduce_init) of pairs with a user op and a derived
// datatype, both freed right after the call.
void allreduce_freed_type_and_op(bool persistent, int n, int salt)
{
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op op;
    MPI_Op_create(commutative_sum, 1, &op);
    std::vector<int> send(std::size_t(2 * n)), recv(std::size_t(2 * n), -1);
    auto fill = [&](int s) {
        for (int i = 0; i < 2 * n; ++i) send[std::size_t(i)] = value(rank, i, s);
    };
    MPI_Request req;
    if (persistent)
        PERSISTENT(Allreduce)(send.data(), recv.data(), n, pair, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    else {
        fill(salt);
        MPI_Iallreduce(send.data(), recv.data(), n, pair, op, MPI_COMM_WORLD, &req);
    }
    if (types_freed_early) MPI_Type_free(&pair);
    // A persistent request's op is freed after the request: Open MPI 4.1.4's libnbc, which gets what
    // loom hands on, crashes at MPI_Start when the op was freed after the init (it keeps no reference).
    if (!persistent) MPI_Op_free(&op);
    complete_and_check(req, persistent, salt, fill, [&](int s, int) {
        for (int i = 0; i < 2 * n; ++i) {
            int expected = 0;
            for (int q = 0; q < size; ++q) expected += value(q, i, s);
            if (recv[std::size_t(i)] != expected) {
                fail(std::string(persistent ? "allreduce_init" : "iallreduce") + " with freed type and op, n " +
                     std::to_string(n) + ": element " + std::to_string(i));
                break;
            }
        }
    });
    if (persistent) MPI_Request_free(&req);
    if (persistent) MPI_Op_free(&op);
    if (!types_freed_early) MPI_Type_free(&pair);
}

// MPI_Igatherv / MPI_Iscatterv (persistent: *_init) of pairs to or from the last rank: the
// root's counts and displacements and the datatype scribbled and freed right after the call; the
// other ranks pass a one-int array for them (not significant there, so never to be read whole).
void rooted_v_arrays(bool gather, bool persistent, int n0, int salt)
{
    const Layout l(n0);
    const int root = size - 1;
    const bool is_root = rank == root;
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    const int mine = l.counts[std::size_t(rank)];
    std::vector<int> own(std::size_t(2 * mine), -1), whole(is_root ? std::size_t(2 * l.total) : 0, -1);
    int* counts = is_root ? heap_copy(l.counts) : heap_copy({0});
    int* displs = is_root ? heap_copy(l.displs) : heap_copy({0});
    auto fill = [&](int s) {
        std::fill(own.begin(), own.end(), -1);
        std::fill(whole.begin(), whole.end(), -1);
        if (gather)
            for (int i = 0; i < 2 * mine; ++i) own[std::size_t(i)] = value(rank, i, s);
        else if (is_root)
            for (int q = 0; q < size; ++q)
                for (int i = 0; i < 2 * l.counts[std::size_t(q)]; ++i)
                    whole[std::size_t(2 * l.displs[std::size_t(q)] + i)] = value(q, i, s);
    };
    MPI_Request req;
    if (!persistent) fill(salt);
    if (gather && persistent)
        PERSISTENT(Gatherv)(own.data(), mine, pair, whole.data(), counts, displs, pair, root, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req);
    else if (gather)
        MPI_Igatherv(own.data(), mine, pair, whole.data(), counts, displs, pair, root, MPI_COMM_WORLD, &req);
    else if (persistent)
        PERSISTENT(Scatterv)(whole.data(), counts, displs, pair, own.data(), mine, pair, root, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &req);
    else
        MPI_Iscatterv(whole.data(), counts, displs, pair, own.data(), mine, pair, root, MPI_COMM_WORLD, &req);
    scribble_and_free(counts, is_root ? size : 1);
    scribble_and_free(displs, is_root ? size : 1);
    if (types_freed_early) MPI_Type_free(&pair);
    Junk junk;
    junk.make(size);
    complete_and_check(req, persistent, salt, fill, [&](int s, int start) {
        bool ok = true;
        if (gather && is_root)
            for (int q = 0; q < size; ++q)
                for (int i = 0; i < 2 * l.counts[std::size_t(q)]; ++i)
                    ok = ok && whole[std::size_t(2 * l.displs[std::size_t(q)] + i)] == value(q, i, s);
        if (!gather)
            for (int i = 0; i < 2 * mine; ++i) ok = ok && own[std::size_t(i)] == value(rank, i, s);
        if (!ok)
            fail(std::string(gather ? "gatherv" : "scatterv") + (persistent ? "_init" : " (non-blocking)") +
                 " with freed arrays, n0 " + std::to_string(n0) + ", start " + std::to_string(start) + ": wrong result");
    });
    if (persistent) MPI_Request_free(&req);
    if (!types_freed_early) MPI_Type_free(&pair);
}

} // namespace

void part_arrays()
{
    const std::pair<loom::Collective, std::function<void(bool, int, int)>> cases[] = {
        {loom::Collective::allgatherv, allgatherv_arrays},
        {loom::Collective::reduce_scatter, reduce_scatter_arrays},
        {loom::Collective::allreduce, allreduce_freed_type_and_op},
        {loom::Collective::gatherv, [](bool p, int n0, int salt) { rooted_v_arrays(true, p, n0, salt); }},
        {loom::Collective::scatterv, [](bool p, int n0, int salt) { rooted_v_arrays(false, p, n0, salt); }},
        {loom::Collective::neighbor_allgatherv,
         [](bool p, int n0, int salt) { neighbour_arrays(loom::Collective::neighbor_allgatherv, p, n0, salt); }},
        {loom::Collective::neighbor_alltoallv,
         [](bool p, int n0, int salt) { neighbour_arrays(loom::Collective::neighbor_alltoallv, p, n0, salt); }},
        {loom::Collective::neighbor_alltoallw,
         [](bool p, int n0, int salt) { neighbour_arrays(loom::Collective::neighbor_alltoallw, p, n0, salt); }},
    };
    for (const auto& [c, run] : cases) {
        const std::string name = collective_name(c);
        for (const std::string& forced : forced_names(c)) {
            force(c, forced);
            for (int persistent = 0; persistent < 2; ++persistent)
                for (int n0 : {0, 1, 5, 3000}) {
                    std::snprintf(where, sizeof where, "part arrays, %s%s forced '%s', n0 %d", name.c_str(),
                                  persistent ? "_init" : " (non-blocking)", forced.c_str(), n0);
                    run(persistent != 0, n0, n0 + int(forced.size()));
                }
        }
        force(c, "");
    }
}

} // namespace drop_in
