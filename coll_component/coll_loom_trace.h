/*
 * The timeline (coll_loom_trace): one event per collective call on each rank, kept in a bounded
 * buffer and written at MPI_Finalize as Chrome trace-event JSON (coll_loom_trace.c). Private to
 * coll_component/.
 *
 * Off, it costs nothing: the entry points that record are other functions, installed in the
 * module's slots only when coll_loom_trace names a directory (coll_loom_entry.c), and the notes
 * that fill an event in (what served a call, or why it was handed on) are behind the branch the
 * verbose output already takes (mca_coll_loom_component.noting).
 */
#ifndef COLL_LOOM_TRACE_H
#define COLL_LOOM_TRACE_H

#include "coll_loom.h"

BEGIN_C_DECLS

/* One call. Times are CLOCK_REALTIME nanoseconds (loom-trace merge aligns the ranks' clocks). */
typedef struct loom_trace_event {
    long long start_ns, end_ns; /* end_ns 0: not ended (a request still running at finalize) */
    unsigned long long comm_id; /* loom_ompi_comm_id: the same on every rank of the communicator */
    unsigned long long bytes;   /* loom's message size (message_bytes' definition) */
    const void *comm;           /* the communicator, to match the notes while the call runs */
    const char *algorithm;      /* what served it (a registry name), or NULL */
    /* Its options, as the core call had them: formatted when the file is written
     * (loom_choice_options), not per call. */
    const void *chosen, *leaders;
    size_t segment_bytes, buffer_bytes;
    int comm_size;
    int comm_leader;         /* loom_ompi_comm_leader: with comm_id, names the communicator */
    unsigned char kind;      /* loom_kind_t */
    unsigned char coll;      /* loom_coll_t */
    unsigned char handed_on; /* 1: handed to the previous component */
    unsigned char untimed;   /* 1: its end is the call's return, not its completion (a non-blocking
                                call handed on: the next component's request completes it) */
    unsigned char start;     /* 1: an MPI_Start of a persistent request */
    unsigned char radix;     /* the k-nomial radix (2-16; 0: none), in a byte: an event stays 264 */
    unsigned short requests; /* linear alltoallv's window (0: none; LOOM_TRACE_ALL_REQUESTS: every peer
                                at once, or a window too large for the field) */
    char comm_name[32];
    char rule[40]; /* the rule that chose it (file:line), or "" */
    char why[96];  /* handed on: why */
} loom_trace_event_t;
#define LOOM_TRACE_ALL_REQUESTS 0xffff

/* A traced entry point's record of its call: the event (NULL if the buffer is full) and the
 * event of the call this one is nested in (a component below calling back), restored after. */
typedef struct loom_trace_call {
    loom_trace_event_t *event, *outer;
} loom_trace_call_t;

/* Component open and close: the buffer made (if coll_loom_trace names a directory), and the
 * rank's file written. */
void loom_trace_open(void);
void loom_trace_close(void);
/* 1 if the timeline is on (its buffer made). */
int loom_trace_on(void);

/* A traced entry point: the event begun for mpi (kind, collective, arguments) on comm, and
 * made the thread's current one, which the notes below fill in. */
void loom_trace_enter(loom_trace_call_t *t, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm);
/* ... and ended when the call returns, unless request_ends_it (mca_coll_loom_request_trace took
 * it: loom's request ends it when it completes). made_request: the call made a request (a
 * non-blocking call handed on: the next component's request completes it, untimed). */
void loom_trace_leave(loom_trace_call_t *t, int request_ends_it, int made_request);

/* The notes (coll_loom_report.c): a blocking call served by algorithm, or any call handed on,
 * written into the thread's current event if it is that call's. */
void loom_trace_served(const loom_call_t *call, struct ompi_communicator_t *comm, const char *algorithm,
                       const char *rule);
void loom_trace_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm, const char *why);

/* A request's own events (coll_loom_request_progress.c): a persistent request's start begins one
 * like its init's (from), and a request's completion ends its event with what served it. */
loom_trace_event_t *loom_trace_begin_start(const loom_trace_event_t *from);
void loom_trace_complete(loom_trace_event_t *event, const loom_call_t *call, const char *algorithm, const char *rule);

/* Attaches event (NULL: dropped) to request if it is loom's: a running non-blocking one's
 * completion ends it, a persistent one's starts take events like it
 * (coll_loom_request_progress.c). 1 if the request will end the event, or has ended it (completed
 * inside the call); 0 if the caller ends it (not loom's request; a persistent init). */
int mca_coll_loom_request_trace(ompi_request_t *request, loom_trace_event_t *event);

END_C_DECLS

#endif /* COLL_LOOM_TRACE_H */
