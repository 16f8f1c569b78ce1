// loom-sim: loom's real algorithms on a simulated cluster of up to tens of thousands of ranks.
//
//   loom-sim COLLECTIVE [--algorithm NAME|all] [--except NAME,...] --ranks P [--ppn K]
//            (--bytes B[,B...] | --sweep LO:HI) [--model FILE] [--segment B] [--buffer B] [--root R] [--elem-size E]
//            [--csv FILE] [--emit-rules FILE] [--jobs N] [--quiet]
//   loom-sim --version
//
// Prints, per message size and algorithm, the predicted time, messages and bytes sent per
// rank, and the bytes that crossed each level of the network (0: inside a node; 1: through
// one switch; l: up to level-l switches of the fat tree); then the winner per size. The
// model (tools/sim/README.md) describes the cluster; without --model, a flat model is used
// (1 us latency, 10 GB/s, every rank its own node). See tools/sim/README.md.
#include "engine.hpp"
#include "model.hpp"
#include "size_text.hpp"
#include "sweep.hpp"
#include "tool_version.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace loom;
using namespace loom::sim;
using loom::tools::format_size;
using loom::tools::parse_size;

namespace {

const char* const kUsage = "usage: loom-sim COLLECTIVE [--algorithm NAME|all] [--except NAME,...] --ranks P [--ppn K]\n"
                           "                (--bytes B[,B...] | --sweep LO:HI)\n"
                           "                [--model FILE] [--segment B] [--buffer B] [--root R] [--elem-size E]\n"
                           "                [--csv FILE] [--emit-rules FILE] [--jobs N] [--quiet]\n"
                           "       loom-sim --version\n";

struct Options {
    std::string collective, algorithm = "all", model_path, csv, rules;
    std::vector<std::string> except; // with --algorithm all: left out
    int ranks = 0, ppn = 0, root = 0, jobs = 0;
    std::vector<std::size_t> sizes;
    std::optional<std::size_t> segment; // --segment; else the plugin's default (below)
    std::size_t buffer = 0, elem = 1;
    bool quiet = false;
    std::string command_line;
};

int parse_int(const std::string& what, const std::string& text, int lo, int hi)
{
    std::size_t used = 0;
    long v = 0;
    try {
        v = std::stol(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || v < lo || v > hi)
        throw std::invalid_argument(what + " must be a whole number in " + std::to_string(lo) + ".." +
                                    std::to_string(hi) + ", not '" + text + "'");
    return int(v);
}

Options parse(int argc, char** argv)
{
    Options o;
    for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + std::string(argv[i]);
    bool have_sizes = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--algorithm")
            o.algorithm = value();
        else if (a == "--except") {
            const std::string list = value();
            for (std::size_t at = 0; at <= list.size();) {
                const std::size_t comma = std::min(list.find(',', at), list.size());
                if (comma > at) o.except.push_back(list.substr(at, comma - at));
                at = comma + 1;
            }
        } else if (a == "--ranks")
            o.ranks = parse_int("--ranks", value(), 1, 1 << 20);
        else if (a == "--ppn")
            o.ppn = parse_int("--ppn", value(), 1, 1 << 20);
        else if (a == "--root")
            o.root = parse_int("--root", value(), 0, 1 << 20);
        else if (a == "--jobs")
            o.jobs = parse_int("--jobs", value(), 1, 1024);
        else if (a == "--elem-size")
            o.elem = std::size_t(parse_int("--elem-size", value(), 1, 64));
        else if (a == "--model")
            o.model_path = value();
        else if (a == "--segment")
            o.segment = parse_size(value());
        else if (a == "--buffer")
            o.buffer = parse_size(value());
        else if (a == "--csv")
            o.csv = value();
        else if (a == "--emit-rules")
            o.rules = value();
        else if (a == "--quiet")
            o.quiet = true;
        else if (a == "--bytes" || a == "--sweep") {
            if (have_sizes) throw std::invalid_argument("give one of --bytes and --sweep, once");
            have_sizes = true;
            const std::string v = value();
            if (a == "--bytes") {
                std::size_t start = 0;
                for (std::size_t comma; start <= v.size(); start = comma + 1) {
                    comma = v.find(',', start);
                    if (comma == std::string::npos) comma = v.size();
                    o.sizes.push_back(parse_size(v.substr(start, comma - start)));
                }
            } else {
                const auto colon = v.find(':');
                if (colon == std::string::npos) throw std::invalid_argument("--sweep takes LO:HI, e.g. 8:16M");
                const std::size_t lo = parse_size(v.substr(0, colon)), hi = parse_size(v.substr(colon + 1));
                if (lo > hi) throw std::invalid_argument("--sweep LO:HI needs LO <= HI");
                o.sizes = power_of_two_sizes(lo, hi);
            }
        } else if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (a.rfind("--", 0) == 0)
            throw std::invalid_argument("unknown option " + a);
        else if (o.collective.empty())
            o.collective = a;
        else
            throw std::invalid_argument("unexpected argument '" + a + "'");
    }
    if (o.collective.empty()) throw std::invalid_argument("no collective given");
    if (o.ranks == 0) throw std::invalid_argument("--ranks is required");
    if (!have_sizes) throw std::invalid_argument("give --bytes or --sweep");
    if (o.root >= o.ranks) throw std::invalid_argument("--root must be a rank of the communicator");
    if (o.jobs == 0) o.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
    return o;
}

Collective find_collective(const std::string& name)
{
    std::string valid;
    for (int c = 0; c < kCollectiveCount; ++c) {
        if (to_string(Collective(c)) == name) return Collective(c);
        valid += (c ? ", " : "") + std::string(to_string(Collective(c)));
    }
    throw std::invalid_argument("no collective '" + name + "' (valid: " + valid + ")");
}

// `ppn`: ranks per node of the simulated placement (blocks of ppn ranks; hierarchical
// algorithms need the nodes). The shared-memory family is left out of "all": loom-sim does not model shared memory.
std::vector<const Algorithm*> pick_algorithms(Collective coll, const Options& o, int ppn)
{
    std::vector<const Algorithm*> out;
    std::string valid;
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != coll) continue;
        valid += (valid.empty() ? "" : ", ") + std::string(a.name);
        const int nodes = (o.ranks + ppn - 1) / ppn;
        const bool left_out = std::find(o.except.begin(), o.except.end(), std::string(a.name)) != o.except.end();
        const bool can = !a.needs.same_node && !left_out &&
                         !why_not(a, CallShape{o.ranks, 0, true, nodes, std::min(ppn, o.ranks)}).has_value();
        if (a.name == o.algorithm && a.needs.same_node)
            throw std::invalid_argument(std::string(a.name) +
                                        " works through shared memory, which loom-sim does not model");
        if (o.algorithm == "all" ? can : a.name == o.algorithm) out.push_back(&a);
    }
    if (out.empty())
        throw std::invalid_argument(
            o.algorithm == "all" ? "no " + o.collective + " algorithm can run on " + std::to_string(o.ranks) + " ranks"
                                 : "no " + o.collective + " algorithm '" + o.algorithm + "' (valid: " + valid + ")");
    return out;
}

