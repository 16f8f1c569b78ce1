// One call of any collective in any of MPI's three forms, made from its row of
// algorithms/collectives.def: blocking (MPI_<Mpi>), non-blocking (MPI_I<name>) or persistent
// (MPI_<Mpi>_init; MPIX_ on Open MPI 4.1, mpi_persistent.hpp). The arguments are one bundle,
// CallArgs, holding every argument some collective takes; each MPI signature class of
// collectives.def takes its own from it (LOOM_CALL_ARGS_<class>), so a new collective whose
// class exists is called here without a line of code. loom-bench (tools/bench/bench_core.cpp)
// and the MPI tests (tests/integration: check_forms, call_model) make every call through
// start_call; a new signature class needs its LOOM_CALL_ARGS_ and args_ below.
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "mpi_persistent.hpp"
#include "registry.hpp"

#if MPI_VERSION >= 4
#include <cstdlib>
#include <deque>
#include <string_view>
#include <vector>
#endif

namespace loom::tools {

enum class Form { blocking, nonblocking, persistent };

// Every argument of every collective; each signature class reads its own (the others are
// ignored). MPI's names: count, type and op for a reduction's or bcast's one vector; s... and
// r... for an exchange's send and receive sides.
struct CallArgs {
    const void* sbuf = nullptr;
    void* rbuf = nullptr; // also bcast's one buffer
    int count = 0, scount = 0, rcount = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL, stype = MPI_DATATYPE_NULL, rtype = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    int root = 0;
    const int *scounts = nullptr, *sdispls = nullptr, *rcounts = nullptr, *rdispls = nullptr;
    const MPI_Datatype *stypes = nullptr, *rtypes = nullptr; // alltoallw
    MPI_Comm comm = MPI_COMM_NULL;
    const MPI_Aint *sadispls = nullptr, *radispls = nullptr; // neighbor_alltoallw: displacements in bytes
};

// A signature class's arguments before the communicator, in MPI's order (collectives.def).
#define LOOM_CALL_ARGS_reduction(a) a.sbuf, a.rbuf, a.count, a.type, a.op,
#define LOOM_CALL_ARGS_rooted_reduction(a) a.sbuf, a.rbuf, a.count, a.type, a.op, a.root,
#define LOOM_CALL_ARGS_reduction_v(a) a.sbuf, a.rbuf, a.rcounts, a.type, a.op,
#define LOOM_CALL_ARGS_exchange(a) a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype,
#define LOOM_CALL_ARGS_exchange_v(a) a.sbuf, a.scount, a.stype, a.rbuf, a.rcounts, a.rdispls, a.rtype,
#define LOOM_CALL_ARGS_rooted_exchange(a) a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype, a.root,
#define LOOM_CALL_ARGS_rooted_exchange_v(a) a.sbuf, a.scount, a.stype, a.rbuf, a.rcounts, a.rdispls, a.rtype, a.root,
#define LOOM_CALL_ARGS_scatter_v(a) a.sbuf, a.scounts, a.sdispls, a.stype, a.rbuf, a.rcount, a.rtype, a.root,
#define LOOM_CALL_ARGS_exchange_vv(a) a.sbuf, a.scounts, a.sdispls, a.stype, a.rbuf, a.rcounts, a.rdispls, a.rtype,
#define LOOM_CALL_ARGS_exchange_w(a) a.sbuf, a.scounts, a.sdispls, a.stypes, a.rbuf, a.rcounts, a.rdispls, a.rtypes,
#define LOOM_CALL_ARGS_neighbour_exchange(a) a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype,
#define LOOM_CALL_ARGS_neighbour_exchange_v(a) a.sbuf, a.scount, a.stype, a.rbuf, a.rcounts, a.rdispls, a.rtype,
#define LOOM_CALL_ARGS_neighbour_exchange_w(a) \
    a.sbuf, a.scounts, a.sadispls, a.stypes, a.rbuf, a.rcounts, a.radispls, a.rtypes,
#define LOOM_CALL_ARGS_broadcast(a) a.rbuf, a.count, a.type, a.root,
#define LOOM_CALL_ARGS_sync(a)

// The bundle from a signature class's arguments, in MPI's order (the communicator last): what a
// wrapper with MPI's own signature passes on (check_forms.hpp).
inline CallArgs args_reduction(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .count = n, .type = t, .op = op, .comm = comm};
}
inline CallArgs args_rooted_reduction(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root,
                                      MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .count = n, .type = t, .op = op, .root = root, .comm = comm};
}
inline CallArgs args_reduction_v(const void* s, void* r, const int* counts, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .type = t, .op = op, .rcounts = counts, .comm = comm};
}
inline CallArgs args_exchange(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .scount = sn, .rcount = rn, .stype = st, .rtype = rt, .comm = comm};
}
inline CallArgs args_exchange_v(const void* s, int sn, MPI_Datatype st, void* r, const int* rcounts,
                                const int* rdispls, MPI_Datatype rt, MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .scount = sn, .stype = st, .rtype = rt, .rcounts = rcounts, .rdispls = rdispls,
            .comm = comm};
}
inline CallArgs args_rooted_exchange(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                                     int root, MPI_Comm comm)
{
    CallArgs a = args_exchange(s, sn, st, r, rn, rt, comm);
    a.root = root;
    return a;
}
inline CallArgs args_rooted_exchange_v(const void* s, int sn, MPI_Datatype st, void* r, const int* rcounts,
                                       const int* rdispls, MPI_Datatype rt, int root, MPI_Comm comm)
{
    CallArgs a = args_exchange_v(s, sn, st, r, rcounts, rdispls, rt, comm);
    a.root = root;
    return a;
}
inline CallArgs args_scatter_v(const void* s, const int* scounts, const int* sdispls, MPI_Datatype st, void* r, int rn,
                               MPI_Datatype rt, int root, MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .rcount = rn, .stype = st, .rtype = rt, .root = root, .scounts = scounts,
            .sdispls = sdispls, .comm = comm};
}
inline CallArgs args_exchange_vv(const void* s, const int* scounts, const int* sdispls, MPI_Datatype st, void* r,
                                 const int* rcounts, const int* rdispls, MPI_Datatype rt, MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .stype = st, .rtype = rt, .scounts = scounts, .sdispls = sdispls,
            .rcounts = rcounts, .rdispls = rdispls, .comm = comm};
}
inline CallArgs args_exchange_w(const void* s, const int* scounts, const int* sdispls, const MPI_Datatype* stypes,
                                void* r, const int* rcounts, const int* rdispls, const MPI_Datatype* rtypes,
                                MPI_Comm comm)
{
    return {.sbuf = s, .rbuf = r, .scounts = scounts, .sdispls = sdispls, .rcounts = rcounts, .rdispls = rdispls,
            .stypes = stypes, .rtypes = rtypes, .comm = comm};
}
inline CallArgs args_neighbour_exchange(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                                       MPI_Comm comm)
{
    return args_exchange(s, sn, st, r, rn, rt, comm);
}
inline CallArgs args_neighbour_exchange_v(const void* s, int sn, MPI_Datatype st, void* r, const int* rcounts,
                                         const int* rdispls, MPI_Datatype rt, MPI_Comm comm)
{
    return args_exchange_v(s, sn, st, r, rcounts, rdispls, rt, comm);
}
inline CallArgs args_neighbour_exchange_w(const void* s, const int* scounts, const MPI_Aint* sdispls,
                                         const MPI_Datatype* stypes, void* r, const int* rcounts,
                                         const MPI_Aint* rdispls, const MPI_Datatype* rtypes, MPI_Comm comm)
{
    CallArgs a{.sbuf = s, .rbuf = r, .scounts = scounts, .rcounts = rcounts, .stypes = stypes, .rtypes = rtypes,
               .comm = comm};
    a.sadispls = sdispls, a.radispls = rdispls;
    return a;
}
inline CallArgs args_broadcast(void* buf, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    return {.rbuf = buf, .count = n, .type = t, .root = root, .comm = comm};
}
inline CallArgs args_sync(MPI_Comm comm) { return {.comm = comm}; }

