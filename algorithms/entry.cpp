// The C entry points of loom's core (declared in loom_c_api.h). They adapt the glue's C
// callbacks to the C++ interfaces, pick an algorithm from the registry, and turn every C++
// exception into an error code: no exception ever crosses into Open MPI.
#include "loom_c_api.h"

#include "selection.hpp"
#include "reduce_kernels.hpp"
#include "registry.hpp"
#include "shm.hpp"
#include "staging.hpp"
#include "topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <memory>
#include <new>

namespace loom {
namespace {

// Transport over the glue's callbacks; a failed callback becomes a TransportError.
class CallbackTransport final : public Transport {
public:
    explicit CallbackTransport(const loom_transport_t& t) : t_(t) {}
    int rank() const override { return t_.rank; }
    int size() const override { return t_.size; }
    void post_send(int peer, const void* buf, std::size_t bytes) override
    {
        check(t_.isend(t_.ctx, peer, buf, bytes), "isend");
    }
    void post_recv(int peer, void* buf, std::size_t bytes) override
    {
        check(t_.irecv(t_.ctx, peer, buf, bytes), "irecv");
    }
    void wait_all() override { check(t_.wait_all(t_.ctx), "wait_all"); }
    void** shared_state() override { return t_.shared_state; }
    void progress() override
    {
        if (t_.progress != nullptr) t_.progress(t_.ctx);
    }
    const topo::Layout* layout() const override
    {
        return t_.topology != nullptr ? static_cast<const topo::Layout*>(t_.topology(t_.ctx)) : nullptr;
    }
    void** node_shared_state() override { return t_.node_shared_state; }

private:
    static void check(int rc, const char* what)
    {
        if (rc != 0) throw TransportError(rc, what);
    }
    const loom_transport_t& t_;
};

Reduction to_reduction(const loom_reduction_t& r)
{
    return Reduction{r.elem_size, r.commutative != 0, r.fn, r.ctx};
}

template <class F>
int guarded(F&& body)
{
    try {
        body();
        return LOOM_SUCCESS;
    } catch (const TransportError& e) {
        return e.code();
    } catch (const std::bad_alloc&) {
        return LOOM_ERR_NO_MEMORY;
    } catch (...) {
        return LOOM_ERR_INTERNAL;
    }
}

} // namespace
} // namespace loom

using namespace loom;

extern "C" void loom_shm_release(void* state) { shm_release(state); }
extern "C" void loom_shm_pool_limit(std::size_t segments) { SegmentPool::instance().set_limit(segments); }
extern "C" void loom_shm_pool_drain(void) { SegmentPool::instance().drain(); }

extern "C" int loom_shm_setup(const loom_transport_t* transport)
{
    int ready = 0;
    const int rc = guarded([&] {
        CallbackTransport net(*transport);
        ready = shm_setup(net) ? 1 : 0;
    });
    return rc != LOOM_SUCCESS ? rc : ready;
}

extern "C" int loom_find_kernel(loom_op_t op, loom_type_t type, loom_reduction_t* out)
{
    auto k = find_kernel(op, type);
    if (!k) return 0;
    *out = loom_reduction_t{k->elem_size, k->commutative ? 1 : 0, k->fn, k->ctx};
    return 1;
}

namespace loom {
namespace {

Collective collective_of(const loom_call_t& call) { return static_cast<Collective>(call.coll); }

std::size_t sum(const std::size_t* counts, int n)
{
    std::size_t total = 0;
    for (int i = 0; i < n; ++i) total += counts[i];
    return total;
}

// The one definition of "message size" per collective, used for selection (and, with the
// rule table, by rules, tools and verbose output):
//   allreduce, reduce, bcast    the vector: count x element size
//   reduce_scatter(_block)      the whole input vector: sum(counts) x element size
//   allgather(v)                the whole gathered vector: sum(counts) bytes
//   alltoall                    one block: the bytes each rank sends to each peer
//   barrier                     0
std::size_t message_bytes(const loom_call_t& call, int comm_size)
{
    switch (collective_of(call)) {
    case Collective::allreduce:
    case Collective::reduce: return call.count * call.op.elem_size;
    case Collective::reduce_scatter:
    case Collective::reduce_scatter_block: return sum(call.counts, comm_size) * call.op.elem_size;
    case Collective::allgather:
    case Collective::allgatherv: return sum(call.counts, comm_size);
    case Collective::bcast:
    case Collective::alltoall: return call.count;
    case Collective::barrier: return 0;
    }
    return 0;
}

bool reduces(Collective c)
{
    return c == Collective::allreduce || c == Collective::reduce || c == Collective::reduce_scatter ||
           c == Collective::reduce_scatter_block;
}

// Calls the algorithm with the argument record of its collective.
struct Dispatch {
    Transport& net;
    MemoryOps& mem;
    const loom_call_t& call;

