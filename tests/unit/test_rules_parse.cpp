// Tests of the rule-file parser: good files, and every error as the user sees it
// (Diagnostic::to_string: "FILE:LINE:COLUMN: error: MESSAGE"), so a change of file, line,
// column or wording shows here.
#include "rules_test_support.hpp"

using namespace loom;
using namespace loom::rules;
using namespace loom::rules::test;
// ---- parsing good files ------------------------------------------------------------------

TEST_CASE("rules: a good file with comments, blank lines and tabs parses", "[rules]")
{
    const std::string text = "# a comment before the header\n"
                             "\n"
                             "   # an indented comment\n"
                             "loom-rules 1   # the header may carry a comment\n"
                             "\n"
                             "allreduce\t2-8\t0-4K\trecursive_doubling\n"
                             "  bcast   *   64K-*   scatter_allgather   # trailing comment\n"
                             "\t\n"
                             "allgather 9-* * pat buffer=512K commutative=yes\n";
    const ParseResult r = parse(text, "my.rules");
    INFO(Catch::Detail::stringify(texts(r.diagnostics)));
    REQUIRE(r.ok());
    CHECK(r.diagnostics.empty());
    REQUIRE(r.rules.size() == 3);

    CHECK(r.rules[0].collective == Collective::allreduce);
    CHECK(same(r.rules[0].ranks, 2, 8));
    CHECK(same(r.rules[0].bytes, 0, 4 * K));
    CHECK(r.rules[0].algorithm == "recursive_doubling");
    CHECK(r.rules[0].source == "my.rules:6");
    CHECK(r.rules[0].line == 6);
    CHECK(!r.rules[0].nodes);
    CHECK(!r.rules[0].ranks_per_node);
    CHECK(!r.rules[0].memory);
    CHECK(!r.rules[0].commutative);
    CHECK(r.rules[0].segment_bytes == 0);
    CHECK(r.rules[0].buffer_bytes == 0);

    CHECK(r.rules[1].collective == Collective::bcast);
    CHECK(r.rules[1].ranks.is_all());
    CHECK(same(r.rules[1].bytes, 64 * K, UINT64_MAX));
    CHECK(r.rules[1].algorithm == "scatter_allgather");
    CHECK(r.rules[1].source == "my.rules:7");

    CHECK(r.rules[2].collective == Collective::allgather);
    CHECK(same(r.rules[2].ranks, 9, UINT64_MAX));
    CHECK(r.rules[2].bytes.is_all());
    CHECK(r.rules[2].algorithm == "pat");
    CHECK(r.rules[2].buffer_bytes == 512 * K);
    CHECK(r.rules[2].commutative == std::optional<bool>(true));
    CHECK(r.rules[2].source == "my.rules:9");
    CHECK(r.rules[2].line == 9);
}

TEST_CASE("rules: CRLF line ends parse like LF, and count lines alike", "[rules]")
{
    const ParseResult r = parse("loom-rules 1\r\n# comment\r\n\r\nallreduce * 0-4K recursive_doubling\r\n"
                                "bcast * * binomial segment=8K\r\nbcast * * binomal\r\n",
                                "crlf.rules");
    REQUIRE(r.rules.size() == 2);
    CHECK(r.rules[0].algorithm == "recursive_doubling");
    CHECK(r.rules[0].source == "crlf.rules:4");
    CHECK(same(r.rules[0].bytes, 0, 4 * K));
    CHECK(r.rules[1].segment_bytes == 8 * K);
    CHECK(r.rules[1].source == "crlf.rules:5");
    // The error's column ignores the CR, and its message does not carry it.
    CHECK(texts(r.diagnostics) ==
          std::vector<std::string>{"crlf.rules:6:11: error: no bcast algorithm 'binomal'; did you mean 'binomial'?"});
    // A file without a final newline parses its last line.
    CHECK(parse("loom-rules 1\nbarrier * * bruck", "f").rules.size() == 1);
    CHECK(parse("loom-rules 1\r\nbarrier * * bruck\r", "f").rules.size() == 1);
}

TEST_CASE("rules: every range form, inclusive at both ends", "[rules]")
{
    CHECK(only_rule("allreduce * * ring").ranks.is_all());
    CHECK(only_rule("allreduce * * ring").bytes.is_all());
    CHECK(same(only_rule("allreduce 4 * ring").ranks, 4, 4));
    CHECK(same(only_rule("allreduce 0 * ring").ranks, 0, 0));
    CHECK(same(only_rule("allreduce 2-8 * ring").ranks, 2, 8));
    CHECK(same(only_rule("allreduce 8-8 * ring").ranks, 8, 8));
    CHECK(same(only_rule("allreduce 9-* * ring").ranks, 9, UINT64_MAX));
    CHECK(same(only_rule("allreduce 0-* * ring").ranks, 0, UINT64_MAX));
    CHECK(same(only_rule("allreduce * 100 ring").bytes, 100, 100));
    CHECK(same(only_rule("allreduce * 1-2 ring").bytes, 1, 2));
    CHECK(same(only_rule("allreduce * 4K-* ring").bytes, 4 * K, UINT64_MAX));
    CHECK(same(only_rule("allreduce * 18446744073709551615 ring").bytes, UINT64_MAX, UINT64_MAX));
    CHECK(same(only_rule("allreduce 0-18446744073709551615 * ring").ranks, 0, UINT64_MAX));

    const Range r{4, 8};
    CHECK(!r.contains(3));
    CHECK(r.contains(4));
    CHECK(r.contains(8));
    CHECK(!r.contains(9));
    CHECK(Range{}.contains(0));
    CHECK(Range{}.contains(UINT64_MAX));
    CHECK(Range{}.is_all());
    CHECK(!r.is_all());
    CHECK(r.covers(Range{4, 8}));
    CHECK(r.covers(Range{5, 7}));
    CHECK(!r.covers(Range{3, 8}));
    CHECK(!r.covers(Range{4, 9}));
}

