/*
 * Compatibility header: Debian's libopenmpi-dev ships ompi/op/op.h, which includes this file,
 * but not the file itself. op.h only needs the int <-> MPI_Fint conversions, and on this
 * platform MPI_Fint is int, so they are identities. This directory is on the glue's include
 * path only (see meson.build); nothing else belongs here.
 */
#ifndef LOOM_COMPAT_FINT_2_INT_H
#define LOOM_COMPAT_FINT_2_INT_H

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))

#endif
