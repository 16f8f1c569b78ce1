// The rule-file parser, linter and matcher. Hostile input (long lines, binary bytes,
// overflowing numbers, huge files) produces diagnostics, never a crash or a hang: every loop
// is bounded by the input's length and the limits below.
#include "rules.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace loom::rules {

namespace {

constexpr std::size_t kMaxLineBytes = 4096;
constexpr std::size_t kMaxRules = 100000;
constexpr std::size_t kMaxErrors = 1000; // then the rest of a file is not checked
// A rule's key=value words: options configure the algorithm it names (so a fallback rule, which
// runs none, takes none); match keys narrow which calls it matches.
const std::vector<std::string_view> kOptionKeys = {"segment", "buffer", "leaders", "radix", "requests"};
const std::vector<std::string_view> kMatchKeys = {"nodes",  "ranks_per_node", "memory", "commutative", "ompi",
                                                  "kept",   "topology",       "degree", "ndims",
                                                  "phase"};

struct Token {
    std::string_view text;
    int column; // 1-based
};

class LineParser {
public:
    LineParser(std::string_view file, int line, std::vector<Diagnostic>& out) : file_(file), line_(line), out_(out) {}

    void error(int column, std::string message)
    {
        out_.push_back({Diagnostic::Severity::error, std::string(file_), line_, column, std::move(message)});
        failed_ = true;
    }
    bool failed() const { return failed_; }

    // A number with an optional K/M/G/T suffix (sizes) or none (counts). Sizes are 64-bit end
    // to end: MPI-4's large-count calls reach loom with messages of many GiB, which a rule must be
    // able to name (T is 2^40; 16777215T is the largest that fits).
    std::optional<std::uint64_t> number(std::string_view s, int column, bool sizes)
    {
        std::uint64_t value = 0;
        const char* end = s.data() + s.size();
        auto [p, ec] = std::from_chars(s.data(), end, value);
        if (ec == std::errc::result_out_of_range) {
            error(column, "the number '" + std::string(s) + "' is too large");
            return std::nullopt;
        }
        if (ec != std::errc() || p == s.data()) {
            error(column, "expected a number, found '" + std::string(s) + "'");
            return std::nullopt;
        }
        const std::string_view suffix(p, std::size_t(end - p));
        if (suffix.empty()) return value;
        if (!sizes) {
            error(column + int(p - s.data()),
                  "unexpected '" + std::string(suffix) + "' after a count (sizes take K, M, G, T; counts none)");
            return std::nullopt;
        }
        int shift = 0;
        if (suffix == "K" || suffix == "k")
            shift = 10;
        else if (suffix == "M" || suffix == "m")
            shift = 20;
        else if (suffix == "G" || suffix == "g")
            shift = 30;
        else if (suffix == "T" || suffix == "t")
            shift = 40;
        else {
            error(column + int(p - s.data()),
                  "unknown size suffix '" + std::string(suffix) + "' (expected K, M, G or T)");
            return std::nullopt;
        }
        if (value > (UINT64_MAX >> shift)) {
            error(column, "the size '" + std::string(s) + "' is too large");
            return std::nullopt;
        }
        return value << shift;
    }

    // `*`, `N`, `N-M` or `N-*`, inclusive at both ends.
    std::optional<Range> range(std::string_view s, int column, bool sizes)
    {
        if (s == "*") return Range{};
        const auto dash = s.find('-');
        const auto npos = std::string_view::npos;
        if (s.empty() || dash == 0 || (dash != npos && (dash + 1 == s.size() || s.find('-', dash + 1) != npos))) {
            error(column, "expected a range (N, N-M, N-* or *), found '" + std::string(s) + "'");
            return std::nullopt;
        }
        const auto lo = number(s.substr(0, dash), column, sizes);
        if (!lo) return std::nullopt;
        if (dash == std::string_view::npos) return Range{*lo, *lo};
        const std::string_view upper = s.substr(dash + 1);
        if (upper == "*") return Range{*lo, UINT64_MAX};
        const auto hi = number(upper, column + int(dash) + 1, sizes);
        if (!hi) return std::nullopt;
        if (*hi < *lo) {
            error(column, "the range '" + std::string(s) +
                              "' is empty (ranges are inclusive: the low end must not exceed the high end)");
            return std::nullopt;
        }
        return Range{*lo, *hi};
    }

private:
    std::string_view file_;
    int line_;
    std::vector<Diagnostic>& out_;
    bool failed_ = false;
};

// Every name a rule may give a collective: each collective in each form.
const std::vector<std::string>& collective_names()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (std::optional<Form> f :
             {std::optional<Form>{}, std::optional<Form>{Form::nonblocking}, std::optional<Form>{Form::persistent}})
            for (int c = 0; c < kCollectiveCount; ++c) n.push_back(form_name(Collective(c), f));
        return n;
    }();
    return names;
}

