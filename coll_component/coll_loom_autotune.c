/*
 * Online tuning (coll_loom_autotune), the glue's half: loom learns, on the machine it runs on and
 * from the application's own calls, what its rule table could only guess - as rules, in a layer
 * of each communicator's tables that the one chooser reads first (selection_rules/learned.hpp:
 * classes, candidates, the trial's schedule, medians and winner, the saved file's lines). Here:
 * which calls are tuned, timing them, the ranks' agreement, and writing the file.
 *
 * A class is (communicator, collective, commutative op or not, size class within 2x). Its first
 * blocking call opens it: candidate 0 is the tables' choice for that call, then Open MPI's own
 * (handing on) and the other algorithms that can serve it, up to coll_loom_autotune_candidates.
 * While its trial runs, the layer's rule for the class names each candidate in turn for
 * coll_loom_autotune_trials calls in a row (four times as many up to 64 KiB, in two passes), and
 * the calls it decides are timed on each rank (blocking step 4, loom_autotune_record): each
 * call's duration, and the interval from its run's start to the next call's entry (in a row, as
 * the winner will run: an algorithm's calls after another's find the ranks, caches and the
 * segment's flags as that one left them; the first call of each run is left out of its median,
 * as a warm-up). Inside the trial's last call - the same call on every rank, since every rank
 * makes the same calls - the ranks agree: an allreduce (MAX) of each candidate's medians, on
 * loom's own messages over the collective's tag, so every rank holds the same numbers and
 * settles on the same winner, whatever its own timer said. From then on the rule names the
 * winner (source "learned:N" in verbose lines), and its calls are remembered for repeats as
 * any decided call (coll_loom_fast_repeats). The trial's calls are not.
 *
 * Cost: a class that never repeats runs the tables' choice (candidate 0) once, as without
 * tuning. Each trial call is described and chosen anew and runs a candidate that may be slow:
 * C x trials calls per class in all. Memory: at most coll_loom_autotune_max_classes classes per
 * communicator (others are not tuned), ~3.5 KB each, made as they appear.
 *
 * What was learned is kept per process (the first rule per collective, communicator size and
 * class); at MPI_Finalize rank 0 writes it as a rule file (coll_loom_autotune_save) with the
 * agreed times in comments - the layer written out, which coll_loom_rules loads next time and
 * `loom-rules explain --learned FILE` shows - and prints it at coll_loom_verbose >= 1.
 */
#include "coll_loom_autotune.h"
#include "coll_loom_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loom_autotune_decide(loom_glue_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                         loom_decision_t *d, int handed_on)
{
    const loom_tune_settings_t settings = {
        .candidates = mca_coll_loom_component.autotune_candidates,
        .trials = mca_coll_loom_component.autotune_trials,
        .max_classes = mca_coll_loom_component.autotune_max_classes,
        .margin = mca_coll_loom_component.autotune_margin,
        .floor_ns = mca_coll_loom_component.autotune_floor_ns,
    };
    void *cls = NULL;
    const int i = loom_learned_trial(mca_coll_loom_rules(comm, module), &c->core, ompi_comm_size(comm), handed_on,
                                     &settings, &d->algorithm, &d->why, &d->rule, &cls);
    if (i < 0) return LOOM_LEARNED_REMEMBER == i;
    d->tune = cls;
    d->tune_candidate = i;
    return 0;
}

/* Every rank's medians made the slowest rank's, on every rank: an allreduce (MAX) over comm,
 * run by loom itself on the collective's tag inside the call every rank is in. */
static int agree(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module, loom_coll_t coll, double *v, int n)
{
    loom_reduction_t max;
    if (!loom_find_kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE, &max)) return OMPI_ERROR;
    loom_call_t call = {.coll = LOOM_COLL_ALLREDUCE};
    call.rbuf = v;
    call.count = (size_t)n;
    call.op = max;
    loom_pml_transport_t t;
    loom_pml_transport_init(&t, comm, module, loom_blocking_tag(coll));
    const int rc = loom_to_ompi_error(loom_run("recursive_doubling", &t.ops, &call));
    const int fini_rc = loom_pml_transport_fini(&t);
    return OMPI_SUCCESS == rc ? fini_rc : rc;
}

int loom_autotune_record(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module, const loom_decision_t *d,
                         long long run_start_ns, long long ns)
{
    /* Testing (coll_loom_autotune_noise): this rank's clock made noisy, up to 10x. */
    double noise = 1.0;
    if (mca_coll_loom_component.autotune_noise > 0 && ompi_comm_rank(comm) == 0)
        noise = 1.0 + 9.0 * (double)rand() / RAND_MAX;
    double times[LOOM_LEARNED_MAX_TIMES];
    const int n = loom_learned_record(d->tune, d->tune_candidate, d->tune_entry_ns, run_start_ns, ns, noise, times);
    if (0 == n) return OMPI_SUCCESS;
    const int rc = agree(comm, module, loom_learned_coll(d->tune), times, n);
    char line[256];
    loom_learned_settle(d->tune, OMPI_SUCCESS == rc ? times : NULL, comm->c_name, line, sizeof(line));
    if (mca_coll_loom_component.verbose >= 2)
        opal_output(mca_coll_loom_component.output, "coll:loom: autotune on %s (rank %d): %s", comm->c_name,
                    ompi_comm_rank(comm), line);
    return rc;
}

static char *save_path; /* coll_loom_autotune_save, copied at open: Open MPI frees its own */

void loom_autotune_open(void)
{
    const char *p = mca_coll_loom_component.autotune_save;
    save_path = NULL != p && '\0' != p[0] ? strdup(p) : NULL;
}

/* The learned rules, as rank 0 writes them to coll_loom_autotune_save. */
static void save(const char *path, const char *rules)
{
    FILE *f = fopen(path, "w");
    if (NULL == f) {
        opal_output(0, "coll:loom: autotune: cannot write %s", path);
        return;
    }
    fprintf(f,
            "loom-rules 1\n# Written by coll_loom_autotune of loom %s.\n"
            "# Learned by coll_loom_autotune on the machine it ran on: per collective, size class\n"
            "# and communicator size, the fastest candidate, timed on the application's own calls (the\n"
            "# slowest rank's median, microseconds, of the intervals from one call's run to the next\n"
            "# call's entry where they came back to back, else of their durations). In the job these\n"
            "# rules were a layer above every rule file, for blocking calls; see what they decide with\n"
            "# loom-rules explain COLLECTIVE ... --learned %s, or load them with\n"
            "# --mca coll_loom_rules %s\n%s",
            mca_coll_loom_component.version, path, path, rules);
    if (0 != fclose(f)) opal_output(0, "coll:loom: autotune: error writing %s", path);
}

void loom_autotune_finalize(int rank0)
{
    char *rules = rank0 ? loom_learned_saved(LOOM_LEARNED_RULES) : NULL;
    if (NULL != rules && NULL != save_path) save(save_path, rules);
    char *summary = NULL != rules && mca_coll_loom_component.verbose >= 1 ? loom_learned_saved(LOOM_LEARNED_SUMMARY)
                                                                          : NULL;
    char *next = NULL;
    for (char *line = NULL != summary ? strtok_r(summary, "\n", &next) : NULL; NULL != line;
         line = strtok_r(NULL, "\n", &next))
        opal_output(mca_coll_loom_component.output, "coll:loom: autotune learned %s", line);
    free(summary);
    free(rules);
    loom_learned_forget();
    free(save_path);
    save_path = NULL;
}
