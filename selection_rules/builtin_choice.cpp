// The bands follow the textbook costs (Thakur, Rabenseifner & Gropp 2005): logarithmic
// algorithms while latency dominates, bandwidth-optimal ones once bytes dominate. They are
// placeholders for the measured rule table; the order inside a band is the fallback order
// when the first candidate cannot serve (e.g. a non-commutative op).
#include "builtin_choice.hpp"

#include <array>

namespace loom {

namespace {
using Names = std::span<const std::string_view>;
constexpr std::size_t KiB = 1024;

constexpr std::array<std::string_view, 2> kAllreduceSmall{"recursive_doubling", "binomial"};
constexpr std::array<std::string_view, 3> kAllreduceMedium{"halving_doubling", "recursive_doubling", "binomial"};
constexpr std::array<std::string_view, 3> kAllreduceLarge{"ring", "halving_doubling", "binomial"};
constexpr std::array<std::string_view, 2> kReduceScatterSmall{"halving_doubling", "ring"};
constexpr std::array<std::string_view, 2> kReduceScatterLarge{"ring", "halving_doubling"};
constexpr std::array<std::string_view, 2> kAllgatherSmall{"bruck", "recursive_doubling"};
constexpr std::array<std::string_view, 2> kAllgatherMedium{"recursive_doubling", "ring"};
constexpr std::array<std::string_view, 1> kAllgatherLarge{"ring"};
constexpr std::array<std::string_view, 1> kBcastSmall{"binomial"};
constexpr std::array<std::string_view, 2> kBcastLarge{"scatter_allgather", "binomial"};
constexpr std::array<std::string_view, 2> kReduceSmall{"binomial", "halving_doubling"};
constexpr std::array<std::string_view, 2> kReduceLarge{"halving_doubling", "binomial"};
constexpr std::array<std::string_view, 1> kBarrier{"bruck"};
constexpr std::array<std::string_view, 2> kAlltoallSmall{"bruck", "pairwise"};
constexpr std::array<std::string_view, 1> kAlltoallLarge{"pairwise"};
} // namespace

std::span<const std::string_view> builtin_candidates(Collective c, const CallShape& call)
{
    const std::size_t S = call.bytes;
    switch (c) {
    case Collective::allreduce:
        return S <= 4 * KiB ? Names(kAllreduceSmall) : S <= 256 * KiB ? Names(kAllreduceMedium) : Names(kAllreduceLarge);
    case Collective::reduce_scatter:
    case Collective::reduce_scatter_block:
        return S <= 256 * KiB ? Names(kReduceScatterSmall) : Names(kReduceScatterLarge);
    case Collective::allgather:
    case Collective::allgatherv:
        return S <= 8 * KiB ? Names(kAllgatherSmall) : S <= 512 * KiB ? Names(kAllgatherMedium) : Names(kAllgatherLarge);
    case Collective::bcast:
        return S <= 64 * KiB || call.comm_size <= 2 ? Names(kBcastSmall) : Names(kBcastLarge);
    case Collective::reduce:
        return S <= 64 * KiB ? Names(kReduceSmall) : Names(kReduceLarge);
    case Collective::barrier:
        return kBarrier;
    case Collective::alltoall:
        return S <= 256 ? Names(kAlltoallSmall) : Names(kAlltoallLarge);
    }
    return {};
}

} // namespace loom
