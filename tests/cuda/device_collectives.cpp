// Every collective loom serves, on device buffers, with several algorithms each (forced
// through MPI_T, as users force them with coll_loom_<collective>_algorithm) and loom's own
// choice, in place and not, at sizes of one and of many staging segments: the collectives of
// kOwnTests with tests of their own, every other row of collectives.def made from its row
// (call_model.hpp) with every algorithm of the registry; every result is
// compared with a reference this program computes itself (never Open MPI's). Also: a derived
// datatype with holes (allreduce: loom declines, so the call runs on host copies and Open MPI
// serves it; bcast: loom serves it on host copies) and a non-commutative user op.
//
//   device_collectives --memory cuda   buffers from cudaMalloc (through libloom_cuda.so,
//                                      $LOOM_CUDA_LIBRARY); exits 77 (skipped) if any rank
//                                      finds no GPU
//   device_collectives --memory fake   host memory in the range of $LOOM_TEST_FAKE_DEVICE,
//                                      which loom then treats as device memory (cuda/device.cpp):
//                                      the plugin's device paths, run without a GPU
//   device_collectives --memory host   ordinary host buffers
// --quick makes the large sizes 20 times smaller (for valgrind). --form nonblocking|persistent
// makes every call through MPI_I<collective> or MPI_<collective>_init (check_forms.hpp), and
// adds persistent requests restarted with new data and two operations outstanding at once.
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings are not linked)
#include <mpi.h>

#include "call_model.hpp"
#include "check_forms.hpp"
#include "loom_cuda_api.h"
#include "loom_mpi_t.hpp"
#include "registry.hpp"

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

namespace {

int rank = 0, size = 1;
int failures = 0;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            ++failures;                                                \
            std::fprintf(stderr, "rank %d: FAILED %s: ", rank, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                         \
            std::fprintf(stderr, "\n");                                \
        }                                                              \
    } while (0)

// Where the "device" buffers come from.
class Memory {
public:
    virtual ~Memory() = default;
    virtual void* alloc(std::size_t bytes) = 0;
    virtual void release(void* p) = 0;
    virtual void put(void* dst, const void* src, std::size_t bytes) = 0; // host -> buffer
    virtual void get(void* dst, const void* src, std::size_t bytes) = 0; // buffer -> host
};

class HostMemoryKind final : public Memory {
public:
    void* alloc(std::size_t bytes) override { return std::malloc(bytes == 0 ? 1 : bytes); }
    void release(void* p) override { std::free(p); }
    void put(void* d, const void* s, std::size_t n) override { std::memcpy(d, s, n); }
    void get(void* d, const void* s, std::size_t n) override { std::memcpy(d, s, n); }
};

