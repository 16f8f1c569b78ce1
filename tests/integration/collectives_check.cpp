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

#include "check_common.hpp"
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

struct CollectiveChecks {
    loom::Collective collective;
    void (*check)(const check::Setting&);
};

const CollectiveChecks kCollectives[] = {
    {loom::Collective::allreduce, check::check_allreduce},
    {loom::Collective::reduce, check::check_reduce},
    {loom::Collective::reduce_scatter_block, check::check_reduce_scatter_block},
    {loom::Collective::reduce_scatter, check::check_reduce_scatter},
    {loom::Collective::allgather, check::check_allgather},
    {loom::Collective::allgatherv, check::check_allgatherv},
    {loom::Collective::bcast, check::check_bcast},
    {loom::Collective::barrier, check::check_barrier},
    {loom::Collective::alltoall, check::check_alltoall},
    {loom::Collective::scan, check::check_scan},
    {loom::Collective::exscan, check::check_exscan},
    {loom::Collective::gather, check::check_gather},
    {loom::Collective::scatter, check::check_scatter},
    {loom::Collective::gatherv, check::check_gatherv},
    {loom::Collective::scatterv, check::check_scatterv},
    {loom::Collective::alltoallv, check::check_alltoallv},
    {loom::Collective::alltoallw, check::check_alltoallw},
};
static_assert(std::size(kCollectives) == std::size_t(loom::kCollectiveCount),
              "every row of algorithms/collectives.def has its check here");

// What each collective runs with, from loom's registry (a new algorithm is checked without
// editing this file): "" (loom's own choice), every algorithm of the collective, and those
// that read PAT's buffer again as "name@256" (coll_loom_pat_buffer_size = 256: pieces).
std::vector<std::string> forced_names(loom::Collective c)
{
    std::vector<std::string> names{""};
    for (const loom::Algorithm& a : loom::all_algorithms()) {
        if (a.collective != c) continue;
        names.emplace_back(a.name);
        if (a.reads.pat_buffer) names.push_back(std::string(a.name) + "@256");
    }
    return names;
}

using check_common::count_nodes;
using check_common::set_control;

// Forces `algorithm` ("name" or "name@buffer_bytes") and returns the bare name.
std::string force(const char* collective, const std::string& algorithm)
{
    const auto at = algorithm.find('@');
    const std::string name = algorithm.substr(0, at);
    const std::size_t buffer = at == std::string::npos ? std::size_t(1) << 20 : std::stoul(algorithm.substr(at + 1));
    set_control("coll_loom_pat_buffer_size", &buffer);
    set_control(std::string("coll_loom_") + collective + "_algorithm", name.c_str());
    return name;
}

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

    // A split, reordered communicator: even and odd ranks, each in reverse order.
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split);
    int split_rank, split_size;
    MPI_Comm_rank(split, &split_rank);
    MPI_Comm_size(split, &split_size);
    int world_most = 0, split_most = 0;
    const int world_nodes = count_nodes(MPI_COMM_WORLD, &world_most), split_nodes = count_nodes(split, &split_most);

    // coll_loom_shm_max_mib 0 (loom sets up no segments) or coll_loom_shm_refuse 1 (every
    // set-up fails, as where a rank cannot map the segment): shm must decline (forced) or never
    // be chosen, and every result stays right.
    int max_mib = 1, refuse = 0;
    loom::tools::read_loom_control("coll_loom_shm_max_mib", &max_mib);
    loom::tools::read_loom_control("coll_loom_shm_refuse", &refuse);
    const bool segments = max_mib > 0 && refuse == 0;
    // coll_loom_single_copy 0 on any rank of a communicator: its segment's probe turns single
    // copy off on every rank, so a forced cma declines there (tests/integration/on-one-rank
    // sets it on one rank only: the split communicator without that rank keeps it).
    int single_copy = 1;
    loom::tools::read_loom_control("coll_loom_single_copy", &single_copy);
    int world_single_copy = 0, split_single_copy = 0;
    MPI_Allreduce(&single_copy, &world_single_copy, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&single_copy, &split_single_copy, 1, MPI_INT, MPI_MIN, split);
    for (const CollectiveChecks& c : kCollectives) {
        const std::string name(loom::to_string(c.collective));
        if (only != nullptr && ("," + std::string(only) + ",").find("," + name + ",") == std::string::npos) continue;
        for (const std::string& forced : forced_names(c.collective)) {
            const std::string algorithm = force(name.c_str(), forced);
            c.check(check::Setting{MPI_COMM_WORLD, rank, size, algorithm, world_nodes, world_nodes * world_most == size,
                                   segments, world_single_copy != 0});
            c.check(check::Setting{split, split_rank, split_size, algorithm, split_nodes,
                                   split_nodes * split_most == split_size, segments, split_single_copy != 0});
        }
        force(name.c_str(), "");
    }
    MPI_Comm_free(&split);

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
