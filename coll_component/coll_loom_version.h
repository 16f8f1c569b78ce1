/*
 * Everything that differs between Open MPI versions lives here, so supporting 5.0 means
 * editing this file (and the module struct initialisation it guards), nowhere else.
 *
 *   Open MPI 4.1.x  coll type version 2.0.0, module struct 2.3.0 (has ft_event)   supported
 *   Open MPI 5.0.x  coll type version 2.4.0, no ft_event, adds coll_agree/iagree  not yet
 *   Open MPI 6.x    coll type version 3.0.0, MCA_COLL_INSTALL_API                 not yet
 *
 * A component built for the wrong version loads and is silently ignored by Open MPI, so an
 * unsupported version must fail the build here, loudly.
 */
#ifndef COLL_LOOM_VERSION_H
#define COLL_LOOM_VERSION_H

#include "ompi_config.h"

#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION >= 1
#define LOOM_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define LOOM_MODULE_HAS_FT_EVENT 1
#else
#error "loom's glue supports Open MPI 4.1.x only; see coll_component/coll_loom_version.h"
#endif

#endif
