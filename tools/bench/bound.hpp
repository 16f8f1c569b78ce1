// The single-copy lower bound of a collective on one node (issue 20): what the call would
// cost if every byte were moved once, straight between the ranks' user buffers, and every
// reduction done once, with all ranks working at the same time. Measured, not assumed: the
// time for every rank at once to copy (memcpy) and to reduce (a += b on doubles) buffers of
// the sizes involved, the slowest rank's median, so memory bandwidth shared between cores,
// caches and (with more ranks than cores) ranks taking turns are all in it.
//
// With S loom's message size, P ranks, b = S / P (one rank's block), copy(x) and reduce(x)
// the measured seconds to copy / reduce x bytes on every rank at once:
//   allreduce             reduce((P-1) b) + copy((P-1) b)  each rank reduces its block from
//                                                         the P inputs, then copies the other
//                                                         P-1 blocks of the result
//   reduce_scatter_block  reduce((P-1) b)                 each rank reduces its block only
//   allgather             copy(P b)                       each rank copies the others' blocks
//                                                         and its own (loom-bench's calls are out
//                                                         of place: every rank writes all P
//                                                         blocks of its receive buffer)
//   bcast                 copy(S), the root idle          each non-root copies the message
// (at P = 2: allreduce = reduce(S/2) + copy(S/2)). Other collectives have no bound here.
// A model of the data movement, not of latency: at small sizes every real call costs more.
#pragma once

#include "registry.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <tuple>

namespace loom::bench {

class SingleCopyBound {
public:
    // `seconds`: about how long each measurement runs. Every rank of MPI_COMM_WORLD must make
    // the same calls in the same order (they measure together).
    SingleCopyBound(int rank, int size, double seconds) : rank_(rank), size_(size), seconds_(seconds) {}

    // True for the collectives with a bound (above).
    static bool has_bound(Collective c);

    // Rank 0: the bound in seconds for `c` at message size `bytes` (others: 0); nothing for a
    // collective without a bound. Measurements are kept per size, so a size is measured once.
    std::optional<double> seconds(Collective c, std::size_t bytes);

private:
    enum class Op { copy, reduce };
    // Rank 0's value: seconds for the slowest working rank to run `op` on `bytes` (with
    // root_idle rank 0 only waits); each (op, bytes, root_idle) is measured once.
    double measure(Op op, std::size_t bytes, bool root_idle = false);
    int rank_, size_;
    double seconds_;
    std::map<std::tuple<Op, std::size_t, bool>, double> measured_;
};

} // namespace loom::bench
