/*
 * The timeline (coll_loom_trace.h): events in one buffer per process, written at MPI_Finalize as
 * Chrome trace-event JSON, one file per rank: DIR/loom-trace.<job>.<rank>.json, loadable in
 * Perfetto (ui.perfetto.dev) or chrome://tracing as it is; tools/loom-trace merges, sums up and
 * plots a job's files.
 *
 * Bound: coll_loom_trace_max_events events per process (264 bytes each, allocated once with
 * calloc, so pages are touched only as events are written); calls beyond it are counted as
 * dropped, said in the file and on stderr at finalize. Cost on: two clock reads (vDSO) and the
 * event's fields per call, about 0.2 us (tools/lab/RESULTS.md "The timeline's cost").
 */
#include "coll_loom_trace.h"

#include "coll_loom_layouts.h"
#include "coll_loom_report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static loom_trace_event_t *events;
static size_t capacity;
static char *directory; /* coll_loom_trace's value, copied: Open MPI frees its own before close */
/* The size coll_loom_trace_max_events' help and this file's header promise. */
_Static_assert(sizeof(loom_trace_event_t) == 264, "a trace event is 264 bytes");

/* coll_loom_segment_size, _pat_buffer_size, _knomial_radix, _alltoallv_max_requests at open */
static size_t segment_size, buffer_size, radix, requests;
static size_t used;                  /* taken slots (atomic); may exceed capacity: those are dropped */
static __thread loom_trace_event_t *current; /* the thread's traced call now */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void copy_text(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; NULL != src && '\0' != src[i] && i + 1 < size; ++i) dst[i] = src[i];
    dst[i] = '\0';
}

/* A rule's source ("FILE:LINE") keeps its end where it is too long: "..." and the last
 * characters, so the file's name and the line survive a long directory. */
static void copy_tail(char *dst, size_t size, const char *src)
{
    const size_t n = NULL != src ? strlen(src) : 0;
    if (n < size) {
        copy_text(dst, size, src);
        return;
    }
    memcpy(dst, "...", 3);
    memcpy(dst + 3, src + n - (size - 4), size - 4);
    dst[size - 1] = '\0';
}

void loom_trace_open(void)
{
    const char *dir = mca_coll_loom_component.trace_dir;
    if (NULL == dir || '\0' == dir[0]) return;
    capacity = mca_coll_loom_component.trace_max_events > 0 ? (size_t)mca_coll_loom_component.trace_max_events : 0;
    events = capacity > 0 ? calloc(capacity, sizeof(*events)) : NULL;
    if (NULL == events && capacity > 0) {
        opal_output(0, "coll:loom: trace: no memory for %zu events (coll_loom_trace_max_events); nothing is traced",
                    capacity);
        capacity = 0;
    }
    used = 0;
    segment_size = mca_coll_loom_component.segment_size;
    buffer_size = mca_coll_loom_component.pat_buffer_size;
    radix = mca_coll_loom_component.knomial_radix;
    requests = mca_coll_loom_component.alltoallv_max_requests;
    if (NULL != events && NULL == (directory = strdup(dir))) {
        free(events);
        events = NULL;
        capacity = 0;
    }
}

int loom_trace_on(void) { return NULL != events; }

/* A free slot, or NULL (counted as dropped) if the buffer is full. */
static loom_trace_event_t *take(void)
{
    const size_t i = __atomic_fetch_add(&used, 1, __ATOMIC_RELAXED);
    if (i >= capacity) return NULL;
    loom_trace_event_t *e = &events[i];
    /* What may stay unset (the rest is set by whoever takes it). */
    e->end_ns = 0;
    e->algorithm = NULL;
    e->handed_on = e->untimed = e->start = 0;
    e->rule[0] = e->why[0] = '\0';
    return e;
}

static void identify(loom_trace_event_t *e, loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm)
{
    e->kind = (unsigned char)kind;
    e->coll = (unsigned char)coll;
    e->comm = comm;
    e->comm_id = loom_ompi_comm_id(comm);
    e->comm_leader = loom_ompi_comm_leader(comm);
    e->comm_size = ompi_comm_size(comm);
    memcpy(e->comm_name, comm->c_name, sizeof(e->comm_name) - 1); /* c_name: MPI_MAX_OBJECT_NAME bytes */
    e->comm_name[sizeof(e->comm_name) - 1] = '\0';
}

