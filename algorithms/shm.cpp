#include "shm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sched.h>
#include <string>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

namespace loom {

// ---- the segment and its synchronisation ----

namespace {
inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}
} // namespace

std::size_t ShmComm::small_slot_bytes(std::size_t slot_bytes)
{
    return std::max<std::size_t>(64, std::min(kSmallSlotBytes, slot_bytes / 4) / 64 * 64);
}

std::size_t ShmComm::sync_area_bytes(int size) { return (kLine + kInlineArea) * std::size_t(size); }

std::size_t ShmComm::segment_bytes(int size, std::size_t slot_bytes)
{
    const std::size_t slots = std::size_t(size) + 1;
    return kLine + sync_area_bytes(size) + std::size_t(kLargeRegions) * slots * slot_bytes +
           std::size_t(kSmallRegions) * slots * small_slot_bytes(slot_bytes);
}

ShmComm::ShmComm(std::unique_ptr<ShmSegment> segment, int rank, int size, std::size_t slot_bytes)
    : ShmComm(segment->data(), rank, size, slot_bytes)
{
    segment_ = std::move(segment);
}

ShmComm::~ShmComm() { SegmentPool::instance().give(std::move(segment_)); }

ShmComm::ShmComm(std::byte* base, int rank, int size, std::size_t slot_bytes)
    : base_(base), rank_(rank), size_(size), slot_bytes_(slot_bytes), small_slot_bytes_(small_slot_bytes(slot_bytes)),
      oversubscribed_(long(size) > sysconf(_SC_NPROCESSORS_ONLN)), seen_(new std::uint64_t[std::size_t(size)]())
{}

std::uint64_t& ShmComm::counter(int rank) const
{
    return *reinterpret_cast<std::uint64_t*>(base_ + kLine * (1 + std::size_t(rank)));
}

std::byte* ShmComm::slot(int region, int rank) const
{
    const std::size_t slots = std::size_t(size_) + 1;
    std::byte* regions = base_ + kLine + sync_area_bytes(size_);
    if (region < kLargeRegions) return regions + (std::size_t(region) * slots + std::size_t(rank)) * slot_bytes_;
    return regions + std::size_t(kLargeRegions) * slots * slot_bytes_ +
           (std::size_t(region - kLargeRegions) * slots + std::size_t(rank)) * small_slot_bytes_;
}

std::byte* ShmComm::result(int region) const { return slot(region, size_); }

// Rank r's inline slots follow the counters' lines: its kSmallRegions slots of 16 bytes side
// by side, then those of 32, then those of 64. The sizes before `size` add up to size - 16
// (0, 16, 16 + 32), so its slots start at kSmallRegions x (size - 16) in the rank's area
// (the unit test "shm inline slots" checks the layout).
std::byte* ShmComm::inline_data(int region, int rank, std::size_t size) const
{
    return base_ + kLine * (1 + std::size_t(size_)) + kInlineArea * std::size_t(rank) +
           std::size_t(kSmallRegions) * (size - 16) + size * std::size_t(region - kLargeRegions);
}

// The sequence word ends the slot.
std::uint64_t& ShmComm::inline_sequence(int region, int rank, std::size_t size) const
{
    return *reinterpret_cast<std::uint64_t*>(inline_data(region, rank, size) + size - sizeof(std::uint64_t));
}

ShmComm::Mailbox& ShmComm::mailbox(int rank) const
{
    return *reinterpret_cast<Mailbox*>(base_ + kLine * (1 + std::size_t(rank)) + kLine / 2);
}

namespace {
// What the probe reads of every other rank.
const std::uint64_t probe_word = 0x6c6f6f6d2d636d61; // "loom-cma"
} // namespace

