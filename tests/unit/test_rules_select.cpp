// Tests of the rule tables once parsed: lint, matching, choice (with its trace), the embedded
// defaults, nearest-name suggestions and per-communicator selection.
#include "rules_test_support.hpp"

#include "loom_c_api.h"

#include <unistd.h>

using namespace loom;
using namespace loom::rules;
using namespace loom::rules::test;
TEST_CASE("rules: lint warns of a rule shadowed by one earlier rule, naming it", "[rules]")
{
    CHECK(warnings_of("allreduce * * recursive_doubling\n"
                      "allreduce 2-8 0-4K binomial\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // The earliest shadowing rule is named, and each shadowed rule is warned once.
    CHECK(warnings_of("bcast 1-64 * binomial\n"
                      "bcast * 0-1M scatter_allgather\n"
                      "bcast 2-4 0-4K scatter_allgather\n"
                      "bcast 2-4 0-4K binomial segment=1K\n") ==
          std::vector<std::string>{
              "t.rules:4:1: warning: this rule can never match: line 2 matches every call it would",
              "t.rules:5:1: warning: this rule can never match: line 2 matches every call it would"});
    // An identical rule is shadowed; inclusive ends count.
    CHECK(warnings_of("barrier 4-8 * bruck\nbarrier 4-8 * recursive_doubling\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // Keys: an earlier rule without a key covers a later one with it, not the other way round.
    CHECK(warnings_of("allgather * * bruck\nallgather * * ring nodes=2-4 memory=cuda\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    CHECK(warnings_of("allgather * * bruck nodes=1-8\nallgather * * ring nodes=2-4\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    CHECK(warnings_of("allgather * * bruck nodes=2-4\nallgather * * ring\n").empty());
    CHECK(warnings_of("allgather * * bruck nodes=2-4\nallgather * * ring nodes=1-8\n").empty());
    CHECK(warnings_of("allgather * * bruck ranks_per_node=2\nallgather * * ring\n").empty());
    CHECK(warnings_of("allgather * * bruck memory=cuda\nallgather * * ring\n").empty());
    CHECK(warnings_of("allgather * * bruck memory=cuda\nallgather * * ring memory=host\n").empty());
    CHECK(warnings_of("allreduce * * binomial commutative=no\nallreduce * * ring\n").empty());
    // Different collectives, or ranges that only overlap, never shadow.
    CHECK(warnings_of("allgather * * bruck\nallgatherv * * bruck\n").empty());
    CHECK(warnings_of("alltoall 2-8 * bruck\nalltoall 4-16 * pairwise\n").empty());
    CHECK(warnings_of("alltoall * 0-4K bruck\nalltoall * 4K-* pairwise\n").empty());
}

TEST_CASE("rules: lint does not warn of a rule after one whose algorithm may decline", "[rules]")
{
    // ring needs a commutative op: a non-commutative call falls through to the next rule.
    CHECK(warnings_of("allreduce * * ring\nallreduce * * recursive_doubling\n").empty());
    CHECK(warnings_of("reduce * 64K-* halving_doubling\nreduce * * binomial\n").empty());
    CHECK(warnings_of("reduce * * halving_doubling\nreduce * 64K-* binomial commutative=no\n").empty());
    // ... unless the later rule (or the earlier one) is for commutative calls only.
    CHECK(warnings_of("allreduce * * ring\nallreduce * 0-4K recursive_doubling commutative=yes\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    CHECK(warnings_of("allreduce * * ring commutative=yes\nallreduce * 0-4K binomial commutative=yes\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // A declining rule is passed over, and the rule after it may still shadow a later one.
    CHECK(warnings_of("allreduce * * ring\nallreduce * * binomial\nallreduce * 0-4K recursive_doubling\n") ==
          std::vector<std::string>{
              "t.rules:4:1: warning: this rule can never match: line 3 matches every call it would"});
}

TEST_CASE("rules: lint warns of message sizes a collective's rules leave uncovered", "[rules]")
{
    CHECK(warnings_of("allreduce * 0-4K recursive_doubling\nallreduce * 8K-* ring\n") ==
          std::vector<std::string>{
              "t.rules:2: warning: allreduce: no rule covers message sizes 4097-8191 (such calls use the defaults)"});
    CHECK(warnings_of("bcast * 1K-* binomial\n") ==
          std::vector<std::string>{
              "t.rules:2: warning: bcast: no rule covers message sizes 0-1023 (such calls use the defaults)"});
    CHECK(warnings_of("bcast * 0-1M binomial\n") ==
          std::vector<std::string>{
              "t.rules:2: warning: bcast: no rule covers message sizes 1048577-* (such calls use the defaults)"});
    CHECK(warnings_of("barrier * 5 bruck\n") ==
          std::vector<std::string>{
              "t.rules:2: warning: barrier: no rule covers message sizes 0-4 (such calls use the defaults)",
              "t.rules:2: warning: barrier: no rule covers message sizes 6-* (such calls use the defaults)"});
    // Several gaps, rules out of order; the warning names the collective's first rule.
    CHECK(warnings_of("bcast * * binomial\n"
                      "alltoall * 1M-* pairwise\n"
                      "alltoall * 10-99 bruck\n"
                      "alltoall * 0-9 bruck\n"
                      "alltoall * 200-300 bruck\n") ==
          std::vector<std::string>{
              "t.rules:3: warning: alltoall: no rule covers message sizes 100-199 (such calls use the defaults)",
              "t.rules:3: warning: alltoall: no rule covers message sizes 301-1048575 (such calls use the defaults)"});
    // Covered: adjacent, overlapping, nested, or by a rule with other ranks (sizes only are checked).
    CHECK(warnings_of("allreduce * 0-4095 recursive_doubling\nallreduce * 4K-* ring\n").empty());
    CHECK(warnings_of("allreduce * 0-4K recursive_doubling\nallreduce * 4K-* ring\n").empty());
    CHECK(warnings_of("allreduce * 1M-* ring\nallreduce * 0-2M ring\nallreduce * 5-6 binomial\n").empty());
    CHECK(warnings_of("allreduce 2 * recursive_doubling\n").empty());
    CHECK(warnings_of("allreduce * 0-18446744073709551615 ring\n").empty());
    // Collectives the table does not mention are not warned of; neither is an empty table.
    CHECK(warnings_of("barrier * * bruck\n").empty());
    CHECK(lint({}, "t.rules").empty());
}

// ---- matching ----------------------------------------------------------------------------

TEST_CASE("rules: matches() checks every field, inclusive at both ends", "[rules]")
{
    const Rule r = only_rule("allreduce 4-8 1K-2K ring");
    CHECK(matches(r, call(Collective::allreduce, 4, K)));
    CHECK(matches(r, call(Collective::allreduce, 8, 2 * K)));
    CHECK(matches(r, call(Collective::allreduce, 6, 1500)));
    CHECK(!matches(r, call(Collective::allreduce, 3, K)));
    CHECK(!matches(r, call(Collective::allreduce, 9, K)));
    CHECK(!matches(r, call(Collective::allreduce, 4, K - 1)));
    CHECK(!matches(r, call(Collective::allreduce, 4, 2 * K + 1)));
    CHECK(!matches(r, call(Collective::reduce, 4, K)));
    // Exact and open ends.
    const Rule e = only_rule("bcast 2 0 binomial");
    CHECK(matches(e, call(Collective::bcast, 2, 0)));
    CHECK(!matches(e, call(Collective::bcast, 2, 1)));
    CHECK(!matches(e, call(Collective::bcast, 3, 0)));
    const Rule o = only_rule("bcast 9-* 256K-* binomial");
    CHECK(matches(o, call(Collective::bcast, 9, 256 * K)));
    CHECK(matches(o, call(Collective::bcast, 1 << 30, UINT64_MAX)));
    CHECK(!matches(o, call(Collective::bcast, 8, 256 * K)));
    CHECK(!matches(o, call(Collective::bcast, 9, 256 * K - 1)));
}

TEST_CASE("rules: nodes and ranks_per_node do not match when unknown", "[rules]")
{
    const Rule n = only_rule("allgather * * ring nodes=2-4");
    Call c = call(Collective::allgather, 16, 100);
    CHECK(!matches(n, c)); // nodes = 0: unknown
    c.nodes = 1;
    CHECK(!matches(n, c));
    c.nodes = 2;
    CHECK(matches(n, c));
    c.nodes = 4;
    CHECK(matches(n, c));
    c.nodes = 5;
    CHECK(!matches(n, c));

    const Rule p = only_rule("allgather * * ring ranks_per_node=8-*");
    c = call(Collective::allgather, 16, 100);
    CHECK(!matches(p, c));
    c.ranks_per_node = 7;
    CHECK(!matches(p, c));
    c.ranks_per_node = 8;
    CHECK(matches(p, c));
    c.ranks_per_node = 64;
    CHECK(matches(p, c));

    // Even `*` needs the value known.
    const Rule any = only_rule("allgather * * ring nodes=* ranks_per_node=*");
    c = call(Collective::allgather, 16, 100);
    CHECK(!matches(any, c));
    c.nodes = 2;
    CHECK(!matches(any, c));
    c.ranks_per_node = 8;
    CHECK(matches(any, c));
    // A rule without the keys matches known and unknown alike.
    CHECK(matches(only_rule("allgather * * ring"), c));
    CHECK(matches(only_rule("allgather * * ring"), call(Collective::allgather, 16, 100)));
}

TEST_CASE("rules: ompi= matches the Open MPI major version, never an unknown one", "[rules]")
{
    const Rule five = only_rule("allreduce * * ring ompi=5");
    const Rule four_up = only_rule("allreduce * * ring ompi=4-*");
    Call c = call(Collective::allreduce, 4, 64);
    CHECK(!matches(five, c)); // ompi_major = 0: unknown
    CHECK(!matches(four_up, c));
    c.ompi_major = 4;
    CHECK(!matches(five, c));
    CHECK(matches(four_up, c));
    c.ompi_major = 5;
    CHECK(matches(five, c));
    CHECK(matches(four_up, c));
    CHECK(matches(only_rule("allreduce * * ring"), c));
    // Lint: a rule for one version does not shadow a later rule for all of them, and the
    // reverse does.
    CHECK(warnings_of("allreduce * * fallback ompi=5\nallreduce * * recursive_doubling\n").empty());
    CHECK(warnings_of("allreduce * * recursive_doubling\nallreduce * * fallback ompi=5\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
}

TEST_CASE("rules: a fallback rule for one Open MPI hands calls on there only", "[rules]")
{
    const ParseResult t = parse_body("allreduce * 0-1K fallback ompi=5\nallreduce * * ring\n");
    REQUIRE(t.ok());
    Call c = call(Collective::allreduce, 4, 64);
    for (int major : {4, 5}) {
        c.ompi_major = major;
        const Rule* r = choose({&t.rules}, c);
        REQUIRE(r != nullptr);
        CHECK(r->line == (major == 5 ? 2 : 3));
    }
    // The process's Open MPI narrows its tables, for every communicator resolved after it is set.
    const TempFile f("loom-rules 1\nallreduce * * fallback ompi=5\n");
    REQUIRE(load_user_rules(f.path.string()).empty());
    for (int major : {0, 4, 5}) {
        set_open_mpi_major(major);
        CHECK(open_mpi_major() == major);
        const auto tables = resolved_for(4, 1, 4);
        CHECK(tables->ompi_major == major);
        const auto& first = tables->candidates[std::size_t(Collective::allreduce)].front();
        CHECK((first.rule->source == f.path.string() + ":2") == (major == 5));
    }
    set_open_mpi_major(0);
    load_user_rules("");
}

TEST_CASE("rules: memory and commutative keys", "[rules]")
{
    const Rule cuda = only_rule("allreduce * * ring memory=cuda");
    const Rule host = only_rule("allreduce * * ring memory=host");
    const Rule no = only_rule("allreduce * * binomial commutative=no");
    const Rule yes = only_rule("allreduce * * ring commutative=yes");
    Call c = call(Collective::allreduce, 4, 64);
    CHECK(!matches(cuda, c));
    CHECK(matches(host, c));
    CHECK(matches(yes, c));
    CHECK(!matches(no, c));
    c.memory = MemoryKind::cuda;
    c.commutative = false;
    CHECK(matches(cuda, c));
    CHECK(!matches(host, c));
    CHECK(!matches(yes, c));
    CHECK(matches(no, c));
}

TEST_CASE("rules: a collective's name sets the form: iallreduce, allreduce_init, allreduce for all", "[rules]")
{
    const Rule nonblocking = only_rule("iallreduce * * ring");
    const Rule persistent = only_rule("allreduce_init * * ring");
    const Rule every = only_rule("allreduce * * ring");
    CHECK(nonblocking.collective == Collective::allreduce);
    CHECK(nonblocking.form == Form::nonblocking);
    CHECK(persistent.form == Form::persistent);
    CHECK(!every.form);
    CHECK(only_rule("ireduce_scatter_block 2-4 * ring").collective == Collective::reduce_scatter_block);
    CHECK(only_rule("barrier_init * * bruck").form == Form::persistent);
    Call c = call(Collective::allreduce, 4, 64);
    for (Form f : {Form::blocking, Form::nonblocking, Form::persistent}) {
        c.form = f;
        CHECK(matches(every, c));
        CHECK(matches(nonblocking, c) == (f == Form::nonblocking));
        CHECK(matches(persistent, c) == (f == Form::persistent));
    }
    CHECK(form_name(Collective::bcast, Form::nonblocking) == "ibcast");
    CHECK(form_name(Collective::bcast, Form::persistent) == "bcast_init");
    CHECK(form_name(Collective::bcast, std::nullopt) == "bcast");
    // A plain rule before a form's shadows it; a form's before a plain one does not.
    CHECK(warnings_of("bcast * * binomial\nibcast * * scatter_allgather\n").size() == 1);
    CHECK(warnings_of("ibcast * * scatter_allgather\nbcast * * binomial\n").empty());
}

TEST_CASE("rules: decide() hands a form's rule only calls of that form", "[rules]")
{
    const ParseResult user = parse_body("iallreduce * * ring\nallreduce_init * * fallback\n");
    REQUIRE(user.ok());
    const Resolved tables = narrow({&user.rules, &default_rules()}, 4, 1, 4, 4);
    CallFacts f;
    f.collective = Collective::allreduce;
    f.ranks = 4;
    f.nodes = 1;
    f.ranks_per_node = 4;
    f.bytes = 4096;
    f.segment = SegmentState::none;
    f.ompi_major = 4;
    f.form = Form::nonblocking;
    Decision d = decide(f, tables);
    REQUIRE(d.algorithm != nullptr);
    CHECK(d.algorithm->name == "ring");
    f.form = Form::persistent;
    d = decide(f, tables);
    CHECK(d.algorithm == nullptr);
    CHECK(std::string(d.source).find(":3") != std::string::npos); // the persistent rule
    f.form = Form::blocking;
    d = decide(f, tables);
    CHECK(std::string(d.source).rfind("default:", 0) == 0); // past the user's rules
}

TEST_CASE("rules: choose() takes the first match, user table before defaults", "[rules]")
{
    const ParseResult user = parse_body("allreduce * 0-4K binomial\n"
                                        "allreduce * 0-* ring\n"
                                        "bcast 2-8 100 scatter_allgather\n");
    REQUIRE(user.ok());
    const std::vector<Rule>& u = user.rules;
    const std::vector<Rule>& d = default_rules();

    CHECK(choose({&u}, call(Collective::allreduce, 4, 0)) == &u[0]);
    CHECK(choose({&u}, call(Collective::allreduce, 4, 4 * K)) == &u[0]);
    CHECK(choose({&u}, call(Collective::allreduce, 4, 4 * K + 1)) == &u[1]);
    CHECK(choose({&u}, call(Collective::bcast, 2, 100)) == &u[2]);
    CHECK(choose({&u}, call(Collective::bcast, 8, 100)) == &u[2]);
    CHECK(choose({&u}, call(Collective::bcast, 9, 100)) == nullptr);
    CHECK(choose({&u}, call(Collective::bcast, 8, 101)) == nullptr);
    CHECK(choose({&u}, call(Collective::barrier, 8, 0)) == nullptr);
    CHECK(choose({}, call(Collective::barrier, 8, 0)) == nullptr);

    // User rules first; calls they do not match fall to the defaults.
    const Rule* r = choose({&u, &d}, call(Collective::bcast, 4, 100));
    CHECK(r == &u[2]);
    r = choose({&u, &d}, call(Collective::bcast, 16, 100));
    REQUIRE(r != nullptr);
    CHECK(r->source.rfind("default:", 0) == 0);
    CHECK(r >= d.data());
    CHECK(r < d.data() + d.size());
    // Order of the tables decides.
    r = choose({&d, &u}, call(Collective::allreduce, 4, 0));
    REQUIRE(r != nullptr);
    CHECK(r->source.rfind("default:", 0) == 0);
}

TEST_CASE("rules: choose() passes over a rule whose algorithm cannot serve the call, and says why", "[rules]")
{
    const ParseResult t = parse_body("bcast * * binomial\n"
                                     "allreduce 64-* * recursive_doubling\n"
                                     "allreduce * * ring\n"
                                     "allreduce * * halving_doubling memory=cuda\n"
                                     "allreduce * * binomial\n"
                                     "allreduce * * recursive_doubling\n");
    REQUIRE(t.ok());
    const std::vector<Rule>& r = t.rules;

    // Commutative: ring serves it. Rules of other collectives, and rules whose communicator
    // keys exclude the communicator (ranks 64-*: narrowed away by resolve), are not listed.
    std::vector<Verdict> trace;
    CHECK(choose({&r}, call(Collective::allreduce, 8, 1 * M), &trace) == &r[2]);
    REQUIRE(trace.size() == 1);
    CHECK(trace[0].rule == &r[2]);
    CHECK(trace[0].outcome == "chosen");

    // Not commutative: ring is passed over, the cuda rule does not match, binomial serves.
    Call nc = call(Collective::allreduce, 8, 1 * M);
    nc.commutative = false;
    trace.clear();
    CHECK(choose({&r}, nc, &trace) == &r[4]);
    REQUIRE(trace.size() == 3);
    CHECK(trace[0].rule == &r[2]);
    CHECK(trace[0].outcome == "matches, but ring cannot serve the call: the op is not commutative");
    CHECK(trace[1].rule == &r[3]);
    CHECK(trace[1].outcome == "does not match");
    CHECK(trace[2].rule == &r[4]);
    CHECK(trace[2].outcome == "chosen");

    // In cuda memory, halving_doubling also declines.
    nc.memory = MemoryKind::cuda;
    trace.clear();
    CHECK(choose({&r}, nc, &trace) == &r[4]);
    REQUIRE(trace.size() == 3);
    CHECK(trace[1].outcome == "matches, but halving_doubling cannot serve the call: the op is not commutative");

    // Nothing serves: every rule considered is in the trace, none chosen.
    const ParseResult only_ring = parse_body("allreduce * * ring\nallreduce * 0-4K pat\n");
    trace.clear();
    CHECK(choose({&only_ring.rules}, call(Collective::allreduce, 8, 1 * M), &trace) == &only_ring.rules[0]);
    trace.clear();
    nc = call(Collective::allreduce, 8, 100);
    nc.commutative = false;
    CHECK(choose({&only_ring.rules}, nc, &trace) == nullptr);
    REQUIRE(trace.size() == 2);
    CHECK(trace[0].outcome == "matches, but ring cannot serve the call: the op is not commutative");
    CHECK(trace[1].outcome == "matches, but pat cannot serve the call: the op is not commutative");

    // The trace runs across tables, in order.
    const ParseResult user = parse_body("allreduce * 0-4K ring\n");
    trace.clear();
    const Rule* chosen = choose({&user.rules, &default_rules()}, nc, &trace);
    REQUIRE(chosen != nullptr);
    REQUIRE(trace.size() >= 2);
    CHECK(trace[0].rule == &user.rules[0]);
    CHECK(trace[0].outcome == "matches, but ring cannot serve the call: the op is not commutative");
    CHECK(trace.back().rule == chosen);
    CHECK(trace.back().outcome == "chosen");
    CHECK(chosen->source.rfind("default:", 0) == 0);
    // A rule naming no registered algorithm (built by hand) is left out of the narrowed
    // table (resolve), so it never decides.
    std::vector<Rule> hand(1);
    hand[0].collective = Collective::allreduce;
    hand[0].algorithm = "no_such";
    trace.clear();
    CHECK(choose({&hand}, call(Collective::allreduce, 2, 0), &trace) == nullptr);
    CHECK(trace.empty());
}

TEST_CASE("rules: choose() returns a fallback rule, and consults no rule after it", "[rules]")
{
    const ParseResult t = parse_body("allreduce 2-8 0-256 fallback\n"
                                     "allreduce * * recursive_doubling\n");
    REQUIRE(t.ok());
    const std::vector<Rule>& r = t.rules;
    std::vector<Verdict> trace;
    CHECK(choose({&r, &default_rules()}, call(Collective::allreduce, 4, 8), &trace) == &r[0]);
    REQUIRE(trace.size() == 1);
    CHECK(trace[0].outcome == "chosen: hands the call to the next component");
    // A non-commutative op, which a ring would decline, is handed on all the same.
    Call nc = call(Collective::allreduce, 4, 256);
    nc.commutative = false;
    CHECK(choose({&r}, nc) == &r[0]);
    // Outside its ranges the next rule serves.
    CHECK(choose({&r}, call(Collective::allreduce, 4, 257)) == &r[1]);
    CHECK(choose({&r}, call(Collective::allreduce, 9, 8)) == &r[1]);
}

TEST_CASE("rules: lint treats a fallback rule as serving every call it matches", "[rules]")
{
    CHECK(warnings_of("allreduce * 0-1K fallback\n"
                      "allreduce 2-8 0-256 ring\n"
                      "allreduce * 1K-* ring\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // A fallback rule after one that covers it is shadowed like any other.
    CHECK(warnings_of("allreduce * * recursive_doubling\nallreduce * 0-1K fallback\n") ==
          std::vector<std::string>{
              "t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // The gaps check counts fallback rules as covering their sizes.
    CHECK(warnings_of("bcast * 0-1K fallback\nbcast * 1K-* binomial\n").empty());
}

// ---- the built-in defaults ---------------------------------------------------------------

TEST_CASE("rules: the embedded default table parses cleanly and lints clean", "[rules]")
{
    REQUIRE(default_rules_text().rfind("loom-rules 1", 0) == 0);
    const ParseResult r = parse(default_rules_text(), "default");
    INFO(Catch::Detail::stringify(texts(r.diagnostics)));
    CHECK(r.ok());
    CHECK(r.diagnostics.empty());
    const std::vector<Rule>& d = default_rules();
    REQUIRE(d.size() == r.rules.size());
    REQUIRE(!d.empty());
    for (std::size_t i = 0; i < d.size(); ++i) {
        CHECK(d[i].source == "default:" + std::to_string(d[i].line));
        CHECK(d[i].algorithm == r.rules[i].algorithm);
        CHECK((d[i].algorithm == kFallback || find_algorithm(d[i].collective, d[i].algorithm) != nullptr));
    }
    const auto warnings = texts(lint(d, "default"));
    INFO(Catch::Detail::stringify(warnings));
    CHECK(!mentions(warnings, "can never match"));
    CHECK(!mentions(warnings, "no rule covers"));
    // Every collective has default rules.
    for (int c = 0; c < kCollectiveCount; ++c) {
        INFO(to_string(Collective(c)));
        CHECK(std::any_of(d.begin(), d.end(), [&](const Rule& x) { return x.collective == Collective(c); }));
    }
}

TEST_CASE("rules: the defaults decide every call, order-preserving when the op is not commutative", "[rules]")
{
    // Every call gets an algorithm that can serve it, or a fallback rule's decision to hand it
    // to Open MPI; on one node, across nodes, and where the node count is unknown.
    const std::vector<const std::vector<Rule>*> tables = {&default_rules()};
    for (int c = 0; c < kCollectiveCount; ++c) {
        const Collective coll = Collective(c);
        const bool reduction = coll == Collective::allreduce || coll == Collective::reduce;
        for (int nodes : {0, 1, 2})
            for (std::uint64_t bytes : {std::uint64_t(0), std::uint64_t(1), 4 * K, 4 * K + 1, 256 * K, G})
                for (int ranks = 2; ranks <= 64; ++ranks) {
                    Call x = call(coll, ranks, bytes);
                    x.nodes = nodes;
                    x.ranks_per_node = nodes == 1 ? ranks : nodes == 2 ? (ranks + 1) / 2 : 0;
                    INFO("nodes=" << nodes);
                    const Rule* r = choose(tables, x);
                    if (r == nullptr) {
                        FAIL_CHECK("no default rule for " << to_string(coll) << " ranks=" << ranks
                                                          << " bytes=" << bytes);
                        continue;
                    }
                    if (r->algorithm != kFallback) {
                        const Algorithm* a = find_algorithm(coll, r->algorithm);
                        REQUIRE(a != nullptr);
                        CHECK(!why_not(*a, CallShape{ranks, bytes, true, nodes, x.ranks_per_node}));
                    }

                    x.commutative = false;
                    const Rule* n = choose(tables, x);
                    if (reduction && n == nullptr)
                        FAIL_CHECK("no default rule for non-commutative " << to_string(coll) << " ranks=" << ranks
                                                                          << " bytes=" << bytes);
                    if (n != nullptr && n->algorithm != kFallback) {
                        const Algorithm* na = find_algorithm(coll, n->algorithm);
                        REQUIRE(na != nullptr);
                        if (na->needs.commutative_op)
                            FAIL_CHECK(to_string(coll) << " ranks=" << ranks << " bytes=" << bytes << ": " << n->source
                                                       << " (" << n->algorithm << ") reorders a non-commutative op");
                    }
                }
    }
}

// ---- nearest -----------------------------------------------------------------------------

TEST_CASE("rules: nearest() finds close words, not far ones, and bounds long ones", "[rules]")
{
    const std::vector<std::string_view> algos = {"ring", "ring_pipelined", "halving_doubling", "recursive_doubling",
                                                 "pat",  "binomial"};
    CHECK(nearest("rnig", algos) == "ring");
    CHECK(nearest("ring", algos) == "ring");
    CHECK(nearest("rings", algos) == "ring");
    CHECK(nearest("ring_pipeline", algos) == "ring_pipelined");
    CHECK(nearest("halving-doubling", algos) == "halving_doubling");
    CHECK(nearest("recursive_dubling", algos) == "recursive_doubling");
    CHECK(nearest("binomal", algos) == "binomial");
    CHECK(nearest("PAT", algos) == ""); // three edits: too far for a 3-letter word
    CHECK(nearest("bruck", algos) == "");
    CHECK(nearest("scatter_allgather", algos) == "");
    CHECK(nearest("ring", {}) == "");
    // The threshold grows with the word: 2 edits, or a third of its length.
    CHECK(nearest("abcdefghi", {"abcxxxghi"}) == "abcxxxghi"); // 3 of 9
    CHECK(nearest("abcdefghi", {"abxxxxghi"}) == "");          // 4 of 9
    CHECK(nearest("ab", {"xy"}) == "xy");                      // 2
    CHECK(nearest("ab", {"xyz"}) == "");                       // 3
    // The closest candidate wins; ties go to the first.
    CHECK(nearest("bcasts", {"broadcast", "bcast"}) == "bcast");
    CHECK(nearest("abc", {"abd", "abe"}) == "abd");
    // Words longer than 64 bytes are never close (bounded work for hostile input).
    const std::string long64(64, 'a'), long65(65, 'a');
    CHECK(nearest(long64.substr(0, 63) + "b", {long64}) == long64);
    CHECK(nearest(long65, {long64}) == "");
    CHECK(nearest(std::string(1 << 20, 'x'), algos) == "");
}

TEST_CASE("start-up lints small user files and skips the quadratic lint on huge ones", "[rules]")
{
    const std::string path = "test-rules-lint-at-init.rules";
    auto write = [&](int rules) {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f != nullptr);
        std::fputs("loom-rules 1\n", f);
        for (int i = 0; i < rules; ++i) std::fprintf(f, "bcast %d * binomial\n", i + 2);
        std::fclose(f);
    };
    write(10);
    auto d = load_user_rules(path);
    CHECK(user_rules().size() == 10);
    for (const auto& x : d) CHECK(x.message.find("not linted") == std::string::npos);
    write(6000);
    d = load_user_rules(path);
    CHECK(user_rules().size() == 6000);
    REQUIRE(!d.empty());
    CHECK(d.back().to_string() == path + ": warning: 6000 rules: not linted at start-up (run loom-rules check)");
    load_user_rules("");
    CHECK(user_rules().empty());
    std::remove(path.c_str());
}

TEST_CASE("a communicator's rules are narrowed by its size, nodes and ranks per node", "[rules]")
{
    const std::string path = "test-rules-resolve.rules";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("loom-rules 1\n"
               "bcast 2-3 * scatter_allgather nodes=2\n"
               "bcast * * binomial ranks_per_node=3-*\n"
               "bcast 9-* * scatter_allgather\n",
               f);
    std::fclose(f);
    REQUIRE(load_user_rules(path).empty());

    const Resolved two_nodes = resolve(3, {"a", "b", "a"});
    CHECK(two_nodes.nodes == 2);
    CHECK(two_nodes.ranks_per_node == 2);
    const auto& bcast = two_nodes.candidates[std::size_t(Collective::bcast)];
    REQUIRE(!bcast.empty());
    CHECK(bcast.front().rule->line == 2); // nodes=2 kept; ranks_per_node=3-* and 9-* dropped
    CHECK(std::string(bcast.front().algorithm->name) == "scatter_allgather");
    CHECK(bcast[1].rule->source.rfind("default:", 0) == 0);
    const Candidate* c = choose_candidate(two_nodes, Call{Collective::bcast, 3, 100});
    REQUIRE(c != nullptr);
    CHECK(c->rule->line == 2);

    const Resolved one_node = resolve(3, {"a", "a", "a"});
    CHECK((one_node.nodes == 1 && one_node.ranks_per_node == 3));
    CHECK(one_node.candidates[std::size_t(Collective::bcast)].front().rule->line == 3);

    // No host names: nodes unknown, so rules with nodes keys are left out.
    const Resolved unknown = resolve(3, std::vector<std::string>{});
    CHECK((unknown.nodes == 0 && unknown.ranks_per_node == 0));
    CHECK(unknown.candidates[std::size_t(Collective::bcast)].front().rule->source.rfind("default:", 0) == 0);
    // A rank whose host Open MPI could not tell has a name of its own (coll_loom_comm.c): a
    // node of its own, never grouped with other such ranks.
    const Resolved lone = resolve(3, {"a", "unknown host of process 7.1", "unknown host of process 7.2"});
    CHECK((lone.nodes == 3 && lone.ranks_per_node == 1));

    load_user_rules("");
    std::remove(path.c_str());
}

TEST_CASE("rules: an shm rule serves one-node communicators only, the next rule the others", "[rules]")
{
    const ParseResult t = parse_body("allreduce * 0-64K shm\n"
                                     "allreduce * * recursive_doubling\n");
    REQUIRE(t.ok());
    const std::vector<Rule>& r = t.rules;
    Call c = call(Collective::allreduce, 4, 1024);
    c.nodes = 1;
    CHECK(choose({&r}, c) == &r[0]);
    c.nodes = 2;
    std::vector<Verdict> trace;
    CHECK(choose({&r}, c, &trace) == &r[1]);
    REQUIRE(!trace.empty());
    CHECK(trace[0].outcome.find("one node") != std::string::npos);
    c.nodes = 0; // unknown: never assume one node
    CHECK(choose({&r}, c) == &r[1]);
    const Algorithm* shm = find_algorithm(Collective::allreduce, "shm");
    REQUIRE(shm != nullptr);
    CHECK(why_not(*shm, CallShape{4, 1024, true, 1}) == std::nullopt);
    CHECK(why_not(*shm, CallShape{4, 1024, false, 1}).has_value()); // a non-commutative op
}

TEST_CASE("rules: lint does not call a rule after an shm rule shadowed, unless it is for one node only", "[rules]")
{
    CHECK(!mentions(warnings_of("bcast * 0-32K shm\nbcast 2 0-1K binomial\n"), "can never match"));
    CHECK(mentions(warnings_of("bcast * 0-32K shm\nbcast 2 0-1K binomial nodes=1\n"), "can never match"));
}

TEST_CASE("a fallback rule stays a candidate without an algorithm, and loom_choose declines for it", "[rules]")
{
    const TempFile f("loom-rules 1\n"
                     "allreduce * 0-1K fallback\n"
                     "allreduce * 1K-* ring\n");
    REQUIRE(load_user_rules(f.path.string()).empty());
    const std::string source = f.path.string() + ":2";

    const Resolved table = resolve(3, {"a", "a", "a"});
    const auto& allreduce = table.candidates[std::size_t(Collective::allreduce)];
    REQUIRE(allreduce.size() >= 2);
    CHECK(allreduce[0].rule->line == 2);
    CHECK(allreduce[0].algorithm == nullptr);
    const Candidate* c = choose_candidate(table, call(Collective::allreduce, 3, 8));
    REQUIRE(c != nullptr);
    CHECK(c == &allreduce[0]);
    CHECK(c->algorithm == nullptr);
    CHECK(c->rule->is_fallback());
    c = choose_candidate(table, call(Collective::allreduce, 3, 2 * K));
    REQUIRE(c != nullptr);
    REQUIRE(c->algorithm != nullptr);
    CHECK(std::string(c->algorithm->name) == "ring");

    // Through the C entry point, as the component calls it: 8 bytes (one double) are
    // declined, naming the rule; 2 KiB are served by the ring.
    void* resolved = loom_rules_resolve(3, nullptr);
    REQUIRE(resolved != nullptr);
    loom_call_t lc{};
    lc.coll = LOOM_COLL_ALLREDUCE;
    lc.count = 1;
    lc.op = loom_reduction_t{8, 1, nullptr, nullptr, nullptr};
    const char* why = nullptr;
    const char* rule = nullptr;
    CHECK(loom_choose(&lc, 3, "", resolved, &why, &rule) == nullptr);
    REQUIRE(why != nullptr);
    CHECK(std::string(why) == "rule " + source + " hands it to the next component (fallback)");
    REQUIRE(rule != nullptr);
    CHECK(std::string(rule) == source);
    lc.count = 256;
    const char* algorithm = loom_choose(&lc, 3, "", resolved, &why, &rule);
    REQUIRE(algorithm != nullptr);
    CHECK(std::string(algorithm) == "ring");
    CHECK(std::string(rule) == f.path.string() + ":3");
    // A forced algorithm is not overridden by a fallback rule.
    lc.count = 1;
    algorithm = loom_choose(&lc, 3, "recursive_doubling", resolved, &why, &rule);
    REQUIRE(algorithm != nullptr);
    CHECK(std::string(algorithm) == "recursive_doubling");
    // Forced to fallback (coll_loom_<collective>_algorithm=fallback): every call is handed on,
    // also one a rule would serve, and it says so.
    lc.count = 256;
    CHECK(loom_choose(&lc, 3, LOOM_FORCED_FALLBACK, resolved, &why, &rule) == nullptr);
    CHECK(std::string(why) == "forced to fallback: every call goes to the next component");
    CHECK(std::string(rule) == "forced");
    // ... except where handing on would change the answer (Open MPI 4.1's saturating 8/16-bit
    // SUM): the rules decide, as for any forced algorithm that cannot serve such a call.
    lc.keep_from_open_mpi = 1;
    algorithm = loom_choose(&lc, 3, LOOM_FORCED_FALLBACK, resolved, &why, &rule);
    REQUIRE(algorithm != nullptr);
    CHECK(std::string(algorithm) == "ring");
    loom_rules_release(resolved);

    load_user_rules("");
}

TEST_CASE("rules: kept=yes matches only calls loom keeps from Open MPI, and a fallback rule does not shadow it",
          "[rules]")
{
    // libnbc's non-blocking neighbor_alltoall on a periodic Cartesian dimension of 1 or 2 ranks: the
    // glue keeps it (fallback passed over), and the kept=yes rule serves it; other calls go on.
    const ParseResult t = parse("loom-rules 1\nneighbor_alltoall * * linear kept=yes\nneighbor_alltoall * * fallback\n",
                                "t.rules");
    REQUIRE(t.ok());
    CHECK(lint(t.rules, "t.rules").empty());
    Call x = call(Collective::neighbor_alltoall, 4, 0);
    CHECK(choose({&t.rules}, x) == &t.rules[1]);
    x.fallback_allowed = false;
    CHECK(choose({&t.rules}, x) == &t.rules[0]);
    CHECK(matches(t.rules[0], x));
    x.fallback_allowed = true;
    CHECK(!matches(t.rules[0], x));
}

TEST_CASE("rules: the topology keys match the neighbourhood's shape, a degree only where every rank knows it",
          "[rules]")
{
    const ParseResult t = parse("loom-rules 1\n"
                                "neighbor_alltoall * * shm topology=cartesian ndims=2\n"
                                "neighbor_alltoall * * linear degree=8-*\n"
                                "neighbor_alltoall * * shm topology=dist_graph\n"
                                "neighbor_alltoall * * fallback\n",
                                "t.rules");
    REQUIRE(t.ok());
    CHECK(lint(t.rules, "t.rules").empty());
    Call x = call(Collective::neighbor_alltoall, 4, 0);
    x.nodes = 1; // shm serves one node
    x.ranks_per_node = 4;
    x.topology = TopologyShape::cartesian;
    x.ndims = 2;
    x.degree = 4;
    CHECK(choose({&t.rules}, x) == &t.rules[0]);
    x.ndims = 1; // a ring: degree 2, neither ndims=2 nor degree=8-*
    x.degree = 2;
    CHECK(choose({&t.rules}, x) == &t.rules[3]);
    x.topology = TopologyShape::graph;
    x.ndims = 0;
    x.degree = 8;
    CHECK(choose({&t.rules}, x) == &t.rules[1]);
    CHECK(!matches(t.rules[0], x)); // ndims= matches a Cartesian grid only
    x.topology = TopologyShape::dist_graph;
    x.degree = 0; // no degree every rank knows: degree=8-* does not match
    CHECK(choose({&t.rules}, x) == &t.rules[2]);
    CHECK(!matches(t.rules[1], x));
    x.topology = TopologyShape::none;
    CHECK(choose({&t.rules}, x) == &t.rules[3]);
}

TEST_CASE("rules: a fallback rule is passed over for a reduction Open MPI's own kernel gets wrong", "[rules]")
{
    // loom serves such a call (a SUM on 8- or 16-bit integers, which Open MPI 4.1's AVX op
    // saturates) with the next rule instead of handing it on and changing the answer.
    const ParseResult t =
        parse("loom-rules 1\nallreduce * 0-1K fallback\nallreduce * * recursive_doubling\n", "t.rules");
    REQUIRE(t.ok());
    Call x = call(Collective::allreduce, 4, 64);
    CHECK(choose({&t.rules}, x) == &t.rules[0]);
    x.fallback_allowed = false;
    std::vector<Verdict> trace;
    CHECK(choose({&t.rules}, x, &trace) == &t.rules[1]);
    REQUIRE(trace.size() == 2);
    CHECK(trace[0].outcome == "matches, but fallback is passed over: " + std::string(kFallbackRefused));

    const std::string path = "/tmp/loom-fallback-refused-" + std::to_string(::getpid()) + ".rules";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("loom-rules 1\nallreduce * 0-1K fallback\nallreduce * * recursive_doubling\n", f);
    std::fclose(f);
    REQUIRE(load_user_rules(path).empty());
    const Resolved r = resolve(4, {});
    const Candidate* c = choose_candidate(r, x);
    REQUIRE(c != nullptr);
    REQUIRE(c->algorithm != nullptr);
    CHECK(std::string(c->algorithm->name) == "recursive_doubling");
    x.fallback_allowed = true;
    c = choose_candidate(r, x);
    REQUIRE(c != nullptr);
    CHECK(c->algorithm == nullptr);
    load_user_rules("");
    std::remove(path.c_str());
}

// ---- hierarchical algorithms: leaders= and the leaders' table ------------------------------

TEST_CASE("rules: leaders= names a flat algorithm for a hierarchical rule only", "[rules]")
{
    const ParseResult good = parse_body("allreduce * * hierarchical leaders=ring nodes=2-*\n");
    REQUIRE(good.ok());
    CHECK(good.rules[0].leaders == "ring");
    CHECK(
        only_error("allreduce * * ring leaders=ring\n") ==
        "t.rules:2:20: error: leaders= names what a hierarchical algorithm's node leaders run; 'ring' has no leaders");
    CHECK(only_error("allreduce * * hierarchical leaders=rnig\n") ==
          "t.rules:2:36: error: no flat allreduce algorithm 'rnig'; did you mean 'ring'?");
    CHECK(only_error("bcast * * hierarchical leaders=hierarchical\n") ==
          "t.rules:2:32: error: leaders must run a flat algorithm, not 'hierarchical'");
    CHECK(only_error("bcast * * fallback leaders=binomial\n").find("fallback takes no options") != std::string::npos);
}

TEST_CASE("a communicator on several nodes carries the leaders' rules; hierarchical calls get a leaders' algorithm",
          "[rules]")
{
    const Resolved two_nodes = resolve(4, {"a", "a", "b", "b"});
    REQUIRE(two_nodes.leaders != nullptr);
    CHECK(two_nodes.leaders->ranks == 2);
    CHECK(two_nodes.leaders->nodes == 2);
    CHECK(two_nodes.leaders->ranks_per_node == 1);
    CHECK(two_nodes.leaders->leaders == nullptr); // one rank per node: no further level
    CHECK(resolve(4, {"a", "a", "a", "a"}).leaders == nullptr);
    CHECK(resolve(2, {"a", "b"}).leaders == nullptr);

    // Forced hierarchical: the leaders run the table's choice for 2 ranks on 2 nodes.
    const char* hosts[] = {"a", "a", "b", "b"};
    void* resolved = loom_rules_resolve(4, hosts);
    REQUIRE(resolved != nullptr);
    std::vector<std::size_t> none;
    loom_call_t call{};
    call.coll = LOOM_COLL_ALLREDUCE;
    call.count = 1000;
    REQUIRE(loom_find_kernel(LOOM_OP_SUM, LOOM_TYPE_INT32, &call.op));
    const char* why = nullptr;
    REQUIRE(loom_choose(&call, 4, "hierarchical", resolved, &why, nullptr) != nullptr);
    const auto* leaders = static_cast<const Algorithm*>(call.leaders);
    REQUIRE(leaders != nullptr);
    CHECK(leaders->collective == Collective::allreduce);
    CHECK_FALSE(leaders->needs.topology);
    CHECK_FALSE(leaders->needs.same_node);

    // A rule's leaders= wins.
    const std::string path = "test-rules-leaders.rules";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("loom-rules 1\nallreduce * * hierarchical leaders=pat nodes=2-*\n", f);
    std::fclose(f);
    REQUIRE(load_user_rules(path).empty());
    void* with_rule = loom_rules_resolve(4, hosts);
    loom_call_t by_rule = call;
    by_rule.leaders = nullptr;
    const char* rule = nullptr;
    REQUIRE(loom_choose(&by_rule, 4, "", with_rule, &why, &rule) == std::string("hierarchical"));
    CHECK(std::string(rule) == path + ":2");
    REQUIRE(by_rule.leaders != nullptr);
    CHECK(static_cast<const Algorithm*>(by_rule.leaders)->name == "pat");
    // Without known nodes (no host names) the rule cannot serve: the next one does.
    void* unknown = loom_rules_resolve(4, nullptr);
    loom_call_t no_nodes = call;
    REQUIRE(loom_choose(&no_nodes, 4, "", unknown, &why, &rule) != std::string("hierarchical"));
    loom_rules_release(unknown);
    loom_rules_release(with_rule);
    loom_rules_release(resolved);
    load_user_rules("");
    std::remove(path.c_str());
}

TEST_CASE("rules: phase= keeps a rule to a call's own choice or to a hierarchical call's leaders", "[rules]")
{
    // 4 ranks on 2 nodes, and their leaders' communicator (2 nodes of one rank). The first rule
    // answers only whole calls of one rank per node, the second only the leaders' question, the
    // third both: a whole 2 x 1 call gets bcube, the leaders of a 2 x 2 hierarchical call pat.
    const TempFile f("loom-rules 1\n"
                     "allreduce 2 * bcube nodes=2 ranks_per_node=1 phase=call\n"
                     "allreduce 2 * pat nodes=2 ranks_per_node=1 phase=leaders\n"
                     "allreduce 2 * ring nodes=2 ranks_per_node=1\n"
                     "allreduce 4 * hierarchical nodes=2\n");
    for (const Diagnostic& d : load_user_rules(f.path.string())) REQUIRE(d.severity != Diagnostic::Severity::error);
    auto chosen = [](int ranks, const std::vector<const char*>& hosts, const char** leaders) {
        void* resolved = loom_rules_resolve(ranks, hosts.data());
        REQUIRE(resolved != nullptr);
        loom_call_t call{};
        call.coll = LOOM_COLL_ALLREDUCE;
        call.count = 1000;
        REQUIRE(loom_find_kernel(LOOM_OP_SUM, LOOM_TYPE_INT32, &call.op));
        const char* why = nullptr;
        const char* rule = nullptr;
        const char* name = loom_choose(&call, ranks, "", resolved, &why, &rule);
        *leaders = call.leaders != nullptr ? static_cast<const Algorithm*>(call.leaders)->name.data() : "";
        loom_rules_release(resolved);
        return std::string(name != nullptr ? name : "(declined)");
    };
    const char* leaders = nullptr;
    CHECK(chosen(2, {"a", "b"}, &leaders) == "bcube");
    CHECK(chosen(4, {"a", "a", "b", "b"}, &leaders) == "hierarchical");
    CHECK(std::string(leaders) == "pat");

    // Without the phase=leaders rule the leaders pass the phase=call rule over to the next one.
    const TempFile g("loom-rules 1\n"
                     "allreduce 2 * bcube nodes=2 ranks_per_node=1 phase=call\n"
                     "allreduce 2 * ring nodes=2 ranks_per_node=1\n"
                     "allreduce 4 * hierarchical nodes=2\n");
    for (const Diagnostic& d : load_user_rules(g.path.string())) REQUIRE(d.severity != Diagnostic::Severity::error);
    CHECK(chosen(4, {"a", "a", "b", "b"}, &leaders) == "hierarchical");
    CHECK(std::string(leaders) == "ring");
    load_user_rules("");

    // The key round-trips, and rules that could never be asked the leaders' question are errors.
    const ParseResult good = parse_body("allreduce 3 1K-64K recursive_doubling nodes=3 ranks_per_node=1 phase=call\n");
    REQUIRE(good.rules.size() == 1);
    CHECK(good.rules[0].phase == Phase::call);
    CHECK(rule_fields(good.rules[0]).back().find("phase=call") != std::string::npos);
    CHECK(only_error("allreduce * * ring phase=lead\n").find("phase must be 'call'") != std::string::npos);
    CHECK(only_error("allreduce * * fallback phase=leaders\n").find("cannot be handed") != std::string::npos);
    CHECK(only_error("barrier * * bruck phase=leaders\n").find("no hierarchical algorithm") != std::string::npos);
    CHECK(only_error("allreduce * * ring ranks_per_node=2-* phase=leaders\n").find("ranks_per_node 1") !=
          std::string::npos);
    // phase=call and phase=leaders rules do not shadow each other.
    const ParseResult both = parse_body("allreduce * * ring phase=call\nallreduce * * pat phase=leaders\n");
    CHECK(lint(both.rules, "t.rules").size() == lint(parse_body("allreduce * * ring\n").rules, "t.rules").size());
}

TEST_CASE("rules: a hierarchical_seg call's leaders are chosen for the bytes of one segment", "[rules]")
{
    // The leaders' table: ring below 512 KiB, pat from 512 KiB (2 nodes of one rank).
    const TempFile f("loom-rules 1\n"
                     "allreduce 2 0-524287 ring nodes=2 ranks_per_node=1\n"
                     "allreduce 2 512K-* pat nodes=2 ranks_per_node=1\n"
                     "allgather 2 0-524287 ring nodes=2 ranks_per_node=1\n"
                     "allgather 2 512K-* pat nodes=2 ranks_per_node=1\n"
                     "allreduce 4 0-1048576 hierarchical_seg nodes=2\n"
                     "allreduce 4 * hierarchical_seg segment=1M nodes=2\n"
                     "allgather 4 * hierarchical_seg nodes=2\n");
    for (const Diagnostic& d : load_user_rules(f.path.string())) REQUIRE(d.severity != Diagnostic::Severity::error);
    // Through the glue's entry: an allreduce of 1 MiB (262144 int32) on 2 nodes of 2 ranks runs
    // the leaders on segments of coll_loom_segment_size (256 KiB by default): ring. With 1 MiB
    // segments they move the whole message: pat.
    auto leaders_of = [](std::size_t count) {
        const std::vector<const char*> hosts{"a", "a", "b", "b"};
        void* resolved = loom_rules_resolve(4, hosts.data());
        REQUIRE(resolved != nullptr);
        loom_call_t call{};
        call.coll = LOOM_COLL_ALLREDUCE;
        call.count = count;
        REQUIRE(loom_find_kernel(LOOM_OP_SUM, LOOM_TYPE_INT32, &call.op));
        const char* why = nullptr;
        const char* rule = nullptr;
        REQUIRE(loom_choose(&call, 4, "", resolved, &why, &rule) == std::string("hierarchical_seg"));
        loom_rules_release(resolved);
        REQUIRE(call.leaders != nullptr);
        return std::string(static_cast<const Algorithm*>(call.leaders)->name);
    };
    CHECK(leaders_of(262144) == "ring");
    {
        // Process-wide: put back at 0 however the block ends (a failed REQUIRE throws), so that
        // no later test case runs with it set.
        struct SegmentSize {
            SegmentSize() { loom_rules_set_segment_size(std::size_t(1) << 20); }
            ~SegmentSize() { loom_rules_set_segment_size(0); }
        } one_mib;
        CHECK(leaders_of(262144) == "pat");
    }
    // A rule's segment= wins over the parameter: 2 MiB in segments of 1 MiB.
    CHECK(leaders_of(524288) == "pat");

    // allgather: a segment of every node's part, 2 x 256 KiB of a 1 MiB allgather: pat; with
    // 128 KiB segments 2 x 128 KiB: ring. (Unsegmented, the leaders would move all of 1 MiB.)
    CallFacts g;
    g.collective = Collective::allgather;
    g.bytes = std::uint64_t(1) << 20;
    g.ranks = 4;
    g.nodes = 2;
    g.ranks_per_node = 2;
    const auto tables = resolved_for(4, 2, 2);
    const Decision d = decide(g, *tables);
    REQUIRE(d.algorithm != nullptr);
    CHECK(d.algorithm->name == "hierarchical_seg");
    REQUIRE(d.leaders != nullptr);
    CHECK(d.leaders->name == "pat");
    g.segment_size = 128 << 10;
    CHECK(decide(g, *tables).leaders->name == "ring");
    load_user_rules("");
}

namespace {
// loom_choose on an allreduce of `count` 8-byte elements (commutative) on 3 ranks, with the
// communicator's segment and single-copy state and the buffers' memory kind: the algorithm's
// name or "(declined)", and whether it wants the segment.
loom_call_t allreduce_call(std::size_t count, int segment, int single_copy, int memory = LOOM_MEMORY_HOST)
{
    loom_call_t lc{};
    lc.coll = LOOM_COLL_ALLREDUCE;
    lc.count = count;
    lc.op = loom_reduction_t{8, 1, nullptr, nullptr, nullptr};
    lc.segment = segment;
    lc.single_copy = single_copy;
    lc.memory = memory;
    return lc;
}

std::pair<std::string, int> choose_allreduce(void* resolved, std::size_t count, int segment, int single_copy,
                                             int memory, const char* forced, const char** why)
{
    loom_call_t lc = allreduce_call(count, segment, single_copy, memory);
    const char* rule = nullptr;
    const char* chosen = loom_choose(&lc, 3, forced, resolved, why, &rule);
    return {std::string(chosen != nullptr ? chosen : "(declined)"), lc.wants_segment};
}
} // namespace

TEST_CASE("loom_choose: algorithms that need a shared segment wait for one, and say they want it", "[rules]")
{
    const TempFile f("loom-rules 1\n"
                     "allreduce * 0-1K shm\n"
                     "allreduce * 0-1K recursive_doubling\n");
    for (const Diagnostic& d : load_user_rules(f.path.string())) REQUIRE(d.severity != Diagnostic::Severity::error);
    const char* hosts[] = {"a", "a", "a"};
    void* resolved = loom_rules_resolve(3, hosts);
    REQUIRE(resolved != nullptr);
    auto choose_with = [&](int segment, const char* forced, const char** why = nullptr) {
        return choose_allreduce(resolved, 1, segment, LOOM_SINGLE_COPY_ON, LOOM_MEMORY_HOST, forced, why);
    };
    // The segment is there: the shm rule serves.
    CHECK(choose_with(LOOM_SEGMENT_READY, "") == std::pair{std::string("shm"), 0});
    // Not yet: the next rule serves, and the glue hears that shm was wanted (it counts such
    // calls and makes the segment once they pay back).
    CHECK(choose_with(LOOM_SEGMENT_NOT_YET, "") == std::pair{std::string("recursive_doubling"), 1});
    // Never (it could not be had): the next rule, and nothing to want.
    CHECK(choose_with(LOOM_SEGMENT_NONE, "") == std::pair{std::string("recursive_doubling"), 0});
    // Forced shm: declined until there is a segment, and wanted at once while there may be one.
    const char* why = nullptr;
    CHECK(choose_with(LOOM_SEGMENT_NOT_YET, "shm", &why) == std::pair{std::string("(declined)"), 1});
    CHECK(choose_with(LOOM_SEGMENT_NONE, "shm", &why) == std::pair{std::string("(declined)"), 0});
    REQUIRE(why != nullptr);
    CHECK(std::string(why) == kNoSegment);
    CHECK(choose_with(LOOM_SEGMENT_READY, "shm") == std::pair{std::string("shm"), 0});
    // An algorithm that needs no segment does not care.
    CHECK(choose_with(LOOM_SEGMENT_NONE, "ring") == std::pair{std::string("ring"), 0});
    loom_rules_release(resolved);
    load_user_rules("");
}

TEST_CASE("loom_choose: with the segment pending, shm serves with a stand-in that never hands on", "[rules]")
{
    // 0-1K: shm, else recursive_doubling; 1K-4K: shm, else hand on, else ring;
    // 4K-64K: shm, else hand on (and nothing else in the user table: the built-in one follows).
    const TempFile f("loom-rules 1\n"
                     "allreduce * 0-1K shm\n"
                     "allreduce * 0-1K recursive_doubling\n"
                     "allreduce * 1K-4095 shm\n"
                     "allreduce * 1K-4095 fallback\n"
                     "allreduce * 1K-4095 ring segment=2K\n"
                     "allreduce * 4K-64K fallback\n");
    for (const Diagnostic& d : load_user_rules(f.path.string())) REQUIRE(d.severity != Diagnostic::Severity::error);
    const char* hosts[] = {"a", "a", "a"};
    void* resolved = loom_rules_resolve(3, hosts);
    REQUIRE(resolved != nullptr);
    auto pending = [&](std::size_t count, const char* forced = "") {
        loom_call_t lc = allreduce_call(count, LOOM_SEGMENT_PENDING, LOOM_SINGLE_COPY_OFF);
        lc.form = LOOM_FORM_NONBLOCKING;
        const char* why = nullptr;
        const char* chosen = loom_choose(&lc, 3, forced, resolved, &why, nullptr);
        const auto* stand_in = static_cast<const Algorithm*>(lc.stand_in.algorithm);
        return std::tuple{std::string(chosen != nullptr ? chosen : "(declined)"),
                          std::string(stand_in != nullptr ? stand_in->name : "-"), lc.stand_in.segment_bytes,
                          lc.wants_segment};
    };
    // As with the segment there, and the decision without one stands in.
    CHECK(pending(1) == std::tuple{std::string("shm"), std::string("recursive_doubling"), std::size_t(0), 0});
    // Without a segment this size is handed on: a call cannot be handed on once made, so the
    // next rule that names an algorithm stands in, with its options.
    CHECK(pending(256) == std::tuple{std::string("shm"), std::string("ring"), std::size_t(2048), 0});
    // Forced shm: the same; the rules pick the stand-in.
    CHECK(pending(1, "shm") == std::tuple{std::string("shm"), std::string("recursive_doubling"), std::size_t(0), 0});
    // An algorithm that needs no segment needs no stand-in.
    CHECK(pending(1, "ring") == std::tuple{std::string("ring"), std::string("-"), std::size_t(0), 0});
    // The same rules over a segment that is there or not: no stand-in.
    loom_call_t lc = allreduce_call(1, LOOM_SEGMENT_READY, LOOM_SINGLE_COPY_OFF);
    REQUIRE(loom_choose(&lc, 3, "", resolved, nullptr, nullptr) == std::string("shm"));
    CHECK(lc.stand_in.algorithm == nullptr);
    loom_rules_release(resolved);
    load_user_rules("");
}

// Tables with only an shm rule (t:1) and a fallback rule (t:2) for collective c, nothing else
// for it in any table, and a non-blocking call of c on 3 ranks of one node decided while the
// segment is being set up.
namespace {
struct ShmThenHandOn {
    Resolved tables;
    Rule shm_rule, hand_on;
    Collective c;

    explicit ShmThenHandOn(Collective collective) : c(collective)
    {
        shm_rule.collective = hand_on.collective = c;
        shm_rule.algorithm = "shm";
        shm_rule.source = "t:1";
        hand_on.source = "t:2";
        tables.candidates[std::size_t(c)] = {{&shm_rule, find_algorithm(c, "shm")}, {&hand_on, nullptr}};
    }
    CallFacts pending_call() const
    {
        CallFacts f;
        f.collective = c;
        f.ranks = 3;
        f.nodes = 1;
        f.ranks_per_node = 3;
        f.form = Form::nonblocking;
        f.segment = SegmentState::pending;
        return f;
    }
};
} // namespace

TEST_CASE("decide: with the segment pending and no rule to stand in, the registry's first algorithm stands in",
          "[rules]")
{
    ShmThenHandOn t(Collective::barrier);
    const Resolved& tables = t.tables;
    CallFacts f = t.pending_call();
    // The first barrier the registry lists that needs no segment and reads no leaders.
    const Algorithm* first = nullptr;
    for (const Algorithm& a : all_algorithms())
        if (a.collective == Collective::barrier && !a.needs.segment && !a.needs.same_node && !a.reads.leaders) {
            first = &a;
            break;
        }
    REQUIRE(first != nullptr);
    const Decision d = decide(f, tables);
    CHECK(d.algorithm == find_algorithm(Collective::barrier, "shm")); // as with the segment there
    CHECK(d.stand_in.algorithm == first);
    CHECK(std::string(d.stand_in.source) == kRegistryStandIn);
    CHECK(std::string(d.source) == "t:1");
    // Without a segment, and with it there, the rules decide alone: handed on, and shm.
    f.segment = SegmentState::none;
    CHECK(decide(f, tables).algorithm == nullptr);
    f.segment = SegmentState::ready;
    CHECK(decide(f, tables).algorithm == find_algorithm(Collective::barrier, "shm"));
}

TEST_CASE("decide: a neighbourhood call on shm with the segment pending has linear to stand in, with no rule naming it",
          "[rules]")
{
    // What the built-in table's neighbor_allgather(v) kept=yes rows once did: a non-blocking
    // call decided while the segment is set up waits for it instead of being handed on.
    ShmThenHandOn t(Collective::neighbor_allgather);
    const Decision d = decide(t.pending_call(), t.tables);
    CHECK(d.algorithm == find_algorithm(Collective::neighbor_allgather, "shm"));
    REQUIRE(d.stand_in.algorithm != nullptr);
    CHECK(d.stand_in.algorithm->name == "linear");
}

TEST_CASE("loom_choose: cma needs the segment and single copy on, and host memory", "[rules]")
{
    const TempFile f("loom-rules 1\n"
                     "allreduce * 1M-* cma\n"
                     "allreduce * 1M-* ring\n");
    for (const Diagnostic& d : load_user_rules(f.path.string())) REQUIRE(d.severity != Diagnostic::Severity::error);
    const char* hosts[] = {"a", "a", "a"};
    void* resolved = loom_rules_resolve(3, hosts);
    REQUIRE(resolved != nullptr);
    auto choose_with = [&](int segment, int single_copy, int memory, const char* forced, const char** why = nullptr) {
        return choose_allreduce(resolved, 1 << 20, segment, single_copy, memory, forced, why);
    };
    const int on = LOOM_SINGLE_COPY_ON, off = LOOM_SINGLE_COPY_OFF, host = LOOM_MEMORY_HOST, cuda = LOOM_MEMORY_CUDA;
    CHECK(choose_with(LOOM_SEGMENT_READY, on, host, "") == std::pair{std::string("cma"), 0});
    // No segment yet: wanted (single copy is settled when it is set up), the next rule serves.
    CHECK(choose_with(LOOM_SEGMENT_NOT_YET, off, host, "") == std::pair{std::string("ring"), 1});
    // The segment's probe said no (a rank refused, or coll_loom_single_copy 0): the next rule,
    // nothing more to want; the same for device buffers.
    CHECK(choose_with(LOOM_SEGMENT_READY, off, host, "") == std::pair{std::string("ring"), 0});
    CHECK(choose_with(LOOM_SEGMENT_READY, on, cuda, "") == std::pair{std::string("ring"), 0});
    // Forced: handed on, saying why.
    const char* why = nullptr;
    CHECK(choose_with(LOOM_SEGMENT_READY, off, host, "cma", &why) == std::pair{std::string("(declined)"), 0});
    REQUIRE(why != nullptr);
    CHECK(std::string(why) == kNoSingleCopy);
    CHECK(choose_with(LOOM_SEGMENT_READY, on, host, "cma") == std::pair{std::string("cma"), 0});
    loom_rules_release(resolved);
    load_user_rules("");
}

TEST_CASE("rules: tables are narrowed once per communicator shape and shared", "[rules]")
{
    load_user_rules("");
    const auto a = resolved_for(4, 1, 4), b = resolved_for(4, 1, 4), c = resolved_for(4, 2, 2);
    CHECK(a.get() == b.get());
    CHECK(a.get() != c.get());
    CHECK(c->leaders != nullptr);
    CHECK(c->leaders.get() == resolved_for(2, 2, 1).get());
    // New user rules start afresh; tables handed out before stay valid.
    const TempFile f("loom-rules 1\nallreduce 4 * ring\n");
    REQUIRE(load_user_rules(f.path.string()).empty());
    const auto d = resolved_for(4, 1, 4);
    CHECK(d.get() != a.get());
    CHECK(d->candidates[std::size_t(Collective::allreduce)].size() ==
          a->candidates[std::size_t(Collective::allreduce)].size() + 1);
    load_user_rules("");
}

TEST_CASE("rules: a stencil is agreed only where a rule or forced parameter may choose combining", "[rules]")
{
    // The glue's allreduce that makes a graph communicator's ranks agree on a stencil runs only
    // where loom_rules_may_need_stencil says an algorithm needing one may serve.
    std::vector<const char*> forced(kCollectiveCount, "");
    void* resolved = loom_rules_resolve_shape(9, 1, 9);
    REQUIRE(resolved != nullptr);
    CHECK(loom_rules_may_need_stencil(resolved, forced.data()) == 0); // the built-in table names none
    CHECK(loom_rules_may_need_stencil(nullptr, nullptr) == 0);
    forced[std::size_t(Collective::neighbor_alltoall)] = "linear";
    CHECK(loom_rules_may_need_stencil(resolved, forced.data()) == 0);
    forced[std::size_t(Collective::neighbor_alltoall)] = "combining";
    CHECK(loom_rules_may_need_stencil(resolved, forced.data()) == 1);
    CHECK(loom_rules_may_need_stencil(nullptr, forced.data()) == 1);
    forced[std::size_t(Collective::neighbor_alltoall)] = "";
    loom_rules_release(resolved);

    // A rule naming it counts where it applies to the communicator, not elsewhere.
    const TempFile f("loom-rules 1\n"
                     "ineighbor_allgather 9-16 * combining topology=graph\n");
    REQUIRE(load_user_rules(f.path.string()).empty());
    resolved = loom_rules_resolve_shape(9, 1, 9);
    REQUIRE(resolved != nullptr);
    CHECK(loom_rules_may_need_stencil(resolved, forced.data()) == 1);
    loom_rules_release(resolved);
    resolved = loom_rules_resolve_shape(8, 1, 8);
    REQUIRE(resolved != nullptr);
    CHECK(loom_rules_may_need_stencil(resolved, forced.data()) == 0);
    loom_rules_release(resolved);
    load_user_rules("");
}

// MPI-4's large-count calls: the message size (message_bytes, count x element size, or the sum of
// the counts) and the chooser's byte ranges are 64-bit end to end, through the C entry points the
// glue calls. A 32-bit size anywhere would choose 2^32 bytes as if it were 0.
TEST_CASE("loom_choose: message sizes above 2 and 4 GiB choose by 64-bit byte ranges", "[rules]")
{
    const TempFile f("loom-rules 1\n"
                     "allreduce * 0-2147483647 binomial\n"
                     "allreduce * 2G-4294967295 recursive_doubling\n"
                     "allreduce * 4G-8G halving_doubling\n"
                     "allreduce * 8589934593-1T ring\n"
                     "allreduce * 1T-* pat\n"
                     "reduce_scatter_block * 4G-* pat\n"
                     "reduce_scatter_block * * ring\n"
                     "allgatherv * 4G-* bruck\n"
                     "allgatherv * * ring\n"
                     "alltoall * 4G-* pairwise\n"
                     "alltoall * * bruck\n"
                     "bcast * 4G-* scatter_allgather\n"
                     "bcast * * binomial\n");
    REQUIRE(load_user_rules(f.path.string()).empty());
    void* resolved = loom_rules_resolve(3, nullptr);
    REQUIRE(resolved != nullptr);
    auto choose = [&](loom_call_t lc) {
        const char *why = nullptr, *rule = nullptr;
        const char* algorithm = loom_choose(&lc, 3, "", resolved, &why, &rule);
        return std::string(algorithm != nullptr ? algorithm : "(none)");
    };
    auto allreduce = [](std::size_t count, std::size_t elem) {
        loom_call_t lc{};
        lc.coll = LOOM_COLL_ALLREDUCE;
        lc.count = count;
        lc.op = loom_reduction_t{elem, 1, nullptr, nullptr, nullptr};
        return lc;
    };
    const std::size_t two31 = std::size_t(1) << 31, two32 = std::size_t(1) << 32;
    struct Case {
        std::size_t count, elem, bytes;
        const char* algorithm;
    };
    for (const Case& c : std::vector<Case>{
             {two31 - 1, 1, two31 - 1, "binomial"},
             {two31, 1, two31, "recursive_doubling"},
             {two31 + 5, 1, two31 + 5, "recursive_doubling"}, // more than 2^31 elements
             {two32 - 1, 1, two32 - 1, "recursive_doubling"},
             {two32, 1, two32, "halving_doubling"},
             {two32 + 1, 1, two32 + 1, "halving_doubling"},
             {two31 + 3, 2, 2 * two31 + 6, "halving_doubling"},
             {std::size_t(1) << 30, 8, 8 * G, "halving_doubling"},
             {(std::size_t(1) << 30) + 1, 8, 8 * G + 8, "ring"},
             {two31 + 3, 4, 8 * G + 12, "ring"}, // more than 2^31 elements of 4 bytes
             {std::size_t(1) << 37, 8, T, "ring"},
             {(std::size_t(1) << 37) + 1, 8, T + 8, "pat"},
         }) {
        INFO("count " << c.count << " of " << c.elem << " bytes");
        const loom_call_t lc = allreduce(c.count, c.elem);
        CHECK(loom_message_bytes(&lc, 3) == c.bytes);
        CHECK(choose(lc) == c.algorithm);
    }

    // The sum of the counts (reduce_scatter_block: elements; allgatherv: bytes).
    std::size_t counts[3];
    loom_call_t rs{};
    rs.coll = LOOM_COLL_REDUCE_SCATTER_BLOCK;
    rs.counts = counts;
    rs.op = loom_reduction_t{4, 1, nullptr, nullptr, nullptr};
    std::fill(counts, counts + 3, (std::size_t(1) << 28) - 1); // 3 x (2^30 - 4) bytes: under 4 GiB
    CHECK(loom_message_bytes(&rs, 3) == 12 * (std::size_t(1) << 28) - 12);
    CHECK(choose(rs) == "ring");
    std::fill(counts, counts + 3, (std::size_t(1) << 30) + 1); // 12 GiB + 12 bytes
    CHECK(loom_message_bytes(&rs, 3) == 12 * G + 12);
    CHECK(choose(rs) == "pat");

    loom_call_t ag{};
    ag.coll = LOOM_COLL_ALLGATHERV;
    ag.counts = counts;
    counts[0] = two31, counts[1] = 0, counts[2] = two31 - 1;
    CHECK(loom_message_bytes(&ag, 3) == two32 - 1);
    CHECK(choose(ag) == "ring");
    counts[2] = two31;
    CHECK(loom_message_bytes(&ag, 3) == two32);
    CHECK(choose(ag) == "bruck");
    counts[1] = 5 * two32;
    CHECK(loom_message_bytes(&ag, 3) == 6 * two32);
    CHECK(choose(ag) == "bruck");

    // One block of an alltoall; a bcast's vector.
    loom_call_t a2a{};
    a2a.coll = LOOM_COLL_ALLTOALL;
    a2a.count = two32 - 1;
    CHECK(loom_message_bytes(&a2a, 3) == two32 - 1);
    CHECK(choose(a2a) == "bruck");
    a2a.count = two32;
    CHECK(loom_message_bytes(&a2a, 3) == two32);
    CHECK(choose(a2a) == "pairwise");
    loom_call_t bc{};
    bc.coll = LOOM_COLL_BCAST;
    bc.count = two32 + 1;
    CHECK(loom_message_bytes(&bc, 3) == two32 + 1);
    CHECK(choose(bc) == "scatter_allgather");
    bc.count = two32 - 1;
    CHECK(choose(bc) == "binomial");

    loom_rules_release(resolved);
    load_user_rules("");
}
