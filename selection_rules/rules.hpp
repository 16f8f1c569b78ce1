// loom's rule tables: the model, the parser, linting and matching. MPI-free.
//
// A rule file is plain text, one rule per line (the format is documented in
// selection_rules/RULES.md):
//
//   loom-rules 1
//   # collective  ranks   bytes      algorithm           [key=value ...]
//   allreduce     2-8     0-4K       recursive_doubling
//   allreduce     *       256K-*     ring_pipelined      segment=128K
//   allgather     9-*     *          pat                 buffer=512K commutative=yes
//
// Ranges are inclusive at both ends: `N`, `N-M`, `N-*` (open end) or `*`. Sizes take K, M, G
// suffixes (powers of 1024). The first rule that matches a call, and whose algorithm can
// serve it, wins; user rules are consulted before the built-in defaults. The reserved name
// `fallback` (kFallback) in place of an algorithm hands the calls the rule matches to the next
// component, as if no rule matched: how a measured table says Open MPI's own choice is faster.
#pragma once

#include "registry.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::rules {

// An inclusive range of unsigned values; `*` is [0, max].
struct Range {
    std::uint64_t lo = 0;
    std::uint64_t hi = UINT64_MAX;
    bool contains(std::uint64_t v) const { return lo <= v && v <= hi; }
    bool covers(const Range& other) const { return lo <= other.lo && other.hi <= hi; }
    bool is_all() const { return lo == 0 && hi == UINT64_MAX; }
};

enum class MemoryKind { host, cuda };

// The process topology of a neighbourhood collective's communicator (MPI_Cart_create,
// MPI_Graph_create, MPI_Dist_graph_create[_adjacent]); every other call: none.
enum class TopologyShape { none, cartesian, graph, dist_graph };
// "none", "cartesian", "graph", "dist_graph".
std::string_view to_string(TopologyShape t);

// How a collective was called: MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init. A rule
// names the form with the collective: "allreduce" matches every form, "iallreduce" only
// non-blocking calls, "allreduce_init" only persistent requests.
enum class Form { blocking, nonblocking, persistent };
// "allreduce", "iallreduce", "allreduce_init".
std::string form_name(Collective c, std::optional<Form> form);

// Which choice a rule is asked for: a call's own algorithm, or the flat algorithm the node
// leaders (or lanes) of a hierarchical call run between nodes, which the table chooses as for a
// communicator of one rank per node (decide.cpp, choose_leaders). A rule with phase= matches one
// of them only; without it, both.
enum class Phase { call, leaders };

// The algorithm name, valid for every collective, of a rule that hands its calls to Open MPI's
// next component (normally tuned) instead of running one of loom's algorithms.
constexpr std::string_view kFallback = "fallback";

struct Rule {
    Collective collective{};
    Range ranks;
    Range bytes;
    std::string algorithm; // a registered algorithm of the collective, or kFallback
    // Optional match keys; absent matches everything.
    std::optional<Range> nodes;
    std::optional<Range> ranks_per_node;
    std::optional<MemoryKind> memory;
    std::optional<bool> commutative;
    // kept=yes: only calls loom keeps from Open MPI (Call::fallback_allowed false: Open MPI's
    // component gets them wrong), which pass fallback rules over; kept=no: only the others.
    std::optional<bool> kept;
    std::optional<Form> form; // from the collective's name; absent: every form
    // phase=call: only a call's own choice; phase=leaders: only a hierarchical call's leaders'
    // algorithm (e.g. a pick measured for one rank per node as a whole call only).
    std::optional<Phase> phase;
    // The major version of the Open MPI the plugin runs in (4, 5): Open MPI's own choices,
    // which fallback rules hand calls to, differ between versions.
    std::optional<Range> ompi;
    // The neighbourhood's shape, from what every rank knows alike: its kind; its degree (the
    // largest of any rank: a Cartesian grid's 2 ndims, a graph's from the whole graph, which
    // every rank holds - a distributed graph has none, since each rank knows its own
    // neighbours only, so a degree key never matches it); a Cartesian grid's dimensions.
    std::optional<TopologyShape> topology;
    std::optional<Range> degree;
    std::optional<Range> ndims;
    // Options handed to the algorithm (0: not set, the MCA parameter's value applies).
    std::uint64_t segment_bytes = 0;
    std::uint64_t buffer_bytes = 0;
    std::uint64_t radix = 0;
    std::uint64_t requests = 0; // linear alltoallv(w): peers in flight each way
    // For a hierarchical algorithm: the flat algorithm its node leaders run ("": the rule
    // table's choice for one rank per node).
    std::string leaders;
    // Where it came from, for messages and verbose output: "FILE:LINE".
    std::string source;
    int line = 0;
    // For a fallback rule, why loom declines its calls ("rule FILE:LINE hands it to the next
    // component (fallback)"), written by parse(): the component prints it per call, so it is
    // built once and lives as long as the rule.
    std::string fallback_reason;