    std::span<const std::size_t> counts() const { return {call.counts, std::size_t(net.size())}; }
    const Algorithm* leaders() const { return static_cast<const Algorithm*>(call.leaders); }
    void operator()(AllreduceFn f) const
    {
        f(net, mem, AllreduceArgs{call.sbuf, call.rbuf, call.count, to_reduction(call.op), call.segment_bytes,
                                  call.buffer_bytes, leaders()});
    }
    void operator()(ReduceScatterFn f) const
    {
        f(net, mem, ReduceScatterArgs{call.sbuf, call.rbuf, counts(), to_reduction(call.op), call.buffer_bytes});
    }
    void operator()(AllgatherFn f) const
    {
        f(net, mem, AllgatherArgs{call.sbuf, call.rbuf, counts(), call.buffer_bytes, leaders()});
    }
    void operator()(BcastFn f) const
    {
        f(net, mem, BcastArgs{call.rbuf, call.count, call.root, call.segment_bytes, leaders()});
    }
    void operator()(ReduceFn f) const
    {
        f(net, mem, ReduceArgs{call.sbuf, call.rbuf, call.count, to_reduction(call.op), call.root, leaders()});
    }
    void operator()(BarrierFn f) const { f(net, mem, BarrierArgs{}); }
    void operator()(AlltoallFn f) const { f(net, mem, AlltoallArgs{call.sbuf, call.rbuf, call.count}); }
};

} // namespace
} // namespace loom

extern "C" std::size_t loom_message_bytes(const loom_call_t* call, int comm_size)
{
    return message_bytes(*call, comm_size);
}

extern "C" const char* loom_coll_name(loom_coll_t coll)
{
    return to_string(static_cast<Collective>(coll)).data();
}

extern "C" int loom_algorithm_exists(loom_coll_t coll, const char* name)
{
    return name != nullptr && find_algorithm(static_cast<Collective>(coll), name) != nullptr;
}

extern "C" void loom_algorithm_names(loom_coll_t coll, char* buf, std::size_t size)
{
    std::string names;
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != static_cast<Collective>(coll)) continue;
        if (!names.empty()) names += ", ";
        names += a.name;
    }
    if (size == 0) return;
    const std::size_t n = std::min(names.size(), size - 1);
    names.copy(buf, n);
    buf[n] = '\0';
}

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
const rules::Resolved* tables_of(const void* resolved)
{
    return resolved != nullptr ? static_cast<const ResolvedHandle*>(resolved)->get() : nullptr;
}
} // namespace

namespace {
// The flat algorithm the node leaders of a hierarchical call run: the rule's leaders= option,
// else the rule table's choice for a communicator of one rank per node (a fallback rule is
// passed over there: the leaders' phase cannot be handed to Open MPI), else nullptr (the
// algorithm's own default). All of it depends only on what every rank shares.
const Algorithm* leaders_for(Collective c, const rules::Resolved* table, const rules::Rule* rule, std::size_t bytes,
                             bool commutative)
{
    if (table == nullptr || table->nodes < 2) return nullptr;
    auto usable = [&](const Algorithm* a) {
        return a != nullptr && !a->needs.topology &&
               !why_not(*a, CallShape{table->nodes, bytes, commutative, table->nodes, 1});
    };
    if (rule != nullptr && !rule->leaders.empty()) {
        const Algorithm* named = find_algorithm(c, rule->leaders);
        if (usable(named)) return named;
    }
    if (table->leaders) {
        const rules::Candidate* pick = rules::choose_candidate(
            *table->leaders,
            rules::Call{c, table->nodes, bytes, table->nodes, 1, rules::MemoryKind::host, commutative, false});
        if (pick != nullptr && usable(pick->algorithm)) return pick->algorithm;
    }
    return nullptr;
}

int resolved_nodes(const void* resolved)
{
    return resolved != nullptr ? tables_of(resolved)->nodes : 0;
}
int resolved_ranks_per_node(const void* resolved)
{
    return resolved != nullptr ? tables_of(resolved)->ranks_per_node : 0;
}
// What each leader (or lane) of a hierarchical call moves between nodes: the whole message,
// or for hierarchical_rs one of ranks-per-node slices.
std::size_t leaders_bytes(const Algorithm& algo, const rules::Resolved* table, std::size_t bytes)
{
    return algo.needs.equal_nodes && table != nullptr && table->ranks_per_node > 0 ? bytes / std::size_t(table->ranks_per_node)
                                                                                   : bytes;
}
} // namespace

