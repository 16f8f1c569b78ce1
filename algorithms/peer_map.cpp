#include "peer_map.hpp"

#include <atomic>

namespace loom {

const std::byte* SameProcessMap::map(std::int64_t, const void* remote, std::size_t)
{
    std::atomic_ref<std::size_t>(maps_).fetch_add(1, std::memory_order_relaxed);
    return static_cast<const std::byte*>(remote);
}

std::size_t SameProcessMap::maps() const
{
    return std::atomic_ref<const std::size_t>(maps_).load(std::memory_order_relaxed);
}

} // namespace loom
