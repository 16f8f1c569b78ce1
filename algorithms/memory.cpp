// Host implementation of MemoryOps: plain memcpy, the type-erased reduce function, malloc.
#include "transport.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace loom {

namespace {
void free_host(std::byte* p) { std::free(p); }
void keep_inline(std::byte*) {}
} // namespace

void HostMemory::copy(void* dst, const void* src, std::size_t bytes)
{
    if (bytes != 0 && dst != src) std::memcpy(dst, src, bytes);
}

void HostMemory::reduce(const Reduction& op, const void* in, void* inout, std::size_t count)
{
    if (count != 0) op.fn(in, inout, count, op.ctx);
}

void HostMemory::reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count)
{
    if (op.fn3 == nullptr || in2 == out) {
        MemoryOps::reduce_into(op, in, in2, out, count);
    } else if (count != 0) {
        op.fn3(in, in2, out, count, op.ctx);
    }
}

Scratch HostMemory::scratch(std::size_t bytes)
{
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64; // keeps 64-byte alignment
    if (rounded <= kInlineBytes - inline_used_) {
        std::byte* p = inline_ + inline_used_;
        inline_used_ += rounded;
        return Scratch(p, &keep_inline);
    }
    // malloc(0) may return nullptr; ask for at least one byte so nullptr always means failure.
    auto* p = static_cast<std::byte*>(std::malloc(bytes == 0 ? 1 : bytes));
    if (p == nullptr) throw std::bad_alloc();
    return Scratch(p, &free_host);
}

} // namespace loom
