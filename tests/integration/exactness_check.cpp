// exactness_check: loom touches only what MPI defines. For every collective loom serves and
// every algorithm of it in loom's registry (loom::all_algorithms(), so a new algorithm is
// checked without editing this file), forced in turn through MPI_T (coll_loom_<collective>_
// algorithm; pat also with coll_loom_pat_buffer_size = 256, which forces pieces, and the
// segmented algorithms also with coll_loom_segment_size = 4096), plus loom's own choice,
// each call runs on buffers with guard areas, holes and gaps, and afterwards every byte of
// every buffer must be exactly what MPI defines: the result where MPI puts it, and
// the byte that was there before everywhere else (guards, datatype holes, allgatherv gaps, a
// non-root's MPI_Reduce receive buffer, the rest of an in-place reduce_scatter input, send
// buffers). Results are references computed by this program, never by Open MPI.
//
// Collectives checking results only (collectives_check) miss a write outside the output: an
// algorithm that uses the rest of an in-place reduce_scatter input as scratch, an unpack that
// writes a hole, a gap overwritten with a neighbour's block. This check exists for those.
//
// Every case runs on MPI_COMM_WORLD and on a split, reordered communicator. loom's MPI_T
// counters prove that a forced algorithm really served the calls it can serve (loom::why_not
// with the communicator's nodes): a pass where everything was handed to Open MPI proves nothing.
//
//   mpirun ... exactness_check [--only COLLECTIVE[,COLLECTIVE...]] [--max-fail N]
// prints at most N (default about 30 over all ranks) FAIL lines, a summary of failures by
// collective, algorithm, kind of call and region, and `exactness_check np=N: C checks, F failures`.
#include "exactness_harness.hpp"

#include "check_variants.hpp"
#include "loom_mpi_t.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using exact::Setting;

// Each row of algorithms/collectives.def has its check, exact::check_<name> (a row without one
// does not compile).
void (*const kChecks[])(const Setting&) = {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, ...) exact::check_##name,
#include "collectives.def"
#undef LOOM_COLLECTIVE
};

// Rank 0 prints every rank's failures by key, merged.
void print_failures_by_key(int rank, int size)
{
    std::string mine;
    for (const auto& [key, n] : exact::totals.by_key) mine += key + '\t' + std::to_string(n) + '\n';
    int length = int(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < size; ++r) displs[std::size_t(r)] = total, total += lengths[std::size_t(r)];
    std::string all(std::size_t(rank == 0 ? total : 0), '\0');
    MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank != 0 || all.empty()) return;
    std::map<std::string, long> merged;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t tab = all.find('\t', at), end = all.find('\n', tab);
        merged[all.substr(at, tab - at)] += std::stol(all.substr(tab + 1, end - tab - 1));
        at = end + 1;
    }
    std::printf("exactness_check failures by collective [algorithm] kind, region (calls x ranks):\n");
    for (const auto& [key, n] : merged) std::printf("  %s: %ld\n", key.c_str(), n);
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char* only = nullptr;
    exact::totals.print_limit = std::max(3, 30 / size);
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
        if (std::strcmp(argv[i], "--max-fail") == 0)
            exact::totals.print_limit = (std::atoi(argv[i + 1]) + size - 1) / size;
    }
    exact::make_types();

    using check_common::Place;
    check_common::for_each_variant(only, true, [&](loom::Collective c, const check_common::Variant& v,
                                                   const Place& world, const Place& split) {
        const loom::Algorithm* forced = v.name.empty() ? nullptr : loom::find_algorithm(c, v.name);
        exact::totals.calls_servable = exact::totals.calls_served = 0;
        const Setting on_world{world.comm, world.name, world.rank, world.size, world.nodes, world.most, c, forced, v.label};
        kChecks[int(c)](on_world);
        kChecks[int(c)](Setting{split.comm, split.name, split.rank, split.size, split.nodes, split.most, c, forced,
                                v.label});
        // A forced algorithm that can serve some of these calls must have served some.
        if (forced != nullptr && exact::totals.calls_servable > 0) {
            ++exact::totals.checks;
            if (exact::totals.calls_served == 0)
                exact::fail(on_world,
                            "served none of the " + std::to_string(exact::totals.calls_servable) +
                                " calls it can serve (all handed to Open MPI)",
                            "nothing served");
        }
    });
    exact::free_types();

    long totals[2] = {exact::totals.checks, exact::totals.failures}, sums[2] = {0, 0};
    MPI_Allreduce(totals, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    print_failures_by_key(rank, size);
    if (rank == 0) std::printf("exactness_check np=%d: %ld checks, %ld failures\n", size, sums[0], sums[1]);
    MPI_Finalize();
    return sums[1] == 0 ? 0 : 1;
}