    bool is_fallback() const { return algorithm == kFallback; }
};

struct Diagnostic {
    enum class Severity { error, warning };
    Severity severity;
    std::string file;
    int line;   // 1-based; 0 for the whole file
    int column; // 1-based; 0 when not about one place
    std::string message;

    // "FILE:LINE:COLUMN: error: MESSAGE", as compilers print it.
    std::string to_string() const;
};

struct ParseResult {
    std::vector<Rule> rules;
    std::vector<Diagnostic> diagnostics;
    bool ok() const;
};

// Parses a rule file's text. `file` names it in diagnostics and rule sources. Never throws on
// bad input; limits: lines of at most 4096 bytes, at most 100000 rules.
ParseResult parse(std::string_view text, std::string_view file);

// Reads and parses a rule file. A file that cannot be read, or is larger than 64 MiB, is
// one error diagnostic naming it.
ParseResult parse_file(const std::string& path);

// Rule-file text, as the parser reads it back: a size ("1025", "4K": K, M, G, T where exact), a
// range ("*", "N", "N-M", "N-*"; sizes with suffixes when `sizes`), and a rule's fields -
// collective (in its form), ranks, bytes, algorithm, then its keys as one field, if any.
std::string size_text(std::uint64_t bytes);
std::string range_text(const Range& range, bool sizes);
std::vector<std::string> rule_fields(const Rule& rule);

// The built-in default table (selection_rules/default.rules, embedded at build time), and
// its parsed rules (parsed once; sources read "default:LINE").
std::string_view default_rules_text();
const std::vector<Rule>& default_rules();

// Warnings about a valid table: rules that can never match (shadowed by one earlier rule),
// and message sizes no rule covers for a collective the table mentions.
std::vector<Diagnostic> lint(const std::vector<Rule>& rules, std::string_view file);

// The facts a rule is matched against. Everything here is the same on every rank.
struct Call {
    Collective collective{};
    int ranks = 0;
    std::uint64_t bytes = 0;
    int nodes = 0;          // 0: unknown (rules with a nodes key do not match)
    int ranks_per_node = 0; // 0: unknown
    MemoryKind memory = MemoryKind::host;
    bool commutative = true;
    Form form = Form::blocking;
    // false: a fallback rule is passed over, because Open MPI's own kernel gets this
    // reduction wrong (4.1's AVX SUM saturates 8- and 16-bit integers; loom's kernels wrap,
    // as MPI requires), so handing it on would change the answer.
    bool fallback_allowed = true;
    // false: algorithms that need a shared-memory segment are passed over (the communicator
    // has none, yet or at all).
    bool segment = true;
    int ompi_major = 0; // the Open MPI's major version; 0: unknown (rules with an ompi key do not match)
    TopologyShape topology = TopologyShape::none;
    int degree = 0; // 0: not known alike on every rank (rules with a degree key do not match)
    int ndims = 0;  // cartesian only (rules with an ndims key match only a Cartesian grid)
    Phase phase = Phase::call; // leaders: the leaders' algorithm of a hierarchical call
};

// Why a fallback rule is passed over when the call does not allow it.
constexpr std::string_view kFallbackRefused =
    "Open MPI's own component gets this call wrong (a SUM on 8- or 16-bit integers saturates in 4.1's AVX op; "
    "libnbc swaps a periodic Cartesian dimension's blocks where it has 1 or 2 ranks)";

bool matches(const Rule& rule, const Call& call);
// The topology keys alone (matches() reads them too; decide() matches the rest of a call itself).
bool topology_matches(const Rule& rule, TopologyShape topology, int degree, int ndims);

// One rule considered by decide() (decide.hpp), for `loom-rules explain`.
struct Verdict {
    const Rule* rule;
    std::string outcome; // "chosen", or why it was passed over
};

// Nearest valid name (edit distance), for "did you mean" messages; empty if none is close.
std::string nearest(std::string_view word, const std::vector<std::string_view>& candidates);

} // namespace loom::rules
