/*
 * loom's Open MPI glue: the component, its per-communicator module, and the services the
 * C++ core needs from Open MPI (messaging over the PML, datatype and op handling). This is
 * the only code in loom that includes Open MPI's internal headers.
 */
#ifndef MCA_COLL_LOOM_H
#define MCA_COLL_LOOM_H

#include "coll_loom_version.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "opal/util/output.h"

#include "loom_c_api.h"

BEGIN_C_DECLS

/* The collectives loom serves; indexes the per-collective counters. */
typedef enum {
    LOOM_COLL_ALLREDUCE,
    LOOM_COLL_COUNT
} loom_coll_id_t;

typedef struct mca_coll_loom_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int output; /* opal_output stream, verbosity = verbose */
    /* MPI_T performance variables coll_loom_<collective>_served / _declined: calls loom ran
     * itself, and calls it handed to the previous component. Updated atomically. */
    unsigned long long served[LOOM_COLL_COUNT];
    unsigned long long declined[LOOM_COLL_COUNT];
} mca_coll_loom_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_loom_component_t mca_coll_loom_component;

/* Per-communicator module: the previous component's function and module for every
 * collective loom implements, so loom can decline a call. */
typedef struct mca_coll_loom_module_t {
    mca_coll_base_module_t super;
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
} mca_coll_loom_module_t;

OBJ_CLASS_DECLARATION(mca_coll_loom_module_t);

int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority);

int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* Record a served or declined call (counters, and a line at coll_loom_verbose >= 2). */
void mca_coll_loom_note_served(loom_coll_id_t coll, struct ompi_communicator_t *comm,
                               const char *algorithm, size_t bytes);
void mca_coll_loom_note_declined(loom_coll_id_t coll, struct ompi_communicator_t *comm,
                                 const char *why);

/* ---- Transport over the PML (coll_loom_pml.c) ---- */

typedef struct loom_pml_transport {
    loom_transport_t ops; /* what the core sees */
    struct ompi_communicator_t *comm;
    int tag;
    ompi_request_t **reqs;
    size_t nreqs, capacity;
    ompi_request_t *inline_reqs[16];
} loom_pml_transport_t;

void loom_pml_transport_init(loom_pml_transport_t *t, struct ompi_communicator_t *comm, int tag);
/* Completes anything still posted (after an error) and frees the request array. */
int loom_pml_transport_fini(loom_pml_transport_t *t);

/* ---- Datatypes and ops (coll_loom_datatype.c) ---- */

/* How loom will handle the data of one reducing call. Decided from (count, datatype, op)
 * only, which MPI requires to be the same on every rank, so every rank decides alike.
 * An algorithm sees `count` elements of `reduction.elem_size` bytes (the datatype's extent)
 * laid end to end. */
typedef struct loom_reduce_plan {
    loom_reduction_t reduction;
    const char *kernel; /* "loom" (own kernels) or "ompi" (Open MPI's op machinery) */
    int staged;         /* 1: the datatype has holes, so the data is copied into a dense
                           scratch buffer first (ompi_datatype_copy_content_same_ddt) and the
                           holes of the user's buffer are never written */
    /* context of the ompi_op_reduce adapter */
    struct ompi_op_t *op;
    struct ompi_datatype_t *dtype;
} loom_reduce_plan_t;

/* Returns 1 and fills *plan if loom can reduce (count, dtype, op), else 0 with *why set. */
int loom_plan_reduction(int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        loom_reduce_plan_t *plan, const char **why);

END_C_DECLS

#endif /* MCA_COLL_LOOM_H */
