/*
 * Everything in loom's glue that depends on the Open MPI version, behind one small
 * interface: the coll interface version and component type, the job's process names, the
 * modex, host names and aborting. The rest of coll_component/ uses only this and what the
 * supported versions share, so supporting another version means editing this header and
 * coll_loom_ompi.c, nowhere else.
 *
 *   Open MPI 4.1.x  coll type version 2.0.0, module struct 2.3.0 (has ft_event),  supported
 *                   OPAL's pmix framework, borrowed host names, opal/threads/mutex.h,
 *                   nbc request data.objs
 *   Open MPI 5.0.x  coll type version 2.4.0, module struct 2.4.0 (no ft_event;     supported
 *                   coll_agree/iagree, coll_module_disable, reduce_local and the
 *                   *_init slots), PMIx called directly, malloc'd host names,
 *                   opal/mca/threads/mutex.h, nbc request data.refcounted and release_arrays
 *   Open MPI 6.0.x  coll type version 3.0.0: every count a size_t, per-rank     supported
 *                   count and displacement arrays behind ompi_count_array_t /
 *                   ompi_disp_array_t (the MPI-4 `_c` calls share the slots), a
 *                   module installs its own functions (MCA_COLL_INSTALL_API) and
 *                   puts the previous ones back in coll_module_disable
 *
 * A component built for the wrong version loads and is silently ignored by Open MPI, so an
 * unsupported version must fail the build here, loudly.
 */
#ifndef COLL_LOOM_OMPI_H
#define COLL_LOOM_OMPI_H

#include "ompi_config.h"

#include "ompi/mca/coll/coll.h"

#include <stddef.h>

#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION >= 1
#include "opal/threads/mutex.h" /* opal_mutex_t: 5.0 moved it into its threads framework */
#define LOOM_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_2_0_0
#define LOOM_COMPONENT_DECLSPEC OMPI_MODULE_DECLSPEC
typedef mca_coll_base_component_2_0_0_t loom_coll_component_t;
#elif OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0
#include "opal/mca/threads/mutex.h"
#define LOOM_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_2_4_0
#define LOOM_COMPONENT_DECLSPEC OMPI_DECLSPEC
typedef mca_coll_base_component_2_4_0_t loom_coll_component_t;
#elif OMPI_MAJOR_VERSION == 6 && OMPI_MINOR_VERSION == 0
#include "opal/mca/threads/mutex.h"
#include "ompi/util/count_disp_array.h"
#define LOOM_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_3_0_0
#define LOOM_COMPONENT_DECLSPEC OMPI_DECLSPEC
typedef mca_coll_base_component_3_0_0_t loom_coll_component_t;
#else
#error "loom's glue supports Open MPI 4.1.x, 5.0.x and 6.0.x; see coll_component/coll_loom_ompi.h"
#endif

/* Whether comm->c_coll holds a reference on each slot's module: 4.1's and 5.0's framework
 * retains the module it installs and whoever replaces it releases the old one (5.0's han:
 * HAN_LOAD_FALLBACK_COLLECTIVE); 6.0's MCA_COLL_INSTALL_API counts nothing, the module list
 * does. loom's hand-on (LOOM_HAND_ON_ON_TOP) keeps the count the table keeps. */
#if OMPI_MAJOR_VERSION >= 6
#define LOOM_TABLE_HOLDS_MODULES 0
#else
#define LOOM_TABLE_HOLDS_MODULES 1
#endif

/* ---- Counts as the coll interface passes them ----
 * A count (loom_count_t), a per-rank count array (loom_count_array_t), a per-rank displacement array
 * in extents (loom_disp_array_t) and neighbor_alltoallw's displacements in bytes (loom_adisp_array_t).
 * 4.1 and 5.0 pass int and int arrays (MPI_Aint for the last); 6.0 passes size_t and tagged
 * handles that hold int or, for the MPI-4 large-count `_c` calls, size_t / MPI_Aint arrays. The
 * glue reads an array only through these accessors, which give 64-bit values on every version
 * (signed: 4.1's and 5.0's negative counts stay negative for the glue to refuse). */