void ShmComm::probe_single_copy(bool allow, PeerMap* map)
{
    Mailbox& mine = mailbox(rank_);
    mine.pid = std::uint32_t(getpid());
    mine.addr[0] = &probe_word;
    mine.map_key = allow && map != nullptr ? map->own_key() : -1;
#ifdef PR_SET_PTRACER
    // kernel.yama.ptrace_scope 1 lets a process read only its descendants' memory unless they
    // name it; the ranks are siblings, so each names any process (as Open MPI's vader does
    // for CMA). Ignored where Yama is absent.
    if (allow) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    sync();
    bool cma = allow, mapped = mine.map_key >= 0;
    map_keys_.reset(new std::int64_t[std::size_t(size_)]);
    for (int q = 0; q < size_; ++q) {
        map_keys_[std::size_t(q)] = mailbox(q).map_key;
        if (q == rank_) continue;
        std::uint64_t word = 0;
        iovec local{&word, sizeof word}, remote{const_cast<void*>(mailbox(q).addr[0]), sizeof word};
        cma = cma && process_vm_readv(pid_t(mailbox(q).pid), &local, 1, &remote, 1, 0) == ssize_t(sizeof word) &&
              word == probe_word;
        if (mapped && map_keys_[std::size_t(q)] >= 0) {
            try {
                word = 0;
                std::memcpy(&word, map->map(map_keys_[std::size_t(q)], mailbox(q).addr[0], sizeof word), sizeof word);
                mapped = word == probe_word;
            } catch (const TransportError&) {
                mapped = false;
            }
        } else {
            mapped = false;
        }
    }
    mine.cma_ok = cma ? 1 : 0;
    mine.map_ok = mapped ? 1 : 0;
    sync();
    cma = mapped = true;
    for (int q = 0; q < size_; ++q) {
        cma = cma && mailbox(q).cma_ok == 1;
        mapped = mapped && mailbox(q).map_ok == 1;
    }
    cma_ = cma;
    peer_map_ = mapped ? map : nullptr;
    sync(); // nobody's mailbox changes before everyone has read the verdicts
}

void ShmComm::publish()
{
    ++phase_;
    std::atomic_ref<std::uint64_t>(counter(rank_)).store(phase_, std::memory_order_release);
}

// The sequence word is stored after the data (release): a reader that sees it reads the data.
void ShmComm::publish_inline(int region, std::size_t size)
{
    std::atomic_ref<std::uint64_t>(inline_sequence(region, rank_, size)).store(phase_ + 1, std::memory_order_release);
    publish();
}

void ShmComm::wait_inline(int region, int q, std::uint64_t phase, std::size_t size)
{
    if (q != rank_) await(inline_sequence(region, q, size), phase);
}

void ShmComm::wait_for(int q, std::uint64_t phase)
{
    // Counters only grow: a value seen before that satisfies the wait needs no new load (the
    // acquire that read it already ordered this rank after q's writes up to it).
    if (seen_[std::size_t(q)] >= phase) return;
    seen_[std::size_t(q)] = await(counter(q), phase);
}

std::uint64_t ShmComm::await(std::uint64_t& word, std::uint64_t phase)
{
    std::atomic_ref<std::uint64_t> other(word);
    const unsigned spin_limit = oversubscribed_ ? 0 : 64;
    std::uint64_t now;
    for (unsigned spins = 0; (now = other.load(std::memory_order_acquire)) < phase; ++spins) {
        if (spins < spin_limit) {
            cpu_relax();
            continue;
        }
        if (cooperative_) { // a resumable operation: back to its resumer, which polls again later
            progress_(progress_ctx_);
            continue;
        }
        // The rank we wait for may need this core (more ranks than cores).
        // Open MPI's progress may itself yield the CPU (oversubscribed, nothing to do): then
        // look at the word again before yielding a second time.
        if (progress_ != nullptr && (spins - spin_limit) % 64 == 0) {
            progress_(progress_ctx_);
            continue;
        }
        sched_yield();
    }
    return now;
}

void ShmComm::wait_all(std::uint64_t phase)
{
    for (int q = 0; q < size_; ++q)
        if (q != rank_) wait_for(q, phase);
}

int ShmComm::begin_chunk(std::size_t chunk)
{
    const int region = chunk == small_slot_bytes_ && chunk != slot_bytes_
                           ? kLargeRegions + int(small_chunks_++ % kSmallRegions)
                           : int(chunks_++ % kLargeRegions);
    wait_all(region_done_[region]);
    return region;
}

// ---- the collectives ----

