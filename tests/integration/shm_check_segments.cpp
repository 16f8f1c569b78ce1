// shm_check's segment accounting: loom segments mapped in /proc/self/maps, descriptors of
// them open in a process, and names in /dev/shm, checked against the live communicators.
#include "shm_check.hpp"

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <unistd.h>
#include <utility>

namespace shm_check {

Comm make_comm(MPI_Comm comm, std::string name)
{
    Comm c;
    c.comm = comm;
    c.name = std::move(name);
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    return c;
}

void free_comm(Comm& c)
{
    MPI_Comm_free(&c.comm);
    c.mapped = false;
}

namespace {

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// A path (in /proc/<pid>/maps or an fd's link) of a loom segment: POSIX or memfd.
bool is_loom_segment(const std::string& path)
{
    return contains(path, "/dev/shm/loom-") || contains(path, "/memfd:loom-shm");
}

int loom_mappings()
{
    std::ifstream maps("/proc/self/maps");
    int n = 0;
    for (std::string line; std::getline(maps, line);) n += is_loom_segment(line);
    return n;
}

} // namespace

// Open descriptors of loom segments in process `pid` ("self" or a number).
int loom_descriptors(const std::string& pid)
{
    int n = 0;
    const std::string dir_path = "/proc/" + pid + "/fd";
    if (DIR* dir = opendir(dir_path.c_str())) {
        while (const dirent* e = readdir(dir)) {
            char target[512];
            const std::string path = dir_path + "/" + e->d_name;
            const ssize_t len = readlink(path.c_str(), target, sizeof target - 1);
            if (len > 0) n += is_loom_segment(std::string(target, std::size_t(len)));
        }
        closedir(dir);
    }
    return n;
}

// Names in /dev/shm created by process `pid` ("loom-<pid>-<n>-<random>").
int named_segments_of(long pid)
{
    const std::string prefix = "loom-" + std::to_string(pid) + "-";
    int n = 0;
    if (DIR* dir = opendir("/dev/shm")) {
        while (const dirent* e = readdir(dir)) n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
        closedir(dir);
    }
    return n;
}

// loom's coll_loom_shm_pool: how many freed segments a process keeps (read through MPI_T).
int pool_limit()
{
    static int limit = [] {
        int provided, index, count, value = -1;
        MPI_T_cvar_handle handle;
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        if (MPI_T_cvar_get_index("coll_loom_shm_pool", &index) == MPI_SUCCESS &&
            MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
            MPI_T_cvar_read(handle, &value);
            MPI_T_cvar_handle_free(&handle);
        }
        MPI_T_finalize();
        if (value < 0) fail("cannot read coll_loom_shm_pool through MPI_T");
        return value < 0 ? 0 : value;
    }();
    return limit;
}

// Checks this process's segments against the communicators still alive. Without a pool
// (coll_loom_shm_pool 0) exactly: one mapping per live communicator that used shm, no open
// descriptor (the creator closes the path once all mapped). With a pool of N: the live ones
// plus at most N kept for reuse; the creator of a live or kept segment holds its descriptor,
// so that later communicators can map it. Called between collectives.
int check_segments(const std::vector<const Comm*>& live, const std::string& when)
{
    int want = 0, created = 0;
    for (const Comm* c : live) {
        want += c->mapped;
        created += c->mapped && c->rank == 0;
    }
    const int pool = pool_limit();
    const int mapped = loom_mappings(), fds = loom_descriptors(), named = named_segments_of(long(getpid()));
    if (mapped < want || mapped > want + pool)
        fail(when + ": " + std::to_string(mapped) + " mappings of loom segments in /proc/self/maps, expected " +
             std::to_string(want) + (pool > 0 ? " to " + std::to_string(want + pool) : "") +
             " (one per live communicator that used shm, plus up to coll_loom_shm_pool=" + std::to_string(pool) +
             " kept)");
    const int fds_low = pool > 0 ? created : 0, fds_high = pool > 0 ? created + pool : 0;
    if (fds < fds_low || fds > fds_high)
        fail(when + ": " + std::to_string(fds) + " open descriptors of loom segments, expected " +
             std::to_string(fds_low) + " to " + std::to_string(fds_high) +
             " (coll_loom_shm_pool=" + std::to_string(pool) + ")");
    if (named != 0) fail(when + ": " + std::to_string(named) + " names this process created are still in /dev/shm");
    ++cases;
    return mapped;
}

} // namespace shm_check
