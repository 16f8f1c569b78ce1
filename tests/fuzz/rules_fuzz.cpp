// libFuzzer target: the rule-file parser, linter and matcher on hostile input. Built and run
// by tests/fuzz/run-fuzz (clang++ -fsanitize=fuzzer,address,undefined).
//
// Beyond "no crash, no hang", it checks what every caller relies on, and aborts (a finding)
// when the parser breaks it:
//   - every diagnostic names the file and a line of the input (or 0, the whole file);
//   - every rule names a registered algorithm of its collective or is a fallback rule (with
//     its reason text and no options), has non-empty ranges and a source "FILE:LINE" pointing
//     at a line that holds it;
//   - ok() is false exactly when there is an error;
//   - decide() (through choose() below) returns a rule that matches the call and whose algorithm can serve it (or a
//     fallback rule, which serves every call it matches), and its trace ends with that rule.
#include "decide.hpp"
#include "registry.hpp"
#include "rules.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace loom;
using namespace loom::rules;

[[noreturn]] void fail(const char* what, const std::string& detail)
{
    std::fprintf(stderr, "rules_fuzz: %s: %s\n", what, detail.c_str());
    std::abort();
}

// decide() (the one chooser) over the fuzzed tables, narrowed to the call's communicator.
const Rule* choose(const std::vector<const std::vector<Rule>*>& tables, const Call& call,
                   std::vector<Verdict>* trace = nullptr)
{
    return decide(facts_of(call), narrow(tables, call.ranks, call.nodes, call.ranks_per_node, call.ompi_major), trace)
        .rule;
}

// "chosen", or for a fallback rule "chosen: hands the call to the next component".
bool chosen(const Verdict& v) { return v.outcome.rfind("chosen", 0) == 0; }

void check_choice(const std::vector<const std::vector<Rule>*>& tables, const Call& call)
{
    std::vector<Verdict> trace;
    const Rule* r = choose(tables, call, &trace);
    if (r != choose(tables, call)) fail("choose() differs with and without a trace", "");
    if (r == nullptr) {
        for (const Verdict& v : trace)
            if (chosen(v)) fail("a rule marked chosen but none returned", v.rule->source);
        return;
    }
    if (!matches(*r, call)) fail("choose() returned a rule that does not match", r->source);
    const Algorithm* a = find_algorithm(r->collective, r->algorithm);
    // The call's shape as decide() sees it (ranks per node too: hierarchical_rs needs nodes of
    // equal size, which a shape without it cannot show).
    if (!r->is_fallback() && (a == nullptr || why_not(*a, shape_of(facts_of(call), call.segment))))
        fail("choose() returned a rule whose algorithm cannot serve the call", r->source);
    // A fallback rule ends the search: no later rule may have been considered.
    if (trace.empty() || trace.back().rule != r || !chosen(trace.back()))
        fail("the trace does not end with the chosen rule", r->source);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string_view file = "fuzz.rules";
    const ParseResult result = parse(text, file);

    const auto lines = std::size_t(std::count(text.begin(), text.end(), '\n')) + 1;
    bool has_error = false;
    for (const Diagnostic& d : result.diagnostics) {
        if (d.file != file) fail("a diagnostic names another file", d.to_string());
        if (d.line < 0 || std::size_t(d.line) > lines) fail("a diagnostic names no line of the input", d.to_string());
        if (d.column < 0 || d.column > 4097) fail("a diagnostic's column is off the line", d.to_string());
        if (d.message.empty()) fail("a diagnostic without a message", d.to_string());
        has_error = has_error || d.severity == Diagnostic::Severity::error;
        (void)d.to_string();
    }
    if (result.ok() == has_error) fail("ok() disagrees with the diagnostics", "");
    if (result.rules.size() > 100000) fail("more rules than the limit", std::to_string(result.rules.size()));

    int previous_line = 0;
    for (const Rule& r : result.rules) {
        if (r.is_fallback()) {
            if (r.fallback_reason.find(r.source) == std::string::npos)
                fail("a fallback rule's reason does not name it", r.source);
            if (r.segment_bytes != 0 || r.buffer_bytes != 0) fail("a fallback rule with options", r.source);
        } else if (find_algorithm(r.collective, r.algorithm) == nullptr) {
            fail("a rule names no algorithm", r.source);
        }
        if (r.ranks.lo > r.ranks.hi || r.bytes.lo > r.bytes.hi) fail("a rule with an empty range", r.source);
        if ((r.nodes && r.nodes->lo > r.nodes->hi) ||
            (r.ranks_per_node && r.ranks_per_node->lo > r.ranks_per_node->hi) || (r.ompi && r.ompi->lo > r.ompi->hi))
            fail("a rule with an empty key range", r.source);
        if (r.source != std::string(file) + ":" + std::to_string(r.line))
            fail("a rule's source is not FILE:LINE", r.source);
        if (r.line <= previous_line || std::size_t(r.line) > lines)
            fail("rule lines out of order or off the input", r.source);
        previous_line = r.line;
    }

    for (const Diagnostic& d : lint(result.rules, file))
        if (d.severity != Diagnostic::Severity::warning || d.line < 1)
            fail("lint() produced a bad diagnostic", d.to_string());

    // A couple of calls: user rules first, then the defaults, as the component consults them.
    // The calls' shape comes from the input's last bytes, so the fuzzer can steer them.
    const std::uint8_t b0 = size > 0 ? data[size - 1] : 0, b1 = size > 1 ? data[size - 2] : 0;
    const std::vector<const std::vector<Rule>*> tables = {&result.rules, &default_rules()};
    Call call;
    call.collective = Collective(b0 % kCollectiveCount);
    call.ranks = 1 + (b1 % 64);
    call.bytes = (std::uint64_t(1) << (b1 % 64)) - (b0 & 1);
    call.nodes = b0 & 3;
    call.ranks_per_node = (b1 >> 2) & 7;
    call.memory = (b0 & 4) ? MemoryKind::cuda : MemoryKind::host;
    call.commutative = (b0 & 8) == 0;
    call.ompi_major = (b1 >> 5) & 7; // 0 (unknown) to 7
    check_choice(tables, call);
    call.commutative = !call.commutative;
    check_choice({&result.rules}, call);
    // One of the input's rules, called at the edges of its ranges.
    if (!result.rules.empty()) {
        const Rule& r = result.rules[b1 % result.rules.size()];
        call.collective = r.collective;
        call.ranks = int(std::min<std::uint64_t>(r.ranks.lo, 1u << 20));
        call.bytes = r.bytes.hi;
        check_choice(tables, call);
    }
    return 0;
}
