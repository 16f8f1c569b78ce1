// loom-shm-inline-bench: what shm's inline slots save (algorithms/shm.hpp, "Inline calls"):
// the same tiny calls with inline slots packed (the default: up to four calls share a line),
// one line per call, and off (through the slots), in turn, between two processes over one
// shared mapping, pinned to CPUs 0 and 1 - no MPI, so nothing but the protocol differs.
//
//   loom-shm-inline-bench [--bytes 8] [--calls 50000] [--blocks 8]
//
// Per collective (bcast and reduce from rank 0, allreduce, allgather, alltoall,
// reduce_scatter_block ("rsb"); doubles, sum, --bytes per rank: loom's message size, but
// allgather's and alltoall's blocks are --bytes / 2, and rsb's --bytes / 16 doubles),
// --blocks triples of runs of --calls calls each, the three modes in a rotating order; prints
// each block's microseconds per call (packed / lines / slots) and the medians. On a machine
// whose speed changes over seconds (loom's development VM: run loom-core-rtt before and after),
// compare the columns of one block. --bytes above 24 measure packed and lines alike (a call of
// 25-56 bytes has a line of its own), above 56 (ShmComm::kInlineBytes) all three alike.
// Exit status 2: bad arguments or no two CPUs to pin to.
#include "reduce_kernels.hpp"
#include "shm.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace loom;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

const char* const kNames[] = {"bcast", "reduce", "allreduce", "allgather", "alltoall", "rsb"};
constexpr int kCollectives = 6;

// One call of collective c on `bytes` per rank.
void call(int c, ShmComm& shm, MemoryOps& mem, const Reduction& sum, std::size_t bytes, std::vector<double>& in,
          std::vector<double>& out)
{
    switch (c) {
    case 0: shm_bcast(shm, mem, BcastArgs{in.data(), bytes, 0}); break;
    case 1: shm_reduce(shm, mem, ReduceArgs{in.data(), out.data(), bytes / 8, sum, 0}); break;
    case 2: shm_allreduce(shm, mem, AllreduceArgs{in.data(), out.data(), bytes / 8, sum}); break;
    case 3: {
        const std::size_t blocks[] = {bytes / 2, bytes / 2};
        shm_allgather(shm, mem, AllgatherArgs{in.data(), out.data(), blocks});
        break;
    }
    case 4: shm_alltoall(shm, mem, AlltoallArgs{in.data(), out.data(), bytes / 2}); break;
    default: {
        const std::size_t counts[] = {bytes / 16, bytes / 16};
        shm_reduce_scatter_block(shm, mem, ReduceScatterArgs{in.data(), out.data(), counts, sum});
        break;
    }
    }
}

} // namespace

int main(int argc, char** argv)
{
    std::size_t bytes = 8;
    long calls = 50000, blocks = 8;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        long v = value != nullptr ? std::strtol(value, nullptr, 10) : 0;
        if (value == nullptr || v < 1) {
            std::fprintf(stderr, "loom-shm-inline-bench: %s wants a number >= 1\n", arg.c_str());
            return 2;
        }
        if (arg == "--bytes" && v >= 8 && v % 8 == 0 && v <= 4096)
            bytes = std::size_t(v);
        else if (arg == "--calls")
            calls = v;
        else if (arg == "--blocks")
            blocks = v;
        else {
            std::fprintf(stderr, "usage: loom-shm-inline-bench [--bytes 8] [--calls 50000] [--blocks 8]\n"
                                 "       (--bytes: a multiple of 8 from 8 to 4096)\n");
            return 2;
        }
        ++i;
    }
    constexpr int P = 2;
    const std::size_t segment = ShmComm::segment_bytes(P);
    void* memory = mmap(nullptr, segment, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    // Rank 1's times come back through a pipe.
    int times[2];
    if (memory == MAP_FAILED || pipe(times) != 0) {
        std::perror("loom-shm-inline-bench");
        return 2;
    }
    const pid_t child = fork();
    const int rank = child == 0 ? 1 : 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rank, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        std::fprintf(stderr, "loom-shm-inline-bench: rank %d cannot run on CPU %d\n", rank, rank);
        if (rank == 1) _exit(2);
        waitpid(child, nullptr, 0);
        return 2;
    }
    ShmComm shm(static_cast<std::byte*>(memory), rank, P);
    HostMemory mem;
    const Reduction sum = *find_kernel(LOOM_OP_SUM, LOOM_TYPE_DOUBLE);
    std::vector<double> in(bytes / 8 + 1, 1.0), out(bytes / 4 + 1);
    constexpr int kModes = 3;
    const ShmComm::InlineMode modes[kModes] = {ShmComm::InlineMode::packed, ShmComm::InlineMode::lines,
                                               ShmComm::InlineMode::off};
    std::vector<double> us[kModes][kCollectives]; // [mode][collective], this rank's
    for (long b = 0; b < blocks; ++b)
        for (int c = 0; c < kCollectives; ++c)
            for (int k = 0; k < kModes; ++k) {
                const int m = int((b + k) % kModes);
                shm.set_inline(modes[m]);
                shm_barrier(shm);
                const double t0 = now();
                for (long i = 0; i < calls; ++i) call(c, shm, mem, sum, bytes, in, out);
                shm_barrier(shm);
                us[m][c].push_back((now() - t0) / double(calls) * 1e6);
            }
    if (rank == 1) { // the slower rank's time counts, as loom-bench's does
        for (auto& per : us)
            for (auto& v : per)
                if (write(times[1], v.data(), v.size() * sizeof(double)) < 0) _exit(1);
        _exit(0);
    }
    for (auto& per : us)
        for (auto& v : per) {
            std::vector<double> theirs(v.size());
            if (read(times[0], theirs.data(), theirs.size() * sizeof(double)) !=
                ssize_t(theirs.size() * sizeof(double)))
                return 1;
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], theirs[i]);
        }
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("shm between two processes on CPUs 0 and 1, %zu bytes, %ld calls per run: microseconds per call, "
                "packed / lines / slots\n",
                bytes, calls);
    for (int c = 0; c < kCollectives; ++c) {
        std::printf("%-10s median %.3f / %.3f / %.3f   blocks:", kNames[c], median(us[0][c]), median(us[1][c]),
                    median(us[2][c]));
        for (long b = 0; b < blocks; ++b)
            std::printf(" %.3f/%.3f/%.3f", us[0][c][std::size_t(b)], us[1][c][std::size_t(b)],
                        us[2][c][std::size_t(b)]);
        std::printf("\n");
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