TEST_CASE("rules: K, M, G and T sizes are powers of 1024, in either case", "[rules]")
{
    CHECK(same(only_rule("allreduce * 1K ring").bytes, K, K));
    CHECK(same(only_rule("allreduce * 1k ring").bytes, K, K));
    CHECK(same(only_rule("allreduce * 3M ring").bytes, 3 * M, 3 * M));
    CHECK(same(only_rule("allreduce * 3m ring").bytes, 3 * M, 3 * M));
    CHECK(same(only_rule("allreduce * 2G ring").bytes, 2 * G, 2 * G));
    CHECK(same(only_rule("allreduce * 2g ring").bytes, 2 * G, 2 * G));
    CHECK(same(only_rule("allreduce * 3T ring").bytes, 3 * T, 3 * T));
    CHECK(same(only_rule("allreduce * 3t ring").bytes, 3 * T, 3 * T));
    CHECK(same(only_rule("allreduce * 0K-1023 ring").bytes, 0, 1023));
    CHECK(same(only_rule("allreduce * 4K-1M ring").bytes, 4 * K, M));
    CHECK(same(only_rule("allreduce * 4096-1G ring").bytes, 4 * K, G));
    // The largest sizes that fit 64 bits.
    CHECK(same(only_rule("allreduce * 17179869183G ring").bytes, 17179869183ull * G, 17179869183ull * G));
    CHECK(same(only_rule("allreduce * 16777215T ring").bytes, 16777215ull * T, 16777215ull * T));
    CHECK(only_rule("allreduce * * ring_pipelined segment=128K").segment_bytes == 128 * K);
    CHECK(only_rule("allreduce * * ring_pipelined segment=1000").segment_bytes == 1000);
    CHECK(only_rule("allreduce * * pat buffer=2M").buffer_bytes == 2 * M);
    CHECK(only_rule("allreduce * * pat buffer=1G").buffer_bytes == G);
    CHECK(only_rule("allreduce * * pat buffer=1T").buffer_bytes == T);
}

// MPI-4's large-count calls (MPI_Allreduce_c, ...) and a count of a large derived type bring
// messages of many GiB: their byte ranges parse, match and print back as 64-bit values, with no
// wrap at 2^31 or 2^32.
TEST_CASE("rules: byte ranges above 2 and 4 GiB parse, match and print back exactly", "[rules]")
{
    const Rule a = only_rule("allreduce * 2147483648-4294967295 ring");
    CHECK(same(a.bytes, 2 * G, 4 * G - 1));
    CHECK(matches(a, call(Collective::allreduce, 2, 2 * G)));
    CHECK(matches(a, call(Collective::allreduce, 2, 4 * G - 1)));
    CHECK(!matches(a, call(Collective::allreduce, 2, 2 * G - 1)));
    CHECK(!matches(a, call(Collective::allreduce, 2, 4 * G))); // not 0 after a 32-bit wrap
    CHECK(!matches(a, call(Collective::allreduce, 2, 6 * G)));

    const Rule b = only_rule("allreduce * 4G-8G ring");
    CHECK(same(b.bytes, 4 * G, 8 * G));
    CHECK(matches(b, call(Collective::allreduce, 2, 4 * G)));
    CHECK(matches(b, call(Collective::allreduce, 2, 4 * G + 1)));
    CHECK(matches(b, call(Collective::allreduce, 2, 8 * G)));
    CHECK(!matches(b, call(Collective::allreduce, 2, 4 * G - 1)));
    CHECK(!matches(b, call(Collective::allreduce, 2, 8 * G + 1)));
    CHECK(!matches(b, call(Collective::allreduce, 2, 0)));
    CHECK(!matches(b, call(Collective::allreduce, 2, 1)));

    const Rule c = only_rule("bcast * 8589934593-1T binomial segment=4G");
    CHECK(same(c.bytes, 8 * G + 1, T));
    CHECK(c.segment_bytes == 4 * G);
    CHECK(matches(c, call(Collective::bcast, 2, 8 * G + 1)));
    CHECK(matches(c, call(Collective::bcast, 2, T)));
    CHECK(!matches(c, call(Collective::bcast, 2, 8 * G)));
    CHECK(!matches(c, call(Collective::bcast, 2, T + 1)));

    const Rule d = only_rule("alltoall * 1T-* pairwise");
    CHECK(same(d.bytes, T, UINT64_MAX));
    CHECK(matches(d, call(Collective::alltoall, 2, 5 * T + 3)));
    CHECK(!matches(d, call(Collective::alltoall, 2, T - 1)));

    // Printed as the parser reads them back (loom-rules show, saved learned rules).
    CHECK(size_text(4 * G) == "4G");
    CHECK(size_text(4 * G + 1) == "4294967297");
    CHECK(size_text(T) == "1T");
    CHECK(size_text(3 * T + G) == "3073G");
    CHECK(size_text(16777215ull * T) == "16777215T");
    CHECK(range_text(a.bytes, true) == "2G-4294967295");
    CHECK(range_text(b.bytes, true) == "4G-8G");
    CHECK(range_text(c.bytes, true) == "8589934593-1T");
    CHECK(range_text(d.bytes, true) == "1T-*");
    CHECK(rule_fields(c) == std::vector<std::string>{"bcast", "*", "8589934593-1T", "binomial", "segment=4G"});
    for (const Rule& r : {a, b, c, d}) {
        const std::vector<std::string> f = rule_fields(r);
        std::string line;
        for (const std::string& x : f) line += (line.empty() ? "" : " ") + x;
        INFO(line);
        const Rule again = only_rule(line);
        CHECK(same(again.bytes, r.bytes.lo, r.bytes.hi));
        CHECK(again.segment_bytes == r.segment_bytes);
    }
}