// The names a rule of collective `c` may give: its algorithms, and fallback.
std::vector<std::string_view> algorithm_names(Collective c)
{
    std::vector<std::string_view> names;
    for (const Algorithm& a : all_algorithms())
        if (a.collective == c) names.push_back(a.name);
    names.push_back(kFallback);
    return names;
}

std::string join(const std::vector<std::string_view>& names)
{
    std::string s;
    for (std::string_view n : names) s += (s.empty() ? "" : ", ") + std::string(n);
    return s;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates)
{
    const std::string n = nearest(word, candidates);
    return n.empty() ? " (valid: " + join(candidates) + ")" : "; did you mean '" + n + "'?";
}

// Splits a line into tokens at spaces and tabs.
std::vector<Token> tokens(std::string_view line)
{
    std::vector<Token> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        const std::size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > start) out.push_back({line.substr(start, i - start), int(start) + 1});
    }
    return out;
}

void parse_option(LineParser& p, Rule& rule, const Token& t)
{
    const auto eq = t.text.find('=');
    static const std::vector<std::string_view> keys = [] {
        std::vector<std::string_view> all = kOptionKeys;
        all.insert(all.end(), kMatchKeys.begin(), kMatchKeys.end());
        return all;
    }();
    if (eq == std::string_view::npos || eq == 0) {
        p.error(t.column, "expected key=value after the algorithm, found '" + std::string(t.text) + "'");
        return;
    }
    const std::string_view key = t.text.substr(0, eq), value = t.text.substr(eq + 1);
    const int vcol = t.column + int(eq) + 1;
    if (key == "segment") {
        if (auto v = p.number(value, vcol, true)) rule.segment_bytes = *v;
    } else if (key == "buffer") {
        if (auto v = p.number(value, vcol, true)) rule.buffer_bytes = *v;
    } else if (key == "leaders") {
        const Algorithm* self = find_algorithm(rule.collective, rule.algorithm);
        const Algorithm* inner = find_algorithm(rule.collective, value);
        if (self == nullptr || !self->needs.topology)
            p.error(t.column, "leaders= names what a hierarchical algorithm's node leaders run; '" + rule.algorithm +
                                  "' has no leaders");
        else if (inner == nullptr)
            p.error(vcol, "no flat " + std::string(to_string(rule.collective)) + " algorithm '" + std::string(value) +
                              "'" + did_you_mean(value, algorithm_names(rule.collective)));
        else if (inner->needs.topology)
            p.error(vcol, "leaders must run a flat algorithm, not '" + std::string(value) + "'");
        else
            rule.leaders = std::string(value);
    } else if (key == "radix") {
        const Algorithm* self = find_algorithm(rule.collective, rule.algorithm);
        if (self == nullptr || !self->reads.radix)
            p.error(t.column, "radix= sets a k-nomial tree's radix; '" + rule.algorithm + "' has none");
        else if (auto v = p.number(value, vcol, false)) {
            if (*v < 2 || *v > kMaxRadix)
                p.error(vcol, "radix must be 2.." + std::to_string(kMaxRadix) + ", found " + std::string(value));
            else
                rule.radix = *v;
        }
    } else if (key == "requests") {
        const Algorithm* self = find_algorithm(rule.collective, rule.algorithm);
        if (self == nullptr || !self->reads.max_requests)
            p.error(t.column, "requests= bounds the requests a linear alltoallv keeps in flight; '" + rule.algorithm +
                                  "' has none");
        else if (auto v = p.number(value, vcol, false)) {
            if (*v < 1)
                p.error(vcol, "requests must be 1 or more, found " + std::string(value));
            else
                rule.requests = *v;
        }
    } else if (key == "nodes") {
        rule.nodes = p.range(value, vcol, false);
    } else if (key == "ranks_per_node") {
        rule.ranks_per_node = p.range(value, vcol, false);
    } else if (key == "ompi") {
        rule.ompi = p.range(value, vcol, false);
    } else if (key == "memory") {
        if (value == "host")
            rule.memory = MemoryKind::host;
        else if (value == "cuda")
            rule.memory = MemoryKind::cuda;
        else
            p.error(vcol, "memory must be 'host' or 'cuda', found '" + std::string(value) + "'");
    } else if (key == "commutative") {
        if (value == "yes")
            rule.commutative = true;
        else if (value == "no")
            rule.commutative = false;
        else
            p.error(vcol, "commutative must be 'yes' or 'no', found '" + std::string(value) + "'");
    } else if (key == "topology") {
        const std::vector<std::string_view> shapes = {"none", "cartesian", "graph", "dist_graph"};
        for (TopologyShape t : {TopologyShape::none, TopologyShape::cartesian, TopologyShape::graph,
                                TopologyShape::dist_graph})
            if (value == to_string(t)) rule.topology = t;
        if (!rule.topology)
            p.error(vcol, "topology must be none, cartesian, graph or dist_graph, found '" + std::string(value) + "'" +
                              (nearest(value, shapes).empty() ? "" : "; did you mean '" + nearest(value, shapes) + "'?"));
    } else if (key == "degree") {
        rule.degree = p.range(value, vcol, false);
    } else if (key == "ndims") {
        rule.ndims = p.range(value, vcol, false);
    } else if (key == "kept") {
        if (value == "yes")
            rule.kept = true;
        else if (value == "no")
            rule.kept = false;
        else
            p.error(vcol, "kept must be 'yes' or 'no', found '" + std::string(value) + "'");
    } else if (key == "phase") {
        if (value == "call")
            rule.phase = Phase::call;
        else if (value == "leaders")
            rule.phase = Phase::leaders;
        else
            p.error(vcol, "phase must be 'call' (a call's own algorithm) or 'leaders' (a hierarchical call's "
                          "leaders' algorithm), found '" + std::string(value) + "'");
    } else {
        p.error(t.column, "unknown key '" + std::string(key) + "'" + did_you_mean(key, keys));
    }
}

