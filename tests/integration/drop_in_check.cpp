// drop_in_check: habits of real applications that Open MPI's own components tolerate, and so
// loom must too (issue 40). Each part runs with every registry algorithm forced in turn (MPI_T,
// coll_loom_<collective>_algorithm) and with loom's own choice, in one job:
//
//   --part arrays  A non-blocking or persistent call whose argument arrays (counts,
//                  displacements), derived datatypes and user-defined op are scribbled over and
//                  freed as soon as the call returns (MPI_Iallgatherv, MPI_Ireduce_scatter, their
//                  _init forms, MPI_Iallreduce; a persistent request's before its first start).
//                  MPI says they must stay untouched until completion; libnbc copies or retains
//                  them at the start, and a widely used Python binding relies on it. (A
//                  persistent request's op is freed only after the request, and with
//                  --types-freed-late its datatypes after completion: Open MPI alone fails
//                  otherwise, see below.)
//   --part orders  Persistent requests of every collective, initialized in the same order on
//                  every rank (all MPI asks) but started in a different order on each rank,
//                  with blocking collectives between the starts at different places; then
//                  non-blocking operations on two communicators completed in a different order
//                  on each rank. Includes shm forced for everything (the segment's turns).
//   --part intercomm  Blocking and non-blocking collectives on an inter-communicator, as a job
//                  started with the component list the README documents gets them.
//
// Every result is checked against a reference computed here. A hang is a failure: a watchdog
// (--timeout S, default 240) aborts the job with a message naming the part and round.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <mpi-ext.h>

#include "loom_mpi_t.hpp"
#include "mpi_persistent.hpp"
#include "registry.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

int rank = 0, size = 1;
bool loom_loaded = true; // false: the job runs without loom (--mca coll ^loom), nothing forced
// --types-freed-late: derived datatypes freed after completion, not right after the call. Open MPI
// 4.1.4 with pml ucx crashes in libnbc (which gets the calls loom hands on) when the datatype of a
// pending operation was freed: pml ucx drops its own datatype at MPI_Type_free.
bool types_freed_early = true;
long failures = 0;
char where[160] = "start"; // what runs now, for the watchdog's message

void fail(const std::string& what)
{
    if (failures++ < 30) std::fprintf(stderr, "drop_in_check FAIL (rank %d, %s): %s\n", rank, where, what.c_str());
}

void on_alarm(int)
{
    char text[256];
    const int n = std::snprintf(text, sizeof text, "drop_in_check FAIL (rank %d): hung in %s\n", rank, where);
    (void)!write(2, text, std::size_t(n));
    _exit(3);
}

int value(int r, int i, int salt) { return (r * 7 + i * 3 + salt * 5) % 101 - 50; }

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

