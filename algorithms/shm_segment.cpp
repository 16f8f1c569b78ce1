#include "shm_segment.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loom {
namespace {

std::string system_error(const char* what, const std::string& name)
{
    return std::string(what) + " " + name + ": " + std::strerror(errno);
}

// MAP_POPULATE: the segment's pages are mapped now, in the set-up every rank waits for, not one
// page fault at a time in the first calls that reach them (the first 16 shm allreduces of 4 KiB
// at np 2 took ~5 us each instead of ~0.5: what online tuning's trials and short jobs saw).
std::byte* map(int fd, std::size_t bytes)
{
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

} // namespace

std::unique_ptr<ShmSegment> ShmSegment::create(std::size_t bytes, std::string& error)
{
    const int fd = memfd_create("loom-shm", MFD_CLOEXEC);
    if (fd < 0) {
        error = system_error("memfd_create", "loom-shm");
        return nullptr;
    }
    const std::string name = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd);
    std::byte* data = nullptr;
    // posix_fallocate reserves the pages now: a full tmpfs fails here, not with SIGBUS later.
    const int rc = posix_fallocate(fd, 0, off_t(bytes));
    if (rc != 0)
        errno = rc, error = system_error("posix_fallocate", name);
    else if ((data = map(fd, bytes)) == nullptr)
        error = system_error("mmap", name);
    if (data == nullptr) {
        close(fd);
        return nullptr;
    }
    std::unique_ptr<ShmSegment> segment(new ShmSegment(name, data, bytes, fd, true));
    // An identity no other segment on the node has: this process's id and a count.
    static std::atomic<std::uint32_t> made{0};
    segment->header().id = (std::uint64_t(getpid()) << 32) | made.fetch_add(1);
    return segment;
}

std::unique_ptr<ShmSegment> ShmSegment::attach(const std::string& name, std::size_t bytes, std::string& error)
{
    const int fd = open(name.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        error = system_error("open", name);
        return nullptr;
    }
    struct stat st {};
    std::byte* data = nullptr;
    if (fstat(fd, &st) != 0 || std::size_t(st.st_size) < bytes)
        error = "segment " + name + " is smaller than expected";
    else if ((data = map(fd, bytes)) == nullptr)
        error = system_error("mmap", name);
    close(fd);
    if (data == nullptr) return nullptr;
    return std::unique_ptr<ShmSegment>(new ShmSegment(name, data, bytes, -1, false));
}

void ShmSegment::unlink()
{
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
}

ShmSegment::~ShmSegment()
{
    unlink();
    munmap(data_, bytes_);
}

// ---- the pool ----

SegmentPool& SegmentPool::instance()
{
    static SegmentPool pool;
    return pool;
}

void SegmentPool::set_limit(std::size_t segments)
{
    std::lock_guard lock(mutex_);
    limit_ = segments;
    while (kept_.size() > limit_) kept_.pop_front();
}

std::size_t SegmentPool::limit() const
{
    std::lock_guard lock(mutex_);
    return limit_;
}

std::size_t SegmentPool::kept() const
{
    std::lock_guard lock(mutex_);
    return kept_.size();
}

std::unique_ptr<ShmSegment> SegmentPool::take_created(std::size_t bytes)
{
    std::lock_guard lock(mutex_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
        ShmSegment& s = **it;
        if (!s.creator() || s.size() < bytes || s.size() > 2 * bytes) continue;
        // Every rank of its last communicator must be done with it (acquire: their last
        // reads and writes of it happened before).
        const std::uint32_t released = std::atomic_ref(s.header().released).load(std::memory_order_acquire);
        if (released != s.header().users) continue;
        auto taken = std::move(*it);
        kept_.erase(it);
        return taken;
    }
    return nullptr;
}

std::unique_ptr<ShmSegment> SegmentPool::take_attached(const std::string& name, std::uint64_t id, std::size_t bytes)
{
    std::lock_guard lock(mutex_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
        ShmSegment& s = **it;
        if (s.creator() || s.name() != name || s.size() < bytes) continue;
        if (std::atomic_ref(s.header().id).load(std::memory_order_acquire) != id) continue;
        auto taken = std::move(*it);
        kept_.erase(it);
        return taken;
    }
    return nullptr;
}

void SegmentPool::give(std::unique_ptr<ShmSegment> segment)
{
    if (!segment) return;
    // Release: this rank's last use of the segment happens before the creator reuses it.
    std::atomic_ref(segment->header().released).fetch_add(1, std::memory_order_release);
    std::lock_guard lock(mutex_);
    // A creator's segment whose name no longer works cannot be shared again.
    if (limit_ == 0 || (segment->creator() && !segment->openable())) return;
    kept_.push_back(std::move(segment));
    while (kept_.size() > limit_) kept_.pop_front();
}

void SegmentPool::drain()
{
    std::lock_guard lock(mutex_);
    kept_.clear();
}

} // namespace loom
