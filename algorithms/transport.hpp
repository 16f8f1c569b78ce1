// The narrow interfaces every loom algorithm is written against.
//
// An algorithm is a schedule: it knows ranks, sizes and byte ranges, and nothing about MPI.
// It talks to two small interfaces:
//   * Transport  - point-to-point messaging among the ranks of one collective call
//                  (post sends and receives, then wait for all of them);
//   * MemoryOps  - local data movement on the buffers of one memory kind (copy, reduce,
//                  scratch allocation), so one schedule serves host and device buffers.
// Production implements Transport over Open MPI's PML (coll_component/), tests implement it
// in-process (tests/support/inproc_transport.*). Errors are reported as TransportError and
// turned into an MPI error code at the C boundary (algorithms/entry.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace loom {

namespace topo {
class Layout;
}

// A failure of the underlying messaging layer, carrying its (MPI/OMPI) error code.
class TransportError : public std::runtime_error {
public:
    TransportError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    int code() const noexcept { return code_; }

private:
    int code_;
};

// Point-to-point messaging for one collective call. Messages between a pair of ranks match
// in the order they were posted (MPI's non-overtaking rule); every message of one call uses
// the same tag, so an algorithm must post matching sends and receives in the same order on
// both sides.
class Transport {
public:
    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Start sending `bytes` bytes from `buf` to `peer`. The buffer must stay untouched until
    // wait_all() returns.
    virtual void post_send(int peer, const void* buf, std::size_t bytes) = 0;
    // Start receiving exactly `bytes` bytes from `peer` into `buf`.
    virtual void post_recv(int peer, void* buf, std::size_t bytes) = 0;
    // Complete every operation posted since the last wait_all().
    virtual void wait_all() = 0;
    // Without blocking: 1 if every operation posted since the last wait_all() completed (that
    // ends the batch, as wait_all() would), 0 if not yet; -1 if this transport cannot tell
    // without blocking (then only wait_all() completes a batch). Segmented hierarchical
    // algorithms (overlap.hpp) poll it to run two phases at once.
    virtual int test_all() { return -1; }

    // Storage that lives as long as the communicator, for the shared-memory family
    // (algorithms/shm.*), which keeps its segment there; nullptr where the transport offers
    // none, and then shm algorithms run their messaging fallback.
    virtual void** shared_state() { return nullptr; }
    // Lets the messaging layer make progress while a rank waits on shared memory.
    virtual void progress() {}
    // Where the ranks run (topology/topology.hpp): node groups and the ring order, for the
    // hierarchical algorithms and ring ordering; nullptr where unknown (rings then run in
    // rank order, and hierarchical algorithms cannot be chosen).
    virtual const topo::Layout* layout() const { return nullptr; }
    // Like shared_state(), for the shm family on the group of this rank's node (hierarchical
    // algorithms' intra-node phases); nullptr: none, those phases then use messages.
    virtual void** node_shared_state() { return nullptr; }
    // A call that runs on the communicator's segment waits for its turn among the segment's
    // users (ShmTurns, shm_turns.hpp): a resumable operation took its turn when its MPI call was
    // made and says which here; nullptr: take one now (a blocking call).
    virtual const std::uint64_t* segment_turn() const { return nullptr; }
    // Does progress() return to whoever resumes this call (a resumable operation's fiber)?
    // Shared-memory waits then yield on every poll instead of spinning and sched_yield.
    virtual bool cooperative() const { return false; }
};

// A type-erased reduction: `fn(in, inout, count, ctx)` computes inout[i] = in[i] op inout[i]
// for `count` elements of `elem_size` bytes each. The argument order matches MPI's: for a
// non-commutative op, `in` holds the contribution of the lower-ranked side.
// `fn3(in, in2, out, count, ctx)`, where there is one (loom's own kernels), computes
// out[i] = in[i] op in2[i] in one pass: a copy of in2 to out and fn(in, out) in one.
struct Reduction {
    using Fn = void (*)(const void* in, void* inout, std::size_t count, void* ctx);
    using Fn3 = void (*)(const void* in, const void* in2, void* out, std::size_t count, void* ctx);
    std::size_t elem_size = 0;
    bool commutative = true;
    Fn fn = nullptr;
    void* ctx = nullptr;
    Fn3 fn3 = nullptr;
};

// Scratch memory owned by the algorithm for the duration of one call. The deleter is a plain
// function pointer so each memory kind frees its own allocations (host free, cudaFreeHost...).
using Scratch = std::unique_ptr<std::byte[], void (*)(std::byte*)>;
// No scratch: for a rank that needs none where others allocate.
inline Scratch no_scratch() { return Scratch(nullptr, [](std::byte*) {}); }

// Local data movement on one memory kind. HostMemory is the default; a CUDA implementation
// lives in cuda/.
class MemoryOps {
public:
    virtual ~MemoryOps() = default;
    virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
    virtual void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) = 0;
    virtual Scratch scratch(std::size_t bytes) = 0;
    // out = in op in2 (in2 may be out itself; otherwise out overlaps neither): a copy of in2 to
    // out and a reduce into it, which a memory kind with the op's fn3 does in one pass.
    virtual void reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count)
    {
        copy(out, in2, count * op.elem_size);
        reduce(op, in, out, count);
    }
};

class HostMemory final : public MemoryOps {
public:
    HostMemory() noexcept {} // user-provided: value-initialisation does not zero inline_
    void copy(void* dst, const void* src, std::size_t bytes) override;
    void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) override;
    void reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count) override;
    // Small requests come from a buffer inside this object (a HostMemory lives for one call,
    // so its scratch does too): no malloc and free on every small collective.
    Scratch scratch(std::size_t bytes) override;

private:
    static constexpr std::size_t kInlineBytes = 1024;
    alignas(64) std::byte inline_[kInlineBytes];
    std::size_t inline_used_ = 0;
};

} // namespace loom