extern "C" const char* loom_choose(loom_call_t* call, int comm_size, const char* forced, const void* resolved,
                                   const char** why, const char** rule_source)
{
    const Collective c = collective_of(*call);
    const bool commutative = !reduces(c) || call->op.commutative != 0;
    const std::size_t bytes = message_bytes(*call, comm_size);
    const char* reason = "no rule chooses an algorithm that can serve this call";
    bool by_rules = forced == nullptr || forced[0] == '\0';
    if (!by_rules) {
        // A forced algorithm is used or the call is declined; loom never silently swaps in
        // another algorithm the user did not ask for - except where declining would give a
        // wrong answer (Open MPI's saturating 8- and 16-bit sums): then the rules choose, as
        // they do for such a call. The last lookup is remembered (the parameter's string
        // changes only between collectives, through MPI_T).
        thread_local struct {
            const char* text;
            const Algorithm* algorithm;
        } last[kCollectiveCount] = {};
        auto& memo = last[std::size_t(c)];
        const Algorithm* algo = memo.text == forced && memo.algorithm != nullptr &&
                                        std::strcmp(forced, memo.algorithm->name.data()) == 0
                                    ? memo.algorithm
                                    : find_algorithm(c, forced);
        memo = {forced, algo};
        const CallShape shape{comm_size, bytes, commutative, resolved_nodes(resolved), resolved_ranks_per_node(resolved),
                              call->segment == LOOM_SEGMENT_READY};
        if (algo == nullptr) reason = "the forced algorithm does not exist";
        else if (auto no = why_not(*algo, shape)) {
            reason = no->data();
            // Only the segment is missing: the glue makes it now, for a forced algorithm.
            if (call->segment == LOOM_SEGMENT_NOT_YET && *no == kNoSegment) call->wants_segment = 1;
        }
        else {
            if (rule_source != nullptr) *rule_source = "forced";
            if (algo->needs.topology)
                call->leaders = leaders_for(c, tables_of(resolved), nullptr,
                                            leaders_bytes(*algo, tables_of(resolved), bytes),
                                            commutative);
            call->chosen = algo;
            return algo->name.data();
        }
        by_rules = call->keep_from_open_mpi != 0;
    }
    if (by_rules) {
        try {
            std::shared_ptr<const rules::Resolved> own;
            const auto* table = tables_of(resolved);
            if (table == nullptr) table = (own = rules::resolved_for(comm_size, 0, 0)).get();
            rules::Call what{c, comm_size, bytes, table->nodes, table->ranks_per_node,
                             call->memory == LOOM_MEMORY_CUDA ? rules::MemoryKind::cuda : rules::MemoryKind::host,
                             commutative, call->keep_from_open_mpi == 0, true};
            const rules::Candidate* chosen = rules::choose_candidate(*table, what);
            if (call->segment != LOOM_SEGMENT_READY && chosen != nullptr && chosen->algorithm != nullptr &&
                chosen->algorithm->needs.segment) {
                // The rules want a segment the communicator does not have: say so, and take
                // the choice without one.
                call->wants_segment = call->segment == LOOM_SEGMENT_NOT_YET;
                what.segment = false;
                chosen = rules::choose_candidate(*table, what);
            }
            if (chosen != nullptr && chosen->algorithm == nullptr) {
                // A fallback rule: the table says Open MPI's next component does this call
                // better. Every rank reaches the same rule, so every rank declines alike.
                const rules::Rule& rule = *chosen->rule;
                if (rule_source != nullptr) *rule_source = rule.source.c_str();
                // The reason was built by parse(); a rule made by hand has none.
                reason = rule.fallback_reason.empty() ? "a fallback rule hands it to the next component"
                                                      : rule.fallback_reason.c_str();
            } else if (chosen != nullptr) {
                const rules::Rule& rule = *chosen->rule;
                if (rule.segment_bytes != 0) call->segment_bytes = rule.segment_bytes;
                if (rule.buffer_bytes != 0) call->buffer_bytes = rule.buffer_bytes;
                if (rule_source != nullptr) *rule_source = rule.source.c_str();
                if (chosen->algorithm->needs.topology)
                    call->leaders = leaders_for(c, table, &rule, leaders_bytes(*chosen->algorithm, table, bytes), commutative);
                call->chosen = chosen->algorithm;
                return chosen->algorithm->name.data();
            }
        } catch (...) {
            reason = "loom could not evaluate its rules (out of memory)";
        }
    }
    if (why != nullptr) *why = reason;
    return nullptr;
}

void loom::run_call(const Algorithm& algorithm, Transport& net, MemoryOps& mem, const loom_call_t& call)
{
    std::visit(Dispatch{net, mem, call}, algorithm.run);
}

extern "C" int loom_run(const char* algorithm, const loom_transport_t* transport, const loom_call_t* call)
{
    return guarded([&] {
        // loom_choose leaves the algorithm itself in the call: no lookup per call.
        const Collective c = collective_of(*call);
        const auto* algo = static_cast<const Algorithm*>(call->chosen);
        if (algo == nullptr || algo->name.data() != algorithm || algo->collective != c) algo = find_algorithm(c, algorithm);
        if (algo == nullptr) throw std::invalid_argument("unknown algorithm");
        CallbackTransport net(*transport);
        if (call->copier != nullptr) {
            // Buffers the network cannot read (device memory): staged through host buffers.
            run_staged(*algo, net, *static_cast<AsyncCopier*>(call->copier), *call);
            return;
        }
        HostMemory mem;
        run_call(*algo, net, mem, *call);
    });
}
