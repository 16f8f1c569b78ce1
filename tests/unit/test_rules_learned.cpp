// Online tuning's learned layer (selection_rules/learned.hpp), MPI-free: the rule a class gets,
// its trial (each candidate in turn, run calls in a row), the winner from the times, and the
// saved rules read back through the parser deciding as the layer did.
#include "rules_test_support.hpp"

#include "learned.hpp"

using namespace loom;
using namespace loom::rules;
using namespace loom::rules::test;

namespace {

// A table of the tests' own: recursive doubling up to 64 KiB, then the ring with an option.
const std::vector<Rule>& table()
{
    static const std::vector<Rule> rules =
        parse_body("allreduce * 0-64K recursive_doubling\nallreduce * 64K-* ring segment=64K\n"
                   "bcast * * binomial\n")
            .rules;
    return rules;
}

const Resolved& tables()
{
    static const Resolved r = narrow({&table()}, 4, 1, 4, 0);
    return r;
}

// A blocking host allreduce of `bytes` on the tables' communicator (4 ranks on one node), with
// no shared segment: the candidates are algorithms that need none.
CallFacts allreduce(std::uint64_t bytes, bool commutative = true)
{
    CallFacts f;
    f.collective = Collective::allreduce;
    f.bytes = bytes;
    f.ranks = 4;
    f.nodes = 1;
    f.ranks_per_node = 4;
    f.commutative = commutative;
    f.element_bytes = 8;
    f.segment = SegmentState::none;
    return f;
}

Decision decide_with(const Learned& learned, const CallFacts& f) { return decide(f, tables(), nullptr, &learned.layer()); }

// Opens the class of f from the tables' decision, as the glue's first call of it does.
TuneClass* open_class(Learned& learned, const CallFacts& f) { return learned.open(f, decide(f, tables())); }

// Runs k's trial: every call decided by the layer, timed as `ns_of` says (back to back: each
// call enters 100 ns after the previous one's run ended). Returns the times to agree on.
template <class NsOf>
std::vector<double> run_trial(Learned& learned, TuneClass& k, const CallFacts& f, NsOf ns_of)
{
    long long clock = 1000000;
    double times[2 * kMaxTuneCandidates];
    for (int call = 0;; ++call) {
        const Decision d = decide_with(learned, f);
        const int i = k.current();
        INFO("trial call " << call << ", candidate " << i);
        REQUIRE(d.rule == k.rule);
        CHECK(std::string(d.source) == "learned:" + std::to_string(k.rule->line) + " (a trial)");
        CHECK(d.algorithm == k.candidates[std::size_t(i)]);
        const long long entry = clock, run_start = clock + 50, ns = ns_of(k.candidates[std::size_t(i)]);
        clock = run_start + ns + 100;
        if (const int n = learned.record(k, i, entry, run_start, ns, 1.0, times); n != 0) {
            CHECK(call + 1 == k.ncand() * k.trials);
            REQUIRE(n == 2 * k.ncand());
            return std::vector<double>(times, times + n);
        }
    }
}

} // namespace

TEST_CASE("learned: size classes are powers of two, each class's bytes a rule's range", "[rules][learned]")
{
    CHECK(size_class(0) == 0);
    CHECK(size_class(1) == 1);
    CHECK(size_class(2) == 2);
    CHECK(size_class(3) == 3);
    CHECK(size_class(8) == 4);
    CHECK(size_class(9) == 5);
    CHECK(size_class(4096) == 13);
    // Large-count calls: classes go on above 2^31 and 2^32 bytes, with no wrap.
    CHECK(size_class(std::uint64_t(1) << 32) == 33);
    CHECK(size_class((std::uint64_t(1) << 32) + 1) == 34);
    CHECK(range_text(class_bytes(size_class(4 * G + 1)), true) == "4294967297-8G");
    for (std::uint64_t bytes : std::vector<std::uint64_t>{0, 1, 2, 3, 8, 9, 1000, 4096, 4097, M, 3 * M, 2 * G - 1,
                                                          2 * G, 2 * G + 1, 4 * G - 1, 4 * G, 4 * G + 1, 3 * G * K}) {
        const Range r = class_bytes(size_class(bytes));
        CHECK(r.contains(bytes));
        CHECK(size_class(r.lo) == size_class(r.hi));
        CHECK(r.hi <= 2 * r.lo + 1); // a class's calls differ by at most 2x
    }
    CHECK(range_text(class_bytes(size_class(8)), true) == "5-8");
    CHECK(range_text(class_bytes(size_class(4096)), true) == "2049-4K");
}

