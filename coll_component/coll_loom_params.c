/*
 * The component's MCA parameters (coll_loom_*, listed in docs/parameters.md's table, which a test
 * checks against ompi_info) and MPI_T performance variables (coll_loom_<collective>_served,
 * coll_loom_<collective>_declined, ...), registered when Open MPI registers the component; and the
 * release check there (loom_ompi_fits): in an Open MPI loom was not built for, loom registers
 * only what names it and stays out.
 */
#include "coll_loom.h"
#include "coll_loom_report.h"
#include "loom_version.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"

#include <stdio.h>
#include <string.h>

/* The third argument is the bound MPI object (none here); our counter is the pvar's ctx. */
static int read_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    *(unsigned long long *)value = __atomic_load_n((unsigned long long *)pvar->ctx, __ATOMIC_RELAXED);
    return OPAL_SUCCESS;
}

/* A counter (MPI_T reads it relative to its value when the handle was made) or a level (read
 * as it is: MPI_T_PVAR_CLASS_LEVEL). */
static void register_pvar(const char *coll, const char *what, const char *desc, int var_class,
                          unsigned long long *value)
{
    char name[64];
    snprintf(name, sizeof(name), "%s_%s", coll, what);
    (void)mca_base_component_pvar_register(
        &mca_coll_loom_component.super.collm_version, name, desc, OPAL_INFO_LVL_4, var_class,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MPI_T_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_counter, NULL, NULL, value);
}
static void register_counter(const char *coll, const char *what, const char *desc, unsigned long long *counter)
{
    register_pvar(coll, what, desc, MPI_T_PVAR_CLASS_COUNTER, counter);
}

/* A read-only parameter of loom's (coll_loom_NAME) and its help. */
static void register_int(const mca_base_component_t *c, const char *name, int level, int *var, const char *help)
{
    (void)mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, var);
}
static void register_string(const mca_base_component_t *c, const char *name, int level, char **var, const char *help)
{
    (void)mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, var);
}

/* Says once per job (the launcher's rank 0, or a process no launcher started: ompi_info, a
 * singleton) that loom stays out, and why. Written with stdio only: inside an Open MPI loom
 * was not built for, none of Open MPI's internals may be trusted. */
static void say_staying_out(const char *why)
{
    if (loom_ompi_launch_rank() > 0) return;
    fprintf(stderr,
            "coll:loom: %s stays out of this process, and Open MPI's own components serve every collective: "
            "%s. Build loom against the Open MPI you run (docs/install.md, \"Built for one Open MPI release\").\n",
            LOOM_VERSION_TEXT, why);
}

