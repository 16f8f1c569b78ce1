/*
 * A reproducer of an Open MPI 5.0.7 han bug, without loom: MPI_Allgather sending 2n MPI_INT
 * and receiving n instances of a vector type {int, hole, int} (the same type signature, a
 * different layout, which MPI allows) returns wrong data under han across nodes; tuned alone
 * is right. loom's han test (emucluster-check --han) leaves allgather out on 5.0 because of it.
 *
 *   tools/emucluster mpirun --name RUN -np 4 --mca coll han,tuned,basic,libnbc,self BUILD/tools/han-allgather-types
 * prints per rank the number of wrong elements, and exits 1 if any.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype vec, rvec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 3 * sizeof(int), &rvec);
    MPI_Type_commit(&rvec);
    enum { N = 5 };
    int send[2 * N];
    int *recv = malloc(3 * N * (size_t) size * sizeof(int));
    for (int i = 0; i < 2 * N; ++i) send[i] = 1000 * rank + i;
    for (int i = 0; i < 3 * N * size; ++i) recv[i] = -1;
    MPI_Allgather(send, 2 * N, MPI_INT, recv, N, rvec, MPI_COMM_WORLD);
    int bad = 0;
    for (int r = 0; r < size; ++r)
        for (int e = 0; e < N; ++e) {
            const int *x = &recv[(r * N + e) * 3];
            bad += x[0] != 1000 * r + 2 * e || x[2] != 1000 * r + 2 * e + 1 || x[1] != -1;
        }
    printf("han-allgather-types: rank %d: %d wrong elements of %d\n", rank, bad, N * size);
    free(recv);
    MPI_Type_free(&rvec);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return bad == 0 ? 0 : 1;
}
