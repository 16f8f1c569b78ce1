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

// Blocking: makes the call. Non-blocking: starts it into *request. Persistent: makes the
// inactive request *request (MPI_Start starts it). Returns MPI's code.
inline int start_call(Collective c, Form form, const CallArgs& a, MPI_Request* request)
{
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
