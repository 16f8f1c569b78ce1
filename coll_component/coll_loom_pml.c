/*
 * loom's Transport over Open MPI's PML: non-blocking isend/irecv of bytes on the
 * collective's fixed tag (ompi/mca/coll/base/coll_tags.h), completed together by wait_all.
 * Messages longer than INT_MAX bytes are sent as several messages; MPI's non-overtaking rule
 * keeps the pieces in order.
 */
#include "coll_loom.h"

#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int push_request(loom_pml_transport_t *t, ompi_request_t *req)
{
    if (t->nreqs == t->capacity) {
        size_t cap = 2 * t->capacity;
        ompi_request_t **grown = malloc(cap * sizeof(*grown));
        if (NULL == grown) return OMPI_ERR_OUT_OF_RESOURCE;
        memcpy(grown, t->reqs, t->nreqs * sizeof(*grown));
        if (t->reqs != t->inline_reqs) free(t->reqs);
        t->reqs = grown;
        t->capacity = cap;
    }
    t->reqs[t->nreqs++] = req;
    return OMPI_SUCCESS;
}

/* Posts one message as pieces of at most INT_MAX bytes (the PML counts in int). */
static int post(loom_pml_transport_t *t, int send, int peer, char *p, size_t bytes)
{
    do {
        const int chunk = bytes > INT_MAX ? INT_MAX : (int)bytes;
        ompi_request_t *req;
        int rc = send ? MCA_PML_CALL(isend(p, chunk, MPI_BYTE, peer, t->tag, MCA_PML_BASE_SEND_STANDARD, t->comm, &req))
                      : MCA_PML_CALL(irecv(p, chunk, MPI_BYTE, peer, t->tag, t->comm, &req));
        if (OMPI_SUCCESS != rc) return rc;
        rc = push_request(t, req);
        if (OMPI_SUCCESS != rc) return rc;
        p += chunk;
        bytes -= (size_t)chunk;
    } while (bytes > 0);
    return OMPI_SUCCESS;
}

static int pml_isend(void *ctx, int peer, const void *buf, size_t bytes)
{
    return post(ctx, 1, peer, (char *)buf, bytes);
}

static int pml_irecv(void *ctx, int peer, void *buf, size_t bytes) { return post(ctx, 0, peer, buf, bytes); }

static int pml_wait_all(void *ctx)
{
    loom_pml_transport_t *t = ctx;
    if (0 == t->nreqs) return OMPI_SUCCESS;
    int rc = ompi_request_wait_all(t->nreqs, t->reqs, MPI_STATUSES_IGNORE);
    t->nreqs = 0;
    return rc;
}

/* A resumable operation's wait (coll_loom_request_progress.c), and a blocking call's poll (segmented
 * hierarchical algorithms, which call progress themselves): 1 once every posted request completed
 * (they are released then), 0 before; never blocks, never calls opal_progress (it runs inside
 * loom's progress function). */
static int pml_test_all(void *ctx)
{
    loom_pml_transport_t *t = ctx;
    for (size_t i = 0; i < t->nreqs; ++i)
        if (!REQUEST_COMPLETE(t->reqs[i])) return 0;
    int rc = OMPI_SUCCESS;
    for (size_t i = 0; i < t->nreqs; ++i) {
        if (OMPI_SUCCESS == rc) rc = t->reqs[i]->req_status.MPI_ERROR;
        (void)ompi_request_free(&t->reqs[i]);
    }
    t->nreqs = 0;
    /* 1 means "done": an MPI error class of 1 (MPI_ERR_BUFFER) is reported as OMPI_ERROR. */
    return OMPI_SUCCESS == rc ? 1 : (1 == rc ? OMPI_ERROR : rc);
}

void loom_pml_transport_resumable(loom_pml_transport_t *t) { t->ops.test_all = pml_test_all; }

/* While a rank waits on shared memory, the rest of MPI must not stall (e.g. its peers'
 * PML traffic, or the application's nonblocking operations). */
static void pml_progress(void *ctx)
{
    (void)ctx;
    opal_progress();
}

/* The communicator's layout, made the first time an algorithm asks (NULL if out of memory:
 * then rings run in rank order). */
static const void *pml_topology(void *ctx)
{
    loom_pml_transport_t *t = ctx;
    if (NULL == t->module->topology) (void)mca_coll_loom_topology(t->comm, t->module);
    return t->module->topology;
}

void loom_pml_transport_init(loom_pml_transport_t *t, struct ompi_communicator_t *comm,
                             struct mca_coll_loom_module_t *module, int tag)
{
    t->ops.ctx = t;
    t->ops.rank = ompi_comm_rank(comm);
    t->ops.size = ompi_comm_size(comm);
    t->ops.isend = pml_isend;
    t->ops.irecv = pml_irecv;
    t->ops.wait_all = pml_wait_all;
    t->ops.shared_state = NULL;
    t->ops.topology = pml_topology;
    t->ops.node_shared_state = NULL;
    t->ops.test_all = pml_test_all; /* blocking calls too: segmented hierarchical algorithms poll it */
    t->ops.segment_turn = NULL;
    t->ops.progress = pml_progress;
    t->comm = comm;
    t->module = module;
    t->tag = tag;
    t->reqs = t->inline_reqs;
    t->nreqs = 0;
    t->capacity = sizeof(t->inline_reqs) / sizeof(t->inline_reqs[0]);
}

int loom_pml_transport_fini(loom_pml_transport_t *t)
{
    /* After an error inside an algorithm some requests may still be posted; their buffers
     * are about to be freed, so complete them first. */
    int rc = pml_wait_all(t);
    if (t->reqs != t->inline_reqs) free(t->reqs);
    t->reqs = NULL;
    return rc;
}
