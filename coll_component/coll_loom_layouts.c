/*
 * The glue's descriptor of each layout of collectives.def (coll_loom_layouts.h): how a call is
 * described, and its trace's bytes. Which ranks get a result is the row's (loom_coll_has_result),
 * never a collective's name.
 */
#include "coll_loom_layouts.h"

static void set_buffer(loom_buffer_t *b, const void *user, struct ompi_datatype_t *dtype, size_t count, int read,
                       int written)
{
    b->user = (void *)user;
    b->dtype = dtype;
    b->blocks = 1;
    b->count = count;
    b->counts = LOOM_COUNTS_NONE;
    b->displs = LOOM_DISPLS_NONE;
    b->dtypes = NULL;
    b->adispls = LOOM_DISPLS_NONE;
    b->read = read;
    b->written = written;
}

/* ---- describing a call: the core's counts and the buffers ---- */

/* A reduction's buffers: the input (NULL in place), and the result where this rank gets one. */
static void reduction_buffers(loom_glue_call_t *c, const void *input, int in_place, int has_result, size_t total)
{
    const loom_mpi_call_t *m = c->mpi;
    set_buffer(&c->send, in_place ? NULL : input, m->dtype, total, LOOM_READ_ALL, 0);
    set_buffer(&c->recv, has_result ? m->rbuf : NULL, m->dtype, in_place ? total : c->result_count,
               in_place ? LOOM_READ_ALL : LOOM_READ_NONE, has_result);
}

/* The end of every description, inline in each descriptor (coll_loom_layouts.h says why). A
 * reduction's: its op plan; its buffers are used where they are unless its datatype has holes.
 * NULL, or why loom cannot serve the call. */
static inline const char *reduction_described(loom_glue_call_t *c)
{
    const char *why = NULL;
    if (!loom_plan_reduction(c->mpi->dtype, c->mpi->op, &c->plan, &why)) return why;
    c->core.op = c->plan.reduction;
    c->core.keep_from_open_mpi = c->plan.ompi_kernel_wrong;
    c->dense = !c->plan.holes;
    c->core.sbuf = c->send.user;
    c->core.rbuf = c->recv.user;
    return NULL;
}

/* A data movement's: whether its buffers are dense where they are (else dense views are made
 * before the run). */
static inline const char *movement_described(loom_glue_call_t *c)
{
    c->dense = loom_dense_in_place(&c->send) && loom_dense_in_place(&c->recv);
    if (c->dense) {
        c->core.sbuf = loom_dense_start(&c->send);
        c->core.rbuf = loom_dense_start(&c->recv);
    }
    return NULL;
}

/* vector: allreduce, reduce, scan, exscan (count elements in and out), bcast (count instances
 * from the root). */
static const char *describe_vector(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                   struct ompi_communicator_t *comm, int *rc)
{
    (void)rc;
    const int rank = ompi_comm_rank(comm);
    if (m->count < 0) return "negative count";
    c->core.root = m->root;
    if (!row->reduces) { /* bcast: the root's buffer is read, the others' written */
        const int root = rank == m->root;
        c->core.count = (size_t)m->count * loom_type_size(m->dtype);
        set_buffer(&c->recv, m->rbuf, m->dtype, (size_t)m->count, root ? LOOM_READ_ALL : LOOM_READ_NONE, !root);
        return movement_described(c);
    }
    /* A rank without a result (a reduce's non-root; exscan's rank 0, whose buffer MPI leaves
     * undefined and loom, as Open MPI, as it was) only sends its input, which in place is in rbuf. */
    const int has_result = loom_row_has_result(row, rank, m->root);
    const int in_place = MPI_IN_PLACE == m->sbuf || m->sbuf == m->rbuf;
    const size_t total = (size_t)m->count;
    c->core.count = total;
    c->result_count = total;
    reduction_buffers(c, has_result || !in_place ? m->sbuf : m->rbuf, has_result && in_place, has_result, total);
    return reduction_described(c);
}

