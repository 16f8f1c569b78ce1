/*
 * Whether loom takes part on a communicator: its ranks must decide every call alike, so they
 * must hold the same effective rule table - the user's and the site's rule files as each process
 * loaded them, the built-in table, and every parameter that changes a choice. A rank with a stale
 * /etc/loom/site.rules, a per-rank wrapper exporting another OMPI_MCA_coll_loom_rules, or a
 * module loaded on some nodes only would otherwise make ranks choose different algorithms for
 * one call: a hang or a wrong result.
 *
 * Each process publishes a 64-bit fingerprint of its table (take_part.hpp) in the record it
 * puts into Open MPI's modex when the component opens (coll_loom_comm.c): the exchange loom
 * already makes for its topology, so agreeing costs no message. When Open MPI asks loom to take
 * part in a communicator (comm_query), loom compares the fingerprints of its ranks - from the
 * process's cache after the first look at each peer - and, if any differs or a rank published
 * none (no loom there, one built for another Open MPI, or coll_loom_priority < 0), stands aside
 * on that communicator: Open MPI's own components serve its every call, on every rank alike,
 * since every rank reads the same records. Rank 0 of the communicator says which ranks differ
 * and what each read (the "about" line each process published beside its record).
 *
 * Parameters changed through MPI_T after MPI_Init (the forced algorithms, segment sizes) are not
 * compared: MPI_T writes are per process, and like the collectives themselves must be made alike
 * on every rank (loom-bench and the tests do so).
 */
#include "coll_loom.h"

#include "loom_version.h"
#include "opal/mca/base/mca_base_var.h"
#include "ompi/proc/proc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A parameter that changes what serves a call: its name without coll_loom_, and its value. */
typedef struct {
    char name[48];
    char value[200];
} loom_setting_t;

#define LOOM_SETTINGS_MAX (LOOM_COLL_COUNT + 16)

static size_t add_text(loom_setting_t *s, size_t n, const char *name, const char *value)
{
    snprintf(s[n].name, sizeof s[n].name, "%s", name);
    snprintf(s[n].value, sizeof s[n].value, "%s", NULL != value ? value : "");
    return n + 1;
}
static size_t add_number(loom_setting_t *s, size_t n, const char *name, unsigned long long value)
{
    char text[32];
    snprintf(text, sizeof text, "%llu", value);
    return add_text(s, n, name, text);
}

/* Every parameter beyond the rule files that changes what serves a call, with its value. Not
 * here: what is local to a process and changes no choice (verbose, trace, fast_repeats, the
 * segment pool, the allocator, nonblocking_max), and what the segment's set-up agrees on among
 * the ranks itself: shm_refuse and single_copy (a rank that refuses a mechanism turns it off for
 * every rank; collectives-np3-ob1-cma-refused sets it on one rank). */
static size_t settings(loom_setting_t *s)
{
    const mca_coll_loom_component_t *c = &mca_coll_loom_component;
    size_t n = 0;
    for (int i = 0; i < LOOM_COLL_COUNT; ++i) {
        char name[48];
        snprintf(name, sizeof name, "%s_algorithm", loom_coll_name((loom_coll_t)i));
        n = add_text(s, n, name, c->forced[i]);
    }
    n = add_number(s, n, "segment_size", c->segment_size);
    n = add_number(s, n, "pat_buffer_size", c->pat_buffer_size);
    n = add_number(s, n, "knomial_radix", c->knomial_radix);
    n = add_number(s, n, "alltoallv_max_requests", c->alltoallv_max_requests);
    n = add_number(s, n, "shm_min_calls", (unsigned long long)c->shm_min_calls);
    n = add_number(s, n, "shm_max_mib", (unsigned long long)c->shm_max_mib);
    n = add_number(s, n, "shm_persistent_max", (unsigned long long)c->shm_persistent_max);
    n = add_number(s, n, "autotune", (unsigned long long)c->autotune);
    n = add_number(s, n, "autotune_trials", (unsigned long long)c->autotune_trials);
    n = add_number(s, n, "autotune_candidates", (unsigned long long)c->autotune_candidates);
    n = add_number(s, n, "autotune_margin", (unsigned long long)c->autotune_margin);
    n = add_number(s, n, "autotune_floor_ns", (unsigned long long)c->autotune_floor_ns);
    n = add_number(s, n, "autotune_max_classes", (unsigned long long)c->autotune_max_classes);
    return n;
}