TEST_CASE("rules: every key", "[rules]")
{
    const Rule r = only_rule("allreduce * * ring_pipelined segment=64K buffer=1M nodes=2-* ranks_per_node=4 "
                             "memory=cuda commutative=no");
    CHECK(r.segment_bytes == 64 * K);
    CHECK(r.buffer_bytes == M);
    REQUIRE(r.nodes);
    CHECK(same(*r.nodes, 2, UINT64_MAX));
    REQUIRE(r.ranks_per_node);
    CHECK(same(*r.ranks_per_node, 4, 4));
    CHECK(r.memory == std::optional<MemoryKind>(MemoryKind::cuda));
    CHECK(r.commutative == std::optional<bool>(false));

    CHECK(only_rule("allreduce * * ring memory=host").memory == std::optional<MemoryKind>(MemoryKind::host));
    CHECK(only_rule("allreduce * * ring commutative=yes").commutative == std::optional<bool>(true));
    CHECK(only_rule("allreduce * * ring nodes=*").nodes->is_all());
    CHECK(same(*only_rule("allreduce * * ring nodes=1-4").nodes, 1, 4));
    CHECK(same(*only_rule("allreduce * * ring ranks_per_node=2-*").ranks_per_node, 2, UINT64_MAX));
    // Keys may come in any order.
    const Rule s = only_rule("allreduce * * ring commutative=yes memory=host nodes=3 segment=1K");
    CHECK(s.commutative == std::optional<bool>(true));
    CHECK(s.memory == std::optional<MemoryKind>(MemoryKind::host));
    CHECK(same(*s.nodes, 3, 3));
    CHECK(s.segment_bytes == K);
    // ompi= is the Open MPI major version, a count range; fallback rules take it too.
    CHECK(same(*only_rule("allreduce * * ring ompi=5").ompi, 5, 5));
    CHECK(same(*only_rule("allreduce * 0-1K fallback ompi=4-*").ompi, 4, UINT64_MAX));
    CHECK(!only_rule("allreduce * * ring").ompi);
    // radix= is a k-nomial tree's, 2-16.
    CHECK(only_rule("bcast * * knomial radix=8").radix == 8);
    CHECK(only_rule("reduce 3-* 0-4K knomial radix=2").radix == 2);
    CHECK(only_rule("barrier * * knomial radix=16").radix == 16);
    CHECK(only_rule("bcast * * knomial").radix == 0);
    // requests= is linear alltoallv's (and alltoallw's) window.
    CHECK(only_rule("alltoallv * * linear requests=8").requests == 8);
    CHECK(only_rule("alltoallw 2-8 * linear requests=1").requests == 1);
    CHECK(only_rule("alltoallv * * linear").requests == 0);
}

TEST_CASE("rules: requests= errors name the file, line and column", "[rules]")
{
    CHECK(only_error("alltoallv * * linear requests=0") == "t.rules:2:31: error: requests must be 1 or more, found 0");
    CHECK(only_error("alltoallv * * pairwise requests=4") ==
          "t.rules:2:24: error: requests= bounds the requests a linear alltoallv keeps in flight; 'pairwise' has none");
    CHECK(only_error("alltoallv * * fallback requests=4") ==
          "t.rules:2:24: error: fallback takes no options ('requests=' configures one of loom's algorithms)");
}

TEST_CASE("rules: radix= errors name the file, line and column", "[rules]")
{
    CHECK(only_error("bcast * * knomial radix=1") == "t.rules:2:25: error: radix must be 2..16, found 1");
    CHECK(only_error("bcast * * knomial radix=17") == "t.rules:2:25: error: radix must be 2..16, found 17");
    CHECK(only_error("bcast * * binomial radix=4") ==
          "t.rules:2:20: error: radix= sets a k-nomial tree's radix; 'binomial' has none");
    CHECK(only_error("bcast * * fallback radix=4") ==
          "t.rules:2:20: error: fallback takes no options ('radix=' configures one of loom's algorithms)");
}

