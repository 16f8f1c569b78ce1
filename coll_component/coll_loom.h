/*
 * loom's Open MPI glue: the component, its per-communicator module, and the services the
 * C++ core needs from Open MPI (messaging over the PML, datatypes and ops, device buffers).
 * This is the only code in loom that includes Open MPI's internal headers; what differs
 * between Open MPI versions is behind coll_loom_ompi.h.
 *
 * The life of a call (ARCHITECTURE.md): an entry point (coll_loom_entry.c) records its
 * arguments in a loom_mpi_call_t and calls mca_coll_loom_serve (blocking) or
 * mca_coll_loom_start (non-blocking, persistent). Both take it through one pipeline
 * (coll_loom_call.c), which describes the call to the core once (buffers, counts, the datatype
 * plan, the memory kind) and asks the chooser once (loom_choose, selection_rules/); then the
 * form runs the algorithm once (loom_run, algorithms/; as a resumable operation for a request)
 * and finishes once, both forms through the same copies in and out (coll_loom_run.c) - or hands
 * the call to the previous component (mca_coll_loom_hand_on, coll_loom_hand_on.c).
 */
#ifndef MCA_COLL_LOOM_H
#define MCA_COLL_LOOM_H

#include "coll_loom_ompi.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#include "loom_c_api.h"

BEGIN_C_DECLS

/* How a collective was called: blocking (MPI_Allreduce), non-blocking (MPI_Iallreduce) or
 * persistent (MPI_Allreduce_init, MPIX_Allreduce_init on 4.1). */
typedef enum { LOOM_BLOCKING = 0, LOOM_NONBLOCKING = 1, LOOM_PERSISTENT = 2, LOOM_KIND_COUNT = 3 } loom_kind_t;

