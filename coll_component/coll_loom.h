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

typedef struct mca_coll_loom_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int output; /* opal_output stream, verbosity = verbose */
    /* coll_loom_<collective>_algorithm: the algorithm forced for every call ("" = loom's
     * own choice). A forced algorithm that cannot serve a call, or does not exist, makes
     * loom decline the call. */
    char *forced[LOOM_COLL_COUNT];
    size_t segment_size; /* coll_loom_segment_size, for pipelined algorithms */
    size_t pat_buffer_size; /* coll_loom_pat_buffer_size: PAT's intermediate buffer */
    int shm_min_calls;      /* coll_loom_shm_min_calls: a communicator gets its shared segment
                               at the Nth call loom's rules would serve with one */
    int shm_pool;           /* coll_loom_shm_pool: freed segments kept for reuse */
    int shm_max_mib;        /* coll_loom_shm_max_mib: the largest segment set up; 0: none */
    char *rules_path;       /* coll_loom_rules: the user's rule file ("" for none) */
    int rules_strict;       /* coll_loom_rules_strict: a bad rule file aborts MPI_Init */
    int rules_errors;       /* errors found in the rule file at open (then it is not used) */
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
    mca_coll_base_module_allgather_fn_t prev_allgather;
    mca_coll_base_module_t *prev_allgather_module;
    mca_coll_base_module_allgatherv_fn_t prev_allgatherv;
    mca_coll_base_module_t *prev_allgatherv_module;
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
    mca_coll_base_module_alltoall_fn_t prev_alltoall;
    mca_coll_base_module_t *prev_alltoall_module;
    mca_coll_base_module_barrier_fn_t prev_barrier;
    mca_coll_base_module_t *prev_barrier_module;
    mca_coll_base_module_bcast_fn_t prev_bcast;
    mca_coll_base_module_t *prev_bcast_module;
    mca_coll_base_module_reduce_fn_t prev_reduce;
    mca_coll_base_module_t *prev_reduce_module;
    mca_coll_base_module_reduce_scatter_fn_t prev_reduce_scatter;
    mca_coll_base_module_t *prev_reduce_scatter_module;
    mca_coll_base_module_reduce_scatter_block_fn_t prev_reduce_scatter_block;
    mca_coll_base_module_t *prev_reduce_scatter_block_module;
    /* The rule tables narrowed to this communicator (mca_coll_loom_rules), NULL until its
     * first call. */
    void *rules;
    /* loom's shared-memory segment for this communicator (loom_shm_release frees it with the
     * module), and its state (LOOM_SEGMENT_*): NOT_YET until the communicator has made
     * coll_loom_shm_min_calls calls that would use it (segment_wanted counts them; every
     * rank counts the same calls, so all set it up at the same one), or a forced algorithm
     * needs it; then READY, or NONE if it could not be had. */
    void *shm;
    int segment;
    int segment_wanted;
    /* The same for the shared-memory phases of hierarchical algorithms, among this rank's
     * node's ranks. */
    void *node_shm;
    /* Where the ranks run (loom_topology_create), made from the modex the first time an
     * algorithm asks (mca_coll_loom_topology); NULL until then. */
    void *topology;
    /* For coll_loom_verbose >= 1: the algorithms already reported per collective. */
    const char *reported[LOOM_COLL_COUNT][8];
} mca_coll_loom_module_t;

OBJ_CLASS_DECLARATION(mca_coll_loom_module_t);

int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority);

/* The collectives (coll_loom_reduce_ops.c, coll_loom_data_ops.c). */
int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_loom_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module);
int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* ---- Running a call (coll_loom_run.c) ---- */

/* Record a served or declined call: counters; at coll_loom_verbose >= 1 a line from rank 0
 * the first time each algorithm serves a collective on a communicator, naming the rule that
 * chose it; at >= 2 a line per call. */
void mca_coll_loom_note_served(const loom_call_t *call, struct ompi_communicator_t *comm,
                               mca_coll_loom_module_t *module, const char *algorithm,
                               const char *rule);
void mca_coll_loom_note_declined(loom_coll_t coll, struct ompi_communicator_t *comm,
                                 const char *why);

/* Choose the algorithm for `call` on comm (coll_loom_<coll>_algorithm, else the rules);
 * NULL and *why if loom must decline; *rule names the rule ("FILE:LINE" or "forced"). */
const char *loom_choose_for(loom_call_t *call, struct ompi_communicator_t *comm,
                            mca_coll_loom_module_t *module, const char **why, const char **rule);
