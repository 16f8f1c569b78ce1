#include "selection.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>

namespace loom::rules {

namespace {
std::vector<Rule>& user_table()
{
    static std::vector<Rule> rules;
    return rules;
}
std::vector<Rule>& site_table()
{
    static std::vector<Rule> rules;
    return rules;
}

int& ompi_major_value()
{
    static int major = 0;
    return major;
}

std::mutex& cache_mutex()
{
    static std::mutex m;
    return m;
}
std::map<std::array<int, 3>, std::shared_ptr<const Resolved>>& cache()
{
    static std::map<std::array<int, 3>, std::shared_ptr<const Resolved>> resolved;
    return resolved;
}

bool communicator_matches(const Rule& r, const Resolved& c)
{
    if (!r.ranks.contains(std::uint64_t(c.ranks))) return false;
    if (r.nodes && (c.nodes == 0 || !r.nodes->contains(std::uint64_t(c.nodes)))) return false;
    if (r.ranks_per_node && (c.ranks_per_node == 0 || !r.ranks_per_node->contains(std::uint64_t(c.ranks_per_node))))
        return false;
    if (r.ompi && (c.ompi_major == 0 || !r.ompi->contains(std::uint64_t(c.ompi_major)))) return false;
    return true;
}
} // namespace

namespace {
// Loads one layer's file into `table` (emptied first; left empty if the file has errors).
std::vector<Diagnostic> load_layer(std::vector<Rule>& table, const std::string& path)
{
    table.clear();
    {
        std::lock_guard lock(cache_mutex());
        cache().clear();
    }
    if (path.empty()) return {};
    ParseResult parsed = parse_file(path);
    if (parsed.ok()) {
        // Linting compares every pair of rules: fine for the tables people write, too slow
        // for MPI_Init on a machine-generated file of 100000 rules (loom-rules check lints
        // any size).
        constexpr std::size_t kLintAtInit = 5000;
        if (parsed.rules.size() <= kLintAtInit) {
            const auto warnings = lint(parsed.rules, path);
            parsed.diagnostics.insert(parsed.diagnostics.end(), warnings.begin(), warnings.end());
        } else {
            parsed.diagnostics.push_back(
                {Diagnostic::Severity::warning, path, 0, 0,
                 std::to_string(parsed.rules.size()) + " rules: not linted at start-up (run loom-rules check)"});
        }
        table = std::move(parsed.rules);
    }
    return parsed.diagnostics;
}
} // namespace

std::vector<Diagnostic> load_user_rules(const std::string& path) { return load_layer(user_table(), path); }
std::vector<Diagnostic> load_site_rules(const std::string& path) { return load_layer(site_table(), path); }

const std::vector<Rule>& user_rules() { return user_table(); }
const std::vector<Rule>& site_rules() { return site_table(); }
std::vector<const std::vector<Rule>*> file_layers() { return {&user_table(), &site_table()}; }

void set_open_mpi_major(int major)
{
    ompi_major_value() = major;
    std::lock_guard lock(cache_mutex());
    cache().clear();
}

int open_mpi_major() { return ompi_major_value(); }

Resolved narrow(const std::vector<const std::vector<Rule>*>& tables, int ranks, int nodes, int ranks_per_node,
                int ompi_major)
{
    Resolved r;
    r.ranks = ranks;
    r.nodes = nodes;
    r.ranks_per_node = ranks_per_node;
    r.ompi_major = ompi_major;
    for (const std::vector<Rule>* table : tables)
        for (const Rule& rule : *table) {
            // A fallback rule stays, without an algorithm: dropping it would let a later rule
            // serve the calls it hands to the next component.
            const Algorithm* algorithm = find_algorithm(rule.collective, rule.algorithm);
            if ((algorithm != nullptr || rule.is_fallback()) && communicator_matches(rule, r))
                r.candidates[std::size_t(rule.collective)].push_back({&rule, algorithm});
        }
    return r;
}

Resolved resolve(int ranks, int nodes, int ranks_per_node)
{
    Resolved r = narrow({&user_rules(), &site_rules(), &default_rules()}, ranks, nodes, ranks_per_node, open_mpi_major());
    // The leaders of a hierarchical algorithm: one rank per node.
    if (nodes >= 2 && nodes < ranks) r.leaders = resolved_for(nodes, nodes, 1);
    return r;
}

NodeShape node_shape(const std::vector<std::string>& hostnames)
{
    NodeShape shape;
    if (!hostnames.empty()) {
        std::unordered_map<std::string, int> per_node;
        for (const std::string& h : hostnames) ++per_node[h];
        shape.nodes = int(per_node.size());
        for (const auto& [host, n] : per_node) shape.ranks_per_node = std::max(shape.ranks_per_node, n);
    }
    return shape;
}

Resolved resolve(int ranks, const std::vector<std::string>& hostnames)
{
    const NodeShape shape = node_shape(hostnames);
    return resolve(ranks, shape.nodes, shape.ranks_per_node);
}

std::shared_ptr<const Resolved> resolved_for(int ranks, int nodes, int ranks_per_node)
{
    const std::array<int, 3> key{ranks, nodes, ranks_per_node};
    std::unique_lock lock(cache_mutex());
    if (auto it = cache().find(key); it != cache().end()) return it->second;
    lock.unlock(); // resolve() takes the lock again for the leaders' table
    auto made = std::make_shared<const Resolved>(resolve(ranks, nodes, ranks_per_node));
    lock.lock();
    return cache().emplace(key, std::move(made)).first->second; // another thread's, if it won
}

} // namespace loom::rules
