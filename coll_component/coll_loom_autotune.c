/*
 * Online tuning (coll_loom_autotune): loom learns, on the machine it runs on and from the
 * application's own calls, what its rule table could only guess.
 *
 * A class is (communicator, collective, commutative op or not, size class), the size class being
 * the power of two at or above the message size (calls of one class differ by at most 2x). Its
 * first blocking call makes the class: its candidates are the rule table's choice (first), Open
 * MPI's own (handing on; not where Open MPI's kernel is wrong for the op), and other algorithms
 * whose needs the call meets (loom_eligible_algorithms: an order-preserving one for a
 * non-commutative op, shm only with the segment made, ...), in registry order, up to
 * coll_loom_autotune_candidates. Its next calls are the trial: each candidate runs
 * coll_loom_autotune_trials calls in a row (four times as many up to 64 KiB, in two passes),
 * timed on each rank (in a row, as the winner will run: an algorithm's calls after another's find
 * the ranks, caches and the segment's flags as that one left them; the first call of each run is
 * left out of its median, as a warm-up): each call's duration, and the interval from its run's
 * start to the next call's entry (see choose_winner). Inside the trial's last call - the same
 * call on every rank, since every rank makes the same calls - the ranks agree: an allreduce (MAX)
 * of each candidate's medians, on loom's own messages over the collective's tag, so every rank
 * holds the same numbers and takes the same winner (choose_winner), whatever its own timer said.
 * From then on the class runs the winner, and its calls are remembered for repeats as any decided
 * call (coll_loom_fast_repeats). The trial's calls are not.
 *
 * Cost: a class that never repeats runs the rule's choice (candidate 0) once, as without
 * tuning. Each trial call is described and chosen anew (~300 instructions) and runs a
 * candidate that may be slow: C x trials calls per class in all. Memory: at most
 * coll_loom_autotune_max_classes classes per communicator (others are not tuned), ~3.4 KB
 * each, allocated as they appear.
 *
 * What was learned is kept per process; at MPI_Finalize rank 0 writes it as a rule file
 * (coll_loom_autotune_save) with the agreed times in comments, which coll_loom_rules loads next
 * time, and prints it at coll_loom_verbose >= 1.
 */
#include "coll_loom_autotune.h"
#include "coll_loom_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_CANDIDATES = 12, MAX_TRIALS = 16 };
enum { TRIAL = 0, DECIDED = 1 };
enum { SMALL_CLASS = 17 }; /* size classes of at most 64 KiB */

typedef struct loom_tune_class {
    loom_coll_t coll;
    int size_class; /* 0: 0 bytes; k: (2^(k-1), 2^k] bytes */
    int commutative;
    int state;
    int ncand, trials, calls, winner;
    int run, passes; /* trials = passes x run: the candidates take turns, a run of calls each */
    const void *cand[MAX_CANDIDATES]; /* NULL: Open MPI's own (handing on) */
    /* the rule's choice (candidate 0) as the rules set it: its options and rule */
    const void *leaders;
    size_t segment_bytes, buffer_bytes, radix;
    char rule[40];
    long long samples[MAX_CANDIDATES][MAX_TRIALS];   /* each trial call's duration */
    long long intervals[MAX_CANDIDATES][MAX_TRIALS]; /* run start to next entry, in a candidate's run */
    long long last_run_start;
    /* ns, the slowest rank's medians: [0, ncand) durations, [ncand, 2 ncand) intervals */
    double agreed[2 * MAX_CANDIDATES];
    int by_interval; /* the winner was chosen by intervals */
} loom_tune_class_t;

typedef struct loom_tune_table {
    int n, cap;
    loom_tune_class_t *classes[]; /* each its own allocation: a class stays where it is while a
                                   * trial call holds it and a call nested in it (Open MPI's
                                   * own, handed on) makes another */
} loom_tune_table_t;

/* What was learned in this process, for the rule file and the verbose lines at finalize. */
typedef struct learned {
    loom_coll_t coll;
    int comm_size, size_class, commutative, ncand, winner, by_interval;
    const char *names[MAX_CANDIDATES];
    double agreed[MAX_CANDIDATES];
    char comm_name[32];
} learned_t;
static learned_t *learned;
static int nlearned, learned_cap;
/* Two threads may decide classes of two communicators at once (MPI_THREAD_MULTIPLE): the list
 * is appended under this flag, held for a few stores. */
