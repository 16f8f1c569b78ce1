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

// Checks this process's segments against the communicators still alive. Called between
// collectives, so every segment this process created has been unlinked already.
int check_segments(const std::vector<const Comm*>& live, const std::string& when)
{
    int want = 0;
    for (const Comm* c : live) want += c->mapped;
    const int mapped = loom_mappings(), fds = loom_descriptors(), named = named_segments_of(long(getpid()));
    if (mapped != want)
        fail(when + ": " + std::to_string(mapped) + " mappings of loom segments in /proc/self/maps, expected " +
             std::to_string(want) + " (one per live communicator that used shm)");
    if (fds != 0) fail(when + ": " + std::to_string(fds) + " open descriptors of loom segments");
    if (named != 0) fail(when + ": " + std::to_string(named) + " names this process created are still in /dev/shm");
    ++cases;
    return mapped;
}

} // namespace shm_check
