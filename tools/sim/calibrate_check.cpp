// loom-sim-calibrate --check: forces each of loom's algorithms, checks and times it, and compares
// the time with the model's prediction (how: the top of calibrate.cpp; the shared helpers:
// calibrate.hpp).
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "calibrate.hpp"
#include "engine.hpp"
#include "loom_mpi_t.hpp"
#include "model.hpp"
#include "registry.hpp"
#include "size_text.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::calibrate {
namespace {

using loom::tools::format_size;

using loom::bench::Buffers;
using loom::bench::call_and_verify;
using loom::bench::Timing;

// One measured point: an algorithm forced for one call shape (bench_core.hpp).
struct Case {
    const Algorithm* algorithm;
    loom::bench::Case call;
};

// Every algorithm of `c` that can serve `ranks` ranks at every size. The node count is left
// unknown (CallShape's 0), which leaves out the one-node (shared-memory) algorithms.
std::vector<Case> plan_cases(Collective c, const std::vector<std::size_t>& sizes, int ranks)
{
    std::vector<Case> cases;
    const std::vector<std::size_t> barrier_size{0};
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != c) continue;
        for (std::size_t s : c == Collective::barrier ? barrier_size : sizes) {
            const auto k = loom::bench::make_case(c, s, ranks);
            if (k && !why_not(a, CallShape{ranks, k->bytes, true})) cases.push_back(Case{&a, *k});
        }
    }
    return cases;
}

constexpr double kTargetSeconds = 0.1; // per timed run

// The model's prediction for the case, or nothing (with a message) if simulation failed.
std::optional<double> predict(const loom::sim::Model& model, const Case& k, int ranks, std::size_t segment,
                              std::size_t pat_buffer, std::string& error)
{
    loom::sim::Scenario s;
    s.algorithm = k.algorithm;
    s.ranks = ranks;
    s.ranks_per_node = ranks;
    s.bytes = k.call.bytes;
    s.elem_size = loom::reduces(k.algorithm->collective) ? sizeof(double) : 1;
    s.segment_bytes = segment;
    s.buffer_bytes = pat_buffer;
    try {
        return loom::sim::simulate(model, s).seconds;
    } catch (const std::exception& e) {
        error = e.what();
        return std::nullopt;
    }
}

struct Row {
    std::string collective, algorithm;
    std::size_t nominal, bytes;
    long iterations;
    double measured_us, predicted_us, error_pct;
};

struct CheckContext {
    const loom::sim::Model* model;
    int rank, size, repeats;
    std::size_t segment, pat_buffer;
    Buffers* buffers;
};

// Measures every case of one collective; rank 0 returns the rows (and prints them).
std::vector<Row> check_collective(Collective c, const std::vector<std::size_t>& sizes, const CheckContext& x)
{
    const std::string name(to_string(c));
    loom::tools::LoomCounters counters;
    if (!counters.open(name)) throw std::runtime_error("loom's MPI_T counters for " + name + " are missing");
    std::vector<Row> rows;
    for (const Case& k : plan_cases(c, sizes, x.size)) {
        const std::string algo(k.algorithm->name);
        if (!loom::tools::set_loom_control("coll_loom_" + name + "_algorithm", algo.c_str()))
            throw std::runtime_error("cannot force " + name + " algorithm " + algo + " through MPI_T");
        const auto served0 = counters.served(), declined0 = counters.declined();
        const bool correct = call_and_verify(k.call, *x.buffers, x.rank, x.size);
        const Timing t = loom::bench::time_case(k.call, *x.buffers, x.rank, x.size, x.repeats,
                                                loom::bench::IterationPlan{.target_seconds = kTargetSeconds});
        const bool served =
            counters.served() - served0 >= (unsigned long long)(t.calls + 1) && counters.declined() == declined0;
        const double flags = max_over_ranks(double(!correct) + 2.0 * double(!served), x.rank, x.size);
        if (x.rank != 0) continue;
        if (flags >= 2)
            throw std::runtime_error(name + " " + algo + " at " + format_size(k.call.bytes) +
                                     ": loom did not serve every call");
        if (flags >= 1)
            throw std::runtime_error(name + " " + algo + " at " + format_size(k.call.bytes) + ": wrong result");
        std::string error;
        const auto predicted = predict(*x.model, k, x.size, x.segment, x.pat_buffer, error);
        if (!predicted) throw std::runtime_error(name + " " + algo + ": simulation failed: " + error);
        const double meas = t.seconds / kUs, pred = *predicted / kUs;
        rows.push_back(
            {name, algo, k.call.nominal, k.call.bytes, t.iterations, meas, pred, (pred - meas) / meas * 100});
        const Row& w = rows.back();
        std::printf("| %s | %s | %s | %.2f | %.2f | %+.1f |\n", w.collective.c_str(), w.algorithm.c_str(),
                    format_size(w.bytes).c_str(), w.measured_us, w.predicted_us, w.error_pct);
        std::fflush(stdout);
    }
    loom::tools::set_loom_control("coll_loom_" + name + "_algorithm", ""); // back to loom's own choice
    return rows;
}

