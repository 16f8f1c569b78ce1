#include "decide.hpp"

#include "collectives.hpp"

#include <algorithm>

namespace loom::rules {

CallShape shape_of(const CallFacts& c, bool segment)
{
    CallShape shape{c.ranks, std::size_t(c.bytes), c.commutative, c.nodes, c.ranks_per_node, segment, c.element_bytes};
    shape.single_copy = c.single_copy && c.memory == MemoryKind::host; // device buffers never go single copy
    shape.stencil = c.stencil;
    return shape;
}

namespace {

// The first candidate that matches and can serve (or is an allowed fallback rule); nullptr if
// none. Candidates passed over only for want of a segment set *wants (when given).
const Candidate* walk(const std::vector<Candidate>& candidates, const CallFacts& c, bool fallback_allowed,
                      std::vector<Verdict>* trace, bool* wants)
{
    const bool segment = c.segment == SegmentState::ready;
    for (const Candidate& cand : candidates) {
        const Rule& rule = *cand.rule;
        if (!rule.bytes.contains(c.bytes) || (rule.memory && *rule.memory != c.memory) ||
            (rule.commutative && *rule.commutative != c.commutative) || (rule.form && *rule.form != c.form) ||
            (rule.kept && *rule.kept != c.keep_from_open_mpi) || (rule.phase && *rule.phase != c.phase) ||
            !topology_matches(rule, c.topology, c.degree, c.ndims)) {
            if (trace) trace->push_back({&rule, "does not match"});
            continue;
        }
        if (cand.algorithm == nullptr) {
            if (fallback_allowed) {
                if (trace) trace->push_back({&rule, "chosen: hands the call to the next component"});
                return &cand;
            }
            if (trace)
                trace->push_back({&rule, "matches, but fallback is passed over: " + std::string(kFallbackRefused)});
            continue;
        }
        const auto no = why_not(*cand.algorithm, shape_of(c, segment));
        if (!no) {
            if (trace) trace->push_back({&rule, "chosen"});
            return &cand;
        }
        if (*no == kNoSegment && wants != nullptr && c.segment == SegmentState::not_yet) *wants = true;
        if (trace)
            trace->push_back({&rule, "matches, but " + rule.algorithm + " cannot serve the call: " + std::string(*no) +
                                         (*no == kNoSegment && c.segment == SegmentState::not_yet
                                              ? " (yet: the glue sets one up once enough calls want it)"
                                              : "")});
    }
    return nullptr;
}

// What each leader (or lane) of a hierarchical call moves between nodes in one run of the
// leaders' algorithm: the whole message; for hierarchical_rs one of ranks-per-node slices; for
// hierarchical_seg, which runs it once per segment of `segment` bytes (the rule's segment=, else
// the call's segment_size), one segment (allreduce, bcast) or one segment of every node's part
// (allgather, reduce_scatter: hierarchical_segmented.cpp).
std::uint64_t leaders_bytes(const Algorithm& algo, const CallFacts& c, std::uint64_t segment)
{
    const std::uint64_t whole =
        algo.needs.equal_nodes && c.ranks_per_node > 0 ? c.bytes / std::uint64_t(c.ranks_per_node) : c.bytes;
    if (!algo.reads.segment_size) return whole;
    const std::uint64_t s = segment != 0 ? segment : c.segment_size != 0 ? c.segment_size : kDefaultSegmentBytes;
    const bool one_per_node = c.collective != Collective::allreduce && c.collective != Collective::bcast;
    return std::min(whole, one_per_node ? s * std::uint64_t(std::max(c.nodes, 1)) : s);
}

// The flat algorithm the node leaders of a hierarchical call run, and where it came from.
void choose_leaders(Decision& d, const CallFacts& c, const Resolved& tables)
{
    const Algorithm& algo = *d.algorithm;
    if (!algo.reads.leaders) return;
    if (c.nodes < 2) { // one node: the leaders' phase has one rank
        d.leaders = find_algorithm(c.collective, algo.default_leaders);
        d.leaders_source = "default";
        return;
    }
    const std::uint64_t bytes = leaders_bytes(algo, c, d.segment_bytes);
    d.leaders_bytes = bytes;
    const int nodes = c.nodes;
    // The leaders' communicator: one rank per node. Its phase cannot be handed on, and an
    // algorithm that needs the topology would recurse.
    CallFacts leaders;
    leaders.collective = c.collective;
    leaders.bytes = bytes;
    leaders.ranks = leaders.nodes = nodes;
    leaders.ranks_per_node = 1;
    leaders.ompi_major = c.ompi_major;
    leaders.commutative = c.commutative;
    leaders.form = c.form;
    leaders.element_bytes = c.element_bytes;
    leaders.keep_from_open_mpi = true;
    leaders.phase = Phase::leaders; // rules with phase=call are passed over
    leaders.segment = SegmentState::none;
    auto usable = [&](const Algorithm* a) {
        return a != nullptr && !a->needs.topology && !why_not(*a, shape_of(leaders, false));
    };
    if (d.rule != nullptr && !d.rule->leaders.empty()) {
        const Algorithm* named = find_algorithm(c.collective, d.rule->leaders);
        if (usable(named)) {
            d.leaders = named;
            d.leaders_source = "leaders=";
            return;
        }
    }
    if (tables.leaders) {
        const Candidate* pick =
            walk(tables.leaders->candidates[std::size_t(leaders.collective)], leaders, false, nullptr, nullptr);
        if (pick != nullptr && usable(pick->algorithm)) {
            d.leaders = pick->algorithm;
            d.leaders_source = pick->rule->source;
            return;
        }
    }
    d.leaders = find_algorithm(c.collective, algo.default_leaders);
    d.leaders_source = "default";
}

Decision chosen(const Candidate& cand)
{
    Decision d;
    d.rule = cand.rule;
    d.source = cand.rule->source.c_str();
    if (cand.algorithm == nullptr) {
        // The reason was built by parse(); a rule made by hand has none.
        d.why = cand.rule->fallback_reason.empty() ? "a fallback rule hands it to the next component"
                                                   : cand.rule->fallback_reason.c_str();
        return d;
    }
    d.algorithm = cand.algorithm;
    d.segment_bytes = cand.rule->segment_bytes;
    d.buffer_bytes = cand.rule->buffer_bytes;
    d.radix = cand.rule->radix;
    d.requests = cand.rule->requests;
    return d;
}

} // namespace

CallFacts facts_of(const Call& call)
{
    CallFacts f;
    f.collective = call.collective;
    f.bytes = call.bytes;
    f.ranks = call.ranks;
    f.nodes = call.nodes;
    f.ranks_per_node = call.ranks_per_node;
    f.ompi_major = call.ompi_major;
    f.memory = call.memory;
    f.commutative = call.commutative;
    f.form = call.form;
    f.keep_from_open_mpi = !call.fallback_allowed;
    f.topology = call.topology;
    f.degree = call.degree;
    f.ndims = call.ndims;
    f.phase = call.phase;
    f.segment = call.segment ? SegmentState::ready : SegmentState::none;
    return f;
}

Call call_of(const CallFacts& f)
{
    Call call;
    call.collective = f.collective;
    call.ranks = f.ranks;
    call.bytes = f.bytes;
    call.nodes = f.nodes;
    call.ranks_per_node = f.ranks_per_node;
    call.ompi_major = f.ompi_major;
    call.memory = f.memory;
    call.commutative = f.commutative;
    call.form = f.form;
    call.fallback_allowed = !f.keep_from_open_mpi;
    call.topology = f.topology;
    call.degree = f.degree;
    call.ndims = f.ndims;
    call.phase = f.phase;
    call.segment = f.segment == SegmentState::ready;
    return call;
}

std::string options_text(const Algorithm& algorithm, std::uint64_t segment_bytes, std::uint64_t buffer_bytes, std::uint64_t radix,
                         const Algorithm* leaders, std::uint64_t requests)
{
    std::string text;
    auto add = [&](std::string item) { text += (text.empty() ? "" : ", ") + item; };
    if (algorithm.reads.segment_size) add("segment=" + std::to_string(segment_bytes));
    if (algorithm.reads.pat_buffer) add("buffer=" + std::to_string(buffer_bytes));
    if (algorithm.reads.radix) add("radix=" + std::to_string(radix));
    if (algorithm.reads.max_requests) add(requests != 0 ? "requests=" + std::to_string(requests) : "requests=all");
    if (algorithm.reads.leaders) add("leaders=" + std::string(leaders != nullptr ? leaders->name : "?"));
    return text.empty() ? "none" : text;
}

namespace {
Decision decide_pending(const CallFacts& call, const Resolved& tables, std::vector<Verdict>* trace,
                        const Layer* learned)
{
    CallFacts ready = call;
    ready.segment = SegmentState::ready;
    Decision d = decide(ready, tables, trace, learned);
    if (d.algorithm == nullptr || !d.algorithm->needs.segment) return d;
    CallFacts without = call;
    without.segment = SegmentState::none;
    without.keep_from_open_mpi = true;
    const Decision stand_in = decide(without, tables, nullptr, learned);
    if (stand_in.algorithm != nullptr) {
        d.stand_in = {stand_in.algorithm, stand_in.leaders, stand_in.segment_bytes, stand_in.buffer_bytes, stand_in.radix,
                      stand_in.requests, stand_in.source};
        return d;
    }
    // No rule names one (the tables hand this call on without a segment): the registry's first
    // algorithm for the collective that serves it without a segment and reads no leaders stands
    // in, with its parameters' values, so that the call takes the algorithm the rules chose, as
    // the calls after the set-up will, instead of being handed on for its own set-up's sake.
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != call.collective || a.reads.leaders || why_not(a, shape_of(without, false))) continue;
        d.stand_in = {&a, nullptr, 0, 0, 0, 0, kRegistryStandIn};
        return d;
    }
    without.keep_from_open_mpi = call.keep_from_open_mpi;
    if (trace) trace->clear();
    return decide(without, tables, trace, learned);
}
} // namespace

