// Internal to tools/loom-rules: what its source files share.
#pragma once

#include "rules.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loom::rules_tool {

// Bad usage: printed with the usage text, exit status 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One output line: fields, aligned in columns with the other rows', and a trailing comment;
// or, with no fields, the comment text printed as it is.
struct Row {
    std::vector<std::string> fields;
    std::string comment;
};
std::string render(const std::vector<Row>& rows);
// The comment under the header of a rule file loom-rules writes (show, from-tuned): which loom
// wrote it, "# Written by loom-rules show of loom 0.2.0 (commit 40a683b1c856)."
Row written_by(const std::string& command);

// A rule's columns and options as rule-file text (rules.hpp).
using rules::rule_fields;
std::string join(const std::vector<std::string>& words, const char* sep);

struct Args {
    std::vector<std::string> positional;
    std::map<std::string, std::string> values;
    std::set<std::string> flags;
    const std::string* get(const std::string& key) const { return values.count(key) ? &values.at(key) : nullptr; }
};
Args parse_args(const std::vector<std::string>& in, std::vector<std::string_view> valued,
                const std::vector<std::string_view>& flags);

// What a job started here reads (loom_rules_job.cpp): loom's parameters as ompi_info gives them
// (name: value and source, e.g. "environment", "file (/etc/openmpi/openmpi-mca-params.conf:3)"),
// and the rule files of its layers, which --rules and --site-rules replace; --no-job: none of it.
struct JobParam {
    std::string value, source;
};
struct JobSettings {
    bool read = false;  // ompi_info was asked (not --no-job)
    bool found = false; // it lists loom
    std::map<std::string, JobParam> params;
    std::string user, user_from; // the user's rule file ("" none) and where it was named
    std::string site, site_from; // the site's
    std::map<std::string, std::string> forced; // collective -> its coll_loom_<c>_algorithm, where set
    std::string value(const std::string& name) const;
    std::string describe(const std::string& name) const; // "NAME, SOURCE"
};
JobSettings read_job_settings(const Args& a);
// Loads the user's and the site's layers as a job does (a file with errors is left out): their
// diagnostics.
std::vector<rules::Diagnostic> load_job_layers(const JobSettings& job);
// "what a job reads: ..." lines (and to stderr, where ompi_info lists no loom, that a job here
// would not load it).
void print_job_reads(const JobSettings& job, std::FILE* to);

// loom-rules from-tuned FILE (loom_rules_tuned.cpp).
int cmd_from_tuned(const std::vector<std::string>& args);

} // namespace loom::rules_tool
