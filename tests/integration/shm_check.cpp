// shm_check: the shared-memory family under mpirun, with shm forced (through MPI_T) for every
// collective of collectives.def it implements (allreduce, reduce, bcast, barrier, allgather,
// allgatherv, reduce_scatter_block, alltoall), and with --family cma the single-copy family
// where the registry has it (every collective but scan and exscan), shm elsewhere. Rank 0
// names the collectives that have neither (tested(), shm_check_calls.cpp).
//
//   1. Interleaving: calls of different collectives back to back, alternating between
//      MPI_COMM_WORLD, a dup and a split, with no synchronisation between them (each rank
//      checks its own results against references it computes itself, never through MPI), at
//      sizes 0, 1, odd, exactly one 32 KiB chunk, just over one and two chunks, in place and
//      not. loom's MPI_T counters must show loom served every call and declined none.
//   2. Churn: thousands of MPI_Comm_dup / MPI_Comm_split, each new communicator's first shm
//      call setting up its segment, then freed (some held a while, freed out of order).
//   After each part, every rank checks its segments: each live communicator on which shm
//   served a call holds exactly one mapping of a loom segment in /proc/self/maps (a freed
//   communicator none: a leaked segment keeps its mapping), no descriptor of one stays open
//   between calls, and no name created by this process is left in /dev/shm. A loom segment is
//   either a POSIX one, /dev/shm/loom-<pid>-<n>-<random> (unlinked once every rank has mapped
//   it), or a memfd named "loom-shm" (maps and fds show "/memfd:loom-shm (deleted)"); the
//   checks know both, so they hold whichever shm_segment.cpp uses.
//
//   mpirun ... shm_check [--churn N] [--keep-leaking N] [--pid-dir DIR] [--family cma]
//   mpirun ... shm_check --abort [--pid-dir DIR]           (needs np >= 2)
//   mpirun ... shm_check --abort-in-setup [--pid-dir DIR]  (needs np >= 2)
//
// --abort: after shm calls on MPI_COMM_WORLD and a dup (segments mapped), rank 1 calls
// MPI_Abort(MPI_COMM_WORLD, 3) while the others enter multi-chunk shm collectives, where they
// wait for it. --abort-in-setup: rank 1 aborts once rank 0 has created a new communicator's
// segment and waits for the other ranks to map it (the window in which a POSIX segment's name
// is still in /dev/shm, or a memfd still open in rank 0). Either way mpirun must end every
// rank; shm-leak-check checks that and /dev/shm afterwards.
// --pid-dir: every rank writes its pid to DIR/rank-<r> (for shm-leak-check).
// --family cma: the single-copy family forced instead of shm where it exists (allreduce,
// reduce, bcast, allgather(v), reduce_scatter_block; barrier stays shm), on the same segments;
// with --abort the other ranks then wait for rank 1 inside cma collectives.
// --keep-leaking N: does not free N of the churn's communicators (a deliberate leak: the
// segment check must then fail; shows that it can).
//
// The parts: shm_check_segments.cpp (the segment checks), shm_check_calls.cpp (the calls and
// their checks, loom through MPI_T); shm_check.hpp declares what they share.
#include "shm_check.hpp"

#include "call_model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace shm_check {

int world_rank = 0, world_size = 1;
long failures = 0, cases = 0;

void fail(const std::string& what)
{
    if (failures < 30) std::fprintf(stderr, "shm_check FAIL (world rank %d): %s\n", world_rank, what.c_str());
    ++failures;
}