/* split: reduce_scatter(_block), counts[i] elements for rank i. */
static const char *describe_split(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                  struct ompi_communicator_t *comm, int *rc)
{
    (void)row;
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    if (OMPI_SUCCESS != (*rc = loom_call_counts(c, size))) return "out of memory";
    size_t total = 0;
    for (int i = 0; i < size; ++i) {
        const long long n = loom_counts_given(m->counts) ? loom_count_at(m->counts, i) : m->count;
        if (n < 0) return "negative count";
        c->counts[i] = (size_t)n;
        total += (size_t)n;
    }
    c->result_count = c->counts[rank];
    reduction_buffers(c, m->sbuf, MPI_IN_PLACE == m->sbuf, 1, total);
    return reduction_described(c);
}

/* per_peer: alltoall, one block of count instances for each rank. */
static const char *describe_per_peer(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                     struct ompi_communicator_t *comm, int *rc)
{
    (void)row, (void)rc;
    const int size = ompi_comm_size(comm), in_place = MPI_IN_PLACE == m->sbuf;
    if (m->count < 0) return "negative count";
    c->core.count = (size_t)m->count * loom_type_size(m->dtype);
    if (!in_place) set_buffer(&c->send, m->sbuf, m->sdtype, (size_t)size * (size_t)m->scount, LOOM_READ_ALL, 0);
    set_buffer(&c->recv, m->rbuf, m->dtype, (size_t)size * (size_t)m->count, in_place ? LOOM_READ_ALL : LOOM_READ_NONE,
               1);
    return movement_described(c);
}

/* The counts of a rank that knows only the size of its own block (a gather's or a scatter's
 * non-root): every block is that size, as MPI requires - or, where only the root knows the
 * counts (gatherv, scatterv), the others are 0 here. */
static void own_block_counts(loom_glue_call_t *c, const loom_coll_row_t *row, int size, int rank, size_t block)
{
    const int own_only = LOOM_COUNTS_root_only == row->counts;
    for (int i = 0; i < size; ++i) c->counts[i] = !own_only || i == rank ? block : 0;
}

/* c->counts in bytes: counts[i] instances of dtype for rank i, or count for each where counts is
 * none. 0 if one is negative. */
static int counts_in_bytes(loom_glue_call_t *c, int size, loom_count_array_t counts, long long count,
                           struct ompi_datatype_t *dtype)
{
    const size_t type_size = loom_type_size(dtype);
    for (int i = 0; i < size; ++i) {
        const long long n = loom_counts_given(counts) ? loom_count_at(counts, i) : count;
        if (n < 0) return 0;
        c->counts[i] = (size_t)n * type_size;
    }
    return 1;
}

/* gathered: allgather(v), gather(v); every rank's block, counts[i] bytes for rank i. */
static const char *describe_gathered(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                     struct ompi_communicator_t *comm, int *rc)
{
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), in_place = MPI_IN_PLACE == m->sbuf;
    if (OMPI_SUCCESS != (*rc = loom_call_counts(c, size))) return "out of memory";
    c->core.root = m->root;
    if (!loom_row_has_result(row, rank, m->root)) { /* gather's others: MPI leaves rbuf undefined */
        if (m->scount < 0) return "negative count";
        own_block_counts(c, row, size, rank, (size_t)m->scount * loom_type_size(m->sdtype));
        set_buffer(&c->send, m->sbuf, m->sdtype, (size_t)m->scount, LOOM_READ_ALL, 0);
        return movement_described(c);
    }
    if (!counts_in_bytes(c, size, m->counts, m->count, m->dtype)) return "negative count";
    if (!in_place) set_buffer(&c->send, m->sbuf, m->sdtype, (size_t)m->scount, LOOM_READ_ALL, 0);
    set_buffer(&c->recv, m->rbuf, m->dtype, (size_t)m->count, in_place ? rank : LOOM_READ_NONE, 1);
    c->recv.blocks = size;
    c->recv.counts = m->counts;
    c->recv.displs = m->displs;
    return movement_described(c);
}

