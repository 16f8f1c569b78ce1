// The shared-memory family: collectives among ranks that share a node, through one segment
// per communicator instead of the PML (no matching, no protocol, no per-message copies).
//
// Segment (ShmComm::segment_bytes): a 128-byte line with the segment's header
// (ShmSegment::Header: who uses it, for SegmentPool), one line per rank holding its sync
// counter and, in its second half, its mailbox (separate lines: no false sharing), then each
// rank's kSmallRegions inline lines (below), then kLargeRegions (4) large data regions, each with a
// slot of slot_bytes per rank and a result area of slot_bytes, then kSmallRegions small regions laid
// out alike with small_slot_bytes. A call whose data fits a small slot uses the next small
// region in turn: a rooted collective's ranks may then run up to kSmallRegions calls ahead of
// the slowest (back-to-back small bcasts and reduces pipeline, as eager messages do, instead
// of running in lockstep). Larger messages go in chunks of slot_bytes through the large
// regions in turn, so a chunk's copy-in overlaps the copy-out of the previous ones (four
// rather than two regions made bcasts of 64 KiB - 1 MiB 12-23% faster at 4 ranks here).
// Memory: (P + 1) x (128 B + 4 x 32 KiB + 16 x 4 KiB) + P x 1.75 KiB, about 194 KiB per rank (12.3 MiB at 64
// ranks), once per communicator that uses shm; a freed communicator's segment is kept for
// reuse (SegmentPool, shm_segment.hpp), at most coll_loom_shm_pool segments per process.
//
// Synchronisation: every rank has a counter of the phases it has finished; publish() bumps
// it (release store), wait_for(q, s) / wait_all(s) wait until rank q's / every counter is >= s
// (acquire loads); the last value seen of each counter is remembered, so a wait already
// satisfied costs no load of another core's line. Every rank goes through the same phases, so counters never need
// resetting, and a rank waits only for the ranks whose data it needs: a bcast's receivers
// wait for the root alone, and the root for nobody, so back-to-back bcasts and reduces
// pipeline instead of running as barriers. A chunk writes its region only once every rank has
// finished the last chunk that used it (begin_chunk()).
// Inline calls: where every rank puts at most kInlineBytes (56) in its slot, a call's data
// goes instead into the writer's inline slot of the small region, beside a sequence word the
// writer stores (release) after the data: a reader waits for that word, not for the writer's
// counter, and finds the data in the same line. One cache line crosses between cores per call
// where the counter and the slot made two, one after the other: an 8-byte bcast of two
// processes on this VM took 0.10 us against 0.20 when a line's round trip was slow (about
// 500 ns), 0.041 against 0.060 when it was fast (loom-shm-inline-bench; tools/lab/RESULTS.md).
// The inline slots come in three sizes, the smallest that holds the call's data plus the
// word: 16 bytes (8 of data), 32 (24) and 64 (56), each rank having 16 of each size side by
// side (kInlineArea). So up to four back-to-back calls share a line: a rank that runs ahead
// (a bcast's root, a reduce's non-roots) hands the reader one line per four 8-byte calls, as
// Open MPI's vader packs small messages into its fast boxes. An 8-byte bcast of two processes
// took 0.074 us against 0.158 with a line per call where a line's round trip was slow, 0.031
// against 0.041 where it was fast (loom-shm-inline-bench --bytes 8; RESULTS.md, "Tiny calls
// packed four to a line"). An allreduce keeps a line per slot (reduce_chunks in shm.cpp).
// The counters are still published as in every call, for the regions' turns.
// A waiting rank spins briefly, then yields the CPU and keeps MPI progressing; when the
// communicator has more ranks than the node has CPUs it yields at once: the rank it waits for
// needs the core. Open MPI's progress yields too when oversubscribed and idle
// (mpi_yield_when_idle), so a wait looks at its word again after a progress call instead of
// yielding a second time: that double yield made oversubscribed shm calls 1.2-1.9x slower
// (tools/lab/RESULTS.md, "Oversubscribed shm waits").
//
// Costs per chunk of m bytes on P ranks (c = copy, g = reduce per byte, s = one wait for all):
//   barrier: s. bcast: root copies m in; the others wait for the root and copy m out.
//   allgather: each copies its m in, s, each copies (P-1) m out.
//   allreduce / reduce: each copies m in, s, each reduces a 1/P slice over P slots
//     (m g, split across ranks, not one rank reducing everything), s, each copies m out.
//     Up to P m = 4 KiB (an allreduce on 2 ranks: always) the ranks that need the result
//     reduce all P slots themselves instead: one wait, not two (P m g is tiny there; waiting
//     is what costs); a reduce, whose
//     root alone needs the result, does so up to P m = 32 KiB. A reduce's non-roots then
//     never wait, except for a region to be free.
//   reduce_scatter_block: each copies its whole input chunk in, s, each reduces its block.
//   Inline (at most 56 bytes in a slot): as above without the copy through a slot, and the
//     waits read the writers' lines; the reductions reduce whole.
//   alltoall: a chunk is a piece of each of a rank's P - 1 outgoing blocks (its slot holds
//     the piece for rank j at j x slot/P); each copies its pieces in, s, each copies the
//     piece meant for it out of every other slot: (P-1) b in and out per rank, b the block,
//     one sync per chunk of slot/P bytes of each block (4 KiB small slots while P b fits one).
// Limits: all ranks on one node (registry need `same_node`); commutative ops only for the
// reductions; elements (and, for reduce_scatter_block, P elements) must fit one slot; alltoall
// at most slot_bytes ranks (a byte of every block per slot).
#pragma once