namespace {

// The same permutation on every rank (no std::shuffle: its algorithm is unspecified).
template <class T>
void shuffle(std::vector<T>& v, std::mt19937& rng)
{
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

// ---- part 1: interleaved calls on three communicators ----

void interleaving(std::vector<Comm*>& comms)
{
    std::mt19937 rng(20240611);
    int salt = 1;
    // Two rounds of every (collective, communicator, size, in place) in a shuffled order...
    for (int round = 0; round < 2; ++round) {
        std::vector<Case> all;
        for (Coll coll : tested())
            for (int comm = 0; comm < int(comms.size()); ++comm)
                for (int size_class = 0; size_class < kSizeClasses; ++size_class)
                    for (bool in_place : {false, true}) {
                        if (in_place && !model::has_in_place(coll)) continue;
                        all.push_back(Case{coll, comm, size_class, in_place, 0});
                    }
        shuffle(all, rng);
        for (Case& k : all) {
            k.salt = salt++;
            run_case(*comms[std::size_t(k.comm)], k);
        }
    }
    // ...then many small calls in a random order: the collective and communicator change at
    // nearly every call, and fast ranks run ahead into the next call while slow ones finish.
    for (int i = 0; i < 600; ++i) {
        const Case k{tested()[rng() % tested().size()], int(rng() % comms.size()), int(rng() % 4), rng() % 2 == 0,
                     salt++};
        run_case(*comms[std::size_t(k.comm)],
                 Case{k.coll, k.comm, k.size_class, k.in_place && model::has_in_place(k.coll), k.salt});
    }
}

// ---- part 2: communicator churn ----

// The first shm call on a new communicator (which sets up its segment), with a check.
void first_call(Comm& c, int i)
{
    const int n = int(tested().size());
    const Coll coll = tested()[std::size_t(i % n)];
    run_case(c, Case{coll, 0, 1 + i % 3, (i / n) % 2 == 0 && model::has_in_place(coll), 100000 + i});
}

void churn(Comm& world, const std::vector<const Comm*>& others, int iterations, int keep_leaking, int& peak)
{
    std::mt19937 rng(777);
    std::deque<Comm> held; // a few communicators live for a while and are freed out of order
    std::vector<Comm> leaked;
    auto live = [&] {
        std::vector<const Comm*> v = others;
        for (const Comm& c : held) v.push_back(&c);
        for (const Comm& c : leaked) v.push_back(&c);
        return v;
    };
    for (int i = 0; i < iterations; ++i) {
        MPI_Comm dup;
        MPI_Comm_dup(world.comm, &dup);
        Comm d = make_comm(dup, "churn dup " + std::to_string(i));
        run_case(d, Case{Coll::allreduce, 0, 1 + i % 3, i % 2 == 0, 200000 + i});
        if (i % 10 == 3) { // a split of a held communicator or of the world, with varying colours
            Comm& parent = held.empty() || i % 20 == 3 ? world : held[rng() % held.size()];
            const int colours = 1 + (i / 10) % 3;
            MPI_Comm split;
            MPI_Comm_split(parent.comm, (parent.rank + i) % colours, i % 4 < 2 ? parent.rank : -parent.rank, &split);
            Comm s = make_comm(split, "churn split " + std::to_string(i));
            first_call(s, i);
            run_case(s, Case{Coll::barrier, 0, 0, false, 300000 + i});
            free_comm(s);
        }
        if (i % 50 == 7 && !held.empty()) { // a dup of a dup
            MPI_Comm dd;
            MPI_Comm_dup(held.back().comm, &dd);
            Comm c = make_comm(dd, "churn dup of a dup " + std::to_string(i));
            first_call(c, i);
            free_comm(c);
        }
        if (int(leaked.size()) < keep_leaking && i % 97 == 0) {
            leaked.push_back(d);
            continue;
        }
        if (i % 3 == 0) {
            held.push_back(d);
        } else {
            free_comm(d);
        }
        if (held.size() > 3) {
            const std::size_t victim = rng() % held.size();
            free_comm(held[victim]);
            held.erase(held.begin() + std::ptrdiff_t(victim));
        }
        if (i % 250 == 0)
            peak = std::max(peak, check_segments(live(), "during the churn, iteration " + std::to_string(i)));
    }
    peak = std::max(peak, check_segments(live(), "at the end of the churn, before freeing the held communicators"));
    for (Comm& c : held) free_comm(c);
    held.clear();
    // Deliberately leaked communicators (--keep-leaking) are forgotten without MPI_Comm_free:
    // their segments stay mapped, which the check after the churn must notice.
    for (Comm& c : leaked) c.mapped = false;
}

// ---- the abort modes ----

void write_pid(const char* dir)
{
    if (dir == nullptr) return;
    const std::string path = std::string(dir) + "/rank-" + std::to_string(world_rank);
    if (FILE* f = std::fopen(path.c_str(), "w")) {
        std::fprintf(f, "%ld\n", long(getpid()));
        std::fclose(f);
    }
}

[[noreturn]] void abort_run(bool in_setup)
{
    if (world_size < 2) {
        std::fprintf(stderr, "shm_check: --abort needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long rank0_pid = long(getpid());
    MPI_Bcast(&rank0_pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    open_counters();
    force_shm();
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    Comm world = make_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD"), d = make_comm(dup, "a dup");
    int salt = 1;
    for (int size_class : {1, 5, 7})
        for (Comm* c : {&world, &d})
            for (Coll coll : {Coll::allreduce, Coll::bcast, Coll::allgather, Coll::barrier})
                run_case(*c, Case{coll, 0, size_class, false, salt++});
    check_segments({&world, &d}, "before the abort");
    if (failures != 0) {
        std::fprintf(stderr, "shm_check --abort: failures before the abort\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 0) {
        std::printf("shm_check --abort%s: segments mapped on MPI_COMM_WORLD and a dup; rank 1 aborts next\n",
                    in_setup ? "-in-setup" : "");
        std::fflush(stdout);
    }
    const auto start = Clock::now();
    for (int i = 0;; ++i) {
        if (in_setup && i == 5) {
            // Everyone creates a new communicator; its first shm call sets up a segment.
            // Rank 0's descriptors for the live and kept segments, counted before the dup,
            // which rank 0 cannot leave (and start setting up) before rank 1 enters it.
            const int held = world_rank == 1 ? loom_descriptors(std::to_string(rank0_pid)) : 0;
            MPI_Comm fresh;
            MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
            Comm f = make_comm(fresh, "a fresh dup");
            if (world_rank == 1) {
                // Wait until rank 0 has created the segment (its name appears in /dev/shm, or
                // it holds one more memfd open than for the live and kept segments), so the
                // abort comes while rank 0 waits for the others to map it.
                auto creating = [&] {
                    return named_segments_of(rank0_pid) != 0 || loom_descriptors(std::to_string(rank0_pid)) > held;
                };
                const auto wait = Clock::now();
                while (!creating() && seconds_since(wait) < 10)
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                std::printf("shm_check --abort-in-setup: rank 1: rank 0 %s its segment; MPI_Abort now\n",
                            creating() ? "has created" : "did not create (10 s)");
                std::fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            run_case(f, Case{Coll::allreduce, 0, 7, false, salt++}); // never returns: rank 1 is gone
        }
        if (!in_setup && world_rank == 1 && i == 5) {
            std::printf("shm_check --abort: rank 1: MPI_Abort now\n");
            std::fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        // Multi-chunk calls, alternating communicators: the others wait inside them.
        run_case(world, Case{Coll::allreduce, 0, 7, false, salt++});
        run_case(d, Case{Coll::bcast, 0, 6, false, salt++});
        run_case(world, Case{Coll::allgather, 0, 5, i % 2 == 0, salt++});
        run_case(d, Case{Coll::reduce_scatter_block, 0, 6, false, salt++});
        if (seconds_since(start) > 60) {
            std::fprintf(stderr, "shm_check FAIL (rank %d): still running 60 s after rank 1's MPI_Abort\n", world_rank);
            std::_Exit(1);
        }
    }
}

} // namespace

} // namespace shm_check

int main(int argc, char** argv)
{
    using namespace shm_check;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int iterations = 2000, keep_leaking = 0;
    bool abort_mode = false, abort_in_setup = false;
    const char* pid_dir = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--churn" && i + 1 < argc)
            iterations = std::atoi(argv[++i]);
        else if (a == "--keep-leaking" && i + 1 < argc)
            keep_leaking = std::atoi(argv[++i]);
        else if (a == "--pid-dir" && i + 1 < argc)
            pid_dir = argv[++i];
        else if (a == "--family" && i + 1 < argc)
            family = argv[++i];
        else if (a == "--abort")
            abort_mode = true;
        else if (a == "--abort-in-setup")
            abort_in_setup = true;
        else {
            if (world_rank == 0) std::fprintf(stderr, "shm_check: unknown argument %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    write_pid(pid_dir);
    if (abort_mode || abort_in_setup) abort_run(abort_in_setup);

    // The communicators, made before shm is forced: MPI_COMM_WORLD, a dup, and a split
    // (even and odd ranks, each in reverse order).
    MPI_Comm dup, split;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &split);
    Comm world = make_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD"), d = make_comm(dup, "a dup"),
         s = make_comm(split, "a split");
    std::vector<Comm*> comms = {&world, &d, &s};
    open_counters();
    force_shm();
    if (world_rank == 0) {
        std::string untested;
        for (Coll c : loom::all_collectives())
            if (forced_for(c).empty()) untested += " " + std::string(loom::to_string(c));
        if (!untested.empty())
            std::printf("shm_check: not tested (no %s algorithm in loom's registry):%s\n",
                        family == "shm" ? "shm" : (family + " or shm").c_str(), untested.c_str());
    }

    const auto t0 = Clock::now();
    interleaving(comms);
    check_segments({&world, &d, &s}, "after the interleaved calls");
    const double t_interleave = seconds_since(t0);
    const long interleave_cases = cases;

    const auto t1 = Clock::now();
    int peak = 0;
    churn(world, {&world, &d, &s}, iterations, keep_leaking, peak);
    const int after_churn = check_segments({&world, &d, &s}, "after the churn");
    const double t_churn = seconds_since(t1);

    free_comm(d);
    free_comm(s);
    const int at_end = check_segments({&world}, "after freeing the dup and the split");

    // The summary travels by point-to-point messages: not through the collectives under test.
    long totals[2] = {failures, cases};
    int most_mapped[3] = {peak, after_churn, at_end};
    if (world_rank == 0) {
        for (int q = 1; q < world_size; ++q) {
            long theirs[5];
            MPI_Recv(theirs, 5, MPI_LONG, q, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            totals[0] += theirs[0], totals[1] += theirs[1];
            for (int j = 0; j < 3; ++j) most_mapped[j] = std::max(most_mapped[j], int(theirs[2 + j]));
        }
        std::printf("shm_check np=%d: %ld checks on all ranks, %ld failures; interleaving: %ld checks per rank in "
                    "%.1f s; churn: %d iterations in %.1f s; loom segments mapped per rank (most): %d during the "
                    "churn, %d after it, %d at the end\n",
                    world_size, totals[1], totals[0], interleave_cases, t_interleave, iterations, t_churn,
                    most_mapped[0], most_mapped[1], most_mapped[2]);
    } else {
        long mine[5] = {failures, cases, peak, after_churn, at_end};
        MPI_Send(mine, 5, MPI_LONG, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return totals[0] == 0 ? 0 : 1;
}
