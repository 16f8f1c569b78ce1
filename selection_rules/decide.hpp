// The one chooser: what serves a call. Production (through loom_choose, c_api.cpp),
// `loom-rules explain`, loom-sim's rule emission and the tests all call decide(); nothing else
// in loom picks an algorithm. It is a pure function of what every rank of the communicator
// shares (sizes, counts, op, the communicator's shape, the tables, the forced parameter), so
// every rank decides alike.
//
// Order of decision:
//   1. A forced algorithm (coll_loom_<collective>_algorithm) serves the call if it can; if it
//      cannot, the call is handed on with the reason - unless handing on would change the
//      answer (keep_from_open_mpi: Open MPI 4.1's saturating 8/16-bit SUM), then the rules
//      decide as in 2.
//   2. The rules (online tuning's learned layer where there is one, then the user's table, the
//      site's and the built-in one, narrowed to the communicator): the first rule that matches
//      the call and whose algorithm can serve it, or that is a fallback rule (hand on; passed
//      over when keep_from_open_mpi). The learned layer (learned.hpp) is one communicator's:
//      a rule per tuned class, naming each candidate in turn while its trial runs, then the
//      winner; its rules match blocking calls on host memory only, the calls it timed.
//   3. An algorithm that needs a shared segment the communicator does not have is passed over
//      (the next rule applies); if it would have been chosen and the segment can still be
//      made, wants_segment says so: the glue may make it and ask again.
//   4. A hierarchical algorithm gets its leaders' flat algorithm here: the rule's leaders=,
//      else the rule table's choice for one rank per node, else the registry's default.
//   5. With the segment pending (a non-blocking call started setting it up: the calls decided
//      now run after the set-up, which may fail), the call is decided as with the segment
//      ready; if that chooses an algorithm that needs the segment, the decision without a
//      segment that never hands on (keep_from_open_mpi) stands in for it (Decision::stand_in:
//      a handed-on call cannot come back to loom once the set-up's outcome is known); if no
//      rule names one, the registry's first algorithm for the collective that can serve the
//      call without a segment (and reads no leaders) stands in (source kRegistryStandIn); only
//      if there is none is the call decided as without a segment.
#pragma once

#include "selection.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace loom::rules {

enum class SegmentState { ready, not_yet, none, pending };

// Decision::stand_in.source when no rule named the stand-in and the registry's first algorithm
// that can serve the call without a segment stands in (5. above).
inline constexpr const char* kRegistryStandIn = "registry";

// A call as the chooser sees it.
struct CallFacts {
    Collective collective{};
    std::uint64_t bytes = 0; // loom's message size (loom::message_bytes)
    int ranks = 0;
    int nodes = 0;          // 0: unknown
    int ranks_per_node = 0; // 0: unknown
    int ompi_major = 0;     // the Open MPI's major version (0: unknown); the tables are narrowed to it
    MemoryKind memory = MemoryKind::host;
    bool commutative = true;         // the op's (true for collectives that do not reduce)
    Form form = Form::blocking;      // how it was called (rules may name a form: iallreduce)
    std::size_t element_bytes = 0;   // reductions: bytes of one element of the op
    // The segment of a pipelined algorithm no rule gives segment= (coll_loom_segment_size; 0:
    // its default, LOOM_SEGMENT_SIZE_DEFAULT): a hierarchical_seg call's leaders run on segments
    // of it, so their algorithm is chosen for that size.
    std::uint64_t segment_size = 0;
    bool keep_from_open_mpi = false; // handing on would change the answer
    TopologyShape topology = TopologyShape::none; // the neighbourhood collectives' (rules.hpp, Call)
    int degree = 0;                               // 0: not known alike on every rank
    int ndims = 0;                                // cartesian
    Phase phase = Phase::call; // leaders: choosing a hierarchical call's leaders' algorithm
    bool stencil = false; // combining may serve: an agreed stencil of one block size, blocks equal (registry.hpp, combinable)
    SegmentState segment = SegmentState::ready;
    // The segment's ranks may read each other's memory (probed with the segment, and allowed
    // by coll_loom_single_copy); meaningless until the segment is ready.
    bool single_copy = true;
    std::string_view forced;                     // the forced parameter; empty: the rules choose
    const Algorithm* forced_algorithm = nullptr; // find_algorithm(collective, forced) if known
};

// The facts a rule is matched against (rules.hpp) as decide() takes them, and back (the
// call-level fields: forced, element size and segment state do not exist in a Call).
CallFacts facts_of(const Call& call);
Call call_of(const CallFacts& facts);

struct Decision {
    const Algorithm* algorithm = nullptr; // nullptr: hand the call on (see why)
    const Algorithm* leaders = nullptr;   // algorithms that read leaders: what the leaders run
    // The rule's options (0: the MCA parameter's value applies).
    std::uint64_t segment_bytes = 0;
    std::uint64_t buffer_bytes = 0;
    std::uint64_t radix = 0;
    std::uint64_t requests = 0;
    const Rule* rule = nullptr; // the rule that decided (chosen or fallback); nullptr if forced
    const char* source = "";    // "forced", the rule's "FILE:LINE", or "" when nothing decided
    const char* why = "";       // when handed on
    // Where the leaders' algorithm came from: "leaders=" (the rule), "rules for one rank per
    // node: FILE:LINE", or "default".
    std::string_view leaders_source;
    std::uint64_t leaders_bytes = 0; // the bytes the leaders' algorithm was chosen for (one segment for hierarchical_seg)
    bool wants_segment = false;
    // Segment pending (5.): what serves instead if the set-up fails, with its rule's options
    // and leaders, and where it came from; algorithm nullptr otherwise.
    struct StandIn {
        const Algorithm* algorithm = nullptr;
        const Algorithm* leaders = nullptr;
        std::uint64_t segment_bytes = 0;
        std::uint64_t buffer_bytes = 0;
        std::uint64_t radix = 0;
        std::uint64_t requests = 0;
        const char* source = "";
    } stand_in;
};

// The options `algorithm` runs with, as verbose output and explain print them: the ones it
// reads (registry), each the rule's value or else the parameter's, e.g.
// "segment=262144, leaders=recursive_doubling"; "none" if it reads none.
std::string options_text(const Algorithm& algorithm, std::uint64_t segment_bytes, std::uint64_t buffer_bytes, std::uint64_t radix,
                         const Algorithm* leaders, std::uint64_t requests = 0);

// Decides for `call` with `tables` (resolved for the call's communicator), after `learned`
// (online tuning's layer of that communicator, or a saved one; null: none). If `trace` is not
// null, every rule considered is appended with its verdict (rules.hpp; for explain).
Decision decide(const CallFacts& call, const Resolved& tables, std::vector<Verdict>* trace = nullptr,
                const Layer* learned = nullptr);

// What an algorithm's needs are checked against for call (why_not): its shape, with or without
// the communicator's segment. decide() checks every candidate with it; so does online tuning's
// list of eligible algorithms (learned.hpp, eligible_algorithms).
CallShape shape_of(const CallFacts& call, bool segment);

} // namespace loom::rules
