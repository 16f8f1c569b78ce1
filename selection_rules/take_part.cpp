#include "take_part.hpp"

#include "selection.hpp"

#include <cctype>
#include <charconv>

namespace loom::take_part {

namespace {
// A decimal number at the start of `s`, advancing it; nullopt if there is none.
std::optional<int> leading_number(std::string_view& s)
{
    int value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end == s.data()) return std::nullopt;
    s.remove_prefix(std::size_t(end - s.data()));
    return value;
}
} // namespace

std::optional<Release> parse_release(std::string_view text)
{
    constexpr std::string_view kPrefix = "Open MPI v";
    const std::size_t at = text.find(kPrefix);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view s = text.substr(at + kPrefix.size());
    Release r;
    int* parts[] = {&r.major, &r.minor, &r.release};
    for (int i = 0; i < 3; ++i) {
        if (i > 0) {
            if (s.empty() || s.front() != '.') return std::nullopt;
            s.remove_prefix(1);
        }
        const auto n = leading_number(s);
        if (!n || *n < 0) return std::nullopt;
        *parts[i] = *n;
    }
    // "4.1.4" must end there or go on with a suffix ("rc2", "a1", ",", " "), never another
    // number part ("4.1.4.1" is no release loom knows how to compare).
    if (!s.empty() && (s.front() == '.' || std::isdigit(static_cast<unsigned char>(s.front())))) return std::nullopt;
    return r;
}

std::string canonical(const rules::Rule& r)
{
    auto range = [](const rules::Range& x) { return std::to_string(x.lo) + "-" + std::to_string(x.hi); };
    auto optional_range = [&](const std::optional<rules::Range>& x) { return x ? range(*x) : std::string("*"); };
    std::string s = rules::form_name(r.collective, r.form);
    s += ' ' + range(r.ranks) + ' ' + range(r.bytes) + ' ' + r.algorithm;
    s += " nodes=" + optional_range(r.nodes) + " ranks_per_node=" + optional_range(r.ranks_per_node);
    s += " memory=" + std::string(!r.memory ? "*" : *r.memory == rules::MemoryKind::cuda ? "cuda" : "host");
    s += " commutative=" + std::string(!r.commutative ? "*" : *r.commutative ? "yes" : "no");
    s += " ompi=" + optional_range(r.ompi);
    s += " segment=" + std::to_string(r.segment_bytes) + " buffer=" + std::to_string(r.buffer_bytes);
    s += " radix=" + std::to_string(r.radix) + " requests=" + std::to_string(r.requests);
    s += " leaders=" + r.leaders;
    return s;
}

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash)
{
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

std::uint64_t rules_fingerprint(std::string_view version, std::string_view settings)
{
    std::uint64_t h = fnv1a(version);
    const char* const layer_names[] = {"\nuser rules\n", "\nsite rules\n"};
    const auto layers = rules::file_layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        h = fnv1a(layer_names[i], h);
        for (const rules::Rule& rule : *layers[i]) h = fnv1a(canonical(rule) + "\n", h);
    }
    h = fnv1a("\nbuilt-in rules\n", h);
    h = fnv1a(rules::default_rules_text(), h);
    h = fnv1a("\nsettings\n", h);
    h = fnv1a(settings, h);
    return h != 0 ? h : 1; // 0 means "none" to the glue
}

} // namespace loom::take_part
