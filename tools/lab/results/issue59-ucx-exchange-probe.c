#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static double run(int mode, char *s, char *r, int n, int peer, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    MPI_Request q[2];
    switch (mode) {
    case 0: MPI_Irecv(r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[0]); MPI_Isend(s, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[1]); MPI_Waitall(2, q, MPI_STATUSES_IGNORE); break;
    case 1: MPI_Isend(s, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[1]); MPI_Irecv(r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[0]); MPI_Waitall(2, q, MPI_STATUSES_IGNORE); break;
    case 2: MPI_Irecv(r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[0]); MPI_Send(s, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD); MPI_Wait(&q[0], MPI_STATUS_IGNORE); break;
    case 4: { int done=0; MPI_Irecv(r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[0]); MPI_Isend(s, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[1]); while(!done) MPI_Testall(2, q, &done, MPI_STATUSES_IGNORE); break; }
    case 5: MPI_Isend(s, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[1]); MPI_Recv(r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Wait(&q[1], MPI_STATUS_IGNORE); break;
    case 6: MPI_Sendrecv(s, n, MPI_BYTE, peer, 7, r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); break;
    case 7: MPI_Irecv(r, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[0]); MPI_Issend(s, n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[1]); MPI_Waitall(2, q, MPI_STATUSES_IGNORE); break;
    case 3: MPI_Allgather(s, n, MPI_BYTE, r - 0, n, MPI_BYTE, MPI_COMM_WORLD); break;
    }
  }
  return (MPI_Wtime() - t0) / iters * 1e6;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int n = argc > 1 ? atoi(argv[1]) : 524288;
  char *s = malloc(2 * n), *r = malloc(2 * n); memset(s, 1, 2 * n); memset(r, 0, 2*n);
  const char *names[] = {"irecv+isend", "isend+irecv", "irecv+send", "allgather","irecv+isend+testall","isend+recv","sendrecv","irecv+issend"};
  int modes[] = {0, 2, 3, 7}; if (argc > 2) { int k = atoi(argv[2]); for (int i = 0; i < 4; i++) modes[i] = k; }
  double t[4][11];
  for (int rep = 0; rep < 11; rep++)
    for (int m = 0; m < 4; m++) t[m][rep] = run(modes[(m + rep) % 4], s, r, n, 1 - rank, 50);
  /* rotate back: t[m][rep] holds mode (m+rep)%4 */
  double u[4][11];
  for (int rep = 0; rep < 11; rep++) for (int m = 0; m < 4; m++) u[(m + rep) % 4][rep] = t[m][rep];
  for (int m = 0; m < 4; m++) {
    for (int a = 0; a < 11; a++) for (int b = a + 1; b < 11; b++) if (u[m][b] < u[m][a]) { double x = u[m][a]; u[m][a] = u[m][b]; u[m][b] = x; }
    if (rank == 0) printf("%d %-14s median %8.1f  min %8.1f max %8.1f us\n", n, names[modes[m]], u[m][5], u[m][0], u[m][10]);
  }
  MPI_Finalize();
}
