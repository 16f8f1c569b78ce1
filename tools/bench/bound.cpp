#include "bound.hpp"

#include "bench_core.hpp"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace loom::bench {

bool SingleCopyBound::has_bound(Collective c)
{
    return c == Collective::allreduce || c == Collective::reduce_scatter_block || c == Collective::allgather ||
           c == Collective::bcast;
}

std::optional<double> SingleCopyBound::seconds(Collective c, std::size_t bytes)
{
    if (!has_bound(c)) return std::nullopt;
    const std::size_t p = std::size_t(size_), others = bytes / p * (p - 1);
    if (size_ < 2 || bytes == 0) return 0.0;
    if (c == Collective::allreduce) return measure(Op::reduce, others) + measure(Op::copy, others);
    if (c == Collective::reduce_scatter_block) return measure(Op::reduce, others);
    if (c == Collective::allgather) return measure(Op::copy, bytes); // its own block too: out of place
    if (c == Collective::bcast) return measure(Op::copy, bytes, true);
    return std::nullopt; // not reached: has_bound names these four
}

// Every rank (but an idle root) runs `op` on `bytes` at the same time, timed over enough
// repetitions for about seconds_ / 2, three times; rank 0 keeps the slowest rank's median.
// The start is a barrier loom does not serve (MPI_Ibarrier), so a job with loom counts nothing.
double SingleCopyBound::measure(Op op, std::size_t bytes, bool root_idle)
{
    const auto key = std::make_tuple(op, bytes, root_idle);
    if (auto it = measured_.find(key); it != measured_.end()) return it->second;
    const bool working = !(root_idle && rank_ == 0);
    const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(double));
    std::vector<double> a(n, 1.0), b(n, 2.0), out(n, 0.0);
    // The empty asm tells the compiler the stores are used, so repeating them is not elided.
    auto run = [&] {
        if (op == Op::copy)
            std::memcpy(out.data(), a.data(), n * sizeof(double));
        else
            for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
        asm volatile("" : : "r"(out.data()) : "memory");
    };
    run(); // warm: pages touched, caches as they will be
    // Repetitions for about seconds_ / 2, the same on every rank (the slowest rank's estimate).
    const double t0 = MPI_Wtime();
    run();
    const double once = std::max(MPI_Wtime() - t0, 1e-7);
    const double slowest = from_root(long(1e9 * max_over_ranks(once, rank_, size_)), size_) / 1e9;
    const long reps = std::clamp(long(seconds_ / 2 / std::max(slowest, 1e-7)), 1L, 1000000L);
    std::vector<double> runs;
    for (int r = 0; r < 3; ++r) {
        sleeping_barrier();
        const double start = MPI_Wtime();
        if (working)
            for (long i = 0; i < reps; ++i) run();
        runs.push_back((MPI_Wtime() - start) / double(reps));
    }
    // An idle root reports 0, so the slowest working rank decides.
    return measured_[key] = max_over_ranks(working ? median(runs) : 0.0, rank_, size_);
}

} // namespace loom::bench
