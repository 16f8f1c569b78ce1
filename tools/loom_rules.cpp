// loom-rules: checks, explains, shows and converts loom's rule tables (selection_rules/).
//
//   loom-rules check FILE                  diagnostics and a summary; exit 1 on errors
//   loom-rules explain COLLECTIVE --ranks N --bytes B [--nodes K] [--ranks-per-node K]
//              [--non-commutative] [--memory host|cuda] [--rules FILE] [--site-rules FILE|none]
//              [--no-job] [--forced NAME] [--learned FILE]
//              [--segment ready|not-yet|pending|none] [--single-copy on|off] [--small-int-sum]
//              [--element-bytes E] [--segment-size B] [--pat-buffer-size B]
//              [--topology cartesian|graph|dist_graph] [--degree N] [--ndims N]
//                                          every rule considered and why, and the decision
//                                          of loom's one chooser (decide.hpp), as a job makes it
//   loom-rules show [--rules FILE] [--site-rules FILE|none] [--no-job] [--learned FILE]
//                                          the effective table, itself a valid rule file
// --learned FILE: a file online tuning saved (coll_loom_autotune_save), read as the layer it was
// in the job that learned it - above every rule file, for blocking calls (selection_rules/
// learned.hpp): what that job decided once it had learned.
// explain and show read what a job started here reads (loom_rules_job.cpp): the environment's
// and Open MPI's parameter files' settings for loom, and the rule files they name, in layers.
//   loom-rules from-tuned FILE             an Open MPI 4.1 coll/tuned dynamic rules file as loom rules
//   loom-rules algorithms [--markdown]     every algorithm of every collective, from the registry:
//                                          summary, cost, what it needs, the options it reads
//   loom-rules --version                   which loom this is (version, commit, Open MPI release)
//
// B is loom's message size for the collective (docs/algorithms.md, "What loom serves"). Exit
// codes: 0 success (a rule decided, a fallback rule too); 1 a bad file, or no rule serves the
// call; 2 bad usage.
#include "loom_rules.hpp"
#include "layouts.hpp"
#include "registry.hpp"
#include "decide.hpp"
#include "rules.hpp"
#include "tool_version.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace loom;
using namespace loom::rules;

