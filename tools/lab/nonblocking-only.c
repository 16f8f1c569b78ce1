/* An application that uses only non-blocking collectives on its own communicator (a dup of
 * MPI_COMM_WORLD, on which it makes no blocking call): per size, the median over 5 repeats of
 * the mean time of MPI_Iallreduce (doubles, SUM) + MPI_Wait, after 200 warm-up calls; the
 * slowest rank's time counts. Prints whether loom is enabled on MPI_COMM_WORLD (loom_state.h),
 * then "bytes microseconds" lines on rank 0. loom-bench makes
 * the shared segment with a blocking call before it times; this shows what an application that
 * never makes one gets (issue 21: its non-blocking calls set the segment up themselves).
 *
 *   mpicc -O2 -I tools/common -o nonblocking-only tools/lab/nonblocking-only.c
 *   tools/lab/nonblocking-only-ab NP ROUNDS ./nonblocking-only   # loom, loom without a
 *                                                # segment (coll_loom_shm_max_mib 0), libnbc
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "loom_state.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const enum loom_state state = loom_state_on(MPI_COMM_WORLD);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) printf("# %s\n", loom_state_text(state));
    const int sizes[] = {8, 1024, 65536};
    double *in = calloc(65536, 1), *out = calloc(65536, 1);
    for (int s = 0; s < 3; ++s) {
        const int n = sizes[s] / 8, iters = sizes[s] > 4096 ? 500 : 5000;
        MPI_Request r;
        for (int i = 0; i < 200; ++i) {
            MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        double t[5];
        for (int rep = 0; rep < 5; ++rep) {
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; ++i) {
                MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
            double dt = (MPI_Wtime() - t0) / iters * 1e6, mx;
            MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            t[rep] = mx;
        }
        qsort(t, 5, sizeof t[0], cmp);
        if (rank == 0) printf("%d %.3f\n", sizes[s], t[2]);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