void loom_trace_enter(loom_trace_call_t *t, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm)
{
    t->outer = current;
    t->event = take();
    current = t->event;
    if (NULL == t->event) return;
    identify(t->event, mpi->kind, mpi->coll, comm);
    t->event->bytes = loom_layout_of(mpi->coll)->mpi_bytes(mpi, ompi_comm_size(comm), ompi_comm_rank(comm));
    t->event->start_ns = now_ns();
}

void loom_trace_leave(loom_trace_call_t *t, int request_ends_it, int made_request)
{
    const long long end = now_ns();
    current = t->outer;
    loom_trace_event_t *e = t->event;
    if (NULL == e || request_ends_it) return;
    e->end_ns = end;
    if (LOOM_NONBLOCKING == e->kind && made_request && e->handed_on) e->untimed = 1;
}

static int is_current(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm)
{
    return NULL != current && current->kind == kind && current->coll == coll && current->comm == comm;
}

static void set_served(loom_trace_event_t *e, const loom_call_t *call, const char *algorithm, const char *rule)
{
    e->algorithm = algorithm;
    copy_tail(e->rule, sizeof(e->rule), rule);
    e->chosen = NULL != call ? call->chosen : NULL;
    e->leaders = NULL != call ? call->leaders : NULL;
    e->segment_bytes = NULL != call ? call->segment_bytes : 0;
    e->buffer_bytes = NULL != call ? call->buffer_bytes : 0;
    e->radix = (unsigned char)(NULL != call ? call->radix : 0);
    const size_t window = NULL != call ? call->max_requests : 0;
    e->requests = (unsigned short)(window < LOOM_TRACE_ALL_REQUESTS ? window : LOOM_TRACE_ALL_REQUESTS);
}

void loom_trace_served(const loom_call_t *call, struct ompi_communicator_t *comm, const char *algorithm,
                       const char *rule)
{
    if (is_current(LOOM_BLOCKING, call->coll, comm)) set_served(current, call, algorithm, rule);
}

void loom_trace_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm, const char *why)
{
    if (!is_current(kind, coll, comm)) return;
    current->handed_on = 1;
    copy_text(current->why, sizeof(current->why), why);
}

loom_trace_event_t *loom_trace_begin_start(const loom_trace_event_t *from)
{
    loom_trace_event_t *e = take(); /* from NULL: the init's event was dropped, so is this one */
    if (NULL == e || NULL == from) return NULL;
    e->kind = LOOM_PERSISTENT;
    e->start = 1;
    e->coll = from->coll;
    e->comm = from->comm;
    e->comm_id = from->comm_id;
    e->comm_leader = from->comm_leader;
    e->comm_size = from->comm_size;
    e->bytes = from->bytes;
    memcpy(e->comm_name, from->comm_name, sizeof(e->comm_name));
    e->start_ns = now_ns();
    return e;
}

void loom_trace_complete(loom_trace_event_t *e, const loom_call_t *call, const char *algorithm, const char *rule)
{
    e->end_ns = now_ns();
    if (NULL != algorithm) set_served(e, call, algorithm, rule);
}

