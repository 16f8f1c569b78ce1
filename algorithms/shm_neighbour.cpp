// The neighbourhood collectives on shared memory: the streams, tables and chunks of
// shm_neighbour.hpp.
#include "shm_neighbour.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace loom {

namespace {

auto* bytes_of(const void* p) { return static_cast<const std::byte*>(p); }
auto* bytes_of(void* p) { return static_cast<std::byte*>(p); }

constexpr std::size_t kUnset = ~std::size_t(0);
constexpr std::size_t kHeadSlot = 16; // the inline slot holding a rank's left-over (8 bytes of data)

// Chunk 0's slot: the left-over (in the inline line where chunk 0 takes a small region, else in
// the slot's first line), the table (alltoall forms: one entry per rank, in whole lines), then
// the stream's first bytes. A small slot while the table fits one (up to 504 ranks, where it
// holds 32 bytes of stream), else a large one (up to 4088 ranks).
struct FirstChunk {
    std::size_t bytes;     // the chunk's size: ShmComm::small_slot_bytes() or slot_bytes()
    bool inline_head;      // the left-over in the inline line (small region) or the slot's first line
    std::size_t table_at;  // where the table starts in the slot
    std::size_t stream_at; // where the stream's first bytes start, and how many fit: bytes - stream_at
    FirstChunk(const ShmComm& shm, bool same_block)
    {
        const std::size_t table = same_block ? 0 : (std::size_t(shm.size()) * 8 + 63) / 64 * 64;
        inline_head = table + 32 <= shm.small_slot_bytes() && shm.small_slot_bytes() != shm.slot_bytes();
        bytes = inline_head ? shm.small_slot_bytes() : shm.slot_bytes();
        table_at = inline_head ? 0 : 64;
        stream_at = table_at + table;
    }
    bool fits() const { return stream_at <= bytes; }
    std::size_t room() const { return bytes - stream_at; }
};

// One side's edges, as this rank sees them: where each block is in the user's buffer and in the
// stream (this rank's for its sends, its source's for its receives; kUnset: not in any stream).
struct Edges {
    PerRank<std::size_t, 65> at, stream_at;
    explicit Edges(std::size_t n) : at(n), stream_at(n) {}
};

// The bytes of [begin, begin + len) that fall in the chunk [lo, hi), as [a, b); empty if a >= b.
struct Piece {
    std::size_t a, b;
};
Piece overlap(std::size_t begin, std::size_t len, std::size_t lo, std::size_t hi)
{
    return {std::max(begin, lo), std::min(begin + len, hi)};
}

class Call {
public:
    Call(ShmComm& shm, MemoryOps& mem, const NeighbourArgs& args)
        : shm_(shm), mem_(mem), args_(args), n_(args.neighbours), me_(shm.rank()), P_(shm.size()),
          sends_(n_.destinations.size()), recvs_(n_.sources.size()), cursor_(std::size_t(P_)),
          first_(shm, args.same_block), first_room_(first_.room())
    {}

