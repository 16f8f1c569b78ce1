// The layouts of collectives.def, one record each: what the core does differently by what each
// rank's buffers hold. A layout's code is its record's functions; nothing else switches on a
// layout, so a new layout is one record here (the compiler and kLayouts' static_asserts name a
// missing one) plus its descriptor in the glue (coll_loom_layouts.c) and in loom-sim
// (tools/sim/engine.cpp).
#pragma once

#include "loom_c_api.h"
#include "registry.hpp"

#include <cstddef>
#include <string_view>

namespace loom {

class AsyncCopier; // staging.hpp

struct LayoutOps {
    Layout layout;
    // The message size (message_bytes, entry.cpp) in the call's units: elements of the op for a
    // reduction, bytes otherwise. Called only for collectives whose counts every rank shares.
    std::size_t (*message_units)(const loom_call_t& call, int comm_size);
    // What that size is, in words (loom-rules explain, docs/algorithms.md).
    std::string_view size_meaning;
    // Runs the algorithm on device buffers through host staging slots (run_staged, staging.cpp).
    void (*stage)(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call);
};

const LayoutOps& layout_ops(Layout l);

// The staging of each layout (staging.cpp), for kLayouts.
namespace staged {
void vector(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void split(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void gathered(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void per_peer(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void scattered(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void per_peer_v(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void none(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
void neighbours(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&);
} // namespace staged

} // namespace loom