/* Where coll_loom_NAME's value comes from, as ompi_info says it ("environment", "file
 * /etc/openmpi/openmpi-mca-params.conf"); NULL for its default. */
static const char *source_of(const char *name, char *buf, size_t size)
{
    const int index = mca_base_var_find("ompi", "coll", "loom", name);
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    const char *file = NULL;
    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, NULL, &source, &file)) return NULL;
    switch (source) {
    case MCA_BASE_VAR_SOURCE_DEFAULT: return NULL;
    case MCA_BASE_VAR_SOURCE_COMMAND_LINE: return "command line";
    case MCA_BASE_VAR_SOURCE_ENV: return "environment";
    case MCA_BASE_VAR_SOURCE_FILE: snprintf(buf, size, "file %s", NULL != file ? file : "?"); return buf;
    default: return "set by the program";
    }
}

/* A bounded text being written: append() never overruns, and drops what does not fit. */
typedef struct {
    char *text;
    size_t size, used;
} loom_text_t;
static void append(loom_text_t *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void append(loom_text_t *t, const char *format, ...)
{
    if (t->used >= t->size) return;
    va_list args;
    va_start(args, format);
    const int n = vsnprintf(t->text + t->used, t->size - t->used, format, args);
    va_end(args);
    if (n > 0) t->used = t->used + (size_t)n < t->size ? t->used + (size_t)n : t->size - 1;
}

/* "user rules /a.rules (3 rules, from the environment)", "site rules: none", "... (not used: FILE:0:0: error: ...)". */
static void describe_layer(loom_text_t *t, int layer)
{
    const mca_coll_loom_component_t *c = &mca_coll_loom_component;
    char from[300];
    const char *source = source_of(LOOM_RULES_USER == layer ? "rules" : "site_rules", from, sizeof from);
    append(t, "; %s rules: ", LOOM_RULES_USER == layer ? "user" : "site");
    if (NULL == c->rules_loaded[layer])
        append(t, "none%s", LOOM_RULES_SITE == layer && NULL == source ? " (no " LOOM_SITE_RULES ")" : "");
    else if (c->rules_errors[layer] > 0)
        append(t, "%s (not used: %s", c->rules_loaded[layer], c->rules_problem[layer]);
    else
        append(t, "%s (%zu rule%s", c->rules_loaded[layer], loom_rules_count(layer),
               1 == loom_rules_count(layer) ? "" : "s");
    if (NULL != c->rules_loaded[layer]) append(t, "%s%s)", NULL != source ? ", from the " : "", NULL != source ? source : "");
    else if (NULL != source) append(t, " (from the %s)", source);
}

void mca_coll_loom_agreement_publish(void)
{
    loom_setting_t *s = malloc(LOOM_SETTINGS_MAX * sizeof *s);
    const size_t n = NULL != s ? settings(s) : 0;
    /* The fingerprint's text: every setting, default or not. */
    size_t length = 1;
    for (size_t i = 0; i < n; ++i) length += strlen(s[i].name) + strlen(s[i].value) + 2;
    char *text = NULL != s ? malloc(length) : NULL;
    uint64_t fingerprint = 0;
    if (NULL != text) {
        loom_text_t t = {text, length, 0};
        text[0] = '\0';
        for (size_t i = 0; i < n; ++i) append(&t, "%s=%s\n", s[i].name, s[i].value);
        fingerprint = loom_rules_fingerprint(LOOM_VERSION_TEXT, text);
    }
    /* A process that takes part in no communicator publishes no fingerprint: its peers stand
     * aside wherever it is a rank. */
    if (mca_coll_loom_component.priority < 0) fingerprint = 0;
    mca_coll_loom_component.fingerprint = fingerprint;

    /* The about line: what a person needs to see why two ranks differ. */
    char about[2048];
    loom_text_t t = {about, sizeof about, 0};
    about[0] = '\0';
    append(&t, "%s", LOOM_VERSION_TEXT);
    describe_layer(&t, LOOM_RULES_USER);
    describe_layer(&t, LOOM_RULES_SITE);
    for (size_t i = 0; i < n; ++i) {
        char from[300];
        const char *source = source_of(s[i].name, from, sizeof from);
        if (NULL != source) append(&t, "; coll_loom_%s=%s (%s)", s[i].name, s[i].value, source);
    }
    if (mca_coll_loom_component.priority < 0)
        append(&t, "; coll_loom_priority=%d: loom takes part in nothing here", mca_coll_loom_component.priority);
    else if (0 == fingerprint)
        append(&t, "; no fingerprint (out of memory): loom takes part in nothing here");
    free(text);
    free(s);
    mca_coll_loom_publish(fingerprint, about);
}

/* "0-1, 4, 6-7": the ranks of comm whose key is `key` (up to the buffer's size). */
static void ranks_text(const uint64_t *keys, const int *present, int size, uint64_t key, int is_present, char *buf,
                       size_t bufsize)
{
    loom_text_t t = {buf, bufsize, 0};
    buf[0] = '\0';
    for (int i = 0; i < size; ++i) {
        if (keys[i] != key || present[i] != is_present) continue;
        int last = i;
        while (last + 1 < size && keys[last + 1] == key && present[last + 1] == is_present) ++last;
        append(&t, "%s%d", 0 == t.used ? "" : ", ", i);
        if (last > i) append(&t, "-%d", last);
        i = last;
    }
}

/* Rank 0 of comm: which ranks hold which table, and what each group read. The whole message
 * once per process; after that one line at coll_loom_verbose 1. */
static void say_disagreement(struct ompi_communicator_t *comm, const uint64_t *keys, const int *present)
{
    static int said;
    const int size = ompi_comm_size(comm);
    char name[MPI_MAX_OBJECT_NAME + 64];
    if ('\0' != comm->c_name[0])
        snprintf(name, sizeof name, "%s", comm->c_name);
    else
        snprintf(name, sizeof name, "a communicator of %d ranks", size);
    if (said) {
        opal_output_verbose(1, mca_coll_loom_component.output,
                            "coll:loom: the ranks of %s do not hold the same rules: loom stands aside on it", name);
        return;
    }
    said = 1;
    size_t bytes = 8192;
    char *message = malloc(bytes);
    if (NULL == message) return;
    loom_text_t t = {message, bytes, 0};
    append(&t,
           "coll:loom: the ranks of %s do not hold the same rule table, so loom stands aside on it (Open MPI's own "
           "components serve its every collective; results stay right). What each group of ranks read:",
           name);
    int groups = 0;
    for (int i = 0; i < size; ++i) {
        int seen = 0;
        for (int j = 0; j < i && !seen; ++j) seen = keys[j] == keys[i] && present[j] == present[i];
        if (seen) continue;
        if (++groups > 8) {
            append(&t, "\n  ... and more groups");
            break;
        }
        char ranks[512];
        ranks_text(keys, present, size, keys[i], present[i], ranks, sizeof ranks);
        char *about = present[i] ? mca_coll_loom_about_of(ompi_comm_peer_lookup(comm, i)) : NULL;
        append(&t, "\n  rank%s %s: %s", strpbrk(ranks, ",-") ? "s" : "", ranks,
               present[i] ? (NULL != about ? about : "(published no description)")
                          : "no loom taking part (not loaded there, built for another Open MPI release, or "
                            "left out with --mca coll ^loom)");
        free(about);
    }
    append(&t, "\nMake the rule files and coll_loom_* parameters the same for every rank (docs/install.md, "
               "\"Every rank the same rules\").");
    opal_output(0, "%s", message);
    free(message);
}

int mca_coll_loom_ranks_agree(struct ompi_communicator_t *comm)
{
    const int size = ompi_comm_size(comm);
    const uint64_t mine = mca_coll_loom_component.fingerprint;
    int agree = 0 != mine;
    for (int i = 0; i < size && agree; ++i) {
        loom_record_t record;
        mca_coll_loom_record_of(ompi_comm_peer_lookup(comm, i), &record);
        agree = record.present && record.fingerprint == mine;
    }
    if (agree || 0 != ompi_comm_rank(comm)) return agree;
    uint64_t *keys = malloc((size_t)size * sizeof *keys);
    int *present = malloc((size_t)size * sizeof *present);
    if (NULL != keys && NULL != present) {
        for (int i = 0; i < size; ++i) {
            loom_record_t record;
            mca_coll_loom_record_of(ompi_comm_peer_lookup(comm, i), &record);
            keys[i] = record.present ? record.fingerprint : 0;
            present[i] = record.present;
        }
        say_disagreement(comm, keys, present);
    }
    free(keys);
    free(present);
    return 0;
}
