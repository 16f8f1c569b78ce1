// collectives_check: every collective loom serves, with every one of its algorithms forced
// in turn (switched inside the job through MPI_T, coll_loom_<collective>_algorithm) and with
// loom's own choice, on MPI_COMM_WORLD and on a split, reordered communicator. Results are
// checked against references this program computes; loom's MPI_T counters prove whether
// loom served each call or declined it.
//
// PAT runs twice: with its default buffer (aggregated, logarithmic) and with a 256-byte
// buffer, which forces the linear part and pieces.
//
//   mpirun ... collectives_check [--only COLLECTIVE[,COLLECTIVE...]] [--no-counters]
//                                [--form blocking|nonblocking|persistent]
//
// --form: how every collective is called (check_forms.hpp): MPI_Allreduce (default),
// MPI_Iallreduce and MPI_Wait, or MPI_Allreduce_init, MPI_Start, MPI_Wait, MPI_Request_free;
// the counters checked are then loom's coll_loom_iallreduce_* or coll_loom_allreduce_init_*.
//
// --no-counters: the results are checked, loom's MPI_T counters are not. For a job where a
// component below loom (han) runs collectives of its own on communicators loom also serves:
// the counters, per process, then count those calls too.
#include "check_harness.hpp"

#include "check_variants.hpp"
#include "loom_mpi_t.hpp"

#include <cstdio>
#include <cstring>

namespace check {
extern int failures;
extern int cases;
extern int handed_on;         // calls of loom's own choice handed on by a fallback rule (check_harness.cpp)
extern bool counters_checked; // --no-counters clears it
} // namespace check

namespace {

// Each row of algorithms/collectives.def has its check, check::check_<name> (a row without one
// does not compile).
void (*const kChecks[])(const check::Setting&) = {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, ...) check::check_##name,
#include "collectives.def"
#undef LOOM_COLLECTIVE
};

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    const char* only = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[i + 1];
        if (std::strcmp(argv[i], "--no-counters") == 0) check::counters_checked = false;
        if (std::strcmp(argv[i], "--form") == 0 && i + 1 < argc) {
            const std::string f = argv[i + 1];
            check::form = f == "nonblocking"  ? check::Form::nonblocking
                          : f == "persistent" ? check::Form::persistent
                                              : check::Form::blocking;
            if (f != "nonblocking" && f != "persistent" && f != "blocking") {
                std::fprintf(stderr, "collectives_check: --form blocking|nonblocking|persistent, not %s\n", f.c_str());
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    // coll_loom_shm_max_mib 0 (loom sets up no segments) or coll_loom_shm_refuse 1 (every
    // set-up fails, as where a rank cannot map the segment): shm must decline (forced) or never
    // be chosen, and every result stays right.
    int max_mib = 1, refuse = 0;
    loom::tools::read_loom_control("coll_loom_shm_max_mib", &max_mib);
    loom::tools::read_loom_control("coll_loom_shm_refuse", &refuse);
    const bool segments = max_mib > 0 && refuse == 0;
    using check_common::Place;
    check_common::for_each_variant(only, false, [&](loom::Collective c, const check_common::Variant& v,
                                                    const Place& world, const Place& split) {
        for (const Place& p : {world, split})
            kChecks[int(c)](check::Setting{p.comm, p.rank, p.size, v.name, p.nodes, p.nodes * p.most == p.size,
                                           segments, p.single_copy});
    });

    int total_failures = 0, total_cases = 0;
    MPI_Reduce(&check::failures, &total_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&check::cases, &total_cases, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    int total_handed_on = 0;
    MPI_Reduce(&check::handed_on, &total_handed_on, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("collectives_check np=%d: %s calls, %d checks on all ranks, %d failures (%d calls handed to Open "
                    "MPI by fallback rules of loom's own choice, results checked)%s\n",
                    size,
                    check::form == check::Form::blocking      ? "blocking"
                    : check::form == check::Form::nonblocking ? "non-blocking"
                                                              : "persistent",
                    total_cases, total_failures, total_handed_on,
                    check::counters_checked ? "" : "; loom's counters not checked (--no-counters)");
    MPI_Finalize();
    return total_failures == 0 ? 0 : 1;
}
