// Argument records of the collectives loom implements, in element counts, MPI-free.
#pragma once

#include "loom_c_api.h"
#include "neighbourhood.hpp" // NeighbourArgs: the neighbourhood collectives' record
#include "transport.hpp"

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace loom {

struct Algorithm; // registry.hpp

// Argument records, one per collective. Reductions count elements of op.elem_size bytes
// (dense, end to end); data-movement collectives count bytes. All buffers are host or device
// memory of one kind, accessed through MemoryOps. "In place" follows MPI_IN_PLACE.

// MPI_Allreduce.
struct AllreduceArgs {
    const void* sendbuf; // nullptr or == recvbuf: in place (recvbuf holds the input)
    void* recvbuf;
    std::size_t count;
    Reduction op;
    std::size_t segment_bytes = 0;      // pipelined algorithms: bytes per segment (0: default)
    std::size_t buffer_bytes = 0;       // PAT: the bounded intermediate buffer (0: default)
    const Algorithm* leaders = nullptr; // hierarchical: what the node leaders run (nullptr: default)
    std::size_t radix = 0;              // k-nomial: the exchange's radix (0: default)

    bool in_place() const { return sendbuf == nullptr || sendbuf == recvbuf; }
};

// MPI_Reduce_scatter (and _block, where every count is equal). Rank i's block of the result
// holds counts[i] elements; blocks are laid out in rank order in the input.
struct ReduceScatterArgs {
    const void* sendbuf;                 // sum(counts) elements; nullptr: in place
    void* recvbuf;                       // counts[rank] elements; in place: holds the whole
                                         // input, and the result goes to its start
    std::span<const std::size_t> counts; // one per rank, the same on every rank
    Reduction op;
    std::size_t buffer_bytes = 0;       // PAT: the bounded intermediate buffer (0: default)
    const Algorithm* leaders = nullptr; // hierarchical: what the node leaders run (nullptr: default)
    std::size_t segment_bytes = 0;      // segmented hierarchical: bytes per segment (0: default)

    bool in_place() const { return sendbuf == nullptr; }
};

// MPI_Allgather (and v), MPI_Gather. Rank i contributes bytes[i] bytes; the result holds all
// blocks in rank order, densely (block i starts at bytes[0] + ... + bytes[i-1]) - on every rank,
// or for a gather (root >= 0) on the root only: another rank's recvbuf is nullptr (or, from
// device staging, a buffer holding its own block at its place with sendbuf nullptr, which the
// algorithm may use as scratch).
struct AllgatherArgs {
    const void* sendbuf;                // bytes[rank] bytes; nullptr: in place, the block
                                        // is already at its place in recvbuf
    void* recvbuf;                      // sum(bytes) bytes
    std::span<const std::size_t> bytes; // one per rank, the same on every rank
    std::size_t buffer_bytes = 0;       // PAT: the bounded intermediate buffer (0: default)
    const Algorithm* leaders = nullptr; // hierarchical: what the node leaders run (nullptr: default)
    int root = -1;                      // gather: the rank that gets the result
    std::size_t radix = 0;              // k-nomial: the tree's radix (0: default)
    std::size_t segment_bytes = 0;      // segmented hierarchical: bytes per segment (0: default)

    bool in_place() const { return sendbuf == nullptr; }
};

// Pipelined algorithms' segment where the call sets none (ring_pipelined allreduce, the linear
// scans): coll_loom_segment_size's default.
constexpr std::size_t kDefaultSegmentBytes = std::size_t(256) << 10;

// K-nomial trees' radix (knomial.hpp): the default where none is set, and the largest
// (loom_c_api.h's, which the glue's parameter check reads too).
constexpr std::size_t kDefaultRadix = LOOM_KNOMIAL_RADIX_DEFAULT, kMaxRadix = LOOM_KNOMIAL_RADIX_MAX;

// MPI_Bcast of `bytes` bytes from `root`.
struct BcastArgs {
    void* buf;
    std::size_t bytes;
    int root;
    std::size_t segment_bytes = 0;      // pipelined algorithms: bytes per segment (0: default)
    const Algorithm* leaders = nullptr; // hierarchical: what the node leaders run (nullptr: default)
    std::size_t radix = 0;              // k-nomial: the tree's radix (0: default)
};

// MPI_Reduce to `root`.
struct ReduceArgs {
    const void* sendbuf; // nullptr: in place (root only: recvbuf holds root's input)
    void* recvbuf;       // the result, significant at root only (may be nullptr elsewhere)
    std::size_t count;
    Reduction op;
    int root;
    const Algorithm* leaders = nullptr; // hierarchical: what the node leaders run (nullptr: default)
    std::size_t radix = 0;              // k-nomial: the tree's radix (0: default)

    bool in_place() const { return sendbuf == nullptr; }
};

// MPI_Barrier.
struct BarrierArgs {
    std::size_t radix = 0; // k-nomial: the tree's radix (0: default)
};

// MPI_Alltoall: block i of sendbuf goes to rank i, block j of recvbuf comes from rank j.
struct AlltoallArgs {
    const void* sendbuf; // P x block_bytes; nullptr: in place (recvbuf holds the input)
    void* recvbuf;       // P x block_bytes
    std::size_t block_bytes;

    bool in_place() const { return sendbuf == nullptr || sendbuf == recvbuf; }
};

// MPI_Scan: rank r's recvbuf gets x_0 op x_1 op ... op x_r (the inclusive prefix, in rank order);
// MPI_Exscan: x_0 op ... op x_{r-1} (rank 0's recvbuf is left as it was).
struct ScanArgs {
    const void* sendbuf; // nullptr or == recvbuf: in place (recvbuf holds the input)
    void* recvbuf;
    std::size_t count;
    Reduction op;
    std::size_t segment_bytes = 0; // pipelined algorithms: bytes per segment (0: default)

    bool in_place() const { return sendbuf == nullptr || sendbuf == recvbuf; }
};

// MPI_Scatter (and v): the root's sendbuf holds every rank's block in rank order, densely (block i
// of bytes[i] bytes starts at bytes[0] + ... + bytes[i-1]); rank i's recvbuf gets block i.
// MPI_Scatterv's other ranks know only their own count: there bytes[j] for j != rank is 0, and
// the algorithms listed for scatterv read only their own entry away from the root.
struct ScatterArgs {
    const void* sendbuf;                // the root: sum(bytes) bytes; nullptr elsewhere
    void* recvbuf;                      // bytes[rank] bytes; at the root nullptr means in
                                        // place (its block stays in sendbuf)
    std::span<const std::size_t> bytes; // one per rank
    int root = 0;
    std::size_t radix = 0; // k-nomial: the tree's radix (0: default)

    bool root_in_place() const { return recvbuf == nullptr; } // meaningful at the root only
};

// MPI_Alltoallv (and w): block i of sendbuf (send_bytes[i] bytes) goes to rank i, block j of
// recvbuf (recv_bytes[j] bytes) comes from rank j; each buffer's blocks lie end to end in rank
// order (the glue packs gapped or reordered displacements into such a view). A rank knows only
// its own counts; MPI requires send_bytes[i] here == recv_bytes[rank] on rank i.
struct AlltoallvArgs {
    const void* sendbuf; // nullptr: in place (recvbuf holds the input; send_bytes == recv_bytes)
    void* recvbuf;
    std::span<const std::size_t> send_bytes, recv_bytes; // one per rank each
    std::size_t max_requests = 0; // linear: requests in flight per direction (0: default)

    bool in_place() const { return sendbuf == nullptr; }
};

// `count` elements split into `parts` blocks as evenly as possible: the first count % parts
// blocks hold one element more. Blocks may be empty when count < parts.
class BlockPartition {
public:
    BlockPartition(std::size_t count, int parts) : base_(count / std::size_t(parts)), extra_(count % std::size_t(parts))
    {}
    std::size_t begin(int block) const { return std::size_t(block) * base_ + std::min(std::size_t(block), extra_); }
    std::size_t length(int block) const { return base_ + (std::size_t(block) < extra_ ? 1 : 0); }
    std::size_t max_length() const { return base_ + (extra_ != 0 ? 1 : 0); }

private:
    std::size_t base_;
    std::size_t extra_;
};

// n values of T, inline up to N (a small communicator's per-rank values: no allocation on a
// small call), on the heap beyond. Inline values are unset until written, as with new T[n].
template <class T, std::size_t N = 64>
class PerRank {
public:
    explicit PerRank(std::size_t n) : n_(n)
    {
        if (n > N) heap_.resize(n);
    }
    T* data() { return n_ > N ? heap_.data() : inline_; }
    const T* data() const { return n_ > N ? heap_.data() : inline_; }
    std::size_t size() const { return n_; }
    T& operator[](std::size_t i) { return data()[i]; }
    const T& operator[](std::size_t i) const { return data()[i]; }
    operator std::span<const T>() const { return {data(), n_}; }

private:
    std::size_t n_;
    T inline_[N];
    std::vector<T> heap_;
};

// Offsets of variable-sized blocks laid end to end: offset(i) = sizes[0] + ... + sizes[i-1].
// Up to 64 blocks (communicators of up to 64 ranks) they are kept inline: a small call
// allocates nothing (a malloc and free were 180 instructions of an 8-byte MPI_Iallgather).
class BlockOffsets {
public:
    explicit BlockOffsets(std::span<const std::size_t> sizes) : offsets_(sizes.size() + 1)
    {
        offsets_[0] = 0;
        for (std::size_t i = 0; i < sizes.size(); ++i) offsets_[i + 1] = offsets_[i] + sizes[i];
    }
    std::size_t begin(int block) const { return offsets_[std::size_t(block)]; }
    std::size_t length(int block) const { return offsets_[std::size_t(block) + 1] - offsets_[std::size_t(block)]; }
    // The span of blocks [first, last): contiguous, since blocks are laid end to end.
    std::size_t span_length(int first, int last) const
    {
        return offsets_[std::size_t(last)] - offsets_[std::size_t(first)];
    }
    std::size_t total() const { return offsets_[offsets_.size() - 1]; }

private:
    PerRank<std::size_t, 65> offsets_;
};

// Up to N values pushed one by one (a binomial tree's children: at most lg P < 32).
template <class T, std::size_t N = 32>
class FixedList {
public:
    void push_back(const T& v) { items_[n_++] = v; }
    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    T& operator[](std::size_t i) { return items_[i]; }
    const T& operator[](std::size_t i) const { return items_[i]; }
    T* begin() { return items_; }
    T* end() { return items_ + n_; }
    const T* begin() const { return items_; }
    const T* end() const { return items_ + n_; }

private:
    T items_[N];
    std::size_t n_ = 0;
};

// Euclidean modulo, for rank arithmetic such as (rank - step) mod P.
inline int mod(int a, int p) { return ((a % p) + p) % p; }

} // namespace loom
