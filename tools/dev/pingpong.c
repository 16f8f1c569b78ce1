/* MPI point-to-point ping-pong between ranks 0 and 1 (the other ranks wait): half the round trip,
 * in microseconds, per message size, the median of 5 timed runs. tools/dev/pingpong-compare
 * runs it in jobs with loom loaded and without, interleaved: whether loom's presence slows
 * point-to-point traffic (issue 45). Prints whether loom is enabled (loom_state.h, built with
 * -I tools/common), then "BYTES MICROSECONDS" per size on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_state.h"

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const enum loom_state state = loom_state_on(MPI_COMM_WORLD);
    if (rank == 0) printf("# %s\n", loom_state_text(state));
    const int sizes[] = {8, 1024, 65536, 1048576};
    char *buffer = malloc(1048576);
    memset(buffer, 1, 1048576);
    for (int s = 0; s < 4; ++s) {
        double runs[5];
        const int iterations = sizes[s] >= 65536 ? 200 : 5000;
        for (int r = 0; r < 5; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double start = MPI_Wtime();
            for (int i = 0; i < iterations; ++i) {
                if (rank == 0) {
                    MPI_Send(buffer, sizes[s], MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buffer, sizes[s], MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buffer, sizes[s], MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buffer, sizes[s], MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            runs[r] = (MPI_Wtime() - start) / iterations / 2 * 1e6;
        }
        qsort(runs, 5, sizeof runs[0], compare);
        if (rank == 0) printf("%d %.3f\n", sizes[s], runs[2]);
    }
    free(buffer);
    MPI_Finalize();
    return 0;
}
