// Staging: running loom's algorithms on buffers the network cannot read directly (GPU memory
// behind an Open MPI built without CUDA support), by copying through host buffers.
//
// The algorithms themselves stay as they are: they run on host staging buffers with
// HostMemory, so every collective and every algorithm serves device buffers. What this file
// adds is the movement between the user's buffers and the staging buffers, over a small
// asynchronous-copy interface (AsyncCopier) that has a CUDA implementation (cuda/device.cpp)
// and a host one (DeferredHostCopier, used by the unit tests). Nothing here knows MPI or CUDA.
//
// Every collective is pipelined in segments, the model being gloo's
// cuda_allreduce_ring_chunked: while the algorithm communicates segment i on the host,
// segment i+1 is being copied from the device and the result of segment i-1 is being copied
// back. Three staging slots rotate:
//
//   time ->      step 0        step 1          step 2          step 3
//   in  lane     copy in 0,1   copy in 2       copy in 3       -
//   algorithm    run 0         run 1           run 2           run 3
//   out lane     -             copy out 0      copy out 1      copy out 2, then 3
//
// (copy in i+1 is posted before run i starts; copy out i is posted when run i ends; a slot is
// refilled only after its previous result was copied out.) Each segment is a complete
// collective call of its own on every rank, so the segmentation must be the same on every
// rank: it depends only on the call's sizes (the same on every rank) and the segment size.
//
//   allreduce, reduce, bcast       segment i is the i-th range of S bytes of the vector;
//   reduce_scatter(_block),        segment i holds the i-th piece of every rank's block (a
//   allgather(v), alltoall         piece is S/P bytes, at least min(S, 16 KiB), so that a
//                                  segment's call is not all latency at large P), packed
//                                  densely in the slot: a call of the same collective with
//                                  the pieces' sizes as its counts.
#pragma once

#include "loom_c_api.h"
#include "registry.hpp"
#include "transport.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loom {

// The copy engine of one memory kind, as staging uses it: host staging buffers, and copies
// on two lanes (each completes its copies in posting order, the lanes independently of each
// other, like two CUDA streams).
class AsyncCopier {
public:
    enum class Lane { in, out }; // in: user buffer -> staging buffer; out: staging -> user
    virtual ~AsyncCopier() = default;
    // A host buffer the copies may use (pinned memory for CUDA), of at least `bytes` bytes.
    virtual Scratch host_buffer(std::size_t bytes) = 0;
    // Starts copying; neither buffer may be touched until a wait covers the copy.
    virtual void copy(Lane lane, void* dst, const void* src, std::size_t bytes) = 0;
    // A ticket for every copy posted on `lane` so far.
    virtual std::uint64_t mark(Lane lane) = 0;
    // Returns once every copy the ticket covers is complete.
    virtual void wait(Lane lane, std::uint64_t ticket) = 0;
};

// The host implementation, strict like the in-process transport: a copy is queued and done
// only when a wait covers it, so a schedule that reads a staging buffer before waiting, or
// refills a slot before its result went out, gets wrong data in the tests. It can also log
// what happened, for tests of the overlap.
class DeferredHostCopier final : public AsyncCopier {
public:
    Scratch host_buffer(std::size_t bytes) override;
    void copy(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    std::uint64_t mark(Lane lane) override;
    void wait(Lane lane, std::uint64_t ticket) override;

    // "in N" / "out N" when a copy of N bytes is posted, "wait in" / "wait out" when a wait
    // does copies, and whatever the test adds with note().
    void note(std::string what) { log_.push_back(std::move(what)); }
    const std::vector<std::string>& log() const { return log_; }
    std::size_t copies() const { return copies_; }

private:
    struct Pending {
        void* dst;
        const void* src;
        std::size_t bytes;
    };
    struct LaneState {
        std::vector<Pending> queue; // posted, not yet done
        std::uint64_t posted = 0;   // copies posted so far
        std::uint64_t done = 0;     // copies done so far
    };
    LaneState& state(Lane lane) { return lane == Lane::in ? in_ : out_; }
    LaneState in_, out_;
    std::vector<std::string> log_;
    std::size_t copies_ = 0;
};

// Staging slots of the segmented pipeline, and the default segment size (1 MiB: a segment
// is a whole collective call, so segments much smaller than that add per-call latency).
inline constexpr int kStagingSlots = 3;
inline constexpr std::size_t kDefaultStagingSegment = std::size_t(1) << 20;

// The segment size used for a message of `bytes` bytes of `elem_size`-byte elements: the
// requested size (0: the default) rounded down to whole elements, at least one element.
std::size_t staging_segment_bytes(std::size_t requested, std::size_t elem_size);

// The pipeline itself: for each of `segments` segments, `fill(i, slot, post)` posts the copies
// that bring segment i into its slot (post(dst, src, bytes)), `communicate(i, slot)` runs the
// algorithm on it once they are complete, and `drain(i, slot, post)` posts the copies of the
// result out of it. Slots hold `slot_bytes` bytes.
using PostCopy = std::function<void(void* dst, const void* src, std::size_t bytes)>;
void stage_pipeline(AsyncCopier& copier, std::size_t segments, std::size_t slot_bytes,
                    const std::function<void(std::size_t i, std::byte* slot, const PostCopy& post)>& fill,
                    const std::function<void(std::size_t i, std::byte* slot)>& communicate,
                    const std::function<void(std::size_t i, std::byte* slot, const PostCopy& post)>& drain);

// The pipeline on one contiguous range: `bytes` bytes at `src` (nullptr: this rank has no
// input) are copied to a staging slot segment by segment; `communicate(slot, offset, length)`
// runs on each (offset and length in bytes within the message); the slot is then copied to
// `dst` at the same offset (nullptr: this rank keeps no result). `segment` must be non-zero.
void stage_segments(AsyncCopier& copier, const void* src, void* dst, std::size_t bytes, std::size_t segment,
                    const std::function<void(std::byte* slot, std::size_t offset, std::size_t length)>& communicate);

// Runs `algorithm` on one call whose buffers are in the copier's memory kind (or any mix of
// kinds the copier can copy), staging them through host buffers as described above. The
// call is described as the glue describes it (loom_call_t); call.staging_bytes is the
// segment size (0: the default).
void run_staged(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call);

} // namespace loom