/* scattered: scatter(v); the root's send side holds every rank's block. */
static const char *describe_scattered(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                      struct ompi_communicator_t *comm, int *rc)
{
    (void)row;
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), root = rank == m->root;
    if (OMPI_SUCCESS != (*rc = loom_call_counts(c, size))) return "out of memory";
    c->core.root = m->root;
    if (root) {
        if (!counts_in_bytes(c, size, m->scounts, m->scount, m->sdtype)) return "negative count";
        set_buffer(&c->send, m->sbuf, m->sdtype, (size_t)m->scount, LOOM_READ_ALL, 0);
        c->send.blocks = size;
        c->send.counts = m->scounts;
        c->send.displs = m->sdispls;
    } else {
        if (m->count < 0) return "negative count";
        own_block_counts(c, row, size, rank, (size_t)m->count * loom_type_size(m->dtype));
    }
    /* In place (the root's rbuf is MPI_IN_PLACE) its block stays in the send buffer. */
    if (!(root && MPI_IN_PLACE == m->rbuf))
        set_buffer(&c->recv, m->rbuf, m->dtype, (size_t)m->count, LOOM_READ_NONE, 1);
    return movement_described(c);
}

/* per_peer_v: alltoallv(w), counts[i] bytes to rank i, counts[P + i] from it. */
static const char *describe_per_peer_v(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                       struct ompi_communicator_t *comm, int *rc)
{
    (void)row;
    const int size = ompi_comm_size(comm), in_place = MPI_IN_PLACE == m->sbuf;
    if (OMPI_SUCCESS != (*rc = loom_call_counts(c, 2 * size))) return "out of memory";
    for (int i = 0; i < size; ++i) {
        const long long n = loom_count_at(m->counts, i);
        if (n < 0 || (!in_place && loom_count_at(m->scounts, i) < 0)) return "negative count";
        c->counts[size + i] = (size_t)n * loom_type_size(NULL != m->rdtypes ? m->rdtypes[i] : m->dtype);
        /* In place the send side is the receive side (MPI ignores the send arguments). */
        c->counts[i] = in_place
                           ? c->counts[size + i]
                           : (size_t)loom_count_at(m->scounts, i) * loom_type_size(NULL != m->sdtypes ? m->sdtypes[i] : m->sdtype);
    }
    if (!in_place) {
        set_buffer(&c->send, m->sbuf, m->sdtype, 0, LOOM_READ_ALL, 0);
        c->send.blocks = size;
        c->send.counts = m->scounts;
        c->send.displs = m->sdispls;
        c->send.dtypes = m->sdtypes;
    }
    set_buffer(&c->recv, m->rbuf, m->dtype, 0, in_place ? LOOM_READ_ALL : LOOM_READ_NONE, 1);
    c->recv.blocks = size;
    c->recv.counts = m->counts;
    c->recv.displs = m->displs;
    c->recv.dtypes = m->rdtypes;
    return movement_described(c);
}

/* The neighbourhood layouts: the neighbours are the communicator's (c->neighbours, set by the
 * pipeline for these collectives only), and the core call's. MPI has no in-place form of these
 * collectives. A receive block of MPI_PROC_NULL is never written: where the receive side needs a
 * dense copy, the copy is made of every block (read), so that such a block goes back as it was. */
static int any_proc_null(const loom_neighbourhood_t *n)
{
    for (int j = 0; j < n->indegree; ++j)
        if (LOOM_NO_NEIGHBOUR == n->sources[j]) return 1;
    return 0;
}

/* The receive side of both, counts[first + j] bytes from source j, and their description's end. */
static const char *neighbour_receives(loom_glue_call_t *c, int first)
{
    const loom_mpi_call_t *m = c->mpi;
    const loom_neighbourhood_t *n = c->neighbours;
    for (int j = 0; j < n->indegree; ++j) {
        const long long k = loom_counts_given(m->counts) ? loom_count_at(m->counts, j) : m->count;
        if (k < 0) return "negative count";
        c->counts[first + j] = (size_t)k * loom_type_size(NULL != m->rdtypes ? m->rdtypes[j] : m->dtype);
    }
    set_buffer(&c->recv, m->rbuf, m->dtype, (size_t)m->count, any_proc_null(n) ? LOOM_READ_ALL : LOOM_READ_NONE, 1);
    c->recv.blocks = n->indegree;
    c->recv.counts = m->counts;
    c->recv.displs = m->displs;
    c->recv.dtypes = m->rdtypes;
    c->recv.adispls = m->adispls;
    return movement_described(c);
}