void set_control(const std::string& name, const char* value)
{
    if (loom_loaded && !loom::tools::set_loom_control(name, value)) {
        std::fprintf(stderr, "drop_in_check: cannot set %s (is loom loaded?)\n", name.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

// "" (loom's own choice) and every registry algorithm of c.
std::vector<std::string> forced_names(loom::Collective c)
{
    std::vector<std::string> names{""};
    for (const loom::Algorithm& a : loom::all_algorithms())
        if (a.collective == c && loom_loaded) names.emplace_back(a.name);
    return names;
}

std::string collective_name(loom::Collective c) { return std::string(loom::to_string(c)); }

const auto kAll = loom::all_collectives();

void commutative_sum(void* in, void* inout, int* len, MPI_Datatype*)
{
    const int* a = static_cast<const int*>(in);
    int* b = static_cast<int*>(inout);
    for (int i = 0; i < 2 * *len; ++i) b[i] += a[i]; // the datatype is two ints
}

// ---- part arrays ----

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
    for (int start = 0; start < (persistent ? 3 : 1); ++start) {
        const int s = salt + start;
        if (persistent) {
            fill(s);
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2 * n; ++i) {
            int expected = 0;
            for (int q = 0; q < size; ++q) expected += value(q, i, s);
            if (recv[std::size_t(i)] != expected) {
                fail(std::string(persistent ? "allreduce_init" : "iallreduce") + " with freed type and op, n " +
                     std::to_string(n) + ": element " + std::to_string(i));
                break;
            }
        }
    }
    if (persistent) MPI_Request_free(&req);
    if (persistent) MPI_Op_free(&op);
    if (!types_freed_early) MPI_Type_free(&pair);
}

void part_arrays()
{
    const std::pair<loom::Collective, std::function<void(bool, int, int)>> cases[] = {
        {loom::Collective::allgatherv, allgatherv_arrays},
        {loom::Collective::reduce_scatter, reduce_scatter_arrays},
        {loom::Collective::allreduce, allreduce_freed_type_and_op},
    };
    for (const auto& [c, run] : cases) {
        const std::string name = collective_name(c);
        for (const std::string& forced : forced_names(c)) {
            set_control("coll_loom_" + name + "_algorithm", forced.c_str());
            for (int persistent = 0; persistent < 2; ++persistent)
                for (int n0 : {0, 1, 5, 3000}) {
                    std::snprintf(where, sizeof where, "part arrays, %s%s forced '%s', n0 %d", name.c_str(),
                                  persistent ? "_init" : " (non-blocking)", forced.c_str(), n0);
                    run(persistent != 0, n0, n0 + int(forced.size()));
                }
        }
        set_control("coll_loom_" + name + "_algorithm", "");
    }
}

// ---- part orders ----

// One persistent request of a collective over ints, with its reference result per start.
struct Persistent {
    std::string what;
    std::vector<int> send, recv, counts, displs;
    MPI_Request req = MPI_REQUEST_NULL;
    std::function<void(int)> fill;              // send data (and recv for bcast's root) for a start
    std::function<std::vector<int>(int)> expect; // recv's expected contents after that start
};

std::unique_ptr<Persistent> make_persistent(loom::Collective c, int n, MPI_Comm comm)
{
    auto p = std::make_unique<Persistent>();
    Persistent& x = *p;
    x.what = collective_name(c) + "_init of " + std::to_string(n);
    const int P = size, me = rank;
    const auto N = std::size_t(n);
    auto sum_of = [P](int i, int s) {
        int t = 0;
        for (int q = 0; q < P; ++q) t += value(q, i, s);
        return t;
    };
    switch (c) {
    case loom::Collective::allreduce:
        x.send.resize(N), x.recv.resize(N);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, sum_of](int s) { std::vector<int> e(N); for (std::size_t i = 0; i < N; ++i) e[i] = sum_of(int(i), s); return e; };
        PERSISTENT(Allreduce)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::reduce:
        x.send.resize(N), x.recv.assign(N, -1);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, P, sum_of](int s) {
            std::vector<int> e(N, -1);
            if (me == P - 1) for (std::size_t i = 0; i < N; ++i) e[i] = sum_of(int(i), s);
            return e;
        };
        PERSISTENT(Reduce)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, P - 1, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::reduce_scatter_block:
        x.send.resize(N * std::size_t(P)), x.recv.resize(N);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, sum_of](int s) {
            std::vector<int> e(N);
            for (std::size_t i = 0; i < N; ++i) e[i] = sum_of(int(N * std::size_t(me) + i), s);
            return e;
        };
        PERSISTENT(Reduce_scatter_block)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::reduce_scatter: {
        x.counts.resize(std::size_t(P));
        int total = 0, first = 0;
        for (int q = 0; q < P; ++q) {
            x.counts[std::size_t(q)] = n + q % 3;
            if (q < me) first += x.counts[std::size_t(q)];
            total += x.counts[std::size_t(q)];
        }
        const int mine = x.counts[std::size_t(me)];
        x.send.resize(std::size_t(total)), x.recv.resize(std::size_t(mine));
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [mine, first, sum_of](int s) {
            std::vector<int> e(static_cast<std::size_t>(mine));
            for (int i = 0; i < mine; ++i) e[std::size_t(i)] = sum_of(first + i, s);
            return e;
        };
        PERSISTENT(Reduce_scatter)(x.send.data(), x.recv.data(), x.counts.data(), MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                                   &x.req);
        break;
    }
    case loom::Collective::allgather:
        x.send.resize(N), x.recv.resize(N * std::size_t(P));
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, P](int s) {
            std::vector<int> e;
            for (int q = 0; q < P; ++q) for (std::size_t i = 0; i < N; ++i) e.push_back(value(q, int(i), s));
            return e;
        };
        PERSISTENT(Allgather)(x.send.data(), n, MPI_INT, x.recv.data(), n, MPI_INT, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::allgatherv: {
        x.counts.resize(std::size_t(P)), x.displs.resize(std::size_t(P));
        int at = 0;
        for (int q = P - 1; q >= 0; --q) { // reversed blocks, one int of gap
            x.counts[std::size_t(q)] = n + q % 2;
            x.displs[std::size_t(q)] = at + 1;
            at += x.counts[std::size_t(q)] + 1;
        }
        x.send.resize(std::size_t(x.counts[std::size_t(me)])), x.recv.assign(std::size_t(at), -1);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [&x, at, P](int s) {
            std::vector<int> e(std::size_t(at), -1);
            for (int q = 0; q < P; ++q)
                for (int i = 0; i < x.counts[std::size_t(q)]; ++i) e[std::size_t(x.displs[std::size_t(q)] + i)] = value(q, i, s);
            return e;
        };
        PERSISTENT(Allgatherv)(x.send.data(), int(x.send.size()), MPI_INT, x.recv.data(), x.counts.data(),
                               x.displs.data(), MPI_INT, comm, MPI_INFO_NULL, &x.req);
        break;
    }
    case loom::Collective::bcast:
        x.recv.resize(N);
        x.fill = [&x, me](int s) {
            for (std::size_t i = 0; i < x.recv.size(); ++i) x.recv[i] = me == 0 ? value(0, int(i), s) : -1;
        };
        x.expect = [N](int s) { std::vector<int> e(N); for (std::size_t i = 0; i < N; ++i) e[i] = value(0, int(i), s); return e; };
        PERSISTENT(Bcast)(x.recv.data(), n, MPI_INT, 0, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::barrier:
        x.fill = [](int) {};
        x.expect = [](int) { return std::vector<int>(); };
        PERSISTENT(Barrier)(comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::scan:
        x.send.resize(N), x.recv.resize(N);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me](int s) {
            std::vector<int> e(N, 0);
            for (std::size_t i = 0; i < N; ++i)
                for (int q = 0; q <= me; ++q) e[i] += value(q, int(i), s);
            return e;
        };
        PERSISTENT(Scan)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::alltoall:
        x.send.resize(N * std::size_t(P)), x.recv.resize(N * std::size_t(P));
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, P](int s) {
            std::vector<int> e;
            for (int q = 0; q < P; ++q)
                for (std::size_t i = 0; i < N; ++i) e.push_back(value(q, int(N * std::size_t(me) + i), s));
            return e;
        };
        PERSISTENT(Alltoall)(x.send.data(), n, MPI_INT, x.recv.data(), n, MPI_INT, comm, MPI_INFO_NULL, &x.req);
        break;
    }
    return p;
}

