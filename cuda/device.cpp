// The plugin's side of CUDA support: plain C++, no CUDA headers, compiled into the plugin.
//
//   * Memory kind per call. The first call dlopens the driver, libcuda.so.1 (never cuInit:
//     loom must not create a context or initialise a GPU the application does not use). No
//     driver: every buffer is host memory, at the cost of a load and a branch per call. With
//     a driver, cuPointerGetAttribute(MEMORY_TYPE) answers; an error means host memory
//     (CUDA_ERROR_NOT_INITIALIZED: the process has no context, so it has no device memory
//     either; CUDA_ERROR_INVALID_VALUE: a pointer CUDA does not know). Errors that cannot
//     change (a stub driver, no device, a driver too old) switch detection off for good.
//   * Only when a device buffer is seen is libloom_cuda.so loaded (cuda/loom_cuda.cu, built
//     with nvcc): from $LOOM_CUDA_LIBRARY, else next to the plugin (found with dladdr).
//   * CudaCopier: the staging pipeline's AsyncCopier (algorithms/staging.hpp) over that
//     library: one stream per lane, events as tickets, and pinned host buffers kept for reuse.
//
// LOOM_CUDA_VERBOSE=1 prints what detection found (stderr), for tests and debugging.
//
// For tests on machines without a GPU, LOOM_TEST_FAKE_DEVICE=START:BYTES (hexadecimal) makes
// host memory in that address range count as device memory, served by a host copier (plain
// copies) instead of libloom_cuda.so: the glue's device paths (staging, copies, declines) then
// run end to end over MPI. The test keeps the range inaccessible (PROT_NONE) and this copier
// opens it only for its own copies, so anything else touching "device" memory - the PML, an
// algorithm - crashes the test, as real device memory would. Read once; without it the cost
// is nothing.
#include "loom_device.h"

#include "loom_c_api.h"
#include "loom_cuda_api.h"
#include "staging.hpp"

#include <dlfcn.h>
#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::cuda {
namespace {

bool verbose()
{
    static const bool on = [] {
        const char* v = std::getenv("LOOM_CUDA_VERBOSE");
        return v != nullptr && v[0] != '\0' && v[0] != '0';
    }();
    return on;
}

// ---- the driver, declared by hand (cuda.h's values; the driver ABI is stable) ---------------

using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
constexpr unsigned CU_MEMORYTYPE_DEVICE = 2;
constexpr CUresult CUDA_SUCCESS = 0, CUDA_ERROR_STUB_LIBRARY = 34, CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
                   CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
                   CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804;
using PointerGetAttributeFn = CUresult (*)(void* data, int attribute, CUdeviceptr ptr);

enum DriverState : int { unknown = 0, absent = 1, present = 2 };
std::atomic<int> driver_state{unknown};
PointerGetAttributeFn pointer_get_attribute = nullptr;
std::mutex load_mutex;

int load_driver()
{
    std::lock_guard<std::mutex> lock(load_mutex);
    int state = driver_state.load(std::memory_order_acquire);
    if (state != unknown) return state;
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void* fn = handle != nullptr ? dlsym(handle, "cuPointerGetAttribute") : nullptr;
    if (fn == nullptr) {
        if (verbose())
            std::fprintf(stderr, "coll:loom: cuda: no CUDA driver (libcuda.so.1: %s): every buffer is host memory\n",
                         handle == nullptr ? dlerror() : "no cuPointerGetAttribute");
        state = absent;
    } else {
        pointer_get_attribute = reinterpret_cast<PointerGetAttributeFn>(fn);
        if (verbose()) std::fprintf(stderr, "coll:loom: cuda: CUDA driver loaded: buffers are checked per call\n");
        state = present;
    }
    driver_state.store(state, std::memory_order_release);
    return state;
}

bool permanent(CUresult rc)
{
    return rc == CUDA_ERROR_STUB_LIBRARY || rc == CUDA_ERROR_INSUFFICIENT_DRIVER || rc == CUDA_ERROR_NO_DEVICE ||
           rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || rc == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE;
}

struct FakeRange {
    std::uintptr_t start = 0, end = 0;
};
const FakeRange fake = [] {
    FakeRange r;
    const char* v = std::getenv("LOOM_TEST_FAKE_DEVICE");
    if (v != nullptr && v[0] != '\0') {
        char* end = nullptr;
        r.start = std::uintptr_t(std::strtoull(v, &end, 16));
        if (end != nullptr && *end == ':') r.end = r.start + std::uintptr_t(std::strtoull(end + 1, nullptr, 16));
        if (r.end <= r.start) r = FakeRange{};
    }
    return r;
}();
bool faked() { return fake.end != 0; }

// A copy that may touch the fake device range: opened for the copy only.
void fake_copy(void* dst, const void* src, std::size_t bytes)
{
    if (bytes == 0) return;
    void* start = reinterpret_cast<void*>(fake.start);
    mprotect(start, fake.end - fake.start, PROT_READ | PROT_WRITE);
    std::memmove(dst, src, bytes);
    mprotect(start, fake.end - fake.start, PROT_NONE);
}

int memory_kind(const void* ptr)
{
    if (ptr == nullptr) return LOOM_MEMORY_HOST;
    if (faked()) {
        const auto p = reinterpret_cast<std::uintptr_t>(ptr);
        return p >= fake.start && p < fake.end ? LOOM_MEMORY_CUDA : LOOM_MEMORY_HOST;
    }
    int state = driver_state.load(std::memory_order_acquire);
    if (state == unknown) state = load_driver();
    if (state != present) {
        __atomic_store_n(&loom_device_host_only, 1, __ATOMIC_RELAXED);
        return LOOM_MEMORY_HOST;
    }
    unsigned type = 0;
    const CUresult rc = pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                              static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(ptr)));
    if (rc == CUDA_SUCCESS) return type == CU_MEMORYTYPE_DEVICE ? LOOM_MEMORY_CUDA : LOOM_MEMORY_HOST;
    if (permanent(rc)) {
        if (verbose())
            std::fprintf(stderr,
                         "coll:loom: cuda: the CUDA driver answers error %d (stub driver, no device or driver too "
                         "old): every buffer is host memory from now on\n",
                         rc);
        driver_state.store(absent, std::memory_order_release);
        __atomic_store_n(&loom_device_host_only, 1, __ATOMIC_RELAXED);
    }
    return LOOM_MEMORY_HOST;
}