typedef struct mca_coll_loom_component_t {
    loom_coll_component_t super;
    int priority;
    int verbose;
    int output; /* opal_output stream, verbosity = verbose */
    /* coll_loom_<collective>_algorithm: the algorithm forced for every call ("" = loom's
     * own choice). A forced algorithm that cannot serve a call, or does not exist, makes
     * loom decline the call. */
    char *forced[LOOM_COLL_COUNT];
    int fast_repeats;       /* coll_loom_fast_repeats: repeats of a handed-on call skip the
                               decision (coll_loom_repeat.c) */
    int allocator_like_open_mpi; /* coll_loom_allocator_like_open_mpi (coll_loom_allocator.c) */
    size_t segment_size;    /* coll_loom_segment_size, for pipelined algorithms */
    size_t pat_buffer_size; /* coll_loom_pat_buffer_size: PAT's intermediate buffer */
    size_t knomial_radix;   /* coll_loom_knomial_radix: k-nomial trees' radix */
    size_t alltoallv_max_requests; /* coll_loom_alltoallv_max_requests: linear alltoallv(w)'s window */
    int shm_min_calls;      /* coll_loom_shm_min_calls: a communicator gets its shared segment
                               at the Nth call loom's rules would serve with one */
    int shm_pool;           /* coll_loom_shm_pool: freed segments kept for reuse */
    int shm_refuse;         /* coll_loom_shm_refuse: testing, this process refuses segments */
    int shm_max_mib;        /* coll_loom_shm_max_mib: the largest segment set up; 0: none */
    int shm_persistent_max; /* coll_loom_shm_persistent_max: persistent requests with a segment of
                               their own alive at once in this process */
    int persistent_segments; /* how many are alive now (atomic) */
    int single_copy;        /* coll_loom_single_copy: 0 never, 1 XPMEM or CMA, 2 CMA only (the cma algorithms) */
    /* The rule files consulted before the built-in rules (RULES.md, "Layers"), per layer
     * (LOOM_RULES_USER: coll_loom_rules, LOOM_RULES_SITE: coll_loom_site_rules): the path as
     * the parameter gives it, the one loaded (NULL: none), the errors found at open (then the
     * file is not used) and, for messages, its first diagnostic. */
    char *rules_param[2];
    const char *rules_loaded[2];
    int rules_errors[2];
    char rules_problem[2][200];
    bool rules_strict;      /* coll_loom_rules_strict: a bad rule file aborts MPI_Init */
    /* 1: the Open MPI this process runs in is not the one loom was built for (loom_ompi_fits):
     * loom registers only what names it, opens nothing and takes part in no communicator. */
    int stays_out;
    char why_out[400]; /* why (for messages) */
    char *test_library_version; /* coll_loom_test_library_version: testing, MPI_Get_library_version's text */
    char *test_unknown_hosts;   /* coll_loom_test_unknown_hosts: testing, ranks whose host is taken as unknown */
    /* What this process published for its peers to compare (coll_loom_agree.c): 0 if it takes
     * part in no communicator (coll_loom_priority < 0, or no fingerprint). */
    uint64_t fingerprint;
    int nonblocking_max;    /* coll_loom_nonblocking_max: operations running at once; more wait */
    char *trace_dir;        /* coll_loom_trace: the directory of the timeline's files ("" or NULL: off) */
    int trace_max_events;   /* coll_loom_trace_max_events: the timeline's bound per process */
    int autotune;            /* coll_loom_autotune: online tuning (coll_loom_autotune.c) */
    int autotune_trials;     /* coll_loom_autotune_trials: timed calls per candidate */
    int autotune_candidates; /* coll_loom_autotune_candidates: candidates per class, at most */
    int autotune_max_classes; /* coll_loom_autotune_max_classes: classes tuned per communicator */
    int autotune_margin;     /* coll_loom_autotune_margin: percent a candidate must beat the rules' choice by */
    int autotune_floor_ns;   /* coll_loom_autotune_floor_ns: the rules' choice stands below this time */
    char *autotune_save;     /* coll_loom_autotune_save: the rule file rank 0 writes at finalize */
    int autotune_noise;      /* coll_loom_autotune_noise: testing, rank 0's timer made noisy */
    bool noting;            /* verbose >= 1 or tracing: the notes of a call take their slow path
                               (coll_loom_report.c) */
    /* MPI_T performance variables coll_loom_<collective>_served / _declined (blocking calls),
     * coll_loom_i<collective>_* (non-blocking calls) and coll_loom_<collective>_init_*
     * (persistent requests: each start served, each request handed on): calls loom ran
     * itself, and calls it handed to the previous component. */
    unsigned long long served[LOOM_KIND_COUNT][LOOM_COLL_COUNT];
    unsigned long long declined[LOOM_KIND_COUNT][LOOM_COLL_COUNT];
    /* coll_loom_shm_segments_set_up / _unavailable: communicators' segment set-ups that
     * succeeded / failed (refused by coll_loom_shm_max_mib included); coll_loom_shm_stand_ins:
     * operations decided while their segment was being set up that ran their stand-in, the
     * set-up having failed. */
    unsigned long long segments_set_up, segments_unavailable, stand_ins;
    /* coll_loom_communicators_enabled (an MPI_T level): communicators loom is enabled on now
     * (loom-bench's proof that a job used loom). */
    unsigned long long communicators_enabled;
    char *version; /* coll_loom_version: LOOM_VERSION_TEXT and the Open MPI it was built for */
} mca_coll_loom_component_t;

LOOM_COMPONENT_DECLSPEC extern mca_coll_loom_component_t mca_coll_loom_component;

/* ---- A call's description, and the record of it kept for repeats (coll_loom_repeat.c) ---- */

/* How loom will handle the data of one reducing call. Decided from (datatype, op) only,
 * which MPI requires to be the same on every rank, so every rank decides alike. An
 * algorithm sees `count` elements of `reduction.elem_size` bytes (the datatype's extent)
 * laid end to end. */
typedef struct loom_reduce_plan {
    loom_reduction_t reduction;
    const char *kernel;    /* "loom" (own kernels) or "ompi" (Open MPI's op machinery) */
    int ompi_kernel_wrong; /* 1: Open MPI's own kernel gets (op, dtype) wrong (4.1's AVX SUM
                              saturates 8- and 16-bit integers): never hand it on by a rule */
    int holes;             /* 1: the datatype has holes: the algorithm runs on a dense copy
                           (loom_copy_elements) and the holes of the user's buffer are never
                           written */
    /* context of the ompi_op_reduce adapter */
    struct ompi_op_t *op;
    struct ompi_datatype_t *dtype;
} loom_reduce_plan_t;

/* loom_buffer_t.read: which blocks of a buffer the call reads on this rank. */
enum { LOOM_READ_NONE = -1, LOOM_READ_ALL = -2 /* >= 0: that block only */ };