namespace {

auto* bytes_of(const void* p) { return static_cast<const std::byte*>(p); }
auto* bytes_of(void* p) { return static_cast<std::byte*>(p); }

// A chunk in which every rank puts its data and then reads some of the others': through the
// slots (publish, then wait for every counter) or, for an inline call, through the writers'
// inline slots (publish the slot, then wait for each slot read).
struct Exchange {
    ShmComm& shm;
    int region;
    std::size_t inline_size; // the inline slot's size (ShmComm::inline_slot); 0: through the slots
    std::byte* data(int q) const
    {
        return inline_size != 0 ? shm.inline_data(region, q, inline_size) : shm.slot(region, q);
    }
    // This rank's data is in place.
    void post() const
    {
        if (inline_size != 0)
            shm.publish_inline(region, inline_size);
        else
            shm.publish();
    }
    // Through the slots: wait until every rank has posted (inline calls wait in from()).
    void await_all() const
    {
        if (inline_size == 0) shm.wait_all(shm.phase());
    }
    void publish() const { post(), await_all(); }
    // q's data, once q has published it (after publish()); inline calls wait for q's line here.
    const std::byte* from(int q) const
    {
        if (inline_size != 0) shm.wait_inline(region, q, shm.phase(), inline_size);
        return data(q);
    }
};

// out = from(P-1) op (... op (from(1) op from(0))): the slots reduced in rank order, so every
// rank gets the same bits; the first step reads two slots and writes out in one pass.
template <class From>
void fold_slots(MemoryOps& mem, const Reduction& op, int P, From from, std::byte* out, std::size_t n)
{
    if (P == 1) {
        mem.copy(out, from(0), n * op.elem_size);
        return;
    }
    mem.reduce_into(op, from(1), from(0), out, n);
    for (int q = 2; q < P; ++q) mem.reduce(op, from(q), out, n);
}

// Every rank reduces its 1/P slice of the chunk over all slots into the result area.
void reduce_slice(ShmComm& shm, MemoryOps& mem, const Reduction& op, int region, std::size_t count)
{
    const BlockPartition part(count, shm.size());
    const std::size_t es = op.elem_size;
    const std::size_t begin = part.begin(shm.rank()) * es, n = part.length(shm.rank());
    if (n == 0) return;
    fold_slots(mem, op, shm.size(), [&](int q) { return shm.slot(region, q) + begin; }, shm.result(region) + begin, n);
}

// Up to this many bytes over all slots (P x the vector), every rank that needs the result
// reduces the whole vector itself: one wait instead of two, which is what small calls cost.
// An allreduce on two ranks always does (per chunk: the other's slot reduced into one's own
// output, against half of that and a copy of the other half out after a second wait): 6-12%
// faster from 32 KiB at np 2 here (tools/lab/RESULTS.md); on 4 ranks (oversubscribed here)
// the redundant reductions cost more than the waits saved.
// A reduce's root is the only rank that needs it, and its other ranks then never wait (they
// run ahead through the small regions), so a reduce does so up to a larger size.
constexpr std::size_t kWholeReduceBytes = 4096, kWholeRootReduceBytes = 32768;

// The chunks of a reduction: each rank copies its chunk in; then either the ranks that need
// the result reduce it whole (small vectors), or every rank reduces its slice and they copy
// the result out. `root` < 0: every rank needs the result. Slots are reduced in rank order
// either way, so every rank gets the same bits.
void reduce_chunks(ShmComm& shm, MemoryOps& mem, const Reduction& op, const void* input, void* output,
                   std::size_t count, int root)
{
    const std::size_t es = op.elem_size, chunk = shm.chunk_bytes(count * es), per_chunk = chunk / es;
    const bool needs_result = root < 0 || shm.rank() == root;
    const std::size_t total = count * es * std::size_t(shm.size());
    const bool whole = root < 0 ? shm.size() == 2 || total <= kWholeReduceBytes : total <= kWholeRootReduceBytes;
    // Inline, an allreduce's slots are a line each: every rank waits for every other in every
    // call, so a shared line only makes a rank that has finished the call write next to a slot
    // the others are still reading (8 bytes at np 2: 7% slower packed where the VM was fast,
    // no difference beyond the noise where slow). A reduce's non-roots run ahead: packed, it
    // was 1.1-1.2 times faster where fast, 1.6-2.3 where slow (tools/lab/RESULTS.md).
    const std::size_t inline_size = whole ? shm.inline_slot(count * es, root >= 0) : 0;
    for (std::size_t off = 0; off < count; off += per_chunk) {
        const std::size_t n = std::min(per_chunk, count - off);
        const Exchange x{shm, shm.begin_chunk(chunk), inline_size};
        const int region = x.region;
        mem.copy(x.data(shm.rank()), bytes_of(input) + off * es, n * es);
        if (whole) {
            x.post();
            if (needs_result) {
                x.await_all();
                // In place the output is the input, which is in my slot already.
                fold_slots(mem, op, shm.size(), [&](int q) { return x.from(q); }, bytes_of(output) + off * es, n);
            }
        } else {
            x.publish();
            reduce_slice(shm, mem, op, region, n);
            shm.publish();
            if (needs_result) {
                shm.wait_all(shm.phase());
                mem.copy(bytes_of(output) + off * es, shm.result(region), n * es);
            }
        }
        shm.end_chunk_at_next_publish(region); // the next chunk's or call's copy-in publish says so
    }
}

} // namespace

