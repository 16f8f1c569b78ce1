/*
 * Device (CUDA) buffers in the collective entry points (coll_loom_device.c). This Open MPI
 * cannot send device memory, so a call with device buffers is served one of three ways:
 *
 *   direct     the datatypes are dense: the algorithm is chosen with the rules' memory=cuda
 *              key and runs on host staging buffers, the data pipelined between device and
 *              host in segments (algorithms/staging.hpp);
 *   on copies  a datatype has holes: the buffers' whole extents are copied to host memory
 *              and the collective runs on the copies, as "direct" (same algorithm, same
 *              segments, so every rank's messages still match), then the output is copied back;
 *              a call loom declines is also run on such copies and handed to the next
 *              component, which then sees host memory;
 *   hand on    loom cannot stage here (libloom_cuda.so or a GPU missing; said once on
 *              stderr): the call goes to the next component as it is.
 *
 * Every rank of a call must pass the same kind of memory (all device or all host), as deep-
 * learning frameworks do; a call that mixes them is not supported (README).
 */
#ifndef MCA_COLL_LOOM_DEVICE_H
#define MCA_COLL_LOOM_DEVICE_H

#include "coll_loom.h"

BEGIN_C_DECLS

typedef enum { LOOM_DEV_HOST, LOOM_DEV_DIRECT, LOOM_DEV_COPIES, LOOM_DEV_HAND_ON } loom_dev_mode_t;

/* How this rank serves a call with buffers a and b (NULL or MPI_IN_PLACE: none) of types
 * ta and tb (NULL: none). Costs one pointer query per buffer when no device memory is in
 * use, and nothing more without a CUDA driver. */
loom_dev_mode_t loom_device_mode(const void *a, struct ompi_datatype_t *ta, const void *b,
                                 struct ompi_datatype_t *tb);

/* Marks a call served "direct" (or on copies) as device memory: memory=cuda for the rules,
 * and the staging copier. */
void loom_device_prepare(loom_call_t *call, loom_dev_mode_t mode);

/* 1 if a declined call must be re-run on host copies before it is handed on (mode direct,
 * and not already on copies). */
int loom_device_decline_on_copies(loom_dev_mode_t mode);

/* At the top of an entry point, once `dev` is known: a call served on copies, or handed on. */
#define LOOM_DEVICE_ENTRY(dev, coll, copies_call, prev_call)                                   \
    do {                                                                                       \
        if (LOOM_DEV_COPIES == (dev)) return copies_call;                                      \
        if (LOOM_DEV_HAND_ON == (dev)) {                                                       \
            mca_coll_loom_note_declined(coll, comm, "device buffers, and loom cannot stage "   \
                                                    "them here (see the message on stderr)");  \
            return prev_call;                                                                  \
        }                                                                                      \
    } while (0)

/* The collectives on host copies of their device buffers (see above). */
int loom_device_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);
int loom_device_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module);
int loom_device_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int loom_device_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *module);
int loom_device_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int loom_device_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                           const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int loom_device_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int loom_device_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_LOOM_DEVICE_H */
