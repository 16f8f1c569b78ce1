// bench_core: what the MPI tools that time collectives share (loom-bench, loom-sim-calibrate
// --check). It makes one collective call of a given message size, checks its result against a
// reference computed here (never by Open MPI), and times it OSU-style. It also holds the
// small MPI helpers those tools need: a median, values gathered to or sent from rank 0 without
// a collective loom serves, an MPI_T control variable read, and the machine's names.
//
// Message sizes follow loom's definition (selection_rules/RULES.md, "Message size"): the
// vector for allreduce, reduce and bcast, the whole vector for allgather(v) and
// reduce_scatter(_block), one block for alltoall, 0 for barrier; the neighbourhood
// collectives' size is a neighbour's block (make_case). Reductions are MPI_DOUBLE
// with MPI_SUM, the rest MPI_BYTE; bcast and reduce have root 0; allgatherv and
// reduce_scatter have equal blocks. Every call is on MPI_COMM_WORLD but the neighbourhood
// collectives', on the topology set_topology names.
#pragma once

#include "bench_topology.hpp"
#include "registry.hpp"

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace loom::bench {

constexpr double kUs = 1e-6;

// ---- small MPI and text helpers ------------------------------------------------------------

// The median of `v` (0 if it is empty).
double median(std::vector<double> v);

// A barrier whose waiting ranks sleep instead of spinning, so on a machine with few cores the
// ranks that are not measuring do not steal the measuring ranks' CPU.
void sleeping_barrier();

// Rank 0 gets every rank's value (through MPI_Gather: not a collective loom serves, so it
// never runs a forced algorithm and never counts in loom's counters).
std::vector<double> gather_to_root(double value, int rank, int size);

// Rank 0 gets the largest of every rank's value (the others get 0).
double max_over_ranks(double value, int rank, int size);

// Every rank gets rank 0's value (MPI_Scatter, for the same reason as gather_to_root).
long from_root(long value, int size);

// How many nodes MPI_COMM_WORLD spans, known to every rank: the number of distinct
// MPI_Get_processor_name values (gathered and sent back without a collective loom serves);
// *max_per_node (if given) receives the most ranks any node has.
int count_nodes(int rank, int size, int* max_per_node = nullptr);

// An integer MPI control variable (e.g. btl_vader_eager_limit), or nothing if it is absent.
std::optional<unsigned long long> read_cvar(const std::string& name);

// The local date and time, e.g. "2024-05-01 12:00:00 UTC".
std::string now_text();

// "model name" from /proc/cpuinfo, without '#' (which starts a comment in loom-sim model files).
std::string cpu_name();

std::string host_name();

// ---- one collective call -------------------------------------------------------------------

// The collectives a Case can call: every row of collectives.def (the table).
bool can_call(Collective c);

// The topology the neighbourhood collectives run on (nullptr: none, and make_case makes no case
// of theirs); set alike on every rank before their first case, kept alive while they run.
void set_topology(const BenchTopology* t);
const BenchTopology* topology();

// One call's shape.
struct Case {
    Collective collective;
    std::size_t nominal; // the size asked for
    std::size_t bytes;   // loom's message size of the calls made (blocks round down)
    std::size_t count;   // count argument: elements (reductions; per rank for reduce_scatter), bytes
                         // (bcast), bytes per rank (allgather(v)) or per block (alltoall)
};

// The call of `c` for `nominal` bytes at `ranks` ranks, or nothing if the size is too small
// for it (a reduction's vector, or a per-rank block, under one element) or `c` cannot be
// called. Barrier is always the call of 0 bytes. For alltoall `nominal` is what each rank
// sends in all (its buffer), so the message size, one block, is nominal / ranks. For the
// neighbourhood collectives `nominal` is the bytes of one neighbour's block (loom's message
// size for them is 0: ranks' blocks may differ), and bytes and count are that block; nothing if
// the blocks' int displacements would pass INT_MAX.
std::optional<Case> make_case(Collective c, std::size_t nominal, int ranks);

// Send and receive buffers big enough for every case up to `max_bytes` (a message size).
struct Buffers {
    std::vector<double> send, recv;
    std::vector<int> counts, displs; // allgatherv and reduce_scatter: equal blocks (call_once fills them)
    std::vector<MPI_Datatype> types; // alltoallw: MPI_BYTE for every peer
    std::vector<MPI_Aint> byte_displs; // neighbor_alltoallw: displacements in bytes
    explicit Buffers(std::size_t max_bytes) : send(max_bytes / sizeof(double) + 1), recv(send.size()) {}
    unsigned char* send_bytes() { return reinterpret_cast<unsigned char*>(send.data()); }
    unsigned char* recv_bytes() { return reinterpret_cast<unsigned char*>(recv.data()); }
};

// How calls are made: blocking (MPI_Allreduce; the default), or non-blocking (MPI_Iallreduce,
// then MPI_Wait at once), or persistent (set_persistent as well: MPI_Allreduce_init once per
// timed run - MPIX_ on Open MPI 4.1 - then MPI_Start and MPI_Wait per call). Set before the
// first call, alike on every rank.
void set_nonblocking(bool on);
bool nonblocking();
void set_persistent(bool on);
bool persistent();

// One call of the case's collective, in the form set.
void call_once(const Case& k, Buffers& b);
// Starts one non-blocking call of the case; the caller completes *request.
void start_once(const Case& k, Buffers& b, MPI_Request* request);

// Fills the buffers with data whose result is known, makes one call and checks this rank's
// part of the result (every rank calls it; each returns its own verdict).
bool call_and_verify(const Case& k, Buffers& b, int rank, int size);

// ---- timing ------------------------------------------------------------------------------

// A barrier, then `calls` calls; rank 0 gets the slowest rank's mean seconds per call (the
// others get 0).
double timed_run(const Case& k, Buffers& b, int rank, int size, long calls);

// OSU-style overlap (osu_iallreduce): a barrier, then `calls` times: start the non-blocking
// call, compute for `compute` seconds (a busy loop making no MPI call), wait; rank 0 gets the
// slowest rank's mean seconds per call (the others get 0). With t the pure time of a call,
// overlap = 100 (1 - (this - compute) / t), at least 0: 100 when the whole call hid behind
// the computation.
double timed_overlap_run(const Case& k, Buffers& b, int rank, int size, long calls, double compute);

struct IterationPlan {
    double target_seconds = 0.1; // wanted duration of one timed run
    long min_iterations = 3, max_iterations = 2000;
    // After the first estimate (from 2 calls), warm up for about a tenth of the target and
    // estimate again: steadier for calls of a few microseconds, whose first calls are slow.
    bool refine = false;
};

// Warms up and returns how many calls make a timed run of about the plan's target, the same
// on every rank; `calls` grows by the calls made.
long plan_iterations(const Case& k, Buffers& b, int rank, int size, const IterationPlan& plan, long& calls);

struct Timing {
    double seconds = 0; // rank 0: median over repeats of the slowest rank's mean time per call
    long iterations = 0;
    long calls = 0; // calls of the collective made, warm-up included
};

// OSU-style: plan_iterations, then `repeats` timed runs; the median of them.
Timing time_case(const Case& k, Buffers& b, int rank, int size, int repeats, const IterationPlan& plan = {});

} // namespace loom::bench