// The column of the line's KEY=value word, or 0 if it has none.
int key_column(const std::vector<Token>& t, std::string_view key)
{
    for (const Token& x : t)
        if (x.text.substr(0, x.text.find('=')) == key) return x.column;
    return 0;
}

// The topology keys name facts only the neighbourhood collectives have, and a degree only
// where every rank knows the same one: a rule that can never match says so.
void check_shape_keys(LineParser& p, const Rule& rule, const std::vector<Token>& t)
{
    auto column = [&](std::string_view key) { return key_column(t, key); };
    if (counts(rule.collective) != Counts::per_neighbour) {
        for (std::string_view key : {"topology", "degree", "ndims"})
            if (column(key))
                p.error(column(key), std::string(key) + "= matches the neighbourhood collectives' topology (neighbor_*); " +
                                         std::string(to_string(rule.collective)) + " has none");
        return;
    }
    if (rule.degree && rule.topology == TopologyShape::dist_graph)
        p.error(column("degree"), "degree= never matches a dist_graph: each rank knows only its own neighbours, so no "
                                  "degree is the same on every rank");
    if (rule.ndims && rule.topology && rule.topology != TopologyShape::cartesian)
        p.error(column("ndims"), "ndims= is a Cartesian grid's; topology=" + std::string(to_string(*rule.topology)) +
                                     " has none");
    // Their message size is 0 but for neighbor_allgather and neighbor_alltoall on a Cartesian
    // communicator or an agreed stencil of one block size (registry.hpp, uniform_neighbour_blocks):
    // a graph or dist graph may be one.
    if (!rule.bytes.contains(0) && !uniform_neighbour_blocks(rule.collective))
        p.error(t.size() > 2 ? t[2].column : 0,
                "a byte range without 0 never matches " + std::string(to_string(rule.collective)) +
                    ": its message size is always 0 (its counts differ from rank to rank)");
}

