// loom-comm-churn: what a new communicator costs. Libraries and test suites create and free
// communicators all the time; each new one pays whatever a coll component does on its first
// calls. This program times loops of "create a communicator, use it a little, free it".
//
//   mpirun -np N [--mca mca_base_component_path OMPI_DIR:LOOM_DIR | --mca coll ^loom] loom-comm-churn
//       [--modes split,dup-once,split-100,dup-100] [--iterations 1000] [--repeats 5] [--csv FILE]
//
// Modes (one iteration each):
//   split      MPI_Comm_split into two halves (ranks below N/2 and the rest), one 8-byte
//              MPI_Allreduce (double sum) and one 8-byte MPI_Bcast (root 0) on the half,
//              MPI_Comm_free
//   dup-once   MPI_Comm_dup of MPI_COMM_WORLD, one 8-byte MPI_Allreduce, MPI_Comm_free: a
//              communicator used once
//   split-100  as split, with 100 allreduces and no bcast: a communicator used enough for
//              set-up work (a shared segment) to pay back
//   dup-100    MPI_Comm_dup of MPI_COMM_WORLD, 100 allreduces, MPI_Comm_free
// Every result is checked; a wrong one stops the program (exit status 1).
//
// Timing: each repeat is a barrier, --iterations iterations, and the slowest rank's mean time
// per iteration; modes are interleaved (A B C A B C ...) and the reported time is the median
// of the repeats (the minimum is printed beside it). One warm-up iteration per mode comes
// first. If loom is loaded its MPI_T counters give the share of the calls it served, printed
// as "# loom served S of C allreduce/bcast calls" (tools/dev/comm-churn-compare checks it).
//
// Rank 0 prints one line per mode; --csv writes rows mode,np,us_per_iteration,min_us,iterations.
// tools/dev/comm-churn-compare runs it with and without loom, alternately.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_mpi_t.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

int rank = 0, size = 1;

[[noreturn]] void usage(const char* why)
{
    if (rank == 0)
        std::fprintf(stderr,
                     "loom-comm-churn: %s\nusage: loom-comm-churn [--modes split,dup-once,split-100,dup-100] "
                     "[--iterations N] [--repeats R] [--csv FILE]\n",
                     why);
    MPI_Finalize();
    std::exit(2);
}

void check(bool ok, const char* what)
{
    if (ok) return;
    std::fprintf(stderr, "loom-comm-churn: rank %d: wrong result of %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

// One allreduce of a double, checked: the sum of (rank + 1) over the communicator.
void allreduce_once(MPI_Comm comm)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    double in = r + 1, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, comm);
    check(out == double(n) * (n + 1) / 2, "MPI_Allreduce");
}

void bcast_once(MPI_Comm comm)
{
    int r;
    MPI_Comm_rank(comm, &r);
    double v = r == 0 ? 42.5 : 0;
    MPI_Bcast(&v, 1, MPI_DOUBLE, 0, comm);
    check(v == 42.5, "MPI_Bcast");
}

MPI_Comm halves()
{
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2 ? 0 : 1, rank, &half);
    return half;
}

struct Mode {
    const char* name;
    std::function<void()> iteration;
};

const std::vector<Mode> kModes = {
    {"split",
     [] {
         MPI_Comm c = halves();
         allreduce_once(c);
         bcast_once(c);
         MPI_Comm_free(&c);
     }},
    {"dup-once",
     [] {
         MPI_Comm c;
         MPI_Comm_dup(MPI_COMM_WORLD, &c);
         allreduce_once(c);
         MPI_Comm_free(&c);
     }},
    {"split-100",
     [] {
         MPI_Comm c = halves();
         for (int i = 0; i < 100; ++i) allreduce_once(c);
         MPI_Comm_free(&c);
     }},
    {"dup-100",
     [] {
         MPI_Comm c;
         MPI_Comm_dup(MPI_COMM_WORLD, &c);
         for (int i = 0; i < 100; ++i) allreduce_once(c);
         MPI_Comm_free(&c);
     }},
};

// Allreduce and bcast calls one iteration of a mode makes.
long long calls_of(const Mode& m)
{
    const std::string name = m.name;
    return name == "split" ? 2 : name == "dup-once" ? 1 : 100;
}

// loom's served allreduce and bcast calls so far (0 when loom is not loaded).
struct Served {
    loom::tools::LoomCounters allreduce, bcast;
    bool loaded = false;
    unsigned long long now() { return loaded ? allreduce.served() + bcast.served() : 0; }
};

// The slowest rank's mean microseconds per iteration over `iterations` iterations; adds the
// calls loom served during them to *served.
double time_mode(const Mode& m, int iterations, Served& counters, unsigned long long* served)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned long long before = counters.now();
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) m.iteration();
    const double mine = (MPI_Wtime() - t0) / iterations * 1e6;
    *served += counters.now() - before;
    double slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    std::string modes_arg = "split,dup-once,split-100,dup-100", csv_path;
    int iterations = 1000, repeats = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage(("missing value after " + a).c_str());
        const char* v = argv[++i];
        if (a == "--modes")
            modes_arg = v;
        else if (a == "--iterations")
            iterations = std::atoi(v);
        else if (a == "--repeats")
            repeats = std::atoi(v);
        else if (a == "--csv")
            csv_path = v;
        else
            usage(("unknown argument " + a).c_str());
    }
    if (iterations < 1 || repeats < 1) usage("--iterations and --repeats want numbers >= 1");
    std::vector<const Mode*> modes;
    std::stringstream list(modes_arg);
    for (std::string name; std::getline(list, name, ',');) {
        auto it = std::find_if(kModes.begin(), kModes.end(), [&](const Mode& m) { return name == m.name; });
        if (it == kModes.end()) usage(("unknown mode " + name).c_str());
        modes.push_back(&*it);
    }

    Served counters;
    counters.loaded = counters.allreduce.open("allreduce") && counters.bcast.open("bcast");
    unsigned long long served = 0;
    long long calls = 0;

    for (const Mode* m : modes) m->iteration(); // warm-up (also of MPI_COMM_WORLD's own set-up)
    std::vector<std::vector<double>> times(modes.size());
    for (int r = 0; r < repeats; ++r)
        for (std::size_t k = 0; k < modes.size(); ++k)
            times[k].push_back(time_mode(*modes[k], iterations, counters, &served));
    for (const Mode* m : modes) calls += calls_of(*m) * (long long)iterations * repeats;

    unsigned long long total = 0;
    MPI_Reduce(&served, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && counters.loaded)
        std::printf("# loom served %llu of %lld allreduce/bcast calls on the created communicators\n", total,
                    calls * size);
    else if (rank == 0)
        std::printf("# loom not loaded\n");
    if (rank == 0) {
        std::printf("# loom-comm-churn: np=%d, %d iterations x %d repeats per mode\n", size, iterations, repeats);
        std::printf("%-10s %14s %10s\n", "mode", "us/iteration", "min");
        std::unique_ptr<std::ofstream> csv;
        if (!csv_path.empty()) {
            csv = std::make_unique<std::ofstream>(csv_path);
            *csv << "mode,np,us_per_iteration,min_us,iterations\n";
        }
        for (std::size_t k = 0; k < modes.size(); ++k) {
            const double med = median(times[k]), lo = *std::min_element(times[k].begin(), times[k].end());
            std::printf("%-10s %14.2f %10.2f\n", modes[k]->name, med, lo);
            if (csv) *csv << modes[k]->name << ',' << size << ',' << med << ',' << lo << ',' << iterations << '\n';
        }
    }
    MPI_Finalize();
    return 0;
}
