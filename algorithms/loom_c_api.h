/*
 * The C interface between the Open MPI glue (coll_component/, C) and loom's C++ core
 * (algorithms/). It is deliberately narrow: the glue describes a call (buffers, element
 * count, a type-erased reduction, a transport made of three C callbacks) and the core picks
 * and runs an algorithm. Nothing here mentions Open MPI types, so the core stays MPI-free.
 *
 * Every function returns 0 on success or a non-zero error code: the transport's own code
 * when a callback failed, LOOM_ERR_NO_MEMORY or LOOM_ERR_INTERNAL otherwise.
 */
#ifndef LOOM_C_API_H
#define LOOM_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { LOOM_SUCCESS = 0, LOOM_ERR_NO_MEMORY = -1001, LOOM_ERR_INTERNAL = -1002 };

/* Point-to-point messaging for one collective call (see algorithms/transport.hpp). */
typedef struct loom_transport {
    void *ctx;
    int rank;
    int size;
    int (*isend)(void *ctx, int peer, const void *buf, size_t bytes);
    int (*irecv)(void *ctx, int peer, void *buf, size_t bytes);
    int (*wait_all)(void *ctx);
    /* Storage that lives as long as the communicator, for loom's shared-memory algorithms
     * (NULL: none, they then use messages); free what they keep there with
     * loom_shm_release() when the communicator goes. */
    void **shared_state;
    /* Called while a rank waits on shared memory, to keep MPI progressing (may be NULL). */
    void (*progress)(void *ctx);
    /* Where the ranks run (loom_topology_create), or NULL if unknown; made on the first call
     * (by an algorithm that needs it), so a communicator whose algorithms never ask pays
     * nothing. May be NULL. */
    const void *(*topology)(void *ctx);
    /* Like shared_state, for the shared-memory phases of hierarchical algorithms on the ranks
     * of this rank's node (NULL: none); free with loom_shm_release() as well. */
    void **node_shared_state;
    /* 1 if every operation posted since the last call (or wait_all) completed (and is
     * released), 0 if not yet, else an error code; never blocks. Resumable operations
     * (loom_resumable_*) need it; a blocking call may have it (segmented hierarchical
     * algorithms poll it to overlap two phases, overlap.hpp) or leave it NULL. */
    int (*test_all)(void *ctx);
    /* A resumable operation that runs on the shared segment: its place among the calls that
     * use the communicator's segment, taken when the MPI call was made (loom_shm_take_turn).
     * NULL: a blocking call, which takes its place when it runs. */
    const uint64_t *segment_turn;
} loom_transport_t;

/* ---- Topology (topology/topology.hpp) ---- */

/* This process's package, NUMA node and core within its node (hwloc logical indexes, -1 where
 * unknown) into place[0..2]. hwloc_topology: an hwloc_topology_t already loaded (Open MPI's),
 * or NULL to load one. */
void loom_topology_local_place(void *hwloc_topology, int place[3]);
/* A communicator's layout from every rank's host name and place (3 ints per rank, in rank
 * order, as loom_topology_local_place gave them); NULL if out of memory. Release with
 * loom_topology_release. */
void *loom_topology_create(int comm_size, const char *const *hostnames, const int *places);
void loom_topology_release(void *topology);
/* The layout described for verbose output, one line per rank and a summary, each ending in
 * a newline; malloc'd (free it), NULL if out of memory. */
char *loom_topology_describe(const void *topology);

/* Frees what loom's shared-memory algorithms kept in a transport's shared_state (NULL: nothing);
 * its segment goes to the process's pool of segments for reuse. */
void loom_shm_release(void *state);
/* How many segments the pool keeps (0: none; see algorithms/shm_segment.hpp), and freeing all
 * it keeps (when the component closes). */
void loom_shm_pool_limit(size_t segments);
void loom_shm_pool_drain(void);

/* inout[i] = in[i] op inout[i] for count elements. */
typedef void (*loom_reduce_fn_t)(const void *in, void *inout, size_t count, void *ctx);
/* out[i] = in[i] op in2[i]: the same as copying in2 to out and calling fn(in, out), in one
 * pass. out overlaps neither input. */
typedef void (*loom_reduce3_fn_t)(const void *in, const void *in2, void *out, size_t count, void *ctx);

