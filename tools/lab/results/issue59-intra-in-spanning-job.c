// issue 59, round 5 (tools/sim/EMUCLUSTER.md): one-way latency of a ping-pong between ranks 0 and 1 of
// one emulated host while the job's other ranks wait in MPI_Barrier. Run, for HOSTS x SLOTS and PML:
//   mpicc -O2 -o /tmp/intra issue59-intra-in-spanning-job.c
//   name=$(tools/emucluster up --hosts HOSTS --slots SLOTS)
//   flock /tmp/loom-measure.lock tools/emucluster mpirun --name $name -np HOSTS*SLOTS --mca pml PML [--mca pml_ucx_tls any --mca pml_ucx_devices any] /tmp/intra
// intra-node ping-pong between ranks 0 and 1 while the others wait in a barrier-like recv
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
  int sizes[] = {8, 1024};
  char buf[1024];
  for (int si = 0; si < 2; ++si) {
    int m = sizes[si];
    for (int rep = 0; rep < 5; ++rep) {
      MPI_Barrier(MPI_COMM_WORLD);
      int n = 2000;
      double t0 = MPI_Wtime();
      if (r == 0) { for (int i = 0; i < n; ++i) { MPI_Send(buf, m, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, m, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);} }
      else if (r == 1) { for (int i = 0; i < n; ++i) { MPI_Recv(buf, m, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, m, MPI_BYTE, 0, 0, MPI_COMM_WORLD);} }
      double t = (MPI_Wtime() - t0) / n / 2 * 1e6;
      if (r == 0) printf("np %d bytes %d one-way %.2f us\n", p, m, t);
    }
  }
  MPI_Finalize();
}