void shm_barrier(ShmComm& shm) { shm.sync(); }

void shm_bcast(ShmComm& shm, MemoryOps& mem, const BcastArgs& args)
{
    const bool root = shm.rank() == args.root;
    const std::size_t chunk = shm.chunk_bytes(args.bytes);
    const std::size_t inline_size = shm.inline_slot(args.bytes);
    for (std::size_t off = 0; off < args.bytes; off += chunk) {
        const std::size_t n = std::min(chunk, args.bytes - off);
        const int region = shm.begin_chunk(chunk);
        std::byte* data = inline_size != 0 ? shm.inline_data(region, args.root, inline_size) : shm.result(region);
        if (root) {
            mem.copy(data, bytes_of(args.buf) + off, n);
        } else {
            if (inline_size != 0) // the root's copy, and only that
                shm.wait_inline(region, args.root, shm.phase() + 1, inline_size);
            else
                shm.wait_for(args.root, shm.phase() + 1);
            mem.copy(bytes_of(args.buf) + off, data, n);
        }
        if (root && inline_size != 0)
            shm.publish_inline(region, inline_size);
        else
            shm.publish();
        shm.end_chunk(region);
    }
}

void shm_allgather(ShmComm& shm, MemoryOps& mem, const AllgatherArgs& args)
{
    const int me = shm.rank();
    const BlockOffsets blocks(args.bytes);
    std::byte* out = bytes_of(args.recvbuf);
    const std::byte* mine = args.in_place() ? out + blocks.begin(me) : bytes_of(args.sendbuf);
    std::size_t longest = 0;
    for (int q = 0; q < shm.size(); ++q) longest = std::max(longest, blocks.length(q));
    const std::size_t chunk = shm.chunk_bytes(longest);
    auto piece = [&](int q, std::size_t off) {
        return blocks.length(q) > off ? std::min(chunk, blocks.length(q) - off) : 0;
    };
    const std::size_t inline_size = shm.inline_slot(longest);
    for (std::size_t off = 0; off < longest; off += chunk) {
        const Exchange x{shm, shm.begin_chunk(chunk), inline_size};
        if (const std::size_t n = piece(me, off)) mem.copy(x.data(me), mine + off, n);
        x.publish();
        for (int q = 0; q < shm.size(); ++q)
            if (const std::size_t n = q == me ? 0 : piece(q, off)) mem.copy(out + blocks.begin(q) + off, x.from(q), n);
        shm.end_chunk_at_next_publish(x.region); // the next chunk's or call's publish says so
    }
    if (!args.in_place() && blocks.length(me) != 0) mem.copy(out + blocks.begin(me), mine, blocks.length(me));
}