typedef struct loom_reduction {
    size_t elem_size;
    int commutative;
    loom_reduce_fn_t fn;
    void *ctx;
    loom_reduce3_fn_t fn3; /* loom's own kernels; NULL for Open MPI's ops */
} loom_reduction_t;

/* The predefined MPI reduction ops loom has its own kernels for. */
typedef enum loom_op {
    LOOM_OP_SUM,
    LOOM_OP_PROD,
    LOOM_OP_MIN,
    LOOM_OP_MAX,
    LOOM_OP_LAND,
    LOOM_OP_LOR,
    LOOM_OP_LXOR,
    LOOM_OP_BAND,
    LOOM_OP_BOR,
    LOOM_OP_BXOR,
    LOOM_OP_MINLOC,
    LOOM_OP_MAXLOC,
    LOOM_OP_COUNT
} loom_op_t;

/* Element types of the predefined MPI datatypes, by C representation. */
typedef enum loom_type {
    LOOM_TYPE_INT8,
    LOOM_TYPE_UINT8,
    LOOM_TYPE_INT16,
    LOOM_TYPE_UINT16,
    LOOM_TYPE_INT32,
    LOOM_TYPE_UINT32,
    LOOM_TYPE_INT64,
    LOOM_TYPE_UINT64,
    LOOM_TYPE_FLOAT,
    LOOM_TYPE_DOUBLE,
    LOOM_TYPE_LONG_DOUBLE,
    LOOM_TYPE_BOOL,
    LOOM_TYPE_FLOAT_COMPLEX,
    LOOM_TYPE_DOUBLE_COMPLEX,
    /* value/index pairs for MINLOC and MAXLOC (MPI_FLOAT_INT, ...) */
    LOOM_TYPE_FLOAT_INT,
    LOOM_TYPE_DOUBLE_INT,
    LOOM_TYPE_LONG_INT,
    LOOM_TYPE_2INT,
    LOOM_TYPE_SHORT_INT,
    LOOM_TYPE_LONG_DOUBLE_INT,
    LOOM_TYPE_COUNT
} loom_type_t;

/* Fill *out with loom's kernel for (op, type); returns 1, or 0 if loom has none (the
 * combination is not valid MPI, e.g. MPI_BAND on float). */
int loom_find_kernel(loom_op_t op, loom_type_t type, loom_reduction_t *out);

/* The collectives loom implements: LOOM_COLL_<NAME>, one per row of collectives.def. */
typedef enum loom_coll {
#define LOOM_COLLECTIVE(name, NAME, ...) LOOM_COLL_##NAME,
#include "collectives.def"
#undef LOOM_COLLECTIVE
    LOOM_COLL_COUNT
} loom_coll_t;

/* Which ranks get a result, and how the counts are given: collectives.def's `result` and `counts`
 * columns, which say what each value means. */
typedef enum loom_result { LOOM_RESULT_all, LOOM_RESULT_root, LOOM_RESULT_not_first, LOOM_RESULT_none } loom_result_t;
typedef enum loom_counts {
    LOOM_COUNTS_uniform,
    LOOM_COUNTS_per_rank,
    LOOM_COUNTS_root_only,
    LOOM_COUNTS_per_peer,
    LOOM_COUNTS_per_neighbour
} loom_counts_t;

/* What each rank's buffers hold: collectives.def's `layout` column, which says what each means. */
typedef enum loom_layout {
    LOOM_LAYOUT_vector,
    LOOM_LAYOUT_split,
    LOOM_LAYOUT_gathered,
    LOOM_LAYOUT_per_peer,
    LOOM_LAYOUT_scattered,
    LOOM_LAYOUT_per_peer_v,
    LOOM_LAYOUT_none,
    LOOM_LAYOUT_neighbour_gathered,
    LOOM_LAYOUT_per_neighbour,
    LOOM_LAYOUT_COUNT
} loom_layout_t;