TEST_CASE("rules: ompi= errors name the file, line and column", "[rules]")
{
    CHECK(only_error("allreduce * * ring ompi=five") == "t.rules:2:25: error: expected a number, found 'five'");
    CHECK(only_error("allreduce * * ring ompi=5K") ==
          "t.rules:2:26: error: unexpected 'K' after a count (sizes take K, M, G, T; counts none)");
    CHECK(only_error("allreduce * * ring ompi=5-4").find("t.rules:2:25: error: the range '5-4' is empty") == 0);
    CHECK(only_error("allreduce * * ring opmi=5") == "t.rules:2:20: error: unknown key 'opmi'; did you mean 'ompi'?");
    CHECK(only_error("allreduce * * ring ompi=4 ompi=5") == "t.rules:2:27: error: the key 'ompi' is given twice");
}

TEST_CASE("rules: every collective and every registered algorithm name parses", "[rules]")
{
    for (const Algorithm& a : all_algorithms()) {
        const std::string line = std::string(to_string(a.collective)) + " * * " + std::string(a.name);
        const Rule r = only_rule(line);
        CHECK(r.collective == a.collective);
        CHECK(r.algorithm == a.name);
    }
}

TEST_CASE("rules: fallback is a name for every collective, with match keys but no options", "[rules]")
{
    for (int c = 0; c < kCollectiveCount; ++c) {
        const std::string line = std::string(to_string(Collective(c))) + " 2-8 0-256 fallback";
        const Rule r = only_rule(line);
        CHECK(r.collective == Collective(c));
        CHECK(r.algorithm == kFallback);
        CHECK(r.is_fallback());
        // The text the component prints when it declines a call for this rule.
        CHECK(r.fallback_reason == "rule t.rules:2 hands it to the next component (fallback)");
    }
    CHECK(!only_rule("allreduce * * ring").is_fallback());
    CHECK(only_rule("allreduce * * ring").fallback_reason.empty());
    const Rule keys = only_rule("allreduce * * fallback nodes=2-* ranks_per_node=4 memory=host commutative=no");
    CHECK(same(*keys.nodes, 2, UINT64_MAX));
    CHECK(keys.commutative == std::optional<bool>(false));
    // Options configure an algorithm, and a fallback rule runs none.
    CHECK(only_error("allreduce * * fallback segment=64K") ==
          "t.rules:2:24: error: fallback takes no options ('segment=' configures one of loom's algorithms)");
    CHECK(only_error("allgather * 0-1K fallback buffer=1M") ==
          "t.rules:2:27: error: fallback takes no options ('buffer=' configures one of loom's algorithms)");
    // The name is exact, and a near miss suggests it.
    CHECK(only_error("allreduce * * fallbak") ==
          "t.rules:2:15: error: no allreduce algorithm 'fallbak'; did you mean 'fallback'?");
    CHECK(only_error("allreduce * * Fallback") ==
          "t.rules:2:15: error: no allreduce algorithm 'Fallback'; did you mean 'fallback'?");
}

TEST_CASE("rules: a header alone, or with comments, is a valid empty table", "[rules]")
{
    for (const char* text : {"loom-rules 1\n", "loom-rules 1", "# c\nloom-rules\t1\n# d\n\n", "  loom-rules 1  \r\n"}) {
        INFO(text);
        const ParseResult r = parse(text, "h");
        CHECK(r.ok());
        CHECK(r.diagnostics.empty());
        CHECK(r.rules.empty());
    }
}

// ---- errors ------------------------------------------------------------------------------

TEST_CASE("rules: header errors", "[rules]")
{
    SECTION("missing: the first line that is not a comment is a rule")
    {
        const ParseResult r = parse("# c\nallreduce * * ring\nbcast * * binomial\n", "t.rules");
        CHECK(
            texts(r.diagnostics) ==
            std::vector<std::string>{"t.rules:2:1: error: expected the header 'loom-rules 1' as the first line that is "
                                     "not a comment"});
        CHECK(!r.ok());
    }
    SECTION("misplaced: after a rule, and a second header")
    {
        const ParseResult r = parse("allreduce * * ring\n  loom-rules 1\n", "t.rules");
        CHECK(texts(r.diagnostics) ==
              std::vector<std::string>{
                  "t.rules:1:1: error: expected the header 'loom-rules 1' as the first line that is not a comment",
                  "t.rules:2:3: error: the header 'loom-rules 1' must be the first line that is not a comment, and "
                  "appear once"});
        // A repeated header is one error, and the good rule before it stays.
        const ParseResult twice = parse_body("allreduce * * ring\nloom-rules 1\n");
        CHECK(texts(twice.diagnostics) ==
              std::vector<std::string>{"t.rules:3:1: error: the header 'loom-rules 1' must be the first line that is "
                                       "not a comment, and appear once"});
        CHECK(twice.rules.size() == 1);
    }
    SECTION("malformed or unsupported")
    {
        CHECK(texts(parse("loom-rules 2\n", "t.rules").diagnostics) ==
              std::vector<std::string>{
                  "t.rules:1:12: error: unsupported rule-file version '2' (this loom reads version 1)"});
        CHECK(texts(parse("loom-rules 1.0\n", "t.rules").diagnostics) ==
              std::vector<std::string>{
                  "t.rules:1:12: error: unsupported rule-file version '1.0' (this loom reads version 1)"});
        for (const char* bad : {"loom-rules\n", "loom-rules 1 extra\n", "loom_rules 1\n", "LOOM-RULES 1\n"}) {
            INFO(bad);
            CHECK(texts(parse(bad, "t.rules").diagnostics) ==
                  std::vector<std::string>{"t.rules:1:1: error: expected the header 'loom-rules 1' as the first line "
                                           "that is not a comment"});
        }
    }
    SECTION("a file with only comments, or nothing, is one error about the whole file")
    {
        for (const char* text : {"", "\n\n", "# only\n# comments\n", "   \t  \r\n"}) {
            INFO(text);
            const ParseResult r = parse(text, "t.rules");
            CHECK(texts(r.diagnostics) ==
                  std::vector<std::string>{"t.rules: error: the file has no rules and no header 'loom-rules 1'"});
            CHECK(r.diagnostics[0].line == 0);
            CHECK(r.diagnostics[0].column == 0);
            CHECK(!r.ok());
        }
    }
}

