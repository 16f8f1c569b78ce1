/*
 * What a call's finish tells the user (coll_loom_report.c): MPI_T counters, verbose lines and
 * the timeline's notes; and the allocator left as Open MPI's own algorithm would leave it
 * (coll_loom_allocator.c). Private to coll_component/.
 */
#ifndef COLL_LOOM_REPORT_H
#define COLL_LOOM_REPORT_H

#include "coll_loom.h"
#include "ompi/runtime/mpiruntime.h" /* ompi_mpi_thread_multiple */

BEGIN_C_DECLS

/* "allreduce", "iallreduce" or "allreduce_init": a call's form as MPI names it, for messages
 * (buf holds it for the latter two). */
static inline const char *loom_form_name(loom_kind_t kind, loom_coll_t coll, char *buf, size_t size)
{
    if (LOOM_BLOCKING == kind) return loom_coll_name(coll);
    snprintf(buf, size, LOOM_NONBLOCKING == kind ? "i%s" : "%s_init", loom_coll_name(coll));
    return buf;
}
/* A reduction loom serves, on the full decision path: the C library's allocator left as Open MPI's
 * own algorithm would have left it (coll_loom_allocator.c; coll_loom_allocator_like_open_mpi). */
void loom_allocate_as_open_mpi(const loom_call_t *call, struct ompi_communicator_t *comm);
/* MPI_T counters, verbose lines and timeline events for a call loom served, or handed on (and
 * why; loom_report_declined is loom_note_declined's slow path). */
void loom_note_served(loom_kind_t kind, const loom_call_t *call, struct ompi_communicator_t *comm,
                      mca_coll_loom_module_t *module, const char *algorithm, const char *rule);
void loom_report_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm, const char *why);
/* The verbose line (rank 0, coll_loom_verbose >= 1) saying how comm's segment set-up ended:
 * `verdict` as loom_shm_setup returns it (0: unavailable), `refused` if the segment was too
 * large to be set up at all; `by` says what set it up ("by a non-blocking call's set-up
 * operation, "; "" for a blocking call). */
void loom_note_segment(struct ompi_communicator_t *comm, const mca_coll_loom_module_t *module, int verdict, int refused,
                       const char *by);
/* A locked add waits for the stores before it to drain - after a shared-memory collective,
 * stores to cache lines the other ranks are reading - which measured as about 15% of an 8-byte
 * shm bcast's time. Only MPI_THREAD_MULTIPLE needs it. */
static inline void loom_count_call(unsigned long long *counter)
{
    if (ompi_mpi_thread_multiple)
        __atomic_fetch_add(counter, 1ULL, __ATOMIC_RELAXED);
    else
        ++*counter;
}
/* Inline, and not even a call unless verbose output or the timeline is on: a handed-on call pays
 * loom's path on top of the next component's (tools/dev/call-instructions). */
static inline void loom_note_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm,
                                      const char *why)
{
    loom_count_call(&mca_coll_loom_component.declined[kind][coll]);
    if (mca_coll_loom_component.noting) loom_report_declined(kind, coll, comm, why);
}

END_C_DECLS

#endif /* COLL_LOOM_REPORT_H */
