// The rule-table half of loom's C interface (loom_c_api.h): loading the user's rules,
// resolving tables for a communicator, and loom_choose, which describes a glue call to the one
// chooser (decide.hpp) and writes its decision back. No C++ exception crosses into Open MPI.
#include "loom_c_api.h"

#include "decide.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

using namespace loom;

extern "C" int loom_rules_load(const char* path, char** report)
{
    *report = nullptr;
    std::vector<rules::Diagnostic> diagnostics;
    try {
        diagnostics = rules::load_user_rules(path != nullptr ? path : "");
    } catch (...) {
        diagnostics.push_back({rules::Diagnostic::Severity::error, path, 0, 0, "cannot load the rule file"});
    }
    std::string text;
    int errors = 0;
    for (const auto& d : diagnostics) {
        text += d.to_string() + "\n";
        errors += d.severity == rules::Diagnostic::Severity::error;
    }
    if (!text.empty()) {
        *report = static_cast<char*>(std::malloc(text.size() + 1));
        if (*report != nullptr) std::memcpy(*report, text.c_str(), text.size() + 1);
    }
    return errors;
}

// A handle is a shared reference to the process's tables for the communicator's shape.
using ResolvedHandle = std::shared_ptr<const rules::Resolved>;

extern "C" void* loom_rules_resolve_shape(int comm_size, int nodes, int ranks_per_node)
{
    try {
        return new ResolvedHandle(rules::resolved_for(comm_size, nodes, ranks_per_node));
    } catch (...) {
        return nullptr;
    }
}

extern "C" void* loom_rules_resolve(int comm_size, const char* const* hostnames)
{
    try {
        std::vector<std::string> hosts;
        if (hostnames != nullptr) hosts.assign(hostnames, hostnames + comm_size);
        const rules::NodeShape shape = rules::node_shape(hosts);
        return loom_rules_resolve_shape(comm_size, shape.nodes, shape.ranks_per_node);
    } catch (...) {
        return nullptr;
    }
}

extern "C" void loom_rules_release(void* resolved) { delete static_cast<ResolvedHandle*>(resolved); }

namespace {
rules::SegmentState segment_state(int segment)
{
    return segment == LOOM_SEGMENT_READY ? rules::SegmentState::ready
           : segment == LOOM_SEGMENT_NOT_YET ? rules::SegmentState::not_yet
                                             : rules::SegmentState::none;
}

// The forced parameter's algorithm, looked up once per value: the parameter's string changes
// only between collectives (through MPI_T), so the last lookup per collective is kept.
const Algorithm* forced_lookup(Collective c, const char* forced)
{
    thread_local struct {
        const char* text;
        const Algorithm* algorithm;
    } last[kCollectiveCount] = {};
    auto& memo = last[std::size_t(c)];
    if (memo.text == forced && memo.algorithm != nullptr && std::strcmp(forced, memo.algorithm->name.data()) == 0)
        return memo.algorithm;
    memo = {forced, find_algorithm(c, forced)};
    return memo.algorithm;
}
} // namespace

extern "C" const char* loom_choose(loom_call_t* call, int comm_size, const char* forced, const void* resolved,
                                   const char** why, const char** rule_source)
{
    try {
        std::shared_ptr<const rules::Resolved> own;
        const rules::Resolved* tables = resolved != nullptr ? static_cast<const ResolvedHandle*>(resolved)->get() : nullptr;
        if (tables == nullptr) tables = (own = rules::resolved_for(comm_size, 0, 0)).get();
        const Collective c = static_cast<Collective>(call->coll);
        rules::CallFacts facts;
        facts.collective = c;
        facts.bytes = message_bytes(*call, comm_size);
        facts.ranks = comm_size;
        facts.nodes = tables->nodes;
        facts.ranks_per_node = tables->ranks_per_node;
        facts.memory = call->memory == LOOM_MEMORY_CUDA ? rules::MemoryKind::cuda : rules::MemoryKind::host;
        facts.commutative = !reduces(c) || call->op.commutative != 0;
        facts.element_bytes = reduces(c) ? call->op.elem_size : 0;
        facts.keep_from_open_mpi = call->keep_from_open_mpi != 0;
        facts.segment = segment_state(call->segment);
        if (forced != nullptr && forced[0] != '\0') {
            facts.forced = forced;
            facts.forced_algorithm = forced_lookup(c, forced);
        }
        const rules::Decision d = rules::decide(facts, *tables);
        call->wants_segment = d.wants_segment ? 1 : 0;
        if (rule_source != nullptr && d.source[0] != '\0') *rule_source = d.source;
        if (d.algorithm == nullptr) {
            if (why != nullptr) *why = d.why;
            return nullptr;
        }
        if (d.segment_bytes != 0) call->segment_bytes = d.segment_bytes;
        if (d.buffer_bytes != 0) call->buffer_bytes = d.buffer_bytes;
        call->leaders = d.leaders;
        call->chosen = d.algorithm;
        return d.algorithm->name.data();
    } catch (...) {
        if (why != nullptr) *why = "loom could not evaluate its rules (out of memory)";
        return nullptr;
    }
}

extern "C" void loom_choice_options(const loom_call_t* call, size_t segment_param, size_t buffer_param, char* buf,
                                    size_t size)
{
    if (size == 0) return;
    buf[0] = '\0';
    const auto* algo = static_cast<const Algorithm*>(call->chosen);
    if (algo == nullptr) return;
    try {
        const std::string text =
            rules::options_text(*algo, call->segment_bytes != 0 ? call->segment_bytes : segment_param,
                                call->buffer_bytes != 0 ? call->buffer_bytes : buffer_param,
                                static_cast<const Algorithm*>(call->leaders));
        const std::size_t n = std::min(text.size(), size - 1);
        text.copy(buf, n);
        buf[n] = '\0';
    } catch (...) {
    }
}
