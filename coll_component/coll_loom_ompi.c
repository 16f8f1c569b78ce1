/*
 * The Open MPI version layer (coll_loom_ompi.h): one implementation per supported version.
 */
#include "coll_loom_ompi.h"

#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/proc.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_c_api.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"

/* The Open MPI structs the glue reads or embeds, with their size here and in the running library
 * (its class record, set when Open MPI was compiled). */
#define LOOM_LAYOUT(type) {#type, &type##_class, sizeof(type)}
static const struct {
    const char *name;
    const opal_class_t *cls;
    size_t size;
} layouts[] = {
    LOOM_LAYOUT(opal_object_t),      LOOM_LAYOUT(ompi_communicator_t),          LOOM_LAYOUT(ompi_request_t),
    LOOM_LAYOUT(ompi_datatype_t),    LOOM_LAYOUT(ompi_op_t),                    LOOM_LAYOUT(ompi_proc_t),
    LOOM_LAYOUT(mca_coll_base_module_t), LOOM_LAYOUT(ompi_coll_base_nbc_request_t), LOOM_LAYOUT(opal_free_list_t),
    LOOM_LAYOUT(opal_mutex_t),
};

int loom_ompi_fits(const char *library_version, char *why, size_t size)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    if (NULL != library_version && '\0' != library_version[0])
        snprintf(text, sizeof text, "%s", library_version);
    else
        (void)MPI_Get_library_version(text, &length); /* callable before MPI_Init */
    int running[3];
    if (!loom_ompi_release_parse(text, running)) {
        snprintf(why, size, "it cannot tell which Open MPI release this is (MPI_Get_library_version says \"%.120s\")",
                 text);
        return 0;
    }
    if (OMPI_MAJOR_VERSION != running[0] || OMPI_MINOR_VERSION != running[1] || OMPI_RELEASE_VERSION != running[2]) {
        snprintf(why, size, "it was built for Open MPI " LOOM_OMPI_BUILT_FOR " and this is Open MPI %d.%d.%d", running[0],
                 running[1], running[2]);
        return 0;
    }
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; ++i)
        if (layouts[i].cls->cls_sizeof != layouts[i].size) {
            snprintf(why, size,
                     "this Open MPI " LOOM_OMPI_BUILT_FOR "'s %s is %zu bytes and the one loom was built against had %zu "
                     "(Open MPI configured differently, e.g. with --enable-debug)",
                     layouts[i].name, layouts[i].cls->cls_sizeof, layouts[i].size);
            return 0;
        }
    return 1;
}

int loom_ompi_launch_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        const char *value = getenv(names[i]);
        char *end = NULL;
        const long rank = NULL == value ? -1 : strtol(value, &end, 10);
        if (NULL != value && end != value && '\0' == *end && rank >= 0 && rank <= INT_MAX) return (int)rank;
    }
    return -1;
}

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

/* The launcher's name for proc's node (PMIx's PMIX_HOSTNAME), malloc'd; NULL if it gives none. */
static char *launcher_hostname(struct ompi_proc_t *proc)
{
    char *name = NULL;
    int rc;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_HOSTNAME, &proc->super.proc_name, &name, OPAL_STRING);
    if (OPAL_SUCCESS == rc) return name;
    free(name);
    return NULL;
}

/* Open MPI's name for proc's host, malloc'd (its own is borrowed); NULL where it says "unknown". */
static char *open_mpi_hostname(struct ompi_proc_t *proc)
{
    const char *name = opal_get_proc_hostname(&proc->super);
    return NULL == name || 0 == strcmp(name, "unknown") ? NULL : strdup(name);
}

void loom_ompi_abort(const char *message) { ompi_rte_abort(1, "%s", message); }

void loom_ompi_nbc_request_clear(struct ompi_coll_base_nbc_request_t *request)
{
    request->cb.req_complete_cb = NULL;
    request->req_complete_cb_data = NULL;
    request->data.objs.objs[0] = request->data.objs.objs[1] = NULL;
}

#endif

#if OMPI_MAJOR_VERSION >= 5

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

static char *launcher_hostname(struct ompi_proc_t *proc)
{
    char *name = NULL;
    int rc;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, PMIX_HOSTNAME, &proc->super.proc_name, &name, PMIX_STRING);
    if (PMIX_SUCCESS == rc) return name;
    free(name);
    return NULL;
}

static char *open_mpi_hostname(struct ompi_proc_t *proc)
{
    char *name = opal_get_proc_hostname(&proc->super); /* malloc'd on 5.0 */
    if (NULL != name && 0 == strcmp(name, "unknown")) {
        free(name);
        name = NULL;
    }
    return name;
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

#if OMPI_MAJOR_VERSION >= 6
void loom_ompi_install(mca_coll_base_module_t *module, struct ompi_communicator_t *comm,
                       int (*disable)(mca_coll_base_module_t *module, struct ompi_communicator_t *comm))
{
#define INSTALL(slot) \
    if (NULL != module->coll_##slot) MCA_COLL_INSTALL_API(comm, slot, module->coll_##slot, module, "loom");
#define LOOM_COLLECTIVE(name, ...) INSTALL(name) INSTALL(i##name) INSTALL(name##_init)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef INSTALL
    module->coll_module_disable = disable;
}
#else
void loom_ompi_install(mca_coll_base_module_t *module, struct ompi_communicator_t *comm,
                       int (*disable)(mca_coll_base_module_t *module, struct ompi_communicator_t *comm))
{
    (void)module, (void)comm, (void)disable;
}
#endif

/* The launcher's name for this process's node, looked up once per process (every communicator
 * names its ranks' hosts); NULL where the launcher gives none or says "unknown". */
static char *local_node;
static pthread_once_t local_node_once = PTHREAD_ONCE_INIT;

static void find_local_node(void)
{
    local_node = launcher_hostname(ompi_proc_local());
    if (NULL != local_node && 0 == strcmp(local_node, "unknown")) {
        free(local_node);
        local_node = NULL;
    }
}

/* A process on this node is named as this process is, by the launcher (coll_loom_ompi.h); a
 * process on another node by Open MPI, whose name for it is the launcher's already (Open MPI
 * asks PMIx for it, and 4.1 keeps it), so only this node's name needs asking for. */
char *loom_ompi_hostname(struct ompi_proc_t *proc)
{
    if (NULL == proc) return NULL;
    if (OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
        pthread_once(&local_node_once, find_local_node);
        if (NULL != local_node) return strdup(local_node);
        proc = ompi_proc_local();
    }
    return open_mpi_hostname(proc);
}
