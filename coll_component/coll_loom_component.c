/*
 * The loom component: its description for Open MPI, its MCA parameters
 * (coll_loom_priority, coll_loom_verbose) and its MPI_T performance variables
 * (coll_loom_<collective>_served, coll_loom_<collective>_declined).
 */
#include "coll_loom.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"

static int loom_register(void);
static int loom_open(void);
static int loom_close(void);

mca_coll_loom_component_t mca_coll_loom_component = {
    .super = {
        .collm_version = {
            LOOM_COLL_BASE_VERSION,
            .mca_component_name = "loom",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = loom_open,
            .mca_close_component = loom_close,
            .mca_register_component_params = loom_register,
        },
        .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .collm_init_query = mca_coll_loom_init_query,
        .collm_comm_query = mca_coll_loom_comm_query,
    },
    .priority = 40,
    .verbose = 0,
    .output = -1,
};

static const char *const coll_names[LOOM_COLL_COUNT] = {"allreduce"};

/* The third argument is the bound MPI object (none here); our counter is the pvar's ctx. */
static int read_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    *(unsigned long long *) value = __atomic_load_n((unsigned long long *) pvar->ctx, __ATOMIC_RELAXED);
    return OPAL_SUCCESS;
}

static void register_counter(const char *coll, const char *what, const char *desc,
                             unsigned long long *counter)
{
    char name[64];
    snprintf(name, sizeof(name), "%s_%s", coll, what);
    (void) mca_base_component_pvar_register(
        &mca_coll_loom_component.super.collm_version, name, desc, OPAL_INFO_LVL_4,
        MPI_T_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MPI_T_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        read_counter, NULL, NULL, counter);
}

static int loom_register(void)
{
    mca_base_component_t *c = &mca_coll_loom_component.super.collm_version;

    mca_coll_loom_component.priority = 40;
    (void) mca_base_component_var_register(
        c, "priority",
        "Priority of the loom coll component. It must be above the components loom falls back "
        "to (tuned is 30), or their functions are not yet in place when loom is enabled",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.priority);

    mca_coll_loom_component.verbose = 0;
    (void) mca_base_component_var_register(
        c, "verbose",
        "Verbosity of loom: 0 silent, 1 one line per communicator loom is enabled on, "
        "2 also one line per collective call (the algorithm that served it, or why loom "
        "declined it)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_loom_component.verbose);

    for (int i = 0; i < LOOM_COLL_COUNT; ++i) {
        register_counter(coll_names[i], "served", "Calls of this collective that loom ran itself",
                         &mca_coll_loom_component.served[i]);
        register_counter(coll_names[i], "declined",
                         "Calls of this collective that loom handed to the previous component",
                         &mca_coll_loom_component.declined[i]);
    }
    return OMPI_SUCCESS;
}

static int loom_open(void)
{
    mca_coll_loom_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_loom_component.output, mca_coll_loom_component.verbose);
    return OMPI_SUCCESS;
}

static int loom_close(void)
{
    if (mca_coll_loom_component.output >= 0) opal_output_close(mca_coll_loom_component.output);
    mca_coll_loom_component.output = -1;
    return OMPI_SUCCESS;
}

void mca_coll_loom_note_served(loom_coll_id_t coll, struct ompi_communicator_t *comm,
                               const char *algorithm, size_t bytes)
{
    __atomic_fetch_add(&mca_coll_loom_component.served[coll], 1ULL, __ATOMIC_RELAXED);
    opal_output_verbose(2, mca_coll_loom_component.output,
                        "coll:loom: %s on %s (rank %d of %d): %zu bytes, algorithm %s",
                        coll_names[coll], comm->c_name, ompi_comm_rank(comm),
                        ompi_comm_size(comm), bytes, algorithm);
}

void mca_coll_loom_note_declined(loom_coll_id_t coll, struct ompi_communicator_t *comm,
                                 const char *why)
{
    __atomic_fetch_add(&mca_coll_loom_component.declined[coll], 1ULL, __ATOMIC_RELAXED);
    opal_output_verbose(2, mca_coll_loom_component.output,
                        "coll:loom: %s on %s (rank %d of %d): declined, falling back: %s",
                        coll_names[coll], comm->c_name, ompi_comm_rank(comm),
                        ompi_comm_size(comm), why);
}
