#include "registry.hpp"

#include "ring.hpp"

#include <array>

namespace loom {

namespace {

const std::array kAlgorithms = {
    Algorithm{
        .name = "ring",
        .collective = Collective::allreduce,
        .summary = "ring reduce-scatter then ring allgather; bandwidth-optimal",
        .cost = "2(P-1) steps; 2(P-1)/P x S bytes sent per rank",
        .needs = {.commutative_op = true},
        .allreduce = &ring_allreduce,
    },
};

} // namespace

std::string_view to_string(Collective c)
{
    switch (c) {
    case Collective::allreduce: return "allreduce";
    }
    return "?";
}

std::span<const Algorithm> all_algorithms() { return kAlgorithms; }

const Algorithm* find_algorithm(Collective c, std::string_view name)
{
    for (const Algorithm& a : kAlgorithms)
        if (a.collective == c && a.name == name) return &a;
    return nullptr;
}

std::optional<std::string_view> why_not(const Algorithm& algo, const CallShape& call)
{
    if (algo.needs.commutative_op && !call.commutative) return "the op is not commutative";
    if (algo.needs.power_of_two && (call.comm_size & (call.comm_size - 1)) != 0)
        return "the communicator size is not a power of two";
    return std::nullopt;
}

} // namespace loom
