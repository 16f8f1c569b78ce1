/*
 * cma_bandwidth: how fast this machine copies between two processes with Linux Cross Memory
 * Attach (process_vm_readv, what loom's cma algorithms and Open MPI's vader use) against a
 * memcpy inside one process, at several total sizes and piece sizes (one system call per
 * piece). On the development VM CMA moved about half of memcpy's bytes per second, which
 * bounds what single-copy collectives can reach there (tools/lab/RESULTS.md, "Single copy").
 *
 *   cc -O2 -o /tmp/cma-bandwidth tools/lab/cma_bandwidth.c && /tmp/cma-bandwidth
 *
 * The reader is a child of the process it reads (allowed under kernel.yama.ptrace_scope 1);
 * "refused" means this machine does not allow CMA at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    const size_t max = (size_t)16 << 20;
    char *src = malloc(max), *dst = malloc(max);
    if (NULL == src || NULL == dst) return 1;
    memset(src, 1, max);
    memset(dst, 0, max);
    const pid_t owner = getpid();
    const pid_t reader = fork();
    if (reader < 0) return 1;
    if (reader > 0) { /* the owner: its memory is read until the reader is done */
        int status = 0;
        waitpid(reader, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    printf("%10s %10s %12s %10s %12s %10s\n", "total", "piece", "cma us", "cma GB/s", "memcpy us", "GB/s");
    for (size_t total = (size_t)64 << 10; total <= max; total *= 16) {
        for (size_t piece = (size_t)16 << 10; piece <= total; piece *= 16) {
            const int iterations = (int)(((size_t)256 << 20) / total);
            double t0 = now();
            for (int i = 0; i < iterations; ++i)
                for (size_t off = 0; off < total; off += piece) {
                    struct iovec local = {dst + off, piece}, remote = {src + off, piece};
                    if (process_vm_readv(owner, &local, 1, &remote, 1, 0) != (ssize_t)piece) {
                        printf("refused: process_vm_readv: %s\n", strerror(errno));
                        return 2;
                    }
                }
            const double cma = (now() - t0) / iterations;
            t0 = now();
            for (int i = 0; i < iterations; ++i) {
                memcpy(dst, src, total);
                __asm__ volatile("" : : "r"(dst) : "memory");
            }
            const double copy = (now() - t0) / iterations;
            printf("%10zu %10zu %12.2f %10.2f %12.2f %10.2f\n", total, piece, cma * 1e6, (double)total / cma / 1e9,
                   copy * 1e6, (double)total / copy / 1e9);
        }
    }
    return 0;
}