TEST_CASE("learned: a class's rule names each candidate in turn, then the winner", "[rules][learned]")
{
    Learned learned(4, TuneSettings{});
    const CallFacts f = allreduce(8);
    const std::uint64_t before = learned.generation();
    TuneClass* k = open_class(learned, f);
    REQUIRE(k != nullptr);
    CHECK(learned.generation() != before);
    CHECK(learned.find(f) == k);
    // The tables' choice first, Open MPI's own, then every other algorithm that can serve.
    const Algorithm* rd = find_algorithm(Collective::allreduce, "recursive_doubling");
    std::vector<const Algorithm*> want = {rd, nullptr};
    for (const Algorithm* a : eligible_algorithms(f))
        if (a != rd && want.size() < 10) want.push_back(a);
    CHECK(k->candidates == want);
    REQUIRE(k->ncand() >= 3);
    // 8 bytes is small: four times the trials, in two passes of runs.
    CHECK(k->trials == 16);
    CHECK(k->passes == 2);
    CHECK(k->run == 8);
    // The rule: the communicator's size, the class's bytes, blocking calls on host memory.
    const Rule& r = *k->rule;
    CHECK(r.ranks.lo == 4);
    CHECK(r.ranks.hi == 4);
    CHECK(r.bytes.lo == 5);
    CHECK(r.bytes.hi == 8);
    CHECK(r.commutative == std::optional<bool>(true));
    CHECK(r.memory == std::optional<MemoryKind>(MemoryKind::host));
    CHECK(r.form == std::optional<Form>(Form::blocking));
    // Calls outside the class, and other forms and memory, are the tables'.
    CHECK(std::string(decide_with(learned, allreduce(16)).source) == "t.rules:2");
    CHECK(std::string(decide_with(learned, allreduce(8, false)).source) == "t.rules:2");
    CallFacts other = f;
    other.form = Form::nonblocking;
    CHECK(std::string(decide_with(learned, other).source) == "t.rules:2");
    other = f;
    other.memory = MemoryKind::cuda;
    CHECK(std::string(decide_with(learned, other).source) == "t.rules:2");
    // A forced algorithm still comes first.
    other = f;
    other.forced = "ring";
    CHECK(decide_with(learned, other).algorithm == find_algorithm(Collective::allreduce, "ring"));

    // Candidate 2 is ten times as fast as the others: it wins, by intervals (back to back).
    const Algorithm* fast = k->candidates[2];
    const std::vector<double> times = run_trial(learned, *k, f, [&](const Algorithm* a) { return a == fast ? 1000 : 10000; });
    CHECK(times[2] == 1000);
    CHECK(times[0] == 10000);
    CHECK(times[k->ncand() + 2] == 1100); // from its run's start to the next call's entry
    const std::string line = learned.settle(*k, times.data(), "MPI_COMM_WORLD");
    CHECK(k->settled);
    CHECK(k->winner == 2);
    CHECK(k->by_interval);
    CHECK(line == "allreduce 5-8 bytes: " + std::string(fast->name) + " (by intervals), rule learned:1");
    const Decision d = decide_with(learned, f);
    CHECK(d.algorithm == fast);
    CHECK(std::string(d.source) == "learned:1");
    CHECK(d.segment_bytes == 0);
    forget_learned();
}

TEST_CASE("learned: the tables' choice stays unless beaten by the margin", "[rules][learned]")
{
    // 1 MiB, above the floor: 5% faster is not enough, 20% is.
    for (const auto& [faster, wins] : {std::pair{0.95, false}, std::pair{0.8, true}}) {
        Learned learned(4, TuneSettings{});
        const CallFacts f = allreduce(M);
        TuneClass* k = open_class(learned, f);
        REQUIRE(k != nullptr);
        CHECK(k->trials == 4); // large: the trials as set, in one pass
        CHECK(k->passes == 1);
        // Candidate 0 runs with its rule's option; the others with the parameters'.
        CHECK(decide_with(learned, f).segment_bytes == 64 * K);
        const Algorithm* other = k->candidates[1];
        const std::vector<double> times = run_trial(learned, *k, f, [&](const Algorithm* a) {
            return a == k->candidates[0] ? 100000LL : a == other ? (long long)(100000 * faster) : 400000LL;
        });
        learned.settle(*k, times.data(), "c");
        CHECK(k->winner == (wins ? 1 : 0));
        const Decision d = decide_with(learned, f);
        CHECK(std::string(d.source) == "learned:1");
        CHECK(d.segment_bytes == (wins ? 0 : 64 * K));
        forget_learned();
    }
    // Below the floor (2 us), only twice as fast replaces the tables' choice.
    Learned learned(4, TuneSettings{});
    const CallFacts f = allreduce(8);
    TuneClass* k = open_class(learned, f);
    const std::vector<double> times =
        run_trial(learned, *k, f, [&](const Algorithm* a) { return a == k->candidates[0] ? 1000 : 600; });
    learned.settle(*k, times.data(), "c");
    CHECK(k->winner == 0);
    forget_learned();
}