/* neighbour_gathered: neighbor_allgather(v), one block to every destination. */
static const char *describe_neighbour_gathered(loom_glue_call_t *c, const loom_mpi_call_t *m,
                                               const loom_coll_row_t *row, struct ompi_communicator_t *comm, int *rc)
{
    (void)row, (void)comm;
    c->core.neighbours = c->neighbours;
    if (MPI_IN_PLACE == m->sbuf) return "MPI_IN_PLACE (MPI has none for a neighbourhood collective)";
    if (OMPI_SUCCESS != (*rc = loom_call_counts(c, 1 + c->neighbours->indegree))) return "out of memory";
    if (m->scount < 0) return "negative count";
    c->counts[0] = (size_t)m->scount * loom_type_size(m->sdtype);
    set_buffer(&c->send, m->sbuf, m->sdtype, (size_t)m->scount, LOOM_READ_ALL, 0);
    return neighbour_receives(c, 1);
}

/* Open MPI's libnbc (every non-blocking and persistent neighbourhood call it is handed) posts a
 * Cartesian neighbourhood's receives in list order with one tag, so where a periodic dimension of
 * size 1 or 2 names one rank on both sides it swaps the two blocks of neighbor_alltoall(v, w)
 * (open-mpi/ompi#14430, unfixed in 4.1 and 5.0.7; coll/basic, blocking, is right): loom keeps
 * such calls (a fallback rule is passed over). The same on every rank: the grid's. */
static int libnbc_swaps(const loom_mpi_call_t *m, const loom_neighbourhood_t *n)
{
    if (LOOM_BLOCKING == m->kind || LOOM_TOPO_CARTESIAN != n->kind) return 0;
    for (int d = 0; d < n->ndims; ++d)
        if (0 != n->periods[d] && n->dims[d] <= 2) return 1;
    return 0;
}

/* per_neighbour: neighbor_alltoall(v, w), a block per destination. */
static const char *describe_per_neighbour(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                          struct ompi_communicator_t *comm, int *rc)
{
    (void)row, (void)comm;
    const int out = c->neighbours->outdegree;
    c->core.neighbours = c->neighbours;
    if (MPI_IN_PLACE == m->sbuf) return "MPI_IN_PLACE (MPI has none for a neighbourhood collective)";
    if (OMPI_SUCCESS != (*rc = loom_call_counts(c, out + c->neighbours->indegree))) return "out of memory";
    for (int i = 0; i < out; ++i) {
        const long long k = loom_counts_given(m->scounts) ? loom_count_at(m->scounts, i) : m->scount;
        if (k < 0) return "negative count";
        c->counts[i] = (size_t)k * loom_type_size(NULL != m->sdtypes ? m->sdtypes[i] : m->sdtype);
    }
    set_buffer(&c->send, m->sbuf, m->sdtype, (size_t)m->scount, LOOM_READ_ALL, 0);
    c->send.blocks = out;
    c->send.counts = m->scounts;
    c->send.displs = m->sdispls;
    c->send.dtypes = m->sdtypes;
    c->send.adispls = m->sadispls;
    c->core.keep_from_open_mpi = libnbc_swaps(m, c->neighbours);
    return neighbour_receives(c, out);
}

/* none: barrier, no data. */
static const char *describe_none(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                                 struct ompi_communicator_t *comm, int *rc)
{
    (void)m, (void)row, (void)comm, (void)rc;
    return movement_described(c);
}

/* ---- the trace's bytes (message_bytes' definition, from MPI's arguments) ---- */

