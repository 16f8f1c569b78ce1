// libloom_cuda.so: loom's reduction kernels and the few CUDA runtime calls the plugin needs,
// behind the C table of loom_cuda_api.h. Built with nvcc and the static CUDA runtime, so at
// run time it needs only the driver (libcuda.so.1). The plugin dlopens it when it first sees a
// device buffer (cuda/device.cpp); nothing else in loom includes a CUDA header.
//
// The kernels compute inout[i] = in[i] op inout[i] with one grid-stride loop per (op, type),
// made from one template: Op is a small functor, T the element type. Integer SUM and PROD are
// computed in the unsigned type of the same width, so they wrap modulo 2^bits (as loom's host
// kernels and MPI do) without signed-overflow undefined behaviour. Half and bfloat16 are
// computed in float and rounded once, which is exact for a single add, multiply, min or max.
#include "loom_cuda_api.h"
#include "loom_c_api.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace {

// ---- element operations -------------------------------------------------------------------

template <class T>
struct Wide {
    using type = T;
};
template <>
struct Wide<__half> {
    using type = float;
};
template <>
struct Wide<__nv_bfloat16> {
    using type = float;
};

template <class T>
__device__ __forceinline__ typename Wide<T>::type widen(T v)
{
    return static_cast<typename Wide<T>::type>(v);
}
template <>
__device__ __forceinline__ float widen(__half v)
{
    return __half2float(v);
}
template <>
__device__ __forceinline__ float widen(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T narrow(typename Wide<T>::type v)
{
    return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v)
{
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

// Integer arithmetic that wraps: done in the unsigned type of the same width.
template <class T>
__device__ __forceinline__ T wrap_add(T a, T b)
{
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
        return narrow<T>(widen(a) + widen(b));
    }
}
template <class T>
__device__ __forceinline__ T wrap_mul(T a, T b)
{
    if constexpr (std::is_integral_v<T>) {
        // Promote below int's width is avoided: multiply in at least 32-bit unsigned.
        using U = std::conditional_t<(sizeof(T) < 4), std::uint32_t, std::make_unsigned_t<T>>;
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
        return narrow<T>(widen(a) * widen(b));
    }
}

struct Sum {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return wrap_add(in, io);
    }
};
struct Prod {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return wrap_mul(in, io);
    }
};
struct Min {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return widen(in) < widen(io) ? in : io;
    }
};
struct Max {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return widen(in) > widen(io) ? in : io;
    }
};
struct Land {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return static_cast<T>((in != T(0)) && (io != T(0)));
    }
};
struct Lor {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return static_cast<T>((in != T(0)) || (io != T(0)));
    }
};
struct Lxor {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return static_cast<T>((in != T(0)) != (io != T(0)));
    }
};
struct Band {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return static_cast<T>(in & io);
    }
};
struct Bor {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return static_cast<T>(in | io);
    }
};
struct Bxor {
    template <class T>
    __device__ T operator()(T in, T io) const
    {
        return static_cast<T>(in ^ io);
    }
};

// C99 complex numbers as MPI_C_FLOAT_COMPLEX / MPI_C_DOUBLE_COMPLEX lay them out.
template <class R>
struct Complex {
    R re, im;
};
struct ComplexSum {
    template <class R>
    __device__ Complex<R> operator()(Complex<R> a, Complex<R> b) const
    {
        return {a.re + b.re, a.im + b.im};
    }
};
struct ComplexProd {
    template <class R>
    __device__ Complex<R> operator()(Complex<R> a, Complex<R> b) const
    {
        return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    }
};

// Value/index pairs of MPI_MINLOC and MPI_MAXLOC (MPI_FLOAT_INT, ...): the better value wins;
// on a tie, the smaller index.
template <class V>
struct Pair {
    V value;
    int index;
};
template <bool IsMax>
struct Loc {
    template <class V>
    __device__ Pair<V> operator()(Pair<V> in, Pair<V> io) const
    {
        const bool in_better = IsMax ? in.value > io.value : in.value < io.value;
        if (in_better) return in;
        if (in.value == io.value) return {io.value, in.index < io.index ? in.index : io.index};
        return io;
    }
};

template <class T, class Op>
__global__ void reduce_kernel(const T* __restrict__ in, T* __restrict__ inout, std::size_t count)
{
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        inout[i] = Op{}(in[i], inout[i]);
}

