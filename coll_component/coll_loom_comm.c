/*
 * What loom knows of a communicator beyond its module, made on first use: the rule tables
 * narrowed to it (mca_coll_loom_rules) and where its ranks run (mca_coll_loom_topology), from
 * every rank's host name and the place each process published in the modex when the component
 * opened (mca_coll_loom_publish_place): no message, and the same on every rank.
 */
#include "coll_loom.h"

#include "ompi/mca/coll/base/base.h"
#include "ompi/proc/proc.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/util/proc.h"

#include <stdlib.h>
#include <string.h>

/* Every rank's host name, from Open MPI's modex: the same on every rank. Free with
 * free_host_names; NULL if out of memory. */
static void free_host_names(char **hosts, int size)
{
    for (int i = 0; NULL != hosts && i < size; ++i) free(hosts[i]);
    free(hosts);
}

static char *cached_hostname(ompi_proc_t *proc);

static char **host_names(struct ompi_communicator_t *comm)
{
    const int size = ompi_comm_size(comm);
    char **hosts = calloc((size_t)size, sizeof(*hosts));
    for (int i = 0; NULL != hosts && i < size; ++i) {
        hosts[i] = cached_hostname(ompi_comm_peer_lookup(comm, i));
        if (NULL == hosts[i]) {
            free_host_names(hosts, size);
            return NULL;
        }
    }
    return hosts;
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
        all_local = NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
    }
    if (all_local) {
        m->rules = loom_rules_resolve_shape(size, 1, size);
    } else {
        char **hosts = host_names(comm);
        if (NULL == hosts) return NULL;
        m->rules = loom_rules_resolve(size, (const char *const *)hosts);
        free_host_names(hosts, size);
    }
    return m->rules;
}

/* Every process's place in its node (package, NUMA node, core: loom_topology_local_place)
 * goes into Open MPI's modex once, when the component opens, before MPI_Init's modex
 * exchange. A communicator's layout is then made from its ranks' records without any message:
 * every rank reads the same records, so all make the same layout, on a communicator of any
 * origin (no parent to derive it from, no gather whose timing ranks would have to agree on). */
#define LOOM_PLACE_KEY "loom.place"

void mca_coll_loom_publish_place(void)
{
    /* Only in an MPI process being initialised: ompi_info opens components too, without
     * PMIx (and must not load hwloc's topology for nothing). */
    if (!loom_ompi_initializing()) return;
    int32_t place[3];
    int mine[3];
    loom_topology_local_place(opal_hwloc_topology, mine);
    for (int i = 0; i < 3; ++i) place[i] = mine[i];
    const int rc = loom_ompi_modex_put(LOOM_PLACE_KEY, place, sizeof place);
    if (OPAL_SUCCESS != rc)
        opal_output_verbose(1, mca_coll_loom_component.output,
                            "coll:loom: could not publish this process's place (error %d): ranks of "
                            "its node will be ordered by rank",
                            rc);
}

/* Every process's place, looked up once per job (by vpid, for the processes of this job) rather
 * than once per communicator: the modex lookup costs a PMIx_Get, and Open MPI 5.0's PMIx kept
 * memory for each (comm-cycles-np3-ucx measured 2 MiB over 9,500 communicators whose ring
 * asked for the topology). */
typedef struct {
    int known;
    int place[3];
    char *hostname; /* NULL until asked for */
} loom_cached_place_t;
static loom_cached_place_t *place_cache;
static size_t place_cache_size;
static opal_mutex_t place_lock;

void mca_coll_loom_places_init(void) { OBJ_CONSTRUCT(&place_lock, opal_mutex_t); }

void mca_coll_loom_places_fini(void)
{
    for (size_t i = 0; i < place_cache_size; ++i) free(place_cache[i].hostname);
    free(place_cache);
    place_cache = NULL;
    place_cache_size = 0;
    OBJ_DESTRUCT(&place_lock);
}

static void lookup_place(ompi_proc_t *proc, int place[3]);

/* The cache entry of proc, a process of this job, with place_lock held; NULL for another job's
 * process (spawned: not cached) or if out of memory. */
static loom_cached_place_t *cache_entry(ompi_proc_t *proc)
{
    const ompi_proc_t *self = ompi_proc_local();
    if (NULL == self || proc->super.proc_name.jobid != self->super.proc_name.jobid) return NULL;
    const size_t vpid = (size_t)proc->super.proc_name.vpid;
    if (vpid >= place_cache_size) {
        const size_t grown = vpid + 1 > 2 * place_cache_size ? vpid + 1 : 2 * place_cache_size;
        loom_cached_place_t *bigger = realloc(place_cache, grown * sizeof(*bigger));
        if (NULL != bigger) {
            memset(bigger + place_cache_size, 0, (grown - place_cache_size) * sizeof(*bigger));
            place_cache = bigger;
            place_cache_size = grown;
        }
    }
    return vpid < place_cache_size ? &place_cache[vpid] : NULL;
}

/* proc's host name, malloc'd (free it), from the cache; NULL if out of memory. */
static char *cached_hostname(ompi_proc_t *proc)
{
    if (NULL == proc) return loom_ompi_hostname(proc);
    OPAL_THREAD_LOCK(&place_lock);
    loom_cached_place_t *cached = cache_entry(proc);
    if (NULL != cached && NULL == cached->hostname) cached->hostname = loom_ompi_hostname(proc);
    char *name = NULL != cached && NULL != cached->hostname ? strdup(cached->hostname) : NULL;
    OPAL_THREAD_UNLOCK(&place_lock);
    return NULL != name ? name : loom_ompi_hostname(proc);
}

/* proc's published place into place[0..2]; -1s where it published none. */
static void place_of(ompi_proc_t *proc, int place[3])
{
    place[0] = place[1] = place[2] = -1;
    if (NULL == proc) return;
    OPAL_THREAD_LOCK(&place_lock);
    loom_cached_place_t *cached = cache_entry(proc);
    if (NULL != cached && cached->known) {
        memcpy(place, cached->place, sizeof(cached->place));
    } else {
        lookup_place(proc, place);
        if (NULL != cached) {
            memcpy(cached->place, place, sizeof(cached->place));
            cached->known = 1;
        }
    }
    OPAL_THREAD_UNLOCK(&place_lock);
}

static void lookup_place(ompi_proc_t *proc, int place[3])
{
    void *data = NULL;
    size_t size = 0;
    const int rc = loom_ompi_modex_get(proc, LOOM_PLACE_KEY, &data, &size);
    if (OPAL_SUCCESS == rc && 3 * sizeof(int32_t) == size) {
        int32_t values[3];
        memcpy(values, data, sizeof values);
        for (int i = 0; i < 3; ++i) place[i] = values[i];
    }
    free(data);
}

int mca_coll_loom_topology(struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    if (NULL != m->topology) return OMPI_SUCCESS;
    const int size = ompi_comm_size(comm);
    int *places = malloc(3 * (size_t)size * sizeof(int));
    char **hosts = host_names(comm);
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (NULL != places && NULL != hosts) {
        for (int i = 0; i < size; ++i) place_of(ompi_comm_peer_lookup(comm, i), places + 3 * i);
        m->topology = loom_topology_create(size, (const char *const *)hosts, places);
        if (NULL != m->topology) rc = OMPI_SUCCESS;
    }
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

