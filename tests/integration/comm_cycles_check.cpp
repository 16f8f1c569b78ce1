// comm_cycles_check: 10,000 communicators created, used and freed, and nothing leaks.
//
// Each cycle creates a communicator and makes a few collective calls on it, checked, then
// frees it; the cycles alternate between
//   * MPI_Comm_split into two halves, one 8-byte allreduce and one bcast (the common
//     short-lived communicator: loom must make no segment for it);
//   * MPI_Comm_dup of MPI_COMM_WORLD and 40 allreduces of 1 KiB (past coll_loom_shm_min_calls,
//     so loom sets up a shared segment, and reuses the pooled ones of earlier cycles);
//   * every 100th cycle, MPI_Comm_dup with shm forced for allgather (a segment at once), and
//     50 cycles later one with cma forced for allreduce (single copy: the segment's probe).
// After a warm-up of 500 cycles this process's resident memory, its open file descriptors and
// its mappings of loom segments are counted; at the end they must not have grown beyond a
// small allowance (memory: 1 MiB, for the allocator's own bookkeeping), and the loom segments
// mapped must be at most coll_loom_shm_pool (kept for reuse, no communicator alive). loom's
// MPI_T counters must show it served the calls (a run where everything went to Open MPI
// would prove nothing).
//
//   mpirun ... comm_cycles_check [--cycles 10000]
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_mpi_t.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

namespace {

int rank = 0, size = 1;
long failures = 0;

void fail(const std::string& what)
{
    if (failures++ < 20) std::fprintf(stderr, "comm_cycles_check FAIL (rank %d): %s\n", rank, what.c_str());
}

long resident_kib()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

int open_descriptors()
{
    int n = 0;
    if (DIR* dir = opendir("/proc/self/fd")) {
        while (const dirent* e = readdir(dir)) n += e->d_name[0] != '.';
        closedir(dir);
    }
    return n;
}

int loom_segment_mappings()
{
    std::ifstream maps("/proc/self/maps");
    int n = 0;
    for (std::string line; std::getline(maps, line);) n += line.find("/memfd:loom-shm") != std::string::npos;
    return n;
}

int read_int_cvar(const char* name)
{
    int provided, index, count, value = -1;
    MPI_T_cvar_handle handle;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
        MPI_T_cvar_read(handle, &value);
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return value;
}

void check_allreduce(MPI_Comm c, int n)
{
    int r, p;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &p);
    std::vector<int> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < n; ++i) in[std::size_t(i)] = r * 3 + i;
    MPI_Allreduce(in.data(), out.data(), n, MPI_INT, MPI_SUM, c);
    for (int i = 0; i < n; ++i)
        if (out[std::size_t(i)] != 3 * p * (p - 1) / 2 + p * i) return fail("wrong allreduce result");
}

void cycle(int i)
{
    MPI_Comm c;
    if (i % 2 == 0) {
        MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2 ? 0 : 1, rank, &c);
        check_allreduce(c, 2);
        int v = rank;
        MPI_Bcast(&v, 1, MPI_INT, 0, c);
        int root_world = 0;
        MPI_Group g, world_group;
        MPI_Comm_group(c, &g);
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        int zero = 0;
        MPI_Group_translate_ranks(g, 1, &zero, world_group, &root_world);
        MPI_Group_free(&g);
        MPI_Group_free(&world_group);
        if (v != root_world) fail("wrong bcast result");
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        const bool forced = i % 100 == 1, cma = i % 100 == 51;
        if (forced) loom::tools::force_algorithm("allgather", "shm");
        if (cma) loom::tools::force_algorithm("allreduce", "cma");
        for (int k = 0; k < 40; ++k) check_allreduce(c, 256);
        std::vector<int> all(std::size_t(size), -1);
        MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, c);
        for (int q = 0; q < size; ++q)
            if (all[std::size_t(q)] != q) fail("wrong allgather result");
        if (forced) loom::tools::force_algorithm("allgather", "");
        if (cma) loom::tools::force_algorithm("allreduce", "");
    }
    MPI_Comm_free(&c);
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int cycles = 10000;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--cycles") == 0) cycles = std::atoi(argv[i + 1]);
    const int warm_up = cycles / 20;

    loom::tools::LoomCounters allreduce;
    if (!allreduce.open("allreduce")) {
        std::fprintf(stderr, "comm_cycles_check: loom is not loaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int pool = read_int_cvar("coll_loom_shm_pool");
    if (pool < 0) fail("cannot read coll_loom_shm_pool through MPI_T");

    long rss0 = 0;
    int fds0 = 0, maps0 = 0;
    const unsigned long long served0 = allreduce.served();
    for (int i = 0; i < cycles; ++i) {
        if (i == warm_up) {
            rss0 = resident_kib();
            fds0 = open_descriptors();
            maps0 = loom_segment_mappings();
        }
        cycle(i);
    }
    const long rss = resident_kib();
    const int fds = open_descriptors(), maps = loom_segment_mappings();
    const unsigned long long served = allreduce.served() - served0;

    if (rss - rss0 > 1024)
        fail("resident memory grew by " + std::to_string(rss - rss0) + " KiB over " + std::to_string(cycles - warm_up) +
             " cycles (" + std::to_string(rss0) + " -> " + std::to_string(rss) + " KiB)");
    if (fds > fds0) fail("open descriptors grew from " + std::to_string(fds0) + " to " + std::to_string(fds));
    if (maps > pool)
        fail(std::to_string(maps) +
             " loom segments still mapped, more than coll_loom_shm_pool=" + std::to_string(pool));
    // Every allreduce of the dup cycles (40 each) is served: served or handed on by a fallback
    // rule would both be loom's choice, so require most of them.
    if (size >= 2 && served < (unsigned long long)(cycles / 2) * 40)
        fail("loom served only " + std::to_string(served) + " allreduces");

    long all_failures = 0;
    MPI_Reduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf(
            "comm_cycles_check np=%d: %d cycles; rank 0 after the warm-up -> at the end: resident %ld -> %ld KiB, "
            "descriptors %d -> %d, loom segments mapped %d -> %d (pool %d); %llu allreduces served; %ld failures\n",
            size, cycles, rss0, rss, fds0, fds, maps0, maps, pool, served, all_failures);
    MPI_Finalize();
    return all_failures == 0 ? 0 : 1;
}
