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
#pragma once

#include <cstddef>
#include <memory>
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

    // Creator: closes the file once every rank has mapped it, so the name stops working.
    // Idempotent; the destructor does it too.
    void unlink();
    const std::string& name() const { return name_; }
    std::byte* data() const { return data_; }
    std::size_t size() const { return bytes_; }

    // Names are "/proc/<pid>/fd/<fd>"; at most this long.
    static constexpr std::size_t kMaxName = 63;

private:
    ShmSegment(std::string name, std::byte* data, std::size_t bytes, int fd)
        : name_(std::move(name)), data_(data), bytes_(bytes), fd_(fd)
    {
    }
    std::string name_;
    std::byte* data_;
    std::size_t bytes_;
    int fd_; // the creator's open file until unlink(); -1 otherwise
};

} // namespace loom