/* Run `algorithm` on comm over the PML with the collective's tag (and the module's
 * shared-memory state); an OMPI error code. */
int loom_run_on(const char *algorithm, const loom_call_t *call, struct ompi_communicator_t *comm,
                mca_coll_loom_module_t *m);

/* The rule tables for comm (loom_rules_resolve), made on its first call; NULL if out of
 * memory (coll_loom_module.c). */
void *mca_coll_loom_rules(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module);

/* The communicator's topology (coll_loom_module.c), made on first use from every rank's host
 * name and the place each process published in the modex at start-up
 * (mca_coll_loom_publish_place, called when the component opens): no message, and the same
 * on every rank. OMPI_SUCCESS or OMPI_ERR_OUT_OF_RESOURCE. */
void mca_coll_loom_publish_place(void);
int mca_coll_loom_topology(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module);

/* Per-rank size_t arrays (counts) without a malloc for common communicator sizes. */
typedef struct loom_sizes {
    size_t *v;
    size_t inline_v[64];
} loom_sizes_t;
int loom_sizes_init(loom_sizes_t *s, int n); /* OMPI_SUCCESS or OMPI_ERR_OUT_OF_RESOURCE */
void loom_sizes_fini(loom_sizes_t *s);

/* ---- Transport over the PML (coll_loom_pml.c) ---- */

typedef struct loom_pml_transport {
    loom_transport_t ops; /* what the core sees */
    struct ompi_communicator_t *comm;
    struct mca_coll_loom_module_t *module; /* for the topology, made when first asked for */
    int tag;
    ompi_request_t **reqs;
    size_t nreqs, capacity;
    ompi_request_t *inline_reqs[16];
} loom_pml_transport_t;

void loom_pml_transport_init(loom_pml_transport_t *t, struct ompi_communicator_t *comm,
                             struct mca_coll_loom_module_t *module, int tag);
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
    int ompi_kernel_wrong; /* 1: Open MPI's own kernel gets (op, dtype) wrong (4.1's AVX SUM
                              saturates 8- and 16-bit integers): never hand it on by a rule */
    int staged;         /* 1: the datatype has holes, so the data is copied into a dense
                           scratch buffer first (ompi_datatype_copy_content_same_ddt) and the
                           holes of the user's buffer are never written */
    /* context of the ompi_op_reduce adapter */
    struct ompi_op_t *op;
    struct ompi_datatype_t *dtype;
} loom_reduce_plan_t;

/* Returns 1 and fills *plan if loom can reduce (count, dtype, op), else 0 with *why set. */
int loom_plan_reduction(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        loom_reduce_plan_t *plan, const char **why);

/* A dense copy of n elements of dtype (layout kept, holes zeroed) for a staged plan, and
 * the copy of its elements back into the user's layout. */
int loom_stage_in(char **dense, const void *src, size_t n, struct ompi_datatype_t *dtype);
int loom_stage_out(void *dst, const char *dense, size_t n, struct ompi_datatype_t *dtype);

/* Data-movement collectives see bytes. A buffer of `count` x dtype is used where it is if its
 * data is contiguous; otherwise it is packed into (or unpacked from) a dense scratch buffer.
 * Packing is local: ranks may use different datatypes with the same type signature. */
typedef struct loom_dense {
    char *data;     /* the bytes the algorithm sees */
    char *scratch;  /* non-NULL if data is a packed copy (free with loom_dense_fini) */
    size_t bytes;
} loom_dense_t;

/* View `count` x dtype at buf as dense bytes; pack a copy if needed and `pack` is true. */
int loom_dense_init(loom_dense_t *d, const void *buf, size_t count, struct ompi_datatype_t *dtype,
                    int pack);
/* If d is a scratch copy, unpack its bytes into count x dtype at buf. */
int loom_dense_unpack(const loom_dense_t *d, void *buf, size_t count, struct ompi_datatype_t *dtype);
void loom_dense_fini(loom_dense_t *d);

/* The datatype's size in bytes (its data, without holes). */
size_t loom_type_size(struct ompi_datatype_t *dtype);

/* 1 if consecutive instances of dtype are one contiguous run of bytes starting at the buffer
 * pointer (no holes, no gaps between instances). */
int loom_dense_instances(struct ompi_datatype_t *dtype);

/* Pack count x dtype from buf into out (count x size bytes), and back. */
int loom_pack(const void *buf, size_t count, struct ompi_datatype_t *dtype, void *out);
int loom_unpack(const void *in, void *buf, size_t count, struct ompi_datatype_t *dtype);

END_C_DECLS

#endif /* MCA_COLL_LOOM_H */