// phase=leaders matches only the choice of a hierarchical call's leaders' algorithm: a
// communicator of one rank per node that cannot hand the call on. A rule that can never be asked
// that says so.
void check_phase_key(LineParser& p, const Rule& rule, const std::vector<Token>& t)
{
    if (rule.phase != Phase::leaders) return;
    const int column = key_column(t, "phase");
    bool hierarchical = false;
    for (const Algorithm& a : all_algorithms())
        hierarchical = hierarchical || (a.collective == rule.collective && a.reads.leaders);
    if (!hierarchical)
        p.error(column, "phase=leaders never matches " + std::string(to_string(rule.collective)) +
                            ": no hierarchical algorithm of it has node leaders to choose for");
    else if (rule.is_fallback())
        p.error(column, "phase=leaders never matches a fallback rule: a hierarchical call's leaders' phase cannot be "
                        "handed to the next component");
    else if (rule.ranks_per_node && !rule.ranks_per_node->contains(1))
        p.error(column, "phase=leaders never matches without ranks_per_node 1: the leaders are one rank per node");
}

} // namespace

std::string Diagnostic::to_string() const
{
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
    return s + (severity == Severity::error ? ": error: " : ": warning: ") + message;
}

bool ParseResult::ok() const
{
    return std::none_of(diagnostics.begin(), diagnostics.end(),
                        [](const Diagnostic& d) { return d.severity == Diagnostic::Severity::error; });
}

ParseResult parse(std::string_view text, std::string_view file)
{
    ParseResult result;
    bool header_seen = false;
    int line_number = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (result.diagnostics.size() >= kMaxErrors) {
            result.diagnostics.push_back({Diagnostic::Severity::error, std::string(file), line_number + 1, 0,
                                          "too many errors; the rest of the file is not checked"});
            break;
        }
        ++line_number;
        const std::size_t eol = std::min(text.find('\n', pos), text.size());
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        LineParser p(file, line_number, result.diagnostics);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.size() > kMaxLineBytes) {
            p.error(int(kMaxLineBytes) + 1, "the line is longer than " + std::to_string(kMaxLineBytes) + " bytes");
            continue;
        }
        line = line.substr(0, line.find('#'));
        bool binary = false;
        for (std::size_t i = 0; i < line.size() && !binary; ++i) {
            const auto c = static_cast<unsigned char>(line[i]);
            if (c < 0x20 && c != '\t') {
                static const char* hex = "0123456789abcdef";
                p.error(int(i) + 1,
                        std::string("unexpected byte 0x") + hex[c >> 4] + hex[c & 15] + " (rule files are text)");
                binary = true;
            }
        }
        if (binary) continue;
        const std::vector<Token> t = tokens(line);
        if (t.empty()) continue;

        if (!header_seen) {
            header_seen = true;
            if (t.size() != 2 || t[0].text != "loom-rules") {
                p.error(t[0].column, "expected the header 'loom-rules 1' as the first line that is not a comment");
                continue;
            }
            if (t[1].text != "1")
                p.error(t[1].column,
                        "unsupported rule-file version '" + std::string(t[1].text) + "' (this loom reads version 1)");
            continue;
        }
        if (t[0].text == "loom-rules") {
            p.error(t[0].column,
                    "the header 'loom-rules 1' must be the first line that is not a comment, and appear once");
            continue;
        }
        if (result.rules.size() >= kMaxRules) {
            p.error(0, "more than " + std::to_string(kMaxRules) + " rules; the rest of the file is ignored");
            break;
        }
        if (t.size() < 4) {
            static const char* const missing[] = {"", "a communicator-size range", "a message-size range",
                                                  "an algorithm"};
            p.error(int(line.size()) + 1, std::string("expected ") + missing[t.size()] +
                                              " (a rule is: collective ranks bytes algorithm [key=value ...])");
            continue;
        }
        Rule rule;
        rule.line = line_number;
        rule.source = std::string(file) + ":" + std::to_string(line_number);
        const auto& names = collective_names();
        const auto found = std::find(names.begin(), names.end(), t[0].text);
        if (found == names.end()) {
            const std::vector<std::string_view> views(names.begin(), names.end());
            const std::string near = nearest(t[0].text, views);
            const std::vector<std::string_view> plain(views.begin(), views.begin() + kCollectiveCount);
            p.error(t[0].column, "unknown collective '" + std::string(t[0].text) + "'" +
                                     (near.empty() ? " (valid: " + join(plain) +
                                                         "; iNAME for non-blocking calls only, NAME_init for "
                                                         "persistent ones)"
                                                   : "; did you mean '" + near + "'?"));
            continue;
        }
        const auto index = int(found - names.begin());
        rule.collective = Collective(index % kCollectiveCount);
        if (index >= 2 * kCollectiveCount)
            rule.form = Form::persistent;
        else if (index >= kCollectiveCount)
            rule.form = Form::nonblocking;
        if (auto r = p.range(t[1].text, t[1].column, false)) rule.ranks = *r;
        if (auto r = p.range(t[2].text, t[2].column, true)) rule.bytes = *r;
        rule.algorithm = std::string(t[3].text);
        if (rule.is_fallback())
            rule.fallback_reason =
                "rule " + rule.source + " hands it to the next component (" + std::string(kFallback) + ")";
        else if (find_algorithm(rule.collective, rule.algorithm) == nullptr)
            p.error(t[3].column, "no " + std::string(t[0].text) + " algorithm '" + rule.algorithm + "'" +
                                     did_you_mean(t[3].text, algorithm_names(rule.collective)));
        std::vector<std::string_view> keys_seen;
        for (std::size_t i = 4; i < t.size(); ++i) {
            const std::string_view key = t[i].text.substr(0, t[i].text.find('='));
            if (std::find(keys_seen.begin(), keys_seen.end(), key) != keys_seen.end()) {
                p.error(t[i].column, "the key '" + std::string(key) + "' is given twice");
                continue;
            }
            keys_seen.push_back(key);
            // Options configure one of loom's algorithms, and a fallback rule runs none: an
            // option there is a mistake worth reporting, not one to ignore silently. Match keys
            // (nodes=, memory=, ...) narrow a fallback rule like any other.
            if (rule.is_fallback() && std::find(kOptionKeys.begin(), kOptionKeys.end(), key) != kOptionKeys.end()) {
                p.error(t[i].column, std::string(kFallback) + " takes no options ('" + std::string(key) +
                                         "=' configures one of loom's algorithms)");
                continue;
            }
            parse_option(p, rule, t[i]);
        }
        check_shape_keys(p, rule, t);
        check_phase_key(p, rule, t);
        if (!p.failed()) result.rules.push_back(std::move(rule));
    }
    if (!header_seen)
        result.diagnostics.push_back({Diagnostic::Severity::error, std::string(file), 0, 0,
                                      "the file has no rules and no header 'loom-rules 1'"});
    return result;
}

