/* Whether loom serves a job, asked from inside the MPI program through the standard MPI_T
 * interface; plain C, so that the C programs among the tools can ask too (loom_mpi_t.hpp, which
 * the C++ ones include, includes it).
 *
 * A job that compares loom with Open MPI runs with Open MPI's default selection (no --mca coll
 * list), so nothing fails when loom is absent or stands aside (coll_loom_priority -1, an Open
 * MPI it was not built for): the program has to say which it was, and the tool that ran it
 * checks the line. loom_state_on() answers collectively over a communicator, the same on every
 * rank; loom_state_text() is the line's text, which tools match (tools/bench/loom_jobs.py):
 *   # loom enabled on MPI_COMM_WORLD
 *   # loom loaded but not enabled on MPI_COMM_WORLD
 *   # loom loaded (it does not count the communicators it is enabled on)
 *   # loom not loaded
 * (the last but one from a loom older than coll_loom_communicators_enabled). */
#ifndef LOOM_TOOLS_LOOM_STATE_H
#define LOOM_TOOLS_LOOM_STATE_H

#include <mpi.h>

#include <stddef.h> /* NULL */

/* Ordered from least to most: a communicator's ranks that disagree get the least. */
enum loom_state { LOOM_NOT_LOADED, LOOM_NOT_ENABLED, LOOM_LOADED, LOOM_ENABLED };

/* Whether loom is enabled on `comm`, on every rank of it (collective over `comm`).
 * coll_loom_communicators_enabled (an MPI_T level) is the number of communicators loom is
 * enabled on in the process now; this duplicates `comm` and reads whether the copy added one:
 * it does exactly when loom is enabled on `comm` (loom decides from the communicator's ranks,
 * kind and size and the job's settings, which the copy shares). */
static inline enum loom_state loom_state_on(MPI_Comm comm)
{
    int provided, index, count, counted = 0;
    enum loom_state state = LOOM_NOT_LOADED;
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle handle = MPI_T_PVAR_HANDLE_NULL;
    unsigned long long before = 0, after = 0;
    const int mpi_t = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    if (mpi_t && MPI_T_pvar_get_index("coll_loom_allreduce_served", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS) {
        state = LOOM_LOADED;
        counted = MPI_T_pvar_get_index("coll_loom_communicators_enabled", MPI_T_PVAR_CLASS_LEVEL, &index) ==
                      MPI_SUCCESS &&
                  MPI_T_pvar_session_create(&session) == MPI_SUCCESS &&
                  MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count) == MPI_SUCCESS &&
                  MPI_T_pvar_read(session, handle, &before) == MPI_SUCCESS;
    }
    MPI_Comm copy;
    MPI_Comm_dup(comm, &copy);
    if (counted && MPI_T_pvar_read(session, handle, &after) == MPI_SUCCESS) /* before the copy goes */
        state = after > before ? LOOM_ENABLED : LOOM_NOT_ENABLED;
    if (handle != MPI_T_PVAR_HANDLE_NULL) MPI_T_pvar_handle_free(session, &handle);
    if (session != MPI_T_PVAR_SESSION_NULL) MPI_T_pvar_session_free(&session);
    if (mpi_t) MPI_T_finalize();
    /* Agreed on the copy, so that `comm` sees no call of this function's but the copy's making
     * (tests count a job's calls on MPI_COMM_WORLD). */
    int mine = (int)state, least = 0;
    MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, copy);
    MPI_Comm_free(&copy);
    return (enum loom_state)least;
}

/* The line a program prints for `state` on MPI_COMM_WORLD, without its "# ". */
static inline const char *loom_state_text(enum loom_state state)
{
    switch (state) {
    case LOOM_ENABLED: return "loom enabled on MPI_COMM_WORLD";
    case LOOM_NOT_ENABLED: return "loom loaded but not enabled on MPI_COMM_WORLD";
    case LOOM_LOADED: return "loom loaded (it does not count the communicators it is enabled on)";
    case LOOM_NOT_LOADED: break;
    }
    return "loom not loaded";
}

#endif
