/*
 * The per-communicator module: comm_query decides whether loom takes part on a
 * communicator, enable saves the previous component's functions so loom can decline a call.
 */
#include "coll_loom.h"
#include "coll_loom_autotune.h"
#include "coll_loom_neighbours.h"
#include "coll_loom_segment.h"
#include "coll_loom_trace.h"
#include "loom_version.h"

#include "ompi/mca/coll/base/base.h"

#include <stdlib.h>
#include <string.h>

static void loom_module_construct(mca_coll_loom_module_t *m)
{
    memset(&m->previous, 0, sizeof(m->previous));
    m->rules = NULL;
    loom_segment_init(m);
    m->handing_on = 0;
    m->comm_size = 0;
    m->is_world = m->world_rank0 = 0;
    m->node_shm = NULL;
    m->topology = NULL;
    m->neighbours = NULL;
    m->said_unknown_hosts = 0;
    memset(m->reported, 0, sizeof(m->reported));
    memset(m->repeats, 0, sizeof(m->repeats));
}

static void loom_module_destruct(mca_coll_loom_module_t *m)
{
    /* MPI_COMM_WORLD's module goes in MPI_Finalize, whether or not Open MPI closes the component
     * then (it keeps it open while MPI_T is initialized): the timeline is written here. */
    if (0 != m->comm_size) __atomic_sub_fetch(&mca_coll_loom_component.communicators_enabled, 1, __ATOMIC_RELAXED);
    if (m->is_world) {
        loom_trace_close();
        loom_autotune_finalize(m->world_rank0);
    }
#define RELEASE(name)                                                                    \
    if (NULL != m->previous.name##_module) OBJ_RELEASE(m->previous.name##_module);       \
    if (NULL != m->previous.i##name##_module) OBJ_RELEASE(m->previous.i##name##_module); \
    if (NULL != m->previous.name##_init_module) OBJ_RELEASE(m->previous.name##_init_module);
#define LOOM_COLLECTIVE(name, ...) RELEASE(name)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef RELEASE
    for (int k = 0; k < LOOM_KIND_COUNT; ++k)
        for (int c = 0; c < LOOM_COLL_COUNT; ++c) free(m->repeats[k][c].served);
    loom_rules_release(m->rules);
    loom_shm_release(m->shm);
    loom_shm_release(m->node_shm);
    loom_topology_release(m->topology);
    mca_coll_loom_neighbourhood_free(m->neighbours);
}

OBJ_CLASS_INSTANCE(mca_coll_loom_module_t, mca_coll_base_module_t, loom_module_construct, loom_module_destruct);

int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    return OMPI_SUCCESS;
}

/* Open MPI 6.0's coll_module_disable (loom_ompi_install sets it): every slot still loom's gets the
 * function loom saved from it back. Modules are disabled in the reverse order of their enabling,
 * so loom's slots are its own here. */
static int loom_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
#define RESTORE(slot)                                               \
    if (comm->c_coll->coll_##slot##_module == module) {             \
        comm->c_coll->coll_##slot = m->previous.slot;               \
        comm->c_coll->coll_##slot##_module = m->previous.slot##_module; \
    }
#define LOOM_COLLECTIVE(name, ...) RESTORE(name) RESTORE(i##name) RESTORE(name##_init)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef RESTORE
    return OMPI_SUCCESS;
}

static int loom_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    m->is_world = &ompi_mpi_comm_world.comm == comm;
    m->comm_size = ompi_comm_size(comm);
    m->world_rank0 = m->is_world && 0 == ompi_comm_rank(comm);

    /* Components are enabled from lowest to highest priority, so comm->c_coll now holds
     * what would serve each collective without loom: that is what loom falls back to. */
#define CHECK(name)                                                                        \
    if (NULL == comm->c_coll->coll_##name || NULL == comm->c_coll->coll_##name##_module) { \
        opal_output(0,                                                                     \
                    "coll:loom: no other component provides " #name " on %s; loom needs "  \
                    "one to fall back to (run without --mca coll, or name "                 \
                    "loom,inter,tuned,basic,libnbc,self)",                                  \
                    comm->c_name);                                                         \
        return OMPI_ERROR;                                                                 \
    }
#define LOOM_COLLECTIVE(name, ...) CHECK(name)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef CHECK
#define SAVE(name)                                                  \
    m->previous.name = comm->c_coll->coll_##name;                   \
    m->previous.name##_module = comm->c_coll->coll_##name##_module; \
    OBJ_RETAIN(m->previous.name##_module);
#define LOOM_COLLECTIVE(name, ...) SAVE(name)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef SAVE
    /* The non-blocking and persistent forms: loom serves them only on top of a component that
     * provides them too (libnbc), which gets what loom hands on; without one, loom leaves the
     * slot empty (the framework copies only the slots a module fills, after enabling it). */
#define SAVE_FORM(slot)                                                                    \
    if (NULL != comm->c_coll->coll_##slot && NULL != comm->c_coll->coll_##slot##_module) { \
        m->previous.slot = comm->c_coll->coll_##slot;                                      \
        m->previous.slot##_module = comm->c_coll->coll_##slot##_module;                    \
        OBJ_RETAIN(m->previous.slot##_module);                                             \
    } else {                                                                               \
        m->super.coll_##slot = NULL;                                                       \
    }
#define SAVE_FORMS(name) SAVE_FORM(i##name) SAVE_FORM(name##_init)
#define LOOM_COLLECTIVE(name, ...) SAVE_FORMS(name)
#include "collectives.def"
#undef LOOM_COLLECTIVE
#undef SAVE_FORMS
#undef SAVE_FORM

    loom_ompi_install(&m->super, comm, loom_module_disable);

    const int mib = mca_coll_loom_component.shm_max_mib;
    m->segment_allowed = mib > 0 && loom_shm_segment_bytes(ompi_comm_size(comm)) <= ((size_t)mib << 20);

    __atomic_add_fetch(&mca_coll_loom_component.communicators_enabled, 1, __ATOMIC_RELAXED);
    opal_output_verbose(1, mca_coll_loom_component.output, "coll:loom: enabled on %s (size %d, priority %d, %s)",
                        comm->c_name, ompi_comm_size(comm), mca_coll_loom_component.priority, LOOM_VERSION_TEXT);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    /* An Open MPI loom was not built for: loom takes part in nothing (coll_loom_component.c). */
    if (mca_coll_loom_component.stays_out) return NULL;
    /* coll_loom_rules_strict: a bad rule file stops the job here, during MPI_Init, when the
     * first communicator is created. */
    for (int layer = LOOM_RULES_USER; layer <= LOOM_RULES_SITE; ++layer)
        if (mca_coll_loom_component.rules_errors[layer] > 0 && mca_coll_loom_component.rules_strict) {
            char message[512];
            snprintf(message, sizeof message, "coll:loom: the rule file %s has errors and coll_loom_rules_strict is set",
                     mca_coll_loom_component.rules_loaded[layer]);
            loom_ompi_abort(message);
        }
    /* loom's algorithms are for intra-communicators with at least two ranks; coll/self and
     * coll/inter serve the rest. */
    if (OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2) return NULL;
    if (mca_coll_loom_component.priority < 0) return NULL;
    /* Ranks that would decide calls from different rule tables (or where loom is absent) must
     * not run loom together: it stands aside on the communicator, on every rank alike. */
    if (!mca_coll_loom_ranks_agree(comm)) return NULL;

    mca_coll_loom_module_t *m = OBJ_NEW(mca_coll_loom_module_t);
    if (NULL == m) return NULL;

    *priority = mca_coll_loom_component.priority;
    m->super.coll_module_enable = loom_module_enable;
    mca_coll_loom_install_entries(m);
    return &m->super;
}