/* One buffer of a call on this rank, as MPI describes it: `blocks` blocks, block i being
 * counts[i] (or `count`) instances of dtype at user + displs[i] (or i x count) extents. */
typedef struct loom_buffer {
    void *user; /* the user's buffer, or its host copy; NULL: none on this rank */
    struct ompi_datatype_t *dtype;
    int blocks;
    size_t count;
    loom_count_array_t counts; /* none: `count` instances in every block */
    loom_disp_array_t displs; /* none: block i at i x count */
    struct ompi_datatype_t *const *dtypes; /* alltoallw: block i's datatype (dtype unused), and
                                              displs in bytes; NULL: dtype for every block */
    loom_adisp_array_t adispls; /* neighbor_alltoallw: displacements in bytes (displs none) */
    int read;          /* LOOM_READ_* or a block index */
    int written;       /* 1: the call writes it */
} loom_buffer_t;

/* A served call kept for its repeats (loom_repeat_t.served, coll_loom_repeat.c): loom_describe's
 * result and the chooser's decision, less what changes from call to call - the buffers'
 * addresses. Only calls whose every buffer is used in place (dense, host memory) and whose
 * counts are the same for every rank are kept, so a repeat needs only its addresses filled in. */
typedef struct loom_served_repeat {
    loom_call_t core;           /* as chosen, before loom_apply_tuning; sbuf, rbuf, counts unset */
    loom_buffer_t send, recv;   /* user unset */
    int send_used, recv_used;   /* 1: send.user is the call's sbuf (recv.user its rbuf), else NULL */
    ptrdiff_t send_lb, recv_lb; /* core.sbuf - send.user, core.rbuf - recv.user */
    int has_counts;             /* 1: core.counts has comm size entries, each each_count */
    size_t each_count;
    size_t result_count;
    loom_reduce_plan_t plan;
    const char *algorithm, *rule;
} loom_served_repeat_t;

/* The arguments of a call that decide how loom serves it, when its datatypes and op are
 * predefined (never freed, so their addresses name them for good), and the state of the
 * communicator it was decided in (segment, single copy), with the decision: handed on (why),
 * or served (served: the described call and its algorithm, below). valid: 0 for
 * none. */
typedef struct loom_repeat {
    int valid;
    long long count; /* the count; for reduce_scatter and allgatherv the sum of the per-rank counts */
    long long scount;
    int root, in_place, segment, single_copy;
    char forced[32]; /* the algorithm forced when it was decided; "" for none */
    struct ompi_datatype_t *dtype, *sdtype;
    struct ompi_op_t *op;
    const char *why;                   /* handed on: why (served: NULL) */
    int is_served;                     /* 1: served, from `served`; 0: handed on */
    loom_served_repeat_t *served;      /* the served record, owned: made at the first served call
                                          remembered, kept (and reused) while calls are handed on */
} loom_repeat_t;

/* Per-communicator module: the previous component's function (of its slot's type: SLOT) and
 * module for every collective loom implements, so loom can hand a call on. */