    void run()
    {
        lay_out_sends();
        // Chunk 0: the table and the stream's first bytes in the slot, the left-over beside
        // them, which every rank then reads of every other.
        const int region = shm_.begin_chunk(first_.bytes);
        std::byte* slot = shm_.slot(region, me_);
        write_table(slot + first_.table_at);
        write_piece(slot + first_.stream_at, 0, first_room_);
        const std::uint64_t left = stream_ > first_room_ ? stream_ - first_room_ : 0;
        std::uint64_t most = left;
        if (first_.inline_head) { // one line per rank to wait for and read
            std::memcpy(shm_.inline_data(region, me_, kHeadSlot), &left, sizeof left);
            shm_.publish_inline(region, kHeadSlot);
        } else {
            std::memcpy(slot, &left, sizeof left);
            shm_.publish();
            shm_.wait_all(shm_.phase());
        }
        for (int q = 0; q < P_; ++q) {
            if (q == me_) continue;
            if (first_.inline_head) shm_.wait_inline(region, q, shm_.phase(), kHeadSlot);
            std::uint64_t theirs;
            std::memcpy(&theirs, first_.inline_head ? shm_.inline_data(region, q, kHeadSlot) : shm_.slot(region, q),
                        sizeof theirs);
            most = std::max(most, theirs);
        }
        find_receives(region);
        read_piece(region, first_.stream_at, 0, first_room_, false);
        shm_.end_chunk_at_next_publish(region); // the next chunk's or call's publish says so
        copy_self_edges();
        // Chunks 1 .. N: the rest of every stream, in small or large slots.
        const std::size_t chunk = shm_.chunk_bytes(std::size_t(most));
        for (std::size_t lo = first_room_; lo < first_room_ + most; lo += chunk) {
            const int r = shm_.begin_chunk(chunk);
            write_piece(shm_.slot(r, me_), lo, lo + chunk);
            shm_.publish();
            read_piece(r, 0, lo, lo + chunk, true);
            shm_.end_chunk_at_next_publish(r);
        }
    }

private:
    ShmComm& shm_;
    MemoryOps& mem_;
    const NeighbourArgs& args_;
    const Neighbourhood& n_;
    const int me_, P_;
    Edges sends_, recvs_;
    PerRank<std::size_t, 65> cursor_; // per rank: a group's place in a stream
    const FirstChunk first_;
    const std::size_t first_room_;
    std::size_t stream_ = 0; // this rank's stream's length

    bool to_other(int q) const { return q != kNoNeighbour && q != me_; }

    // Where each send block is in the send buffer and in this rank's stream, and the stream's
    // length. Alltoall forms: the groups' starts (cursor_) are the table's entries.
    void lay_out_sends()
    {
        const auto& dst = n_.destinations;
        std::size_t at = 0;
        for (std::size_t i = 0; i < dst.size(); ++i) {
            sends_.at[i] = args_.same_block ? 0 : at;
            if (!args_.same_block) at += args_.send_bytes[i];
        }
        if (args_.same_block) {
            const bool any = std::any_of(dst.begin(), dst.end(), [&](int q) { return to_other(q); });
            stream_ = any ? args_.send_bytes[0] : 0;
            for (std::size_t i = 0; i < dst.size(); ++i) sends_.stream_at[i] = to_other(dst[i]) ? 0 : kUnset;
            return;
        }
        for (int q = 0; q < P_; ++q) cursor_[std::size_t(q)] = 0;
        for (std::size_t i = 0; i < dst.size(); ++i)
            if (to_other(dst[i])) cursor_[std::size_t(dst[i])] += args_.send_bytes[i];
        for (int q = 0; q < P_; ++q) {
            const std::size_t group = cursor_[std::size_t(q)];
            cursor_[std::size_t(q)] = stream_;
            stream_ += group;
        }
    }

    // The table: for each destination, where its group starts (written before the groups'
    // cursors move on); then each send block's place in the stream.
    void write_table(std::byte* slot)
    {
        if (args_.same_block) return;
        const auto& dst = n_.destinations;
        for (int q : dst)
            if (to_other(q)) std::memcpy(slot + std::size_t(q) * 8, &cursor_[std::size_t(q)], sizeof(std::uint64_t));
        for (std::size_t i = 0; i < dst.size(); ++i) {
            if (!to_other(dst[i])) {
                sends_.stream_at[i] = kUnset;
                continue;
            }
            sends_.stream_at[i] = cursor_[std::size_t(dst[i])];
            cursor_[std::size_t(dst[i])] += args_.send_bytes[i];
        }
    }

    // Stream bytes [lo, hi) into `data` (the slot's data area, which holds stream byte lo first).
    void write_piece(std::byte* data, std::size_t lo, std::size_t hi)
    {
        const std::byte* in = bytes_of(args_.sendbuf);
        if (args_.same_block) { // the one block, once
            const Piece p = overlap(0, stream_, lo, hi);
            if (p.a < p.b) mem_.copy(data + (p.a - lo), in + p.a, p.b - p.a);
            return;
        }
        for (std::size_t i = 0; i < n_.destinations.size(); ++i) {
            const std::size_t s = sends_.stream_at[i];
            if (s == kUnset) continue;
            const Piece p = overlap(s, args_.send_bytes[i], lo, hi);
            if (p.a < p.b) mem_.copy(data + (p.a - lo), in + sends_.at[i] + (p.a - s), p.b - p.a);
        }
    }