// A rank's order of starts: rotated by the rank, reversed on odd ranks.
std::vector<std::size_t> order_for(int r, std::size_t n, int start)
{
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = (i + std::size_t(r) + std::size_t(start)) % n;
    if (r % 2 == 1) std::reverse(order.begin(), order.end());
    return order;
}

// A blocking allreduce and bcast with a check, between starts.
void blocking_pair(int salt)
{
    int in = value(rank, 0, salt), out = 0, expected = 0;
    for (int q = 0; q < size; ++q) expected += value(q, 0, salt);
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (out != expected) fail("blocking allreduce between persistent starts");
    int b = rank == 0 ? salt : -1;
    MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (b != salt) fail("blocking bcast between persistent starts");
}

// One round: every collective's persistent request (with `forced` per collective), started in
// each rank's own order three times, blocking calls placed differently on each rank.
void persistent_round(const std::vector<std::string>& forced, int n, const std::string& label)
{
    for (std::size_t k = 0; k < kAll.size(); ++k)
        set_control("coll_loom_" + collective_name(kAll[k]) + "_algorithm", forced[k].c_str());
    std::vector<std::unique_ptr<Persistent>> reqs;
    for (loom::Collective c : kAll) reqs.push_back(make_persistent(c, n, MPI_COMM_WORLD));
    for (int start = 0; start < 3; ++start) {
        std::snprintf(where, sizeof where, "part orders, persistent %s, n %d, start %d", label.c_str(), n, start);
        const int salt = start * 13 + n;
        for (auto& r : reqs) r->fill(salt);
        const auto order = order_for(rank, reqs.size(), start);
        // Even ranks make the blocking calls after starting everything, odd ranks before.
        if (rank % 2 == 1) blocking_pair(salt);
        for (std::size_t i : order) MPI_Start(&reqs[i]->req);
        if (rank % 2 == 0) blocking_pair(salt);
        for (std::size_t i : order_for(rank + 1, reqs.size(), start)) MPI_Wait(&reqs[i]->req, MPI_STATUS_IGNORE);
        for (auto& r : reqs)
            if (r->recv != r->expect(salt)) fail(r->what + " started out of order, " + label + ": wrong result");
    }
    for (auto& r : reqs) MPI_Request_free(&r->req);
}