#include "collectives.hpp"
#include "peer_map.hpp"
#include "shm_segment.hpp"
#include "shm_turns.hpp"

#include <stdexcept>

#include <atomic>
#include <cstdint>
#include <memory>

namespace loom {

class ShmComm {
public:
    static constexpr std::size_t kSlotBytes = 32 * 1024;
    static constexpr std::size_t kSmallSlotBytes = 4096; // at most; see small_slot_bytes()
    static constexpr int kSmallRegions = 16;
    static constexpr int kLargeRegions = 4;
    static constexpr std::size_t kLine = 128;
    static constexpr std::size_t kInlineLine = 64, kInlineBytes = kInlineLine - sizeof(std::uint64_t);
    // One rank's inline slots: kSmallRegions of 16, of 32 and of 64 bytes (the 16-byte ones
    // first), a multiple of kLine.
    static constexpr std::size_t kInlineArea = std::size_t(kSmallRegions) * (16 + 32 + 64);
    static std::size_t segment_bytes(int size, std::size_t slot_bytes = kSlotBytes);
    // The bytes after the header line that must read zero when a new communicator starts
    // using a segment (the sync counters and the inline slots' sequence words among them).
    static std::size_t sync_area_bytes(int size);
    // The small slots: kSmallSlotBytes, or a quarter of slot_bytes if that is less (tests
    // with tiny slots), in whole lines of 64 bytes (at least 64).
    static std::size_t small_slot_bytes(std::size_t slot_bytes);