#if OMPI_MAJOR_VERSION >= 6
typedef size_t loom_count_t;
typedef ompi_count_array_t loom_count_array_t;
typedef ompi_disp_array_t loom_disp_array_t;
typedef ompi_disp_array_t loom_adisp_array_t;
#define LOOM_COUNTS_NONE OMPI_COUNT_ARRAY_NULL
#define LOOM_DISPLS_NONE OMPI_DISP_ARRAY_NULL
static inline int loom_counts_given(loom_count_array_t a) { return NULL != ompi_count_array_ptr(a); }
static inline long long loom_count_at(loom_count_array_t a, size_t i) { return (long long)ompi_count_array_get(a, i); }
static inline int loom_displs_given(loom_disp_array_t a) { return NULL != ompi_disp_array_ptr(a); }
static inline ptrdiff_t loom_displ_at(loom_disp_array_t a, size_t i) { return ompi_disp_array_get(a, i); }
static inline ptrdiff_t loom_adispl_at(loom_adisp_array_t a, size_t i) { return ompi_disp_array_get(a, i); }
/* The bytes of one element of the array (what a copy of n entries needs: n times this). */
static inline size_t loom_counts_elem_bytes(loom_count_array_t a) { return ompi_count_array_is_64bit(a) ? sizeof(size_t) : sizeof(int); }
static inline size_t loom_displs_elem_bytes(loom_disp_array_t a) { return ompi_disp_array_is_64bit(a) ? sizeof(ptrdiff_t) : sizeof(int); }
static inline const void *loom_counts_data(loom_count_array_t a) { return ompi_count_array_ptr(a); }
static inline const void *loom_displs_data(loom_disp_array_t a) { return ompi_disp_array_ptr(a); }
/* The same kind of array over a copy of its entries at `data`. */
static inline loom_count_array_t loom_counts_over(loom_count_array_t a, const void *data)
{
    return ompi_count_array_is_64bit(a) ? ompi_count_array_create_c((const size_t *)data)
                                        : ompi_count_array_create((const int *)data);
}
static inline loom_disp_array_t loom_displs_over(loom_disp_array_t a, const void *data)
{
    return ompi_disp_array_is_64bit(a) ? ompi_disp_array_create_c((const ptrdiff_t *)data)
                                       : ompi_disp_array_create((const int *)data);
}
#define loom_adispls_given     loom_displs_given
#define loom_adispls_elem_bytes loom_displs_elem_bytes
#define loom_adispls_data      loom_displs_data
#define loom_adispls_over      loom_displs_over
#else
typedef int loom_count_t;
typedef const int *loom_count_array_t;
typedef const int *loom_disp_array_t;
typedef const MPI_Aint *loom_adisp_array_t;
#define LOOM_COUNTS_NONE NULL
#define LOOM_DISPLS_NONE NULL
static inline int loom_counts_given(loom_count_array_t a) { return NULL != a; }
static inline long long loom_count_at(loom_count_array_t a, size_t i) { return a[i]; }
static inline int loom_displs_given(loom_disp_array_t a) { return NULL != a; }
static inline ptrdiff_t loom_displ_at(loom_disp_array_t a, size_t i) { return a[i]; }
static inline ptrdiff_t loom_adispl_at(loom_adisp_array_t a, size_t i) { return (ptrdiff_t)a[i]; }
static inline size_t loom_counts_elem_bytes(loom_count_array_t a) { (void)a; return sizeof(int); }
static inline size_t loom_displs_elem_bytes(loom_disp_array_t a) { (void)a; return sizeof(int); }
static inline const void *loom_counts_data(loom_count_array_t a) { return a; }
static inline const void *loom_displs_data(loom_disp_array_t a) { return a; }
static inline loom_count_array_t loom_counts_over(loom_count_array_t a, const void *data) { (void)a; return (const int *)data; }
static inline loom_disp_array_t loom_displs_over(loom_disp_array_t a, const void *data) { (void)a; return (const int *)data; }
static inline int loom_adispls_given(loom_adisp_array_t a) { return NULL != a; }
static inline size_t loom_adispls_elem_bytes(loom_adisp_array_t a) { (void)a; return sizeof(MPI_Aint); }
static inline const void *loom_adispls_data(loom_adisp_array_t a) { return a; }
static inline loom_adisp_array_t loom_adispls_over(loom_adisp_array_t a, const void *data) { (void)a; return (const MPI_Aint *)data; }
#endif

/* The Open MPI version loom was built for, as "4.1.4": it must be the one that loads it. */
#define LOOM_OMPI_STR2(x) #x
#define LOOM_OMPI_STR(x)  LOOM_OMPI_STR2(x)
#define LOOM_OMPI_BUILT_FOR \
    LOOM_OMPI_STR(OMPI_MAJOR_VERSION) "." LOOM_OMPI_STR(OMPI_MINOR_VERSION) "." LOOM_OMPI_STR(OMPI_RELEASE_VERSION)

BEGIN_C_DECLS