Decision decide(const CallFacts& call, const Resolved& tables, std::vector<Verdict>* trace, const Layer* learned)
{
    if (call.segment == SegmentState::pending) return decide_pending(call, tables, trace, learned);
    Decision d;
    d.why = "no rule chooses an algorithm that can serve this call";
    if (!call.forced.empty()) {
        // A forced algorithm is used or the call is handed on; loom never swaps in another
        // algorithm the user did not ask for - except where handing on would give a wrong
        // answer: then the rules choose, as they do for such a call.
        const Algorithm* algo =
            call.forced_algorithm != nullptr ? call.forced_algorithm : find_algorithm(call.collective, call.forced);
        if (call.forced == kFallback) {
            d.why = "forced to fallback: every call goes to the next component";
            d.source = "forced";
        } else if (algo == nullptr) {
            d.why = "the forced algorithm does not exist";
        } else if (auto no = why_not(*algo, shape_of(call, call.segment == SegmentState::ready))) {
            d.why = no->data();
            // Only the segment is missing: the glue makes it now, for a forced algorithm.
            d.wants_segment = *no == kNoSegment && call.segment == SegmentState::not_yet;
        } else {
            d.algorithm = algo;
            d.source = "forced";
            choose_leaders(d, call, tables);
            return d;
        }
        if (!call.keep_from_open_mpi) return d;
    }
    bool wants = false;
    const std::size_t c = std::size_t(call.collective);
    // The learned layer first: a rule there is what was measured fastest for the call's class on
    // this communicator (or, while the class's trial runs, the candidate being timed).
    const Candidate* cand =
        learned != nullptr ? walk((*learned)[c], call, !call.keep_from_open_mpi, trace, &wants) : nullptr;
    if (cand == nullptr) cand = walk(tables.candidates[c], call, !call.keep_from_open_mpi, trace, &wants);
    if (cand == nullptr) {
        d.wants_segment = d.wants_segment || wants;
        return d;
    }
    const bool forced_wants = d.wants_segment;
    d = chosen(*cand);
    d.wants_segment = forced_wants || wants;
    if (d.algorithm != nullptr) choose_leaders(d, call, tables);
    return d;
}

} // namespace loom::rules