void print_summary(const std::vector<Row>& rows, const std::vector<Collective>& collectives, int size)
{
    std::printf("\n### median absolute error per collective (np=%d)\n\n", size);
    std::printf("| collective | points | median abs error %% |\n|---|---|---|\n");
    std::vector<double> all;
    for (Collective c : collectives) {
        std::vector<double> errors;
        for (const Row& r : rows)
            if (r.collective == to_string(c))
                errors.push_back(std::abs(r.error_pct)), all.push_back(std::abs(r.error_pct));
        std::printf("| %s | %zu | %.1f |\n", std::string(to_string(c)).c_str(), errors.size(), median(errors));
    }
    std::printf("| all | %zu | %.1f |\n", all.size(), median(all));
}

void write_csv(const std::vector<Row>& rows, const std::string& path, int size)
{
    std::ofstream out(path);
    out << "collective,algorithm,ranks,nominal_bytes,bytes,iterations,measured_us,predicted_us,error_pct\n";
    for (const Row& r : rows)
        out << r.collective << "," << r.algorithm << "," << size << "," << r.nominal << "," << r.bytes << ","
            << r.iterations << "," << r.measured_us << "," << r.predicted_us << "," << r.error_pct << "\n";
    if (!out) throw std::runtime_error(path + ": cannot write");
}

} // namespace

int run_check(const Options& o, int rank, int size)
{
    const loom::sim::Model model = loom::sim::load_model(o.model_path);
    const loom_state state = loom_state_on(MPI_COMM_WORLD);
    if (state != LOOM_ENABLED && state != LOOM_LOADED)
        throw std::runtime_error("--check times loom's algorithms, but " + std::string(loom_state_text(state)) +
                                 ": put mca_coll_loom.so on mca_base_component_path, coll_loom_priority not below 0");
    const std::size_t segment = read_cvar("coll_loom_segment_size").value_or(LOOM_SEGMENT_SIZE_DEFAULT);
    const std::size_t pat_buffer = read_cvar("coll_loom_pat_buffer_size").value_or(1024 * 1024);
    Buffers buffers(*std::max_element(o.sizes.begin(), o.sizes.end()));
    const CheckContext x{&model, rank, size, o.repeats, segment, pat_buffer, &buffers};
    const std::vector<Collective> collectives{Collective::allreduce, Collective::allgather, Collective::bcast,
                                              Collective::reduce_scatter_block, Collective::barrier};
    if (rank == 0) {
        std::printf("### np=%d, model %s (%s), %ld cores: measured vs predicted\n\n", size, model.name.c_str(),
                    o.model_path.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
        std::printf("bytes: loom's message size of the calls made (allgather and reduce_scatter_block round the\n"
                    "vector down to %d equal blocks). error %%: (predicted - measured) / measured.\n\n",
                    size);
        std::printf(
            "| collective | algorithm | bytes | measured_us | predicted_us | error %% |\n|---|---|---|---|---|---|\n");
    }
    std::vector<Row> rows;
    for (Collective c : collectives) {
        auto more = check_collective(c, o.sizes, x);
        rows.insert(rows.end(), more.begin(), more.end());
    }
    if (rank == 0) {
        print_summary(rows, collectives, size);
        if (!o.csv.empty()) write_csv(rows, o.csv, size);
    }
    return 0;
}

} // namespace loom::calibrate