TEST_CASE("rules: every error in a rule line, with its file, line, column and message", "[rules]")
{
    const std::string empty_range = " is empty (ranges are inclusive: the low end must not exceed the high end)";
    const std::string count_suffix = " after a count (sizes take K, M, G, T; counts none)";
    const std::string bad_range = "error: expected a range (N, N-M, N-* or *), found ";
    // The collectives, as collectives.def lists them.
    std::string valid;
    for (Collective c : all_collectives()) valid += (valid.empty() ? "" : ", ") + std::string(to_string(c));
    const std::vector<std::pair<std::string, std::string>> cases = {
        // unknown collective
        {"allredcue * * ring", "t.rules:2:1: error: unknown collective 'allredcue'; did you mean 'allreduce'?"},
        {"Allreduce * * ring", "t.rules:2:1: error: unknown collective 'Allreduce'; did you mean 'allreduce'?"},
        {"frobnicate * * ring", "t.rules:2:1: error: unknown collective 'frobnicate' (valid: " + valid +
                                    "; iNAME for non-blocking calls only, NAME_init for persistent ones)"},
        {"iallreduc * * ring", "t.rules:2:1: error: unknown collective 'iallreduc'; did you mean 'iallreduce'?"},
        {"allreduce_int * * ring",
         "t.rules:2:1: error: unknown collective 'allreduce_int'; did you mean 'allreduce_init'?"},
        {"iallreduce * * rnig", "t.rules:2:16: error: no iallreduce algorithm 'rnig'; did you mean 'ring'?"},
        // unknown algorithm for the collective
        {"allreduce * * rnig", "t.rules:2:15: error: no allreduce algorithm 'rnig'; did you mean 'ring'?"},
        {"allreduce  *  *  ring_pipelind",
         "t.rules:2:18: error: no allreduce algorithm 'ring_pipelind'; did you mean 'ring_pipelined'?"},
        {"allreduce * * scatter_allgather",
         "t.rules:2:15: error: no allreduce algorithm 'scatter_allgather' (valid: ring, ring_pipelined, "
         "halving_doubling, "
         "recursive_doubling, pat, binomial, shm, cma, hierarchical, hierarchical_rs, hierarchical_seg, knomial, bcube, "
         "fallback)"},
        {"bcast * * zzz",
         "t.rules:2:11: error: no bcast algorithm 'zzz' (valid: binomial, scatter_allgather, shm, cma, "
         "hierarchical, hierarchical_seg, knomial, fallback)"},
        {"barrier * * binomial", "t.rules:2:13: error: no barrier algorithm 'binomial'; did you mean 'knomial'?"},
        {"barrier * * tree",
         "t.rules:2:13: error: no barrier algorithm 'tree' (valid: bruck, recursive_doubling, shm, knomial, fallback)"},
        // missing columns
        {"allreduce", std::string("t.rules:2:10: error: expected a communicator-size range") + kShape},
        {"allreduce *", std::string("t.rules:2:12: error: expected a message-size range") + kShape},
        {"allreduce * 0-4K", std::string("t.rules:2:17: error: expected an algorithm") + kShape},
        {"allreduce\t*\t0-4K", std::string("t.rules:2:17: error: expected an algorithm") + kShape},
        // bad numbers
        {"allreduce x * ring", "t.rules:2:11: error: expected a number, found 'x'"},
        {"allreduce * K ring", "t.rules:2:13: error: expected a number, found 'K'"},
        {"allreduce +4 * ring", "t.rules:2:11: error: expected a number, found '+4'"},
        {"allreduce 2-x * ring", "t.rules:2:13: error: expected a number, found 'x'"},
        {"allreduce *-4 * ring", "t.rules:2:11: error: expected a number, found '*'"},
        {"allreduce * * ring segment=*", "t.rules:2:28: error: expected a number, found '*'"},
        {"allreduce -5 * ring", "t.rules:2:11: " + bad_range + "'-5'"},
        {"allreduce 5- * ring", "t.rules:2:11: " + bad_range + "'5-'"},
        {"allreduce 1-2-3 * ring", "t.rules:2:11: " + bad_range + "'1-2-3'"},
        {"allreduce * 1K-2K-3K ring", "t.rules:2:13: " + bad_range + "'1K-2K-3K'"},
        {"allreduce * * ring nodes=", "t.rules:2:26: " + bad_range + "''"},
        // numbers and sizes that do not fit 64 bits
        {"allreduce 99999999999999999999 * ring",
         "t.rules:2:11: error: the number '99999999999999999999' is too large"},
        {"allreduce * 18446744073709551616 ring",
         "t.rules:2:13: error: the number '18446744073709551616' is too large"},
        {"allreduce * 99999999999999999999K ring",
         "t.rules:2:13: error: the number '99999999999999999999K' is too large"},
        {"allreduce * 17179869184G ring", "t.rules:2:13: error: the size '17179869184G' is too large"},
        {"allreduce * 0-17179869184G ring", "t.rules:2:15: error: the size '17179869184G' is too large"},
        {"allreduce * * ring segment=17179869184G", "t.rules:2:28: error: the size '17179869184G' is too large"},
        {"allreduce * * ring buffer=99999999999999999999",
         "t.rules:2:27: error: the number '99999999999999999999' is too large"},
        {"allreduce * 16777216T ring", "t.rules:2:13: error: the size '16777216T' is too large"},
        {"allreduce * * ring buffer=16777216T", "t.rules:2:27: error: the size '16777216T' is too large"},
        // bad suffixes
        {"allreduce * 4KB ring", "t.rules:2:14: error: unknown size suffix 'KB' (expected K, M, G or T)"},
        {"allreduce * 4P ring", "t.rules:2:14: error: unknown size suffix 'P' (expected K, M, G or T)"},
        {"allreduce * 4TB ring", "t.rules:2:14: error: unknown size suffix 'TB' (expected K, M, G or T)"},
        {"allreduce * 1.5K ring", "t.rules:2:14: error: unknown size suffix '.5K' (expected K, M, G or T)"},
        {"allreduce * 4x ring", "t.rules:2:14: error: unknown size suffix 'x' (expected K, M, G or T)"},
        {"allreduce * * ring buffer=1P", "t.rules:2:28: error: unknown size suffix 'P' (expected K, M, G or T)"},
        {"allreduce 4T * ring", "t.rules:2:12: error: unexpected 'T'" + count_suffix},
        // a suffix on a count
        {"allreduce 4K * ring", "t.rules:2:12: error: unexpected 'K'" + count_suffix},
        {"allreduce 2-4K * ring", "t.rules:2:14: error: unexpected 'K'" + count_suffix},
        {"allreduce 0x10 * ring", "t.rules:2:12: error: unexpected 'x10'" + count_suffix},
        {"allreduce * * ring nodes=2K", "t.rules:2:27: error: unexpected 'K'" + count_suffix},
        {"allreduce * * ring ranks_per_node=1M", "t.rules:2:36: error: unexpected 'M'" + count_suffix},
        // empty ranges
        {"allreduce 9-2 * ring", "t.rules:2:11: error: the range '9-2'" + empty_range},
        {"allreduce * 4K-1K ring", "t.rules:2:13: error: the range '4K-1K'" + empty_range},
        {"allreduce * 4097-4K ring", "t.rules:2:13: error: the range '4097-4K'" + empty_range},
        {"allreduce * * ring nodes=4-2", "t.rules:2:26: error: the range '4-2'" + empty_range},
        // keys
        {"allreduce * * ring segmnet=4K", "t.rules:2:20: error: unknown key 'segmnet'; did you mean 'segment'?"},
        {"allreduce * * ring ranks_per_nod=2",
         "t.rules:2:20: error: unknown key 'ranks_per_nod'; did you mean 'ranks_per_node'?"},
        {"allreduce * * ring colour=red", "t.rules:2:20: error: unknown key 'colour' (valid: segment, buffer, leaders, "
                                          "radix, requests, nodes, ranks_per_node, memory, commutative, ompi, kept, "
                                          "topology, degree, ndims, phase)"},
        {"allreduce * * ring segment", "t.rules:2:20: error: expected key=value after the algorithm, found 'segment'"},
        {"allreduce * * ring =4", "t.rules:2:20: error: expected key=value after the algorithm, found '=4'"},
        {"allreduce * * ring memory=gpu", "t.rules:2:27: error: memory must be 'host' or 'cuda', found 'gpu'"},
        {"allreduce * * ring memory=CUDA", "t.rules:2:27: error: memory must be 'host' or 'cuda', found 'CUDA'"},
        {"allreduce * * ring memory=", "t.rules:2:27: error: memory must be 'host' or 'cuda', found ''"},
        {"allreduce * * ring commutative=true", "t.rules:2:32: error: commutative must be 'yes' or 'no', found 'true'"},
        {"allreduce * * ring commutative=No", "t.rules:2:32: error: commutative must be 'yes' or 'no', found 'No'"},
        {"neighbor_alltoall * * linear kept=1", "t.rules:2:35: error: kept must be 'yes' or 'no', found '1'"},
        // the topology keys: a known shape, counts, only where they can match
        {"neighbor_alltoall * * shm topology=cart",
         "t.rules:2:36: error: topology must be none, cartesian, graph or dist_graph, found 'cart'"},
        {"neighbor_alltoall * * shm topology=grpah",
         "t.rules:2:36: error: topology must be none, cartesian, graph or dist_graph, found 'grpah'; did you mean "
         "'graph'?"},
        {"neighbor_alltoall * * shm degree=4K", "t.rules:2:35: error: unexpected 'K'" + count_suffix},
        {"neighbor_alltoall * * shm degree=8-4", "t.rules:2:34: error: the range '8-4'" + empty_range},
        {"neighbor_alltoall * * shm topology=dist_graph degree=8",
         "t.rules:2:47: error: degree= never matches a dist_graph: each rank knows only its own neighbours, so no "
         "degree is the same on every rank"},
        {"neighbor_allgather * * shm topology=graph ndims=2",
         "t.rules:2:43: error: ndims= is a Cartesian grid's; topology=graph has none"},
        // a byte range without 0 only where a neighbourhood call's size can be other than 0
        {"neighbor_alltoallv * 1K-4K shm",
         "t.rules:2:22: error: a byte range without 0 never matches neighbor_alltoallv: its message size is always 0 "
         "(its counts differ from rank to rank)"},
        {"allreduce * * ring topology=cartesian",
         "t.rules:2:20: error: topology= matches the neighbourhood collectives' topology (neighbor_*); allreduce has "
         "none"},
    };
    for (const auto& [line, expected] : cases) {
        INFO(line);
        CHECK(only_error(line) == expected);
    }
}

