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
// The parts live in drop_in_arrays.cpp and drop_in_orders.cpp, intercomm and main() here.
// Every result is checked against a reference computed here. A hang is a failure: a watchdog
// (--timeout S, default 240) aborts the job with a message naming the part and round.
#include "drop_in_check.hpp"
#include "loom_mpi_t.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace drop_in {

int rank = 0, size = 1;
bool loom_loaded = true;
bool types_freed_early = true;
char where[160] = "start";

namespace {
long failures = 0;
} // namespace

void fail(const std::string& what)
{
    if (failures++ < 30) std::fprintf(stderr, "drop_in_check FAIL (rank %d, %s): %s\n", rank, where, what.c_str());
}

int value(int r, int i, int salt) { return (r * 7 + i * 3 + salt * 5) % 101 - 50; }

void complete_and_check(MPI_Request& req, bool persistent, int salt, const std::function<void(int)>& fill,
                        const std::function<void(int, int)>& check)
{
    for (int start = 0; start < (persistent ? 3 : 1); ++start) {
        const int s = salt + start;
        if (persistent) {
            fill(s);
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check(s, start);
    }
}

void force(loom::Collective c, const std::string& algorithm)
{
    if (loom_loaded && !loom::tools::force_algorithm(loom::to_string(c), algorithm)) {
        std::fprintf(stderr, "drop_in_check: cannot force %s (is loom loaded?)\n", algorithm.c_str());
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

} // namespace drop_in

using namespace drop_in;

namespace {

void on_alarm(int)
{
    char text[256];
    const int n = std::snprintf(text, sizeof text, "drop_in_check FAIL (rank %d): hung in %s\n", rank, where);
    (void)!write(2, text, std::size_t(n));
    _exit(3);
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
