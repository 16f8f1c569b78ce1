/*
 * The MPI signature classes of collectives.def: what a call of each class passes, as C
 * preprocessor text for the entry points (coll_loom_entry.c) and the hand-on to the previous
 * component (coll_loom_hand_on.c). Private to coll_component/.
 *
 * For a class S:
 *   LOOM_PARAMS_S      its parameters before the communicator (each followed by a comma)
 *   LOOM_ARGS_S        the same as arguments, for a call of the previous component
 *   LOOM_FROM_S(c)     the same from a loom_mpi_call_t c, for mca_coll_loom_hand_on
 *   LOOM_RECORD_S      its loom_mpi_call_t fields (each preceded by a comma)
 *   LOOM_KEY_S         what loom_repeat_of_args (coll_loom_repeat.c) compares of its arguments
 *                      to find a repeat: send buffer, receive buffer, count, per-rank receive
 *                      counts (reduce_scatter, allgatherv: by their sum), datatype, op, root, send
 *                      count, send datatype (NULL or 0 where the class has none; the classes decided
 *                      by the communicator alone, whose counts differ by rank, by root and
 *                      in-place use only)
 * Counts and arrays have the version layer's types (loom_count_t, loom_count_array_t, ...:
 * coll_loom_ompi.h), as Open MPI's coll interface of that version passes them.
 * Each is written out in full (no class's macro uses another's), so that a compiler error in an
 * entry point is at most two macros deep: LOOM_COLLECTIVE in coll_loom_entry.c, then one of these.
 */
#ifndef COLL_LOOM_SIGNATURES_H
#define COLL_LOOM_SIGNATURES_H

#define LOOM_PARAMS_reduction const void *sbuf, void *rbuf, loom_count_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
#define LOOM_ARGS_reduction   sbuf, rbuf, count, dtype, op,
#define LOOM_FROM_reduction(c) (c)->sbuf, (c)->rbuf, (c)->count, (c)->dtype, (c)->op,
#define LOOM_RECORD_reduction , .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op
#define LOOM_KEY_reduction sbuf, rbuf, count, LOOM_COUNTS_NONE, dtype, op, 0, 0, NULL

#define LOOM_PARAMS_rooted_reduction \
    const void *sbuf, void *rbuf, loom_count_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
#define LOOM_ARGS_rooted_reduction   sbuf, rbuf, count, dtype, op, root,
#define LOOM_FROM_rooted_reduction(c) (c)->sbuf, (c)->rbuf, (c)->count, (c)->dtype, (c)->op, (c)->root,
#define LOOM_RECORD_rooted_reduction , .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op, .root = root
#define LOOM_KEY_rooted_reduction sbuf, rbuf, count, LOOM_COUNTS_NONE, dtype, op, root, 0, NULL

#define LOOM_PARAMS_reduction_v \
    const void *sbuf, void *rbuf, loom_count_array_t rcounts, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
#define LOOM_ARGS_reduction_v   sbuf, rbuf, rcounts, dtype, op,
#define LOOM_FROM_reduction_v(c) (c)->sbuf, (c)->rbuf, (c)->counts, (c)->dtype, (c)->op,
#define LOOM_RECORD_reduction_v , .sbuf = sbuf, .rbuf = rbuf, .counts = rcounts, .dtype = dtype, .op = op
#define LOOM_KEY_reduction_v sbuf, rbuf, 0, rcounts, dtype, op, 0, 0, NULL

#define LOOM_PARAMS_exchange                                                                    \
    const void *sbuf, loom_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf, loom_count_t rcount, \
        struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_exchange   sbuf, scount, sdtype, rbuf, rcount, rdtype,
#define LOOM_FROM_exchange(c) (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->count, (c)->dtype,
#define LOOM_RECORD_exchange \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount, .dtype = rdtype
#define LOOM_KEY_exchange sbuf, rbuf, rcount, LOOM_COUNTS_NONE, rdtype, NULL, 0, scount, sdtype

#define LOOM_PARAMS_exchange_v                                                                           \
    const void *sbuf, loom_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf, loom_count_array_t rcounts, \
        loom_disp_array_t displs, struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_exchange_v   sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