    // Each receive block's place in the receive buffer and in its source's stream: sources in
    // recv_match_order, the k-th block from q following the (k-1)-th, the first where q's table
    // says (after q's chunk 0 is published).
    void find_receives(int region)
    {
        const auto& src = n_.sources;
        std::size_t at = 0;
        for (std::size_t j = 0; j < src.size(); ++j) {
            recvs_.at[j] = at;
            at += args_.recv_bytes[j];
        }
        if (!args_.same_block)
            for (int q = 0; q < P_; ++q) cursor_[std::size_t(q)] = kUnset;
        for (std::size_t k = 0; k < src.size(); ++k) {
            const std::size_t j = recv_match_order(n_, k);
            const int q = src[j];
            if (!to_other(q)) {
                recvs_.stream_at[j] = kUnset;
                continue;
            }
            if (args_.same_block) {
                recvs_.stream_at[j] = 0;
                continue;
            }
            std::size_t& next = cursor_[std::size_t(q)];
            if (next == kUnset) {
                std::uint64_t start;
                std::memcpy(&start, shm_.slot(region, q) + first_.table_at + std::size_t(me_) * 8, sizeof start);
                next = std::size_t(start);
            }
            recvs_.stream_at[j] = next;
            next += args_.recv_bytes[j];
        }
    }

    // Stream bytes [lo, hi) of each source, found at `skip` bytes into its slot of `region`,
    // into the receive blocks. `wait`: wait for each source with bytes here first (chunk 0
    // waited for everyone).
    void read_piece(int region, std::size_t skip, std::size_t lo, std::size_t hi, bool wait)
    {
        std::byte* out = bytes_of(args_.recvbuf);
        for (std::size_t j = 0; j < n_.sources.size(); ++j) {
            const std::size_t s = recvs_.stream_at[j];
            if (s == kUnset) continue;
            const Piece p = overlap(s, args_.recv_bytes[j], lo, hi);
            if (p.a >= p.b) continue;
            const int q = n_.sources[j];
            if (wait) shm_.wait_for(q, shm_.phase());
            mem_.copy(out + recvs_.at[j] + (p.a - s), shm_.slot(region, q) + skip + (p.a - lo), p.b - p.a);
        }
    }

    // Edges from this rank to itself: the k-th self source (in recv_match_order) gets the k-th
    // self destination's block, straight from the send buffer.
    void copy_self_edges()
    {
        const auto& src = n_.sources;
        const auto& dst = n_.destinations;
        std::size_t i = 0;
        for (std::size_t k = 0; k < src.size(); ++k) {
            const std::size_t j = recv_match_order(n_, k);
            if (src[j] != me_) continue;
            while (i < dst.size() && dst[i] != me_) ++i;
            if (i == dst.size()) return; // MPI's lists always pair; never read past them
            if (const std::size_t len = args_.recv_bytes[j])
                mem_.copy(bytes_of(args_.recvbuf) + recvs_.at[j], bytes_of(args_.sendbuf) + sends_.at[i], len);
            ++i;
        }
    }
};

} // namespace

void shm_neighbour(ShmComm& shm, MemoryOps& mem, const NeighbourArgs& args)
{
    if (!FirstChunk(shm, args.same_block).fits())
        throw ShmUnavailable("shm: a neighbourhood alltoall's table of " + std::to_string(shm.size()) +
                             " ranks is larger than a slot");
    Call(shm, mem, args).run();
}

void shm_neighbour(Transport& net, MemoryOps& mem, const NeighbourArgs& args)
{
    const SegmentTurn turn(net);
    shm_neighbour(turn.comm(), mem, args);
}

} // namespace loom