// Non-blocking operations on two communicators, started in the same order everywhere (MPI's
// rule) and completed in a different order on each rank.
void nonblocking_round(MPI_Comm other, int n, const std::string& label)
{
    std::snprintf(where, sizeof where, "part orders, non-blocking %s, n %d", label.c_str(), n);
    const auto N = std::size_t(n);
    std::vector<std::vector<int>> bufs(6, std::vector<int>(N * std::size_t(size)));
    std::vector<int> sendbuf(N * std::size_t(size));
    for (std::size_t i = 0; i < sendbuf.size(); ++i) sendbuf[i] = value(rank, int(i), n);
    MPI_Request reqs[6];
    MPI_Comm comms[2] = {MPI_COMM_WORLD, other};
    for (int k = 0; k < 6; ++k) {
        MPI_Comm comm = comms[k % 2];
        std::vector<int>& out = bufs[std::size_t(k)];
        if (k / 2 == 0) MPI_Iallreduce(sendbuf.data(), out.data(), n, MPI_INT, MPI_SUM, comm, &reqs[k]);
        if (k / 2 == 1) {
            if (rank == 0) std::copy(sendbuf.begin(), sendbuf.begin() + n, out.begin());
            MPI_Ibcast(out.data(), n, MPI_INT, 0, comm, &reqs[k]);
        }
        if (k / 2 == 2) MPI_Iallgather(sendbuf.data(), n, MPI_INT, out.data(), n, MPI_INT, comm, &reqs[k]);
    }
    for (std::size_t i : order_for(rank, 6, n)) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    for (int k = 0; k < 6; ++k)
        for (std::size_t i = 0; i < N * (k / 2 == 2 ? std::size_t(size) : 1); ++i) {
            int e = 0;
            if (k / 2 == 0)
                for (int q = 0; q < size; ++q) e += value(q, int(i), n);
            if (k / 2 == 1) e = value(0, int(i), n);
            if (k / 2 == 2) e = value(int(i / N), int(i % N), n);
            if (bufs[std::size_t(k)][i] != e) {
                fail("non-blocking operation " + std::to_string(k) + " completed out of order, " + label);
                break;
            }
        }
}

void part_orders()
{
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    // Rounds: loom's choice, then the k-th algorithm of every collective (wrapping), then shm
    // for every collective that has it (the case that hung: two persistent shm requests).
    std::vector<std::vector<std::string>> names;
    std::size_t rounds = 0;
    for (loom::Collective c : kAll) {
        names.push_back(forced_names(c));
        rounds = std::max(rounds, names.back().size());
    }
    auto round_of = [&](std::size_t k) {
        std::vector<std::string> f;
        for (const auto& list : names) f.push_back(list[k % list.size()]);
        return f;
    };
    std::vector<std::pair<std::string, std::vector<std::string>>> plan;
    for (std::size_t k = 0; k < rounds; ++k) {
        std::string label = "forced";
        for (const std::string& s : round_of(k)) label += " " + (s.empty() ? std::string("(choice)") : s);
        plan.emplace_back(label, round_of(k));
    }
    if (loom_loaded) plan.emplace_back("shm everywhere", std::vector<std::string>(kAll.size(), "shm"));
    for (const auto& [label, forced] : plan)
        for (int n : {1, 7, 1000}) {
            persistent_round(forced, n, label);
            for (std::size_t k = 0; k < kAll.size(); ++k)
                set_control("coll_loom_" + collective_name(kAll[k]) + "_algorithm", forced[k].c_str());
            nonblocking_round(other, n, label);
        }
    for (loom::Collective c : kAll) set_control("coll_loom_" + collective_name(c) + "_algorithm", "");
    MPI_Comm_free(&other);
}

// ---- part intercomm ----

