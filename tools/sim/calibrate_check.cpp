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

// One measured point.
struct Case {
    const Algorithm* algorithm;
    std::size_t nominal;   // the size asked for
    std::size_t bytes;     // loom's message size of the calls made (blocks round down)
    std::size_t count;     // count argument: elements (reductions), bytes (bcast), block (allgather)
};

bool is_reduction(Collective c) { return c == Collective::allreduce || c == Collective::reduce_scatter_block; }

// The call for `nominal` bytes at `ranks` ranks, or nothing if the size is too small for it.
std::optional<Case> make_case(const Algorithm& a, std::size_t nominal, int ranks)
{
    const std::size_t P = std::size_t(ranks), d = sizeof(double);
    switch (a.collective) {
    case Collective::allreduce: return nominal >= d ? std::optional(Case{&a, nominal, nominal / d * d, nominal / d}) : std::nullopt;
    case Collective::reduce_scatter_block: {
        const std::size_t block = nominal / P / d; // doubles per rank
        return block ? std::optional(Case{&a, nominal, block * d * P, block}) : std::nullopt;
    }
    case Collective::allgather: {
        const std::size_t block = nominal / P; // bytes per rank
        return block ? std::optional(Case{&a, nominal, block * P, block}) : std::nullopt;
    }
    case Collective::bcast: return Case{&a, nominal, nominal, nominal};
    case Collective::barrier: return Case{&a, 0, 0, 0};
    default: return std::nullopt;
    }
}

std::vector<Case> plan_cases(Collective c, const std::vector<std::size_t>& sizes, int ranks)
{
    std::vector<Case> cases;
    const std::vector<std::size_t> barrier_size{0};
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != c) continue;
        for (std::size_t s : c == Collective::barrier ? barrier_size : sizes) {
            const auto k = make_case(a, s, ranks);
            if (k && !why_not(a, CallShape{ranks, k->bytes, true})) cases.push_back(*k);
        }
    }
    return cases;
}

// Send and receive buffers big enough for every case.
struct Buffers {
    std::vector<double> send, recv;
    explicit Buffers(std::size_t max_bytes) : send(max_bytes / sizeof(double) + 1), recv(send.size()) {}
    unsigned char* send_bytes() { return reinterpret_cast<unsigned char*>(send.data()); }
    unsigned char* recv_bytes() { return reinterpret_cast<unsigned char*>(recv.data()); }
};

