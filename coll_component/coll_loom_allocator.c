/*
 * The C library's allocator, left as Open MPI's own collectives would have left it.
 *
 * glibc's malloc adapts: a block above its mmap threshold (128 KiB at first) is mapped afresh
 * and unmapped on free, and freeing such a block raises the threshold to its size (and the
 * heap's trim threshold to twice that, up to 32 MiB). Open MPI's reductions (tuned, libnbc)
 * malloc and free temporary buffers of about the message's size on every call, so in a job
 * without loom the first large one raises the thresholds, and every later call of the process
 * that allocates as much finds heap memory already mapped. When loom serves that first large
 * reduction itself (from its segment or buffers it keeps), nothing raises them: a reduction loom
 * then hands on pays a fresh mapping, and its page faults, on every call. Measured (issue 45,
 * tools/lab/RESULTS.md): Open MPI's reduce of 512 KiB on 3 ranks, after allreduces of 128
 * KiB-1 MiB, took 83 us in a job without loom and 250 us in a loom job handing it on; with
 * the thresholds fixed high (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) both took 83.
 *
 * So when loom serves a reduction of a size no call of the process has reached, it allocates
 * and frees one block of that size, as Open MPI's algorithm would have: the thresholds move as
 * they would have without loom, no further. Once per new largest size, on the full decision
 * path only (a repeat has its original's size): one mmap and munmap.
 */
#include "coll_loom_report.h"

#include <stdlib.h>

/* glibc's defaults: the threshold it starts at, and the largest it raises it to. */
enum { kThresholdStart = 128 << 10, kThresholdMax = 32 << 20 };

static size_t largest; /* the largest size done so far (racy under MPI_THREAD_MULTIPLE: harmless) */

void loom_allocate_as_open_mpi(const loom_call_t *call, struct ompi_communicator_t *comm)
{
    if (!loom_coll_reduces(call->coll) || !mca_coll_loom_component.allocator_like_open_mpi) return;
    size_t bytes = loom_message_bytes(call, ompi_comm_size(comm));
    if (bytes < kThresholdStart) return;
    if (bytes > kThresholdMax - 4096) bytes = kThresholdMax - 4096; /* glibc raises up to the maximum */
    if (bytes <= largest) return;
    largest = bytes;
    void *volatile block = malloc(bytes); /* volatile: the compiler may not drop the pair */
    free(block);
}