void part_intercomm()
{
    if (size < 2) return;
    const int color = rank % 2;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &inter);
    int lrank, lsize, rsize;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    const int n = 5;
    for (int round = 0; round < 2; ++round) {
        std::snprintf(where, sizeof where, "part intercomm, %s", round == 0 ? "blocking" : "non-blocking");
        auto wait = [&](MPI_Request* r) {
            if (round == 1) MPI_Wait(r, MPI_STATUS_IGNORE);
        };
        MPI_Request req = MPI_REQUEST_NULL;
        // Allreduce: each group gets the sum over the other group (of the other group's world ranks).
        std::vector<int> in(n), out(n, -1);
        for (int i = 0; i < n; ++i) in[std::size_t(i)] = value(rank, i, round);
        if (round == 0)
            MPI_Allreduce(in.data(), out.data(), n, MPI_INT, MPI_SUM, inter);
        else
            MPI_Iallreduce(in.data(), out.data(), n, MPI_INT, MPI_SUM, inter, &req);
        wait(&req);
        for (int i = 0; i < n; ++i) {
            int e = 0;
            for (int q = 1 - color; q < size; q += 2) e += value(q, i, round);
            if (out[std::size_t(i)] != e) { fail("inter-communicator allreduce"); break; }
        }
        // Bcast from group 0's first rank to group 1.
        std::vector<int> b(n, -1);
        const int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        if (root == MPI_ROOT) for (int i = 0; i < n; ++i) b[std::size_t(i)] = value(0, i, round);
        if (round == 0)
            MPI_Bcast(b.data(), n, MPI_INT, root, inter);
        else
            MPI_Ibcast(b.data(), n, MPI_INT, root, inter, &req);
        wait(&req);
        if (color == 1 || lrank == 0)
            for (int i = 0; i < n; ++i)
                if (b[std::size_t(i)] != value(0, i, round)) { fail("inter-communicator bcast"); break; }
        // Allgather: every rank gets the other group's blocks.
        std::vector<int> all(std::size_t(n * rsize), -1);
        if (round == 0)
            MPI_Allgather(in.data(), n, MPI_INT, all.data(), n, MPI_INT, inter);
        else
            MPI_Iallgather(in.data(), n, MPI_INT, all.data(), n, MPI_INT, inter, &req);
        wait(&req);
        for (int q = 0; q < rsize; ++q)
            for (int i = 0; i < n; ++i)
                if (all[std::size_t(q * n + i)] != value(2 * q + 1 - color, i, round)) {
                    fail("inter-communicator allgather");
                    q = rsize;
                    break;
                }
        // Scatter from group 1's first rank to group 0.
        std::vector<int> part(n, -1), whole;
        const int sroot = color == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        if (sroot == MPI_ROOT)
            for (int q = 0; q < rsize; ++q)
                for (int i = 0; i < n; ++i) whole.push_back(value(q, i, round + 10));
        if (round == 0)
            MPI_Scatter(whole.data(), n, MPI_INT, part.data(), n, MPI_INT, sroot, inter);
        else
            MPI_Iscatter(whole.data(), n, MPI_INT, part.data(), n, MPI_INT, sroot, inter, &req);
        wait(&req);
        if (color == 0)
            for (int i = 0; i < n; ++i)
                if (part[std::size_t(i)] != value(lrank, i, round + 10)) { fail("inter-communicator scatter"); break; }
        if (round == 0)
            MPI_Barrier(inter);
        else
            MPI_Ibarrier(inter, &req);
        wait(&req);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::string part = "all";
    int timeout = 240;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--part") == 0) part = argv[i + 1];
        if (std::strcmp(argv[i], "--timeout") == 0) timeout = std::atoi(argv[i + 1]);
    }
    if (part != "all" && part != "arrays" && part != "orders" && part != "intercomm") {
        if (rank == 0) std::fprintf(stderr, "drop_in_check: --part arrays|orders|intercomm|all, not %s\n", part.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    std::signal(SIGALRM, on_alarm);
    alarm(unsigned(timeout));
    // Proof that loom served what the parts check (when it is loaded: every part also runs
    // without it, --mca coll ^loom --without-loom, to show what Open MPI alone does).
    const char* watched[] = {"iallgatherv", "ireduce_scatter", "allgatherv_init", "reduce_scatter_init",
                             "bcast_init", "barrier_init", "iallreduce"};
    std::vector<loom::tools::LoomCounters> counters(std::size(watched));
    bool loaded = true;
    for (std::size_t i = 0; i < std::size(watched); ++i) loaded = loaded && counters[i].open(watched[i]);
    bool without = false;
    for (int i = 1; i < argc; ++i) {
        without = without || std::strcmp(argv[i], "--without-loom") == 0;
        if (std::strcmp(argv[i], "--types-freed-late") == 0) types_freed_early = false;
    }
    if (!loaded && !without && part != "intercomm") {
        std::fprintf(stderr, "drop_in_check: loom is not loaded (its MPI_T counters are missing)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    loom_loaded = loaded;
    if (part == "arrays" || part == "all") part_arrays();
    if (part == "orders" || part == "all") part_orders();
    if (part == "intercomm" || part == "all") part_intercomm();
    alarm(0);
    std::string served;
    if (loaded && part != "intercomm")
        for (std::size_t i = 0; i < std::size(watched); ++i) {
            const auto s = counters[i].served();
            served += std::string(i ? ", " : "") + watched[i] + " " + std::to_string(s);
            if (s == 0 && size > 1 && (part == "all" || (part == "arrays") == (i < 4 || i == 6)))
                fail(std::string("loom served no ") + watched[i] + " call: the part did not test loom");
        }
    long total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("drop_in_check np=%d part %s: %s; loom served %s\n", size, part.c_str(),
                    total == 0 ? "passed" : "FAILED", served.empty() ? "(not checked)" : served.c_str());
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
