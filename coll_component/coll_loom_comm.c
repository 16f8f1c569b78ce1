/*
 * What loom knows of a communicator beyond its module, made on first use: the rule tables
 * narrowed to it (mca_coll_loom_rules) and where its ranks run (mca_coll_loom_topology), from
 * every rank's host name and the record each process published in the modex when the component
 * opened (mca_coll_loom_publish): no message, and the same on every rank.
 *
 * A rank whose host Open MPI cannot tell is a node of its own ("unknown host of process J.V"):
 * grouping such ranks under one name would make loom's node-aware algorithms treat ranks on
 * different machines as neighbours.
 */
#include "coll_loom.h"

#include "ompi/mca/coll/base/base.h"
#include "ompi/proc/proc.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/util/proc.h"

#include <stdlib.h>
#include <string.h>

/* How loom names a rank's host that Open MPI cannot tell (each such rank gets a name of its own). */
#define LOOM_UNKNOWN_HOST "unknown host"

/* Every rank's host name, from Open MPI's modex: the same on every rank. Free with
 * free_host_names; NULL if out of memory. */
static void free_host_names(char **hosts, int size)
{
    for (int i = 0; NULL != hosts && i < size; ++i) free(hosts[i]);
    free(hosts);
}

static char *cached_hostname(ompi_proc_t *proc, int *unknown);

/* *unknown: how many of them Open MPI could not tell (then each is a node of its own). */
static char **host_names(struct ompi_communicator_t *comm, int *unknown)
{
    const int size = ompi_comm_size(comm);
    char **hosts = calloc((size_t)size, sizeof(*hosts));
    *unknown = 0;
    for (int i = 0; NULL != hosts && i < size; ++i) {
        int not_known = 0;
        hosts[i] = cached_hostname(ompi_comm_peer_lookup(comm, i), &not_known);
        *unknown += not_known;
        if (NULL == hosts[i]) {
            free_host_names(hosts, size);
            return NULL;
        }
    }
    return hosts;
}

/* Says (rank 0 of comm, coll_loom_verbose >= 1) which ranks' hosts are unknown, once per
 * communicator (the rules and the topology both look at the hosts): their node-aware
 * algorithms see each as a node of its own. */
static void say_unknown_hosts(struct ompi_communicator_t *comm, mca_coll_loom_module_t *m, char **hosts, int unknown)
{
    if (0 == unknown || m->said_unknown_hosts || mca_coll_loom_component.verbose < 1 || 0 != ompi_comm_rank(comm))
        return;
    m->said_unknown_hosts = 1;
    char ranks[256] = "";
    size_t used = 0;
    for (int i = 0; i < ompi_comm_size(comm) && used < sizeof ranks - 16; ++i)
        if (0 == strncmp(hosts[i], LOOM_UNKNOWN_HOST, strlen(LOOM_UNKNOWN_HOST)))
            used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d", used ? ", " : "", i);
    opal_output(mca_coll_loom_component.output,
                "coll:loom: the host of rank%s %s of %s is unknown to Open MPI: each such rank is taken as a "
                "node of its own",
                unknown > 1 ? "s" : "", ranks, comm->c_name);
}

/* 1 if the test parameter coll_loom_test_unknown_hosts names proc's MPI_COMM_WORLD rank. */
static int test_unknown_host(const ompi_proc_t *proc)
{
    const char *list = mca_coll_loom_component.test_unknown_hosts;
    if (NULL == list || NULL == proc) return 0;
    const unsigned long vpid = (unsigned long)proc->super.proc_name.vpid;
    for (const char *p = list; '\0' != *p;) {
        char *end = NULL;
        const unsigned long v = strtoul(p, &end, 10);
        if (end == p) break;
        if (v == vpid) return 1;
        p = end + strspn(end, ", ");
    }
    return 0;
}

/* The rules narrowed to this communicator, looked up on its first call (a communicator loom
 * never serves costs nothing). Open MPI's locality flags say cheaply whether every rank shares
 * this node, the common case; only otherwise are the host names compared. Every rank narrows
 * alike: the flags and the host names come from the job's modex. */
