// loom-core-rtt: the round trip of one cache line between two CPUs, in nanoseconds.
//
//   loom-core-rtt [CPU_A CPU_B]      (default 0 1)
//   loom-core-rtt --version
//
// Two threads, pinned to CPU_A and CPU_B, hand a counter back and forth through two cache lines
// (each waits for the other's store, then stores): the time per round trip is what every
// handshake of a shared-memory algorithm (loom's shm flags, Open MPI's vader fifo) pays at
// least twice. It prints the median of 5 runs of 20,000 round trips (about 2-10 ms in all).
//
// Why it exists: on a virtual machine the host places the virtual CPUs, and may move them. On
// loom's development VM (2 vCPUs, AMD EPYC) this round trip is about 100-120 ns for minutes,
// then about 500 ns for minutes (two vCPUs on one core complex or not), and in the slow state
// shm and the large-message algorithms take 2.5-5x longer while Open MPI's point-to-point
// bcast barely changes (tools/lab/RESULTS.md, "The VM's two states"). loom-bench-compare runs
// this before each job and compares jobs that found the machine in the same state.
// Exit status 2 (and nothing printed) if the two CPUs cannot be had.
#include "tool_version.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr long kTrips = 20000;
constexpr int kRuns = 5;

struct alignas(64) Line {
    std::atomic<long> value{0};
};

bool pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Nanoseconds per round trip between the calling thread (on cpu_a) and a thread on cpu_b, or
// a negative value if either cannot be pinned.
double one_run(int cpu_a, int cpu_b)
{
    Line ping, pong;
    std::atomic<int> pinned{0}; // 1: the other thread is on cpu_b, -1: it could not be
    std::thread other([&] {
        pinned = pin(cpu_b) ? 1 : -1;
        if (pinned < 0) return;
        for (long i = 1; i <= kTrips; ++i) {
            while (ping.value.load(std::memory_order_acquire) != i) {}
            pong.value.store(i, std::memory_order_release);
        }
    });
    while (pinned == 0) {}
    if (pinned < 0 || !pin(cpu_a)) {
        if (pinned > 0) { // let the other thread finish its loop
            for (long i = 1; i <= kTrips; ++i) {
                ping.value.store(i, std::memory_order_release);
                while (pong.value.load(std::memory_order_acquire) != i) {}
            }
        }
        other.join();
        return -1;
    }
    const auto start = std::chrono::steady_clock::now();
    for (long i = 1; i <= kTrips; ++i) {
        ping.value.store(i, std::memory_order_release);
        while (pong.value.load(std::memory_order_acquire) != i) {}
    }
    const auto end = std::chrono::steady_clock::now();
    other.join();
    return std::chrono::duration<double, std::nano>(end - start).count() / kTrips;
}

} // namespace

int main(int argc, char** argv)
{
    if (loom::tools::print_version_if_asked(argc, argv, "loom-core-rtt")) return 0;
    int cpu_a = 0, cpu_b = 1;
    if (argc == 3) {
        cpu_a = std::atoi(argv[1]);
        cpu_b = std::atoi(argv[2]);
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: loom-core-rtt [CPU_A CPU_B] | --version\n");
        return 2;
    }
    if (cpu_a == cpu_b || std::thread::hardware_concurrency() < 2) return 2;
    std::vector<double> runs;
    for (int r = 0; r < kRuns; ++r) {
        const double ns = one_run(cpu_a, cpu_b);
        if (ns < 0) return 2;
        runs.push_back(ns);
    }
    std::sort(runs.begin(), runs.end());
    std::printf("%.0f\n", runs[kRuns / 2]);
    return 0;
}
