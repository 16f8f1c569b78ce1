// Tests of the rule tables: see selection_rules/rules.hpp. Diagnostics are checked as the user
// sees them (Diagnostic::to_string: "FILE:LINE:COLUMN: error: MESSAGE"), so a change of file,
// line, column or wording shows here.
#include "registry.hpp"
#include "rules.hpp"
#include "selection.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace loom;
using namespace loom::rules;

namespace {

constexpr std::uint64_t K = 1024, M = K * K, G = M * K;
constexpr const char* kShape = " (a rule is: collective ranks bytes algorithm [key=value ...])";

// Parses `body` after a header line, as the file "t.rules" (so the body's first line is line 2).
ParseResult parse_body(std::string_view body) { return parse("loom-rules 1\n" + std::string(body), "t.rules"); }

std::vector<std::string> texts(const std::vector<Diagnostic>& ds)
{
    std::vector<std::string> out;
    for (const Diagnostic& d : ds) out.push_back(d.to_string());
    return out;
}

// The one diagnostic a bad line produces (checking that it drops the rule); all of them, one
// per line, if there is not exactly one.
std::string only_error(std::string_view body)
{
    const ParseResult r = parse_body(body);
    INFO(body);
    CHECK(r.rules.empty());
    CHECK(!r.ok());
    CHECK(r.diagnostics.size() == 1);
    std::string all;
    for (const Diagnostic& d : r.diagnostics) {
        CHECK(d.severity == Diagnostic::Severity::error);
        all += (all.empty() ? "" : "\n") + d.to_string();
    }
    return all;
}

Rule only_rule(std::string_view body)
{
    const ParseResult r = parse_body(body);
    INFO(body);
    INFO(Catch::Detail::stringify(texts(r.diagnostics)));
    REQUIRE(r.ok());
    REQUIRE(r.diagnostics.empty());
    REQUIRE(r.rules.size() == 1);
    return r.rules[0];
}

bool same(const Range& r, std::uint64_t lo, std::uint64_t hi) { return r.lo == lo && r.hi == hi; }

std::vector<std::string> warnings_of(std::string_view body)
{
    const ParseResult r = parse_body(body);
    INFO(body);
    INFO(Catch::Detail::stringify(texts(r.diagnostics)));
    REQUIRE(r.ok());
    return texts(lint(r.rules, "t.rules"));
}

bool mentions(const std::vector<std::string>& ds, std::string_view what)
{
    return std::any_of(ds.begin(), ds.end(), [&](const std::string& d) { return d.find(what) != std::string::npos; });
}

Call call(Collective c, int ranks, std::uint64_t bytes)
{
    Call x;
    x.collective = c;
    x.ranks = ranks;
    x.bytes = bytes;
    return x;
}

// A file in the temporary directory, removed when the test ends.
struct TempFile {
    std::filesystem::path path;
    explicit TempFile(std::string_view contents)
    {
        static int counter = 0;
        path = std::filesystem::temp_directory_path() /
               ("loom-test-rules-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".rules");
        std::ofstream out(path, std::ios::binary);
        out.write(contents.data(), std::streamsize(contents.size()));
    }
    ~TempFile()
    {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
};

} // namespace

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

TEST_CASE("rules: K, M and G sizes are powers of 1024, in either case", "[rules]")
{
    CHECK(same(only_rule("allreduce * 1K ring").bytes, K, K));
    CHECK(same(only_rule("allreduce * 1k ring").bytes, K, K));
    CHECK(same(only_rule("allreduce * 3M ring").bytes, 3 * M, 3 * M));
    CHECK(same(only_rule("allreduce * 3m ring").bytes, 3 * M, 3 * M));
    CHECK(same(only_rule("allreduce * 2G ring").bytes, 2 * G, 2 * G));
    CHECK(same(only_rule("allreduce * 2g ring").bytes, 2 * G, 2 * G));
    CHECK(same(only_rule("allreduce * 0K-1023 ring").bytes, 0, 1023));
    CHECK(same(only_rule("allreduce * 4K-1M ring").bytes, 4 * K, M));
    CHECK(same(only_rule("allreduce * 4096-1G ring").bytes, 4 * K, G));
    // The largest size that fits 64 bits.
    CHECK(same(only_rule("allreduce * 17179869183G ring").bytes, 17179869183ull * G, 17179869183ull * G));
    CHECK(only_rule("allreduce * * ring_pipelined segment=128K").segment_bytes == 128 * K);
    CHECK(only_rule("allreduce * * ring_pipelined segment=1000").segment_bytes == 1000);
    CHECK(only_rule("allreduce * * pat buffer=2M").buffer_bytes == 2 * M);
    CHECK(only_rule("allreduce * * pat buffer=1G").buffer_bytes == G);
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
        CHECK(texts(r.diagnostics) ==
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
    const std::string count_suffix = " after a count (sizes take K, M, G; counts none)";
    const std::string bad_range = "error: expected a range (N, N-M, N-* or *), found ";
    const std::vector<std::pair<std::string, std::string>> cases = {
        // unknown collective
        {"allredcue * * ring", "t.rules:2:1: error: unknown collective 'allredcue'; did you mean 'allreduce'?"},
        {"Allreduce * * ring", "t.rules:2:1: error: unknown collective 'Allreduce'; did you mean 'allreduce'?"},
        {"gather * * ring",
         "t.rules:2:1: error: unknown collective 'gather' (valid: allreduce, reduce_scatter, reduce_scatter_block, "
         "allgather, allgatherv, bcast, reduce, barrier, alltoall)"},
        // unknown algorithm for the collective
        {"allreduce * * rnig", "t.rules:2:15: error: no allreduce algorithm 'rnig'; did you mean 'ring'?"},
        {"allreduce  *  *  ring_pipelind",
         "t.rules:2:18: error: no allreduce algorithm 'ring_pipelind'; did you mean 'ring_pipelined'?"},
        {"allreduce * * scatter_allgather",
         "t.rules:2:15: error: no allreduce algorithm 'scatter_allgather' (valid: ring, ring_pipelined, halving_doubling, "
         "recursive_doubling, pat, binomial)"},
        {"bcast * * zzz", "t.rules:2:11: error: no bcast algorithm 'zzz' (valid: binomial, scatter_allgather)"},
        {"barrier * * binomial", "t.rules:2:13: error: no barrier algorithm 'binomial' (valid: bruck, recursive_doubling)"},
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
        {"allreduce 99999999999999999999 * ring", "t.rules:2:11: error: the number '99999999999999999999' is too large"},
        {"allreduce * 18446744073709551616 ring", "t.rules:2:13: error: the number '18446744073709551616' is too large"},
        {"allreduce * 99999999999999999999K ring",
         "t.rules:2:13: error: the number '99999999999999999999K' is too large"},
        {"allreduce * 17179869184G ring", "t.rules:2:13: error: the size '17179869184G' is too large"},
        {"allreduce * 0-17179869184G ring", "t.rules:2:15: error: the size '17179869184G' is too large"},
        {"allreduce * * ring segment=17179869184G", "t.rules:2:28: error: the size '17179869184G' is too large"},
        {"allreduce * * ring buffer=99999999999999999999",
         "t.rules:2:27: error: the number '99999999999999999999' is too large"},
        // bad suffixes
        {"allreduce * 4KB ring", "t.rules:2:14: error: unknown size suffix 'KB' (expected K, M or G)"},
        {"allreduce * 4T ring", "t.rules:2:14: error: unknown size suffix 'T' (expected K, M or G)"},
        {"allreduce * 16777216T ring", "t.rules:2:21: error: unknown size suffix 'T' (expected K, M or G)"},
        {"allreduce * 1.5K ring", "t.rules:2:14: error: unknown size suffix '.5K' (expected K, M or G)"},
        {"allreduce * 4x ring", "t.rules:2:14: error: unknown size suffix 'x' (expected K, M or G)"},
        {"allreduce * * ring buffer=1T", "t.rules:2:28: error: unknown size suffix 'T' (expected K, M or G)"},
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
        {"allreduce * * ring colour=red",
         "t.rules:2:20: error: unknown key 'colour' (valid: segment, buffer, nodes, ranks_per_node, memory, commutative)"},
        {"allreduce * * ring segment", "t.rules:2:20: error: expected key=value after the algorithm, found 'segment'"},
        {"allreduce * * ring =4", "t.rules:2:20: error: expected key=value after the algorithm, found '=4'"},
        {"allreduce * * ring memory=gpu", "t.rules:2:27: error: memory must be 'host' or 'cuda', found 'gpu'"},
        {"allreduce * * ring memory=CUDA", "t.rules:2:27: error: memory must be 'host' or 'cuda', found 'CUDA'"},
        {"allreduce * * ring memory=", "t.rules:2:27: error: memory must be 'host' or 'cuda', found ''"},
        {"allreduce * * ring commutative=true", "t.rules:2:32: error: commutative must be 'yes' or 'no', found 'true'"},
        {"allreduce * * ring commutative=No", "t.rules:2:32: error: commutative must be 'yes' or 'no', found 'No'"},
    };
    for (const auto& [line, expected] : cases) {
        INFO(line);
        CHECK(only_error(line) == expected);
    }
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
    CHECK(texts(r.diagnostics) == std::vector<std::string>{"t.rules:3:4097: error: the line is longer than 4096 bytes"});
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
              "multi.rules:5:11: error: the range '9-2' is empty (ranges are inclusive: the low end must not exceed the high "
              "end)",
              "multi.rules:7:20: error: unknown key 'segmnet'; did you mean 'segment'?",
              // A line with two mistakes reports both.
              "multi.rules:9:14: error: unknown size suffix 'KB' (expected K, M or G)",
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
          std::vector<std::string>{f.path.string() + ":4:18: error: no allreduce algorithm 'rnig'; did you mean 'ring'?"});

    const std::string missing = (std::filesystem::temp_directory_path() / "loom-test-rules-no-such-file.rules").string();
    const ParseResult m = parse_file(missing);
    CHECK(m.rules.empty());
    CHECK(texts(m.diagnostics) == std::vector<std::string>{missing + ": error: cannot open the rule file"});

    // A directory opens but cannot be read; it is not "larger than 64 MiB".
    const std::string dir = std::filesystem::temp_directory_path().string();
    const ParseResult d = parse_file(dir);
    CHECK(d.rules.empty());
    CHECK(texts(d.diagnostics) == std::vector<std::string>{dir + ": error: cannot read the rule file"});

    const TempFile empty("");
    CHECK(texts(parse_file(empty.path.string()).diagnostics) ==
          std::vector<std::string>{empty.path.string() + ": error: the file has no rules and no header 'loom-rules 1'"});
}

// ---- lint --------------------------------------------------------------------------------

TEST_CASE("rules: lint warns of a rule shadowed by one earlier rule, naming it", "[rules]")
{
    CHECK(warnings_of("allreduce * * recursive_doubling\n"
                      "allreduce 2-8 0-4K binomial\n") ==
          std::vector<std::string>{"t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // The earliest shadowing rule is named, and each shadowed rule is warned once.
    CHECK(warnings_of("bcast 1-64 * binomial\n"
                      "bcast * 0-1M scatter_allgather\n"
                      "bcast 2-4 0-4K scatter_allgather\n"
                      "bcast 2-4 0-4K binomial segment=1K\n") ==
          std::vector<std::string>{"t.rules:4:1: warning: this rule can never match: line 2 matches every call it would",
                                   "t.rules:5:1: warning: this rule can never match: line 2 matches every call it would"});
    // An identical rule is shadowed; inclusive ends count.
    CHECK(warnings_of("barrier 4-8 * bruck\nbarrier 4-8 * recursive_doubling\n") ==
          std::vector<std::string>{"t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // Keys: an earlier rule without a key covers a later one with it, not the other way round.
    CHECK(warnings_of("allgather * * bruck\nallgather * * ring nodes=2-4 memory=cuda\n") ==
          std::vector<std::string>{"t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    CHECK(warnings_of("allgather * * bruck nodes=1-8\nallgather * * ring nodes=2-4\n") ==
          std::vector<std::string>{"t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
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
          std::vector<std::string>{"t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    CHECK(warnings_of("allreduce * * ring commutative=yes\nallreduce * 0-4K binomial commutative=yes\n") ==
          std::vector<std::string>{"t.rules:3:1: warning: this rule can never match: line 2 matches every call it would"});
    // A declining rule is passed over, and the rule after it may still shadow a later one.
    CHECK(warnings_of("allreduce * * ring\nallreduce * * binomial\nallreduce * 0-4K recursive_doubling\n") ==
          std::vector<std::string>{"t.rules:4:1: warning: this rule can never match: line 3 matches every call it would"});
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
          std::vector<std::string>{"t.rules:2: warning: barrier: no rule covers message sizes 0-4 (such calls use the defaults)",
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

    // Commutative: ring serves it.
    std::vector<Verdict> trace;
    CHECK(choose({&r}, call(Collective::allreduce, 8, 1 * M), &trace) == &r[2]);
    REQUIRE(trace.size() == 2); // rules of other collectives are not listed
    CHECK(trace[0].rule == &r[1]);
    CHECK(trace[0].outcome == "does not match");
    CHECK(trace[1].rule == &r[2]);
    CHECK(trace[1].outcome == "chosen");

    // Not commutative: ring is passed over, the cuda rule does not match, binomial serves.
    Call nc = call(Collective::allreduce, 8, 1 * M);
    nc.commutative = false;
    trace.clear();
    CHECK(choose({&r}, nc, &trace) == &r[4]);
    REQUIRE(trace.size() == 4);
    CHECK(trace[0].rule == &r[1]);
    CHECK(trace[0].outcome == "does not match");
    CHECK(trace[1].rule == &r[2]);
    CHECK(trace[1].outcome == "matches, but ring cannot serve the call: the op is not commutative");
    CHECK(trace[2].rule == &r[3]);
    CHECK(trace[2].outcome == "does not match");
    CHECK(trace[3].rule == &r[4]);
    CHECK(trace[3].outcome == "chosen");

    // In cuda memory, halving_doubling also declines.
    nc.memory = MemoryKind::cuda;
    trace.clear();
    CHECK(choose({&r}, nc, &trace) == &r[4]);
    REQUIRE(trace.size() == 4);
    CHECK(trace[2].outcome == "matches, but halving_doubling cannot serve the call: the op is not commutative");

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
    // A rule naming no registered algorithm (built by hand) is passed over too.
    std::vector<Rule> hand(1);
    hand[0].collective = Collective::allreduce;
    hand[0].algorithm = "no_such";
    trace.clear();
    CHECK(choose({&hand}, call(Collective::allreduce, 2, 0), &trace) == nullptr);
    REQUIRE(trace.size() == 1);
    CHECK(trace[0].outcome == "matches, but no_such cannot serve the call: no such algorithm");
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
        CHECK(find_algorithm(d[i].collective, d[i].algorithm) != nullptr);
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

TEST_CASE("rules: the defaults choose an algorithm for every call, order-preserving when the op is not commutative",
          "[rules]")
{
    const std::vector<const std::vector<Rule>*> tables = {&default_rules()};
    for (int c = 0; c < kCollectiveCount; ++c) {
        const Collective coll = Collective(c);
        const bool reduction = coll == Collective::allreduce || coll == Collective::reduce;
        for (std::uint64_t bytes : {std::uint64_t(0), std::uint64_t(1), 4 * K, 4 * K + 1, 256 * K, G})
            for (int ranks = 2; ranks <= 64; ++ranks) {
                Call x = call(coll, ranks, bytes);
                const Rule* r = choose(tables, x);
                if (r == nullptr) {
                    FAIL_CHECK("no default rule for " << to_string(coll) << " ranks=" << ranks << " bytes=" << bytes);
                    continue;
                }
                const Algorithm* a = find_algorithm(coll, r->algorithm);
                REQUIRE(a != nullptr);
                CHECK(!why_not(*a, CallShape{ranks, bytes, true}));

                x.commutative = false;
                const Rule* n = choose(tables, x);
                if (reduction && n == nullptr)
                    FAIL_CHECK("no default rule for non-commutative " << to_string(coll) << " ranks=" << ranks
                                                                       << " bytes=" << bytes);
                if (n != nullptr) {
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
                                                 "pat", "binomial"};
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
    CHECK(nearest("abcdefghi", {"abcxxxghi"}) == "abcxxxghi");  // 3 of 9
    CHECK(nearest("abcdefghi", {"abxxxxghi"}) == "");           // 4 of 9
    CHECK(nearest("ab", {"xy"}) == "xy");                        // 2
    CHECK(nearest("ab", {"xyz"}) == "");                         // 3
    // The closest candidate wins; ties go to the first.
    CHECK(nearest("bcasts", {"broadcast", "bcast"}) == "bcast");
    CHECK(nearest("abc", {"abd", "abe"}) == "abd");
    // Words longer than 64 bytes are never close (bounded work for hostile input).
    const std::string long64(64, 'a'), long65(65, 'a');
    CHECK(nearest(long64.substr(0, 63) + "b", {long64}) == long64);
    CHECK(nearest(long65, {long64}) == "");
    CHECK(nearest(std::string(1 << 20, 'x'), algos) == "");
}

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
    CHECK(r.diagnostics.back().to_string() == "junk.rules:1002: error: too many errors; the rest of the file is not checked");
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

    const Resolved unknown = resolve(3, {"a", "unknown", "a"});
    CHECK((unknown.nodes == 0 && unknown.ranks_per_node == 0));
    CHECK(unknown.candidates[std::size_t(Collective::bcast)].front().rule->source.rfind("default:", 0) == 0);

    load_user_rules("");
    std::remove(path.c_str());
}
