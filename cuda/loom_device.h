/*
 * Device buffers, as the Open MPI glue sees them (cuda/device.cpp): which memory a pointer
 * is, and the copier loom_run stages device buffers through. Plain C, no CUDA headers: the
 * plugin has no link-time CUDA dependency and works on a node without GPU or driver.
 */
#ifndef LOOM_DEVICE_H
#define LOOM_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LOOM_MEMORY_CUDA if ptr is CUDA device (or managed) memory, else LOOM_MEMORY_HOST. The
 * first call dlopens libcuda.so.1 (never cuInit); without it, or when the driver reports no
 * usable device, every pointer is host memory and later calls cost one load and a branch. */
int loom_device_memory_kind(const void *ptr);

/* 1 once loom knows that no pointer of this process is device memory (no CUDA driver, or
 * one that reports no usable device; never with LOOM_TEST_FAKE_DEVICE): a caller may skip
 * loom_device_memory_kind then (two calls were 40 instructions of a call's path). Read it
 * with __atomic_load_n(&loom_device_host_only, __ATOMIC_RELAXED). */
extern int loom_device_host_only;

/* The staging copier for device buffers (a loom::AsyncCopier, for loom_call_t.copier), or
 * NULL with *why if loom cannot serve device buffers here (libloom_cuda.so missing, no
 * device): then the caller hands the call on. The first failure is also printed once. */
void *loom_device_copier(const char **why);

/* Synchronous copy between memory of any kinds (0, or a non-zero code with a message
 * printed); needs loom_device_copier() to have succeeded. */
int loom_device_copy(void *dst, const void *src, size_t bytes);

/* Segment size of the staging pipeline: LOOM_CUDA_SEGMENT (bytes, K/M suffixes) or 0 for
 * the default. It must be the same on every rank. */
size_t loom_device_staging_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_DEVICE_H */
