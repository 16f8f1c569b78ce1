// The collectives as collectives_check calls them, in one of three forms (--form): blocking
// (MPI_Allreduce), non-blocking (MPI_Iallreduce, then MPI_Wait) or persistent
// (MPI_Allreduce_init - MPIX_Allreduce_init on Open MPI 4.1 - then MPI_Start, MPI_Wait and
// MPI_Request_free). Every check runs through these, so each form gets the same cases:
// derived datatypes, MPI_IN_PLACE, zero counts, every forced algorithm.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "mpi_persistent.hpp"

#include <string>

namespace check {

enum class Form { blocking, nonblocking, persistent };
extern Form form;
// "allreduce", "iallreduce" or "allreduce_init": the name of loom's MPI_T counters.
std::string form_name(const char* collective);

int allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
int reduce_scatter_block(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int reduce_scatter(const void* sbuf, void* rbuf, const int* counts, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
              MPI_Comm comm);
int allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int* counts, const int* displs,
               MPI_Datatype rtype, MPI_Comm comm);
int bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int barrier(MPI_Comm comm);
int alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
             MPI_Comm comm);
int scan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int exscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
           MPI_Comm comm);
int scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
            MPI_Comm comm);
int alltoallv(const void* sbuf, const int* scounts, const int* sdispls, MPI_Datatype stype, void* rbuf,
              const int* rcounts, const int* rdispls, MPI_Datatype rtype, MPI_Comm comm);
int alltoallw(const void* sbuf, const int* scounts, const int* sdispls, const MPI_Datatype* stypes, void* rbuf,
              const int* rcounts, const int* rdispls, const MPI_Datatype* rtypes, MPI_Comm comm);
int gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int* rcounts, const int* displs,
            MPI_Datatype rtype, int root, MPI_Comm comm);
int scatterv(const void* sbuf, const int* scounts, const int* displs, MPI_Datatype stype, void* rbuf, int rcount,
             MPI_Datatype rtype, int root, MPI_Comm comm);

} // namespace check