std::string human_bytes(double b)
{
    const char* units[] = {"B", "K", "M", "G", "T", "P"};
    int u = 0;
    while (b >= 1024 && u < 5) b /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, b < 10 && u > 0 ? "%.1f%s" : "%.0f%s", b, units[u]);
    return buf;
}

std::string today()
{
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
    return buf;
}

} // namespace

int main(int argc, char** argv)
{
    if (loom::tools::print_version_if_asked(argc, argv, "loom-sim")) return 0;
    Options o;
    Model model;
    Collective coll{};
    std::vector<const Algorithm*> algorithms;
    try {
        o = parse(argc, argv);
        coll = find_collective(o.collective);
        model = o.model_path.empty() ? flat_model(1e-6, 1e-10, 2e-10) : load_model(o.model_path);
        if (o.model_path.empty())
            model.description = "built-in flat model: 1 us, 10 GB/s, reduction 5 GB/s, one rank per node";
        const int ppn = o.ppn > 0 ? o.ppn : std::max(1, model.ranks_per_node);
        algorithms = pick_algorithms(coll, o, ppn);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loom-sim: %s\n%s", e.what(), kUsage);
        return 2;
    }

    SweepSpec spec;
    spec.model = &model;
    spec.algorithms = algorithms;
    spec.sizes = o.sizes;
    spec.shape = Scenario{.ranks = o.ranks,
                          .ranks_per_node = o.ppn,
                          .elem_size = o.elem,
                          // Without --segment the algorithms run as the plugin runs them: with
                          // coll_loom_segment_size's default (256 KiB), which binomial's bcast
                          // also takes (its own default, 0, is unsegmented).
                          .segment_bytes = o.segment.value_or(LOOM_SEGMENT_SIZE_DEFAULT),
                          .buffer_bytes = o.buffer,
                          .root = o.root};
    spec.jobs = o.jobs;
    const auto started = std::chrono::steady_clock::now();
    auto last = started;
    if (!o.quiet)
        spec.progress = [&](std::size_t done, std::size_t total) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::seconds(2) && done != total) return;
            last = now;
            std::fprintf(stderr, "\rloom-sim: %zu of %zu simulations done (%.0f s)", done, total,
                         std::chrono::duration<double>(now - started).count());
            if (done == total) std::fputc('\n', stderr);
        };
    const std::vector<SweepPoint> points = run_sweep(spec);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    const int ppn = o.ppn > 0 ? o.ppn : model.ranks_per_node;
    const int nodes = (o.ranks + ppn - 1) / ppn;
    int levels = 1;
    for (const auto& p : points)
        if (p.error.empty()) levels = p.result.levels;
    std::printf("loom-sim: %s on %d ranks (%d node%s x %d ranks per node), model '%s'%s%s\n", o.collective.c_str(),
                o.ranks, nodes, nodes == 1 ? "" : "s", std::min(ppn, o.ranks), model.name.c_str(),
                model.source.empty() ? "" : " from ", model.source.c_str());
    if (!model.description.empty()) std::printf("  %s\n", model.description.c_str());
    std::printf("%10s  %-20s %12s %10s %10s", "bytes", "algorithm", "time_us", "msgs/rank", "sent/rank");
    for (int l = 0; l <= levels; ++l) std::printf(" %8s%d", "level", l);
    std::printf("\n");
    int failures = 0;
    for (const auto& p : points) {
        if (!p.error.empty()) {
            std::printf("%10s  %-20s  failed: %s\n", format_size(p.bytes).c_str(),
                        std::string(p.algorithm->name).c_str(), p.error.c_str());
            ++failures;
            continue;
        }
        const Result& r = p.result;
        std::printf("%10s  %-20s %12.2f %10zu %10s", format_size(r.bytes).c_str(),
                    std::string(p.algorithm->name).c_str(), r.seconds * 1e6, r.messages_max,
                    human_bytes(double(r.bytes_sent_max)).c_str());
        for (double b : r.bytes_by_level) std::printf(" %9s", human_bytes(b).c_str());
        std::printf("\n");
    }
    const std::vector<Winner> ws = winners(points);
    if (algorithms.size() > 1) {
        std::printf("\nwinner per size:\n%10s  %-20s %12s  %-20s %8s\n", "bytes", "fastest", "time_us", "next",
                    "ratio");
        for (const Winner& w : ws)
            std::printf("%10s  %-20s %12.2f  %-20s %8.2f\n", format_size(w.bytes).c_str(),
                        std::string(w.algorithm->name).c_str(), w.seconds * 1e6,
                        w.runner_up ? std::string(w.runner_up->name).c_str() : "-",
                        w.runner_up && w.seconds > 0 ? w.runner_up_seconds / w.seconds : 1.0);
    }
    std::fprintf(stderr, "loom-sim: %zu simulations in %.1f s on %d threads\n", points.size(), wall, o.jobs);

    if (!o.csv.empty()) {
        std::ofstream csv(o.csv);
        csv << "collective,algorithm,ranks,ranks_per_node,nodes,bytes,time_us,messages_max,messages_mean,"
               "bytes_sent_max,bytes_sent_mean";
        for (int l = 0; l <= levels; ++l) csv << ",bytes_level" << l;
        csv << "\n";
        for (const auto& p : points) {
            if (!p.error.empty()) continue;
            const Result& r = p.result;
            char line[512];
            std::snprintf(line, sizeof line, "%s,%s,%d,%d,%d,%zu,%.6f,%zu,%.3f,%zu,%.1f", o.collective.c_str(),
                          std::string(p.algorithm->name).c_str(), o.ranks, std::min(ppn, o.ranks), r.nodes, r.bytes,
                          r.seconds * 1e6, r.messages_max, r.messages_mean, r.bytes_sent_max, r.bytes_sent_mean);
            csv << line;
            for (double b : r.bytes_by_level) csv << "," << std::size_t(b);
            csv << "\n";
        }
        if (!csv) {
            std::fprintf(stderr, "loom-sim: cannot write %s\n", o.csv.c_str());
            return 1;
        }
    }
    if (!o.rules.empty()) {
        const std::vector<std::string> comment = {
            "Generated by " + loom::tools::version_line("loom-sim") + " on " + today() + " for " + o.collective + " on " + std::to_string(o.ranks) +
                " ranks, " + std::to_string(nodes) + " nodes x " + std::to_string(std::min(ppn, o.ranks)) +
                " ranks per node,",
            "model '" + model.name + "'" + (model.source.empty() ? "" : " (" + model.source + ")") +
                ": predictions, not measurements.",
            "Command: " + o.command_line};
        std::ofstream out(o.rules);
        out << emit_rules(ws, o.ranks, comment, o.segment.value_or(0), o.buffer);
        if (!out) {
            std::fprintf(stderr, "loom-sim: cannot write %s\n", o.rules.c_str());
            return 1;
        }
        std::fprintf(stderr, "loom-sim: wrote the rules to %s\n", o.rules.c_str());
    }
    return failures == 0 ? 0 : 1;
}
