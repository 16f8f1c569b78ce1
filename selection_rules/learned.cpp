#include "learned.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace loom::rules {

namespace {

constexpr int kSmallClass = 17; // size classes of at most 64 KiB

const std::string kTrialWhy = ": timing Open MPI's own choice";
const std::string kLearnedWhy = ": Open MPI's own choice measured fastest here";

long long median(long long* v, int n)
{
    std::sort(v, v + n);
    return v[n / 2];
}

// A candidate's time from its runs' samples (a run's first call, and the interval after it, left
// out as a warm-up where the run has 3 calls or more; `intervals`: a run holds one value fewer):
// the fastest pass's median, since noise only ever adds time.
double run_medians(const TuneClass& k, const long long* samples, int intervals)
{
    const int warm = k.run >= 3 ? 1 : 0, n = k.run - intervals - warm;
    double best = 0;
    for (int p = 0; p < k.passes; ++p) {
        long long v[kMaxTuneTrials];
        if (n > 0) std::copy(samples + p * k.run + warm, samples + p * k.run + warm + n, v);
        const double m = n > 0 ? double(median(v, n)) : 0;
        if (p == 0 || m < best) best = m;
    }
    return best;
}

std::string_view name_of(const Algorithm* a) { return a != nullptr ? a->name : kFallback; }

std::string class_text(const TuneClass& k)
{
    return std::string(to_string(k.collective)) + " " + range_text(class_bytes(k.size_class), true) + " bytes";
}

// The agreed times of the winner's measure, "NAME T, ..." in microseconds.
std::string times_text(const TuneClass& k)
{
    std::string s;
    for (int i = 0; i < k.ncand(); ++i) {
        char t[32];
        std::snprintf(t, sizeof t, " %.2f", k.agreed[(k.by_interval ? k.ncand() : 0) + i] / 1000.0);
        s += (i ? ", " : "") + std::string(name_of(k.candidates[std::size_t(i)])) + t;
    }
    return s;
}

} // namespace

int size_class(std::uint64_t bytes)
{
    if (bytes == 0) return 0;
    int k = 0;
    while (k < 62 && (std::uint64_t(1) << k) < bytes) ++k;
    return k + 1;
}

Range class_bytes(int c)
{
    if (c <= 1) return {std::uint64_t(c), std::uint64_t(c)};
    return {(std::uint64_t(1) << (c - 2)) + 1, std::uint64_t(1) << (c - 1)};
}

std::vector<const Algorithm*> eligible_algorithms(const CallFacts& call)
{
    const CallShape shape = shape_of(call, call.segment == SegmentState::ready);
    std::vector<const Algorithm*> out;
    for (const Algorithm& a : all_algorithms())
        if (a.collective == call.collective && !a.reads.leaders && !why_not(a, shape)) out.push_back(&a);
    return out;
}

TuneClass* Learned::find(const CallFacts& call)
{
    const int cls = size_class(call.bytes);
    for (const auto& k : classes_)
        if (k->collective == call.collective && k->size_class == cls && k->commutative == call.commutative)
            return k.get();
    return nullptr;
}