#if MPI_VERSION >= 4
// ---- MPI-4's large-count bindings (MPI_Allreduce_c, MPI_Ialltoallv_c, MPI_Gatherv_init_c, ...) ----
// With LOOM_CHECK_LARGE_COUNT set in the environment, start_call makes every call through its
// `_c` binding: counts as MPI_Count, count arrays as MPI_Count[], displacement arrays as
// MPI_Aint[]. Open MPI 6 hands such a call to a coll component with size_t counts and arrays of
// 64-bit entries (ompi_count_array_t), a path of its own in loom's glue (coll_loom_ompi.h); the
// *-large-count tests run the MPI checks this way. The widened arrays are kept for the last 4096
// calls, longer than any batch of calls a check has in flight, as the caller keeps its own.
struct LargeCountArgs {
    MPI_Count count = 0, scount = 0, rcount = 0;
    std::vector<MPI_Count> scounts, rcounts;
    std::vector<MPI_Aint> sdispls, rdispls;
    const MPI_Count *sc = nullptr, *rc = nullptr;
    const MPI_Aint *sd = nullptr, *rd = nullptr;
};

inline bool large_count_calls()
{
    static const bool on = std::getenv("LOOM_CHECK_LARGE_COUNT") != nullptr;
    return on;
}

// The entries of a call's send and receive arrays: one per rank, or for a neighbourhood
// collective one per destination and per source of the communicator's process topology.
inline void array_lengths(std::string_view collective, MPI_Comm comm, int* sends, int* receives)
{
    int topology = MPI_UNDEFINED, rank = 0;
    MPI_Comm_size(comm, sends);
    *receives = *sends;
    if (collective.substr(0, 8) != "neighbor") return;
    MPI_Topo_test(comm, &topology);
    MPI_Comm_rank(comm, &rank);
    if (topology == MPI_CART) {
        int ndims = 0;
        MPI_Cartdim_get(comm, &ndims);
        *sends = *receives = 2 * ndims;
    } else if (topology == MPI_GRAPH) {
        MPI_Graph_neighbors_count(comm, rank, sends);
        *receives = *sends;
    } else if (topology == MPI_DIST_GRAPH) {
        int weighted = 0;
        MPI_Dist_graph_neighbors_count(comm, receives, sends, &weighted);
    }
}

