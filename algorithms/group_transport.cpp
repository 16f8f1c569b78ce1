#include "group_transport.hpp"

#include <algorithm>
#include <stdexcept>

namespace loom {

GroupTransport::GroupTransport(Transport& parent, std::span<const int> members, void** shared)
    : parent_(parent), members_(members), shared_(shared)
{
    const auto it = std::find(members.begin(), members.end(), parent.rank());
    if (it == members.end()) throw std::logic_error("GroupTransport: this rank is not a member");
    rank_ = int(it - members.begin());
}

} // namespace loom