TuneClass* Learned::open(const CallFacts& call, const Decision& d)
{
    if (int(classes_.size()) >= settings_.max_classes) return nullptr;
    auto made = std::make_unique<TuneClass>();
    TuneClass& k = *made;
    k.owner = this;
    k.collective = call.collective;
    k.size_class = size_class(call.bytes);
    k.commutative = call.commutative;
    const std::size_t max = std::size_t(std::clamp(settings_.candidates, 1, kMaxTuneCandidates));
    k.candidates.push_back(d.algorithm);
    if (d.algorithm != nullptr && d.rule != nullptr) k.first = *d.rule;
    // Open MPI's own, unless its kernel gets this op wrong (then loom must serve).
    if (d.algorithm != nullptr && !call.keep_from_open_mpi && k.candidates.size() < max) k.candidates.push_back(nullptr);
    for (const Algorithm* a : eligible_algorithms(call))
        if (a != d.algorithm && k.candidates.size() < max) k.candidates.push_back(a);
    // Calls of 64 KiB and less are cheap and their times noisy: four times as many trials, in
    // two passes over the candidates (A B C .. A B C), so that a stretch of noise (the other
    // ranks' cores busy for a while) spoils one run of a candidate, not its whole trial.
    const bool small = k.size_class <= kSmallClass;
    k.trials = std::clamp(settings_.trials * (small ? 4 : 1), 1, kMaxTuneTrials);
    k.passes = small && k.trials >= 6 ? 2 : 1;
    k.run = k.trials / k.passes;
    k.trials = k.run * k.passes;
    classes_.push_back(std::move(made));
    if (k.ncand() == 1) { // nothing to learn: the tables go on deciding
        k.settled = true;
        return &k;
    }
    Rule& r = rules_.emplace_back();
    r.collective = k.collective;
    r.ranks = {std::uint64_t(ranks_), std::uint64_t(ranks_)};
    r.bytes = class_bytes(k.size_class);
    if (reduces(k.collective)) r.commutative = k.commutative;
    r.memory = MemoryKind::host;
    r.form = Form::blocking;
    r.line = int(rules_.size());
    r.source = "learned:" + std::to_string(r.line) + " (a trial)";
    r.fallback_reason = "rule " + r.source + kTrialWhy;
    k.rule = &r;
    k.slot = layer_[std::size_t(k.collective)].size();
    layer_[std::size_t(k.collective)].push_back({&r, nullptr});
    point(k, 0);
    return &k;
}

void Learned::point(TuneClass& k, int i)
{
    const Algorithm* a = k.candidates[std::size_t(i)];
    Rule& r = *k.rule;
    r.algorithm = std::string(name_of(a));
    // Candidate 0 runs as the tables chose it; the others with the parameters' options.
    const bool first = i == 0 && a != nullptr;
    r.segment_bytes = first ? k.first.segment_bytes : 0;
    r.buffer_bytes = first ? k.first.buffer_bytes : 0;
    r.radix = first ? k.first.radix : 0;
    r.requests = first ? k.first.requests : 0;
    r.leaders = first ? k.first.leaders : "";
    layer_[std::size_t(k.collective)][k.slot].algorithm = a;
    ++generation_;
}

int Learned::record(TuneClass& k, int candidate, long long entry_ns, long long run_start_ns, long long ns, double noise,
                    double* times)
{
    const int n = k.ncand();
    const int pass = k.calls / (n * k.run), in_run = k.calls % k.run, sample = pass * k.run + in_run;
    // From the previous call's run to this call's entry: the previous call and the application's
    // time between the two, without this call's way through the pipeline (a kept repeat's is
    // shorter).
    long long interval = entry_ns - k.last_run_start;
    k.last_run_start = run_start_ns;
    if (noise != 1.0) {
        ns = (long long)(double(ns) * noise);
        interval = (long long)(double(interval) * noise);
    }
    k.samples[candidate][sample] = ns;
    if (in_run > 0) k.intervals[candidate][sample - 1] = interval; // after the previous call of the run
    if (++k.calls < n * k.trials) {
        if (k.current() != candidate) point(k, k.current());
        return 0;
    }
    for (int i = 0; i < n; ++i) {
        times[i] = run_medians(k, k.samples[i], 0);
        times[n + i] = k.run >= 3 ? run_medians(k, k.intervals[i], 1) : 0;
    }
    return 2 * n;
}

