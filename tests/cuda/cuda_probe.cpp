// Loads libloom_cuda.so the way the plugin does (dlopen, loom_cuda_get_api) and checks its
// table: the API version, and a kernel for every (op, type) pair loom promises (sum, prod,
// min, max on float, double, half, bfloat16, int32, int64, ...). Needs no GPU: on a node
// without one it checks that the library loads, answers "0 devices" without crashing, and
// says so. With --require-gpu it then exits 77 (skipped) when there is no device, for the
// scripts that run GPU tests.
//
//   loom-cuda-probe LIBRARY [--require-gpu]
#include "loom_c_api.h"
#include "loom_cuda_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: loom-cuda-probe LIBRARY [--require-gpu]\n");
        return 2;
    }
    const bool require_gpu = argc > 2 && std::strcmp(argv[2], "--require-gpu") == 0;
    void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        std::printf("FAIL: cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    auto get = reinterpret_cast<loom_cuda_get_api_fn>(dlsym(h, "loom_cuda_get_api"));
    if (get == nullptr) {
        std::printf("FAIL: %s exports no loom_cuda_get_api\n", argv[1]);
        return 1;
    }
    if (get(LOOM_CUDA_API_VERSION + 1) != nullptr) {
        std::printf("FAIL: the library accepts an API version it does not speak\n");
        return 1;
    }
    const loom_cuda_api_t* api = get(LOOM_CUDA_API_VERSION);
    if (api == nullptr || api->version != LOOM_CUDA_API_VERSION) {
        std::printf("FAIL: no API table of version %d\n", LOOM_CUDA_API_VERSION);
        return 1;
    }
    int missing = 0;
    const int arith_types[] = {LOOM_TYPE_INT8,  LOOM_TYPE_UINT8,  LOOM_TYPE_INT16,     LOOM_TYPE_UINT16,
                               LOOM_TYPE_INT32, LOOM_TYPE_UINT32, LOOM_TYPE_INT64,     LOOM_TYPE_UINT64,
                               LOOM_TYPE_FLOAT, LOOM_TYPE_DOUBLE, LOOM_CUDA_TYPE_HALF, LOOM_CUDA_TYPE_BFLOAT16};
    for (int type : arith_types)
        for (int op : {LOOM_OP_SUM, LOOM_OP_PROD, LOOM_OP_MIN, LOOM_OP_MAX})
            if (!api->has_kernel(op, type)) {
                std::printf("FAIL: no kernel for op %d on type %d\n", op, type);
                ++missing;
            }
    for (int type : {LOOM_TYPE_INT32, LOOM_TYPE_UINT64})
        for (int op : {LOOM_OP_BAND, LOOM_OP_BOR, LOOM_OP_BXOR, LOOM_OP_LAND, LOOM_OP_LOR, LOOM_OP_LXOR})
            if (!api->has_kernel(op, type)) {
                std::printf("FAIL: no kernel for op %d on type %d\n", op, type);
                ++missing;
            }
    if (api->has_kernel(LOOM_OP_BAND, LOOM_TYPE_FLOAT)) {
        std::printf("FAIL: a kernel for BAND on float, which MPI does not define\n");
        ++missing;
    }
    if (api->reduce(LOOM_OP_BAND, LOOM_TYPE_FLOAT, nullptr, nullptr, 0, nullptr) != LOOM_CUDA_NO_KERNEL) {
        std::printf("FAIL: reduce() on a pair without a kernel does not say LOOM_CUDA_NO_KERNEL\n");
        ++missing;
    }
    if (missing != 0) return 1;
    int devices = 0;
    const int rc = api->device_count(&devices);
    std::printf("loom-cuda-probe: %s loads, API version %d, every promised kernel present; %d CUDA device(s)%s%s\n",
                argv[1], api->version, devices, rc != 0 ? ": " : "", rc != 0 ? api->error_string(rc) : "");
    if (require_gpu && devices == 0) return 77;
    return 0;
}
