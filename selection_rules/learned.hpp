// Online tuning's rule layer (coll_loom_autotune; the glue's half, which times calls, makes the
// ranks agree and saves the file, is coll_component/coll_loom_autotune.c). What one communicator
// learns from the application's own calls is rules, in a layer that rules::decide reads before
// the user's, the site's and the built-in tables (decide.hpp). MPI-free.
//
// A class is (collective, commutative op or not, size class), the size class being the power of
// two at or above the message size: a class's calls differ by at most 2x. The layer holds one
// rule per class that has something to learn, matching the class's calls - ranks: the
// communicator's; bytes: the class's range; commutative= for reductions; memory=host and
// blocking calls only, the calls online tuning times:
//   - while the class's trial runs, the rule names each candidate in turn, `run` calls in a row
//     (its source reads "learned:N (a trial)"); the calls it decides are the trial's, timed by
//     the glue and recorded here;
//   - once the ranks agreed on the times (the slowest rank's medians), it names the winner
//     (source "learned:N"), for every later call of the class.
// The candidates: the tables' choice for the class's first call (candidate 0, with its rule's
// options), Open MPI's own (fallback; not where handing on would change the answer), then the
// algorithms that can serve the call (eligible_algorithms), up to TuneSettings::candidates.
// A class of one candidate has nothing to learn and gets no rule.
//
// The layer changes only between calls (open, record, settle): decide() stays a function of
// the call, the tables and the layer, and generation() tells a memo of decisions when to forget
// them. Collectives on one communicator never run at once (MPI), so the layer takes no lock; a
// class stays where it is while a trial call holds it and a call nested in it (Open MPI's own,
// handed on) opens another.
//
// What a process learned is also kept for the file coll_loom_autotune_save (keep_learned):
// one rule per (collective, communicator size, class, op), the first settled, in rule-file
// syntax, so that the file read back (coll_loom_rules, or `loom-rules explain --learned FILE`)
// decides the same blocking calls on the same communicators as the layer did.
#pragma once

#include "decide.hpp"

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom::rules {

constexpr int kMaxTuneCandidates = 12;
constexpr int kMaxTuneTrials = 16;

// coll_loom_autotune_*: candidates per class (1..kMaxTuneCandidates), timed calls per candidate
// (1..kMaxTuneTrials; 4 times as many up to 64 KiB, in two passes), classes per communicator,
// and how much faster than candidate 0 a winner must be (percent; twice as fast where candidate
// 0 took less than floor_ns a call).
struct TuneSettings {
    int candidates = 10;
    int trials = 4;
    int max_classes = 64;
    int margin = 10;
    double floor_ns = 2000;
};

// 0 for 0 bytes; c >= 1 for (2^(c-2), 2^(c-1)] bytes (1: 1 byte, 2: 2, 3: 3-4, 4: 5-8, ...).
int size_class(std::uint64_t bytes);
Range class_bytes(int size_class);

// The flat algorithms (no leaders to choose) of the call's collective that can serve it, with
// the segment as the call has it, in registry order.
std::vector<const Algorithm*> eligible_algorithms(const CallFacts& call);

class Learned;

struct TuneClass {
    Collective collective{};
    int size_class = 0;
    bool commutative = true;
    bool settled = false;
    std::vector<const Algorithm*> candidates; // nullptr: Open MPI's own (fallback)
    // trials = passes x run: the candidates take turns, a run of calls each.
    int trials = 0, run = 0, passes = 0, calls = 0, winner = 0;
    bool by_interval = false; // the winner was chosen by intervals (else durations)
    long long samples[kMaxTuneCandidates][kMaxTuneTrials]{};   // each trial call's duration, ns
    long long intervals[kMaxTuneCandidates][kMaxTuneTrials]{}; // run start to the next entry, in a run
    long long last_run_start = 0;
    // The slowest rank's medians, ns: [0, n) durations, [n, 2n) intervals.
    double agreed[2 * kMaxTuneCandidates]{};
    Rule first;           // candidate 0's rule in the tables (its options, leaders=), if one chose it
    Rule* rule = nullptr; // the class's rule in the layer: the trial's, then the learned one
    std::size_t slot = 0; // its place in the layer's list for the collective
    Learned* owner = nullptr;

    int ncand() const { return int(candidates.size()); }
    // The candidate the class's next trial call runs.
    int current() const { return calls % (ncand() * run) / run; }
};

class Learned {
public:
    Learned(int ranks, const TuneSettings& settings) : ranks_(ranks), settings_(settings) {}
    Learned(const Learned&) = delete;
    Learned& operator=(const Learned&) = delete;

    const Layer& layer() const { return layer_; }
    std::uint64_t generation() const { return generation_; }
    int ranks() const { return ranks_; }

    // The class of `call`, or nullptr if none was opened.
    TuneClass* find(const CallFacts& call);
    // Opens the class of `call` from the tables' decision `d` for it (d.algorithm null: handed
    // on). nullptr if the layer has settings.max_classes classes already (the tables decide).
    TuneClass* open(const CallFacts& call, const Decision& d);
    // Candidate `candidate`'s trial call of k: when it entered the pipeline, when its run
    // started, how long it took (ns), times `noise` (1: as measured). When it was the trial's
    // last call, returns the number of times for the ranks to agree on (2 x candidates:
    // durations, then intervals) and writes them to `times`; else 0.
    int record(TuneClass& k, int candidate, long long entry_ns, long long run_start_ns, long long ns, double noise,
               double* times);
    // Settles k on the times every rank agreed on (nullptr: they could not agree, candidate 0
    // stays): its rule names the winner from now on, and the process keeps it for the saved file
    // (keep_learned; comm_name for the summary). Returns the settled line for verbose output:
    // "allreduce 5-8 bytes: ring (by intervals), rule learned:3".
    std::string settle(TuneClass& k, const double* agreed, std::string_view comm_name);

private:
    void point(TuneClass& k, int candidate); // the trial rule names `candidate`
    void choose_winner(TuneClass& k) const;

    int ranks_;
    TuneSettings settings_;
    Layer layer_;
    std::deque<Rule> rules_; // stable: decisions and repeat records point at their sources
    std::vector<std::unique_ptr<TuneClass>> classes_;
    std::uint64_t generation_ = 1; // 0: no layer (c_api.cpp's memo)
};

// The process's learned rules for the saved file: k's, unless one of the same collective,
// communicator size, class and op was kept before (another communicator of the same size would
// only repeat or shadow it). Thread-safe.
void keep_learned(const TuneClass& k, int ranks, std::string_view comm_name);
// The kept rules as rule-file lines, each with the agreed times in a comment; empty if none.
std::string learned_rules_text();
// A line per kept rule: "on COMM (N ranks): COLL RANGE bytes: WINNER (by: NAME T, ...)".
std::string learned_summary_text();
void forget_learned();

} // namespace loom::rules
