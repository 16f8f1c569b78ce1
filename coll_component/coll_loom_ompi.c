/*
 * The Open MPI version layer (coll_loom_ompi.h): one implementation per supported version.
 */
#include "coll_loom_ompi.h"

#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/proc.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/communicator/communicator.h"

unsigned loom_ompi_job_id(void) { return (unsigned)OMPI_PROC_MY_NAME->jobid; }
int loom_ompi_world_rank(void) { return (int)OMPI_PROC_MY_NAME->vpid; }
int loom_ompi_comm_leader(struct ompi_communicator_t *comm)
{
    const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, 0);
    return NULL == proc ? -1 : (int)proc->super.proc_name.vpid;
}

#if OMPI_MAJOR_VERSION == 4

#include "ompi/mca/rte/rte.h"
#include "opal/mca/pmix/pmix.h"

int loom_ompi_first_process(void) { return 0 == OMPI_PROC_MY_NAME->vpid; }

int loom_ompi_initializing(void) { return NULL != opal_pmix.put && OMPI_MPI_STATE_INIT_STARTED == ompi_mpi_state; }

unsigned long long loom_ompi_comm_id(struct ompi_communicator_t *comm) { return comm->c_contextid; }

int loom_ompi_modex_put(const char *key, const void *data, size_t size)
{
    int rc;
    /* put copies the value; the macro only borrows key and data. */
    OPAL_MODEX_SEND_STRING(rc, OPAL_PMIX_GLOBAL, (char *)key, data, size);
    return rc;
}

int loom_ompi_modex_get(struct ompi_proc_t *proc, const char *key, void **data, size_t *size)
{
    int rc;
    *data = NULL;
    OPAL_MODEX_RECV_STRING(rc, key, &proc->super.proc_name, (uint8_t **)data, size);
    return rc;
}

char *loom_ompi_hostname(struct ompi_proc_t *proc)
{
    const char *name = NULL == proc ? NULL : opal_get_proc_hostname(&proc->super); /* borrowed */
    return strdup(NULL == name ? "unknown" : name);
}

void loom_ompi_abort(const char *message) { ompi_rte_abort(1, "%s", message); }

void loom_ompi_nbc_request_clear(struct ompi_coll_base_nbc_request_t *request)
{
    request->cb.req_complete_cb = NULL;
    request->req_complete_cb_data = NULL;
    request->data.objs.objs[0] = request->data.objs.objs[1] = NULL;
}

#endif

#if OMPI_MAJOR_VERSION == 5

#include "ompi/runtime/ompi_rte.h"
#include "opal/mca/pmix/pmix-internal.h"

int loom_ompi_first_process(void) { return 0 == OMPI_PROC_MY_NAME->vpid; }

unsigned long long loom_ompi_comm_id(struct ompi_communicator_t *comm)
{
    return comm->c_contextid.cid_base ^ (comm->c_contextid.cid_sub.u64 * 0x9e3779b97f4a7c15ULL);
}

int loom_ompi_initializing(void)
{
    /* ompi_info opens components without a PMIx server: PMIx_Initialized says which. */
    return PMIx_Initialized() && OMPI_MPI_STATE_INIT_STARTED == ompi_mpi_state;
}

int loom_ompi_modex_put(const char *key, const void *data, size_t size)
{
    int rc;
    OPAL_MODEX_SEND_STRING(rc, PMIX_GLOBAL, key, data, size);
    return PMIX_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERROR;
}

int loom_ompi_modex_get(struct ompi_proc_t *proc, const char *key, void **data, size_t *size)
{
    int rc;
    OPAL_MODEX_RECV_STRING(rc, key, &proc->super.proc_name, (uint8_t **)data, size);
    return PMIX_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERR_NOT_FOUND;
}

char *loom_ompi_hostname(struct ompi_proc_t *proc)
{
    char *name = NULL == proc ? NULL : opal_get_proc_hostname(&proc->super); /* malloc'd on 5.0 */
    return NULL != name ? name : strdup("unknown");
}

void loom_ompi_abort(const char *message) { ompi_rte_abort(1, "%s", message); }

void loom_ompi_nbc_request_clear(struct ompi_coll_base_nbc_request_t *request)
{
    request->cb.req_complete_cb = NULL;
    request->req_complete_cb_data = NULL;
    request->data.refcounted.objs.objs[0] = request->data.refcounted.objs.objs[1] = NULL;
    request->data.release_arrays[0] = NULL;
}

#endif