// The winner from the agreed times: the fastest, if it beats the rules' choice (candidate 0) by
// the margin - below that, differences are within what one rank's timer and the trial's own path
// (describe, choose, two clock reads a call) blur, and the rules' choice stands.
//
// Which times: where the calls come back to back (each candidate's interval - from a call's run
// to the next call's entry - within twice its duration plus the floor), the intervals. They hold
// what a call's duration on one rank misses and what a small call's cost is mostly made of: how
// the candidate leaves the ranks for the next call (a bcast root that returns at once and waits
// in the next call, shared-memory flags the ranks meet on in step or not). They leave out the
// trial's own path through the pipeline (describe, choose: 0.1-0.3 us here), which a kept repeat
// does not take. Otherwise (the application computes between calls, which would swamp the
// intervals) the durations.
void Learned::choose_winner(TuneClass& k) const
{
    const int n = k.ncand();
    const double *duration = k.agreed, *interval = k.agreed + n;
    const double floor_ns = settings_.floor_ns;
    k.by_interval = k.run >= 3;
    for (int i = 0; i < n && k.by_interval; ++i)
        if (!(interval[i] > 0 && interval[i] <= 2 * duration[i] + floor_ns)) k.by_interval = false;
    const double* t = k.by_interval ? interval : duration;
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (t[i] < t[best]) best = i;
    // Below the floor, where the rules' choice is a fast one, only a choice the best beat by half
    // is replaced: there the trial's own per-call path (0.1-0.3 us a call on every rank) changes
    // how the candidates run, not only what they measure - a shared-memory bcast whose root runs
    // calls ahead of its readers in the steady state (0.07 us a call at 1 KiB here) is held in
    // step by it and measured at 0.3-0.5 us, behind Open MPI's own (0.3 us, 0.25 us steady) - so
    // a near tie there says nothing, and a bad choice (cma at 8 B: 1.7 us against 0.2) still
    // shows. Timing the trial's calls on the repeat path would lift this (not done).
    double margin = double(settings_.margin) / 100.0;
    if (t[0] <= floor_ns && margin < 0.5) margin = 0.5;
    k.winner = t[best] < (1.0 - margin) * t[0] ? best : 0;
}

std::string Learned::settle(TuneClass& k, const double* agreed, std::string_view comm_name)
{
    if (agreed != nullptr) {
        std::copy(agreed, agreed + 2 * k.ncand(), k.agreed);
        choose_winner(k);
    } else {
        k.winner = 0;
    }
    k.settled = true;
    point(k, k.winner); // the winner's options
    Rule& r = rules_.emplace_back(*k.rule);
    r.source = "learned:" + std::to_string(r.line);
    r.fallback_reason = "rule " + r.source + kLearnedWhy;
    k.rule = &r; // the trial's rule stays: its source may still be printed
    layer_[std::size_t(k.collective)][k.slot] = {&r, k.candidates[std::size_t(k.winner)]};
    keep_learned(k, ranks_, comm_name);
    return class_text(k) + (k.commutative ? "" : " (non-commutative)") + ": " +
           std::string(name_of(k.candidates[std::size_t(k.winner)])) + " (by " +
           (k.by_interval ? "intervals" : "durations") + "), rule " + r.source;
}

// ---- What the process learned --------------------------------------------------------------

namespace {

struct Kept {
    Rule rule;
    int size_class;
    bool commutative;
    std::string times;   // "intervals: ring 1.20, fallback 2.10"
    std::string comm;    // the communicator's name
};

std::mutex& kept_mutex()
{
    static std::mutex m;
    return m;
}
std::vector<Kept>& kept()
{
    static std::vector<Kept> rules;
    return rules;
}

} // namespace

void keep_learned(const TuneClass& k, int ranks, std::string_view comm_name)
{
    std::lock_guard lock(kept_mutex());
    for (const Kept& x : kept())
        if (x.rule.collective == k.collective && x.rule.ranks.lo == std::uint64_t(ranks) &&
            x.size_class == k.size_class && x.commutative == k.commutative)
            return;
    kept().push_back({*k.rule, k.size_class, k.commutative,
                      std::string(k.by_interval ? "intervals" : "durations") + ": " + times_text(k),
                      std::string(comm_name.substr(0, 31))});
}

std::string learned_rules_text()
{
    std::lock_guard lock(kept_mutex());
    std::string out;
    for (const Kept& x : kept()) {
        const std::vector<std::string> f = rule_fields(x.rule);
        char line[512];
        std::snprintf(line, sizeof line, "%-22s %-6s %-22s %-20s %s", f[0].c_str(), f[1].c_str(), f[2].c_str(),
                      f[3].c_str(), f.size() > 4 ? f[4].c_str() : "");
        out += line + std::string(" # ") + x.times + "\n";
    }
    return out;
}

std::string learned_summary_text()
{
    std::lock_guard lock(kept_mutex());
    std::string out;
    for (const Kept& x : kept())
        out += "on " + x.comm + " (" + std::to_string(x.rule.ranks.lo) + " ranks): " +
               std::string(to_string(x.rule.collective)) + " " + range_text(x.rule.bytes, true) +
               " bytes: " + x.rule.algorithm + " (" + x.times + ")\n";
    return out;
}

void forget_learned()
{
    std::lock_guard lock(kept_mutex());
    kept().clear();
}

} // namespace loom::rules