// a's counts widened to MPI_Count and its displacements (in extents) to MPI_Aint.
inline const LargeCountArgs& widened(std::string_view collective, const CallArgs& a)
{
    static std::deque<LargeCountArgs> kept;
    if (kept.size() >= 4096) kept.pop_front();
    LargeCountArgs& w = kept.emplace_back();
    w.count = a.count, w.scount = a.scount, w.rcount = a.rcount;
    int sends = 0, receives = 0;
    if (a.scounts != nullptr || a.rcounts != nullptr || a.sdispls != nullptr || a.rdispls != nullptr)
        array_lengths(collective, a.comm, &sends, &receives);
    // One entry more than the call reads: a rank without neighbours still passes an array, as
    // its caller did (MPI refuses a null one).
    if (a.scounts != nullptr) w.scounts.assign(a.scounts, a.scounts + sends), w.scounts.push_back(0), w.sc = w.scounts.data();
    if (a.rcounts != nullptr) w.rcounts.assign(a.rcounts, a.rcounts + receives), w.rcounts.push_back(0), w.rc = w.rcounts.data();
    if (a.sdispls != nullptr) w.sdispls.assign(a.sdispls, a.sdispls + sends), w.sdispls.push_back(0), w.sd = w.sdispls.data();
    if (a.rdispls != nullptr) w.rdispls.assign(a.rdispls, a.rdispls + receives), w.rdispls.push_back(0), w.rd = w.rdispls.data();
    return w;
}

// barrier has no `_c` binding: it has no count.
#define MPI_Barrier_c MPI_Barrier
#define MPI_Ibarrier_c MPI_Ibarrier
#define MPI_Barrier_init_c MPI_Barrier_init

