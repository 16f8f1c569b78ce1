#include "shm_segment.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loom {
namespace {

std::string unique_name()
{
    static std::atomic<unsigned> counter{0};
    std::random_device entropy; // pids repeat across containers sharing /dev/shm
    return "/loom-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(entropy() & 0xffffff);
}

std::string system_error(const char* what, const std::string& name)
{
    return std::string(what) + " " + name + ": " + std::strerror(errno);
}

std::byte* map(int fd, std::size_t bytes)
{
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

} // namespace

std::unique_ptr<ShmSegment> ShmSegment::create(std::size_t bytes, std::string& error)
{
    const std::string name = unique_name();
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        error = system_error("shm_open", name);
        return nullptr;
    }
    std::byte* data = nullptr;
    // posix_fallocate reserves the pages now: a full /dev/shm fails here, not with SIGBUS later.
    const int rc = posix_fallocate(fd, 0, off_t(bytes));
    if (rc != 0) errno = rc, error = system_error("posix_fallocate", name);
    else if ((data = map(fd, bytes)) == nullptr) error = system_error("mmap", name);
    close(fd);
    if (data == nullptr) {
        shm_unlink(name.c_str());
        return nullptr;
    }
    return std::unique_ptr<ShmSegment>(new ShmSegment(name, data, bytes, true));
}

std::unique_ptr<ShmSegment> ShmSegment::attach(const std::string& name, std::size_t bytes, std::string& error)
{
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) {
        error = system_error("shm_open", name);
        return nullptr;
    }
    struct stat st {};
    std::byte* data = nullptr;
    if (fstat(fd, &st) != 0 || std::size_t(st.st_size) < bytes) error = "segment " + name + " is smaller than expected";
    else if ((data = map(fd, bytes)) == nullptr) error = system_error("mmap", name);
    close(fd);
    if (data == nullptr) return nullptr;
    return std::unique_ptr<ShmSegment>(new ShmSegment(name, data, bytes, false));
}

void ShmSegment::unlink()
{
    if (owner_) shm_unlink(name_.c_str());
    owner_ = false;
}

ShmSegment::~ShmSegment()
{
    unlink();
    munmap(data_, bytes_);
}

} // namespace loom
