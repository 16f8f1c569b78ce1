// The rule-table half of loom's C interface (loom_c_api.h): loading the user's rules,
// resolving tables for a communicator, and loom_choose, which describes a glue call to the one
// chooser (decide.hpp) and writes its decision back. No C++ exception crosses into Open MPI.
#include "loom_c_api.h"

#include "decide.hpp"
#include "learned.hpp"
#include "registry.hpp"
#include "take_part.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

static_assert(loom::rules::kFallback == LOOM_FORCED_FALLBACK, "the forced value that hands on is a rule's fallback");
static_assert(2 * loom::rules::kMaxTuneCandidates == LOOM_LEARNED_MAX_TIMES, "a trial's times: two per candidate");

using namespace loom;

extern "C" int loom_rules_load(int layer, const char* path, int ompi_major, char** report)
{
    *report = nullptr;
    std::vector<rules::Diagnostic> diagnostics;
    const std::string file = path != nullptr ? path : "";
    try {
        rules::set_open_mpi_major(ompi_major);
        diagnostics = layer == LOOM_RULES_SITE ? rules::load_site_rules(file) : rules::load_user_rules(file);
    } catch (...) {
        diagnostics.push_back({rules::Diagnostic::Severity::error, file, 0, 0, "cannot load the rule file"});
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

extern "C" size_t loom_rules_count(int layer)
{
    return layer == LOOM_RULES_SITE ? rules::site_rules().size() : rules::user_rules().size();
}

extern "C" int loom_ompi_release_parse(const char* library_version, int release[3])
{
    const auto r = take_part::parse_release(library_version != nullptr ? library_version : "");
    if (!r) return 0;
    release[0] = r->major;
    release[1] = r->minor;
    release[2] = r->release;
    return 1;
}

extern "C" uint64_t loom_rules_fingerprint(const char* version, const char* settings)
{
    try {
        return take_part::rules_fingerprint(version != nullptr ? version : "", settings != nullptr ? settings : "");
    } catch (...) {
        return 0; // out of memory: no fingerprint, and this process does not take part
    }
}

namespace {

// The facts decide() reads (rules::CallFacts but the communicator's shape, which is the
// handle's), and its decision as loom_choose hands it out.
struct MemoKey {
    std::uint64_t bytes;
    std::size_t element_bytes;
    const char* forced;
    const Algorithm* forced_algorithm;
    rules::MemoryKind memory;
    rules::SegmentState segment;
    bool single_copy;
    bool commutative;
    bool keep_from_open_mpi;
    int form;
    const loom_neighbourhood_t* neighbours; // the topology facts (fixed per communicator)
    bool combinable;                        // combinable(): its blocks change with the call, not only its size
    std::uint64_t learned; // the learned layer's generation (0: none)
    bool operator==(const MemoKey&) const = default;
};

struct Memo {
    bool valid = false;
    MemoKey key{};
    const Algorithm* algorithm = nullptr;
    const Algorithm* leaders = nullptr;
    std::uint64_t segment_bytes = 0, buffer_bytes = 0, radix = 0, requests = 0;
    const char* source = "";
    const char* why = "";
    bool wants_segment = false;
    loom_stand_in_t stand_in{};        // segment pending: see decide.hpp
    const rules::Rule* rule = nullptr; // the rule that decided (online tuning's candidate 0)
};

// One communicator's handle: a shared reference to the process's tables for its shape, and
// per collective the last decision. Applications repeat the same call (size, op, type), and
// decide() is a pure function of the key, so the repeat costs a comparison instead of a rule
// walk. The forced parameter is part of the key (its string pointer changes when MPI_T writes
// it), as is the segment's state. Collectives on one communicator never run concurrently
// (MPI requires it), so the memo needs no lock.
struct ResolvedHandle {
    std::shared_ptr<const rules::Resolved> tables;
    Memo last[kCollectiveCount];
    // Online tuning's layer on this communicator (learned.hpp), made at its first tuned call.
    std::unique_ptr<rules::Learned> learned;
    // The forced parameter's algorithm, looked up once per value: the parameter's string
    // changes only between collectives (through MPI_T), and a new value may reuse the old
    // one's address, so the name is compared too. A name that is no algorithm (`fallback`, a
    // misspelling) is remembered as such: looking it up walked the whole registry on every
    // call, about 500 instructions of each call `fallback` hands on that has no repeat path
    // (reduce_scatter: tools/dev/call-instructions).
    struct {
        std::string name;
        const char* text = nullptr;
        const Algorithm* algorithm = nullptr;
    } forced[kCollectiveCount];

    const Algorithm* forced_algorithm(Collective c, const char* text)
    {
        auto& memo = forced[std::size_t(c)];
        if (memo.text == text && memo.name == text) return memo.algorithm;
        memo.text = text;
        memo.name = text;
        memo.algorithm = find_algorithm(c, text);
        return memo.algorithm;
    }
};

} // namespace

extern "C" void* loom_rules_resolve_shape(int comm_size, int nodes, int ranks_per_node)
{
    try {
        return new ResolvedHandle{rules::resolved_for(comm_size, nodes, ranks_per_node), {}, {}, {}};
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

extern "C" int loom_rules_may_need_stencil(const void* resolved, const char* const* forced)
{
    try {
        const auto* h = static_cast<const ResolvedHandle*>(resolved);
        for (std::size_t c = 0; c < kCollectiveCount; ++c) {
            const char* name = forced != nullptr ? forced[c] : nullptr;
            if (name != nullptr && name[0] != '\0') {
                const Algorithm* a = find_algorithm(Collective(c), name);
                if (a != nullptr && a->needs.stencil) return 1;
            }
            if (h == nullptr) continue;
            for (const auto& candidate : h->tables->candidates[c])
                if (candidate.algorithm != nullptr && candidate.algorithm->needs.stencil) return 1;
        }
        return 0;
    } catch (...) {
        return 0; // never thrown (no allocation); if it were, no rank would agree, alike
    }
}

namespace {
rules::SegmentState segment_state(int segment)
{
    return segment == LOOM_SEGMENT_READY     ? rules::SegmentState::ready
           : segment == LOOM_SEGMENT_NOT_YET ? rules::SegmentState::not_yet
           : segment == LOOM_SEGMENT_PENDING ? rules::SegmentState::pending
                                             : rules::SegmentState::none;
}

std::uint64_t& default_segment_size()
{
    static std::uint64_t bytes = 0; // 0: LOOM_SEGMENT_SIZE_DEFAULT
    return bytes;
}

rules::TopologyShape topology_shape(int kind)
{
    return kind == LOOM_TOPO_CARTESIAN ? rules::TopologyShape::cartesian
           : kind == LOOM_TOPO_GRAPH   ? rules::TopologyShape::graph
                                       : rules::TopologyShape::dist_graph;
}

// The facts the rules decide call by (rules::decide), for comm_size ranks and tables narrowed to
// its communicator; the forced algorithm, if any, is the caller's to add.
rules::CallFacts facts_of(const loom_call_t& call, int comm_size, const rules::Resolved& tables)
{
    const Collective c = static_cast<Collective>(call.coll);
    rules::CallFacts facts;
    facts.collective = c;
    facts.bytes = message_bytes(call, comm_size);
    facts.ranks = comm_size;
    facts.nodes = tables.nodes;
    facts.ranks_per_node = tables.ranks_per_node;
    facts.ompi_major = tables.ompi_major;
    facts.memory = call.memory == LOOM_MEMORY_CUDA ? rules::MemoryKind::cuda : rules::MemoryKind::host;
    facts.commutative = !reduces(c) || call.op.commutative != 0;
    facts.form = call.form == LOOM_FORM_NONBLOCKING  ? rules::Form::nonblocking
                 : call.form == LOOM_FORM_PERSISTENT ? rules::Form::persistent
                                                     : rules::Form::blocking;
    facts.element_bytes = reduces(c) ? call.op.elem_size : 0;
    facts.segment_size = default_segment_size();
    facts.keep_from_open_mpi = call.keep_from_open_mpi != 0;
    facts.segment = segment_state(call.segment);
    facts.single_copy = call.single_copy == LOOM_SINGLE_COPY_ON;
    if (const loom_neighbourhood_t* n = call.neighbours) { // the neighbourhood collectives'
        facts.topology = topology_shape(n->kind);
        facts.degree = n->degree; // 0 for a dist graph: no rank knows the others' degrees
        facts.ndims = n->kind == LOOM_TOPO_CARTESIAN ? n->ndims : 0;
        facts.stencil = combinable(call); // the glue sets n->stencil only when every rank agreed
    }
    return facts;
}

} // namespace

extern "C" void loom_rules_set_segment_size(size_t bytes) { default_segment_size() = bytes; }

extern "C" const char* loom_choose(loom_call_t* call, int comm_size, const char* forced, const void* resolved,
                                   const char** why, const char** rule_source)
{
    try {
        std::unique_ptr<ResolvedHandle> own;
        auto* handle = static_cast<ResolvedHandle*>(const_cast<void*>(resolved));
        if (handle == nullptr) {
            own.reset(new ResolvedHandle{rules::resolved_for(comm_size, 0, 0), {}, {}, {}});
            handle = own.get();
        }
        const Collective c = static_cast<Collective>(call->coll);
        const bool is_forced = forced != nullptr && forced[0] != '\0';
        const MemoKey key{message_bytes(*call, comm_size),
                          reduces(c) ? call->op.elem_size : 0,
                          is_forced ? forced : nullptr,
                          is_forced ? handle->forced_algorithm(c, forced) : nullptr,
                          call->memory == LOOM_MEMORY_CUDA ? rules::MemoryKind::cuda : rules::MemoryKind::host,
                          segment_state(call->segment),
                          call->single_copy == LOOM_SINGLE_COPY_ON,
                          !reduces(c) || call->op.commutative != 0,
                          call->keep_from_open_mpi != 0,
                          call->form,
                          call->neighbours,
                          call->neighbours != nullptr && combinable(*call),
                          handle->learned ? handle->learned->generation() : 0};
        Memo& memo = handle->last[std::size_t(c)];
        if (!memo.valid || !(memo.key == key)) {
            const rules::Resolved& tables = *handle->tables;
            rules::CallFacts facts = facts_of(*call, comm_size, tables); // what the key holds
            if (is_forced) {
                facts.forced = forced;
                facts.forced_algorithm = key.forced_algorithm;
            }
            const rules::Decision d =
                rules::decide(facts, tables, nullptr, handle->learned ? &handle->learned->layer() : nullptr);
            memo = Memo{true,
                        key,
                        d.algorithm,
                        d.leaders,
                        d.segment_bytes,
                        d.buffer_bytes,
                        d.radix,
                        d.requests,
                        d.source,
                        d.why,
                        d.wants_segment,
                        {d.stand_in.algorithm, d.stand_in.leaders, d.stand_in.segment_bytes, d.stand_in.buffer_bytes,
                         d.stand_in.radix, d.stand_in.requests},
                        d.rule};
        }
        call->stand_in = memo.stand_in;
        call->wants_segment = memo.wants_segment ? 1 : 0;
        if (rule_source != nullptr && memo.source[0] != '\0') *rule_source = memo.source;
        if (memo.algorithm == nullptr) {
            if (why != nullptr) *why = memo.why;
            return nullptr;
        }
        if (memo.segment_bytes != 0) call->segment_bytes = memo.segment_bytes;
        if (memo.buffer_bytes != 0) call->buffer_bytes = memo.buffer_bytes;
        if (memo.radix != 0) call->radix = memo.radix;
        if (memo.requests != 0) call->max_requests = memo.requests;
        call->leaders = memo.leaders;
        call->chosen = memo.algorithm;
        return memo.algorithm->name.data();
    } catch (...) {
        if (why != nullptr) *why = "loom could not evaluate its rules (out of memory)";
        return nullptr;
    }
}

extern "C" int loom_learned_trial(void* resolved, loom_call_t* call, int comm_size, int handed_on,
                                  const loom_tune_settings_t* s, const char** algorithm, const char** why,
                                  const char** rule, void** cls)
{
    try {
        auto* handle = static_cast<ResolvedHandle*>(resolved);
        if (handle == nullptr) return LOOM_LEARNED_REMEMBER;
        const rules::CallFacts facts = facts_of(*call, comm_size, *handle->tables);
        if (!handle->learned)
            handle->learned = std::make_unique<rules::Learned>(
                comm_size, rules::TuneSettings{s->candidates, s->trials, s->max_classes, s->margin, double(s->floor_ns)});
        rules::TuneClass* k = handle->learned->find(facts);
        if (k == nullptr) {
            // The class's first call, just decided by the tables: candidate 0, with the options of
            // its rule (loom_choose's memo of this call).
            rules::Decision d;
            d.algorithm = handed_on ? nullptr : static_cast<const Algorithm*>(call->chosen);
            d.rule = handle->last[std::size_t(call->coll)].rule;
            k = handle->learned->open(facts, d);
            if (k == nullptr) return LOOM_LEARNED_REMEMBER; // no room: the tables decide the class
            if (!k->settled) *algorithm = loom_choose(call, comm_size, nullptr, resolved, why, rule);
        }
        if (k->settled) return LOOM_LEARNED_REMEMBER;
        // The trial's call only if its rule decided (a candidate that cannot serve this call of
        // the class was passed over, and the tables decided).
        if (*rule != k->rule->source.c_str()) return LOOM_LEARNED_UNSETTLED;
        *cls = k;
        return k->current();
    } catch (...) {
        return LOOM_LEARNED_UNSETTLED; // out of memory: as decided, and not remembered
    }
}

extern "C" int loom_learned_record(void* cls, int candidate, long long entry_ns, long long run_start_ns, long long ns,
                                   double noise, double* times)
{
    auto* k = static_cast<rules::TuneClass*>(cls);
    return k->owner->record(*k, candidate, entry_ns, run_start_ns, ns, noise, times);
}

extern "C" loom_coll_t loom_learned_coll(const void* cls)
{
    return static_cast<loom_coll_t>(static_cast<const rules::TuneClass*>(cls)->collective);
}

extern "C" void loom_learned_settle(void* cls, const double* agreed, const char* comm_name, char* line, size_t size)
{
    if (size > 0) line[0] = '\0';
    try {
        auto* k = static_cast<rules::TuneClass*>(cls);
        const std::string text = k->owner->settle(*k, agreed, comm_name != nullptr ? comm_name : "");
        if (size == 0) return;
        const std::size_t n = std::min(text.size(), size - 1);
        text.copy(line, n);
        line[n] = '\0';
    } catch (...) {}
}

extern "C" char* loom_learned_saved(int what)
{
    try {
        const std::string text = what == LOOM_LEARNED_SUMMARY ? rules::learned_summary_text() : rules::learned_rules_text();
        if (text.empty()) return nullptr;
        char* out = static_cast<char*>(std::malloc(text.size() + 1));
        if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
        return out;
    } catch (...) {
        return nullptr;
    }
}

extern "C" void loom_learned_forget(void) { rules::forget_learned(); }

extern "C" const char* loom_algorithm_name(const void* algorithm)
{
    return algorithm != nullptr ? static_cast<const Algorithm*>(algorithm)->name.data() : nullptr;
}

extern "C" void loom_choice_options(const loom_call_t* call, size_t segment_param, size_t buffer_param,
                                    size_t radix_param, size_t requests_param, char* buf, size_t size)
{
    if (size == 0) return;
    buf[0] = '\0';
    const auto* algo = static_cast<const Algorithm*>(call->chosen);
    if (algo == nullptr) return;
    try {
        const std::string text = rules::options_text(
            *algo, call->segment_bytes != 0 ? call->segment_bytes : segment_param,
            call->buffer_bytes != 0 ? call->buffer_bytes : buffer_param, call->radix != 0 ? call->radix : radix_param,
            static_cast<const Algorithm*>(call->leaders),
            call->max_requests != 0 && call->max_requests != SIZE_MAX ? call->max_requests : requests_param);
        const std::size_t n = std::min(text.size(), size - 1);
        text.copy(buf, n);
        buf[n] = '\0';
    } catch (...) {}
}