void *mca_coll_loom_rules(struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    if (NULL != m->rules) return m->rules;
    const int size = ompi_comm_size(comm);
    int all_local = 1;
    for (int i = 0; i < size && all_local; ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        all_local = NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags) && !test_unknown_host(proc);
    }
    if (all_local) {
        m->rules = loom_rules_resolve_shape(size, 1, size);
    } else {
        int unknown = 0;
        char **hosts = host_names(comm, &unknown);
        if (NULL == hosts) return NULL;
        m->rules = loom_rules_resolve(size, (const char *const *)hosts);
        if (NULL != m->rules) say_unknown_hosts(comm, m, hosts, unknown);
        free_host_names(hosts, size);
    }
    return m->rules;
}

/* Every process's record (coll_loom.h, loom_record_t) goes into Open MPI's modex once, when the
 * component opens, before MPI_Init's modex exchange. A communicator's layout, and whether its
 * ranks agree on their rules, are then made from its ranks' records without any message: every
 * rank reads the same records, so all decide alike, on a communicator of any origin (no parent
 * to derive it from, no gather whose timing ranks would have to agree on). */
#define LOOM_RECORD_KEY "loom.record"
#define LOOM_ABOUT_KEY "loom.about"

/* The record as published: fixed-size fields, the same layout in every build of this format. */
typedef struct {
    int32_t place[3];
    uint32_t format; /* LOOM_RECORD_FORMAT */
    uint64_t fingerprint;
} loom_published_record_t;
#define LOOM_RECORD_FORMAT 1u

void mca_coll_loom_publish(uint64_t fingerprint, const char *about)
{
    /* Only in an MPI process being initialised: ompi_info opens components too, without
     * PMIx (and must not load hwloc's topology for nothing). */
    if (!loom_ompi_initializing()) return;
    loom_published_record_t record = {{-1, -1, -1}, LOOM_RECORD_FORMAT, fingerprint};
    int mine[3];
    loom_topology_local_place(opal_hwloc_topology, mine);
    for (int i = 0; i < 3; ++i) record.place[i] = mine[i];
    int rc = loom_ompi_modex_put(LOOM_RECORD_KEY, &record, sizeof record);
    if (OPAL_SUCCESS == rc && NULL != about) rc = loom_ompi_modex_put(LOOM_ABOUT_KEY, about, strlen(about) + 1);
    if (OPAL_SUCCESS != rc)
        opal_output(0,
                    "coll:loom: could not publish this process's record (error %d): its peers will find no loom "
                    "taking part here, and loom stands aside on every communicator with this rank",
                    rc);
}

/* Every process's record and host, looked up once per job (by vpid, for the processes of this
 * job) rather than once per communicator: the modex lookup costs a PMIx_Get, and Open MPI 5.0's
 * PMIx kept memory for each (comm-cycles-np3-ucx measured 2 MiB over 9,500 communicators whose
 * ring asked for the topology). */
typedef struct {
    int known;
    loom_record_t record;
    char *hostname; /* NULL until asked for */
} loom_cached_record_t;
static loom_cached_record_t *record_cache;
static size_t record_cache_size;
static opal_mutex_t record_lock;

void mca_coll_loom_places_init(void) { OBJ_CONSTRUCT(&record_lock, opal_mutex_t); }

void mca_coll_loom_places_fini(void)
{
    for (size_t i = 0; i < record_cache_size; ++i) free(record_cache[i].hostname);
    free(record_cache);
    record_cache = NULL;
    record_cache_size = 0;
    OBJ_DESTRUCT(&record_lock);
}

/* The cache entry of proc, a process of this job, with record_lock held; NULL for another job's
 * process (spawned: not cached) or if out of memory. */
static loom_cached_record_t *cache_entry(ompi_proc_t *proc)
{
    const ompi_proc_t *self = ompi_proc_local();
    if (NULL == self || proc->super.proc_name.jobid != self->super.proc_name.jobid) return NULL;
    const size_t vpid = (size_t)proc->super.proc_name.vpid;
    if (vpid >= record_cache_size) {
        const size_t grown = vpid + 1 > 2 * record_cache_size ? vpid + 1 : 2 * record_cache_size;
        loom_cached_record_t *bigger = realloc(record_cache, grown * sizeof(*bigger));
        if (NULL != bigger) {
            memset(bigger + record_cache_size, 0, (grown - record_cache_size) * sizeof(*bigger));
            record_cache = bigger;
            record_cache_size = grown;
        }
    }
    return vpid < record_cache_size ? &record_cache[vpid] : NULL;
}

/* What a process whose host Open MPI cannot tell is called: a name of its own, so that it is
 * a node of its own. */