static char learned_lock;

static const char *const kTrial = "autotune: a trial";
static const char *const kMeasured = "autotune: measured fastest here";
static const char *const kOmpiTrial = "autotune: timing Open MPI's own choice";
static const char *const kOmpiFastest = "autotune: Open MPI's own choice measured fastest here";

/* 0 for 0 bytes; c >= 1 for (2^(c-2), 2^(c-1)] bytes (1: 1 byte, 2: 2, 3: 3-4, 4: 5-8, ...). */
static void class_range(int cls, char *buf, size_t size);

static int size_class(size_t bytes)
{
    if (0 == bytes) return 0;
    int k = 0;
    while (k < 62 && ((size_t)1 << k) < bytes) ++k;
    return k + 1;
}

static loom_tune_class_t *find_class(mca_coll_loom_module_t *module, loom_coll_t coll, int cls, int commutative,
                                     int *made)
{
    loom_tune_table_t *t = module->tune;
    *made = 0;
    for (int i = 0; NULL != t && i < t->n; ++i) {
        loom_tune_class_t *k = t->classes[i];
        if (k->coll == coll && k->size_class == cls && k->commutative == commutative) return k;
    }
    const int max = mca_coll_loom_component.autotune_max_classes;
    const int n = NULL != t ? t->n : 0;
    if (n >= max) return NULL;
    /* Grown as classes appear (a class is ~3.4 KB). */
    if (NULL == t || t->n == t->cap) {
        int cap = NULL != t ? 2 * t->cap : 4;
        if (cap > max) cap = max;
        loom_tune_table_t *more = realloc(t, sizeof(*t) + (size_t)cap * sizeof(t->classes[0]));
        if (NULL == more) return NULL;
        more->n = n;
        more->cap = cap;
        module->tune = t = more;
    }
    loom_tune_class_t *k = calloc(1, sizeof(*k));
    if (NULL == k) return NULL;
    t->classes[t->n++] = k;
    k->coll = coll;
    k->size_class = cls;
    k->commutative = commutative;
    *made = 1;
    return k;
}

/* The candidates of a new class, from its first call as the rules decided it. */
static void make_candidates(loom_tune_class_t *k, const loom_call_t *call, struct ompi_communicator_t *comm,
                            mca_coll_loom_module_t *module, const char *rule, int handed_on)
{
    int max = mca_coll_loom_component.autotune_candidates;
    if (max > MAX_CANDIDATES) max = MAX_CANDIDATES;
    if (max < 1) max = 1;
    k->cand[k->ncand++] = handed_on ? NULL : call->chosen;
    k->leaders = call->leaders;
    k->segment_bytes = call->segment_bytes;
    k->buffer_bytes = call->buffer_bytes;
    k->radix = call->radix;
    snprintf(k->rule, sizeof(k->rule), "%s", NULL != rule ? rule : "");
    /* Open MPI's own, unless its kernel gets this op wrong (then loom must serve). */
    if (!handed_on && !call->keep_from_open_mpi && k->ncand < max) k->cand[k->ncand++] = NULL;
    const void *eligible[32];
    const int n = loom_eligible_algorithms(call, ompi_comm_size(comm), mca_coll_loom_rules(comm, module), eligible, 32);
    for (int i = 0; i < n && k->ncand < max; ++i)
        if (eligible[i] != k->cand[0]) k->cand[k->ncand++] = eligible[i];
    /* Calls of 64 KiB and less are cheap and their times noisy: four times as many trials, in
     * two passes over the candidates (A B C .. A B C), so that a stretch of noise (the other
     * ranks' cores busy for a while) spoils one run of a candidate, not its whole trial. */
    const int small = k->size_class <= SMALL_CLASS;
    k->trials = mca_coll_loom_component.autotune_trials * (small ? 4 : 1);
    if (k->trials < 1) k->trials = 1;
    if (k->trials > MAX_TRIALS) k->trials = MAX_TRIALS;
    k->passes = small && k->trials >= 6 ? 2 : 1;
    k->run = k->trials / k->passes;
    k->trials = k->run * k->passes;
    k->state = k->ncand > 1 ? TRIAL : DECIDED;
}