void shm_alltoall(ShmComm& shm, MemoryOps& mem, const AlltoallArgs& args)
{
    const int P = shm.size(), me = shm.rank();
    const std::size_t block = args.block_bytes;
    if (block == 0) return;
    // A slot holds one piece of every block this rank sends: piece j for rank j. Pieces in
    // whole 64-byte lines where they can be, so each rank's piece starts a line of its own.
    // Inline: the P blocks side by side in the inline slot.
    const std::size_t chunk = shm.chunk_bytes(std::size_t(P) * block);
    const std::size_t inline_size = shm.inline_slot(std::size_t(P) * block);
    std::size_t piece = inline_size != 0 ? block : chunk / std::size_t(P);
    if (piece >= 64) piece &= ~std::size_t(63);
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    std::byte* out = bytes_of(args.recvbuf);
    for (std::size_t off = 0; off < block; off += piece) {
        const std::size_t n = std::min(piece, block - off);
        const Exchange x{shm, shm.begin_chunk(chunk), inline_size};
        std::byte* slot = x.data(me);
        for (int j = 0; j < P; ++j)
            if (j != me) mem.copy(slot + std::size_t(j) * piece, in + std::size_t(j) * block + off, n);
        x.publish();
        // In place this overwrites [off, off + n) of each block: already copied in.
        for (int q = 0; q < P; ++q)
            if (q != me) mem.copy(out + std::size_t(q) * block + off, x.from(q) + std::size_t(me) * piece, n);
        shm.end_chunk_at_next_publish(x.region); // the next chunk's or call's publish says so
    }
    if (!args.in_place()) mem.copy(out + std::size_t(me) * block, in + std::size_t(me) * block, block);
}

void shm_allreduce(ShmComm& shm, MemoryOps& mem, const AllreduceArgs& args)
{
    reduce_chunks(shm, mem, args.op, args.in_place() ? args.recvbuf : args.sendbuf, args.recvbuf, args.count, -1);
}

void shm_reduce(ShmComm& shm, MemoryOps& mem, const ReduceArgs& args)
{
    reduce_chunks(shm, mem, args.op, args.in_place() ? args.recvbuf : args.sendbuf, args.recvbuf, args.count,
                  args.root);
}

void shm_reduce_scatter_block(ShmComm& shm, MemoryOps& mem, const ReduceScatterArgs& args)
{
    const int P = shm.size(), me = shm.rank();
    const std::size_t es = args.op.elem_size, count = args.counts[0];
    const std::size_t chunk = shm.chunk_bytes(std::size_t(P) * count * es);
    const std::size_t per_chunk = chunk / (std::size_t(P) * es); // elements of each block
    // Inline: one chunk, the blocks side by side.
    const std::size_t inline_size = shm.inline_slot(std::size_t(P) * count * es);
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    std::byte* out = bytes_of(args.recvbuf);
    for (std::size_t off = 0; off < count; off += per_chunk) {
        const std::size_t n = std::min(per_chunk, count - off), piece = n * es;
        const Exchange x{shm, shm.begin_chunk(chunk), inline_size};
        std::byte* slot = x.data(me);
        for (int j = 0; j < P; ++j)
            mem.copy(slot + std::size_t(j) * piece, in + (std::size_t(j) * count + off) * es, piece);
        x.publish();
        // In place, this overwrites block 0's elements [off, off + n): already copied in.
        fold_slots(mem, args.op, P, [&](int q) { return x.from(q) + std::size_t(me) * piece; }, out + off * es, n);
        shm.end_chunk_at_next_publish(x.region);
    }
}

// ---- setting up the segment over the transport, and the registry's entries ----

struct ShmState {
    ShmTurns turns;
    std::unique_ptr<ShmComm> comm; // null: shared memory is unavailable (or not set up yet)
};