static char *unknown_host_name(const ompi_proc_t *proc)
{
    char name[96];
    if (NULL == proc)
        snprintf(name, sizeof name, LOOM_UNKNOWN_HOST " (no process)");
    else
        snprintf(name, sizeof name, LOOM_UNKNOWN_HOST " of process %lu.%lu", (unsigned long)proc->super.proc_name.jobid,
                 (unsigned long)proc->super.proc_name.vpid);
    return strdup(name);
}

/* proc's host name, malloc'd (free it), from the cache, or a name of its own where Open MPI does
 * not know it (*unknown then 1); NULL if out of memory. */
static char *cached_hostname(ompi_proc_t *proc, int *unknown)
{
    char *name = NULL;
    if (NULL != proc && !test_unknown_host(proc)) {
        OPAL_THREAD_LOCK(&record_lock);
        loom_cached_record_t *cached = cache_entry(proc);
        if (NULL != cached && NULL == cached->hostname) cached->hostname = loom_ompi_hostname(proc);
        name = NULL != cached ? (NULL != cached->hostname ? strdup(cached->hostname) : NULL) : loom_ompi_hostname(proc);
        OPAL_THREAD_UNLOCK(&record_lock);
    }
    *unknown = NULL == name;
    return NULL != name ? name : unknown_host_name(proc);
}

/* proc's published record, looked up in the modex; present 0 if it published none. */
static void lookup_record(ompi_proc_t *proc, loom_record_t *record)
{
    void *data = NULL;
    size_t size = 0;
    loom_published_record_t published;
    memset(record, 0, sizeof *record);
    record->place[0] = record->place[1] = record->place[2] = -1;
    const int rc = loom_ompi_modex_get(proc, LOOM_RECORD_KEY, &data, &size);
    if (OPAL_SUCCESS == rc && sizeof published == size) {
        memcpy(&published, data, sizeof published);
        if (LOOM_RECORD_FORMAT == published.format) {
            record->present = 1;
            for (int i = 0; i < 3; ++i) record->place[i] = published.place[i];
            record->fingerprint = published.fingerprint;
        }
    }
    free(data);
}

void mca_coll_loom_record_of(ompi_proc_t *proc, loom_record_t *record)
{
    if (NULL == proc) {
        memset(record, 0, sizeof *record);
        record->place[0] = record->place[1] = record->place[2] = -1;
        return;
    }
    OPAL_THREAD_LOCK(&record_lock);
    loom_cached_record_t *cached = cache_entry(proc);
    if (NULL != cached && cached->known) {
        *record = cached->record;
    } else {
        lookup_record(proc, record);
        if (NULL != cached) {
            cached->record = *record;
            cached->known = 1;
        }
    }
    OPAL_THREAD_UNLOCK(&record_lock);
}

char *mca_coll_loom_about_of(ompi_proc_t *proc)
{
    void *data = NULL;
    size_t size = 0;
    if (NULL == proc || OPAL_SUCCESS != loom_ompi_modex_get(proc, LOOM_ABOUT_KEY, &data, &size) || 0 == size) {
        free(data);
        return NULL;
    }
    ((char *)data)[size - 1] = '\0';
    return data;
}

int mca_coll_loom_topology(struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    if (NULL != m->topology) return OMPI_SUCCESS;
    const int size = ompi_comm_size(comm);
    int *places = malloc(3 * (size_t)size * sizeof(int));
    int unknown = 0;
    char **hosts = host_names(comm, &unknown);
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (NULL != places && NULL != hosts) {
        for (int i = 0; i < size; ++i) {
            loom_record_t record;
            mca_coll_loom_record_of(ompi_comm_peer_lookup(comm, i), &record);
            memcpy(places + 3 * i, record.place, sizeof record.place);
        }
        m->topology = loom_topology_create(size, (const char *const *)hosts, places);
        if (NULL != m->topology) rc = OMPI_SUCCESS;
    }
    if (OMPI_SUCCESS == rc) say_unknown_hosts(comm, m, hosts, unknown);
    free(places);
    free_host_names(hosts, size);
    if (OMPI_SUCCESS == rc && mca_coll_loom_component.verbose >= 1 && 0 == ompi_comm_rank(comm)) {
        char *text = loom_topology_describe(m->topology);
        for (char *line = text, *end; NULL != line && '\0' != *line; line = end + 1) {
            end = strchr(line, '\n');
            *end = '\0';
            opal_output(mca_coll_loom_component.output, "coll:loom: topology of %s: %s", comm->c_name, line);
        }
        free(text);
    }
    return rc;
}