TEST_CASE("rules: the topology keys parse, and are written back as read", "[rules]")
{
    const ParseResult r =
        parse_body("ineighbor_alltoall 2 * shm nodes=1 topology=cartesian degree=2-4 ndims=1-2\n"
                   "neighbor_allgather * * linear topology=dist_graph\n"
                   // a stencil of one block size has a message size on a graph too (combining.hpp)
                   "neighbor_alltoall * 0-512 combining topology=graph\n");
    REQUIRE(r.ok());
    REQUIRE(r.rules.size() == 3);
    CHECK(r.rules[2].bytes.hi == 512);
    CHECK(r.rules[0].topology == TopologyShape::cartesian);
    CHECK(r.rules[0].degree->lo == 2);
    CHECK(r.rules[0].degree->hi == 4);
    CHECK(r.rules[0].ndims->hi == 2);
    CHECK(rule_fields(r.rules[0]).back() == "nodes=1 topology=cartesian degree=2-4 ndims=1-2");
    CHECK(rule_fields(r.rules[1]).back() == "topology=dist_graph");
    CHECK(!r.rules[1].degree);
}

TEST_CASE("rules: the diagnostic fields, and how they print", "[rules]")
{
    const ParseResult r = parse_body("allreduce * * rnig");
    REQUIRE(r.diagnostics.size() == 1);
    const Diagnostic& d = r.diagnostics[0];
    CHECK(d.severity == Diagnostic::Severity::error);
    CHECK(d.file == "t.rules");
    CHECK(d.line == 2);
    CHECK(d.column == 15);
    CHECK(d.message == "no allreduce algorithm 'rnig'; did you mean 'ring'?");
    CHECK(Diagnostic{Diagnostic::Severity::warning, "f", 3, 0, "m"}.to_string() == "f:3: warning: m");
    CHECK(Diagnostic{Diagnostic::Severity::error, "f", 0, 0, "m"}.to_string() == "f: error: m");
    CHECK(Diagnostic{Diagnostic::Severity::warning, "f", 3, 7, "m"}.to_string() == "f:3:7: warning: m");
    // Warnings alone do not make a result fail.
    ParseResult w;
    w.diagnostics.push_back({Diagnostic::Severity::warning, "f", 1, 1, "w"});
    CHECK(w.ok());
    w.diagnostics.push_back({Diagnostic::Severity::error, "f", 1, 1, "e"});
    CHECK(!w.ok());
}

