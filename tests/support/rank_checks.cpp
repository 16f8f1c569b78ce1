#include "rank_checks.hpp"

#include <algorithm>
#include <cstdio>

namespace loom::test {

namespace {

struct RankContext {
    int rank;
    RankFailures* failures;
};
thread_local RankContext t_context{-1, nullptr};

std::string hex(std::byte b)
{
    char s[3];
    std::snprintf(s, sizeof s, "%02x", std::to_integer<unsigned>(b));
    return s;
}

std::string hex(std::span<const std::byte> bytes)
{
    std::string s;
    for (std::byte b : bytes) s += (s.empty() ? "" : " ") + hex(b);
    return s;
}

} // namespace

RankScope::RankScope(int rank, RankFailures& failures) { t_context = {rank, &failures}; }

RankScope::~RankScope() { t_context = {-1, nullptr}; }

int this_thread_rank() { return t_context.rank; }

bool rank_check(bool ok, std::string_view what)
{
    if (ok) return true;
    RankFailures* f = t_context.failures;
    if (f == nullptr)
        throw std::logic_error("rank_check() outside a rank thread of run_ranks() (assert with Catch2 there): " +
                               std::string(what));
    if (f->messages.size() < RankFailures::kKept)
        f->messages.emplace_back(what);
    else
        ++f->more;
    return false;
}

bool rank_check_bytes(std::span<const std::byte> got, std::span<const std::byte> expected, std::string_view what,
                      std::size_t elem_size)
{
    const std::string difference = first_difference(got, expected, elem_size);
    return difference.empty() || rank_check(false, std::string(what) + ": " + difference);
}

std::string first_difference(std::span<const std::byte> got, std::span<const std::byte> expected, std::size_t elem_size)
{
    const std::size_t n = std::min(got.size(), expected.size());
    const auto first = std::mismatch(got.begin(), got.begin() + std::ptrdiff_t(n), expected.begin()).first;
    const auto i = std::size_t(first - got.begin());
    std::string s;
    if (got.size() != expected.size())
        s = "expected " + std::to_string(expected.size()) + " bytes, got " + std::to_string(got.size());
    if (i == n) return s;
    if (!s.empty()) s += "; ";
    std::size_t differ = 0;
    for (std::size_t j = i; j < n; ++j) differ += got[j] != expected[j];
    if (elem_size <= 1) {
        s += "byte " + std::to_string(i) + " of " + std::to_string(expected.size()) + ": expected 0x" +
             hex(expected[i]) + ", got 0x" + hex(got[i]);
    } else {
        const std::size_t e = i / elem_size, begin = e * elem_size, end = std::min(begin + elem_size, n);
        s += "element " + std::to_string(e) + " of " + std::to_string(expected.size() / elem_size) + " (bytes " +
             std::to_string(begin) + ".." + std::to_string(end - 1) + "): expected " +
             hex(expected.subspan(begin, end - begin)) + ", got " + hex(got.subspan(begin, end - begin));
    }
    return s + " (" + std::to_string(differ) + (differ == 1 ? " byte differs)" : " bytes differ)");
}

std::string describe_failures(const std::vector<RankFailures>& by_rank)
{
    std::size_t ranks = 0, total = 0;
    std::string lines;
    for (std::size_t r = 0; r < by_rank.size(); ++r) {
        const RankFailures& f = by_rank[r];
        if (f.messages.empty()) continue;
        ++ranks;
        total += f.messages.size() + f.more;
        if (ranks > 16) continue; // enough to see the pattern
        for (const std::string& m : f.messages) lines += "\n  rank " + std::to_string(r) + ": " + m;
        if (f.more != 0) lines += "\n  rank " + std::to_string(r) + ": ... and " + std::to_string(f.more) + " more";
    }
    if (total == 0) return "";
    if (ranks > 16) lines += "\n  ... and " + std::to_string(ranks - 16) + " more ranks";
    return std::to_string(total) + (total == 1 ? " check" : " checks") + " failed on " + std::to_string(ranks) +
           " of " + std::to_string(by_rank.size()) + " ranks:" + lines;
}

} // namespace loom::test