typedef struct mca_coll_loom_module_t {
    mca_coll_base_module_t super;
    struct {
#define SLOT(slot) __typeof__(((mca_coll_base_module_t *)0)->coll_##slot)
#define PREVIOUS(name)                            \
    SLOT(name) name;                              \
    mca_coll_base_module_t *name##_module;        \
    SLOT(i##name) i##name;                        \
    mca_coll_base_module_t *i##name##_module;     \
    SLOT(name##_init) name##_init;                \
    mca_coll_base_module_t *name##_init_module;
#define LOOM_COLLECTIVE(name, ...) PREVIOUS(name)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef PREVIOUS
#undef SLOT
    } previous;
    /* The rule tables narrowed to this communicator (mca_coll_loom_rules), NULL until its
     * first call. */
    void *rules;
    /* loom's shared-memory segment for this communicator (loom_shm_release frees it with the
     * module), and its state (LOOM_SEGMENT_*): NOT_YET until the communicator has made
     * coll_loom_shm_min_calls calls that would use it (segment_wanted counts them; every
     * rank counts the same calls, so all set it up at the same one), or a forced algorithm
     * needs it; then READY, or NONE if it could not be had. A non-blocking call cannot wait
     * for the set-up (the call is local): it starts it as an operation of its own and the
     * state is PENDING (coll_loom_request_start.c) until a blocking call or a persistent init, which
     * every rank reaches at the same point, waits for it to end (setup_done). */
    void *shm;
    int segment;
    int segment_wanted;
    int setup_done; /* PENDING: the set-up operation ended (written by whichever thread ran it) */
    /* May the communicator have a segment at all (coll_loom_shm_max_mib)? Set when the
     * module is enabled; the same on every rank. */
    int segment_allowed;
    /* LOOM_SINGLE_COPY_ON once the segment's probe found every rank may read every other's
     * memory (and every rank allows it); OFF until then, or for good. */
    int single_copy;
    /* The same for the shared-memory phases of hierarchical algorithms, among this rank's
     * node's ranks. */
    void *node_shm;
    /* Where the ranks run (loom_topology_create), made from the modex the first time an
     * algorithm asks (mca_coll_loom_topology); NULL until then. */
    void *topology;
    /* Its process topology's neighbours (coll_loom_neighbours.c); NULL until the first call. */
    void *neighbours;
    /* The collectives (a bit per loom_coll_t) loom is handing to the previous component right
     * now: a call of one of them that reaches loom again came back from below (Open MPI
     * 4.1's han calls the communicator's current function when it cannot handle a
     * communicator), and loom must serve it rather than hand it on forever. */
    unsigned handing_on;
    int comm_size; /* the communicator's size (set when the module is enabled) */
    /* 1: the module of MPI_COMM_WORLD (its destruction, in MPI_Finalize, writes the timeline and
     * what online tuning learned). */
    int is_world;
    int world_rank0;  /* and this process is its rank 0 */
    /* Per form and collective, the last call loom's rules decided (loom_repeat_*,
     * coll_loom_repeat.c): a repeat of it is handed on, or served, without being described and
     * chosen again. */
    loom_repeat_t repeats[LOOM_KIND_COUNT][LOOM_COLL_COUNT];
    /* For coll_loom_verbose >= 1: whether rank 0 said which ranks' hosts are unknown. */
    int said_unknown_hosts;
    /* For coll_loom_verbose >= 1: the algorithms already reported per collective. */
    const char *reported[LOOM_COLL_COUNT][8];
} mca_coll_loom_module_t;

OBJ_CLASS_DECLARATION(mca_coll_loom_module_t);

/* Registers the component's MCA parameters and MPI_T variables, after checking that this is the
 * Open MPI loom was built for (coll_loom_params.c). */
int mca_coll_loom_register_params(void);
int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority);

/* ---- The MPI-facing entry points (coll_loom_entry.c) ---- */

/* Puts loom's entry points into the module's coll slots. */
void mca_coll_loom_install_entries(mca_coll_loom_module_t *module);

/* An MPI collective call as Open MPI handed it to loom. The receive side (or bcast's one
 * buffer) is rbuf with count (or counts and displs) instances of dtype; the send side of the
 * data-movement collectives has its own scount and sdtype; reductions send count (or
 * sum(counts)) instances of dtype. Fields a collective does not have are zero. */
typedef struct loom_mpi_call {
    loom_coll_t coll;
    const void *sbuf;
    long long scount; /* the coll interface's counts (int, or size_t on 6.0), signed */
    struct ompi_datatype_t *sdtype;
    void *rbuf;
    long long count;
    /* The arrays, read only through coll_loom_ompi.h's accessors (loom_count_at, ...): */
    loom_count_array_t counts;  /* reduce_scatter, allgatherv, gatherv: one per rank (gatherv: the root's);
                              the neighbourhood collectives: one per source (sends: per destination) */
    loom_disp_array_t displs;  /* allgatherv, gatherv: one per rank, in extents of dtype */
    loom_count_array_t scounts; /* the send side's (scatterv: the root's): one per rank */
    loom_disp_array_t sdispls; /* the send side's (scatterv, alltoallv(w)): one per rank, in extents of
                           sdtype (alltoallw: in bytes, as displs are) */
    struct ompi_datatype_t *const *sdtypes; /* alltoallw: the send side's datatype per rank */
    struct ompi_datatype_t *const *rdtypes; /* alltoallw: the receive side's datatype per rank */
    loom_adisp_array_t sadispls, adispls;       /* neighbor_alltoallw: sdispls, displs in bytes */
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    int root;
    loom_kind_t kind;
    ompi_request_t **request; /* non-blocking and persistent: where the request goes */
    struct ompi_info_t *info; /* persistent */
} loom_mpi_call_t;

/* Serves `call` on comm, or hands it to the previous component: the same decision on every
 * rank. mca_coll_loom_serve takes a blocking call (coll_loom_blocking.c), mca_coll_loom_start a
 * non-blocking or persistent one (its kind) with a request of loom's (coll_loom_request_start.c);
 * both through the one pipeline (loom_decide, coll_loom_call.c). repeat: loom_repeat_of_args
 * for the call, which the entry point has already looked up and, where it repeats a handed-on
 * call, handed on itself unless the call was handed back from below (NULL: not a repeat). An
 * OMPI error code. */
int mca_coll_loom_serve(const loom_mpi_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                        const loom_repeat_t *repeat);
int mca_coll_loom_start(const loom_mpi_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                        const loom_repeat_t *repeat);
/* Advances every running non-blocking and persistent operation (registered with
 * opal_progress at the first); the number that ended. */
int mca_coll_loom_progress(void);
/* Sets up (component open) and tears down (close: unregisters progress) the requests. */
void mca_coll_loom_requests_init(void);
void mca_coll_loom_requests_fini(void);

/* Hands a blocking call of NAME on (RC = the previous component's function on ARGS, which end in
 * a comma, or are empty) with that function and module in comm's table (c_coll) for the call, as
 * they are there without loom. A component that steps aside writes its own previous component
 * into the table from the top and calls that: Open MPI's han on a communicator of one rank per
 * node (5.0: it finds no node to be hierarchical in at each call; without loom once, after which
 * the table skips it) or that it cannot handle (4.1: it then calls the table's function, which
 * below loom was loom's own). Below loom it cannot, and paid at every call what it pays once
 * without loom - an allreduce: a handed-on allgather of 4 KiB on 3 nodes of one rank took 66-126
 * us against 33 without loom on Open MPI 5.0.7 (tools/lab/RESULTS.md, "The table across nodes:
 * leaders apart, ...", 3). So what the component leaves in the table becomes loom's previous for NAME, with a
 * reference loom holds (on 4.1 and 5.0 the table's, which the component took for it; on 6.0,
 * whose table holds none, a new one: LOOM_TABLE_HOLDS_MODULES); loom's own function goes back
 * into the table. Blocking
 * calls only: a communicator's blocking calls are not concurrent (the MPI standard), nor do the
 * components that step aside do so in the other forms. */
#define LOOM_HAND_ON_ON_TOP(RC, M, COMM, NAME, ARGS)                                               \
    do {                                                                                           \
        __typeof__((COMM)->c_coll) const table_ = (COMM)->c_coll;                                  \
        __typeof__(table_->coll_##NAME) const own_ = table_->coll_##NAME;                          \
        mca_coll_base_module_t *const own_module_ = table_->coll_##NAME##_module;                  \
        mca_coll_base_module_t *below_ = (M)->previous.NAME##_module;                              \
        table_->coll_##NAME = (M)->previous.NAME;                                                  \
        table_->coll_##NAME##_module = below_;                                                     \
        if (LOOM_TABLE_HOLDS_MODULES) OBJ_RETAIN(below_); /* the table's reference */              \
        RC = (M)->previous.NAME(ARGS COMM, below_);                                                \
        mca_coll_base_module_t *now_ = table_->coll_##NAME##_module;                               \
        if (now_ == below_) {                                                                      \
            if (LOOM_TABLE_HOLDS_MODULES) OBJ_RELEASE(now_);                                       \
        } else if (NULL != now_ && NULL != table_->coll_##NAME && &(M)->super != now_) {           \
            mca_coll_loom_stepped_aside((COMM), #NAME);                                            \
            (M)->previous.NAME = table_->coll_##NAME;                                              \
            (M)->previous.NAME##_module = now_;                                                    \
            if (!LOOM_TABLE_HOLDS_MODULES) OBJ_RETAIN(now_); /* else the table's is loom's now */  \
            OBJ_RELEASE(below_); /* loom's reference, from enable */                               \
        }                                                                                          \
        table_->coll_##NAME = own_;                                                                \
        table_->coll_##NAME##_module = own_module_;                                                \
    } while (0)
/* The verbose line (coll_loom_verbose 2) of a component below that stepped aside for `name`. */
void mca_coll_loom_stepped_aside(struct ompi_communicator_t *comm, const char *name);

/* Calls the previous component's function for `call` (coll_loom_hand_on.c). */
int mca_coll_loom_hand_on(const loom_mpi_call_t *call, struct ompi_communicator_t *comm,
                          mca_coll_loom_module_t *module);

/* ---- Per communicator (coll_loom_comm.c) ---- */

/* comm's rule tables (loom_rules_resolve), made on its first call; NULL: out of memory. */
void *mca_coll_loom_rules(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module);

/* What every process publishes in Open MPI's modex when the component opens (before MPI_Init's
 * modex exchange), for the others to read without a message: its place in its node (package,
 * NUMA node, core), and whether it takes part, with the fingerprint of its rule table
 * (coll_loom_agree.c). `about` (a line naming its loom, rule files and settings) goes under a
 * key of its own, read only to explain a disagreement. */
typedef struct loom_record {
    int present;          /* 1: the process published a record (loom opened there) */
    int place[3];         /* -1 where unknown */
    uint64_t fingerprint; /* 0: it takes part in no communicator */
} loom_record_t;
void mca_coll_loom_publish(uint64_t fingerprint, const char *about);
/* proc's record (cached per process of this job; a process that published none: present 0). */
void mca_coll_loom_record_of(struct ompi_proc_t *proc, loom_record_t *record);
/* proc's `about` line, malloc'd (free it); NULL if it published none. */
char *mca_coll_loom_about_of(struct ompi_proc_t *proc);
/* The process-wide cache of every process's record and host (component open and close). */
void mca_coll_loom_places_init(void);
void mca_coll_loom_places_fini(void);

/* The communicator's topology, made on first use from every rank's host name and published
 * place: no message, and the same on every rank. OMPI_SUCCESS or OMPI_ERR_OUT_OF_RESOURCE. */
int mca_coll_loom_topology(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module);

/* ---- Taking part (coll_loom_agree.c) ---- */

/* Computes this process's rule-table fingerprint (the rule files as loaded and every parameter
 * that changes a choice) and publishes it with the place (component open). */
void mca_coll_loom_agreement_publish(void);
/* 1 if every rank of comm takes part with this process's fingerprint; else 0 (loom then stands
 * aside on comm, on every rank alike: they read the same records), and comm's rank 0 says which
 * ranks differ and what each read. No message between ranks. */
int mca_coll_loom_ranks_agree(struct ompi_communicator_t *comm);

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
/* Makes t's operations resumable: test_all instead of blocking waits (loom_resumable_*). */
void loom_pml_transport_resumable(loom_pml_transport_t *t);
/* Completes anything still posted (after an error) and frees the request array. */
int loom_pml_transport_fini(loom_pml_transport_t *t);

/* ---- Datatypes and ops (coll_loom_datatype.c) ---- */

/* Returns 1 and fills *plan if loom can reduce with (dtype, op), else 0 with *why set. */
int loom_plan_reduction(struct ompi_datatype_t *dtype, struct ompi_op_t *op, loom_reduce_plan_t *plan,
                        const char **why);

/* Copies n instances of dtype between buffers of one layout (the type map's bytes only). */
int loom_copy_elements(void *dst, const void *src, size_t n, struct ompi_datatype_t *dtype);

/* A datatype's size in bytes (its data, no holes), extent, true lower bound and true extent. */
size_t loom_type_size(struct ompi_datatype_t *dtype);
ptrdiff_t loom_type_extent(struct ompi_datatype_t *dtype);
void loom_type_true_extent(struct ompi_datatype_t *dtype, ptrdiff_t *true_lb, ptrdiff_t *true_extent);

/* 1 if n consecutive instances of dtype are one contiguous run of bytes starting at the
 * buffer pointer plus the type's true lower bound (no holes, no gaps between instances). */
int loom_dense_run(struct ompi_datatype_t *dtype, size_t n);

/* 1 if consecutive instances of dtype are one contiguous run of bytes starting at the
 * buffer pointer (no holes, no gaps between instances, lower bound 0). */
int loom_dense_instances(struct ompi_datatype_t *dtype);

/* Packs count x dtype from buf into out (count x size bytes), and back. */
int loom_pack(const void *buf, size_t count, struct ompi_datatype_t *dtype, void *out);
int loom_unpack(const void *in, void *buf, size_t count, struct ompi_datatype_t *dtype);

END_C_DECLS

#endif /* MCA_COLL_LOOM_H */