using Launch = cudaError_t (*)(const void*, void*, std::size_t, cudaStream_t);

template <class T, class Op>
cudaError_t launch(const void* in, void* inout, std::size_t count, cudaStream_t stream)
{
    if (count == 0) return cudaSuccess;
    constexpr unsigned threads = 256;
    // Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
    const std::size_t wanted = (count + threads - 1) / threads;
    const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
    reduce_kernel<T, Op><<<blocks, threads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(inout), count);
    return cudaGetLastError();
}

// The kernel table. Each row names the launcher of one (op, type) pair.
struct Entry {
    int op;
    int type;
    Launch fn;
};

template <class T>
constexpr Entry arith(int op, int type)
{
    switch (op) {
    case LOOM_OP_SUM: return {op, type, &launch<T, Sum>};
    case LOOM_OP_PROD: return {op, type, &launch<T, Prod>};
    case LOOM_OP_MIN: return {op, type, &launch<T, Min>};
    default: return {op, type, &launch<T, Max>};
    }
}

template <class T>
constexpr Entry bits(int op, int type)
{
    switch (op) {
    case LOOM_OP_LAND: return {op, type, &launch<T, Land>};
    case LOOM_OP_LOR: return {op, type, &launch<T, Lor>};
    case LOOM_OP_LXOR: return {op, type, &launch<T, Lxor>};
    case LOOM_OP_BAND: return {op, type, &launch<T, Band>};
    case LOOM_OP_BOR: return {op, type, &launch<T, Bor>};
    default: return {op, type, &launch<T, Bxor>};
    }
}

#define ARITH(T, type) \
    arith<T>(LOOM_OP_SUM, type), arith<T>(LOOM_OP_PROD, type), arith<T>(LOOM_OP_MIN, type), arith<T>(LOOM_OP_MAX, type)
#define BITS(T, type)                                                                                                  \
    bits<T>(LOOM_OP_LAND, type), bits<T>(LOOM_OP_LOR, type), bits<T>(LOOM_OP_LXOR, type), bits<T>(LOOM_OP_BAND, type), \
        bits<T>(LOOM_OP_BOR, type), bits<T>(LOOM_OP_BXOR, type)

const Entry kernels[] = {
    ARITH(std::int8_t, LOOM_TYPE_INT8),
    BITS(std::int8_t, LOOM_TYPE_INT8),
    ARITH(std::uint8_t, LOOM_TYPE_UINT8),
    BITS(std::uint8_t, LOOM_TYPE_UINT8),
    ARITH(std::int16_t, LOOM_TYPE_INT16),
    BITS(std::int16_t, LOOM_TYPE_INT16),
    ARITH(std::uint16_t, LOOM_TYPE_UINT16),
    BITS(std::uint16_t, LOOM_TYPE_UINT16),
    ARITH(std::int32_t, LOOM_TYPE_INT32),
    BITS(std::int32_t, LOOM_TYPE_INT32),
    ARITH(std::uint32_t, LOOM_TYPE_UINT32),
    BITS(std::uint32_t, LOOM_TYPE_UINT32),
    ARITH(std::int64_t, LOOM_TYPE_INT64),
    BITS(std::int64_t, LOOM_TYPE_INT64),
    ARITH(std::uint64_t, LOOM_TYPE_UINT64),
    BITS(std::uint64_t, LOOM_TYPE_UINT64),
    ARITH(float, LOOM_TYPE_FLOAT),
    ARITH(double, LOOM_TYPE_DOUBLE),
    ARITH(__half, LOOM_CUDA_TYPE_HALF),
    ARITH(__nv_bfloat16, LOOM_CUDA_TYPE_BFLOAT16),
    // C's bool is one byte holding 0 or 1: the logical ops on bytes.
    {LOOM_OP_LAND, LOOM_TYPE_BOOL, &launch<std::uint8_t, Land>},
    {LOOM_OP_LOR, LOOM_TYPE_BOOL, &launch<std::uint8_t, Lor>},
    {LOOM_OP_LXOR, LOOM_TYPE_BOOL, &launch<std::uint8_t, Lxor>},
    {LOOM_OP_SUM, LOOM_TYPE_FLOAT_COMPLEX, &launch<Complex<float>, ComplexSum>},
    {LOOM_OP_PROD, LOOM_TYPE_FLOAT_COMPLEX, &launch<Complex<float>, ComplexProd>},
    {LOOM_OP_SUM, LOOM_TYPE_DOUBLE_COMPLEX, &launch<Complex<double>, ComplexSum>},
    {LOOM_OP_PROD, LOOM_TYPE_DOUBLE_COMPLEX, &launch<Complex<double>, ComplexProd>},
    {LOOM_OP_MINLOC, LOOM_TYPE_FLOAT_INT, &launch<Pair<float>, Loc<false>>},
    {LOOM_OP_MAXLOC, LOOM_TYPE_FLOAT_INT, &launch<Pair<float>, Loc<true>>},
    {LOOM_OP_MINLOC, LOOM_TYPE_DOUBLE_INT, &launch<Pair<double>, Loc<false>>},
    {LOOM_OP_MAXLOC, LOOM_TYPE_DOUBLE_INT, &launch<Pair<double>, Loc<true>>},
    {LOOM_OP_MINLOC, LOOM_TYPE_2INT, &launch<Pair<int>, Loc<false>>},
    {LOOM_OP_MAXLOC, LOOM_TYPE_2INT, &launch<Pair<int>, Loc<true>>},
    {LOOM_OP_MINLOC, LOOM_TYPE_LONG_INT, &launch<Pair<long>, Loc<false>>},
    {LOOM_OP_MAXLOC, LOOM_TYPE_LONG_INT, &launch<Pair<long>, Loc<true>>},
};