// ---- libloom_cuda.so ------------------------------------------------------------------------

const loom_cuda_api_t* api = nullptr;
std::string api_error; // why the library cannot be used; empty until tried
bool api_tried = false;

std::string library_path()
{
    if (const char* env = std::getenv("LOOM_CUDA_LIBRARY"); env != nullptr && env[0] != '\0') return env;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&memory_kind), &info) != 0 && info.dli_fname != nullptr) {
        std::string self = info.dli_fname;
        const auto slash = self.rfind('/');
        return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/libloom_cuda.so";
    }
    return "libloom_cuda.so";
}

const loom_cuda_api_t* load_api(const char** why)
{
    std::lock_guard<std::mutex> lock(load_mutex);
    if (!api_tried) {
        api_tried = true;
        const std::string path = library_path();
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        auto get =
            handle != nullptr ? reinterpret_cast<loom_cuda_get_api_fn>(dlsym(handle, "loom_cuda_get_api")) : nullptr;
        const loom_cuda_api_t* table = get != nullptr ? get(LOOM_CUDA_API_VERSION) : nullptr;
        int devices = 0;
        if (handle == nullptr)
            api_error = "cannot load " + path + " (" + dlerror() + "); set LOOM_CUDA_LIBRARY";
        else if (table == nullptr)
            api_error = path + " is not a libloom_cuda.so of this loom version";
        else if (int rc = table->device_count(&devices); rc != 0 || devices == 0)
            api_error = std::string("the CUDA runtime finds no usable device (") +
                        (rc != 0 ? table->error_string(rc) : "0 devices") + ")";
        else
            api = table;
        if (api == nullptr)
            std::fprintf(stderr,
                         "coll:loom: error: a device buffer was passed, but %s: loom hands such calls to the "
                         "next component\n",
                         api_error.c_str());
        else if (verbose())
            std::fprintf(stderr, "coll:loom: cuda: %s loaded, %d device(s)\n", path.c_str(), devices);
    }
    if (api == nullptr && why != nullptr) *why = api_error.c_str();
    return api;
}

void check(int rc, const char* what)
{
    if (rc != 0) {
        std::fprintf(stderr, "coll:loom: error: CUDA %s failed: %s\n", what, api->error_string(rc));
        throw std::runtime_error(what);
    }
}

// ---- pinned host buffers, kept for reuse (per thread) ---------------------------------------

// Pinned allocation is slow (it maps and locks pages), so buffers are kept: at most
// kKeptBuffers per thread, none larger than kKeptMax (larger ones are freed on return).
constexpr std::size_t kKeptBuffers = 4, kKeptMax = std::size_t(64) << 20;

struct Pinned {
    std::byte* ptr;
    std::size_t bytes;
    bool in_use;
};
// Deliberately never destroyed: at process exit the CUDA runtime may already be gone.
thread_local std::vector<Pinned>* pinned = nullptr;

void give_back(std::byte* p)
{
    auto& list = *pinned;
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i].ptr != p) continue;
        if (list[i].bytes > kKeptMax) {
            api->host_free(p);
            list.erase(list.begin() + std::ptrdiff_t(i));
        } else {
            list[i].in_use = false;
        }
        return;
    }
}

