// A shared-memory segment for the ranks of one communicator on one node, that never has a
// name in /dev/shm.
//
// One rank creates it as an anonymous memory file (memfd_create) and keeps the file open;
// its "name" is the path of that open file, /proc/<pid>/fd/<fd>, through which the other
// ranks of the node open and map it. Once every rank has mapped it the creator closes the
// file (unlink()); the memory then lives only in the ranks' mappings. So nothing is ever left
// in /dev/shm, whether the job ends normally, calls MPI_Abort, or is killed at any moment —
// even while the segment is being set up. A rank that cannot open the path (another PID
// namespace, a hardened /proc) gets an error, and loom falls back to messages.
//
// Segments are reused (SegmentPool): setting one up costs far more than the calls it
// serves save (here, for 576 KiB: about 70 us to allocate, 140 us of first-touch page faults
// and 90 us to unmap, against 0.03 us saved per 8-byte allreduce), and communicators with
// the same ranks are created and freed over and over. So a communicator done with its
// segment gives it to its process's pool: the creator keeps the file open and mapped, the
// others keep their mappings. The next communicator whose creator has a free segment of the
// right size reuses it: its members find their old mapping by name and identity, or map it
// anew. A segment is free once every rank that used it gave it back, which each counts in
// the segment's own header (the first line), so no rank can reuse memory another is still
// reading, whatever the order in which ranks free their communicators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace loom {

class ShmSegment {
public:
    // Creates and maps a new zero-filled segment; nullptr (and `error` set) if the system
    // refuses (out of memory, no memfd...).
    static std::unique_ptr<ShmSegment> create(std::size_t bytes, std::string& error);
    // Maps an existing segment by name; nullptr (and `error` set) if it cannot.
    static std::unique_ptr<ShmSegment> attach(const std::string& name, std::size_t bytes, std::string& error);
    ~ShmSegment();
    ShmSegment(const ShmSegment&) = delete;
    ShmSegment& operator=(const ShmSegment&) = delete;

    // Creator: closes the file once every rank has mapped it, so the name stops working (a
    // segment that may be pooled keeps it open, for the ranks of later communicators).
    // Idempotent; the destructor does it too.
    void unlink();
    const std::string& name() const { return name_; }
    std::byte* data() const { return data_; }
    std::size_t size() const { return bytes_; }
    bool creator() const { return creator_; }
    bool openable() const { return fd_ >= 0; } // its name still works

    // The header in the segment's first 64 bytes, shared by every rank that maps it: an
    // identity unique on the node (set by create()), and who uses it now.
    struct Header {
        std::uint64_t id;
        std::uint32_t users;    // ranks of the communicator using it
        std::uint32_t released; // of them, those that gave it back (SegmentPool::give)
    };
    static constexpr std::size_t kHeaderBytes = 64;
    Header& header() const { return *reinterpret_cast<Header*>(data_); }

    // Names are "/proc/<pid>/fd/<fd>"; at most this long.
    static constexpr std::size_t kMaxName = 63;

private:
    ShmSegment(std::string name, std::byte* data, std::size_t bytes, int fd, bool creator)
        : name_(std::move(name)), data_(data), bytes_(bytes), fd_(fd), creator_(creator)
    {}
    std::string name_;
    std::byte* data_;
    std::size_t bytes_;
    int fd_; // the creator's open file until unlink(); -1 otherwise
    bool creator_;
};

// The segments this process keeps for reuse (see the top of this file), at most limit() of
// them (0: none, every segment is unmapped when its communicator goes). Thread-safe.
class SegmentPool {
public:
    static SegmentPool& instance();
    void set_limit(std::size_t segments);
    std::size_t limit() const;
    // Creator: a kept segment it made, of `bytes` to 2 x `bytes`, that every rank of its last
    // communicator gave back; nullptr if there is none.
    std::unique_ptr<ShmSegment> take_created(std::size_t bytes);
    // Another rank's segment `name` with identity `id`, if this process kept its mapping.
    std::unique_ptr<ShmSegment> take_attached(const std::string& name, std::uint64_t id, std::size_t bytes);
    // A communicator is done with `segment`: counts this rank out of its users, then keeps it
    // (the oldest kept segment goes beyond the limit) or frees it.
    void give(std::unique_ptr<ShmSegment> segment);
    // Frees every kept segment.
    void drain();
    std::size_t kept() const;

private:
    mutable std::mutex mutex_;
    std::deque<std::unique_ptr<ShmSegment>> kept_;
    std::size_t limit_ = 4;
};

} // namespace loom
