// Internal to tools/loom-rules: what its source files share.
#pragma once

#include "rules.hpp"

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

// A rule's columns and options as rule-file text.
std::vector<std::string> rule_fields(const rules::Rule& r);
std::string join(const std::vector<std::string>& words, const char* sep);

struct Args {
    std::vector<std::string> positional;
    std::map<std::string, std::string> values;
    std::set<std::string> flags;
    const std::string* get(const std::string& key) const { return values.count(key) ? &values.at(key) : nullptr; }
};
Args parse_args(const std::vector<std::string>& in, std::vector<std::string_view> valued,
                const std::vector<std::string_view>& flags);

// loom-rules from-tuned FILE (loom_rules_tuned.cpp).
int cmd_from_tuned(const std::vector<std::string>& args);

} // namespace loom::rules_tool