const Entry* find(int op, int type)
{
    for (const Entry& e : kernels)
        if (e.op == op && e.type == type) return &e;
    return nullptr;
}

// ---- the C table ----------------------------------------------------------------------------

const char* error_string(int code)
{
    if (code == LOOM_CUDA_NO_KERNEL) return "no CUDA kernel for this (op, type)";
    return cudaGetErrorString(static_cast<cudaError_t>(code));
}
int device_count(int* count)
{
    *count = 0;
    const cudaError_t rc = cudaGetDeviceCount(count);
    if (rc != cudaSuccess) *count = 0;
    return rc;
}
// Portable: usable from every context, since this library has a CUDA runtime of its own.
int host_alloc(void** p, std::size_t bytes) { return cudaHostAlloc(p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable); }
int host_free(void* p) { return cudaFreeHost(p); }
int device_alloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes == 0 ? 1 : bytes); }
int device_free(void* p) { return cudaFree(p); }
// Blocking streams: they wait for work on the legacy default stream, as a copy of a buffer
// the application just wrote there must.
int stream_create(void** s) { return cudaStreamCreate(reinterpret_cast<cudaStream_t*>(s)); }
int stream_destroy(void* s) { return cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
int stream_synchronize(void* s) { return cudaStreamSynchronize(static_cast<cudaStream_t>(s)); }
int event_create(void** e)
{
    return cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(e), cudaEventDisableTiming);
}
int event_destroy(void* e) { return cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
int event_record(void* e, void* s)
{
    return cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s));
}
int event_synchronize(void* e) { return cudaEventSynchronize(static_cast<cudaEvent_t>(e)); }
int copy_async(void* dst, const void* src, std::size_t bytes, void* s)
{
    if (bytes == 0) return cudaSuccess;
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(s));
}
int copy(void* dst, const void* src, std::size_t bytes)
{
    if (bytes == 0) return cudaSuccess;
    return cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}
int reduce(int op, int type, const void* in, void* inout, std::size_t count, void* s)
{
    const Entry* e = find(op, type);
    if (e == nullptr) return LOOM_CUDA_NO_KERNEL;
    return e->fn(in, inout, count, static_cast<cudaStream_t>(s));
}
int has_kernel(int op, int type) { return find(op, type) != nullptr; }

const loom_cuda_api_t api = {
    LOOM_CUDA_API_VERSION,
    error_string,
    device_count,
    host_alloc,
    host_free,
    device_alloc,
    device_free,
    stream_create,
    stream_destroy,
    stream_synchronize,
    event_create,
    event_destroy,
    event_record,
    event_synchronize,
    copy_async,
    copy,
    reduce,
    has_kernel,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const loom_cuda_api_t* loom_cuda_get_api(int version)
{
    return version == LOOM_CUDA_API_VERSION ? &api : nullptr;
}