/* A collective's row as the glue reads it: one small record per collective. */
typedef struct loom_coll_row {
    unsigned char reduces, rooted, layout, result, counts;
} loom_coll_row_t;
static inline const loom_coll_row_t *loom_coll_row(loom_coll_t coll)
{
    static const loom_coll_row_t rows[LOOM_COLL_COUNT + 1] = {
#define LOOM_COLLECTIVE(name, NAME, signature, reduces, rooted, layout, Mpi, result, counts, ...) \
    {reduces, rooted, LOOM_LAYOUT_##layout, LOOM_RESULT_##result, LOOM_COUNTS_##counts},
#include "collectives.def"
#undef LOOM_COLLECTIVE
        {0, 0, LOOM_LAYOUT_none, LOOM_RESULT_none, LOOM_COUNTS_uniform} /* not a collective */
    };
    return &rows[(unsigned)coll < (unsigned)LOOM_COLL_COUNT ? coll : LOOM_COLL_COUNT];
}
/* 1 if coll combines data with an op; 1 if it has a root. */
static inline int loom_coll_reduces(loom_coll_t coll) { return loom_coll_row(coll)->reduces; }
static inline int loom_coll_rooted(loom_coll_t coll) { return loom_coll_row(coll)->rooted; }
static inline loom_layout_t loom_coll_layout(loom_coll_t coll) { return (loom_layout_t)loom_coll_row(coll)->layout; }
/* 1 if only coll's root knows every rank's count (gatherv, scatterv). */
static inline int loom_coll_counts_at_root_only(loom_coll_t coll)
{
    return LOOM_COUNTS_root_only == loom_coll_row(coll)->counts;
}
/* 1 if coll's counts may differ from rank to rank (gatherv, scatterv: only the root knows them all;
 * alltoallv, alltoallw: each rank its own): its message size is 0, and its device calls run on host
 * copies (registry.hpp's counts_differ_by_rank). */
static inline int loom_coll_counts_differ_by_rank(loom_coll_t coll)
{
    const unsigned counts = loom_coll_row(coll)->counts;
    return LOOM_COUNTS_root_only == counts || LOOM_COUNTS_per_peer == counts || LOOM_COUNTS_per_neighbour == counts;
}
/* 1 for neighbor_allgather and neighbor_alltoall, one block size for all neighbours: on a
 * Cartesian communicator their message size is a block (registry.hpp's uniform_neighbour_blocks). */
static inline int loom_coll_uniform_neighbour_blocks(loom_coll_t coll)
{
    return LOOM_COLL_NEIGHBOR_ALLGATHER == coll || LOOM_COLL_NEIGHBOR_ALLTOALL == coll;
}
/* 1 if rank's receive buffer gets a result of coll (collectives.def's `result`), whose row is row
 * (for a caller that holds it: looking it up again costs a call's path about 7 instructions). */
static inline int loom_row_has_result(const loom_coll_row_t *row, int rank, int root)
{
    switch ((loom_result_t)row->result) {
    case LOOM_RESULT_all: return 1;
    case LOOM_RESULT_root: return rank == root;
    case LOOM_RESULT_not_first: return rank != 0;
    case LOOM_RESULT_none: return 0;
    }
    return 0;
}
static inline int loom_coll_has_result(loom_coll_t coll, int rank, int root)
{
    return loom_row_has_result(loom_coll_row(coll), rank, root);
}

/* One collective call, as the core sees it (see algorithms/collectives.hpp), by its layout
 * (collectives.def), in units of op.elem_size bytes for a reduction, of bytes otherwise:
 *   vector     count units (bcast: at rbuf)
 *   split      counts[i] units in rank i's block
 *   gathered   counts[i] units contributed by rank i (dense, rank order)
 *   per_peer   count units per block
 *   scattered  counts[i] units for rank i (dense, rank order), sent from the root
 *   per_peer_v counts[i] units to rank i, counts[P + i] units from it (2P entries; each dense,
 *              rank order)
 *   none       nothing
 *   neighbour_gathered  counts[0] units sent to every destination of `neighbours`, then
 *              counts[1 + j] units from its source j (1 + indegree entries)
 *   per_neighbour  counts[i] units to destination i, then counts[outdegree + j] from source j
 *              (outdegree + indegree entries)
 * sbuf == NULL means in place. */
/* What serves a call decided while its communicator's segment is PENDING if the set-up fails
 * (loom_call_t.stand_in): the algorithm (NULL: none needed), the flat algorithm its node
 * leaders run (NULL: its default) and its rule's options (0: the parameters' values). */
typedef struct loom_stand_in {
    const void *algorithm;
    const void *leaders;
    size_t segment_bytes;
    size_t buffer_bytes;
    size_t radix;
    size_t max_requests;
} loom_stand_in_t;

/* The neighbourhood collectives' neighbours (algorithms/neighbourhood.hpp, Neighbourhood): the
 * communicator's process topology as the glue read it once per communicator. kind: LOOM_TOPO_*;
 * sources and destinations in MPI's order (a Cartesian one's: for each dimension the -1 then the
 * +1 neighbour, LOOM_NO_NEIGHBOUR for MPI_PROC_NULL); dims and periods: a Cartesian one's, ndims
 * each (NULL otherwise). degree_known: every rank has the same in- and outdegree, and knows it
 * (Cartesian: 2 ndims; graph: the whole graph is on every rank) - the rules may then match on
 * `degree`, the largest degree of any rank (Cartesian: 2 ndims). */
enum { LOOM_TOPO_CARTESIAN = 0, LOOM_TOPO_GRAPH = 1, LOOM_TOPO_DIST_GRAPH = 2 };
enum { LOOM_NO_NEIGHBOUR = -1 };
typedef struct loom_neighbourhood {
    int kind;
    int indegree, outdegree;
    const int *sources, *destinations;
    int ndims;
    const int *dims, *periods;
    int degree; /* see above; 0 where not every rank knows one (dist_graph) */
    /* graph, dist_graph: the stencil (loom_stencil_detect) every rank of the communicator found
     * its lists to be, with the same fingerprint; NULL if not (the combining algorithm needs it) */
    const void *stencil;
} loom_neighbourhood_t;

/* The stencil over a periodic 2-D or 3-D grid (algorithms/combining.hpp, detect_stencil) that
 * rank's lists describe, or NULL (not one, or out of memory); *fingerprint: its fingerprint
 * (never 0), or 0 with NULL. The ranks must agree on the fingerprint before it is used. Freed
 * with loom_stencil_free (NULL: nothing). */
void *loom_stencil_detect(int comm_size, int rank, int indegree, const int *sources, int outdegree,
                          const int *destinations, uint64_t *fingerprint);
void loom_stencil_free(void *stencil);

/* A Cartesian rank's neighbour list (2 ndims entries into out): for each dimension the rank at
 * -1 then at +1, as MPI_Cart_shift(comm, d, 1) gives them, LOOM_NO_NEIGHBOUR off a non-periodic
 * edge (neighbourhood.hpp, cartesian_neighbours). */
void loom_cartesian_neighbours(int ndims, const int *dims, const int *periods, int rank, int *out);

typedef struct loom_call {
    loom_coll_t coll;
    const void *sbuf;
    void *rbuf;
    size_t count;
    const size_t *counts; /* comm_size entries (per_peer_v: 2 x comm_size; the neighbourhood
                             layouts: above), or NULL */
    const loom_neighbourhood_t *neighbours; /* the neighbourhood collectives' (else NULL) */
    int root;
    loom_reduction_t op;    /* reductions only */
    size_t segment_bytes;   /* pipelined algorithms; 0: their default */
    size_t buffer_bytes;    /* PAT's intermediate buffer; 0: its default */
    size_t radix;           /* k-nomial trees' radix; 0: their default */
    size_t max_requests;    /* linear alltoallv: requests in flight per direction; 0: its default */
    const void *chosen;     /* set by loom_choose: the algorithm itself, so loom_run need not
                             look its name up on every call; NULL: loom_run looks it up */
    const void *leaders;    /* set by loom_choose for a hierarchical algorithm: the flat algorithm
                             its node leaders run (NULL: the algorithm's default) */
    int keep_from_open_mpi; /* 1: a fallback rule must not hand this call on: Open MPI's own
                               kernel gets the reduction wrong (4.1's AVX SUM saturates 8- and
                               16-bit integers) */
    int memory;             /* LOOM_MEMORY_HOST or LOOM_MEMORY_CUDA: where this rank's buffers
                             are, for the rules' memory= key (every rank must pass the same) */
    int form;               /* LOOM_FORM_*: how it was called, for rules that name a form
                             (iallreduce, allreduce_init) */
    void *copier;           /* LOOM_MEMORY_CUDA: the loom::AsyncCopier loom_run stages the
                             buffers through (algorithms/staging.hpp); NULL: run in place */
    size_t staging_bytes;   /* segment size of that staging pipeline; 0: its default */
    int segment;            /* the communicator's shared-memory segment (LOOM_SEGMENT_*): the
                             algorithms that need one are passed over unless it is READY */
    int wants_segment;      /* set by loom_choose: with a segment, an algorithm that needs one
                             would have been chosen (segment NOT_YET), or was forced */
    int single_copy;        /* LOOM_SINGLE_COPY_*: may the segment's ranks read each other's
                             memory (the cma algorithms)? Probed when the segment is set up */
    /* Set by loom_choose for a call decided while the segment is PENDING, whose algorithm
     * needs the segment: what serves instead if the set-up failed (the same on every rank);
     * stand_in.algorithm NULL otherwise. */
    loom_stand_in_t stand_in;
} loom_call_t;

/* Memory kinds of loom_call_t.memory. */
/* The k-nomial algorithms' radix (knomial.hpp): where neither a rule nor coll_loom_knomial_radix
 * sets one, and the largest a rule or the parameter may set (the smallest is 2). */
enum { LOOM_KNOMIAL_RADIX_DEFAULT = 4, LOOM_KNOMIAL_RADIX_MAX = 16 };
/* coll_loom_segment_size's default: the segment a call gets where no rule sets segment= (loom-sim
 * and loom-rules assume the same). */
enum { LOOM_SEGMENT_SIZE_DEFAULT = 256 * 1024 };
enum { LOOM_MEMORY_HOST = 0, LOOM_MEMORY_CUDA = 1 };
/* loom_call_t.form: MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init. */
enum { LOOM_FORM_BLOCKING = 0, LOOM_FORM_NONBLOCKING = 1, LOOM_FORM_PERSISTENT = 2 };

/* States of loom_call_t.segment. READY is 0, so a call that says nothing (tools, tests)
 * describes a communicator whose segment is there. PENDING: a non-blocking call started
 * setting it up (loom_shm_begin_setup), and the calls decided now run after the set-up, on
 * the segment or, if it could not be had, on the call's stand_in. */
enum { LOOM_SEGMENT_READY = 0, LOOM_SEGMENT_NOT_YET = 1, LOOM_SEGMENT_NONE = 2, LOOM_SEGMENT_PENDING = 3 };
/* States of loom_call_t.single_copy; ON is 0, like READY. */
enum { LOOM_SINGLE_COPY_ON = 0, LOOM_SINGLE_COPY_OFF = 1 };

/* Bytes of the shared-memory segment of a communicator of comm_size ranks. */
size_t loom_shm_segment_bytes(int comm_size);

/* Makes the shared-memory segment of the communicator `transport` runs on (stored in its
 * shared_state; every rank of the communicator must call it at the same point of the same
 * collective), and probes single copy as this rank allows (single_copy: 0 off, 1 XPMEM where
 * usable else CMA, 2 CMA only; coll_loom_single_copy). Returns 0 if the segment cannot be had,
 * else LOOM_SHM_SEGMENT, with LOOM_SHM_SINGLE_COPY added if every rank may read every other's
 * memory, and LOOM_SHM_MAPPED if it does so through XPMEM mappings (the same answer on every
 * rank); or an error code (< 0). refuse: 1 if this rank will not map it (a local bound); the
 * set-up then fails on every rank. Also makes a persistent request's own segment, which
 * shared_state points at instead of the communicator's. */
enum { LOOM_SHM_SEGMENT = 1, LOOM_SHM_SINGLE_COPY = 2, LOOM_SHM_MAPPED = 4 };
int loom_shm_setup(const loom_transport_t *transport, int single_copy, int refuse);

/* What the segment in `state` (a transport's *shared_state; NULL: none) offers: 0 if there is
 * none (it could not be had, or its set-up has not ended), else LOOM_SHM_* bits as above. */
int loom_shm_verdict(void *state);

/* The segment set up by a non-blocking call (ShmTurns, algorithms/shm_turns.hpp): when the MPI
 * call is made, loom_shm_begin_setup makes the state in *shared_state (which must be NULL)
 * and takes the first turn on it, the set-up's (*turn); then loom_resumable_create_setup makes
 * the operation that sets the segment up, over a transport whose shared_state is the same, and
 * ends that turn. Calls that take turns meanwhile run once it ended: on the segment, or on
 * their stand_in. Every rank must begin at the same call. LOOM_SUCCESS or an error code. */
int loom_shm_begin_setup(void **shared_state, uint64_t *turn);

/* Testing (coll_loom_shm_refuse): 1 makes this process refuse every segment, as a rank that
 * cannot map one does, so that set-ups fail on every rank of its communicators. */
void loom_shm_refuse(int refuse);

/* Makes `call` the call its stand_in runs (its algorithm, leaders and options in place of the
 * chosen one's); returns the stand-in's name (NULL if it has none). */
const char *loom_call_as_stand_in(loom_call_t *call);

/* Does the algorithm loom_choose chose for `call` run on the shared segment (shm, cma)? */
int loom_chosen_uses_segment(const loom_call_t *call);
/* A non-blocking call that will run on the segment in *shared_state (a transport's
 * shared_state, made): its turn among the segment's calls, taken when the MPI call is made
 * (ShmTurns, algorithms/shm_turns.hpp), to be passed as loom_transport_t.segment_turn. */
uint64_t loom_shm_take_turn(void *const *shared_state);
/* A turn whose operation will never run (it could not be made): skipped when it comes. */
void loom_shm_abandon_turn(void *const *shared_state, uint64_t turn);

/* The call's message size in bytes, by loom's one definition per collective (entry.cpp);
 * what selection, rules, tools and verbose output call "message size". */
size_t loom_message_bytes(const loom_call_t *call, int comm_size);

/* "allreduce", "reduce_scatter_block", ... */
const char *loom_coll_name(loom_coll_t coll);

/* 1 if `name` is one of coll's algorithms. */
int loom_algorithm_exists(loom_coll_t coll, const char *name);

/* The value of coll_loom_<collective>_algorithm that hands every call on to the next component
 * (Open MPI's own choice), as a rule's `fallback` does: to time Open MPI's choice in the same
 * job as loom's algorithms (loom-bench's contender "fallback"). */
#define LOOM_FORCED_FALLBACK "fallback"

/* Writes coll's algorithm names, comma-separated, into buf (for messages). */
void loom_algorithm_names(loom_coll_t coll, char *buf, size_t size);

/* The rule files a call consults before the built-in rules, in order (RULES.md, "Layers"). */
enum { LOOM_RULES_USER = 0, LOOM_RULES_SITE = 1 };
/* Loads one layer's rule file (LOOM_RULES_USER: coll_loom_rules; LOOM_RULES_SITE:
 * coll_loom_site_rules; NULL or "" for none), once per process before any communicator is
 * resolved, with the major version of the Open MPI the process runs in (rules with an `ompi=`
 * key match it). Returns the number of errors; if it is non-zero that file's rules are not used
 * (the other layers' and the defaults still are). *report receives every diagnostic, one per
 * line ("FILE:LINE:COLUMN: error: ..."), malloc'd (free it), or NULL if there are none. */
int loom_rules_load(int layer, const char *path, int ompi_major, char **report);
/* coll_loom_segment_size, the segment of a pipelined algorithm no rule gives segment= (0: its
 * default), before any call is decided: a hierarchical_seg call's leaders run on segments of it,
 * and loom_choose picks their algorithm for that size. */
void loom_rules_set_segment_size(size_t bytes);
/* The rules a layer holds (0 for none, or a file with errors). */
size_t loom_rules_count(int layer);

/* ---- Taking part (selection_rules/take_part.hpp) ---- */

/* The Open MPI release named by MPI_Get_library_version's text ("Open MPI v4.1.4, ..." gives
 * 4, 1, 4 in release[0..2]; a pre-release suffix is dropped): 1, or 0 if the text names no
 * Open MPI release loom can read. */
int loom_ompi_release_parse(const char *library_version, int release[3]);
/* The fingerprint of this process's effective rule table: `version` (loom's), the rules of
 * every layer as loaded, the built-in table, and `settings` (the glue's text of every parameter
 * that changes a choice). Processes with the same fingerprint decide every call alike. 0 only if
 * it could not be computed (out of memory): the process then does not take part. */
uint64_t loom_rules_fingerprint(const char *version, const char *settings);

/* The rules narrowed to one communicator (see selection_rules/selection.hpp): its size and
 * the host name of each rank (NULL: unknown, then rules with nodes/ranks_per_node keys do
 * not match). Release with loom_rules_release. NULL if out of memory. */
void *loom_rules_resolve(int comm_size, const char *const *hostnames);
/* The same for a communicator known to span `nodes` nodes with at most `ranks_per_node`
 * ranks on one (0: unknown), without host names. Tables are made once per process for each
 * shape and shared, so this costs a lookup and one small allocation. */
void *loom_rules_resolve_shape(int comm_size, int nodes, int ranks_per_node);
void loom_rules_release(void *resolved);
/* Whether an algorithm that needs a stencil (algorithms/combining.hpp: the communicator agreed
 * to be one) may ever serve a call on a communicator with these tables: `forced` (one value per
 * loom_coll_t, as coll_loom_<collective>_algorithm; NULL or "" for none) names one, or a rule of
 * `resolved` that applies to the communicator does. Every rank answers alike (ranks agree on
 * their rules and parameters), so the glue makes the stencil's agreement - a collective - only
 * then, and never on a job whose rules cannot use it. */
int loom_rules_may_need_stencil(const void *resolved, const char *const *forced);

/* The algorithm that will serve `call` on `comm_size` ranks: `forced` if it is non-empty
 * and can serve the call, otherwise the first rule of `resolved` (NULL: rules resolved for
 * this size alone) that matches the call and whose algorithm can serve it; NULL if none can,
 * or if that first rule is a `fallback` rule (then *why says why, naming the rule). With
 * call->segment not READY the algorithms that need a shared segment cannot serve; if one of
 * them would have been chosen with a segment (or is forced) and the segment is NOT_YET,
 * call->wants_segment is set: the glue decides whether to make one and ask again. With the
 * segment PENDING, such an algorithm is chosen only if one that needs no segment can stand in
 * for it (call->stand_in; decide.hpp), else the call is decided as without a segment. Depends
 * only on what every rank shares (sizes, counts, op, root, the communicator's hosts), so all
 * ranks decide alike. *rule (if not NULL) receives the rule's "FILE:LINE" ("forced" when
 * forced), also for a fallback rule. The rule's options (segment=, buffer=) are written into
 * call->segment_bytes / buffer_bytes. Returned strings live as long as the process's rule
 * tables (static, or loaded once before any call). */
const char *loom_choose(loom_call_t *call, int comm_size, const char *forced, const void *resolved, const char **why,
                        const char **rule);

/* The options the chosen algorithm of `call` (after loom_choose) runs with, as
 * `loom-rules explain` prints them ("segment=262144, leaders=binomial", "none"): a rule's
 * segment=/buffer=/radix=/requests= value, else the matching parameter (the MCA parameters;
 * requests_param 0: every peer at once). Empty if
 * nothing was chosen. For verbose output. */
void loom_choice_options(const loom_call_t *call, size_t segment_param, size_t buffer_param, size_t radix_param,
                         size_t requests_param, char *buf, size_t size);
/* An algorithm's registry name (from loom_call_t.chosen). */
const char *loom_algorithm_name(const void *algorithm);

/* ---- Online tuning's learned layer (selection_rules/learned.hpp) ----
 * A communicator's tables (`resolved`) get, at its first tuned call, a layer of rules that
 * loom_choose reads before the others: per class (collective, op commutative or not, size within
 * 2x), each candidate in turn while the class's trial runs, then the winner. The glue
 * (coll_loom_autotune.c) times the trial's calls, makes the ranks agree on the times, and
 * settles the class. */
typedef struct loom_tune_settings {
    int candidates, trials, max_classes, margin; /* coll_loom_autotune_*, see learned.hpp */
    long long floor_ns;
} loom_tune_settings_t;
enum { LOOM_LEARNED_REMEMBER = -1, LOOM_LEARNED_UNSETTLED = -2, LOOM_LEARNED_MAX_TIMES = 24 };
/* For a blocking call on host memory loom_choose just decided on `resolved` (not forced, wanting
 * no segment): opens its class if it has none (from that decision: candidate 0 is call->chosen
 * with its rule's options, or Open MPI's own if handed_on) and decides it again (*algorithm,
 * *why, *rule as loom_choose). Returns the candidate (>= 0) if the call is a
 * trial's, with its class in *cls; else LOOM_LEARNED_REMEMBER (settled, or not tuned: the
 * decision may be kept for repeats) or LOOM_LEARNED_UNSETTLED (its class's trial runs: not). */
int loom_learned_trial(void *resolved, loom_call_t *call, int comm_size, int handed_on,
                       const loom_tune_settings_t *settings, const char **algorithm, const char **why, const char **rule,
                       void **cls);
/* A trial call of `candidate` timed (CLOCK_MONOTONIC ns: when it entered the pipeline, when its
 * run started, how long it ran), its times scaled by noise (1: none). After the trial's last
 * call returns how many times (2 x candidates, at most LOOM_LEARNED_MAX_TIMES) the ranks must agree
 * on, written to times[]; else 0. */
int loom_learned_record(void *cls, int candidate, long long entry_ns, long long run_start_ns, long long ns,
                        double noise, double *times);
loom_coll_t loom_learned_coll(const void *cls);
/* Settles the class on the agreed times (NULL: candidate 0 stays): its rule names the winner,
 * kept for the saved file; `line` receives what was settled, for verbose output. */
void loom_learned_settle(void *cls, const double *agreed, const char *comm_name, char *line, size_t size);
/* What the process learned (malloc'd text, NULL if nothing): LOOM_LEARNED_RULES, rule-file lines;
 * LOOM_LEARNED_SUMMARY, a line each for verbose output. loom_learned_forget drops it. */
enum { LOOM_LEARNED_RULES = 0, LOOM_LEARNED_SUMMARY = 1 };
char *loom_learned_saved(int what);
void loom_learned_forget(void);

/* Run the named algorithm. */
int loom_run(const char *algorithm, const loom_transport_t *transport, const loom_call_t *call);

/* ---- Resumable operations (resumable.cpp): non-blocking and persistent collectives ---- */

/* One collective call run as a resumable operation: the algorithm's unchanged function on a
 * fiber of its own (fiber.hpp), which pauses wherever the blocking path would wait (the
 * transport's test_all says not yet; a wait on shared memory) and goes on when resumed. */
typedef struct loom_resumable loom_resumable_t;
/* An operation that will run call->chosen (loom_choose's choice) over *transport, both
 * copied (the transport's ctx and the call's buffers must outlive the operation); host
 * memory only. NULL if out of memory. It does not start until loom_resumable_resume. */
loom_resumable_t *loom_resumable_create(const loom_transport_t *transport, const loom_call_t *call);
/* An operation that sets up the segment begun by loom_shm_begin_setup (single_copy as for
 * loom_shm_setup); it ends with LOOM_SUCCESS whether or not the segment could be had
 * (loom_shm_verdict says). NULL if out of memory. Not restartable. */
loom_resumable_t *loom_resumable_create_setup(const loom_transport_t *transport, int single_copy);
/* Runs the operation until it must wait or ends: 1 if it ended (*rc: LOOM_SUCCESS or an
 * error code), 0 if it is still running. */
int loom_resumable_resume(loom_resumable_t *op, int *rc);
/* Arms an operation that ended to run again from the start, on call (which may point at new
 * buffers) over transport: a persistent request's next start. The scratch memory its earlier
 * runs allocated is kept and reused. LOOM_SUCCESS or an error code (then free it). */
int loom_resumable_restart(loom_resumable_t *op, const loom_transport_t *transport, const loom_call_t *call);
/* Bytes of scratch memory the operation keeps between runs (blocks above 1 KiB). */
size_t loom_resumable_kept_bytes(const loom_resumable_t *op);
/* 1 if op's last run ran the call's stand_in (its segment could not be set up). */
int loom_resumable_stood_in(const loom_resumable_t *op);
/* Frees an operation that ended, or never started (and its kept scratch memory). */
void loom_resumable_free(loom_resumable_t *op);
/* The virtual memory of one operation's stack (mapped on demand: only touched pages cost). */
size_t loom_resumable_stack_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_C_API_H */