/* Sets the decision and the core call to candidate i of k. */
static void apply(const loom_tune_class_t *k, int i, loom_glue_call_t *c, loom_decision_t *d)
{
    const void *a = k->cand[i];
    if (NULL == a) {
        d->algorithm = NULL;
        d->why = TRIAL == k->state ? kOmpiTrial : kOmpiFastest;
        return;
    }
    d->algorithm = loom_algorithm_name(a);
    c->core.chosen = a;
    c->core.stand_in.algorithm = NULL;
    if (0 == i) { /* the rule's choice, with its options */
        c->core.leaders = k->leaders;
        c->core.segment_bytes = k->segment_bytes;
        c->core.buffer_bytes = k->buffer_bytes;
        c->core.radix = k->radix;
        d->rule = TRIAL == k->state ? kTrial : (k->rule[0] ? k->rule : kMeasured);
    } else {
        c->core.leaders = NULL;
        c->core.segment_bytes = c->core.buffer_bytes = c->core.radix = 0;
        d->rule = TRIAL == k->state ? kTrial : kMeasured;
    }
}

int loom_autotune_decide(loom_glue_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                         loom_decision_t *d, int handed_on_by_rules)
{
    const loom_call_t *call = &c->core;
    const int commutative = !loom_coll_reduces(call->coll) || 0 != call->op.commutative;
    const int cls = size_class(loom_message_bytes(call, ompi_comm_size(comm)));
    int made;
    loom_tune_class_t *k = find_class(module, call->coll, cls, commutative, &made);
    if (NULL == k) return 1; /* the table is full: the rules decide */
    if (made) make_candidates(k, call, comm, module, d->rule, handed_on_by_rules);
    if (DECIDED == k->state) {
        apply(k, k->winner, c, d);
        return 1;
    }
    const int i = k->calls % (k->ncand * k->run) / k->run;
    apply(k, i, c, d);
    d->tune = k;
    d->tune_candidate = i;
    return 0;
}

