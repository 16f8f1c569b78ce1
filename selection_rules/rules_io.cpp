// Reading rule files, writing rules as rule-file text, and the embedded default table.
#include "rules.hpp"

#include <fstream>
#include <iterator>
#include <mutex>
#include <vector>

namespace loom::rules {

namespace detail {
extern const std::string_view kDefaultRulesText;
}

ParseResult parse_file(const std::string& path)
{
    constexpr std::size_t kMaxFileBytes = std::size_t(64) << 20;
    std::ifstream in(path, std::ios::binary);
    ParseResult failed;
    if (!in) {
        failed.diagnostics.push_back({Diagnostic::Severity::error, path, 0, 0, "cannot open the rule file"});
        return failed;
    }
    // Read in chunks rather than trusting the size a seek reports: that size is wrong for
    // directories (huge), pipes and /proc files (none).
    std::string text;
    std::vector<char> chunk(std::size_t(1) << 16);
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0) {
        text.append(chunk.data(), std::size_t(in.gcount()));
        if (text.size() > kMaxFileBytes) {
            failed.diagnostics.push_back(
                {Diagnostic::Severity::error, path, 0, 0, "the rule file is larger than 64 MiB"});
            return failed;
        }
    }
    if (in.bad()) {
        failed.diagnostics.push_back({Diagnostic::Severity::error, path, 0, 0, "cannot read the rule file"});
        return failed;
    }
    return parse(text, path);
}

std::string size_text(std::uint64_t v)
{
    static const std::pair<int, const char*> units[] = {{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}};
    for (auto [shift, unit] : units)
        if (v != 0 && v % (std::uint64_t(1) << shift) == 0) return std::to_string(v >> shift) + unit;
    return std::to_string(v);
}

std::string range_text(const Range& r, bool sizes)
{
    auto num = [&](std::uint64_t v) { return sizes ? size_text(v) : std::to_string(v); };
    if (r.is_all()) return "*";
    if (r.hi == UINT64_MAX) return num(r.lo) + "-*";
    return r.lo == r.hi ? num(r.lo) : num(r.lo) + "-" + num(r.hi);
}

std::vector<std::string> rule_fields(const Rule& r)
{
    std::string keys;
    auto add = [&](const std::string& key) { keys += (keys.empty() ? "" : " ") + key; };
    if (r.nodes) add("nodes=" + range_text(*r.nodes, false));
    if (r.ranks_per_node) add("ranks_per_node=" + range_text(*r.ranks_per_node, false));
    if (r.memory) add(std::string("memory=") + (*r.memory == MemoryKind::cuda ? "cuda" : "host"));
    if (r.commutative) add(std::string("commutative=") + (*r.commutative ? "yes" : "no"));
    if (r.kept) add(std::string("kept=") + (*r.kept ? "yes" : "no"));
    if (r.ompi) add("ompi=" + range_text(*r.ompi, false));
    if (r.phase) add(std::string("phase=") + (*r.phase == Phase::leaders ? "leaders" : "call"));
    if (r.topology) add("topology=" + std::string(to_string(*r.topology)));
    if (r.degree) add("degree=" + range_text(*r.degree, false));
    if (r.ndims) add("ndims=" + range_text(*r.ndims, false));
    if (r.segment_bytes) add("segment=" + size_text(r.segment_bytes));
    if (r.buffer_bytes) add("buffer=" + size_text(r.buffer_bytes));
    if (r.radix) add("radix=" + std::to_string(r.radix));
    if (r.requests) add("requests=" + std::to_string(r.requests));
    if (!r.leaders.empty()) add("leaders=" + r.leaders);
    std::vector<std::string> f = {form_name(r.collective, r.form), range_text(r.ranks, false), range_text(r.bytes, true),
                                  r.algorithm};
    if (!keys.empty()) f.push_back(keys);
    return f;
}

std::string_view default_rules_text() { return detail::kDefaultRulesText; }

const std::vector<Rule>& default_rules()
{
    // The embedded table is checked by the tests; parsed once, on first use.
    static const std::vector<Rule> rules = parse(detail::kDefaultRulesText, "default").rules;
    return rules;
}

} // namespace loom::rules
