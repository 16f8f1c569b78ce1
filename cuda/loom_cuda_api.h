/*
 * The C interface of libloom_cuda.so, loom's CUDA library (cuda/loom_cuda.cu, built with
 * nvcc and the static CUDA runtime). The plugin never links against it: when it first sees a
 * device buffer it dlopens the library (cuda/device.cpp) and asks it for this table, so a node
 * without a GPU, a driver or the library still loads and runs loom on host buffers.
 *
 * Every function returns 0 on success or a CUDA runtime error code (cudaError_t as int), and
 * LOOM_CUDA_NO_KERNEL from reduce() for an (op, type) pair without a kernel. error_string()
 * describes a code. All copies use cudaMemcpyDefault (unified addressing), so any pointer
 * kind may be passed: device, pinned host or pageable host memory.
 *
 * Streams and events are opaque handles (cudaStream_t, cudaEvent_t).
 */
#ifndef LOOM_CUDA_API_H
#define LOOM_CUDA_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_CUDA_API_VERSION 1
enum { LOOM_CUDA_NO_KERNEL = -2001 };

/* Element types of the reduction kernels: loom_type_t's values (loom_c_api.h) for the types
 * MPI names, and two that MPI 3.1 has no predefined datatype for. */
enum { LOOM_CUDA_TYPE_HALF = 100, LOOM_CUDA_TYPE_BFLOAT16 = 101 };

typedef struct loom_cuda_api {
    int version; /* LOOM_CUDA_API_VERSION */
    const char *(*error_string)(int code);
    /* Number of usable devices (0 on a node without a GPU or driver) into *count. */
    int (*device_count)(int *count);

    int (*host_alloc)(void **ptr, size_t bytes); /* pinned (page-locked) host memory */
    int (*host_free)(void *ptr);
    int (*device_alloc)(void **ptr, size_t bytes);
    int (*device_free)(void *ptr);

    int (*stream_create)(void **stream); /* ordered after the legacy default stream's work */
    int (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream);
    int (*event_create)(void **event); /* timing disabled */
    int (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_synchronize)(void *event);

    /* Copies `bytes` bytes on `stream` (asynchronous for pinned host memory). */
    int (*copy_async)(void *dst, const void *src, size_t bytes, void *stream);
    /* Synchronous copy (on the legacy default stream). */
    int (*copy)(void *dst, const void *src, size_t bytes);

    /* inout[i] = in[i] op inout[i] for `count` elements on `stream`; `in` and `inout` must be
     * device (or managed) memory. op is a loom_op_t, type a loom_type_t or LOOM_CUDA_TYPE_*.
     * Integer SUM and PROD wrap modulo 2^bits, as loom's host kernels do. */
    int (*reduce)(int op, int type, const void *in, void *inout, size_t count, void *stream);
    /* 1 if reduce() has a kernel for (op, type). */
    int (*has_kernel)(int op, int type);
} loom_cuda_api_t;

/* The library's one exported symbol: its table if it speaks `version`, else NULL. */
const loom_cuda_api_t *loom_cuda_get_api(int version);
typedef const loom_cuda_api_t *(*loom_cuda_get_api_fn)(int version);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_CUDA_API_H */
