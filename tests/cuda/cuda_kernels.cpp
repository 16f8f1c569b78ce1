// The CUDA reduction kernels of libloom_cuda.so against loom's host kernels
// (algorithms/reduce_kernels.cpp), bit for bit: every (op, type) pair both have, at counts 0,
// 1, 1000 and 2^20 + 3 (more elements than the grid has threads), with inputs that make
// integer sums and products wrap. Half and bfloat16, which have no host kernel, against a
// reference computed here on values those formats hold exactly. Needs a GPU: without one it
// exits 77 (skipped), never passes.
//
//   loom-cuda-kernel-tests LIBRARY
#include "loom_c_api.h"
#include "loom_cuda_api.h"
#include "reduce_kernels.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

const loom_cuda_api_t* api = nullptr;
int failures = 0;

void must(int rc, const char* what)
{
    if (rc != 0) {
        std::printf("FAIL: %s: %s\n", what, api->error_string(rc));
        std::exit(1);
    }
}

// Runs the device kernel: returns in op inout for the bytes given.
std::vector<unsigned char> on_device(int op, int type, const std::vector<unsigned char>& in,
                                     const std::vector<unsigned char>& inout, std::size_t count)
{
    void *din = nullptr, *dio = nullptr, *stream = nullptr;
    must(api->device_alloc(&din, in.size()), "device_alloc");
    must(api->device_alloc(&dio, inout.size()), "device_alloc");
    must(api->stream_create(&stream), "stream_create");
    must(api->copy(din, in.data(), in.size()), "copy in");
    must(api->copy(dio, inout.data(), inout.size()), "copy in");
    must(api->reduce(op, type, din, dio, count, stream), "reduce");
    must(api->stream_synchronize(stream), "stream_synchronize");
    std::vector<unsigned char> out(inout.size());
    must(api->copy(out.data(), dio, out.size()), "copy out");
    api->stream_destroy(stream);
    api->device_free(din);
    api->device_free(dio);
    return out;
}

// Bytes with every value: integer sums and products overflow and wrap.
std::vector<unsigned char> bytes_for(std::size_t n, unsigned salt)
{
    std::vector<unsigned char> v(n);
    std::uint32_t x = 2463534242u + salt;
    for (auto& b : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<unsigned char>(x);
    }
    return v;
}

// Floating-point inputs: small integers, so every op is exact and no NaN appears.
template <class T>
std::vector<unsigned char> small_values(std::size_t count, int salt)
{
    std::vector<T> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = T(int((i * 7 + std::size_t(salt) * 3) % 13) - 6);
    std::vector<unsigned char> b(count * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

void check_against_host(loom_op_t op, loom_type_t type)
{
    auto host = loom::find_kernel(op, type);
    if (!host || !api->has_kernel(op, type)) return;
    const std::size_t elem = host->elem_size;
    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(1000), (std::size_t(1) << 20) + 3}) {
        const bool fp = type == LOOM_TYPE_FLOAT || type == LOOM_TYPE_DOUBLE || type == LOOM_TYPE_FLOAT_COMPLEX ||
                        type == LOOM_TYPE_DOUBLE_COMPLEX || type == LOOM_TYPE_FLOAT_INT || type == LOOM_TYPE_DOUBLE_INT;
        std::vector<unsigned char> in, inout;
        if (type == LOOM_TYPE_FLOAT)
            in = small_values<float>(count, 1), inout = small_values<float>(count, 2);
        else if (type == LOOM_TYPE_DOUBLE)
            in = small_values<double>(count, 1), inout = small_values<double>(count, 2);
        else if (fp)
            in = small_values<float>(count * elem / 4, 1), inout = small_values<float>(count * elem / 4, 2);
        else
            in = bytes_for(count * elem, 1), inout = bytes_for(count * elem, 2);
        if (type == LOOM_TYPE_BOOL)
            for (auto* v : {&in, &inout})
                for (auto& b : *v) b &= 1;
        // 16-byte value/index pairs have 4 bytes of padding: the same (zero) in both inputs.
        if (elem == 16 && (type == LOOM_TYPE_DOUBLE_INT || type == LOOM_TYPE_LONG_INT))
            for (auto* v : {&in, &inout})
                for (std::size_t e = 0; e < count; ++e) std::memset(v->data() + e * 16 + 12, 0, 4);
        std::vector<unsigned char> want = inout;
        if (count != 0) host->fn(in.data(), want.data(), count, host->ctx);
        const auto got = on_device(op, type, in, inout, count);
        if (got != want) {
            std::printf("FAIL: op %d type %d count %zu differs from loom's host kernel\n", op, type, count);
            ++failures;
        }
    }
}

// Half and bfloat16 of small integers, exactly (sign, exponent, top mantissa bits).
std::uint16_t to_half(float f)
{
    if (f == 0) return 0;
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    const std::uint32_t sign = (u >> 16) & 0x8000, exp = ((u >> 23) & 0xff) - 127 + 15, mant = (u >> 13) & 0x3ff;
    return std::uint16_t(sign | (exp << 10) | mant);
}
std::uint16_t to_bf16(float f)
{
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return std::uint16_t(u >> 16);
}

void check_half(int type)
{
    const std::size_t count = 4097;
    std::vector<float> a(count), b(count);
    for (std::size_t i = 0; i < count; ++i) {
        a[i] = float(int(i % 9) - 4);
        b[i] = float(int((i * 5) % 7) - 3);
    }
    auto encode = [&](const std::vector<float>& v) {
        std::vector<unsigned char> out(v.size() * 2);
        for (std::size_t i = 0; i < v.size(); ++i) {
            const std::uint16_t h = type == LOOM_CUDA_TYPE_HALF ? to_half(v[i]) : to_bf16(v[i]);
            std::memcpy(&out[2 * i], &h, 2);
        }
        return out;
    };
    for (int op : {LOOM_OP_SUM, LOOM_OP_PROD, LOOM_OP_MIN, LOOM_OP_MAX}) {
        std::vector<float> want(count);
        for (std::size_t i = 0; i < count; ++i)
            want[i] = op == LOOM_OP_SUM    ? a[i] + b[i]
                      : op == LOOM_OP_PROD ? a[i] * b[i]
                      : op == LOOM_OP_MIN  ? (a[i] < b[i] ? a[i] : b[i])
                                           : (a[i] > b[i] ? a[i] : b[i]);
        if (on_device(op, type, encode(a), encode(b), count) != encode(want)) {
            std::printf("FAIL: op %d on %s\n", op, type == LOOM_CUDA_TYPE_HALF ? "half" : "bfloat16");
            ++failures;
        }
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) return 2;
    void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    auto get = h != nullptr ? reinterpret_cast<loom_cuda_get_api_fn>(dlsym(h, "loom_cuda_get_api")) : nullptr;
    api = get != nullptr ? get(LOOM_CUDA_API_VERSION) : nullptr;
    if (api == nullptr) {
        std::printf("FAIL: cannot load %s\n", argv[1]);
        return 1;
    }
    int devices = 0;
    api->device_count(&devices);
    if (devices == 0) {
        std::printf("loom-cuda-kernel-tests: no CUDA device: skipped\n");
        return 77;
    }
    for (int op = 0; op < LOOM_OP_COUNT; ++op)
        for (int type = 0; type < LOOM_TYPE_COUNT; ++type) check_against_host(loom_op_t(op), loom_type_t(type));
    check_half(LOOM_CUDA_TYPE_HALF);
    check_half(LOOM_CUDA_TYPE_BFLOAT16);
    std::printf("loom-cuda-kernel-tests: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
