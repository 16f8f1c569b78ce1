// The registry: one record per algorithm, the single list that selection, verbose output and
// tools read. Nothing else in loom hard-codes which algorithms exist.
#pragma once

#include "collectives.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace loom {

enum class Collective { allreduce };

std::string_view to_string(Collective c);

// What an algorithm needs of a call before it may serve it.
struct Needs {
    bool commutative_op = false; // it reorders the reduction
    bool power_of_two = false;   // communicator size must be a power of two
};

// The facts about a call that every rank shares (so every rank decides alike).
struct CallShape {
    int comm_size;
    std::size_t count;
    bool commutative;
};

using AllreduceFn = void (*)(Transport&, MemoryOps&, const AllreduceArgs&);

struct Algorithm {
    std::string_view name;        // user-facing, e.g. in coll_loom_allreduce_algorithm
    Collective collective;
    std::string_view summary;     // one line for tools and docs
    std::string_view cost;        // steps and bytes per rank, P ranks, S bytes
    Needs needs;
    AllreduceFn allreduce = nullptr;
};

std::span<const Algorithm> all_algorithms();

const Algorithm* find_algorithm(Collective c, std::string_view name);

// Why `algo` cannot serve a call of this shape, or nullopt if it can.
std::optional<std::string_view> why_not(const Algorithm& algo, const CallShape& call);

} // namespace loom