namespace {

void progress_through(void* net) { static_cast<Transport*>(net)->progress(); }

// Rank `me` of the segment's users; single copy is settled at once (ShmComm::probe_single_copy),
// waiting for the other ranks as the call waits (an operation yields).
std::unique_ptr<ShmComm> make_comm(std::unique_ptr<ShmSegment> seg, int me, int P, SingleCopy single_copy,
                                   Transport& net)
{
    auto comm = std::make_unique<ShmComm>(std::move(seg), me, P);
    comm->set_progress(&progress_through, &net, net.cooperative());
    comm->probe_single_copy(single_copy != SingleCopy::off, single_copy == SingleCopy::any ? xpmem_map() : nullptr);
    comm->set_progress(nullptr, nullptr); // net is this call's; every later call sets its own
    return comm;
}

constexpr std::size_t kNameBytes = ShmSegment::kMaxName + 1;

// What rank 0 sends the others: the segment's name and identity ("" if it has none).
struct Offer {
    char name[kNameBytes];
    std::uint64_t id;
};

// Rank 0's segment for a communicator of P ranks, reused from the pool or new, made ready:
// its header names the P users and every sync counter is back to 0 (the segment's previous
// users are all done with it). nullptr if none can be had.
std::unique_ptr<ShmSegment> offer_segment(int P, std::size_t bytes)
{
    std::string error;
    auto seg = SegmentPool::instance().take_created(bytes);
    if (!seg) seg = ShmSegment::create(bytes, error);
    if (!seg) return nullptr;
    seg->header().users = std::uint32_t(P);
    seg->header().released = 0;
    std::memset(seg->data() + ShmComm::kLine, 0, ShmComm::sync_area_bytes(P));
    return seg;
}

std::atomic<bool> refusing{false}; // shm_refuse_segments

// Every rank returns the same verdict: rank 0 decides from everyone's answer.
std::unique_ptr<ShmComm> establish(Transport& net, SingleCopy single_copy, bool refuse_this = false)
{
    const bool refuse = refuse_this || refusing.load(std::memory_order_relaxed);
    const int P = net.size(), me = net.rank();
    const std::size_t bytes = ShmComm::segment_bytes(P);
    std::string error;
    if (P == 1) {
        if (refuse) return nullptr;
        auto seg = ShmSegment::create(bytes, error);
        if (!seg) return nullptr;
        seg->unlink();
        return make_comm(std::move(seg), 0, 1, single_copy, net);
    }
    Offer offer = {};
    unsigned char ok = 0;
    std::unique_ptr<ShmSegment> seg;
    if (me == 0) {
        if (!refuse) seg = offer_segment(P, bytes);
        if (seg) {
            std::strncpy(offer.name, seg->name().c_str(), sizeof offer.name - 1);
            offer.id = seg->header().id;
        }
        for (int q = 1; q < P; ++q) net.post_send(q, &offer, sizeof offer);
        net.wait_all();
        std::string answers(std::size_t(P), '\0');
        for (int q = 1; q < P; ++q) net.post_recv(q, &answers[std::size_t(q)], 1);
        net.wait_all();
        ok = seg && std::all_of(answers.begin() + 1, answers.end(), [](char a) { return a == 1; });
        // Everyone who could map it has: without a pool the path is no longer needed.
        if (seg && SegmentPool::instance().limit() == 0) seg->unlink();
        for (int q = 1; q < P; ++q) net.post_send(q, &ok, 1);
        net.wait_all();
    } else {
        net.post_recv(0, &offer, sizeof offer);
        net.wait_all();
        offer.name[sizeof offer.name - 1] = '\0';
        if (offer.name[0] != '\0' && !refuse) {
            seg = SegmentPool::instance().take_attached(offer.name, offer.id, bytes);
            if (!seg) seg = ShmSegment::attach(offer.name, bytes, error);
            // The name may now be another file (a pooled segment's creator evicted it and
            // reused the descriptor): the identity says.
            if (seg && seg->header().id != offer.id) seg.reset();
        }
        const unsigned char mapped = seg ? 1 : 0;
        net.post_send(0, &mapped, 1);
        net.wait_all();
        net.post_recv(0, &ok, 1);
        net.wait_all();
    }
    if (!ok) return nullptr; // nobody uses it: no one gives it back, it is simply unmapped
    return make_comm(std::move(seg), me, P, single_copy, net);
}

// The communicator's ShmComm, set up on first use; null if shared memory is unavailable.
ShmComm* shm_of(Transport& net, SingleCopy single_copy = SingleCopy::off, bool refuse = false)
{
    void** slot = net.shared_state();
    if (slot == nullptr) return nullptr;
    if (*slot == nullptr) {
        auto state = std::make_unique<ShmState>();
        state->comm = establish(net, single_copy, refuse);
        *slot = state.release();
    }
    return static_cast<ShmState*>(*slot)->comm.get();
}

} // namespace