namespace loom::rules_tool {

constexpr const char* kUsage =
    "usage: loom-rules check FILE\n"
    "       loom-rules explain COLLECTIVE --ranks N --bytes B [--nodes K] [--ranks-per-node K]\n"
    "                  [--non-commutative] [--memory host|cuda] [--rules FILE] [--site-rules FILE|none]\n"
    "                  [--no-job] [--forced NAME] [--learned FILE]\n"
    "                  [--segment ready|not-yet|pending|none] [--single-copy on|off] [--small-int-sum]\n"
    "                  [--element-bytes E] [--segment-size B] [--pat-buffer-size B] [--ompi MAJOR]\n"
    "                  [--topology cartesian|graph|dist_graph] [--degree N] [--ndims N] (neighbor_*)\n"
    "       loom-rules show [--rules FILE] [--site-rules FILE|none] [--no-job] [--ompi MAJOR] [--learned FILE]\n"
    "       loom-rules from-tuned FILE\n"
    "       loom-rules algorithms [--markdown]\n"
    "       loom-rules --help | --version\n"
    "B takes K, M, G, T (powers of 1024); it is loom's message size for the collective.\n"
    "explain decides for the Open MPI loom-rules was built with (--ompi 4 or 5: another).\n"
    "explain and show read what a job started here reads: loom's parameters from this environment and\n"
    "Open MPI's parameter files (through ompi_info), the user's rule file (coll_loom_rules), then the\n"
    "site's (coll_loom_site_rules), then the built-in rules; --rules and --site-rules replace a file,\n"
    "--no-job reads none of it. --learned FILE: rules online tuning saved (coll_loom_autotune_save), as\n"
    "the layer they were in the job that learned them: above every rule file, for blocking calls.\n";

// ---- Text ----------------------------------------------------------------------------------

Row written_by(const std::string& command)
{
    return {{}, "# Written by loom-rules " + command + " of " LOOM_VERSION_TEXT "."};
}

std::string join(const std::vector<std::string>& words, const char* sep)
{
    std::string s;
    for (const std::string& w : words) s += (s.empty() ? "" : sep) + w;
    return s;
}

std::string render(const std::vector<Row>& rows)
{
    std::vector<std::size_t> width;
    for (const Row& r : rows)
        for (std::size_t k = 0; k < r.fields.size(); ++k) {
            width.resize(std::max(width.size(), k + 1));
            width[k] = std::max(width[k], r.fields[k].size());
        }
    std::string out;
    for (const Row& r : rows) {
        std::string line = r.fields.empty() ? r.comment : "";
        if (!r.fields.empty()) {
            for (std::size_t k = 0; k < width.size(); ++k) {
                const std::string f = k < r.fields.size() ? r.fields[k] : "";
                line += f + std::string(width[k] - f.size() + 2, ' ');
            }
            if (!r.comment.empty()) line += "# " + r.comment;
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

void print_diagnostics(const std::vector<Diagnostic>& ds, std::FILE* to)
{
    for (const Diagnostic& d : ds) std::fprintf(to, "%s\n", d.to_string().c_str());
}

// ---- Arguments -----------------------------------------------------------------------------

Args parse_args(const std::vector<std::string>& in, std::vector<std::string_view> valued,
                const std::vector<std::string_view>& flags)
{
    Args a;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::string& s = in[i];
        if (s.rfind("--", 0) != 0) {
            a.positional.push_back(s);
        } else if (std::find(flags.begin(), flags.end(), s) != flags.end()) {
            a.flags.insert(s);
        } else if (std::find(valued.begin(), valued.end(), s) != valued.end()) {
            if (i + 1 >= in.size()) throw UsageError(s + " needs a value");
            a.values[s] = in[++i];
        } else {
            valued.insert(valued.end(), flags.begin(), flags.end());
            const std::string near = nearest(s, valued);
            throw UsageError("unknown option " + s + (near.empty() ? "" : "; did you mean " + near + "?"));
        }
    }
    return a;
}

// A count, or with `sizes` a size with an optional K/M/G/T suffix (64-bit, as rule files).
std::uint64_t parse_number(const std::string& text, const std::string& option, bool sizes)
{
    std::uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    const std::string suffix(p, end);
    int shift = 0;
    if (sizes && (suffix == "K" || suffix == "k"))
        shift = 10;
    else if (sizes && (suffix == "M" || suffix == "m"))
        shift = 20;
    else if (sizes && (suffix == "G" || suffix == "g"))
        shift = 30;
    else if (sizes && (suffix == "T" || suffix == "t"))
        shift = 40;
    else if (!suffix.empty())
        ec = std::errc::invalid_argument;
    if (ec != std::errc() || p == text.data() || v > (UINT64_MAX >> shift))
        throw UsageError(option + " expects " + (sizes ? "a size (N, NK, NM, NG or NT)" : "a count") + ", found '" +
                         text + "'");
    return v << shift;
}

// An optional count option (0 when absent) in [min, 2^30].
int parse_count(const Args& a, const std::string& option, int min)
{
    const std::string* s = a.get(option);
    const std::uint64_t v = s ? parse_number(*s, option, false) : 0;
    if (s && (v < std::uint64_t(min) || v > (1u << 30)))
        throw UsageError(option + " must be between " + std::to_string(min) + " and " + std::to_string(1u << 30));
    return int(v);
}

// A collective in one of its forms: "allreduce", "iallreduce" (non-blocking),
// "allreduce_init" (persistent).
std::pair<Collective, Form> collective_named(const std::string& name)
{
    std::vector<std::string> names;
    for (Form f : {Form::blocking, Form::nonblocking, Form::persistent})
        for (int c = 0; c < kCollectiveCount; ++c) {
            const std::string n = form_name(Collective(c), f == Form::blocking ? std::optional<Form>{} : f);
            if (n == name) return {Collective(c), f};
            names.push_back(n);
        }
    const std::string near = nearest(name, std::vector<std::string_view>(names.begin(), names.end()));
    throw UsageError("unknown collective '" + name + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

// loom's message size, per collective (docs/algorithms.md, "What loom serves").
const char* size_meaning(Collective c)
{
    if (uniform_neighbour_blocks(c))
        return "on a Cartesian communicator, or a graph or distributed graph every rank agreed is a stencil of one "
               "block size (algorithms/combining.hpp), the larger of a send and a receive block, which every rank "
               "knows alike; on other graphs 0 (no rank knows the others' blocks)";
    if (counts_differ_by_rank(c)) return "always 0 (its counts differ from rank to rank)";
    return layout_ops(layout(c)).size_meaning.data(); // message_bytes' definition, by layout
}

// The rule files a job started here reads (or --rules, --site-rules), loaded into their layers
// as the plugin loads them: a file with errors is reported and left out. False if a file named
// on the command line has errors (a mistake of the caller's, as before layers).
bool load_layers(const Args& a, const JobSettings& job, int ompi_major)
{
    set_open_mpi_major(ompi_major);
    const auto diagnostics = load_job_layers(job);
    bool named_bad = false;
    std::set<std::string> reported;
    for (const Diagnostic& d : diagnostics) {
        if (d.severity != Diagnostic::Severity::error) continue;
        std::fprintf(stderr, "%s\n", d.to_string().c_str());
        if (!reported.insert(d.file).second) continue;
        const bool named = (a.get("--rules") && *a.get("--rules") == d.file) ||
                           (a.get("--site-rules") && *a.get("--site-rules") == d.file);
        named_bad = named_bad || named;
        std::fprintf(stderr, "loom-rules: %s has errors%s\n", d.file.c_str(),
                     named ? "" : "; a job leaves it out, and so does this answer");
    }
    return !named_bad;
}

// --learned FILE: the rules online tuning saved, as the layer they were in the job (learned.hpp):
// each without a form matches blocking calls only, as there. Empty without --learned; exit 1 if
// the file has errors.
struct LearnedFile {
    std::string path;
    std::vector<Rule> rules;
};
bool load_learned(const Args& a, LearnedFile& learned)
{
    const std::string* path = a.get("--learned");
    if (path == nullptr) return true;
    ParseResult r = parse_file(*path);
    if (!r.ok()) {
        print_diagnostics(r.diagnostics, stderr);
        std::fprintf(stderr, "loom-rules: %s has errors\n", path->c_str());
        return false;
    }
    for (Rule& rule : r.rules)
        if (!rule.form) rule.form = Form::blocking;
    learned.path = *path;
    learned.rules = std::move(r.rules);
    return true;
}

// The layers in the order a call consults them, with their names for the listing.
std::vector<std::pair<std::string, const std::vector<Rule>*>> layers(const JobSettings& job,
                                                                     const LearnedFile& learned)
{
    return {{learned.path.empty() ? "" : "the learned rules (" + learned.path + ", blocking calls)", &learned.rules},
            {job.user.empty() ? "" : "the user's rules (" + job.user + ")", &user_rules()},
            {job.site.empty() ? "" : "the site's rules (" + job.site + ")", &site_rules()},
            {"loom's built-in rules", &default_rules()}};
}

std::string layers_text(const JobSettings& job, const LearnedFile& learned)
{
    std::vector<std::string> names;
    for (const auto& [name, table] : layers(job, learned))
        if (!name.empty()) names.push_back(name);
    return join(names, ", then ");
}

// ---- check ---------------------------------------------------------------------------------

int cmd_check(const std::vector<std::string>& in)
{
    const Args a = parse_args(in, {}, {});
    if (a.positional.size() != 1) throw UsageError("check expects one FILE");
    const std::string& file = a.positional[0];
    const ParseResult r = parse_file(file);
    std::vector<Diagnostic> ds = r.diagnostics;
    // Only a table that parsed is linted: with lines missing, its gaps and shadows would mislead.
    if (r.ok())
        for (Diagnostic& d : lint(r.rules, file)) ds.push_back(std::move(d));
    std::stable_sort(ds.begin(), ds.end(), [](const Diagnostic& x, const Diagnostic& y) { return x.line < y.line; });
    print_diagnostics(ds, stdout);
    const auto errors = std::size_t(std::count_if(
        ds.begin(), ds.end(), [](const Diagnostic& d) { return d.severity == Diagnostic::Severity::error; }));
    std::printf("%s: %zu rules, %zu errors, %zu warnings\n", file.c_str(), r.rules.size(), errors, ds.size() - errors);
    return errors ? 1 : 0;
}

// ---- explain -------------------------------------------------------------------------------

// Which keys of a rule (of the call's collective) exclude the call.
std::string exclusion(const Rule& r, const Call& c)
{
    std::vector<std::string> why;
    if (!r.ranks.contains(std::uint64_t(c.ranks)))
        why.push_back("ranks " + range_text(r.ranks, false) + " excludes " + std::to_string(c.ranks));
    if (!r.bytes.contains(c.bytes))
        why.push_back("bytes " + range_text(r.bytes, true) + " excludes " + std::to_string(c.bytes));
    auto count_key = [&](const char* key, const char* option, const std::optional<Range>& range, int value) {
        if (range && value == 0)
            why.push_back(key + range_text(*range, false) + " needs a known count (" + option + ")");
        else if (range && !range->contains(std::uint64_t(value)))
            why.push_back(key + range_text(*range, false) + " excludes " + std::to_string(value));
    };
    count_key("nodes=", "--nodes", r.nodes, c.nodes);
    count_key("ranks_per_node=", "--ranks-per-node", r.ranks_per_node, c.ranks_per_node);
    count_key("ompi=", "--ompi", r.ompi, c.ompi_major);
    if (r.memory && *r.memory != c.memory)
        why.push_back(*r.memory == MemoryKind::cuda ? "memory=cuda excludes host memory"
                                                    : "memory=host excludes cuda memory");
    if (r.commutative && *r.commutative != c.commutative)
        why.push_back(*r.commutative ? "commutative=yes excludes a non-commutative op"
                                     : "commutative=no excludes a commutative op");
    if (r.topology && *r.topology != c.topology)
        why.push_back("topology=" + std::string(to_string(*r.topology)) + " excludes " +
                      std::string(to_string(c.topology)) + " (--topology)");
    count_key("degree=", "--degree", r.degree, c.degree);
    if (r.ndims && c.topology != TopologyShape::cartesian)
        why.push_back("ndims=" + range_text(*r.ndims, false) + " matches a Cartesian grid only");
    else if (r.ndims)
        count_key("ndims=", "--ndims", r.ndims, c.ndims);
    return why.empty() ? "does not match" : "does not match: " + join(why, "; ");
}

// The call explain decides for, and the parameters it prints the options with.
struct ExplainCall {
    CallFacts facts;
    std::string forced;
    std::uint64_t segment_size = LOOM_SEGMENT_SIZE_DEFAULT; // coll_loom_segment_size's default
    std::uint64_t pat_buffer_size = 1048576; // coll_loom_pat_buffer_size's default
    std::uint64_t knomial_radix = 4;         // coll_loom_knomial_radix's default
    std::uint64_t alltoallv_max_requests = 32; // coll_loom_alltoallv_max_requests's default
};

// --topology, --degree, --ndims: the neighbourhood collectives' topology facts (rules.hpp, Call),
// as every rank of a job knows them alike.
void parse_topology(const Args& a, CallFacts& call)
{
    const std::string* t = a.get("--topology");
    if (counts(call.collective) != Counts::per_neighbour) {
        if (t || a.get("--degree") || a.get("--ndims"))
            throw UsageError("--topology, --degree and --ndims are the neighbourhood collectives' (neighbor_*)");
        return;
    }
    if (!t) {
        if (a.get("--degree") || a.get("--ndims")) throw UsageError("--degree and --ndims need --topology");
        return;
    }
    if (*t == "cartesian")
        call.topology = TopologyShape::cartesian;
    else if (*t == "graph")
        call.topology = TopologyShape::graph;
    else if (*t == "dist_graph")
        call.topology = TopologyShape::dist_graph;
    else
        throw UsageError("--topology must be cartesian, graph or dist_graph, found '" + *t + "'");
    if (a.get("--ndims") && call.topology != TopologyShape::cartesian)
        throw UsageError("--ndims: only a Cartesian grid has dimensions");
    if (a.get("--degree") && call.topology == TopologyShape::dist_graph)
        throw UsageError("--degree: a dist graph has no degree every rank knows (each knows its own neighbours)");
    if (a.get("--degree")) call.degree = int(parse_count(a, "--degree", 1));
    if (a.get("--ndims")) call.ndims = int(parse_count(a, "--ndims", 1));
    if (call.topology != TopologyShape::cartesian) return;
    // A Cartesian grid's degree is 2 ndims: either gives the other.
    if (!a.get("--ndims") && !a.get("--degree")) throw UsageError("--topology cartesian needs --ndims or --degree");
    if (!a.get("--ndims")) call.ndims = call.degree / 2;
    if (!a.get("--degree")) call.degree = 2 * call.ndims;
    if (call.degree != 2 * call.ndims)
        throw UsageError("--degree of a Cartesian grid is 2 x --ndims (" + std::to_string(2 * call.ndims) + ")");
}

ExplainCall parse_call(const Args& a)
{
    if (a.positional.size() != 1) throw UsageError("explain expects one COLLECTIVE");
    ExplainCall e;
    CallFacts& call = e.facts;
    std::tie(call.collective, call.form) = collective_named(a.positional[0]);
    // Non-blocking and persistent calls use the shared segment, never single copy
    // (coll_loom_request_start.c); a persistent request's init makes the segment, a non-blocking
    // call starts its set-up and the calls decided meanwhile see it pending (coll_loom_call.c,
    // choose).
    if (call.form != Form::blocking) call.single_copy = false;
    if (!a.get("--ranks")) throw UsageError("explain needs --ranks N");
    call.ranks = int(parse_count(a, "--ranks", 2)); // loom serves communicators of 2 or more ranks
    if (const std::string* b = a.get("--bytes"))
        call.bytes = parse_number(*b, "--bytes", true);
    else if (call.collective != Collective::barrier)
        throw UsageError("explain needs --bytes B");
    call.nodes = int(parse_count(a, "--nodes", 1));
    call.ranks_per_node = int(parse_count(a, "--ranks-per-node", 1));
    // The Open MPI a job runs in: the one this build of loom is for, unless --ompi says.
    call.ompi_major = a.get("--ompi") ? int(parse_count(a, "--ompi", 1)) : LOOM_OMPI_MAJOR;
    call.commutative = !reduces(call.collective) || a.flags.count("--non-commutative") == 0;
    if (const std::string* m = a.get("--memory")) {
        if (*m != "host" && *m != "cuda") throw UsageError("--memory must be host or cuda, found '" + *m + "'");
        call.memory = *m == "cuda" ? MemoryKind::cuda : MemoryKind::host;
    }
    if (const std::string* f = a.get("--forced")) {
        e.forced = *f;
        if (e.forced != kFallback && find_algorithm(call.collective, e.forced) == nullptr)
            throw UsageError("--forced: no " + std::string(to_string(call.collective)) + " algorithm '" + *f + "'");
    }
    if (const std::string* g = a.get("--segment")) {
        if (call.form != Form::nonblocking && *g == "pending")
            throw UsageError("--segment pending: only a non-blocking call is decided while its segment is being set "
                             "up (a blocking call or a persistent init waits for the set-up)");
        if (*g == "ready")
            call.segment = SegmentState::ready;
        else if (*g == "not-yet")
            call.segment = SegmentState::not_yet;
        else if (*g == "none")
            call.segment = SegmentState::none;
        else if (*g == "pending")
            call.segment = SegmentState::pending;
        else
            throw UsageError("--segment must be ready, not-yet, pending or none, found '" + *g + "'");
    }
    if (const std::string* sc = a.get("--single-copy")) {
        if (*sc != "on" && *sc != "off") throw UsageError("--single-copy must be on or off, found '" + *sc + "'");
        if (call.form != Form::blocking && *sc == "on")
            throw UsageError("--single-copy: non-blocking and persistent calls never use single copy");
        call.single_copy = *sc == "on";
    }
    call.keep_from_open_mpi = a.flags.count("--small-int-sum") != 0;
    if (call.keep_from_open_mpi && !reduces(call.collective))
        throw UsageError("--small-int-sum applies to reductions only");
    if (reduces(call.collective))
        call.element_bytes = std::size_t(
            parse_number(a.get("--element-bytes") ? *a.get("--element-bytes") : "4", "--element-bytes", true));
    parse_topology(a, call);
    if (const std::string* v = a.get("--segment-size")) e.segment_size = parse_number(*v, "--segment-size", true);
    if (const std::string* v = a.get("--pat-buffer-size"))
        e.pat_buffer_size = parse_number(*v, "--pat-buffer-size", true);
    return e;
}

int cmd_explain(const std::vector<std::string>& in)
{
    const Args a = parse_args(in,
                              {"--ranks", "--bytes", "--nodes", "--ranks-per-node", "--memory", "--rules",
                               "--site-rules", "--forced", "--segment", "--single-copy", "--element-bytes",
                               "--segment-size", "--pat-buffer-size", "--ompi", "--learned", "--topology",
                               "--degree", "--ndims"},
                              {"--non-commutative", "--small-int-sum", "--no-job"});
    ExplainCall e = parse_call(a);
    CallFacts& call = e.facts;
    // The job's tables: the rule files a job started here reads, loaded as the plugin loads them,
    // narrowed to the communicator's shape; its forced algorithm and options, unless given.
    const JobSettings job = read_job_settings(a);
    if (!load_layers(a, job, call.ompi_major)) return 1;
    const auto tables = resolved_for(call.ranks, call.nodes, call.ranks_per_node);
    LearnedFile learned;
    if (!load_learned(a, learned)) return 1;
    const Resolved learned_layer = narrow({&learned.rules}, call.ranks, call.nodes, call.ranks_per_node, call.ompi_major);
    if (!a.get("--forced"))
        if (const auto f = job.forced.find(std::string(to_string(call.collective))); f != job.forced.end())
            e.forced = job.value(f->second);
    auto job_size = [&](const char* option, const char* param, std::uint64_t& value) {
        if (!a.get(option) && job.found && !job.value(param).empty()) value = parse_number(job.value(param), param, false);
    };
    job_size("--segment-size", "coll_loom_segment_size", e.segment_size);
    job_size("--pat-buffer-size", "coll_loom_pat_buffer_size", e.pat_buffer_size);
    job_size("", "coll_loom_knomial_radix", e.knomial_radix);
    job_size("", "coll_loom_alltoallv_max_requests", e.alltoallv_max_requests);
    call.forced = e.forced;
    call.segment_size = e.segment_size; // hierarchical_seg's leaders are chosen for a segment
    print_job_reads(job, stdout);

    const std::string coll(to_string(call.collective));
    std::string facts = form_name(call.collective, call.form == Form::blocking ? std::optional<Form>{} : call.form) +
                        " on " + std::to_string(call.ranks) + " ranks, " + std::to_string(call.bytes) +
                        " bytes (loom's message size for " + coll + ": " + size_meaning(call.collective) + ")";
    if (reduces(call.collective)) facts += call.commutative ? ", commutative op" : ", non-commutative op";
    if (call.keep_from_open_mpi) facts += ", a SUM of 8- or 16-bit integers";
    facts += call.memory == MemoryKind::cuda ? ", cuda memory" : ", host memory";
    if (call.topology != TopologyShape::none) {
        facts += ", topology " + std::string(to_string(call.topology));
        if (call.ndims) facts += " of " + std::to_string(call.ndims) + " dimensions";
        facts += call.degree ? ", degree " + std::to_string(call.degree) : ", no degree every rank knows";
    }
    if (call.nodes) facts += ", " + std::to_string(call.nodes) + " nodes";
    if (call.ranks_per_node) facts += ", " + std::to_string(call.ranks_per_node) + " ranks per node";
    facts += ", Open MPI " + std::to_string(call.ompi_major);
    facts += call.segment == SegmentState::ready     ? ", shared segment ready"
             : call.segment == SegmentState::not_yet ? ", no shared segment yet"
             : call.segment == SegmentState::pending ? ", shared segment being set up"
                                                     : ", no shared segment";
    if (call.segment == SegmentState::ready) facts += call.single_copy ? " with single copy" : " without single copy";
    std::printf("%s\n", facts.c_str());

    std::vector<Verdict> trace;
    const Decision d = decide(call, *tables, &trace, learned.path.empty() ? nullptr : &learned_layer.candidates);
    if (!e.forced.empty())
        std::printf("forced (coll_loom_%s_algorithm=%s): %s\n", coll.c_str(), e.forced.c_str(),
                    d.source == std::string_view("forced") && d.algorithm == nullptr ? "every call is handed on"
                    : d.source == std::string_view("forced")                         ? "it serves the call"
                    : trace.empty() ? ("it cannot serve the call: " + std::string(d.why)).c_str()
                                    : "it cannot serve the call, and handing the call on would "
                                      "change the answer: the rules decide");
    if (e.forced.empty() || !trace.empty()) {
        std::printf("%s rules, in order (%s):\n", coll.c_str(), layers_text(job, learned).c_str());
        // Every rule of the collective up to the deciding one: those of the narrowed table
        // with decide()'s verdict, the others with the communicator key that excludes them.
        // Rules of another form (iallreduce, allreduce_init for a blocking call) can never
        // match: they are counted, not listed.
        std::vector<Row> rows;
        std::set<std::string> other_forms;
        std::size_t next = 0, hidden = 0;
        bool done = false;
        for (const auto& [layer_name, table] : layers(job, learned))
            for (const Rule& r : *table) {
                if (done || r.collective != call.collective) continue;
                // The verdicts name the rules decide() saw: compare by source ("FILE:LINE").
                const bool considered = next < trace.size() && trace[next].rule->source == r.source;
                std::string outcome = considered ? trace[next++].outcome : "does not match";
                if (r.form && *r.form != call.form) {
                    ++hidden;
                    other_forms.insert(form_name(r.collective, r.form));
                    continue;
                }
                if (outcome == "does not match") outcome = exclusion(r, call_of(call));
                rows.push_back({{"  " + r.source, join(rule_fields(r), " "), "-> " + outcome}, ""});
                done = considered && next == trace.size() && d.rule != nullptr;
            }
        std::fputs(rows.empty() ? "  (none)\n" : render(rows).c_str(), stdout);
        if (hidden != 0)
            std::printf("  (%zu rules of other forms not listed, which never match this one: %s)\n", hidden,
                        join(std::vector<std::string>(other_forms.begin(), other_forms.end()), ", ").c_str());
    }
    if (d.wants_segment)
        std::printf("%s", call.form == Form::persistent
                              ? "note: with a shared segment an algorithm that needs one would serve; the "
                                "request's init sets one up at once (--segment ready: what it then chooses)\n"
                          : call.form == Form::nonblocking
                              ? "note: with a shared segment an algorithm that needs one would serve; the job starts "
                                "setting one up at the coll_loom_shm_min_calls-th call that wants it (a forced one at "
                                "once), and decides the calls meanwhile as --segment pending shows\n"
                              : "note: with a shared segment an algorithm that needs one would serve; the job sets "
                                "one up once coll_loom_shm_min_calls calls want it (a forced one at once)\n");
    if (d.algorithm == nullptr) {
        if (d.rule != nullptr)
            std::printf("decision: hand on (%s): %s\n", d.source, d.why);
        else
            std::printf("decision: hand on: %s; Open MPI hands the call to the next component (e.g. tuned)\n", d.why);
        return d.rule != nullptr ? 0 : 1;
    }
    std::printf("decision: %s, chosen by %s, options: %s\n", std::string(d.algorithm->name).c_str(), d.source,
                options_text(*d.algorithm, d.segment_bytes ? d.segment_bytes : e.segment_size,
                             d.buffer_bytes ? d.buffer_bytes : e.pat_buffer_size, d.radix ? d.radix : e.knomial_radix,
                             d.leaders, d.requests ? d.requests : e.alltoallv_max_requests)
                    .c_str());
    std::printf("  summary: %s\n  cost: %s (P ranks, S the message size)\n", std::string(d.algorithm->summary).c_str(),
                std::string(d.algorithm->cost).c_str());
    if (d.stand_in.algorithm != nullptr && d.stand_in.source == std::string_view(rules::kRegistryStandIn))
        std::printf("  if the segment's set-up fails: %s serves instead, the registry's first algorithm that can serve "
                    "the call without a segment (no rule names one: the rules hand it on, but the call cannot be handed "
                    "on after it was made)\n",
                    std::string(d.stand_in.algorithm->name).c_str());
    else if (d.stand_in.algorithm != nullptr)
        std::printf("  if the segment's set-up fails: %s serves instead, chosen by %s (the rules without a segment, "
                    "passing over fallback rules: the call cannot be handed on after it was made)\n",
                    std::string(d.stand_in.algorithm->name).c_str(), d.stand_in.source);
    if (d.leaders != nullptr)
        std::printf("  leaders: %s%s, from %s\n", std::string(d.leaders->name).c_str(),
                    d.leaders_bytes == 0 ? "" // one node: the leaders' phase has one rank
                    : (" (chosen for " + std::to_string(d.leaders_bytes) + " bytes" +
                       (d.algorithm->reads.segment_size ? ", what they move per segment)" : ")")).c_str(),
                    d.leaders_source == "leaders=" ? "the rule's leaders= option"
                    : d.leaders_source == "default"
                        ? "the algorithm's default (no rule for one rank per node serves)"
                        : ("the rules for one rank per node: " + std::string(d.leaders_source)).c_str());
    return 0;
}

// ---- show ----------------------------------------------------------------------------------

int cmd_show(const std::vector<std::string>& in)
{
    const Args a = parse_args(in, {"--rules", "--site-rules", "--ompi", "--learned"}, {"--no-job"});
    if (!a.positional.empty()) throw UsageError("show takes no operands");
    const JobSettings job = read_job_settings(a);
    if (!load_layers(a, job, a.get("--ompi") ? parse_count(a, "--ompi", 1) : LOOM_OMPI_MAJOR)) return 1;
    LearnedFile learned;
    if (!load_learned(a, learned)) return 1;
    std::vector<Row> rows = {{{}, "loom-rules 1"},
                             written_by("show"),
                             {{}, "# loom's effective rule table, as a job started here reads it: " + layers_text(job, learned) + "."}};
    std::string reads;
    {
        char* text = nullptr;
        std::size_t size = 0;
        std::FILE* f = open_memstream(&text, &size);
        if (f != nullptr) {
            print_job_reads(job, f);
            std::fclose(f);
            reads.assign(text, size);
            std::free(text);
        }
    }
    for (std::size_t at = 0, end; at < reads.size(); at = end + 1) {
        end = reads.find('\n', at);
        if (end == std::string::npos) end = reads.size();
        rows.push_back({{}, "# " + reads.substr(at, end - at)});
    }
    rows.push_back({{}, "# The first rule that matches a call and whose algorithm can serve it wins;"});
    rows.push_back({{}, "# fallback hands the call to Open MPI's next component."});
    rows.push_back({{"# collective", "ranks", "bytes", "algorithm"}, "source (FILE:LINE; default:LINE for the defaults)"});
    for (const auto& [layer_name, table] : layers(job, learned))
        for (const Rule& r : *table) rows.push_back({rule_fields(r), r.source});
    std::fputs(render(rows).c_str(), stdout);
    return 0;
}

// ---- algorithms ----------------------------------------------------------------------------

// What an algorithm needs of a call (registry.hpp, Needs), as phrases.
std::vector<std::string> needs_text(const Algorithm& a)
{
    std::vector<std::string> out;
    if (a.needs.commutative_op) out.push_back("a commutative op");
    if (a.needs.power_of_two) out.push_back("a power-of-two number of ranks");
    if (a.needs.same_node) out.push_back("every rank on one node");
    if (a.needs.topology) out.push_back("known nodes");
    if (a.needs.equal_nodes) out.push_back("the same number of ranks on every node");
    if (a.needs.segment) out.push_back("a shared-memory segment");
    if (a.needs.single_copy) out.push_back("single copy (CMA) allowed on the node, and host memory");
    if (a.needs.stencil)
        out.push_back("a graph or dist graph every rank agreed is a stencil of one block size over a periodic grid");
    if (a.needs.element_in_slot)
        out.push_back(a.collective == Collective::reduce_scatter_block ? "one element per rank within a 32 KiB slot"
                                                                       : "an element within a 32 KiB slot");
    return out;
}

// The options an algorithm reads (registry.hpp, Reads): the rule option and its MCA parameter
// (in backticks for markdown).
std::vector<std::string> reads_text(const Algorithm& a, bool markdown)
{
    const std::string q = markdown ? "`" : "";
    std::vector<std::string> out;
    if (a.reads.segment_size) out.push_back(q + "segment=" + q + " (" + q + "coll_loom_segment_size" + q + ")");
    if (a.reads.pat_buffer) out.push_back(q + "buffer=" + q + " (" + q + "coll_loom_pat_buffer_size" + q + ")");
    if (a.reads.radix) out.push_back(q + "radix=" + q + " (" + q + "coll_loom_knomial_radix" + q + ")");
    if (a.reads.max_requests)
        out.push_back(q + "requests=" + q + " (" + q + "coll_loom_alltoallv_max_requests" + q + ")");
    if (a.reads.leaders)
        out.push_back(q + "leaders=" + q + " (default " + q + std::string(a.default_leaders) + q + ")");
    return out;
}

std::string markdown_cell(std::string_view text)
{
    std::string out;
    for (char ch : text) {
        if (ch == '|') out += '\\';
        out += ch;
    }
    return out;
}

// Every algorithm, collective by collective in the registry's order: plain text (a collective
// line, then per algorithm a line "  NAME  SUMMARY" and its cost, needs and reads), or with
// --markdown one table.
int cmd_algorithms(const std::vector<std::string>& in)
{
    const Args a = parse_args(in, {}, {"--markdown"});
    if (!a.positional.empty()) throw UsageError("algorithms takes no operands");
    const bool markdown = a.flags.count("--markdown") != 0;
    std::size_t width = 0;
    for (const Algorithm& x : all_algorithms()) width = std::max(width, x.name.size());
    const std::string indent(2 + width + 2, ' ');
    if (markdown)
        std::printf("| collective | algorithm | summary | cost (P ranks, S message bytes) | needs | reads |\n"
                    "|---|---|---|---|---|---|\n");
    for (int c = 0; c < kCollectiveCount; ++c) {
        const Collective coll = Collective(c);
        const std::string name(to_string(coll));
        if (!markdown) std::printf("%s%s (S: %s)\n", c ? "\n" : "", name.c_str(), size_meaning(coll));
        for (const Algorithm& x : all_algorithms()) {
            if (x.collective != coll) continue;
            const std::string needs = join(needs_text(x), ", "), reads = join(reads_text(x, markdown), ", ");
            if (markdown) {
                std::printf("| %s | `%s` | %s | %s | %s | %s |\n", name.c_str(), std::string(x.name).c_str(),
                            markdown_cell(x.summary).c_str(), markdown_cell(x.cost).c_str(),
                            needs.empty() ? "-" : markdown_cell(needs).c_str(),
                            reads.empty() ? "-" : markdown_cell(reads).c_str());
                continue;
            }
            std::printf("  %-*s  %s\n", int(width), std::string(x.name).c_str(), std::string(x.summary).c_str());
            std::printf("%scost: %s\n", indent.c_str(), std::string(x.cost).c_str());
            std::printf("%sneeds: %s\n", indent.c_str(), needs.empty() ? "nothing" : needs.c_str());
            std::printf("%sreads: %s\n", indent.c_str(), reads.empty() ? "nothing" : reads.c_str());
        }
    }
    return 0;
}

} // namespace loom::rules_tool

using namespace loom::rules_tool;

int main(int argc, char** argv)
{
    if (loom::tools::print_version_if_asked(argc, argv, "loom-rules")) return 0;
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (std::find_if(args.begin(), args.end(), [](const std::string& s) { return s == "--help" || s == "-h"; }) !=
            args.end()) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (args.empty()) throw UsageError("expected a command");
        const std::string command = args.front();
        args.erase(args.begin());
        if (command == "check") return cmd_check(args);
        if (command == "explain") return cmd_explain(args);
        if (command == "show") return cmd_show(args);
        if (command == "from-tuned") return cmd_from_tuned(args);
        if (command == "algorithms") return cmd_algorithms(args);
        const std::string near = nearest(command, {"check", "explain", "show", "from-tuned", "algorithms"});
        throw UsageError("unknown command '" + command + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
    } catch (const UsageError& e) {
        std::fprintf(stderr, "loom-rules: %s\n%s", e.what(), kUsage);
        return 2;
    }
}