    // Over a segment it owns (production) or over memory mapped by other means (tests that
    // fork); `base` must be zero-filled, shared, and segment_bytes(size, slot_bytes) long.
    ShmComm(std::unique_ptr<ShmSegment> segment, int rank, int size, std::size_t slot_bytes = kSlotBytes);
    ShmComm(std::byte* base, int rank, int size, std::size_t slot_bytes = kSlotBytes);
    // Gives its segment (if it owns one) to the process's SegmentPool.
    ~ShmComm();
    ShmComm(const ShmComm&) = delete;
    ShmComm& operator=(const ShmComm&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    std::size_t slot_bytes() const { return slot_bytes_; }
    std::size_t small_slot_bytes() const { return small_slot_bytes_; }
    // The chunk size of a call that puts at most `bytes` in any one slot: the small slot if
    // it fits, else slot_bytes. Every rank must ask with the same bytes.
    std::size_t chunk_bytes(std::size_t bytes) const
    {
        return bytes <= small_slot_bytes_ ? small_slot_bytes_ : slot_bytes_;
    }

    // Called while waiting (MPI progress); set per call, since the transport is per call.
    // `cooperative`: fn returns to whoever resumes the call (a resumable operation's fiber
    // yields), so a wait calls it on every poll after a short spin, and never sched_yield.
    using ProgressFn = void (*)(void* ctx);
    void set_progress(ProgressFn fn, void* ctx, bool cooperative = false)
    {
        progress_ = fn, progress_ctx_ = ctx, cooperative_ = cooperative;
    }

    // Publishes that this rank finished one more phase (a release store of its counter).
    void publish();
    std::uint64_t phase() const { return phase_; }
    // Waits until rank q (every rank) has published at least `phase` (acquire loads).
    void wait_for(int q, std::uint64_t phase);
    void wait_all(std::uint64_t phase);
    // A barrier: publish, then wait for everyone to reach the same phase.
    void sync()
    {
        publish();
        wait_all(phase_);
    }
    // Starts a chunk of `chunk` bytes per slot (chunk_bytes()): returns its region - the next
    // small or the next large one in turn, the same on every rank - once every
    // rank has finished the last chunk that used it, so it may be overwritten.
    int begin_chunk(std::size_t chunk);
    // Ends a chunk after a publish() that says this rank is done with it: every rank has
    // finished it once every counter reaches this phase.
    void end_chunk(int region) { region_done_[region] = phase_; }
    // Ends a chunk without a publish of its own: every rank's next publish() (the next
    // chunk's or call's first) comes after it has finished this one, so the region is free
    // once every counter passes this phase. Saves a store to the line the others poll, per
    // chunk (small allgathers and allreduces 1.1-1.4x faster at np 2; tools/lab/RESULTS.md).
    // No deadlock: that next publish may wait (a bcast's receivers wait for the root), but
    // only for publishes of the next chunk, while the region comes round again kLargeRegions
    // (or kSmallRegions) chunks later. Every collective that frees a region so must publish
    // at least once per chunk, as all of them do.
    void end_chunk_at_next_publish(int region) { region_done_[region] = phase_ + 1; }
    std::byte* slot(int region, int rank) const;
    std::byte* result(int region) const;

    // Inline calls (at most kInlineBytes in any rank's slot, in a small region): the writer
    // copies its data to inline_data(region, rank, size) and calls publish_inline(region, size)
    // instead of publish(); a reader waits with wait_inline(region, writer, phase, size) - the
    // phase the writer published - and then reads the writer's inline_data. `size` is the
    // inline slot's, inline_slot(bytes), the same on every rank.
    // The inline slot of a call that puts at most `bytes` in any rank's slot: 16, 32 or 64
    // (the smallest that holds them and the sequence word; 64 unless `pack`), or 0 (not
    // inline). Every rank must ask with the same bytes and pack.
    std::size_t inline_slot(std::size_t bytes, bool pack = true) const
    {
        if (inline_ == InlineMode::off || bytes > kInlineBytes || small_slot_bytes_ == slot_bytes_) return 0;
        if (inline_ == InlineMode::lines || !pack) return kInlineLine;
        return bytes <= 8 ? 16 : bytes <= 24 ? 32 : 64;
    }
    // Inline calls packed (the default), one line per call, or off; the same on every rank
    // between calls: for measuring what they save (tools/lab/shm_inline_bench.cpp).
    enum class InlineMode { packed, lines, off };
    void set_inline(InlineMode mode) { inline_ = mode; }
    std::byte* inline_data(int region, int rank, std::size_t size) const;
    void publish_inline(int region, std::size_t size);
    void wait_inline(int region, int q, std::uint64_t phase, std::size_t size);

    // Each rank's mailbox, in the second half of its counter's line: written by its owner
    // before a publish(), read by the others after waiting for that phase. The single-copy
    // family (single_copy.hpp) puts its process id and mapping key there and, per call, the
    // addresses of its buffers, which the others then read (process_vm_readv, or a mapping).
    struct Mailbox {
        std::uint32_t pid;
        std::uint8_t cma_ok, map_ok;
        std::int64_t map_key;
        const void* addr[2];
    };
    static_assert(sizeof(Mailbox) <= kLine / 2);
    Mailbox& mailbox(int rank) const;
    // Can every rank read every other rank's memory (by CMA or by a mapping)? Settled once,
    // the same answer on every rank, by probe_single_copy().
    bool single_copy() const { return cma_ || peer_map_ != nullptr; }
    // The mapping every rank reads the others' memory through (XPMEM), or null: CMA then.
    PeerMap* peer_map() const { return peer_map_; }
    // A readable view of `bytes` at `remote` in rank q's process, or null if there is no
    // mapping (the caller copies with process_vm_readv). q's own memory is its own view.
    const std::byte* view(int q, const void* remote, std::size_t bytes) const
    {
        if (q == rank_) return static_cast<const std::byte*>(remote);
        return peer_map_ != nullptr ? peer_map_->map(map_keys_[std::size_t(q)], remote, bytes) : nullptr;
    }
    // Every rank calls it once, at the same point, after the segment is set up (again to
    // change the verdict, as tests do): each rank that `allow`s it tries to read a word of
    // every other rank's memory, with process_vm_readv and through `map` if it has one
    // (xpmem_map() in production); each mechanism is on only if every rank succeeded with it
    // (Linux's ptrace rules, e.g. kernel.yama.ptrace_scope, may refuse CMA; a node without
    // /dev/xpmem has no map). With both, the mapping serves.
    void probe_single_copy(bool allow, PeerMap* map = nullptr);

private:
    static constexpr int kRegions = kLargeRegions + kSmallRegions;
    std::uint64_t& counter(int rank) const;
    std::uint64_t& inline_sequence(int region, int rank, std::size_t size) const;
    // Waits until `word` (another rank's counter or sequence) is >= phase; returns its value.
    std::uint64_t await(std::uint64_t& word, std::uint64_t phase);
    std::unique_ptr<ShmSegment> segment_;
    std::byte* base_;
    int rank_, size_;
    std::size_t slot_bytes_, small_slot_bytes_;
    bool oversubscribed_;
    bool cma_ = false;
    PeerMap* peer_map_ = nullptr;
    std::unique_ptr<std::int64_t[]> map_keys_; // each rank's key, read once by the probe
    std::uint64_t phase_ = 0, chunks_ = 0, small_chunks_ = 0;
    std::uint64_t region_done_[kRegions] = {};
    std::unique_ptr<std::uint64_t[]> seen_; // the last value read of each rank's counter
    ProgressFn progress_ = nullptr;
    void* progress_ctx_ = nullptr;
    bool cooperative_ = false;
    InlineMode inline_ = InlineMode::packed;
};

// One call's hold on the communicator's segment (the shm and cma entries): waits for the
// call's turn (ShmTurns, shm_turns.hpp: the transport's segment_turn() or a new one), then
// points the segment's waits at this call's transport; ends the turn when destroyed, also when
// the call throws. Throws ShmUnavailable if the communicator has no segment: at once, holding
// no turn, where the transport keeps no state; else at the call's turn, which then ends (a
// set-up that failed, shm_begin_setup, is known only then).
struct ShmState; // a communicator's turns and segment (shm.cpp), in a transport's shared_state()
class SegmentTurn {
public:
    explicit SegmentTurn(Transport& net);
    ~SegmentTurn();
    SegmentTurn(const SegmentTurn&) = delete;
    SegmentTurn& operator=(const SegmentTurn&) = delete;
    ShmComm& comm() const { return *shm_; }
    // The segment, if `per_slot` bytes (an element, or what a rank must put in one slot) fit a
    // slot; else ShmUnavailable on every rank alike (the turn ends as it unwinds).
    ShmComm& comm_fitting(std::size_t per_slot) const;

private:
    ShmState& state_;
    ShmComm* shm_ = nullptr;
};

// The collectives on a ShmComm: every rank calls with the same arguments (MPI's rules). The
// family's gather(v), scatter(v) and alltoallv are in shm_exchange.hpp, scan and exscan in shm_scan.hpp.
void shm_barrier(ShmComm& shm);
void shm_bcast(ShmComm& shm, MemoryOps& mem, const BcastArgs& args);
void shm_allgather(ShmComm& shm, MemoryOps& mem, const AllgatherArgs& args);
void shm_allreduce(ShmComm& shm, MemoryOps& mem, const AllreduceArgs& args);
void shm_reduce(ShmComm& shm, MemoryOps& mem, const ReduceArgs& args);
void shm_reduce_scatter_block(ShmComm& shm, MemoryOps& mem, const ReduceScatterArgs& args);
void shm_alltoall(ShmComm& shm, MemoryOps& mem, const AlltoallArgs& args);

// The registry's entries: they run on the communicator's segment, nothing else (the chooser
// picks them only where the segment exists: Needs::segment, Needs::element_in_slot). The
// segment is set up by shm_setup() (the glue calls it once the communicator has used enough
// calls to pay it back), or by the first shm call where the transport keeps per-communicator
// state (tests, tools): rank 0 takes a free segment from its pool or creates one
// (shm_segment.hpp: an anonymous memory file, never named in /dev/shm) and sends its path and
// identity over the transport, the others find their kept mapping of it or map it and
// answer, and rank 0 tells everyone whether all succeeded. Without a segment (any rank could
// not map it, or the transport keeps no state), or with an element larger than a slot, every
// rank throws ShmUnavailable: no other algorithm runs under shm's name.
struct ShmUnavailable : std::logic_error {
    using std::logic_error::logic_error;
};
void shm_barrier(Transport& net, MemoryOps& mem, const BarrierArgs& args);
void shm_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);
void shm_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void shm_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void shm_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args);
void shm_reduce_scatter_block(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);
void shm_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args);