TEST_CASE("rules: a line may hold 4096 bytes and no more", "[rules]")
{
    const std::string rule = "bcast * * binomial";
    const std::string fits = rule + std::string(4096 - rule.size(), ' ');
    CHECK(parse_body(fits + "\n").rules.size() == 1);
    CHECK(parse_body(fits + "\r\n").rules.size() == 1); // the CR is not counted
    CHECK(parse_body(rule + std::string(4096 - rule.size() - 2, ' ') + "#x\n").rules.size() == 1);

    const std::string too_long = "t.rules:2:4097: error: the line is longer than 4096 bytes";
    CHECK(only_error(fits + " ") == too_long);
    CHECK(only_error(fits + "x\r\n") == too_long);
    // Comments count too, and a very long line is one error.
    CHECK(only_error("#" + std::string(5000, 'c')) == too_long);
    CHECK(only_error(std::string(1 << 20, 'a')) == too_long);
    // The lines around it still parse.
    const ParseResult r = parse_body(rule + "\n" + std::string(10000, 'x') + "\n" + rule + "\n");
    CHECK(r.rules.size() == 2);
    CHECK(texts(r.diagnostics) ==
          std::vector<std::string>{"t.rules:3:4097: error: the line is longer than 4096 bytes"});
}

TEST_CASE("rules: binary bytes are an error, one per line", "[rules]")
{
    CHECK(only_error("bcast * * binomial \x01") == "t.rules:2:20: error: unexpected byte 0x01 (rule files are text)");
    CHECK(only_error(std::string("bcast * * bin\0mial", 18)) ==
          "t.rules:2:14: error: unexpected byte 0x00 (rule files are text)");
    CHECK(only_error("bcast\r* * binomial") == "t.rules:2:6: error: unexpected byte 0x0d (rule files are text)");
    CHECK(only_error("\x1b[31mbcast * * binomial") == "t.rules:2:1: error: unexpected byte 0x1b (rule files are text)");
    CHECK(only_error("bcast * * binomial\x1f\x02\x03") ==
          "t.rules:2:19: error: unexpected byte 0x1f (rule files are text)");
    // In a comment they are ignored; bytes above 0x7f are text (and here an unknown collective).
    CHECK(parse_body("bcast * * binomial # \x01\x02 \x7f\n").rules.size() == 1);
    CHECK(only_error("allreduc\xc3\xa9 * * ring") ==
          "t.rules:2:1: error: unknown collective 'allreduc\xc3\xa9'; did you mean 'allreduce'?");
    // A whole binary file: every byte value, no crash, only errors.
    std::string junk;
    for (int i = 0; i < 4096; ++i) junk += char((i * 7919) & 0xff);
    const ParseResult r = parse(junk, "junk");
    CHECK(r.rules.empty());
    CHECK(!r.ok());
}

