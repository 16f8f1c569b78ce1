/*
 * The data-movement collectives: MPI_Allgather, MPI_Allgatherv, MPI_Bcast, MPI_Alltoall and
 * MPI_Barrier. The core moves bytes: a buffer whose data is contiguous is used where it is,
 * anything else is packed into a dense scratch buffer and unpacked afterwards
 * (loom_dense_*). Packing is a local matter (ranks may pass different datatypes with the
 * same type signature); the choice of algorithm depends only on byte counts, which MPI's
 * type-signature rules make the same on every rank.
 */
#include "coll_loom.h"
#include "coll_loom_device.h"

#include <stdlib.h>

static ptrdiff_t type_extent(struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    return extent;
}

int mca_coll_loom_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    loom_call_t call = {.coll = LOOM_COLL_BARRIER};
    const char *why, *rule = NULL;
    const char *algorithm = loom_choose_for(&call, comm, m, &why, &rule);
    if (NULL == algorithm) {
        mca_coll_loom_note_declined(LOOM_COLL_BARRIER, comm, why);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    int rc = loom_run_on(algorithm, &call, comm, m);
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    return rc;
}

int mca_coll_loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    const loom_dev_mode_t dev = loom_device_mode(buf, dtype, NULL, NULL);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_BCAST, loom_device_bcast(buf, count, dtype, root, comm, module),
                      m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module));
    loom_call_t call = {.coll = LOOM_COLL_BCAST, .count = (size_t) count * loom_type_size(dtype),
                        .root = root};
    loom_device_prepare(&call, dev);
    const char *why = "negative count", *rule = NULL;
    const char *algorithm = count < 0 ? NULL : loom_choose_for(&call, comm, m, &why, &rule);
    if (NULL == algorithm && loom_device_decline_on_copies(dev))
        return loom_device_bcast(buf, count, dtype, root, comm, module);
    if (NULL == algorithm) {
        mca_coll_loom_note_declined(LOOM_COLL_BCAST, comm, why);
        return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
    }
    loom_dense_t data;
    int rc = loom_dense_init(&data, buf, (size_t) count, dtype, is_root);
    if (OMPI_SUCCESS == rc) {
        call.rbuf = data.data;
        rc = loom_run_on(algorithm, &call, comm, m);
    }
    if (OMPI_SUCCESS == rc && !is_root) rc = loom_dense_unpack(&data, buf, (size_t) count, dtype);
    loom_dense_fini(&data);
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    return rc;
}

/* Allgather and allgatherv once the receive side is described: block i of `bytes[i]` bytes
 * lives at rbuf + displs[i] x extent as rcounts[i] x rdtype. `dense_displs` says whether the
 * blocks lie end to end, so a contiguous rdtype can be used in place. */
static int allgather_common(const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                            const int *displs, struct ompi_datatype_t *rdtype, int dense_displs,
                            const size_t *bytes, const char *algorithm, loom_call_t *call,
                            struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    const int in_place = MPI_IN_PLACE == sbuf;
    const ptrdiff_t extent = type_extent(rdtype);
    size_t total = 0, own_offset = 0, total_count = 0;
    for (int i = 0; i < size; ++i) {
        if (i == rank) own_offset = total;
        total += bytes[i];
        total_count += (size_t) rcounts[i];
    }

    /* Receive side: the user's buffer itself, or a dense scratch buffer. */
    loom_dense_t recv = {.data = NULL, .scratch = NULL, .bytes = total};
    int rc = OMPI_SUCCESS;
    if (dense_displs) {
        rc = loom_dense_init(&recv, rbuf, total_count, rdtype, 0);
    } else {
        recv.scratch = recv.data = malloc(total > 0 ? total : 1);
        if (NULL == recv.scratch) rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (OMPI_SUCCESS == rc && in_place && NULL != recv.scratch)
        rc = loom_pack((char *) rbuf + (ptrdiff_t) displs[rank] * extent, (size_t) rcounts[rank],
                       rdtype, recv.data + own_offset);

    /* Send side. */
    loom_dense_t send = {.data = NULL, .scratch = NULL, .bytes = 0};
    if (OMPI_SUCCESS == rc && !in_place) rc = loom_dense_init(&send, sbuf, (size_t) scount, sdtype, 1);

    if (OMPI_SUCCESS == rc) {
        call->sbuf = in_place ? NULL : send.data;
        call->rbuf = recv.data;
        rc = loom_run_on(algorithm, call, comm, m);
    }
    if (OMPI_SUCCESS == rc && NULL != recv.scratch) {
        size_t offset = 0;
        for (int i = 0; i < size && OMPI_SUCCESS == rc; ++i) {
            rc = loom_unpack(recv.data + offset, (char *) rbuf + (ptrdiff_t) displs[i] * extent,
                             (size_t) rcounts[i], rdtype);
            offset += bytes[i];
        }
    }
    loom_dense_fini(&send);
    loom_dense_fini(&recv);
    return rc;
}

int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int size = ompi_comm_size(comm);
    const loom_dev_mode_t dev = loom_device_mode(sbuf, sdtype, rbuf, rdtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_ALLGATHER,
                      loom_device_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module),
                      m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                        m->prev_allgather_module));
    loom_sizes_t bytes;
    if (OMPI_SUCCESS != loom_sizes_init(&bytes, size)) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < size; ++i) bytes.v[i] = (size_t) rcount * loom_type_size(rdtype);
    loom_call_t call = {.coll = LOOM_COLL_ALLGATHER, .counts = bytes.v};
    loom_device_prepare(&call, dev);
    const char *why = "negative count", *rule = NULL;
    const char *algorithm = rcount < 0 ? NULL : loom_choose_for(&call, comm, m, &why, &rule);
    if (NULL == algorithm && loom_device_decline_on_copies(dev)) {
        loom_sizes_fini(&bytes);
        return loom_device_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module);
    }
    if (NULL == algorithm) {
        loom_sizes_fini(&bytes);
        mca_coll_loom_note_declined(LOOM_COLL_ALLGATHER, comm, why);
        return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                 m->prev_allgather_module);
    }
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    int *ints = malloc(2 * (size_t) size * sizeof(int));
    if (NULL != ints) {
        int *rcounts = ints, *rdispls = ints + size;
        for (int i = 0; i < size; ++i) {
            rcounts[i] = rcount;
            rdispls[i] = i * rcount;
        }
        rc = allgather_common(sbuf, scount, sdtype, rbuf, rcounts, rdispls,
                              rdtype, 1, bytes.v, algorithm, &call, comm, m);
        free(ints);
    }
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    loom_sizes_fini(&bytes);
    return rc;
}

