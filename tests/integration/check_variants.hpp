// The driver both MPI checks of every algorithm share (collectives_check, exactness_check): every
// collective of collectives.def with each of its variants - loom's own choice, every registry
// algorithm forced in turn, some again with other parameters - on MPI_COMM_WORLD and on a
// split, reordered communicator.
#pragma once

#include "check_common.hpp"
#include "loom_mpi_t.hpp"
#include "registry.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace check_common {

// One pass over a collective's calls: loom's own choice (name ""), or an algorithm forced, with
// PAT's buffer and (if not 0) the segment size set as given.
struct Variant {
    std::string label, name;
    std::size_t pat_buffer = std::size_t(1) << 20; // loom's default
    std::size_t segment = 0;                       // 0: left as the job set it
};

// loom's choice, then the registry's algorithms of `c` (so a new algorithm is checked without
// editing a test); those that read PAT's buffer again as "name@256" (a 256-byte buffer: pieces);
// with `segments`, every variant with loom's default segment size and those that read it again
// as "name segment=4096".
inline std::vector<Variant> variants_of(loom::Collective c, bool segments)
{
    const std::size_t kDefaultSegment = std::size_t(256) << 10;
    std::vector<Variant> variants = {{"", "", std::size_t(1) << 20, segments ? kDefaultSegment : 0}};
    for (const loom::Algorithm& a : loom::all_algorithms()) {
        if (a.collective != c) continue;
        const std::string name(a.name);
        variants.push_back({name, name, std::size_t(1) << 20, variants[0].segment});
        if (a.reads.pat_buffer) variants.push_back({name + "@256", name, 256, variants[0].segment});
        if (segments && a.reads.segment_size) variants.push_back({name + " segment=4096", name, std::size_t(1) << 20, 4096});
    }
    return variants;
}

// Sets the variant's parameters and forces its algorithm for collective c.
inline void force(loom::Collective c, const Variant& v)
{
    set_control("coll_loom_pat_buffer_size", &v.pat_buffer);
    if (v.segment != 0) set_control("coll_loom_segment_size", &v.segment);
    if (!loom::tools::force_algorithm(loom::to_string(c), v.name)) {
        std::fprintf(stderr, "FAIL: cannot force %s through MPI_T\n", v.name.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

// A communicator the checks run on, and what they need to know of it.
struct Place {
    MPI_Comm comm;
    const char* name; // "world" or "split"
    int rank, size;
    int nodes, most;  // nodes it spans, the most ranks on one of them
    bool single_copy; // every rank allows single copy (coll_loom_single_copy), else cma declines
};

// Runs run(c, variant, world, split) for every collective of collectives.def (those named in
// `only`, a comma-separated list, if given) and every variant of it (variants_of), the variant
// forced; then each collective is given back to loom's choice. The split communicator holds
// the even and the odd ranks, each in reverse order.
template <class Run>
void for_each_variant(const char* only, bool segments, Run&& run)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split);
    // coll_loom_single_copy 0 on any rank of a communicator: its segment's probe turns single
    // copy off on every rank, so a forced cma declines there (tests/integration/on-one-rank
    // sets it on one rank only: the split communicator without that rank keeps it).
    int single_copy = 1;
    loom::tools::read_loom_control("coll_loom_single_copy", &single_copy);
    auto place = [&](MPI_Comm comm, const char* name) {
        Place p{comm, name, 0, 0, 0, 0, true};
        MPI_Comm_rank(comm, &p.rank);
        MPI_Comm_size(comm, &p.size);
        p.nodes = count_nodes(comm, &p.most);
        int all = 0;
        MPI_Allreduce(&single_copy, &all, 1, MPI_INT, MPI_MIN, comm);
        p.single_copy = all != 0;
        return p;
    };
    const Place world = place(MPI_COMM_WORLD, "world"), part = place(split, "split");
    for (loom::Collective c : loom::all_collectives()) {
        const std::string name(loom::to_string(c));
        if (only != nullptr && ("," + std::string(only) + ",").find("," + name + ",") == std::string::npos) continue;
        const auto variants = variants_of(c, segments);
        for (const Variant& v : variants) {
            force(c, v);
            run(c, v, world, part);
        }
        force(c, variants[0]);
    }
    MPI_Comm_free(&split);
}

} // namespace check_common
