// Reading rule files, and the embedded default table.
#include "rules.hpp"

#include <fstream>
#include <iterator>
#include <mutex>
#include <vector>

namespace loom::rules {

namespace detail {
extern const std::string_view kDefaultRulesText;
}

ParseResult parse_file(const std::string& path)
{
    constexpr std::size_t kMaxFileBytes = std::size_t(64) << 20;
    std::ifstream in(path, std::ios::binary);
    ParseResult failed;
    if (!in) {
        failed.diagnostics.push_back({Diagnostic::Severity::error, path, 0, 0, "cannot open the rule file"});
        return failed;
    }
    // Read in chunks rather than trusting the size a seek reports: that size is wrong for
    // directories (huge), pipes and /proc files (none).
    std::string text;
    std::vector<char> chunk(std::size_t(1) << 16);
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0) {
        text.append(chunk.data(), std::size_t(in.gcount()));
        if (text.size() > kMaxFileBytes) {
            failed.diagnostics.push_back(
                {Diagnostic::Severity::error, path, 0, 0, "the rule file is larger than 64 MiB"});
            return failed;
        }
    }
    if (in.bad()) {
        failed.diagnostics.push_back({Diagnostic::Severity::error, path, 0, 0, "cannot read the rule file"});
        return failed;
    }
    return parse(text, path);
}

std::string_view default_rules_text() { return detail::kDefaultRulesText; }

const std::vector<Rule>& default_rules()
{
    // The embedded table is checked by the tests; parsed once, on first use.
    static const std::vector<Rule> rules = parse(detail::kDefaultRulesText, "default").rules;
    return rules;
}

} // namespace loom::rules