/* 1 if the Open MPI this process runs in is the one loom was built for: the same release
 * (major.minor.release: MPI_Get_library_version's, or `library_version` where not NULL, the
 * test parameter coll_loom_test_library_version) and, for every Open MPI struct the glue uses,
 * the size its class records (a debug build or other configure options change them). Else 0
 * and `why` says what differs, e.g. "it was built for Open MPI 4.1.8 and this is Open MPI
 * 4.1.4". Reads only public functions and class records, so it is safe in any Open MPI. */
int loom_ompi_fits(const char *library_version, char *why, size_t size);

/* This process's rank in the job as its launcher exported it (OMPI_COMM_WORLD_RANK, PMIX_RANK,
 * PMI_RANK, SLURM_PROCID), for messages said once per job where Open MPI's own process name may
 * not be read (an Open MPI loom was not built for); -1 where none is set (ompi_info, a
 * singleton). */
int loom_ompi_launch_rank(void);

struct ompi_proc_t;

/* 1 in the job's first process (rank 0 of MPI_COMM_WORLD): messages said once per job. */
int loom_ompi_first_process(void);

/* 1 while MPI_Init runs in an MPI process with a modex (not in ompi_info, which opens
 * components too). */
int loom_ompi_initializing(void);

/* Publishes `size` bytes under `key` for every process of the job (during MPI_Init, before
 * its modex exchange). OPAL_SUCCESS or an error code. */
int loom_ompi_modex_put(const char *key, const void *data, size_t size);

/* What proc published under `key`: *data malloc'd (free it) and *size, or an error code. */
int loom_ompi_modex_get(struct ompi_proc_t *proc, const char *key, void **data, size_t *size);

/* proc's host name, malloc'd (free it); NULL if Open MPI does not know it (it says "unknown")
 * or out of memory. Every rank must group the ranks into nodes alike, or ranks disagree about
 * the topology and hang. Open MPI names its own process's host by gethostname() and every other
 * process's by the launcher's name (PMIx's PMIX_HOSTNAME), and the two differ where a node's
 * Slurm NodeName is not its host name (an alias, a short name beside a qualified one;
 * docs/slurm.md, "Node names"). So a process on this node (Open MPI's locality flags, which
 * come from the launcher too) is named as this process is, and this process by the launcher's
 * name for it where the launcher gives one (PMIx 4 does; PMIx 5 answers with gethostname()'s),
 * every other process by the launcher's name (Open MPI's own name for it): whatever the names,
 * the nodes they make are the launcher's. This node's name is asked of the launcher once per
 * process; Open MPI's own name serves only where the launcher gives none. */
char *loom_ompi_hostname(struct ompi_proc_t *proc);

/* Stops the job with `message` (a bad rule file under coll_loom_rules_strict). */
void loom_ompi_abort(const char *message);

/* Clears what the MPI layer keeps in a non-blocking collective request (the datatypes and ops
 * it retains; 5.0 also arrays), as the class's constructor does, for a request reused from a
 * free list. */
/* A communicator's id, the same on every one of its ranks (for traces): Open MPI 4.1's context
 * id, which its ranks agree on when the communicator is made; 5.0's extended context id (base
 * and sub-id), folded to 64 bits. */
struct ompi_communicator_t;
unsigned long long loom_ompi_comm_id(struct ompi_communicator_t *comm);
/* The MPI_COMM_WORLD rank of comm's rank 0: with the id, it tells apart communicators made by
 * one split, which share their context id. */
int loom_ompi_comm_leader(struct ompi_communicator_t *comm);
/* This process's job id and rank in MPI_COMM_WORLD (its process name). */
unsigned loom_ompi_job_id(void);
int loom_ompi_world_rank(void);

struct ompi_coll_base_nbc_request_t;
void loom_ompi_nbc_request_clear(struct ompi_coll_base_nbc_request_t *request);

/* The end of loom's module enable. Open MPI 4.1 and 5.0 copy a module's functions (its non-NULL
 * slots) into the communicator after enabling it, and this does nothing. 6.0 copies none: a module
 * installs its own (MCA_COLL_INSTALL_API) and puts the previous ones back in its
 * coll_module_disable. There this installs every non-NULL slot of module's collectives.def rows
 * (three forms) into comm, with module, and sets `disable` as its coll_module_disable. */
void loom_ompi_install(mca_coll_base_module_t *module, struct ompi_communicator_t *comm,
                       int (*disable)(mca_coll_base_module_t *module, struct ompi_communicator_t *comm));

END_C_DECLS

#endif /* COLL_LOOM_OMPI_H */
