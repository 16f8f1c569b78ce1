// Argument records of the collectives loom implements, in element counts, MPI-free.
#pragma once

#include "transport.hpp"

#include <algorithm>
#include <cstddef>

namespace loom {

// MPI_Allreduce on contiguous elements of op.elem_size bytes.
struct AllreduceArgs {
    const void* sendbuf; // nullptr or == recvbuf: in place (recvbuf holds the input)
    void* recvbuf;
    std::size_t count;
    Reduction op;

    bool in_place() const { return sendbuf == nullptr || sendbuf == recvbuf; }
};

// `count` elements split into `parts` blocks as evenly as possible: the first count % parts
// blocks hold one element more. Blocks may be empty when count < parts.
class BlockPartition {
public:
    BlockPartition(std::size_t count, int parts)
        : base_(count / std::size_t(parts)), extra_(count % std::size_t(parts)) {}
    std::size_t begin(int block) const { return std::size_t(block) * base_ + std::min(std::size_t(block), extra_); }
    std::size_t length(int block) const { return base_ + (std::size_t(block) < extra_ ? 1 : 0); }
    std::size_t max_length() const { return base_ + (extra_ != 0 ? 1 : 0); }

private:
    std::size_t base_;
    std::size_t extra_;
};

// Euclidean modulo, for rank arithmetic such as (rank - step) mod P.
inline int mod(int a, int p) { return ((a % p) + p) % p; }

} // namespace loom
