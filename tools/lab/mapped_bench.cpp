// loom-mapped-bench: the single-copy family (cma) through a mapping - the path XPMEM takes -
// beside the same algorithms over CMA and beside the single-copy bound, all in one process.
// The ranks are P threads (tests/support's in-process transport): the mapping is then the
// address itself (SameProcessMap), and CMA's process_vm_readv reads this process's own memory,
// through the same system call as between processes. What it cannot show: XPMEM's own costs
// (an xpmem_attach and page faults the first time a range is mapped; the cache keeps them off
// repeat calls) and anything that differs between processes and threads. It estimates, on a
// machine without XPMEM, how close the mapped schedules come to the bound.
//
//   loom-mapped-bench [--np 2] [--bytes 64K,256K,1M,4M,16M] [--repeats 5] [--time 0.02]
//
// Per collective with a cma algorithm the bound covers (kTimed: allreduce,
// reduce_scatter_block, allgather, bcast; doubles, sum) and size
// (loom's message size, as loom-bench's), the median over --repeats runs of about --time
// seconds each of: the bound (every thread copying and reducing what the formula of
// tools/bench/bound.hpp counts, all at once), cma through the mapping, cma over CMA;
// microseconds per call, and each as % of the bound.
#include "inproc_transport.hpp"
#include "reduce_kernels.hpp"
#include "registry.hpp"
#include "shm.hpp"
#include "single_copy.hpp"
#include "size_text.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Buffers {
    std::vector<double> send, recv, scratch;
};

// A collective the bench times: its cma algorithm, and the bound's work for it (bound.hpp's
// formulas: reduce and copy (P-1) blocks, reduce them, copy S, copy S with the root idle).
struct Timed {
    Collective collective;
    void (*cma)(InprocTransport& net, HostMemory& mem, Buffers& b, std::size_t S); // S: the message size
    bool reduce_others, copy_others, copy_all, root_idle;
};

const Reduction& sum() { static const Reduction r = *find_kernel(LOOM_OP_SUM, LOOM_TYPE_DOUBLE); return r; }

const Timed kTimed[] = {
    {Collective::allreduce,
     [](InprocTransport& net, HostMemory& mem, Buffers& b, std::size_t S) {
         cma_allreduce(net, mem, AllreduceArgs{b.send.data(), b.recv.data(), S / sizeof(double), sum()});
     },
     true, true, false, false},
    {Collective::reduce_scatter_block,
     [](InprocTransport& net, HostMemory& mem, Buffers& b, std::size_t S) {
         const auto P = std::size_t(net.size());
         cma_reduce_scatter(net, mem,
                            ReduceScatterArgs{b.send.data(), b.recv.data(),
                                              std::vector<std::size_t>(P, S / sizeof(double) / P), sum()});
     },
     true, false, false, false},
    {Collective::allgather,
     [](InprocTransport& net, HostMemory& mem, Buffers& b, std::size_t S) {
         const auto P = std::size_t(net.size());
         cma_allgather(net, mem,
                       AllgatherArgs{b.send.data(), b.recv.data(),
                                     std::vector<std::size_t>(P, S / sizeof(double) / P * sizeof(double))});
     },
     false, false, true, false},
    {Collective::bcast,
     [](InprocTransport& net, HostMemory& mem, Buffers& b, std::size_t S) {
         cma_bcast(net, mem, BcastArgs{b.recv.data(), S, 0});
     },
     false, false, true, true},
};

// What rank r does once, for contender `what` (0: the bound's copy and reduce, 1: cma mapped,
// 2: cma over CMA), on buffers of the message size S.
void once(const Timed& t, int what, InprocTransport& net, HostMemory& mem, Buffers& b, std::size_t S)
{
    const int P = net.size(), r = net.rank();
    const std::size_t n = S / sizeof(double), block = n / std::size_t(P);
    if (what != 0) return t.cma(net, mem, b, S);
    const std::size_t other = (n - block) * sizeof(double);
    if (t.reduce_others) mem.reduce(sum(), b.send.data(), b.scratch.data(), other / sizeof(double));
    if (t.copy_others) mem.copy(b.recv.data(), b.scratch.data(), other);
    if (t.copy_all && !(t.root_idle && r == 0)) mem.copy(b.recv.data(), b.scratch.data(), S);
}

} // namespace