void shm_release(void* state) { delete static_cast<ShmState*>(state); }

ShmComm* shm_state_comm(void* state) { return static_cast<ShmState*>(state)->comm.get(); }

bool shm_setup(Transport& net, SingleCopy single_copy, bool refuse) { return shm_of(net, single_copy, refuse) != nullptr; }

ShmComm* shm_comm(Transport& net)
{
    ShmComm* comm = shm_of(net);
    if (comm != nullptr) comm->set_progress(&progress_through, &net);
    return comm;
}

std::uint64_t shm_begin_setup(void** slot)
{
    if (*slot != nullptr) throw std::logic_error("shm_begin_setup: the communicator has a segment state already");
    auto state = std::make_unique<ShmState>();
    const std::uint64_t turn = state->turns.take();
    *slot = state.release();
    return turn;
}

void shm_setup_in_turn(Transport& net, SingleCopy single_copy)
{
    void** slot = net.shared_state();
    if (slot == nullptr || *slot == nullptr) throw std::logic_error("shm_setup_in_turn: no shm_begin_setup");
    auto& state = *static_cast<ShmState*>(*slot);
    struct EndTurn {
        ShmTurns& turns;
        ~EndTurn() { turns.end(); }
    } end{state.turns};
    state.comm = establish(net, single_copy);
}

void shm_refuse_segments(bool refuse) { refusing.store(refuse, std::memory_order_relaxed); }

ShmTurns& shm_state_turns(void* state) { return static_cast<ShmState*>(state)->turns; }

namespace {
// The communicator's state, its segment set up on first use where the transport keeps state.
ShmState& state_for_turn(Transport& net)
{
    void** slot = net.shared_state();
    if (slot == nullptr) throw ShmUnavailable("shm: the communicator has no shared-memory segment");
    if (*slot == nullptr) (void)shm_of(net);
    return *static_cast<ShmState*>(*slot);
}
} // namespace

SegmentTurn::SegmentTurn(Transport& net) : state_(state_for_turn(net))
{
    const std::uint64_t* given = net.segment_turn();
    const std::uint64_t turn = given != nullptr ? *given : state_.turns.take();
    state_.turns.wait_for(turn, net);
    shm_ = state_.comm.get();
    if (shm_ == nullptr) {
        state_.turns.end();
        throw ShmUnavailable("shm: the communicator has no shared-memory segment");
    }
    shm_->set_progress(&progress_through, &net, net.cooperative());
}

SegmentTurn::~SegmentTurn() { state_.turns.end(); }

ShmComm& SegmentTurn::comm_fitting(std::size_t per_slot) const
{
    if (per_slot > shm_->slot_bytes()) throw ShmUnavailable("shm: an element is larger than a slot");
    return *shm_;
}

void shm_barrier(Transport& net, MemoryOps&, const BarrierArgs&)
{
    const SegmentTurn turn(net);
    shm_barrier(turn.comm());
}

void shm_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args)
{
    const SegmentTurn turn(net);
    shm_bcast(turn.comm(), mem, args);
}

void shm_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const SegmentTurn turn(net);
    shm_allgather(turn.comm(), mem, args);
}

void shm_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args)
{
    const SegmentTurn turn(net);
    shm_alltoall(turn.comm_fitting(std::size_t(net.size())), mem, args); // a byte of every block per slot
}

void shm_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const SegmentTurn turn(net);
    shm_allreduce(turn.comm_fitting(args.op.elem_size), mem, args);
}

void shm_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args)
{
    const SegmentTurn turn(net);
    shm_reduce(turn.comm_fitting(args.op.elem_size), mem, args);
}

void shm_reduce_scatter_block(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    const SegmentTurn turn(net);
    shm_reduce_scatter_block(turn.comm_fitting(std::size_t(net.size()) * args.op.elem_size), mem, args);
}

} // namespace loom