// A bump allocator in the range LOOM_TEST_FAKE_DEVICE names (mapped here at that address).
// The range is inaccessible (PROT_NONE) except during this program's own copies and loom's
// staging copies, so a PML or an algorithm reading "device" memory directly crashes.
class FakeDeviceMemory final : public Memory {
public:
    bool open()
    {
        const char* v = std::getenv("LOOM_TEST_FAKE_DEVICE");
        if (v == nullptr) return false;
        char* end = nullptr;
        start_ = std::uintptr_t(std::strtoull(v, &end, 16));
        bytes_ = end != nullptr && *end == ':' ? std::size_t(std::strtoull(end + 1, nullptr, 16)) : 0;
        void* p = mmap(reinterpret_cast<void*>(start_), bytes_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != reinterpret_cast<void*>(start_)) return false;
        mprotect(p, bytes_, PROT_NONE);
        return true;
    }
    void* alloc(std::size_t bytes) override
    {
        const std::size_t n = (bytes + 63) / 64 * 64 + 64;
        if (used_ + n > bytes_) {
            std::fprintf(stderr, "fake device memory exhausted\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        void* p = reinterpret_cast<void*>(start_ + used_);
        used_ += n;
        return p;
    }
    void release(void*) override {} // reset() frees everything
    void reset() { used_ = 0; }
    void put(void* d, const void* s, std::size_t n) override { open_copy(d, s, n); }
    void get(void* d, const void* s, std::size_t n) override { open_copy(d, s, n); }

private:
    void open_copy(void* d, const void* s, std::size_t n)
    {
        void* p = reinterpret_cast<void*>(start_);
        mprotect(p, bytes_, PROT_READ | PROT_WRITE);
        std::memcpy(d, s, n);
        mprotect(p, bytes_, PROT_NONE);
    }
    std::uintptr_t start_ = 0;
    std::size_t bytes_ = 0, used_ = 0;
};

class CudaMemory final : public Memory {
public:
    // 1: a device is there; 0: none (skip); -1: the library cannot be used.
    int open()
    {
        const char* path = std::getenv("LOOM_CUDA_LIBRARY");
        void* h = dlopen(path != nullptr ? path : "libloom_cuda.so", RTLD_NOW | RTLD_LOCAL);
        auto get = h != nullptr ? reinterpret_cast<loom_cuda_get_api_fn>(dlsym(h, "loom_cuda_get_api")) : nullptr;
        api_ = get != nullptr ? get(LOOM_CUDA_API_VERSION) : nullptr;
        if (api_ == nullptr) {
            std::fprintf(stderr, "rank %d: cannot use libloom_cuda.so (set LOOM_CUDA_LIBRARY): %s\n", rank,
                         h == nullptr ? dlerror() : "no table");
            return -1;
        }
        int n = 0;
        api_->device_count(&n);
        return n > 0 ? 1 : 0;
    }
    void* alloc(std::size_t bytes) override
    {
        void* p = nullptr;
        if (api_->device_alloc(&p, bytes) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
        return p;
    }
    void release(void* p) override { api_->device_free(p); }
    void put(void* d, const void* s, std::size_t n) override { check(api_->copy(d, s, n)); }
    void get(void* d, const void* s, std::size_t n) override { check(api_->copy(d, s, n)); }

private:
    void check(int rc)
    {
        if (rc != 0) {
            std::fprintf(stderr, "rank %d: CUDA copy failed: %s\n", rank, api_->error_string(rc));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    const loom_cuda_api_t* api_ = nullptr;
};

Memory* mem = nullptr;

// A buffer in the memory under test, filled from host data.
struct Buf {
    void* p = nullptr;
    std::size_t bytes = 0;
    Buf(std::size_t n, const void* init = nullptr) : bytes(n)
    {
        p = mem->alloc(n);
        std::vector<unsigned char> fill(n, 0xa5);
        mem->put(p, init != nullptr ? init : fill.data(), n);
    }
    ~Buf() { mem->release(p); }
    template <class T>
    std::vector<T> read(std::size_t count) const
    {
        std::vector<T> v(count);
        mem->get(v.data(), p, count * sizeof(T));
        return v;
    }
};

std::int32_t value(int r, std::size_t i) { return std::int32_t((std::size_t(r) * 7 + i * 3) % 11) - 4; }
std::vector<std::int32_t> input(int r, std::size_t n)
{
    std::vector<std::int32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = value(r, i);
    return v;
}
std::int32_t total(std::size_t i)
{
    std::int32_t t = 0;
    for (int r = 0; r < size; ++r) t += value(r, i);
    return t;
}
unsigned char byte_of(int r, std::size_t i) { return (unsigned char)((r * 131 + i * 7 + 1) & 0xff); }

void force(std::string_view coll, const std::string& algorithm)
{
    if (!loom::tools::force_algorithm(coll, algorithm)) {
        std::fprintf(stderr, "rank %d: cannot set %s (is loom loaded?)\n", rank,
                     loom::tools::algorithm_control(coll).c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

// --quick (for valgrind) makes the large sizes 20 times smaller.
bool quick = false;
std::size_t large(std::size_t n) { return quick ? n / 20 + 1 : n; }

std::vector<std::size_t> counts_to_test() { return {0, 1, 1000, large(70001)}; } // several 64 KiB segments

void test_allreduce(const std::string& algo)
{
    force("allreduce", algo);
    for (std::size_t n : counts_to_test())
        for (bool in_place : {false, true}) {
            auto in = input(rank, n);
            Buf s(n * 4, in.data()), r(n * 4, in_place ? in.data() : nullptr);
            check::allreduce(in_place ? MPI_IN_PLACE : s.p, r.p, int(n), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
            auto out = r.read<std::int32_t>(n);
            auto back = s.read<std::int32_t>(n);
            for (std::size_t i = 0; i < n; ++i)
                if (out[i] != total(i)) {
                    CHECK(out[i] == total(i), "allreduce %s n=%zu in_place=%d i=%zu: %d", algo.c_str(), n, in_place, i,
                          out[i]);
                    break;
                }
            if (!in_place) CHECK(back == in, "allreduce %s wrote its send buffer", algo.c_str());
        }
}

void test_reduce(const std::string& algo)
{
    force("reduce", algo);
    const int root = size - 1;
    for (std::size_t n : counts_to_test())
        for (bool in_place : {false, true}) {
            auto in = input(rank, n);
            const bool ip = in_place && rank == root;
            Buf s(n * 4, in.data()), r(n * 4, ip ? in.data() : nullptr);
            check::reduce(ip ? MPI_IN_PLACE : s.p, r.p, int(n), MPI_INT32_T, MPI_SUM, root, MPI_COMM_WORLD);
            if (rank != root) continue;
            auto out = r.read<std::int32_t>(n);
            for (std::size_t i = 0; i < n; ++i)
                if (out[i] != total(i)) {
                    CHECK(out[i] == total(i), "reduce %s n=%zu i=%zu", algo.c_str(), n, i);
                    break;
                }
        }
}

void test_reduce_scatter(bool block, const std::string& algo)
{
    force(block ? "reduce_scatter_block" : "reduce_scatter", algo);
    for (std::size_t k : {std::size_t(1), large(5000)})
        for (bool in_place : {false, true}) {
            std::vector<int> counts(static_cast<std::size_t>(size));
            for (int i = 0; i < size; ++i) counts[std::size_t(i)] = int(block ? k : (std::size_t(i % 3) + 1) * k);
            const std::size_t all = std::size_t(std::accumulate(counts.begin(), counts.end(), 0));
            std::size_t first = 0;
            for (int i = 0; i < rank; ++i) first += std::size_t(counts[std::size_t(i)]);
            const std::size_t mine = std::size_t(counts[std::size_t(rank)]);
            auto in = input(rank, all);
            Buf s(all * 4, in.data()), r((in_place ? all : mine) * 4, in_place ? in.data() : nullptr);
            const void* sb = in_place ? MPI_IN_PLACE : s.p;
            if (block)
                check::reduce_scatter_block(sb, r.p, int(k), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
            else
                check::reduce_scatter(sb, r.p, counts.data(), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
            auto out = r.read<std::int32_t>(mine);
            for (std::size_t i = 0; i < mine; ++i)
                if (out[i] != total(first + i)) {
                    CHECK(out[i] == total(first + i), "reduce_scatter%s %s k=%zu i=%zu", block ? "_block" : "",
                          algo.c_str(), k, i);
                    break;
                }
        }
}

void test_allgather(bool v, const std::string& algo)
{
    force(v ? "allgatherv" : "allgather", algo);
    // allgatherv also with a gap of 7 bytes before each block: the blocks are not one dense
    // run, so loom gathers on a host copy of the device buffer, and the gaps keep their bytes.
    for (std::size_t k : {std::size_t(3), large(100000)})
        for (int gap : v ? std::vector<int>{0, 7} : std::vector<int>{0})
            for (bool in_place : {false, true}) {
                std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
                int next = 0;
                for (int i = 0; i < size; ++i) {
                    counts[std::size_t(i)] = int(v ? (std::size_t(i % 3) + 1) * k : k);
                    next += gap;
                    displs[std::size_t(i)] = next;
                    next += counts[std::size_t(i)];
                }
                const std::size_t mine = std::size_t(counts[std::size_t(rank)]);
                std::vector<unsigned char> expected(static_cast<std::size_t>(next), 0xA5), own(mine);
                for (int i = 0; i < size; ++i)
                    for (int b = 0; b < counts[std::size_t(i)]; ++b)
                        expected[std::size_t(displs[std::size_t(i)] + b)] = byte_of(i, std::size_t(b));
                for (std::size_t b = 0; b < mine; ++b) own[b] = byte_of(rank, b);
                std::vector<unsigned char> init(std::size_t(next), 0xA5);
                if (in_place) std::memcpy(init.data() + displs[std::size_t(rank)], own.data(), mine);
                Buf s(mine, own.data()), r(std::size_t(next), init.data());
                const void* sb = in_place ? MPI_IN_PLACE : s.p;
                if (v)
                    check::allgatherv(sb, int(mine), MPI_BYTE, r.p, counts.data(), displs.data(), MPI_BYTE,
                                      MPI_COMM_WORLD);
                else
                    check::allgather(sb, int(mine), MPI_BYTE, r.p, int(k), MPI_BYTE, MPI_COMM_WORLD);
                CHECK(r.read<unsigned char>(std::size_t(next)) == expected, "allgather%s %s k=%zu gap=%d in_place=%d",
                      v ? "v" : "", algo.c_str(), k, gap, in_place);
            }
}

void test_bcast(const std::string& algo)
{
    force("bcast", algo);
    const int root = 1 % size;
    for (std::size_t n : {std::size_t(0), std::size_t(5), large(300001)}) {
        std::vector<unsigned char> data(n);
        for (std::size_t i = 0; i < n; ++i) data[i] = byte_of(root, i);
        Buf b(n, rank == root ? data.data() : nullptr);
        check::bcast(b.p, int(n), MPI_BYTE, root, MPI_COMM_WORLD);
        CHECK(b.read<unsigned char>(n) == data, "bcast %s n=%zu", algo.c_str(), n);
    }
}

void test_alltoall(const std::string& algo)
{
    force("alltoall", algo);
    for (std::size_t k : {std::size_t(2), large(40000)})
        for (bool in_place : {false, true}) {
            const std::size_t all = k * std::size_t(size);
            std::vector<unsigned char> in(all), expected(all);
            for (int p = 0; p < size; ++p)
                for (std::size_t b = 0; b < k; ++b) {
                    in[std::size_t(p) * k + b] = byte_of(rank * 31 + p, b);
                    expected[std::size_t(p) * k + b] = byte_of(p * 31 + rank, b);
                }
            Buf s(all, in.data()), r(all, in_place ? in.data() : nullptr);
            check::alltoall(in_place ? MPI_IN_PLACE : s.p, int(k), MPI_BYTE, r.p, int(k), MPI_BYTE, MPI_COMM_WORLD);
            CHECK(r.read<unsigned char>(all) == expected, "alltoall %s k=%zu in_place=%d", algo.c_str(), k, in_place);
        }
}

// Datatypes with holes and user ops: the paths on host copies.
std::size_t strided_n = 0; // elements of the strided type below

// A user SUM on the strided type (every other int32): MPI allows only user ops on derived types.
// The collectives with a test of their own above; every other row of collectives.def is tested
// from its row (test_from_row).
const loom::Collective kOwnTests[] = {loom::Collective::allreduce, loom::Collective::reduce,
                                      loom::Collective::reduce_scatter, loom::Collective::reduce_scatter_block,
                                      loom::Collective::allgather, loom::Collective::allgatherv,
                                      loom::Collective::bcast, loom::Collective::alltoall};

// A collective made from its row (call_model.hpp: ints summed, v-blocks with gaps, rooted ones
// at the last rank), in place and not, on device buffers holding the model's images.
void test_from_row(loom::Collective c, const std::string& algo)
{
    force(loom::to_string(c), algo);
    for (int n : {1, 1000, int(large(70001))})
        for (bool in_place : {false, true}) {
            if (in_place && !model::has_in_place(c)) continue;
            model::Call call(model::Spec{.collective = c, .count = n, .root = size - 1, .in_place = in_place,
                                         .gaps = true},
                             MPI_COMM_WORLD);
            call.fill(n);
            Buf s(call.send_image().size(), call.send_image().data());
            Buf r(call.recv_image().size(), call.recv_image().data());
            loom::tools::call(c, check::form, call.args_on(s.p, r.p));
            mem->get(call.recv_image().data(), r.p, call.recv_image().size());
            const std::string wrong = call.check(n);
            CHECK(wrong.empty(), "forced '%s': %s", algo.c_str(), wrong.c_str());
        }
}

void strided_sum(void* in, void* inout, int* len, MPI_Datatype*)
{
    const auto* a = static_cast<const std::int32_t*>(in);
    auto* b = static_cast<std::int32_t*>(inout);
    // One instance spans 2n - 1 ints; the instances of a dense run follow each other at that extent.
    for (int k = 0; k < *len; ++k, a += 2 * strided_n - 1, b += 2 * strided_n - 1)
        for (std::size_t j = 0; j < strided_n; ++j) b[2 * j] += a[2 * j];
}

void noncommutative_first(void* in, void* inout, int* len, MPI_Datatype*)
{
    // inout = in "op" inout where a op b = a (keeps the lower rank's value): associative,
    // not commutative; the result is rank 0's input.
    std::memcpy(inout, in, std::size_t(*len) * sizeof(std::int32_t));
}

void test_holes_and_user_ops()
{
    force("allreduce", "");
    force("bcast", "");
    const std::size_t n = 3000;
    strided_n = n;
    MPI_Datatype strided;
    MPI_Type_vector(int(n), 1, 2, MPI_INT32_T, &strided);
    MPI_Type_commit(&strided);
    {
        // Allreduce of every other element: the holes must keep their contents. loom serves
        // it on host copies (the user op runs there).
        MPI_Op sum;
        MPI_Op_create(&strided_sum, 1, &sum);
        std::vector<std::int32_t> in(2 * n);
        for (std::size_t i = 0; i < 2 * n; ++i) in[i] = i % 2 == 0 ? value(rank, i) : -77;
        Buf b(2 * n * 4, in.data());
        check::allreduce(MPI_IN_PLACE, b.p, 1, strided, sum, MPI_COMM_WORLD);
        MPI_Op_free(&sum);
        auto out = b.read<std::int32_t>(2 * n);
        for (std::size_t i = 0; i < 2 * n; ++i) {
            const std::int32_t want = i % 2 == 0 ? total(i) : -77;
            if (out[i] != want) {
                CHECK(out[i] == want, "strided allreduce i=%zu: %d, want %d", i, out[i], want);
                break;
            }
        }
    }
    {
        const int root = 0;
        std::vector<std::int32_t> in(2 * n, -5);
        for (std::size_t i = 0; i < 2 * n; i += 2) in[i] = rank == root ? value(9, i) : 0;
        Buf b(2 * n * 4, in.data());
        check::bcast(b.p, 1, strided, root, MPI_COMM_WORLD);
        auto out = b.read<std::int32_t>(2 * n);
        for (std::size_t i = 0; i < 2 * n; ++i) {
            const std::int32_t want = i % 2 == 0 ? value(9, i) : -5;
            if (out[i] != want) {
                CHECK(out[i] == want, "strided bcast i=%zu: %d, want %d", i, out[i], want);
                break;
            }
        }
    }
    MPI_Type_free(&strided);
    {
        // Forced ring cannot serve a non-commutative op: loom declines, and the call runs on
        // host copies in the next component (Open MPI, which cannot read device memory).
        force("allreduce", "ring");
        MPI_Op first;
        MPI_Op_create(&noncommutative_first, 0, &first);
        auto in = input(rank, n);
        Buf s(n * 4, in.data()), r(n * 4);
        check::allreduce(s.p, r.p, int(n), MPI_INT32_T, first, MPI_COMM_WORLD);
        CHECK(r.read<std::int32_t>(n) == input(0, n), "non-commutative allreduce");
        MPI_Op_free(&first);
    }
}

// Non-blocking and persistent forms only: several operations on device buffers outstanding at
// once - one loom serves (allreduce, ring forced) and one it hands on to the next component
// on host copies (bcast, cma forced: single copy never serves these forms) - completed in
// reverse order; persistent requests are started three times, the device input changed
// between starts, so every start must copy the input in again.
void test_outstanding()
{
    force("allreduce", "ring");
    force("bcast", "cma");
    const std::size_t n = large(50001);
    const int root = size - 1;
    Buf a(n * 4), b(n), c(n * 4);
    MPI_Request requests[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const bool persistent = check::form == check::Form::persistent;
    if (persistent) {
        PERSISTENT(Allreduce)
        (MPI_IN_PLACE, a.p, int(n), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &requests[0]);
        PERSISTENT(Bcast)(b.p, int(n), MPI_BYTE, root, MPI_COMM_WORLD, MPI_INFO_NULL, &requests[1]);
        PERSISTENT(Allreduce)
        (MPI_IN_PLACE, c.p, int(n), MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &requests[2]);
    }
    for (int start = 0; start < (persistent ? 3 : 1); ++start) {
        std::vector<std::int32_t> in(n), big(n);
        std::vector<unsigned char> bytes(n);
        for (std::size_t i = 0; i < n; ++i) {
            in[i] = value(rank + start, i);
            big[i] = std::int32_t(i % 97) * (rank == start % size ? 3 : 1) + start;
            bytes[i] = byte_of(root + start, i);
        }
        std::vector<unsigned char> mine = rank == root ? bytes : std::vector<unsigned char>(n, 0);
        mem->put(a.p, in.data(), n * 4);
        mem->put(b.p, mine.data(), n);
        mem->put(c.p, big.data(), n * 4);
        if (persistent) {
            MPI_Startall(3, requests);
        } else {
            MPI_Iallreduce(MPI_IN_PLACE, a.p, int(n), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, &requests[0]);
            MPI_Ibcast(b.p, int(n), MPI_BYTE, root, MPI_COMM_WORLD, &requests[1]);
            MPI_Iallreduce(MPI_IN_PLACE, c.p, int(n), MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD, &requests[2]);
        }
        for (int i = 2; i >= 0; --i) MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
        auto sum = a.read<std::int32_t>(n);
        auto max = c.read<std::int32_t>(n);
        for (std::size_t i = 0; i < n; ++i) {
            std::int32_t want = 0;
            for (int r = 0; r < size; ++r) want += value(r + start, i);
            const std::int32_t want_max = std::int32_t(i % 97) * 3 + start; // rank start % size has the maxima
            if (sum[i] != want || max[i] != want_max) {
                CHECK(sum[i] == want && max[i] == want_max,
                      "outstanding start %d i=%zu: sum %d (want %d), max %d (want %d)", start, i, sum[i], want, max[i],
                      want_max);
                break;
            }
        }
        CHECK(b.read<unsigned char>(n) == bytes, "outstanding start %d: bcast", start);
    }
    if (persistent)
        for (MPI_Request& r : requests) MPI_Request_free(&r);
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::string kind, form = "blocking";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--memory" && i + 1 < argc)
            kind = argv[++i];
        else if (arg == "--form" && i + 1 < argc)
            form = argv[++i];
        else if (arg == "--quick")
            quick = true;
        else
            kind = "?";
    }
    if (form == "nonblocking")
        check::form = check::Form::nonblocking;
    else if (form == "persistent")
        check::form = check::Form::persistent;
    else if (form != "blocking")
        kind = "?";
    HostMemoryKind host;
    FakeDeviceMemory fake;
    CudaMemory cuda;
    int usable = 1; // 1 usable, 0 skip, -1 error
    if (kind == "host")
        mem = &host;
    else if (kind == "fake") {
        mem = &fake;
        if (!fake.open()) {
            std::fprintf(stderr, "rank %d: --memory fake needs LOOM_TEST_FAKE_DEVICE=START:BYTES, mappable here\n",
                         rank);
            usable = -1;
        }
    } else if (kind == "cuda") {
        mem = &cuda;
        usable = cuda.open();
    } else {
        if (rank == 0)
            std::fprintf(stderr, "usage: device_collectives --memory cuda|fake|host [--form "
                                 "blocking|nonblocking|persistent] [--quick]\n");
        usable = -1;
    }
    int all = 0;
    MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all <= 0) {
        if (rank == 0 && all == 0) std::printf("device_collectives: no GPU on some rank: skipped\n");
        MPI_Finalize();
        return all == 0 ? 77 : 1;
    }

    loom::tools::LoomCounters counters;
    const bool have_counters = counters.open(check::form_name("allreduce").c_str());
    const unsigned long long served0 = have_counters ? counters.served() : 0;
    const unsigned long long declined0 = have_counters ? counters.declined() : 0;

    // The fake device range is a bump allocator: emptied after each test.
    auto done = [&] {
        if (kind == "fake") fake.reset();
    };
    for (const char* a :
         {"", "ring", "ring_pipelined", "halving_doubling", "recursive_doubling", "binomial", "pat", "shm"}) {
        test_allreduce(a);
        done();
    }
    // MPI_Allreduce returns before reaching any component when count is 0.
    const unsigned long long allreduce_calls = 8 * (counts_to_test().size() - 1) * 2;
    for (const char* a : {"", "binomial", "halving_doubling", "shm"}) {
        test_reduce(a);
        done();
    }
    for (const char* a : {"", "ring", "halving_doubling", "pat"}) {
        test_reduce_scatter(false, a);
        done();
    }
    for (const char* a : {"", "ring", "halving_doubling", "pat", "shm"}) {
        test_reduce_scatter(true, a);
        done();
    }
    for (bool v : {false, true})
        for (const char* a : {"", "ring", "recursive_doubling", "bruck", "pat", "shm"}) {
            test_allgather(v, a);
            done();
        }
    for (const char* a : {"", "binomial", "scatter_allgather", "shm"}) {
        test_bcast(a);
        done();
    }
    for (const char* a : {"", "bruck", "pairwise", "shm"}) {
        test_alltoall(a);
        done();
    }
    if (have_counters && check::form == check::Form::blocking) {
        const unsigned long long served = counters.served() - served0;
        CHECK(served == allreduce_calls, "loom served %llu of the %llu allreduce calls", served, allreduce_calls);
    } else if (have_counters) {
        // A forced shm gets the shared segment in both forms: a persistent request's init makes
        // it, a non-blocking call starts its set-up and runs after it (coll_loom_call.c), so
        // forced shm is served. loom's own choice may hand small calls on; the other forced
        // algorithms are served.
        const unsigned long long served = counters.served() - served0, declined = counters.declined() - declined0;
        const unsigned long long per_algorithm = allreduce_calls / 8;
        const bool shm_served = true;
        CHECK(served + declined == allreduce_calls && (shm_served || declined >= per_algorithm) &&
                  served >= (shm_served ? 7 : 6) * per_algorithm,
              "%s: loom served %llu and declined %llu of the %llu calls", check::form_name("allreduce").c_str(), served,
              declined, allreduce_calls);
    }
    if (have_counters && kind != "host") {
        // Single copy (cma) reads other processes' memory with process_vm_readv, which device
        // memory is not: forced, every device call is handed on (on host copies), still right.
        const unsigned long long served1 = counters.served(), declined1 = counters.declined();
        test_allreduce("cma");
        done();
        const unsigned long long cma_calls = allreduce_calls / 8; // one algorithm's calls
        CHECK(counters.served() == served1 && counters.declined() - declined1 == cma_calls,
              "with cma forced loom served %llu and declined %llu device allreduce calls, expected 0 and %llu",
              counters.served() - served1, counters.declined() - declined1, cma_calls);
    }
    for (loom::Collective c : loom::all_collectives()) {
        if (std::find(std::begin(kOwnTests), std::end(kOwnTests), c) != std::end(kOwnTests)) continue;
        std::vector<std::string> algorithms{""};
        for (const loom::Algorithm& a : loom::all_algorithms())
            if (a.collective == c) algorithms.emplace_back(a.name);
        for (const std::string& a : algorithms) {
            test_from_row(c, a);
            done();
        }
        force(loom::to_string(c), "");
    }
    test_holes_and_user_ops();
    done();
    if (check::form != check::Form::blocking) {
        test_outstanding();
        done();
    }

    int failed = 0;
    MPI_Allreduce(&failures, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("device_collectives (--memory %s --form %s, %d ranks): %d failures\n", kind.c_str(), form.c_str(),
                    size, failed);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