#define LOOM_FROM_exchange_v(c) (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->counts, (c)->displs, (c)->dtype,
#define LOOM_RECORD_exchange_v                                                                                 \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .counts = rcounts, .displs = displs, \
      .dtype = rdtype
#define LOOM_KEY_exchange_v sbuf, rbuf, 0, rcounts, rdtype, NULL, 0, scount, sdtype

/* gather, scatter: the same arguments (which side is significant at the root only is the layout's). */
#define LOOM_PARAMS_rooted_exchange                                                              \
    const void *sbuf, loom_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf, loom_count_t rcount, \
        struct ompi_datatype_t *rdtype, int root,
#define LOOM_ARGS_rooted_exchange   sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
#define LOOM_FROM_rooted_exchange(c) (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->count, (c)->dtype, (c)->root,
#define LOOM_RECORD_rooted_exchange \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount, .dtype = rdtype, .root = root
#define LOOM_KEY_rooted_exchange sbuf, rbuf, rcount, LOOM_COUNTS_NONE, rdtype, NULL, root, scount, sdtype

#define LOOM_PARAMS_rooted_exchange_v                                                                     \
    const void *sbuf, loom_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf, loom_count_array_t rcounts, \
        loom_disp_array_t displs, struct ompi_datatype_t *rdtype, int root,
