// Rule-based selection for one communicator: the user's rules (coll_loom_rules) and the
// built-in defaults, narrowed once per communicator to the rules whose communicator-level
// keys (ranks, nodes, ranks per node) match it, so a call only checks message size, op and
// memory kind against a short list.
#pragma once

#include "rules.hpp"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace loom::rules {

// The process's rule files, in the order a call consults them: the user's (coll_loom_rules),
// then the site's (coll_loom_site_rules, SYSCONFDIR/loom/site.rules), then the built-in
// defaults. Each is loaded once, before any communicator exists, and read-only after; loading
// returns the file's diagnostics (errors mean that file's rules are not used, the other layers
// still are). An empty path: no rules in that layer.
std::vector<Diagnostic> load_user_rules(const std::string& path);
std::vector<Diagnostic> load_site_rules(const std::string& path);
const std::vector<Rule>& user_rules();
const std::vector<Rule>& site_rules();
// The layers above the defaults, in order: {&user_rules(), &site_rules()}.
std::vector<const std::vector<Rule>*> file_layers();

// The major version of the Open MPI the process runs in (the glue's, given once with the rule
// file; loom-rules explain's --ompi), which rules with an `ompi=` key match; 0 (the default):
// unknown, and such rules match nothing. Empties the tables' cache like load_user_rules.
void set_open_mpi_major(int major);
int open_mpi_major();

// A rule that applies to the communicator, with its algorithm looked up once.
struct Candidate {
    const Rule* rule;
    const Algorithm* algorithm; // nullptr for a fallback rule: the next component serves the call
};

// A layer's rules that apply to one communicator, per collective, in order.
using Layer = std::array<std::vector<Candidate>, kCollectiveCount>;

struct Resolved {
    int ranks = 0;
    int nodes = 0;                                                   // 0: unknown
    int ranks_per_node = 0;                                          // 0: unknown (the most ranks any node has)
    int ompi_major = 0;                                              // 0: unknown
    Layer candidates; // user's, site's, then defaults
    // The rules for the communicator of one rank per node (a leader each) that hierarchical
    // algorithms run their inter-node phase on; null on one node or one rank per node.
    std::shared_ptr<const Resolved> leaders;
};

// Narrows `tables` (in order) to the rules whose communicator keys (ranks, nodes, ranks per
// node) admit a communicator of this shape, whose ompi key admits `ompi_major` and whose
// algorithm exists (or that are fallback rules). resolve() does it for the process's user and
// site rules and the defaults with open_mpi_major(); tests and the fuzzer for tables of their own.
// No leaders' table.
Resolved narrow(const std::vector<const std::vector<Rule>*>& tables, int ranks, int nodes, int ranks_per_node,
                int ompi_major);

// Narrows the tables for a communicator of `ranks` ranks on `nodes` nodes with at most
// `ranks_per_node` on one (0: unknown).
Resolved resolve(int ranks, int nodes, int ranks_per_node);
// Nodes and the most ranks on one, from every rank's host name (one per rank, or empty:
// unknown, 0). A rank whose host Open MPI cannot tell has a name of its own from the glue
// (coll_loom_comm.c), so it counts as a node of its own.
struct NodeShape {
    int nodes = 0;
    int ranks_per_node = 0;
};
NodeShape node_shape(const std::vector<std::string>& hostnames);
// resolve() for the shape of those host names.
Resolved resolve(int ranks, const std::vector<std::string>& hostnames);

// resolve(ranks, nodes, ranks_per_node), made once per process for each shape: every new
// communicator of a shape seen before shares its tables instead of narrowing them again
// (a scan of every rule, which made creating a communicator cost tens of microseconds).
// Loading a layer empties the cache; tables already handed out stay valid.
std::shared_ptr<const Resolved> resolved_for(int ranks, int nodes, int ranks_per_node);

// What serves a call on such a communicator: decide() in decide.hpp.

} // namespace loom::rules