int mca_coll_loom_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int size = ompi_comm_size(comm);
    const loom_dev_mode_t dev = loom_device_mode(sbuf, sdtype, rbuf, rdtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_ALLGATHERV,
                      loom_device_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                             module),
                      m->prev_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                         m->prev_allgatherv_module));
    loom_sizes_t bytes;
    if (OMPI_SUCCESS != loom_sizes_init(&bytes, size)) return OMPI_ERR_OUT_OF_RESOURCE;
    int negative = 0, dense_displs = 1, next = 0;
    for (int i = 0; i < size; ++i) {
        negative |= rcounts[i] < 0;
        dense_displs &= displs[i] == next;
        next += rcounts[i];
        bytes.v[i] = (size_t) (rcounts[i] < 0 ? 0 : rcounts[i]) * loom_type_size(rdtype);
    }
    loom_call_t call = {.coll = LOOM_COLL_ALLGATHERV, .counts = bytes.v};
    loom_device_prepare(&call, dev);
    const char *why = "negative count", *rule = NULL;
    const char *algorithm = negative ? NULL : loom_choose_for(&call, comm, m, &why, &rule);
    if (NULL == algorithm && loom_device_decline_on_copies(dev)) {
        loom_sizes_fini(&bytes);
        return loom_device_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                      module);
    }
    if (NULL == algorithm) {
        loom_sizes_fini(&bytes);
        mca_coll_loom_note_declined(LOOM_COLL_ALLGATHERV, comm, why);
        return m->prev_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                  m->prev_allgatherv_module);
    }
    int rc = allgather_common(sbuf, scount, sdtype, rbuf, rcounts, displs,
                              rdtype, dense_displs, bytes.v, algorithm, &call, comm, m);
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    loom_sizes_fini(&bytes);
    return rc;
}

int mca_coll_loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const size_t size = (size_t) ompi_comm_size(comm);
    const int in_place = MPI_IN_PLACE == sbuf;
    const loom_dev_mode_t dev = loom_device_mode(sbuf, sdtype, rbuf, rdtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_ALLTOALL,
                      loom_device_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module),
                      m->prev_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                       m->prev_alltoall_module));
    loom_call_t call = {.coll = LOOM_COLL_ALLTOALL, .count = (size_t) rcount * loom_type_size(rdtype)};
    loom_device_prepare(&call, dev);
    const char *why = "negative count", *rule = NULL;
    const char *algorithm = rcount < 0 ? NULL : loom_choose_for(&call, comm, m, &why, &rule);
    if (NULL == algorithm && loom_device_decline_on_copies(dev))
        return loom_device_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module);
    if (NULL == algorithm) {
        mca_coll_loom_note_declined(LOOM_COLL_ALLTOALL, comm, why);
        return m->prev_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                m->prev_alltoall_module);
    }
    loom_dense_t send = {.data = NULL, .scratch = NULL, .bytes = 0}, recv;
    int rc = loom_dense_init(&recv, rbuf, size * (size_t) rcount, rdtype, in_place);
    if (OMPI_SUCCESS == rc && !in_place)
        rc = loom_dense_init(&send, sbuf, size * (size_t) scount, sdtype, 1);
    if (OMPI_SUCCESS == rc) {
        call.sbuf = in_place ? NULL : send.data;
        call.rbuf = recv.data;
        rc = loom_run_on(algorithm, &call, comm, m);
    }
    if (OMPI_SUCCESS == rc) rc = loom_dense_unpack(&recv, rbuf, size * (size_t) rcount, rdtype);
    loom_dense_fini(&send);
    loom_dense_fini(&recv);
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    return rc;
}