int mca_coll_loom_register_params(void)
{
    mca_base_component_t *c = &mca_coll_loom_component.super.collm_version;

    /* Which loom this is, for ompi_info and MPI_T (docs/observing.md, "Which loom a job ran"). */
    static char version[] = LOOM_VERSION " (commit " LOOM_COMMIT "), built for Open MPI " LOOM_OMPI_BUILT_FOR;
    mca_coll_loom_component.version = version;
    (void)mca_base_component_var_register(
        c, "version",
        "loom's version, the commit it was built from, and the Open MPI release it was built for "
        "(loom stays out of any other: docs/install.md, \"Built for one Open MPI release\")",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_1,
        MCA_BASE_VAR_SCOPE_CONSTANT, &mca_coll_loom_component.version);
    mca_coll_loom_component.test_library_version = NULL;
    register_string(c, "test_library_version", OPAL_INFO_LVL_9, &mca_coll_loom_component.test_library_version,
        "For testing how loom stays out of an Open MPI it was not built for: the text loom reads "
        "instead of MPI_Get_library_version's (e.g. \"Open MPI v4.1.8, ...\"); empty: the library's own");
    /* Registered even when loom stays out, so that MPI_T tools can tell loaded from used. A
     * level, not a counter: MPI_T would read a counter from 0 at the handle's making, after
     * MPI_Init has enabled loom on MPI_COMM_WORLD. */
    register_pvar("communicators", "enabled",
                  "Communicators loom is enabled on in this process now (MPI_COMM_WORLD, enabled in MPI_Init, "
                  "among them): 0 after MPI_Init means loom serves nothing in this job",
                  MPI_T_PVAR_CLASS_LEVEL, &mca_coll_loom_component.communicators_enabled);

    /* An Open MPI other than the one loom was built for: its structs may differ from those the
     * glue was compiled with, so loom registers nothing more and takes part in nothing. */
    mca_coll_loom_component.stays_out =
        !loom_ompi_fits(mca_coll_loom_component.test_library_version, mca_coll_loom_component.why_out,
                        sizeof mca_coll_loom_component.why_out);
    if (mca_coll_loom_component.stays_out) {
        say_staying_out(mca_coll_loom_component.why_out);
        return OMPI_SUCCESS;
    }

    mca_coll_loom_component.priority = 40;
    (void)mca_base_component_var_register(
        c, "priority",
        "Priority of the loom coll component. It must be above the components loom falls back "
        "to (tuned is 30), or their functions are not yet in place when loom is enabled",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.priority);

    mca_coll_loom_component.verbose = 0;
    (void)mca_base_component_var_register(
        c, "verbose",
        "Verbosity of loom: 0 silent, 1 one line per communicator loom is enabled on, "
        "2 also one line per collective call (the algorithm that served it, or why loom "
        "declined it)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &mca_coll_loom_component.verbose);

    mca_coll_loom_component.fast_repeats = 1;
    (void)mca_base_component_var_register(
        c, "fast_repeats",
        "1: a call that repeats the last call of its collective loom handed on (same count, root and "
        "in-place use, the same predefined datatypes and op) is handed on at once, without being "
        "described and decided again; 0: every call takes the whole decision path (for diagnosis)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_loom_component.fast_repeats);

    mca_coll_loom_component.allocator_like_open_mpi = 1;
    (void)mca_base_component_var_register(
        c, "allocator_like_open_mpi",
        "1: when loom serves a reduction of a size no call of the process reached before, it "
        "allocates and frees one block of that size, as Open MPI's own algorithm would have, so "
        "that the C library's adaptive malloc thresholds move as they would without loom (else a "
        "reduction loom hands on later may map fresh memory on every call); 0: it does not",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.allocator_like_open_mpi);

    mca_coll_loom_component.nonblocking_max = 1024;
    (void)mca_base_component_var_register(
        c, "nonblocking_max",
        "Non-blocking and persistent operations loom runs at once per process (each has a stack of "
        "256 KiB of virtual memory, mapped on demand); later ones wait, in order, until "
        "one ends. At least 1",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.nonblocking_max);

    mca_coll_loom_component.segment_size = LOOM_SEGMENT_SIZE_DEFAULT;
    (void)mca_base_component_var_register(
        c, "segment_size",
        "Bytes per segment for loom's pipelined algorithms (ring_pipelined); 0 lets each "
        "algorithm use its own default",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_loom_component.segment_size);

    mca_coll_loom_component.pat_buffer_size = 1024 * 1024;
    (void)mca_base_component_var_register(
        c, "pat_buffer_size",
        "Bytes of intermediate buffer PAT may use per call (send and receive staging, and "
        "reduce-scatter accumulators). It bounds PAT's aggregation: a message carries at most "
        "as many blocks as fit, and blocks larger than the buffer travel in pieces",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_loom_component.pat_buffer_size);

    mca_coll_loom_component.knomial_radix = LOOM_KNOMIAL_RADIX_DEFAULT;
    (void)mca_base_component_var_register(
        c, "knomial_radix",
        "Radix of loom's knomial algorithms (bcast, reduce and barrier trees; allreduce's exchange "
        "groups) and base of the bcube allreduce's grid where a rule sets no radix=: 2-16 (2 is a "
        "binomial tree)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.knomial_radix);

    mca_coll_loom_component.alltoallv_max_requests = 32;
    (void)mca_base_component_var_register(
        c, "alltoallv_max_requests",
        "Sends (and receives) loom's linear alltoallv and alltoallw keep in flight at once, to as many "
        "peers: the rest wait for them (0: every peer at once)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_loom_component.alltoallv_max_requests);

    mca_coll_loom_component.shm_min_calls = 16;
    (void)mca_base_component_var_register(
        c, "shm_min_calls",
        "A communicator whose ranks share a node gets loom's shared-memory segment (for the shm "
        "algorithms) at the Nth call loom's rules would serve with it; the calls before are "
        "served without it. Setting one up costs about as much as a hundred small calls save, "
        "and most communicators are used a few times. 0 or 1: at the first such call. A "
        "forced shm algorithm, and a persistent request's init (MPI_Allreduce_init & co.), get "
        "the segment at once; a non-blocking call (MPI_Iallreduce & co.) counts as the others, "
        "and starts the set-up in the background, without waiting for it",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.shm_min_calls);

    mca_coll_loom_component.shm_pool = 4;
    (void)mca_base_component_var_register(
        c, "shm_pool",
        "Shared-memory segments of freed communicators each process keeps for reuse by the next "
        "communicators (a segment is reused only once every rank that used it freed its "
        "communicator); 0 unmaps every segment with its communicator. A kept segment takes "
        "about 193 KiB per rank of the communicator that used it",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.shm_pool);

    mca_coll_loom_component.shm_max_mib = 1024;
    (void)mca_base_component_var_register(
        c, "shm_max_mib",
        "The largest shared-memory segment loom sets up for a communicator, in MiB (a segment "
        "takes about 193 KiB per rank); a communicator that would need more gets none, and its "
        "calls are served without shared memory (a forced shm algorithm: handed on). 0: no "
        "segments at all",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.shm_max_mib);

    mca_coll_loom_component.shm_persistent_max = 8;
    (void)mca_base_component_var_register(
        c, "shm_persistent_max",
        "Persistent requests (MPI_Allreduce_init & co.) that may have a shared-memory segment of "
        "their own alive at once in each process (ranks may start persistent requests in any "
        "order, so they never share the communicator's segment). A request made past the bound "
        "is served without shared memory. Each segment takes about 193 KiB per rank of its "
        "communicator. 0: persistent requests never use shared memory",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.shm_persistent_max);

    /* An enumerator: Open MPI itself rejects any other value, naming the parameter. */
    static const mca_base_var_enum_value_t single_copy_values[] = {{0, "never"}, {1, "auto"}, {2, "cma"}, {0, NULL}};
    mca_base_var_enum_t *single_copy_enum = NULL;
    (void)mca_base_var_enum_create("coll_loom_single_copy", single_copy_values, &single_copy_enum);
    mca_coll_loom_component.single_copy = 1;
    (void)mca_base_component_var_register(
        c, "single_copy",
        "Let loom's cma algorithms copy between the ranks of a node in one step, each reading the "
        "others' buffers directly: through XPMEM mappings where loom was built with XPMEM and "
        "/dev/xpmem opens, else with Linux Cross Memory Attach (process_vm_readv). Probed when a "
        "communicator sets up its shared segment: each mechanism is on only if every rank allows "
        "it and succeeds with it (kernel.yama.ptrace_scope 2 or 3 refuses CMA; loom allows any "
        "process of the job to read this one, as Open MPI's vader does for CMA). auto (1): where "
        "allowed, XPMEM first (default); cma (2): CMA only; never (0): the rules then choose among "
        "the other algorithms (a forced cma algorithm: handed on)",
        MCA_BASE_VAR_TYPE_INT, single_copy_enum, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.single_copy);
    if (NULL != single_copy_enum) OBJ_RELEASE(single_copy_enum);

    mca_coll_loom_component.shm_refuse = 0;
    (void)mca_base_component_var_register(
        c, "shm_refuse",
        "For testing loom's fallbacks: 1 makes this process refuse every shared-memory segment, as "
        "a rank that cannot map one does, so that the segments of its communicators cannot be set "
        "up (on every rank): blocking calls then use algorithms without one, and non-blocking "
        "calls decided while a set-up was under way run their stand-ins",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.shm_refuse);

    mca_coll_loom_component.trace_dir = NULL;
    register_string(c, "trace", OPAL_INFO_LVL_4, &mca_coll_loom_component.trace_dir,
        "A directory: every rank keeps one event per collective call (collective and form, "
        "communicator, message size, what served it or why it was handed on, start and duration) and "
        "writes them at MPI_Finalize as Chrome trace-event JSON, DIR/loom-trace.<job>.<rank>.json "
        "(open in Perfetto or chrome://tracing; tools/loom-trace merges, sums up and plots them). "
        "Empty: off, at no cost");
    mca_coll_loom_component.trace_max_events = 100000;
    register_int(c, "trace_max_events", OPAL_INFO_LVL_5, &mca_coll_loom_component.trace_max_events,
        "The most events coll_loom_trace keeps per process (264 bytes each, memory touched as they "
        "are written); later calls are counted as dropped, and the file and stderr say so");
    mca_coll_loom_component.autotune = 0;
    register_int(c, "autotune", OPAL_INFO_LVL_4, &mca_coll_loom_component.autotune,
        "1: online tuning. For each (communicator, collective, size class) that repeats, loom times "
        "a few candidates on the application's own blocking calls - the rule table's choice, Open "
        "MPI's own (handing on) and other algorithms that can serve the call - agrees with every "
        "rank on the fastest and keeps it (docs/tuning.md, \"Online tuning\"). 0: off");
    mca_coll_loom_component.autotune_trials = 4;
    register_int(c, "autotune_trials", OPAL_INFO_LVL_5, &mca_coll_loom_component.autotune_trials,
        "Online tuning: timed calls per candidate (1-16; 4 times as many up to 64 KiB, in two runs); the first "
        "of each run is a warm-up, the fastest run's median counts");
    mca_coll_loom_component.autotune_candidates = 10;
    register_int(c, "autotune_candidates", OPAL_INFO_LVL_5, &mca_coll_loom_component.autotune_candidates,
        "Online tuning: candidates per class (1-12): the rule table's choice, Open MPI's own, then "
        "other algorithms that can serve the call, in the registry's order");
    mca_coll_loom_component.autotune_margin = 10;
    register_int(c, "autotune_margin", OPAL_INFO_LVL_5, &mca_coll_loom_component.autotune_margin,
        "Online tuning: how many percent faster than the rule table's choice another candidate must "
        "measure to replace it (smaller differences are within the trial's noise)");
    mca_coll_loom_component.autotune_floor_ns = 2000;
    register_int(c, "autotune_floor_ns", OPAL_INFO_LVL_5, &mca_coll_loom_component.autotune_floor_ns,
        "Online tuning: nanoseconds per call below which another candidate replaces the rule table's "
        "choice only if twice as fast (a trial's own path changes how sub-microsecond calls run)");
    mca_coll_loom_component.autotune_max_classes = 64;
    register_int(c, "autotune_max_classes", OPAL_INFO_LVL_5, &mca_coll_loom_component.autotune_max_classes,
        "Online tuning: the most (collective, size class) classes tuned per communicator (about "
        "3.4 KB each, allocated as they appear); later ones are decided by the rules");
    mca_coll_loom_component.autotune_save = NULL;
    register_string(c, "autotune_save", OPAL_INFO_LVL_4, &mca_coll_loom_component.autotune_save,
        "Online tuning: a path where rank 0 writes what was learned, at MPI_Finalize, as a rule "
        "file (the measured times in comments) for coll_loom_rules");
    mca_coll_loom_component.test_unknown_hosts = NULL;
    register_string(c, "test_unknown_hosts", OPAL_INFO_LVL_9, &mca_coll_loom_component.test_unknown_hosts,
        "For testing: MPI_COMM_WORLD ranks (comma-separated) whose host loom takes as unknown, as "
        "if Open MPI's runtime had not said (each such rank is then a node of its own)");
    mca_coll_loom_component.autotune_noise = 0;
    register_int(c, "autotune_noise", OPAL_INFO_LVL_9, &mca_coll_loom_component.autotune_noise,
        "For testing online tuning: 1 makes rank 0's timings noisy (up to 10x, at random), so that "
        "the ranks measure different times and must still agree");

    /* The rule files a call consults before the built-in rules (RULES.md, "Layers"): the
     * user's, then the site's. The site's path is fixed when loom is built (SYSCONFDIR/loom/
     * site.rules of the install prefix), so every job of that installation reads it with no
     * flag; a user's file adds to it rather than replacing it. */
    static char site_rules[] = LOOM_SITE_RULES;
    mca_coll_loom_component.rules_param[LOOM_RULES_USER] = NULL;
    register_string(c, "rules", OPAL_INFO_LVL_4, &mca_coll_loom_component.rules_param[LOOM_RULES_USER],
        "Path of a rule file of your own (see selection_rules/RULES.md): its rules are consulted first, "
        "then the site's (coll_loom_site_rules), then loom's built-in rules. A file with errors is "
        "reported and not used");
    mca_coll_loom_component.rules_param[LOOM_RULES_SITE] = site_rules;
    register_string(c, "site_rules", OPAL_INFO_LVL_4, &mca_coll_loom_component.rules_param[LOOM_RULES_SITE],
        "Path of the site's rule file, consulted after the user's (coll_loom_rules) and before loom's "
        "built-in rules; \"none\" (or empty) leaves the site's rules out of a job. Default: "
        LOOM_SITE_RULES ", used where it exists");
    mca_coll_loom_component.rules_strict = false;
    (void)mca_base_component_var_register(
        c, "rules_strict", "true: a rule file (the user's or the site's) with errors aborts the job at MPI_Init instead of being left out",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_loom_component.rules_strict);

    /* Names and help texts must outlive registration. */
    static char names[LOOM_COLL_COUNT][64];
    static char helps[LOOM_COLL_COUNT][768];
    for (int i = 0; i < LOOM_COLL_COUNT; ++i) {
        const char *coll = loom_coll_name((loom_coll_t)i);
        char algorithms[256];
        loom_algorithm_names((loom_coll_t)i, algorithms, sizeof(algorithms));
        snprintf(names[i], sizeof(names[i]), "%s_algorithm", coll);
        snprintf(helps[i], sizeof(helps[i]),
                 "Force loom's %s algorithm: one of %s; empty for loom's own choice; "
                 "\"" LOOM_FORCED_FALLBACK "\" hands every call to the next component (to time Open "
                 "MPI's own choice beside loom's in one job). A forced algorithm that cannot serve a "
                 "call (e.g. it needs a commutative op) makes loom hand the call to the next component",
                 coll, algorithms);
        mca_coll_loom_component.forced[i] = NULL;
        /* Settable through MPI_T (MPI_T_cvar_write), so tools and tests can switch
         * algorithms inside one job; every rank must set the same value between calls. */
        (void)mca_base_component_var_register(c, names[i], helps[i], MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                              MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
                                              &mca_coll_loom_component.forced[i]);
        static const char *const served_help[LOOM_KIND_COUNT] = {
            "Calls of this collective that loom ran itself",
            "Non-blocking calls of this collective that loom ran itself",
            "Starts of persistent requests of this collective that loom ran itself"};
        static const char *const declined_help[LOOM_KIND_COUNT] = {
            "Calls of this collective that loom handed to the previous component",
            "Non-blocking calls of this collective that loom handed to the previous component",
            "Persistent requests of this collective that loom handed to the previous component (at their init)"};
        for (int k = 0; k < LOOM_KIND_COUNT; ++k) {
            char buf[48];
            const char *form = loom_form_name((loom_kind_t)k, (loom_coll_t)i, buf, sizeof(buf));
            register_counter(form, "served", served_help[k], &mca_coll_loom_component.served[k][i]);
            register_counter(form, "declined", declined_help[k], &mca_coll_loom_component.declined[k][i]);
        }
    }
    register_counter("shm_segments", "set_up", "Communicators whose shared-memory segment loom set up",
                     &mca_coll_loom_component.segments_set_up);
    register_counter("shm_segments", "unavailable",
                     "Communicators whose shared-memory segment could not be had (or was refused: "
                     "coll_loom_shm_max_mib)",
                     &mca_coll_loom_component.segments_unavailable);
    register_counter("shm", "stand_ins",
                     "Non-blocking calls decided while their communicator's segment was being set up that "
                     "ran their stand-in algorithm, the set-up having failed",
                     &mca_coll_loom_component.stand_ins);
    return OMPI_SUCCESS;
}