static long long median(long long *v, int n)
{
    for (int i = 1; i < n; ++i) /* n is small: insertion sort */
        for (int j = i; j > 0 && v[j - 1] > v[j]; --j) {
            const long long x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[n / 2];
}

/* A candidate's time from its runs' samples (a run's first call, and the interval after it, left
 * out as a warm-up where the run has 3 calls or more; `intervals`: a run holds one value fewer):
 * the fastest pass's median, since noise only ever adds time. */
static double run_medians(loom_tune_class_t *k, long long *v, int intervals)
{
    const int warm = k->run >= 3 ? 1 : 0, n = k->run - intervals - warm;
    double best = 0;
    for (int p = 0; p < k->passes; ++p) {
        const double m = n > 0 ? (double)median(v + p * k->run + warm, n) : 0;
        if (0 == p || m < best) best = m;
    }
    return best;
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

static void keep_learned(const loom_tune_class_t *k, struct ompi_communicator_t *comm)
{
    while (__atomic_test_and_set(&learned_lock, __ATOMIC_ACQUIRE)) continue;
    /* One rule per (collective, communicator size, class): the first learned (another communicator
     * of the same size would only repeat or shadow it). */
    for (int i = 0; i < nlearned; ++i)
        if (learned[i].coll == k->coll && learned[i].comm_size == ompi_comm_size(comm) &&
            learned[i].size_class == k->size_class && learned[i].commutative == k->commutative) {
            __atomic_clear(&learned_lock, __ATOMIC_RELEASE);
            return;
        }
    if (nlearned == learned_cap) {
        const int cap = 0 == learned_cap ? 64 : 2 * learned_cap;
        learned_t *more = realloc(learned, (size_t)cap * sizeof(*more));
        if (NULL == more) {
            __atomic_clear(&learned_lock, __ATOMIC_RELEASE);
            return;
        }
        learned = more;
        learned_cap = cap;
    }
    learned_t *l = &learned[nlearned++];
    l->coll = k->coll;
    l->comm_size = ompi_comm_size(comm);
    l->size_class = k->size_class;
    l->commutative = k->commutative;
    l->ncand = k->ncand;
    l->winner = k->winner;
    l->by_interval = k->by_interval;
    for (int i = 0; i < k->ncand; ++i) {
        l->names[i] = NULL != k->cand[i] ? loom_algorithm_name(k->cand[i]) : "fallback";
        l->agreed[i] = k->agreed[(k->by_interval ? k->ncand : 0) + i];
    }
    snprintf(l->comm_name, sizeof(l->comm_name), "%.31s", comm->c_name);
    __atomic_clear(&learned_lock, __ATOMIC_RELEASE);
}

/* The winner from the agreed times: the fastest, if it beats the rule's choice (candidate 0) by
 * coll_loom_autotune_margin percent - below that, differences are within what one rank's timer
 * and the trial's own path (describe, choose, two clock reads a call) blur, and the rules' choice
 * stands.
 *
 * Which times: where the calls come back to back (each candidate's interval - from a call's run
 * to the next call's entry - within twice its duration plus the floor), the intervals. They hold
 * what a call's duration on one rank misses and what a small call's cost is mostly made of: how
 * the candidate leaves the ranks for the next call (a bcast root that returns at once and waits
 * in the next call, shared-memory flags the ranks meet on in step or not). They leave out the
 * trial's own path through the pipeline (describe, choose: 0.1-0.3 us here), which a kept repeat
 * does not take. Otherwise (the application computes between calls, which would swamp the
 * intervals) the durations. */
static void choose_winner(loom_tune_class_t *k)
{
    const double *duration = k->agreed, *interval = k->agreed + k->ncand;
    const double floor_ns = (double)mca_coll_loom_component.autotune_floor_ns;
    k->by_interval = k->run >= 3;
    for (int i = 0; i < k->ncand && k->by_interval; ++i)
        if (!(interval[i] > 0 && interval[i] <= 2 * duration[i] + floor_ns)) k->by_interval = 0;
    const double *t = k->by_interval ? interval : duration;
    int best = 0;
    for (int i = 1; i < k->ncand; ++i)
        if (t[i] < t[best]) best = i;
    /* Below the floor, where the rule's choice is a fast one, only a choice the best beat by half
     * is replaced: there the trial's own per-call path (0.1-0.3 us a call on every rank) changes
     * how the candidates run, not only what they measure - a shared-memory bcast whose root runs
     * calls ahead of its readers in the steady state (0.07 us a call at 1 KiB here) is held in
     * step by it and measured at 0.3-0.5 us, behind Open MPI's own (0.3 us, 0.25 us steady) - so
     * a near tie there says nothing, and a bad choice (cma at 8 B: 1.7 us against 0.2) still
     * shows. Timing the trial's calls on the repeat path would lift this (not done). */
    double margin = (double)mca_coll_loom_component.autotune_margin / 100.0;
    if (t[0] <= floor_ns && margin < 0.5) margin = 0.5;
    k->winner = 0;
    if (t[best] < (1.0 - margin) * t[0]) k->winner = best;
}

int loom_autotune_record(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module, const loom_decision_t *d,
                         long long run_start_ns, long long ns)
{
    loom_tune_class_t *k = d->tune;
    const int pass = k->calls / (k->ncand * k->run), in_run = k->calls % k->run, sample = pass * k->run + in_run;
    /* From the previous call's run to this call's entry: the previous call and the application's
     * time between the two, without this call's way through the pipeline (a kept repeat's is
     * shorter). */
    long long interval = d->tune_entry_ns - k->last_run_start;
    k->last_run_start = run_start_ns;
    /* Testing (coll_loom_autotune_noise): this rank's clock made noisy, up to 10x. */
    if (mca_coll_loom_component.autotune_noise > 0 && ompi_comm_rank(comm) == 0) {
        const double f = 1.0 + 9.0 * (double)rand() / RAND_MAX;
        ns = (long long)((double)ns * f);
        interval = (long long)((double)interval * f);
    }
    k->samples[d->tune_candidate][sample] = ns;
    /* The interval after the previous call of the same run. */
    if (in_run > 0) k->intervals[d->tune_candidate][sample - 1] = interval;
    if (++k->calls < k->ncand * k->trials) return OMPI_SUCCESS;
    for (int i = 0; i < k->ncand; ++i) {
        k->agreed[i] = run_medians(k, k->samples[i], 0);
        k->agreed[k->ncand + i] = k->run >= 3 ? run_medians(k, k->intervals[i], 1) : 0;
    }
    const int rc = agree(comm, module, k->coll, k->agreed, 2 * k->ncand);
    if (OMPI_SUCCESS == rc)
        choose_winner(k);
    else
        k->winner = 0;
    k->state = DECIDED;
    keep_learned(k, comm);
    if (mca_coll_loom_component.verbose >= 2) {
        char range[64];
        class_range(k->size_class, range, sizeof(range));
        opal_output(mca_coll_loom_component.output, "coll:loom: autotune on %s (rank %d): %s %s bytes%s: %s (by %s)",
                    comm->c_name, ompi_comm_rank(comm), loom_coll_name(k->coll), range,
                    k->commutative ? "" : " (non-commutative)",
                    NULL != k->cand[k->winner] ? loom_algorithm_name(k->cand[k->winner]) : "fallback",
                    k->by_interval ? "intervals" : "durations");
    }
    return rc;
}

void loom_autotune_module_fini(mca_coll_loom_module_t *module)
{
    loom_tune_table_t *t = module->tune;
    for (int i = 0; NULL != t && i < t->n; ++i) free(t->classes[i]);
    free(t);
    module->tune = NULL;
}

/* A size class's bytes as a rule's range. */
static void class_range(int cls, char *buf, size_t size)
{
    if (cls <= 1)
        snprintf(buf, size, "%d", cls);
    else
        snprintf(buf, size, "%llu-%llu", (1ULL << (cls - 2)) + 1, 1ULL << (cls - 1));
}

static char *save_path; /* coll_loom_autotune_save, copied at open: Open MPI frees its own */

void loom_autotune_open(void)
{
    const char *p = mca_coll_loom_component.autotune_save;
    save_path = NULL != p && '\0' != p[0] ? strdup(p) : NULL;
}

void loom_autotune_finalize(int rank0)
{
    if (0 == nlearned || !rank0) goto done;
    const char *path = save_path;
    FILE *f = NULL != path && '\0' != path[0] ? fopen(path, "w") : NULL;
    if (NULL != path && '\0' != path[0] && NULL == f)
        opal_output(0, "coll:loom: autotune: cannot write %s", path);
    if (NULL != f)
        fprintf(f, "loom-rules 1\n# Written by coll_loom_autotune of loom %s.\n"
                   "# Learned by coll_loom_autotune on the machine it ran on: per collective, size class\n"
                   "# and communicator size, the fastest candidate, timed on the application's own calls (the\n"
                   "# slowest rank's median, microseconds, of the intervals from one call's run to the next\n"
                   "# call's entry where they came back to back, else of their durations). Load with\n"
                   "# --mca coll_loom_rules %s\n",
                mca_coll_loom_component.version, path);
    for (int i = 0; i < nlearned; ++i) {
        const learned_t *l = &learned[i];
        char range[64], times[512];
        class_range(l->size_class, range, sizeof(range));
        size_t used = 0;
        times[0] = '\0';
        for (int j = 0; j < l->ncand && used < sizeof(times); ++j)
            used += (size_t)snprintf(times + used, sizeof(times) - used, "%s%s %.2f", j ? ", " : "", l->names[j],
                                     l->agreed[j] / 1000.0);
        if (NULL != f)
            fprintf(f, "%-22s %-6d %-22s %-20s%s # %s: %s\n", loom_coll_name(l->coll), l->comm_size, range,
                    l->names[l->winner], l->commutative ? "" : " commutative=no",
                    l->by_interval ? "intervals" : "durations", times);
        if (mca_coll_loom_component.verbose >= 1)
            opal_output(mca_coll_loom_component.output,
                        "coll:loom: autotune learned on %s (%d ranks): %s %s bytes: %s (%s: %s)", l->comm_name,
                        l->comm_size, loom_coll_name(l->coll), range, l->names[l->winner],
                        l->by_interval ? "intervals" : "durations", times);
    }
    if (NULL != f && 0 != fclose(f)) opal_output(0, "coll:loom: autotune: error writing %s", path);
done:
    free(save_path);
    save_path = NULL;
    free(learned);
    learned = NULL;
    nlearned = learned_cap = 0;
}