TEST_CASE("rules: at most 100000 rules; the rest is reported once and ignored", "[rules]")
{
    std::string text = "loom-rules 1\n";
    for (int i = 0; i < 100000; ++i) text += "bcast * * binomial\n";
    {
        const ParseResult r = parse(text, "many");
        CHECK(r.ok());
        CHECK(r.rules.size() == 100000);
        CHECK(r.rules.back().source == "many:100001");
    }
    text += "# the next rule is one too many\n\nbcast * * scatter_allgather\nbcast * * binomial\nnot even a rule\n";
    const ParseResult r = parse(text, "many");
    CHECK(r.rules.size() == 100000);
    CHECK(texts(r.diagnostics) ==
          std::vector<std::string>{"many:100004: error: more than 100000 rules; the rest of the file is ignored"});
    CHECK(!r.ok());
}

TEST_CASE("rules: several errors in one file are all reported, and good lines still parse", "[rules]")
{
    const ParseResult r = parse("# header next\n"
                                "loom-rules 1\n"
                                "allreduce * 0-4K recursive_doubling\n"
                                "allredcue * * ring\n"
                                "allreduce 9-2 * ring\n"
                                "bcast * * binomial\n"
                                "allreduce * * ring segmnet=4K\n"
                                "\n"
                                "allreduce * 4KB ring memory=gpu\n"
                                "barrier * * bruck\n",
                                "multi.rules");
    CHECK(texts(r.diagnostics) ==
          std::vector<std::string>{
              "multi.rules:4:1: error: unknown collective 'allredcue'; did you mean 'allreduce'?",
              "multi.rules:5:11: error: the range '9-2' is empty (ranges are inclusive: the low end must not exceed "
              "the high "
              "end)",
              "multi.rules:7:20: error: unknown key 'segmnet'; did you mean 'segment'?",
              // A line with two mistakes reports both.
              "multi.rules:9:14: error: unknown size suffix 'KB' (expected K, M, G or T)",
              "multi.rules:9:29: error: memory must be 'host' or 'cuda', found 'gpu'",
          });
    CHECK(!r.ok());
    REQUIRE(r.rules.size() == 3);
    CHECK(r.rules[0].source == "multi.rules:3");
    CHECK(r.rules[1].source == "multi.rules:6");
    CHECK(r.rules[2].source == "multi.rules:10");
}

TEST_CASE("rules: parse_file reads a file, names it in sources, and reports one it cannot read", "[rules]")
{
    const TempFile f("loom-rules 1\r\n# tuned\r\nallreduce * 0-4K recursive_doubling\r\nallreduce * 4K-* rnig\r\n");
    const ParseResult r = parse_file(f.path.string());
    REQUIRE(r.rules.size() == 1);
    CHECK(r.rules[0].source == f.path.string() + ":3");
    CHECK(texts(r.diagnostics) ==
          std::vector<std::string>{f.path.string() +
                                   ":4:18: error: no allreduce algorithm 'rnig'; did you mean 'ring'?"});

    const std::string missing =
        (std::filesystem::temp_directory_path() / "loom-test-rules-no-such-file.rules").string();
    const ParseResult m = parse_file(missing);
    CHECK(m.rules.empty());
    CHECK(texts(m.diagnostics) == std::vector<std::string>{missing + ": error: cannot open the rule file"});

    // A directory opens but cannot be read; it is not "larger than 64 MiB".
    const std::string dir = std::filesystem::temp_directory_path().string();
    const ParseResult d = parse_file(dir);
    CHECK(d.rules.empty());
    CHECK(texts(d.diagnostics) == std::vector<std::string>{dir + ": error: cannot read the rule file"});

    const TempFile empty("");
    CHECK(
        texts(parse_file(empty.path.string()).diagnostics) ==
        std::vector<std::string>{empty.path.string() + ": error: the file has no rules and no header 'loom-rules 1'"});
}

// ---- lint --------------------------------------------------------------------------------

TEST_CASE("a key given twice is an error", "[rules]")
{
    const auto r = parse("loom-rules 1\nallreduce * * ring segment=1K segment=2K\n", "f.rules");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].to_string() == "f.rules:2:31: error: the key 'segment' is given twice");
    CHECK(r.rules.empty());
}

TEST_CASE("errors stop being collected after 1000: memory stays bounded on hostile files", "[rules]")
{
    std::string text = "loom-rules 1\n";
    for (int i = 0; i < 5000; ++i) text += "\x01\n";
    const auto r = parse(text, "junk.rules");
    REQUIRE(r.diagnostics.size() == 1001);
    CHECK(r.diagnostics.back().to_string() ==
          "junk.rules:1002: error: too many errors; the rest of the file is not checked");
}
