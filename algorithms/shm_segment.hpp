// A POSIX shared-memory segment for the ranks of one communicator on one node.
//
// One rank creates it under a fresh unique name (O_EXCL: never someone else's), the others
// map it by that name, and the creator unlinks the name as soon as everyone has mapped it:
// from then on the memory lives only in the ranks' mappings, so nothing is left in /dev/shm
// however the job ends (normally, MPI_Abort, or killed). The mapping goes with the object.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace loom {

class ShmSegment {
public:
    // Creates and maps a new zero-filled segment; nullptr (and `error` set) if the system
    // refuses (no /dev/shm, out of space...).
    static std::unique_ptr<ShmSegment> create(std::size_t bytes, std::string& error);
    // Maps an existing segment by name; nullptr (and `error` set) if it cannot.
    static std::unique_ptr<ShmSegment> attach(const std::string& name, std::size_t bytes, std::string& error);
    ~ShmSegment();
    ShmSegment(const ShmSegment&) = delete;
    ShmSegment& operator=(const ShmSegment&) = delete;

    // Removes the name (creator, once every rank has mapped it). Idempotent.
    void unlink();
    const std::string& name() const { return name_; }
    std::byte* data() const { return data_; }
    std::size_t size() const { return bytes_; }

    // Names are "/loom-<pid>-<n>-<random>"; at most this long.
    static constexpr std::size_t kMaxName = 63;

private:
    ShmSegment(std::string name, std::byte* data, std::size_t bytes, bool owner)
        : name_(std::move(name)), data_(data), bytes_(bytes), owner_(owner)
    {
    }
    std::string name_;
    std::byte* data_;
    std::size_t bytes_;
    bool owner_;
};

} // namespace loom
