// loom's built-in choice of algorithm, used until the rule table (issue 5) replaces it: an
// ordered list of candidates per collective and message size; the first that can serve the
// call wins. Message size is defined once, in message_bytes() (entry.cpp).
#pragma once

#include "registry.hpp"

#include <span>
#include <string_view>

namespace loom {

std::span<const std::string_view> builtin_candidates(Collective c, const CallShape& call);

} // namespace loom
