// Host implementation of MemoryOps: plain memcpy, the type-erased reduce function, malloc.
#include "transport.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace loom {

namespace {
void free_host(std::byte* p) { std::free(p); }
} // namespace

void HostMemory::copy(void* dst, const void* src, std::size_t bytes)
{
    if (bytes != 0 && dst != src) std::memcpy(dst, src, bytes);
}

void HostMemory::reduce(const Reduction& op, const void* in, void* inout, std::size_t count)
{
    if (count != 0) op.fn(in, inout, count, op.ctx);
}

Scratch HostMemory::scratch(std::size_t bytes)
{
    // malloc(0) may return nullptr; ask for at least one byte so nullptr always means failure.
    auto* p = static_cast<std::byte*>(std::malloc(bytes == 0 ? 1 : bytes));
    if (p == nullptr) throw std::bad_alloc();
    return Scratch(p, &free_host);
}

} // namespace loom
