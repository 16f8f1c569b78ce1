/*
 * The loom component: its description for Open MPI, its defaults, and what opening it does
 * (forced algorithms and the radix checked, rule files loaded, the request machinery, the
 * timeline and online tuning set up, the ranks' records published) and closing it undoes. Its
 * MCA parameters and MPI_T variables are registered by coll_loom_params.c.
 */
#include "coll_loom.h"
#include "coll_loom_autotune.h"
#include "coll_loom_trace.h"
#include "loom_version.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int loom_open(void);
static int loom_close(void);

mca_coll_loom_component_t mca_coll_loom_component = {
    .super =
        {
            .collm_version =
                {
                    LOOM_COLL_BASE_VERSION,
                    .mca_component_name = "loom",
                    /* loom's own version (ompi_info: "Component v0.2.0"); coll_loom_version adds the commit. */
                    MCA_BASE_MAKE_VERSION(component, LOOM_VERSION_MAJOR, LOOM_VERSION_MINOR, LOOM_VERSION_PATCH),
                    .mca_open_component = loom_open,
                    .mca_close_component = loom_close,
                    .mca_register_component_params = mca_coll_loom_register_params,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_loom_init_query,
            .collm_comm_query = mca_coll_loom_comm_query,
        },
    .priority = 40,
    .verbose = 0,
    .output = -1,
    .segment_size = LOOM_SEGMENT_SIZE_DEFAULT,
    .pat_buffer_size = 1024 * 1024,
    .knomial_radix = LOOM_KNOMIAL_RADIX_DEFAULT,
    .shm_min_calls = 16,
    .shm_pool = 4,
    .shm_max_mib = 1024,
    .shm_persistent_max = 8,
    .single_copy = 1,
};

/* A misspelt forced algorithm must not pass unnoticed: say so, with the valid names. Calls
 * of that collective are then declined (loom_choose finds no such algorithm), so results stay
 * right. */
static void check_forced_algorithms(void)
{
    for (int i = 0; i < LOOM_COLL_COUNT; ++i) {
        const char *name = mca_coll_loom_component.forced[i];
        if (NULL == name || '\0' == name[0] || loom_algorithm_exists((loom_coll_t)i, name) ||
            0 == strcmp(name, LOOM_FORCED_FALLBACK))
            continue;
        char algorithms[256];
        loom_algorithm_names((loom_coll_t)i, algorithms, sizeof(algorithms));
        opal_output(0,
                    "coll:loom: error: MCA parameter coll_loom_%s_algorithm=\"%s\" names no %s "
                    "algorithm (valid: %s); loom will hand every %s to the next component",
                    loom_coll_name((loom_coll_t)i), name, loom_coll_name((loom_coll_t)i), algorithms,
                    loom_coll_name((loom_coll_t)i));
    }
}

/* A k-nomial radix outside 2-16 is an error the user hears about (the job's first process
 * says so); the default serves instead. */
static void check_radix(void)
{
    const size_t radix = mca_coll_loom_component.knomial_radix;
    if (radix >= 2 && radix <= LOOM_KNOMIAL_RADIX_MAX) return;
    if (loom_ompi_first_process())
        opal_output(0, "coll:loom: error: MCA parameter coll_loom_knomial_radix=%zu is not 2-%d; loom uses %d", radix,
                    LOOM_KNOMIAL_RADIX_MAX, LOOM_KNOMIAL_RADIX_DEFAULT);
    mca_coll_loom_component.knomial_radix = LOOM_KNOMIAL_RADIX_DEFAULT;
}

/* The file a layer reads: the parameter's path; none for an empty value or "none", or for the
 * site's default path where no file is (a site without rules). */
static const char *layer_path(int layer)
{
    const char *path = mca_coll_loom_component.rules_param[layer];
    if (NULL == path || '\0' == path[0] || 0 == strcmp(path, "none")) return NULL;
    if (LOOM_RULES_SITE == layer && 0 == strcmp(path, LOOM_SITE_RULES) && 0 != access(path, F_OK)) return NULL;
    return path;
}

/* Loads the user's and the site's rule files once per process. Only the job's first process
 * prints what is wrong with them (every process should read the same files; where one does
 * not, the ranks' agreement says so: coll_loom_agree.c), so a bad file gives one message. */
static void load_rules(void)
{
    static const char *const names[2] = {"coll_loom_rules", "coll_loom_site_rules"};
    const int first = loom_ompi_first_process();
    loom_rules_set_segment_size(mca_coll_loom_component.segment_size); /* hierarchical_seg's leaders */
    for (int layer = LOOM_RULES_USER; layer <= LOOM_RULES_SITE; ++layer) {
        const char *path = layer_path(layer);
        char *report = NULL;
        mca_coll_loom_component.rules_loaded[layer] = path;
        mca_coll_loom_component.rules_errors[layer] = loom_rules_load(layer, path, OMPI_MAJOR_VERSION, &report);
        mca_coll_loom_component.rules_problem[layer][0] = '\0';
        if (NULL != report && mca_coll_loom_component.rules_errors[layer] > 0)
            snprintf(mca_coll_loom_component.rules_problem[layer], sizeof mca_coll_loom_component.rules_problem[layer],
                     "%.*s", (int)strcspn(report, "\n"), report);
        if (NULL != report && first &&
            (mca_coll_loom_component.rules_errors[layer] > 0 || mca_coll_loom_component.verbose >= 1)) {
            opal_output(0, "coll:loom: %s %s (%s) %s%s", LOOM_RULES_USER == layer ? "the rule file" : "the site's rule file",
                        path, names[layer],
                        mca_coll_loom_component.rules_errors[layer] > 0
                            ? (mca_coll_loom_component.rules_strict
                                   ? "has errors; the job stops (coll_loom_rules_strict):\n"
                                   : "has errors; loom leaves it out and uses its other rules:\n")
                            : "has warnings:\n",
                        report);
        }
        free(report);
    }
}

static int loom_open(void)
{
    if (mca_coll_loom_component.stays_out) return OMPI_SUCCESS;
    mca_coll_loom_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_loom_component.output, mca_coll_loom_component.verbose);
    mca_coll_loom_requests_init();
    mca_coll_loom_places_init();
    loom_trace_open();
    loom_autotune_open();
    mca_coll_loom_component.noting = mca_coll_loom_component.verbose >= 1 || loom_trace_on();
    loom_shm_refuse(mca_coll_loom_component.shm_refuse);
    check_forced_algorithms();
    check_radix();
    load_rules();
    loom_shm_pool_limit(mca_coll_loom_component.shm_pool > 0 ? (size_t)mca_coll_loom_component.shm_pool : 0);
    mca_coll_loom_agreement_publish();
    return OMPI_SUCCESS;
}

static int loom_close(void)
{
    if (mca_coll_loom_component.stays_out) return OMPI_SUCCESS;
    mca_coll_loom_requests_fini();
    loom_trace_close();
    mca_coll_loom_places_fini();
    loom_shm_pool_drain();
    if (mca_coll_loom_component.output >= 0) opal_output_close(mca_coll_loom_component.output);
    mca_coll_loom_component.output = -1;
    return OMPI_SUCCESS;
}