TEST_CASE("learned: Open MPI's own as the winner hands the class's calls on, where that is allowed",
          "[rules][learned]")
{
    Learned learned(4, TuneSettings{});
    const CallFacts f = allreduce(4096);
    TuneClass* k = open_class(learned, f);
    REQUIRE(k->candidates[1] == nullptr);
    // While timed, Open MPI's own is a fallback rule of the trial.
    std::vector<double> times = run_trial(learned, *k, f, [](const Algorithm* a) { return a == nullptr ? 2000 : 30000; });
    learned.settle(*k, times.data(), "c");
    CHECK(k->winner == 1);
    Decision d = decide_with(learned, f);
    CHECK(d.algorithm == nullptr);
    CHECK(d.rule == k->rule);
    CHECK(std::string(d.why) == "rule learned:1: Open MPI's own choice measured fastest here");
    // A call Open MPI would get wrong (a SUM of small integers) is served by the tables.
    CallFacts keep = f;
    keep.keep_from_open_mpi = true;
    d = decide_with(learned, keep);
    CHECK(std::string(d.source) == "t.rules:2");
    // ... and a class opened from such a call never times Open MPI's own.
    Learned other(4, TuneSettings{});
    const TuneClass* k2 = open_class(other, keep);
    CHECK(std::find(k2->candidates.begin(), k2->candidates.end(), nullptr) == k2->candidates.end());
    forget_learned();
}

TEST_CASE("learned: classes are bounded; a class of one candidate gets no rule", "[rules][learned]")
{
    TuneSettings s;
    s.max_classes = 2;
    Learned learned(4, s);
    CHECK(open_class(learned, allreduce(8)) != nullptr);
    CHECK(open_class(learned, allreduce(64)) != nullptr);
    CHECK(open_class(learned, allreduce(512)) == nullptr);
    s.candidates = 1;
    Learned one(4, s);
    const TuneClass* k = open_class(one, allreduce(8));
    REQUIRE(k != nullptr);
    CHECK(k->settled);
    CHECK(k->rule == nullptr);
    CHECK(one.layer()[std::size_t(Collective::allreduce)].empty());
}

TEST_CASE("learned: the saved rules, read back by the parser, decide as the layer did", "[rules][learned]")
{
    forget_learned();
    Learned learned(4, TuneSettings{});
    std::vector<CallFacts> calls;
    for (std::uint64_t bytes : {std::uint64_t(8), std::uint64_t(4096), M}) {
        for (bool commutative : {true, false}) {
            const CallFacts f = allreduce(bytes, commutative);
            TuneClass* k = open_class(learned, f);
            REQUIRE(k != nullptr);
            // The last candidate is the fastest (times fall along the list).
            const std::vector<double> times = run_trial(learned, *k, f, [&](const Algorithm* a) {
                const auto at = std::find(k->candidates.begin(), k->candidates.end(), a) - k->candidates.begin();
                return 100000LL - 10000LL * at;
            });
            learned.settle(*k, times.data(), "MPI_COMM_WORLD");
            calls.push_back(f);
        }
    }
    // The first rule kept per (collective, size, class, op): another communicator's is not.
    Learned again(4, TuneSettings{});
    TuneClass* k = open_class(again, calls[0]);
    again.settle(*k, nullptr, "other");
    const std::string text = learned_rules_text();
    INFO(text);
    const ParseResult parsed = parse("loom-rules 1\n" + text, "saved.rules");
    REQUIRE(parsed.ok());
    CHECK(parsed.rules.size() == calls.size());
    CHECK(learned_summary_text().find("on MPI_COMM_WORLD (4 ranks): allreduce 5-8 bytes: ") == 0);
    // As online tuning's layer (loom-rules explain --learned: blocking calls) and as the user's
    // rules above the same tables, the file decides every class's calls as the layer did.
    std::vector<Rule> as_layer = parsed.rules;
    for (Rule& r : as_layer)
        if (!r.form) r.form = Form::blocking;
    const Resolved file_layer = narrow({&as_layer}, 4, 1, 4, 0);
    const Resolved as_user = narrow({&parsed.rules, &table()}, 4, 1, 4, 0);
    for (const CallFacts& f : calls)
        for (std::uint64_t bytes : {class_bytes(size_class(f.bytes)).lo, class_bytes(size_class(f.bytes)).hi}) {
            CallFacts g = f;
            g.bytes = bytes;
            INFO(bytes << (g.commutative ? " commutative" : " non-commutative"));
            const Decision live = decide_with(learned, g);
            const Decision file = decide(g, tables(), nullptr, &file_layer.candidates);
            const Decision user = decide(g, as_user);
            CHECK(std::string_view(live.source).substr(0, 8) == "learned:");
            CHECK(std::string_view(file.source).substr(0, 12) == "saved.rules:");
            CHECK(file.algorithm == live.algorithm);
            CHECK(user.algorithm == live.algorithm);
            CHECK(file.segment_bytes == live.segment_bytes);
            CHECK(user.segment_bytes == live.segment_bytes);
        }
    forget_learned();
    CHECK(learned_rules_text().empty());
}
