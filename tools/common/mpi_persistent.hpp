// MPI 4.0's persistent collectives: Open MPI 5.0 has them as MPI_<Collective>_init, 4.1 as
// MPIX_<Collective>_init (its pcollreq extension, declared in mpi-ext.h).
// PERSISTENT(Allreduce)(...) calls the one this Open MPI has.
#pragma once

#include <mpi.h>
#include <mpi-ext.h>

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && MPI_VERSION < 4
#define PERSISTENT(name) MPIX_##name##_init
#else
#define PERSISTENT(name) MPI_##name##_init
#endif