static unsigned long long nonnegative(long long n) { return n > 0 ? (unsigned long long)n : 0; }
static unsigned long long type_bytes(struct ompi_datatype_t *t) { return NULL != t ? loom_type_size(t) : 0; }

/* The sum of counts[0..size), or size of count when there is no array. */
static unsigned long long all_counts(loom_count_array_t counts, long long count, int size)
{
    if (!loom_counts_given(counts)) return nonnegative(count) * (unsigned long long)size;
    unsigned long long sum = 0;
    for (int i = 0; i < size; ++i) sum += nonnegative(loom_count_at(counts, i));
    return sum;
}

static unsigned long long vector_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    (void)size, (void)rank;
    return nonnegative(m->count) * type_bytes(m->dtype);
}

static unsigned long long split_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    (void)rank;
    return all_counts(m->counts, m->count, size) * type_bytes(m->dtype);
}

/* A gather's receive side is significant at its root only: elsewhere, P of this rank's blocks
 * (MPI makes every block the same size). */
static unsigned long long gathered_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    if (!loom_coll_has_result(m->coll, rank, m->root))
        return nonnegative(m->scount) * type_bytes(m->sdtype) * (unsigned long long)size;
    return split_bytes(m, size, rank);
}

/* The root's send side; elsewhere P of this rank's blocks. */
static unsigned long long scattered_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    if (rank != m->root) return nonnegative(m->count) * (unsigned long long)size * type_bytes(m->dtype);
    return all_counts(m->scounts, m->scount, size) * type_bytes(m->sdtype);
}

/* alltoallv(w): the bytes this rank sends. */
static unsigned long long per_peer_v_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    (void)rank;
    unsigned long long sum = 0;
    for (int i = 0; i < size && loom_counts_given(m->scounts); ++i) {
        struct ompi_datatype_t *t = NULL != m->sdtypes ? m->sdtypes[i] : m->sdtype;
        sum += NULL != t ? nonnegative(loom_count_at(m->scounts, i)) * loom_type_size(t) : 0;
    }
    return sum;
}

/* The neighbourhood collectives: one send block of the uniform forms (the degrees, and so the
 * v and w forms' arrays, are the topology's, which a handed-on call's trace does not read): 0 for
 * the v and w forms. */
static unsigned long long neighbour_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    (void)size, (void)rank;
    return !loom_counts_given(m->scounts) ? nonnegative(m->scount) * type_bytes(m->sdtype) : 0;
}

static unsigned long long no_bytes(const loom_mpi_call_t *m, int size, int rank)
{
    (void)m, (void)size, (void)rank;
    return 0;
}

/* ---- the descriptors ---- */

const loom_layout_desc_t loom_layouts[] = {
    [LOOM_LAYOUT_vector] = {LOOM_LAYOUT_vector, describe_vector, vector_bytes},
    [LOOM_LAYOUT_split] = {LOOM_LAYOUT_split, describe_split, split_bytes},
    [LOOM_LAYOUT_gathered] = {LOOM_LAYOUT_gathered, describe_gathered, gathered_bytes},
    [LOOM_LAYOUT_per_peer] = {LOOM_LAYOUT_per_peer, describe_per_peer, vector_bytes},
    [LOOM_LAYOUT_scattered] = {LOOM_LAYOUT_scattered, describe_scattered, scattered_bytes},
    [LOOM_LAYOUT_per_peer_v] = {LOOM_LAYOUT_per_peer_v, describe_per_peer_v, per_peer_v_bytes},
    [LOOM_LAYOUT_none] = {LOOM_LAYOUT_none, describe_none, no_bytes},
    [LOOM_LAYOUT_neighbour_gathered] = {LOOM_LAYOUT_neighbour_gathered, describe_neighbour_gathered, neighbour_bytes},
    [LOOM_LAYOUT_per_neighbour] = {LOOM_LAYOUT_per_neighbour, describe_per_neighbour, neighbour_bytes},
};
_Static_assert(sizeof loom_layouts / sizeof loom_layouts[0] == LOOM_LAYOUT_COUNT,
               "coll_loom_layouts.c: one descriptor per layout of loom_layout_t");
