// What shm_check's parts share: the collectives it forces to shm, the communicators it runs
// them on, failure reporting, the segment accounting (shm_check_segments.cpp) and the calls
// with their checks (shm_check_calls.cpp).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "registry.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace shm_check {

using Coll = loom::Collective;

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

// The collectives under test: every row of collectives.def whose algorithms in loom's registry
// include `family` or shm (the others have neither: rank 0 names them, tested() leaves them out).
extern std::string family;
const std::vector<Coll>& tested();
// What each collective of tested() is forced to: `family` where the registry has it, else shm
// (the same segment serves both: cma's calls interleave with shm's).
std::string forced_for(Coll c);
// loom through MPI_T: its counters (MPI_Abort if loom is not loaded), and forced_for() forced
// for every collective of tested().
void open_counters();
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