#define LOOM_CALL_C_reduction(a, w) a.sbuf, a.rbuf, w.count, a.type, a.op,
#define LOOM_CALL_C_rooted_reduction(a, w) a.sbuf, a.rbuf, w.count, a.type, a.op, a.root,
#define LOOM_CALL_C_reduction_v(a, w) a.sbuf, a.rbuf, w.rc, a.type, a.op,
#define LOOM_CALL_C_exchange(a, w) a.sbuf, w.scount, a.stype, a.rbuf, w.rcount, a.rtype,
#define LOOM_CALL_C_exchange_v(a, w) a.sbuf, w.scount, a.stype, a.rbuf, w.rc, w.rd, a.rtype,
#define LOOM_CALL_C_rooted_exchange(a, w) a.sbuf, w.scount, a.stype, a.rbuf, w.rcount, a.rtype, a.root,
#define LOOM_CALL_C_rooted_exchange_v(a, w) a.sbuf, w.scount, a.stype, a.rbuf, w.rc, w.rd, a.rtype, a.root,
#define LOOM_CALL_C_scatter_v(a, w) a.sbuf, w.sc, w.sd, a.stype, a.rbuf, w.rcount, a.rtype, a.root,
#define LOOM_CALL_C_exchange_vv(a, w) a.sbuf, w.sc, w.sd, a.stype, a.rbuf, w.rc, w.rd, a.rtype,
#define LOOM_CALL_C_exchange_w(a, w) a.sbuf, w.sc, w.sd, a.stypes, a.rbuf, w.rc, w.rd, a.rtypes,
#define LOOM_CALL_C_neighbour_exchange(a, w) a.sbuf, w.scount, a.stype, a.rbuf, w.rcount, a.rtype,
#define LOOM_CALL_C_neighbour_exchange_v(a, w) a.sbuf, w.scount, a.stype, a.rbuf, w.rc, w.rd, a.rtype,
#define LOOM_CALL_C_neighbour_exchange_w(a, w) a.sbuf, w.sc, a.sadispls, a.stypes, a.rbuf, w.rc, a.radispls, a.rtypes,
#define LOOM_CALL_C_broadcast(a, w) a.rbuf, w.count, a.type, a.root,
#define LOOM_CALL_C_sync(a, w)

// start_call through the `_c` bindings.
inline int start_large_count_call(Collective c, Form form, const CallArgs& a, MPI_Request* request)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, ...)                                          \
    case Collective::name: {                                                                                  \
        const LargeCountArgs& w = widened(#name, a);                                                          \
        (void)w;                                                                                              \
        return form == Form::blocking      ? MPI_##Mpi##_c(LOOM_CALL_C_##S(a, w) a.comm)                      \
               : form == Form::nonblocking ? MPI_I##name##_c(LOOM_CALL_C_##S(a, w) a.comm, request)           \
                                           : MPI_##Mpi##_init_c(LOOM_CALL_C_##S(a, w) a.comm, MPI_INFO_NULL, request); \
    }
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return MPI_ERR_ARG;
}
#endif

// Blocking: makes the call. Non-blocking: starts it into *request. Persistent: makes the
// inactive request *request (MPI_Start starts it). Returns MPI's code.
inline int start_call(Collective c, Form form, const CallArgs& a, MPI_Request* request)
{
#if MPI_VERSION >= 4
    if (large_count_calls()) return start_large_count_call(c, form, a, request);
#endif
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, ...)                                    \
    case Collective::name:                                                                              \
        return form == Form::blocking      ? MPI_##Mpi(LOOM_CALL_ARGS_##S(a) a.comm)                    \
               : form == Form::nonblocking ? MPI_I##name(LOOM_CALL_ARGS_##S(a) a.comm, request)         \
                                           : PERSISTENT(Mpi)(LOOM_CALL_ARGS_##S(a) a.comm, MPI_INFO_NULL, request);
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return MPI_ERR_ARG; // not reached: a case per row (no default, so -Wswitch names a missing one)
}

// The whole call in `form`: blocking as it is; non-blocking started and waited for;
// persistent made, started, waited for and freed.
inline int call(Collective c, Form form, const CallArgs& a)
{
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = start_call(c, form, a, &request);
    if (rc != MPI_SUCCESS || form == Form::blocking) return rc;
    if (form == Form::persistent) {
        rc = MPI_Start(&request);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        const int free_rc = MPI_Request_free(&request);
        return rc != MPI_SUCCESS ? rc : free_rc;
    }
    return MPI_Wait(&request, MPI_STATUS_IGNORE);
}

} // namespace loom::tools
