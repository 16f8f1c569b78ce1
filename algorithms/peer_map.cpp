#include "peer_map.hpp"

namespace loom {

const std::byte* SameProcessMap::map(std::int64_t, const void* remote, std::size_t)
{
    maps_.fetch_add(1, std::memory_order_relaxed);
    return static_cast<const std::byte*>(remote);
}

} // namespace loom