namespace {

bool covers(const std::optional<Range>& earlier, const std::optional<Range>& later)
{
    if (!earlier) return true;
    return later && earlier->covers(*later);
}

template <class T>
bool covers_value(const std::optional<T>& earlier, const std::optional<T>& later)
{
    return !earlier || (later && *earlier == *later);
}

std::string show(std::uint64_t v) { return v == UINT64_MAX ? "*" : std::to_string(v); }

} // namespace

std::vector<Diagnostic> lint(const std::vector<Rule>& rules, std::string_view file)
{
    std::vector<Diagnostic> out;
    for (std::size_t j = 0; j < rules.size(); ++j) {
        const Rule& b = rules[j];
        for (std::size_t i = 0; i < j; ++i) {
            const Rule& a = rules[i];
            if (a.collective != b.collective || !a.ranks.covers(b.ranks) || !a.bytes.covers(b.bytes)) continue;
            if (!covers(a.nodes, b.nodes) || !covers(a.ranks_per_node, b.ranks_per_node) || !covers(a.ompi, b.ompi) ||
                !covers_value(a.memory, b.memory) || !covers_value(a.commutative, b.commutative) ||
                !covers_value(a.kept, b.kept) || !covers_value(a.form, b.form) || !covers_value(a.phase, b.phase) ||
                !covers_value(a.topology, b.topology) || !covers(a.degree, b.degree) || !covers(a.ndims, b.ndims))
                continue;
            // An earlier rule passes a call on when its algorithm cannot serve it; only an
            // algorithm that serves every call it matches shadows the later rule. A fallback
            // rule (no algorithm) never passes a call on: it hands every one to the next
            // component, so it shadows like an algorithm without limits.
            const Algorithm* algo = find_algorithm(a.collective, a.algorithm);
            const bool b_one_node = b.nodes && b.nodes->lo == 1 && b.nodes->hi == 1;
            const bool may_decline =
                algo != nullptr && ((algo->needs.commutative_op && a.commutative != true && b.commutative != true) ||
                                    algo->needs.power_of_two || (algo->needs.same_node && !b_one_node) ||
                                    algo->needs.topology || algo->needs.equal_nodes);
            if (may_decline) continue;
            out.push_back(
                {Diagnostic::Severity::warning, std::string(file), b.line, 1,
                 "this rule can never match: line " + std::to_string(a.line) + " matches every call it would"});
            break;
        }
    }
    // Gaps: message sizes that no rule of a collective covers.
    for (int c = 0; c < kCollectiveCount; ++c) {
        std::vector<Range> ranges;
        int first_line = 0;
        for (const Rule& r : rules)
            if (r.collective == Collective(c)) {
                ranges.push_back(r.bytes);
                if (first_line == 0) first_line = r.line;
            }
        if (ranges.empty()) continue;
        std::sort(ranges.begin(), ranges.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
        std::uint64_t next = 0; // first size not yet covered
        bool done = false;
        for (const Range& r : ranges) {
            if (done) break;
            if (r.lo > next)
                out.push_back({Diagnostic::Severity::warning, std::string(file), first_line, 0,
                               std::string(to_string(Collective(c))) + ": no rule covers message sizes " + show(next) +
                                   "-" + show(r.lo - 1) + " (such calls use the defaults)"});
            if (r.hi == UINT64_MAX)
                done = true;
            else
                next = std::max(next, r.hi + 1);
        }
        if (!done)
            out.push_back({Diagnostic::Severity::warning, std::string(file), first_line, 0,
                           std::string(to_string(Collective(c))) + ": no rule covers message sizes " + show(next) +
                               "-* (such calls use the defaults)"});
    }
    return out;
}

bool matches(const Rule& rule, const Call& call)
{
    if (rule.collective != call.collective || !rule.ranks.contains(std::uint64_t(call.ranks)) ||
        !rule.bytes.contains(call.bytes))
        return false;
    if (rule.nodes && (call.nodes == 0 || !rule.nodes->contains(std::uint64_t(call.nodes)))) return false;
    if (rule.ranks_per_node &&
        (call.ranks_per_node == 0 || !rule.ranks_per_node->contains(std::uint64_t(call.ranks_per_node))))
        return false;
    if (rule.ompi && (call.ompi_major == 0 || !rule.ompi->contains(std::uint64_t(call.ompi_major)))) return false;
    if (rule.memory && *rule.memory != call.memory) return false;
    if (rule.commutative && *rule.commutative != call.commutative) return false;
    if (rule.kept && *rule.kept == call.fallback_allowed) return false;
    if (rule.form && *rule.form != call.form) return false;
    if (rule.phase && *rule.phase != call.phase) return false;
    return topology_matches(rule, call.topology, call.degree, call.ndims);
}

bool topology_matches(const Rule& rule, TopologyShape topology, int degree, int ndims)
{
    if (rule.topology && *rule.topology != topology) return false;
    if (rule.degree && (degree == 0 || !rule.degree->contains(std::uint64_t(degree)))) return false;
    return !rule.ndims || (topology == TopologyShape::cartesian && rule.ndims->contains(std::uint64_t(ndims)));
}

std::string_view to_string(TopologyShape t)
{
    switch (t) {
    case TopologyShape::none: return "none";
    case TopologyShape::cartesian: return "cartesian";
    case TopologyShape::graph: return "graph";
    case TopologyShape::dist_graph: return "dist_graph";
    }
    return "none"; // not reached: every shape is a case above
}

std::string form_name(Collective c, std::optional<Form> form)
{
    const std::string name(to_string(c));
    if (form == Form::nonblocking) return "i" + name;
    if (form == Form::persistent) return name + "_init";
    return name;
}

std::string nearest(std::string_view word, const std::vector<std::string_view>& candidates)
{
    if (word.size() > 64) return {};
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (std::string_view c : candidates) {
        // Levenshtein distance, two rows.
        std::vector<std::size_t> prev(c.size() + 1), cur(c.size() + 1);
        for (std::size_t j = 0; j <= c.size(); ++j) prev[j] = j;
        for (std::size_t i = 1; i <= word.size(); ++i) {
            cur[0] = i;
            for (std::size_t j = 1; j <= c.size(); ++j)
                cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] == c[j - 1] ? 0 : 1)});
            prev.swap(cur);
        }
        if (prev[c.size()] < best_distance) {
            best_distance = prev[c.size()];
            best = std::string(c);
        }
    }
    return best;
}

} // namespace loom::rules
