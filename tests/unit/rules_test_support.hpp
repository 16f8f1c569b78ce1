// Shared helpers of the rule-table tests (test_rules_parse.cpp, test_rules_select.cpp).
#pragma once

#include "decide.hpp"
#include "registry.hpp"
#include "rules.hpp"
#include "selection.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace loom::rules::test {

constexpr std::uint64_t K = 1024, M = K * K, G = M * K, T = G * K;

// decide() over the tables of a test (in order) instead of the process's, narrowed to the
// call's communicator (narrow()); the deciding rule (chosen or fallback), or nullptr.
inline const Rule* choose(const std::vector<const std::vector<Rule>*>& tables, const Call& call,
                          std::vector<Verdict>* trace = nullptr)
{
    return decide(facts_of(call), narrow(tables, call.ranks, call.nodes, call.ranks_per_node, call.ompi_major), trace)
        .rule;
}

// The candidate of `resolved` that decides the call (decide()), or nullptr.
inline const Candidate* choose_candidate(const Resolved& resolved, const Call& call)
{
    const Rule* rule = decide(facts_of(call), resolved).rule;
    for (const Candidate& c : resolved.candidates[std::size_t(call.collective)])
        if (c.rule == rule) return &c;
    return nullptr;
}
constexpr const char* kShape = " (a rule is: collective ranks bytes algorithm [key=value ...])";

// Parses `body` after a header line, as the file "t.rules" (so the body's first line is line 2).
inline ParseResult parse_body(std::string_view body) { return parse("loom-rules 1\n" + std::string(body), "t.rules"); }

inline std::vector<std::string> texts(const std::vector<Diagnostic>& ds)
{
    std::vector<std::string> out;
    for (const Diagnostic& d : ds) out.push_back(d.to_string());
    return out;
}

// The one diagnostic a bad line produces (checking that it drops the rule); all of them, one
// per line, if there is not exactly one.
inline std::string only_error(std::string_view body)
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

inline Rule only_rule(std::string_view body)
{
    const ParseResult r = parse_body(body);
    INFO(body);
    INFO(Catch::Detail::stringify(texts(r.diagnostics)));
    REQUIRE(r.ok());
    REQUIRE(r.diagnostics.empty());
    REQUIRE(r.rules.size() == 1);
    return r.rules[0];
}

inline bool same(const Range& r, std::uint64_t lo, std::uint64_t hi) { return r.lo == lo && r.hi == hi; }

inline std::vector<std::string> warnings_of(std::string_view body)
{
    const ParseResult r = parse_body(body);
    INFO(body);
    INFO(Catch::Detail::stringify(texts(r.diagnostics)));
    REQUIRE(r.ok());
    return texts(lint(r.rules, "t.rules"));
}

inline bool mentions(const std::vector<std::string>& ds, std::string_view what)
{
    return std::any_of(ds.begin(), ds.end(), [&](const std::string& d) { return d.find(what) != std::string::npos; });
}

inline Call call(Collective c, int ranks, std::uint64_t bytes)
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

} // namespace loom::rules::test