// The communicator's ShmComm, set up on first use where the transport keeps state; null if
// shared memory is unavailable (the same answer on every rank). For algorithms built on the
// shm family (hierarchical's intra-node phases).
ShmComm* shm_comm(Transport& net);

// Frees what the shm family kept in a transport's shared_state() (null: nothing).
void shm_release(void* state);
// The ShmComm kept in a transport's shared_state(); null if the communicator has no segment
// (it could not be had, or a set-up below has not ended).
ShmComm* shm_state_comm(void* state);
// The communicator's turns, kept there too (ShmTurns).
ShmTurns& shm_state_turns(void* state);

// Makes the communicator's segment now (kept in net.shared_state()), if it has none yet:
// every rank of the communicator calls it at the same point. True if shared memory is usable
// (the same answer on every rank). The entry points above also make it on first use.
// `single_copy`: what this rank allows the single-copy family (ShmComm::probe_single_copy):
// off, any mechanism (XPMEM where usable, else CMA), or CMA only; a segment set up on first
// use (the entry points above, shm_comm) has it off.
enum class SingleCopy { off = 0, any = 1, cma_only = 2 };
// The C interface's single_copy (0, 1, 2: coll_loom_single_copy) as a SingleCopy.
inline SingleCopy single_copy_from(int single_copy)
{
    return single_copy == 1 ? SingleCopy::any : single_copy == 2 ? SingleCopy::cma_only : SingleCopy::off;
}
// `refuse`: this rank will not map a segment for this set-up (a persistent request's own segment
// past coll_loom_shm_persistent_max, a local bound); the set-up then fails on every rank alike.
bool shm_setup(Transport& net, SingleCopy single_copy = SingleCopy::off, bool refuse = false);

// The segment set up inside an operation (a non-blocking call's: it may run after the call
// returned, and ends at different times on different ranks), in two steps:
//   shm_begin_setup    when the MPI call is made: makes the state in *slot, which must be
//                      empty, and takes the first turn, the set-up's (returned);
//   shm_setup_in_turn  in the operation, over a transport whose shared_state() is that slot:
//                      sets the segment up as shm_setup does, then ends the set-up's turn, also
//                      if it throws.
// Calls that take turns meanwhile find at their turn the segment, or ShmUnavailable on every
// rank if it could not be had (rank 0's verdict, sent to all).
std::uint64_t shm_begin_setup(void** slot);
// A testing switch (coll_loom_shm_refuse): this process offers no segment and maps none that
// others offer, as a rank that cannot map one; every set-up on a communicator with such a rank
// fails, the same on every rank.
void shm_refuse_segments(bool refuse);
void shm_setup_in_turn(Transport& net, SingleCopy single_copy);

} // namespace loom
