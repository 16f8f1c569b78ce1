/* How the links of tools/emucluster carry traffic that is not a ping-pong (issue 59): per message
 * size, the median over 7 timed runs (each the slowest rank's mean over several repetitions) of
 *   oneway           rank 0 sends, rank 1 receives (the others wait)
 *   exchange         ranks 0 and 1 send each other the same size at once (Irecv, Isend, Waitall)
 *   shift            every rank sends to rank + 1 and receives from rank - 1 (a ring's step;
 *                    at np 2 the same as exchange)
 *   oneway-seg64K    oneway in segments of at most 64 KiB, all posted at once
 *   exchange-seg64K  exchange in such segments
 * Prints "PATTERN BYTES MICROSECONDS GB/s-per-direction" on rank 0. tools/dev/tcp-duplex-probe
 * builds it and runs it on emulated clusters. What it found (ob1 behind a 1 Gbit/s tbf limit: the
 * two directions of one connection slow each other down from a few hundred KiB) is loom-sim's
 * inter_exchange_bandwidth_GBps (tools/sim/model.hpp). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 7
#define MAX_BYTES (4u << 20)
#define SEGMENT 65536u

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One repetition of `pattern` with `m` bytes. */
static void once(int pattern, size_t m, int rank, int size, char *out, char *in)
{
    MPI_Request req[2 * (MAX_BYTES / SEGMENT) + 2];
    int n = 0;
    if (pattern == 0) {
        if (rank == 0) MPI_Send(out, (int)m, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        if (rank == 1) MPI_Recv(in, (int)m, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    if (pattern == 1 && rank < 2) {
        MPI_Irecv(in, (int)m, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(out, (int)m, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, &req[n++]);
    } else if (pattern == 2) {
        MPI_Irecv(in, (int)m, MPI_BYTE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(out, (int)m, MPI_BYTE, (rank + 1) % size, 0, MPI_COMM_WORLD, &req[n++]);
    } else if (pattern >= 3 && rank < 2) {
        const int both = pattern == 4, peer = 1 - rank;
        for (size_t at = 0; at < m; at += SEGMENT) {
            const int len = (int)(m - at < SEGMENT ? m - at : SEGMENT), tag = (int)(at / SEGMENT);
            if (both || rank == 1) MPI_Irecv(in + at, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[n++]);
            if (both || rank == 0) MPI_Isend(out + at, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[n++]);
        }
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 1024, 16384, 65536, 262144, 1048576, 4194304};
    static const char *names[] = {"oneway", "exchange", "shift", "oneway-seg64K", "exchange-seg64K"};
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "tcp-duplex: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *out = malloc(MAX_BYTES), *in = malloc(MAX_BYTES);
    memset(out, 1, MAX_BYTES);
    memset(in, 0, MAX_BYTES);
    for (int p = 0; p < 5; ++p)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
            const size_t m = sizes[s];
            const int iters = m >= 1048576 ? 2 : m >= 65536 ? 8 : 200;
            double t[REPS];
            once(p, m, rank, size, out, in); /* warm-up */
            for (int r = 0; r < REPS; ++r) {
                MPI_Barrier(MPI_COMM_WORLD);
                const double t0 = MPI_Wtime();
                for (int i = 0; i < iters; ++i) once(p, m, rank, size, out, in);
                double mine = (MPI_Wtime() - t0) / iters, slowest;
                MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                t[r] = slowest;
            }
            qsort(t, REPS, sizeof t[0], compare);
            if (rank == 0)
                printf("%-16s %8zu B %10.1f us %8.3f GB/s\n", names[p], m, t[REPS / 2] * 1e6, m / t[REPS / 2] / 1e9);
        }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