// One call of the case's collective.
void call_once(const Case& k, Buffers& b)
{
    const int n = int(k.count);
    switch (k.algorithm->collective) {
    case Collective::allreduce: MPI_Allreduce(b.send.data(), b.recv.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case Collective::reduce_scatter_block:
        MPI_Reduce_scatter_block(b.send.data(), b.recv.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case Collective::allgather:
        MPI_Allgather(b.send.data(), n, MPI_BYTE, b.recv.data(), n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case Collective::bcast: MPI_Bcast(b.recv.data(), n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case Collective::barrier: MPI_Barrier(MPI_COMM_WORLD); break;
    default: break;
    }
}

unsigned char pattern(std::size_t rank, std::size_t i) { return (unsigned char)(rank * 31 + i * 7 + 1); }

// Fills the buffers with data whose result is known, makes one call and checks the result.
bool call_and_verify(const Case& k, Buffers& b, int rank, int size)
{
    const std::size_t P = std::size_t(size), r = std::size_t(rank);
    const double triangle = double(size) * (size + 1) / 2;
    std::fill(b.recv.begin(), b.recv.end(), -1.0);
    switch (k.algorithm->collective) {
    case Collective::allreduce:
    case Collective::reduce_scatter_block:
        // send[i] = (rank + 1) (1 + i mod 5): every sum is triangle (1 + i mod 5), exact in doubles
        for (std::size_t i = 0; i < b.send.size(); ++i) b.send[i] = double(rank + 1) * double(1 + i % 5);
        break;
    case Collective::allgather:
        for (std::size_t i = 0; i < k.count; ++i) b.send_bytes()[i] = pattern(r, i);
        break;
    case Collective::bcast:
        if (rank == 0)
            for (std::size_t i = 0; i < k.count; ++i) b.recv_bytes()[i] = pattern(0, i);
        break;
    default: break;
    }
    call_once(k, b);
    switch (k.algorithm->collective) {
    case Collective::allreduce:
        for (std::size_t i = 0; i < k.count; ++i)
            if (b.recv[i] != triangle * double(1 + i % 5)) return false;
        return true;
    case Collective::reduce_scatter_block:
        for (std::size_t j = 0; j < k.count; ++j)
            if (b.recv[j] != triangle * double(1 + (r * k.count + j) % 5)) return false;
        return true;
    case Collective::allgather:
        for (std::size_t q = 0; q < P; ++q)
            for (std::size_t i = 0; i < k.count; ++i)
                if (b.recv_bytes()[q * k.count + i] != pattern(q, i)) return false;
        return true;
    case Collective::bcast:
        for (std::size_t i = 0; i < k.count; ++i)
            if (b.recv_bytes()[i] != pattern(0, i)) return false;
        return true;
    default: return true;
    }
}

struct Timing {
    double seconds = 0; // rank 0: median over repeats of the slowest rank's mean time per call
    long iterations = 0;
    long calls = 0;     // calls of the collective made, warm-up included
};

constexpr double kTargetSeconds = 0.1; // per timed run

// OSU-style: warm-up, then per repeat a barrier and `iterations` calls; max over ranks.
Timing time_case(const Case& k, Buffers& b, int rank, int size, int repeats)
{
    Timing t;
    const int warmup = 2;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < warmup; ++i) call_once(k, b);
    const double estimate = max_over_ranks((MPI_Wtime() - t0) / warmup, rank, size);
    t.iterations = from_root(long(std::clamp(kTargetSeconds / std::max(estimate, 1e-7), 3.0, 2000.0)), size);
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < t.iterations; ++i) call_once(k, b);
        runs.push_back(max_over_ranks((MPI_Wtime() - t0) / double(t.iterations), rank, size));
    }
    t.seconds = rank == 0 ? median(runs) : 0;
    t.calls = warmup + repeats * t.iterations;
    return t;
}

// The model's prediction for the case, or nothing (with a message) if simulation failed.
std::optional<double> predict(const loom::sim::Model& model, const Case& k, int ranks, std::size_t segment,
                              std::size_t pat_buffer, std::string& error)
{
    loom::sim::Scenario s;
    s.algorithm = k.algorithm;
    s.ranks = ranks;
    s.ranks_per_node = ranks;
    s.bytes = k.bytes;
    s.elem_size = is_reduction(k.algorithm->collective) ? sizeof(double) : 1;
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
        const bool correct = call_and_verify(k, *x.buffers, x.rank, x.size);
        const Timing t = time_case(k, *x.buffers, x.rank, x.size, x.repeats);
        const bool served = counters.served() - served0 >= (unsigned long long)(t.calls + 1) &&
                            counters.declined() == declined0;
        const double flags = max_over_ranks(double(!correct) + 2.0 * double(!served), x.rank, x.size);
        if (x.rank != 0) continue;
        if (flags >= 2) throw std::runtime_error(name + " " + algo + " at " + format_size(k.bytes) + ": loom did not serve every call");
        if (flags >= 1) throw std::runtime_error(name + " " + algo + " at " + format_size(k.bytes) + ": wrong result");
        std::string error;
        const auto predicted = predict(*x.model, k, x.size, x.segment, x.pat_buffer, error);
        if (!predicted) throw std::runtime_error(name + " " + algo + ": simulation failed: " + error);
        const double meas = t.seconds / kUs, pred = *predicted / kUs;
        rows.push_back({name, algo, k.nominal, k.bytes, t.iterations, meas, pred, (pred - meas) / meas * 100});
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
            if (r.collective == to_string(c)) errors.push_back(std::abs(r.error_pct)), all.push_back(std::abs(r.error_pct));
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
    loom::tools::LoomCounters probe;
    if (!probe.open("allreduce"))
        throw std::runtime_error("loom is not loaded (run with --mca coll loom,tuned,basic,libnbc,self)");
    const std::size_t segment = read_cvar("coll_loom_segment_size").value_or(256 * 1024);
    const std::size_t pat_buffer = read_cvar("coll_loom_pat_buffer_size").value_or(1024 * 1024);
    Buffers buffers(*std::max_element(o.sizes.begin(), o.sizes.end()));
    const CheckContext x{&model, rank, size, o.repeats, segment, pat_buffer, &buffers};
    const std::vector<Collective> collectives{Collective::allreduce, Collective::allgather, Collective::bcast,
                                              Collective::reduce_scatter_block, Collective::barrier};
    if (rank == 0) {
        std::printf("### np=%d, model %s (%s), %ld cores: measured vs predicted\n\n", size, model.name.c_str(),
                    o.model_path.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
        std::printf("bytes: loom's message size of the calls made (allgather and reduce_scatter_block round the\n"
                    "vector down to %d equal blocks). error %%: (predicted - measured) / measured.\n\n", size);
        std::printf("| collective | algorithm | bytes | measured_us | predicted_us | error %% |\n|---|---|---|---|---|---|\n");
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
