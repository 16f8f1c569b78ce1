// What shm_check's parts share: the collectives it forces to shm, the communicators it runs
// them on, failure reporting, the segment accounting (shm_check_segments.cpp) and the calls
// with their checks (shm_check_calls.cpp).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

namespace shm_check {

enum Coll {
    kAllreduce,
    kReduce,
    kBcast,
    kBarrier,
    kAllgather,
    kAllgatherv,
    kReduceScatterBlock,
    kAlltoall,
    kCollCount
};
inline constexpr const char* kCollName[kCollCount] = {
    "allreduce", "reduce", "bcast", "barrier", "allgather", "allgatherv", "reduce_scatter_block", "alltoall"};

// This process's place in MPI_COMM_WORLD and its tallies (shm_check.cpp).
extern int world_rank, world_size;
extern long failures, cases;

void fail(const std::string& what);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- communicators and their segments (shm_check_segments.cpp) ----

struct Comm {
    MPI_Comm comm = MPI_COMM_NULL;
    std::string name;
    int rank = 0, size = 1;
    bool mapped = false; // loom served an shm call here, so this process maps its segment
};

Comm make_comm(MPI_Comm comm, std::string name);
void free_comm(Comm& c);

// Open descriptors of loom segments in process `pid` ("self" or a number).
int loom_descriptors(const std::string& pid = "self");
// Names in /dev/shm created by process `pid` ("loom-<pid>-<n>-<random>").
int named_segments_of(long pid);
// Checks this process's segments against the communicators still alive (mappings, open
// descriptors, names in /dev/shm); returns the number of loom segments mapped.
int check_segments(const std::vector<const Comm*>& live, const std::string& when);

// ---- the calls and their checks (shm_check_calls.cpp) ----

// loom through MPI_T: its counters (MPI_Abort if loom is not loaded), and shm forced for
// every collective of kCollName.
void open_counters();
// Forces `family` ("shm", or "cma" where the registry has it) for every collective.
extern std::string family;
void force_shm();

// Size classes: indices into shm_check_calls.cpp's element and byte counts.
constexpr int kSizeClasses = 8;

struct Case {
    Coll coll;
    int comm;       // index into the communicators
    int size_class; // index into kCounts / kBytes
    bool in_place;
    int salt;
};

// Runs one call on `c`, checks its result against a reference and that loom served it.
void run_case(Comm& c, const Case& k);

} // namespace shm_check