int main(int argc, char** argv)
{
    int P = 2, repeats = 5;
    double run_time = 0.02;
    std::vector<std::size_t> sizes = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--np")
            P = std::atoi(v), ++i;
        else if (a == "--repeats")
            repeats = std::atoi(v), ++i;
        else if (a == "--time")
            run_time = std::atof(v), ++i;
        else if (a == "--bytes") {
            sizes.clear();
            std::string s = v;
            for (std::size_t at = 0; at <= s.size();) {
                const std::size_t comma = std::min(s.find(',', at), s.size());
                try {
                    sizes.push_back(loom::tools::parse_size(s.substr(at, comma - at)));
                } catch (const std::invalid_argument& e) {
                    std::fprintf(stderr, "loom-mapped-bench: --bytes: %s\n", e.what());
                    return 2;
                }
                at = comma + 1;
            }
            ++i;
        } else {
            std::fprintf(stderr, "usage: loom-mapped-bench [--np 2] [--bytes 64K,1M] [--repeats 5] [--time 0.02]\n");
            return 2;
        }
    }
    if (P < 2 || repeats < 1) {
        std::fprintf(stderr, "loom-mapped-bench: --np must be at least 2 and --repeats at least 1\n");
        return 2;
    }
    SameProcessMap map;
    std::printf("# loom-mapped-bench: np %d (threads of one process), microseconds per call, median of %d runs\n", P,
                repeats);
    for (const Timed& c : kTimed) {
        std::printf("\n%s\n%10s %10s %10s %10s %14s %14s\n", std::string(to_string(c.collective)).c_str(), "bytes", "bound", "mapped", "cma",
                    "mapped %bound", "cma %bound");
        for (std::size_t S : sizes) {
            long calls_of[3] = {}; // rank 0's choice, read by every rank
            std::vector<double> runs[3];
            run_ranks(P, [&](InprocTransport& net) {
                HostMemory mem;
                shm_setup(net, SingleCopy::cma_only);
                ShmComm& shm = *shm_comm(net);
                const std::size_t n = S / sizeof(double);
                Buffers b{std::vector<double>(n, 1.0), std::vector<double>(n, 0.0), std::vector<double>(n, 2.0)};
                for (int rep = 0; rep < repeats; ++rep) {
                    for (int what = 0; what < 3; ++what) {
                        if (what != 0) shm.probe_single_copy(true, what == 1 ? &map : nullptr);
                        once(c, what, net, mem, b, S); // warm: pages touched, ranges mapped
                        shm_barrier(shm);
                        // Calls per run from one timed call, the same on every rank (rank 0's).
                        double t0 = now();
                        once(c, what, net, mem, b, S);
                        shm_barrier(shm);
                        if (net.rank() == 0) calls_of[what] = std::max(1L, long(run_time / std::max(now() - t0, 1e-7)));
                        shm_barrier(shm);
                        const long calls = calls_of[what];
                        t0 = now();
                        for (long k = 0; k < calls; ++k) once(c, what, net, mem, b, S);
                        shm_barrier(shm);
                        if (net.rank() == 0) runs[what].push_back((now() - t0) / double(calls) * 1e6);
                        shm_barrier(shm);
                    }
                }
            });
            double med[3];
            for (int w = 0; w < 3; ++w) {
                std::sort(runs[w].begin(), runs[w].end());
                med[w] = runs[w][runs[w].size() / 2];
            }
            std::printf("%10zu %10.2f %10.2f %10.2f %14.0f %14.0f\n", S, med[0], med[1], med[2], 100 * med[0] / med[1],
                        100 * med[0] / med[2]);
            std::fflush(stdout);
        }
    }
    return 0;
}