#define LOOM_ARGS_rooted_exchange_v   sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
#define LOOM_FROM_rooted_exchange_v(c) \
    (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->counts, (c)->displs, (c)->dtype, (c)->root,
#define LOOM_RECORD_rooted_exchange_v                                                                         \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .counts = rcounts, .displs = displs, \
      .dtype = rdtype, .root = root
#define LOOM_KEY_rooted_exchange_v sbuf, rbuf, 0, LOOM_COUNTS_NONE, NULL, NULL, root, 0, NULL

#define LOOM_PARAMS_scatter_v                                                                                  \
    const void *sbuf, loom_count_array_t scounts, loom_disp_array_t sdispls, struct ompi_datatype_t *sdtype, void *rbuf, \
        loom_count_t rcount, struct ompi_datatype_t *rdtype, int root,
#define LOOM_ARGS_scatter_v   sbuf, scounts, sdispls, sdtype, rbuf, rcount, rdtype, root,
#define LOOM_FROM_scatter_v(c) (c)->sbuf, (c)->scounts, (c)->sdispls, (c)->sdtype, (c)->rbuf, (c)->count, (c)->dtype, (c)->root,
#define LOOM_RECORD_scatter_v                                                                                     \
    , .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype, .rbuf = rbuf, .count = rcount, \
      .dtype = rdtype, .root = root
#define LOOM_KEY_scatter_v sbuf, rbuf, 0, LOOM_COUNTS_NONE, NULL, NULL, root, 0, NULL

#define LOOM_PARAMS_exchange_vv                                                                               \
    const void *sbuf, loom_count_array_t scounts, loom_disp_array_t sdispls, struct ompi_datatype_t *sdtype, void *rbuf,     \
        loom_count_array_t rcounts, loom_disp_array_t rdispls, struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_exchange_vv   sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
#define LOOM_FROM_exchange_vv(c) \
    (c)->sbuf, (c)->scounts, (c)->sdispls, (c)->sdtype, (c)->rbuf, (c)->counts, (c)->displs, (c)->dtype,
#define LOOM_RECORD_exchange_vv                                                                                 \
    , .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype, .rbuf = rbuf, .counts = rcounts, \
      .displs = rdispls, .dtype = rdtype
#define LOOM_KEY_exchange_vv sbuf, rbuf, 0, LOOM_COUNTS_NONE, NULL, NULL, 0, 0, NULL

#define LOOM_PARAMS_exchange_w                                                                                 \
    const void *sbuf, loom_count_array_t scounts, loom_disp_array_t sdispls, struct ompi_datatype_t *const *sdtypes, void *rbuf, \
        loom_count_array_t rcounts, loom_disp_array_t rdispls, struct ompi_datatype_t *const *rdtypes,
#define LOOM_ARGS_exchange_w   sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes,
#define LOOM_FROM_exchange_w(c) \
    (c)->sbuf, (c)->scounts, (c)->sdispls, (c)->sdtypes, (c)->rbuf, (c)->counts, (c)->displs, (c)->rdtypes,
#define LOOM_RECORD_exchange_w                                                                                  \
    , .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes, .rbuf = rbuf, .counts = rcounts, \
      .displs = rdispls, .rdtypes = rdtypes
#define LOOM_KEY_exchange_w sbuf, rbuf, 0, LOOM_COUNTS_NONE, NULL, NULL, 0, 0, NULL

/* The neighbourhood collectives: decided by the communicator alone (their counts differ by rank),
 * so their repeats are found by in-place use only, as exchange_vv's. MPI_Neighbor_alltoallv is
 * exchange_vv itself. */
#define LOOM_PARAMS_neighbour_exchange                                                          \
    const void *sbuf, loom_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf, loom_count_t rcount, \
        struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_neighbour_exchange   sbuf, scount, sdtype, rbuf, rcount, rdtype,
#define LOOM_FROM_neighbour_exchange(c) (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->count, (c)->dtype,
#define LOOM_RECORD_neighbour_exchange \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount, .dtype = rdtype
#define LOOM_KEY_neighbour_exchange sbuf, rbuf, rcount, LOOM_COUNTS_NONE, rdtype, NULL, 0, scount, sdtype

#define LOOM_PARAMS_neighbour_exchange_v                                                                 \
    const void *sbuf, loom_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf, loom_count_array_t rcounts, \
        loom_disp_array_t displs, struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_neighbour_exchange_v   sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
#define LOOM_FROM_neighbour_exchange_v(c) \
    (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->counts, (c)->displs, (c)->dtype,
#define LOOM_RECORD_neighbour_exchange_v                                                                       \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .counts = rcounts, .displs = displs, \
      .dtype = rdtype
#define LOOM_KEY_neighbour_exchange_v sbuf, rbuf, 0, LOOM_COUNTS_NONE, NULL, NULL, 0, 0, NULL

#define LOOM_PARAMS_neighbour_exchange_w                                                                          \
    const void *sbuf, loom_count_array_t scounts, loom_adisp_array_t sdispls, struct ompi_datatype_t *const *sdtypes,    \
        void *rbuf, loom_count_array_t rcounts, loom_adisp_array_t rdispls, struct ompi_datatype_t *const *rdtypes,
#define LOOM_ARGS_neighbour_exchange_w   sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes,
#define LOOM_FROM_neighbour_exchange_w(c) \
    (c)->sbuf, (c)->scounts, (c)->sadispls, (c)->sdtypes, (c)->rbuf, (c)->counts, (c)->adispls, (c)->rdtypes,
#define LOOM_RECORD_neighbour_exchange_w                                                                          \
    , .sbuf = sbuf, .scounts = scounts, .sadispls = sdispls, .sdtypes = sdtypes, .rbuf = rbuf, .counts = rcounts, \
      .adispls = rdispls, .rdtypes = rdtypes
#define LOOM_KEY_neighbour_exchange_w sbuf, rbuf, 0, LOOM_COUNTS_NONE, NULL, NULL, 0, 0, NULL

#define LOOM_PARAMS_broadcast void *buf, loom_count_t count, struct ompi_datatype_t *dtype, int root,
#define LOOM_ARGS_broadcast   buf, count, dtype, root,
#define LOOM_FROM_broadcast(c) (c)->rbuf, (c)->count, (c)->dtype, (c)->root,
#define LOOM_RECORD_broadcast , .rbuf = buf, .count = count, .dtype = dtype, .root = root
#define LOOM_KEY_broadcast NULL, buf, count, LOOM_COUNTS_NONE, dtype, NULL, root, 0, NULL

#define LOOM_PARAMS_sync
#define LOOM_ARGS_sync
#define LOOM_FROM_sync(c)
#define LOOM_RECORD_sync
#define LOOM_KEY_sync NULL, NULL, 0, LOOM_COUNTS_NONE, NULL, NULL, 0, 0, NULL

#endif /* COLL_LOOM_SIGNATURES_H */