/* ---- the file ---- */

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; '\0' != *s; ++s) {
        const unsigned char c = (unsigned char)*s;
        if ('"' == c || '\\' == c)
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Microseconds since base, with nanoseconds. */
static void put_us(FILE *f, long long ns)
{
    fprintf(f, "%lld.%03lld", ns / 1000, ns % 1000);
}

/* mkdir -p: every missing directory of path. 0, or -1 with errno. */
static int make_directories(const char *path)
{
    char buf[4096];
    const size_t n = strlen(path);
    if (n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; ++i) {
        if ('/' != buf[i] && '\0' != buf[i]) continue;
        const char keep = buf[i];
        buf[i] = '\0';
        if (0 != mkdir(buf, 0777) && EEXIST != errno) return -1;
        buf[i] = keep;
    }
    return 0;
}

static const char *const kind_names[LOOM_KIND_COUNT] = {"blocking", "nonblocking", "persistent"};

void loom_trace_close(void)
{
    if (NULL == events) return;
    const size_t taken = __atomic_load_n(&used, __ATOMIC_RELAXED);
    const size_t n = taken < capacity ? taken : capacity;
    const unsigned long long dropped = taken - n;
    const int rank = loom_ompi_world_rank();
    char host[256] = "";
    (void)gethostname(host, sizeof(host) - 1);
    const char *dir = directory;
    if (0 != make_directories(dir))
        opal_output(0, "coll:loom: trace: cannot make the directory %s: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof(path), "%s/loom-trace.%u.%d.json", dir, loom_ompi_job_id(), rank);
    FILE *f = fopen(path, "w");
    if (NULL == f) {
        opal_output(0, "coll:loom: trace: cannot write %s: %s", path, strerror(errno));
    } else {
        /* Times from the start of the UTC day of the first event, so that microseconds keep their
         * nanoseconds in a JSON number; every rank's base is in its otherData. */
        const long long day = 86400LL * 1000000000LL;
        const long long base = n > 0 ? events[0].start_ns / day * day : 0;
        /* A track (tid) per communicator, in the order this rank first used them. */
        unsigned long long tracks[256];
        int ntracks = 0;
        fprintf(f, "{\"traceEvents\":[\n");
        fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d (%s)\"}}", rank, rank,
                host);
        for (size_t i = 0; i < n; ++i) {
            const loom_trace_event_t *e = &events[i];
            int tid = 0;
            while (tid < ntracks && tracks[tid] != e->comm_id) ++tid;
            if (tid == ntracks && ntracks < 256) {
                tracks[ntracks++] = e->comm_id; /* one rank is in one communicator of an id */
                fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", rank, tid);
                char name[96];
                snprintf(name, sizeof(name), "%s (%d ranks)", e->comm_name, e->comm_size);
                put_string(f, name);
                fprintf(f, "}}");
            }
            char form[64];
            fprintf(f, ",\n{\"name\":\"%s%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":",
                    loom_form_name((loom_kind_t)e->kind, (loom_coll_t)e->coll, form, sizeof(form)),
                    e->start ? " start" : "", e->start ? "start" : kind_names[e->kind], rank, tid);
            put_us(f, e->start_ns - base);
            fprintf(f, ",\"dur\":");
            put_us(f, e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0);
            fprintf(f, ",\"args\":{\"collective\":\"%s\",\"form\":\"%s\",\"comm\":\"%llx.%d\",\"comm_name\":",
                    loom_coll_name((loom_coll_t)e->coll), e->start ? "start" : kind_names[e->kind], e->comm_id,
                    e->comm_leader);
            put_string(f, e->comm_name);
            fprintf(f, ",\"comm_size\":%d,\"bytes\":%llu", e->comm_size, e->bytes);
            if (e->handed_on) {
                fprintf(f, ",\"handed_on\":");
                put_string(f, e->why);
            } else if (NULL != e->algorithm) {
                fprintf(f, ",\"algorithm\":");
                put_string(f, e->algorithm);
                fprintf(f, ",\"rule\":");
                put_string(f, e->rule);
                /* The parameters as they are now: the call had them unless MPI_T changed them. */
                loom_call_t call = {.coll = (loom_coll_t)e->coll};
                call.chosen = e->chosen;
                call.leaders = e->leaders;
                call.segment_bytes = e->segment_bytes;
                call.buffer_bytes = e->buffer_bytes;
                call.radix = e->radix;
                call.max_requests = LOOM_TRACE_ALL_REQUESTS == e->requests ? SIZE_MAX : e->requests;
                char options[96];
                loom_choice_options(&call, segment_size, buffer_size, radix, requests, options, sizeof(options));
                fprintf(f, ",\"options\":");
                put_string(f, options);
            }
            if (e->untimed) fprintf(f, ",\"untimed\":\"completed in the next component's request\"");
            if (0 == e->end_ns) fprintf(f, ",\"ended\":false");
            fprintf(f, "}}");
        }
        fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"loom_trace\":1,\"rank\":%d,\"job\":%u,\"host\":",
                rank, loom_ompi_job_id());
        put_string(f, host);
        fprintf(f, ",\"clock\":\"CLOCK_REALTIME\",\"time_base_ns\":%lld,\"events\":%zu,\"dropped\":%llu,"
                   "\"max_events\":%zu,\"loom_version\":",
                base, n, dropped, capacity);
        /* Which loom wrote the file: coll_loom_version ("0.2.0 (commit ...), built for Open MPI ..."). */
        put_string(f, mca_coll_loom_component.version);
        fprintf(f, "}}\n");
        if (0 != fclose(f)) opal_output(0, "coll:loom: trace: error writing %s", path);
    }
    if (dropped > 0)
        opal_output(0,
                    "coll:loom: trace: rank %d dropped %llu of %llu events (coll_loom_trace_max_events %zu); %s "
                    "holds the first %zu",
                    rank, dropped, (unsigned long long)taken, capacity, path, n);
    free(events);
    events = NULL;
    capacity = 0;
    free(directory);
    directory = NULL;
}
