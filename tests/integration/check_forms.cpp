#include "check_forms.hpp"

namespace check {

Form form = Form::blocking;

std::string form_name(const char* collective)
{
    if (form == Form::nonblocking) return std::string("i") + collective;
    if (form == Form::persistent) return std::string(collective) + "_init";
    return collective;
}

namespace {

// Completes a non-blocking request; starts, completes and frees a persistent one.
int complete(int rc, MPI_Request* request)
{
    if (rc != MPI_SUCCESS) return rc;
    if (form == Form::persistent) {
        rc = MPI_Start(request);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(request, MPI_STATUS_IGNORE);
        const int free_rc = MPI_Request_free(request);
        return rc != MPI_SUCCESS ? rc : free_rc;
    }
    return MPI_Wait(request, MPI_STATUS_IGNORE);
}

} // namespace

#define IN_FORM(blocking_call, nonblocking_call, persistent_call)                   \
    do {                                                                            \
        MPI_Request request = MPI_REQUEST_NULL;                                     \
        if (form == Form::blocking) return blocking_call;                           \
        if (form == Form::nonblocking) return complete(nonblocking_call, &request); \
        return complete(persistent_call, &request);                                 \
    } while (0)

int allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    IN_FORM(MPI_Allreduce(sbuf, rbuf, count, type, op, comm),
            MPI_Iallreduce(sbuf, rbuf, count, type, op, comm, &request),
            PERSISTENT(Allreduce)(sbuf, rbuf, count, type, op, comm, MPI_INFO_NULL, &request));
}

int reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    IN_FORM(MPI_Reduce(sbuf, rbuf, count, type, op, root, comm),
            MPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, &request),
            PERSISTENT(Reduce)(sbuf, rbuf, count, type, op, root, comm, MPI_INFO_NULL, &request));
}

int reduce_scatter_block(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    IN_FORM(MPI_Reduce_scatter_block(sbuf, rbuf, count, type, op, comm),
            MPI_Ireduce_scatter_block(sbuf, rbuf, count, type, op, comm, &request),
            PERSISTENT(Reduce_scatter_block)(sbuf, rbuf, count, type, op, comm, MPI_INFO_NULL, &request));
}

int reduce_scatter(const void* sbuf, void* rbuf, const int* counts, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    IN_FORM(MPI_Reduce_scatter(sbuf, rbuf, counts, type, op, comm),
            MPI_Ireduce_scatter(sbuf, rbuf, counts, type, op, comm, &request),
            PERSISTENT(Reduce_scatter)(sbuf, rbuf, counts, type, op, comm, MPI_INFO_NULL, &request));
}

int allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
              MPI_Comm comm)
{
    IN_FORM(MPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm),
            MPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, &request),
            PERSISTENT(Allgather)(sbuf, scount, stype, rbuf, rcount, rtype, comm, MPI_INFO_NULL, &request));
}

int allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int* counts, const int* displs,
               MPI_Datatype rtype, MPI_Comm comm)
{
    IN_FORM(MPI_Allgatherv(sbuf, scount, stype, rbuf, counts, displs, rtype, comm),
            MPI_Iallgatherv(sbuf, scount, stype, rbuf, counts, displs, rtype, comm, &request),
            PERSISTENT(Allgatherv)(sbuf, scount, stype, rbuf, counts, displs, rtype, comm, MPI_INFO_NULL, &request));
}

int bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    IN_FORM(MPI_Bcast(buf, count, type, root, comm), MPI_Ibcast(buf, count, type, root, comm, &request),
            PERSISTENT(Bcast)(buf, count, type, root, comm, MPI_INFO_NULL, &request));
}

int barrier(MPI_Comm comm)
{
    IN_FORM(MPI_Barrier(comm), MPI_Ibarrier(comm, &request), PERSISTENT(Barrier)(comm, MPI_INFO_NULL, &request));
}

int alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
             MPI_Comm comm)
{
    IN_FORM(MPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm),
            MPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, &request),
            PERSISTENT(Alltoall)(sbuf, scount, stype, rbuf, rcount, rtype, comm, MPI_INFO_NULL, &request));
}

int scan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    IN_FORM(MPI_Scan(sbuf, rbuf, count, type, op, comm), MPI_Iscan(sbuf, rbuf, count, type, op, comm, &request),
            PERSISTENT(Scan)(sbuf, rbuf, count, type, op, comm, MPI_INFO_NULL, &request));
}

int gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
           MPI_Comm comm)
{
    IN_FORM(MPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
            MPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, &request),
            PERSISTENT(Gather)(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, MPI_INFO_NULL, &request));
}

int scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
            MPI_Comm comm)
{
    IN_FORM(MPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
            MPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, &request),
            PERSISTENT(Scatter)(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, MPI_INFO_NULL, &request));
}

int gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int* rcounts, const int* displs,
            MPI_Datatype rtype, int root, MPI_Comm comm)
{
    IN_FORM(MPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm),
            MPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, &request),
            PERSISTENT(Gatherv)(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, MPI_INFO_NULL, &request));
}

int scatterv(const void* sbuf, const int* scounts, const int* displs, MPI_Datatype stype, void* rbuf, int rcount,
             MPI_Datatype rtype, int root, MPI_Comm comm)
{
    IN_FORM(MPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm),
            MPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, &request),
            PERSISTENT(Scatterv)(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, MPI_INFO_NULL,
                                 &request));
}

int alltoallv(const void* sbuf, const int* scounts, const int* sdispls, MPI_Datatype stype, void* rbuf,
              const int* rcounts, const int* rdispls, MPI_Datatype rtype, MPI_Comm comm)
{
    IN_FORM(MPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm),
            MPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, &request),
            PERSISTENT(Alltoallv)(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, MPI_INFO_NULL,
                                  &request));
}

int alltoallw(const void* sbuf, const int* scounts, const int* sdispls, const MPI_Datatype* stypes, void* rbuf,
              const int* rcounts, const int* rdispls, const MPI_Datatype* rtypes, MPI_Comm comm)
{
    IN_FORM(MPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm),
            MPI_Ialltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, &request),
            PERSISTENT(Alltoallw)(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, MPI_INFO_NULL,
                                  &request));
}

int exscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    IN_FORM(MPI_Exscan(sbuf, rbuf, count, type, op, comm), MPI_Iexscan(sbuf, rbuf, count, type, op, comm, &request),
            PERSISTENT(Exscan)(sbuf, rbuf, count, type, op, comm, MPI_INFO_NULL, &request));
}

} // namespace check
