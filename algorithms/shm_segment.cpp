#include "shm_segment.hpp"

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

std::byte* map(int fd, std::size_t bytes)
{
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
    if (rc != 0) errno = rc, error = system_error("posix_fallocate", name);
    else if ((data = map(fd, bytes)) == nullptr) error = system_error("mmap", name);
    if (data == nullptr) {
        close(fd);
        return nullptr;
    }
    return std::unique_ptr<ShmSegment>(new ShmSegment(name, data, bytes, fd));
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
    if (fstat(fd, &st) != 0 || std::size_t(st.st_size) < bytes) error = "segment " + name + " is smaller than expected";
    else if ((data = map(fd, bytes)) == nullptr) error = system_error("mmap", name);
    close(fd);
    if (data == nullptr) return nullptr;
    return std::unique_ptr<ShmSegment>(new ShmSegment(name, data, bytes, -1));
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

} // namespace loom