Scratch take_pinned(std::size_t bytes)
{
    if (pinned == nullptr) pinned = new std::vector<Pinned>();
    auto& list = *pinned;
    for (Pinned& b : list) {
        if (!b.in_use && b.bytes >= bytes) {
            b.in_use = true;
            return Scratch(b.ptr, &give_back);
        }
    }
    // Make room: free the smallest idle buffer if the list is full.
    if (list.size() >= kKeptBuffers) {
        std::size_t victim = list.size();
        for (std::size_t i = 0; i < list.size(); ++i)
            if (!list[i].in_use && (victim == list.size() || list[i].bytes < list[victim].bytes)) victim = i;
        if (victim != list.size()) {
            api->host_free(list[victim].ptr);
            list.erase(list.begin() + std::ptrdiff_t(victim));
        }
    }
    void* p = nullptr;
    check(api->host_alloc(&p, bytes == 0 ? 1 : bytes), "pinned host allocation");
    list.push_back({static_cast<std::byte*>(p), bytes == 0 ? 1 : bytes, true});
    return Scratch(static_cast<std::byte*>(p), &give_back);
}

// ---- the staging copier ---------------------------------------------------------------------

// One stream per lane; a ticket is an event recorded on the lane's stream. The pipeline has
// at most kStagingSlots + 1 tickets outstanding per lane, so a ring of events suffices.
class CudaCopier final : public AsyncCopier {
public:
    CudaCopier()
    {
        for (Lanes& l : lanes_) {
            check(api->stream_create(&l.stream), "stream creation");
            for (void*& e : l.events) check(api->event_create(&e), "event creation");
        }
    }
    Scratch host_buffer(std::size_t bytes) override { return take_pinned(bytes); }
    void copy(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        check(api->copy_async(dst, src, bytes, of(lane).stream), "copy");
    }
    std::uint64_t mark(Lane lane) override
    {
        Lanes& l = of(lane);
        const std::uint64_t ticket = ++l.tickets;
        check(api->event_record(l.events[ticket % kEvents], l.stream), "event record");
        return ticket;
    }
    void wait(Lane lane, std::uint64_t ticket) override
    {
        Lanes& l = of(lane);
        if (ticket == 0) return;
        if (ticket + kEvents <= l.tickets) throw std::logic_error("CudaCopier: ticket too old");
        check(api->event_synchronize(l.events[ticket % kEvents]), "event synchronize");
    }

private:
    static constexpr std::size_t kEvents = 8;
    struct Lanes {
        void* stream = nullptr;
        std::array<void*, kEvents> events{};
        std::uint64_t tickets = 0;
    };
    Lanes& of(Lane lane) { return lanes_[lane == Lane::in ? 0 : 1]; }
    std::array<Lanes, 2> lanes_;
};

// Deliberately never destroyed, like the pinned buffers.
thread_local CudaCopier* copier = nullptr;

// The copier of LOOM_TEST_FAKE_DEVICE: copies done at once (ordinary host buffers).
class HostCopier final : public AsyncCopier {
public:
    Scratch host_buffer(std::size_t bytes) override
    {
        auto* p = static_cast<std::byte*>(std::malloc(bytes == 0 ? 1 : bytes));
        if (p == nullptr) throw std::bad_alloc();
        return Scratch(p, [](std::byte* q) { std::free(q); });
    }
    void copy(Lane, void* dst, const void* src, std::size_t bytes) override { fake_copy(dst, src, bytes); }
    std::uint64_t mark(Lane) override { return 0; }
    void wait(Lane, std::uint64_t) override {}
};
HostCopier host_copier;

} // namespace
} // namespace loom::cuda

using namespace loom::cuda;

extern "C" {
int loom_device_host_only = 0;
int loom_device_memory_kind(const void* ptr) { return memory_kind(ptr); }
}

extern "C" void* loom_device_copier(const char** why)
{
    if (faked()) return static_cast<loom::AsyncCopier*>(&host_copier);
    if (load_api(why) == nullptr) return nullptr;
    if (copier == nullptr) {
        try {
            copier = new CudaCopier();
        } catch (...) {
            if (why != nullptr) *why = "CUDA streams or events could not be created";
            return nullptr;
        }
    }
    return static_cast<loom::AsyncCopier*>(copier);
}

extern "C" int loom_device_copy(void* dst, const void* src, std::size_t bytes)
{
    if (faked()) {
        fake_copy(dst, src, bytes);
        return 0;
    }
    if (load_api(nullptr) == nullptr) return -1;
    const int rc = api->copy(dst, src, bytes);
    if (rc != 0) std::fprintf(stderr, "coll:loom: error: CUDA copy failed: %s\n", api->error_string(rc));
    return rc;
}

extern "C" std::size_t loom_device_staging_bytes(void)
{
    static const std::size_t bytes = [] {
        const char* v = std::getenv("LOOM_CUDA_SEGMENT");
        if (v == nullptr || v[0] == '\0') return std::size_t(0);
        char* end = nullptr;
        unsigned long long n = std::strtoull(v, &end, 10);
        if (end != nullptr && (*end == 'K' || *end == 'k'))
            n <<= 10;
        else if (end != nullptr && (*end == 'M' || *end == 'm'))
            n <<= 20;
        return std::size_t(n);
    }();
    return bytes;
}
