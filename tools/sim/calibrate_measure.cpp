// loom-sim-calibrate --measure: fits the cost model to this machine and writes the model file
// (what each key comes from: the top of calibrate.cpp; the shared helpers: calibrate.hpp).
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "calibrate.hpp"
#include "loom_c_api.h"
#include "model.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::calibrate {
namespace {

constexpr double kGB = 1e9;

// Keeps the compiler from dropping or merging stores to `p` it thinks nobody reads.
void clobber(void* p) { asm volatile("" : : "r"(p) : "memory"); }

struct PingPoint {
    std::size_t bytes;
    double half_rtt_s; // median over repeats (for the stream: time per message)
};

// Round trips per repeat: many for small messages, few for big ones.
int pingpong_iterations(std::size_t bytes)
{
    return int(std::clamp<std::size_t>((32u << 20) / std::max<std::size_t>(bytes, 1), 10, 1000));
}

// Rank 0 and 1 only: mean half round-trip time of `iters` ping-pongs of `bytes`.
double pingpong_once(int rank, std::size_t bytes, int iters, std::vector<char>& buf)
{
    const int peer = 1 - rank, n = int(bytes);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        if (rank == 0) {
            MPI_Send(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters / 2;
}

// Ranks 0 and 1: the median seconds of `once(bytes, iterations)` per size. Each size is called
// once with warm(bytes) iterations, then the repeats are interleaved (every size once, then every
// size again, ...) with timed(bytes) iterations, so a burst of load from elsewhere on the machine
// spoils one repeat of many sizes, which the median drops, rather than every repeat of one size.
template <class Once, class Warm, class Timed>
std::vector<PingPoint> interleaved_medians(const std::vector<std::size_t>& sizes, int repeats, Warm warm, Timed timed,
                                           Once once)
{
    for (std::size_t bytes : sizes) once(bytes, warm(bytes));
    std::vector<std::vector<double>> runs(sizes.size());
    for (int r = 0; r < repeats; ++r)
        for (std::size_t i = 0; i < sizes.size(); ++i) runs[i].push_back(once(sizes[i], timed(sizes[i])));
    std::vector<PingPoint> points;
    for (std::size_t i = 0; i < sizes.size(); ++i) points.push_back({sizes[i], median(runs[i])});
    return points;
}

// Ranks 0 and 1: the ping-pong curve (rank 0's timings; rank 1's vector is the same length).
std::vector<PingPoint> measure_pingpong(int rank, int repeats)
{
    std::vector<std::size_t> sizes{0};
    for (std::size_t s = 1; s <= (4u << 20); s *= 2) sizes.push_back(s);
    std::vector<char> buf(4u << 20, 1);
    return interleaved_medians(
        sizes, repeats, [](std::size_t b) { return std::max(2, pingpong_iterations(b) / 10); }, pingpong_iterations,
        [&](std::size_t b, int iters) { return pingpong_once(rank, b, iters, buf); });
}

// Ranks 0 and 1 only: seconds per message when rank 0 sends `iters` messages of `bytes` back
// to back from an unchanging buffer and rank 1 acknowledges the last (OSU-bandwidth-like,
// one message in flight). For comparison with the ping-pong, whose messages always carry data
// the other core has just written; not used by the model.
double stream_once(int rank, std::size_t bytes, int iters, std::vector<char>& buf)
{
    const int n = int(bytes);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        if (rank == 0)
            MPI_Send(buf.data(), n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
        else
            MPI_Recv(buf.data(), n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 0)
        MPI_Recv(nullptr, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(nullptr, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    return (MPI_Wtime() - t0) / iters;
}

std::vector<PingPoint> measure_stream(int rank, int repeats, const std::vector<PingPoint>& pingpong)
{
    std::vector<char> buf(4u << 20, 1);
    std::vector<PingPoint> points;
    for (const auto& p : pingpong) {
        if (p.bytes < (64u << 10)) continue;
        const int iters = 2 * pingpong_iterations(p.bytes);
        stream_once(rank, p.bytes, 2, buf);
        std::vector<double> runs;
        for (int r = 0; r < repeats; ++r) runs.push_back(stream_once(rank, p.bytes, iters, buf));
        points.push_back({p.bytes, median(runs)});
    }
    return points;
}

// Ranks 0 and 1 only: seconds per exchange when both send `bytes` to each other at once
// (MPI_Irecv + MPI_Isend + MPI_Waitall), `iters` times. Over ob1's TCP BTL the two directions of
// one connection share it: each gets less than a one-way message (loom-sim's
// inter_exchange_bandwidth_GBps); over UCX, shared memory or a real NIC they need not.
double exchange_once(int rank, std::size_t bytes, int iters, std::vector<char>& out, std::vector<char>& in)
{
    const int peer = 1 - rank, n = int(bytes);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        MPI_Request req[2];
        MPI_Irecv(in.data(), n, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out.data(), n, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    return (MPI_Wtime() - t0) / iters;
}

// The exchange at the ping-pong's sizes from 64 KiB (interleaved repeats, as the ping-pong).
std::vector<PingPoint> measure_exchange(int rank, int repeats, const std::vector<PingPoint>& pingpong)
{
    std::vector<char> out(4u << 20, 1), in(4u << 20, 0);
    std::vector<std::size_t> sizes;
    for (const auto& p : pingpong)
        if (p.bytes >= (64u << 10)) sizes.push_back(p.bytes);
    return interleaved_medians(
        sizes, repeats, [](std::size_t) { return 2; },
        [](std::size_t b) { return std::max(2, pingpong_iterations(b) / 4); },
        [&](std::size_t b, int iters) { return exchange_once(rank, b, iters, out, in); });
}

struct Line {
    double a = 0, b = 0; // t = a + m b
};

// The bandwidth is fitted where collectives' big messages live: above the shared-memory
// BTL's rendezvous switch (32 KiB) and up to 1 MiB, the largest message --check sends. Above
// that, sender and receiver buffers together outgrow a core's L2 cache on many machines
// (4 MiB on the one this was written on) and the curve bends; those points are recorded in
// the file, not fitted.
constexpr std::size_t kBandwidthLo = 64 * 1024, kBandwidthHi = 1024 * 1024;
// Across nodes (TCP) the fit takes 1-4 MiB instead: a token-bucket rate limit (tools/emucluster
// --rate) lets a burst of a few hundred KiB through faster than the rate, and TCP's window opens
// over the first few hundred KiB, so the 64 KiB-1 MiB points bend the other way; collectives'
// large messages see the sustained rate.
constexpr std::size_t kNetBandwidthLo = 1024 * 1024, kNetBandwidthHi = 4 * 1024 * 1024;

// Least squares through the points with lo <= bytes <= hi.
Line fit(const std::vector<PingPoint>& points, std::size_t lo, std::size_t hi)
{
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& p : points) {
        if (p.bytes < lo || p.bytes > hi) continue;
        const double x = double(p.bytes), y = p.half_rtt_s;
        n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double den = n * sxx - sx * sx;
    if (n < 2 || den == 0) throw std::runtime_error("too few ping-pong points to fit");
    Line l;
    l.b = (n * sxy - sx * sy) / den;
    l.a = (sy - l.b * sx) / n;
    return l;
}

// Median seconds of one call of `body`, over `repeats` runs of `iters` calls after a warm-up.
template <class Body>
double time_local(Body body, int iters, int repeats)
{
    for (int i = 0; i < 3; ++i) body();
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
        const double t0 = MPI_Wtime();
        for (int i = 0; i < iters; ++i) body();
        runs.push_back((MPI_Wtime() - t0) / iters);
    }
    return median(runs);
}

constexpr std::size_t kLocalBytes = 1u << 20; // reduce and copy are timed on 1 MiB

// loom's MPI_SUM kernel for doubles: seconds per call on 1 MiB.
double time_reduce_kernel(int repeats)
{
    loom_reduction_t k{};
    if (!loom_find_kernel(LOOM_OP_SUM, LOOM_TYPE_DOUBLE, &k)) throw std::runtime_error("loom has no double-sum kernel");
    const std::size_t count = kLocalBytes / sizeof(double);
    std::vector<double> in(count, 1e-6), inout(count, 1.0);
    return time_local(
        [&] {
            k.fn(in.data(), inout.data(), count, k.ctx);
            clobber(inout.data());
        },
        50, repeats);
}

// memcpy: seconds per 1 MiB copy.
double time_memcpy(int repeats)
{
    std::vector<char> src(kLocalBytes, 3), dst(kLocalBytes, 0);
    return time_local(
        [&] {
            std::memcpy(dst.data(), src.data(), kLocalBytes);
            clobber(dst.data());
        },
        50, repeats);
}

struct Measurements {
    std::vector<PingPoint> pingpong, stream, exchange;
    Line latency_fit, bandwidth_fit, all_fit, stream_fit, exchange_fit;
    double reduce_s = 0, copy_s = 0;
    std::size_t eager_limit = 65536;
    bool eager_from_mpi_t = false;
    int ranks = 0, cores = 0;
    // Ranks 0 and 1 on different hosts (MPI_Get_processor_name differs): the ping-pong measured
    // the network (the TCP BTL's eager limit applies), not shared memory.
    bool across_nodes = false;
    std::string peer_host;
};

const char* eager_cvar(const Measurements& m) { return m.across_nodes ? "btl_tcp_eager_limit" : "btl_vader_eager_limit"; }

loom::sim::Model build_model(const Measurements& m, const std::string& name)
{
    loom::sim::Model model;
    model.name = name;
    model.description = "calibrated by loom-sim-calibrate on " + host_name() + " (" + cpu_name() + ", " +
                        std::to_string(m.cores) + " cores) at np " + std::to_string(m.ranks) +
                        (m.across_nodes ? "; ranks 0 and 1 on different nodes (" + host_name() + ", " + m.peer_host +
                                              "), so the link measured is the network and intra_* = inter_*"
                                        : "; one node only, so inter_* = intra_* (no network was measured)");
    model.ranks_per_node = m.ranks;
    model.cores_per_node = m.cores;
    model.intra = {std::max(0.0, m.latency_fit.a), m.bandwidth_fit.b};
    model.inter = model.intra;
    model.reduce_per_byte_s = m.reduce_s / double(kLocalBytes);
    model.copy_per_byte_s = m.copy_s / double(kLocalBytes);
    model.eager_limit = m.eager_limit;
    // Across nodes, an exchange whose directions each move more than 10% slower than a one-way
    // message (over the same 1-4 MiB) gives inter_exchange_bandwidth_GBps; otherwise the key is
    // left out (the directions do not hinder each other).
    // The model charges a one-way message a + m b (latency fit's intercept, bandwidth fit's
    // slope) and an exchange's direction a + F b + (m - F) b_x; F = (a - a_x) / (b_x - b) makes
    // that the exchange line a_x + m b_x over 1-4 MiB (a_x < 0: the first few hundred KiB of an
    // exchange move at the one-way rate). Not the bandwidth fit's intercept: behind tbf it is
    // negative too (the bucket's burst), which would put F near 0.
    if (m.across_nodes && m.exchange_fit.b > 1.1 * m.bandwidth_fit.b) {
        model.inter_exchange_per_byte_s = m.exchange_fit.b;
        const double cross = (std::max(0.0, m.latency_fit.a) - m.exchange_fit.a) / (m.exchange_fit.b - m.bandwidth_fit.b);
        model.inter_exchange_after = std::size_t(std::max(0.0, cross));
    }
    return model;
}

std::string describe_line(const char* what, const Line& l)
{
    char buf[200];
    std::snprintf(buf, sizeof buf, "# %s: t = %.3f us + m / %.3f GB/s\n", what, l.a / kUs, 1 / l.b / kGB);
    return buf;
}

// `text` with control characters (a newline would end the comment line) made spaces.
std::string one_line(std::string text)
{
    for (char& ch : text)
        if ((unsigned char)ch < 0x20) ch = ' ';
    return text;
}

// The comment block at the top of the model file: when, how, and every raw number.
std::string comment_block(const Measurements& m, const Options& o, int repeats)
{
    std::ostringstream out;
    char buf[200];
    out << "# loom-sim model calibrated by loom-sim-calibrate --measure\n"
        << "# date: " << now_text() << "\n"
        << "# host: " << host_name() << ", " << cpu_name() << ", " << m.cores << " cores\n"
        << "# command: " << one_line(o.command) << "\n"
        << "# ping-pong (MPI_Send/MPI_Recv, ranks 0 and 1, MPI_BYTE): bytes -> median half round trip over " << repeats
        << " repeats\n";
    for (const auto& p : m.pingpong) {
        std::snprintf(buf, sizeof buf, "#   %8zu B  %10.3f us  (%d round trips per repeat)\n", p.bytes,
                      p.half_rtt_s / kUs, pingpong_iterations(p.bytes));
        out << buf;
    }
    out << describe_line("latency fit, least squares over 0..1 KiB (gives intra_latency_us)", m.latency_fit)
        << describe_line(m.across_nodes ? "bandwidth fit, least squares over 1 MiB..4 MiB (across nodes; gives the bandwidth)"
                                        : "bandwidth fit, least squares over 64 KiB..1 MiB (gives intra_bandwidth_GBps)",
                         m.bandwidth_fit)
        << describe_line("for comparison, one least-squares line over all sizes", m.all_fit);
    out << "# for comparison, one-way stream (rank 0 sends the same buffer back to back, rank 1 receives):"
           " bytes -> median time per message\n";
    for (const auto& p : m.stream) {
        std::snprintf(buf, sizeof buf, "#   %8zu B  %10.3f us\n", p.bytes, p.half_rtt_s / kUs);
        out << buf;
    }
    out << describe_line("stream fit over 64 KiB..1 MiB (not used)", m.stream_fit);
    out << "# exchange (ranks 0 and 1 send to each other at once, MPI_Irecv + MPI_Isend + MPI_Waitall): bytes ->"
           " median time per exchange\n";
    for (const auto& p : m.exchange) {
        std::snprintf(buf, sizeof buf, "#   %8zu B  %10.3f us\n", p.bytes, p.half_rtt_s / kUs);
        out << buf;
    }
    out << describe_line(m.across_nodes ? "exchange fit over 1 MiB..4 MiB (gives inter_exchange_bandwidth_GBps when"
                                          " more than 10% slower than the bandwidth fit)"
                                        : "exchange fit over 64 KiB..1 MiB (not used inside a node)",
                         m.exchange_fit);
    std::snprintf(buf, sizeof buf, "# loom sum kernel, 1 MiB of doubles: %.3f us per call (median of %d)\n",
                  m.reduce_s / kUs, repeats);
    out << buf;
    std::snprintf(buf, sizeof buf, "# memcpy, 1 MiB: %.3f us per call (median of %d)\n", m.copy_s / kUs, repeats);
    out << buf;
    out << "# eager limit: " << m.eager_limit
        << (m.eager_from_mpi_t ? std::string(" (") + eager_cvar(m) + ", read through MPI_T)"
                               : std::string(" (") + eager_cvar(m) + " not readable; the default 65536)")
        << "\n";
    if (m.across_nodes) out << "# ranks 0 and 1 ran on different nodes: " << host_name() << " and " << m.peer_host << "\n";
    return out.str();
}

bool same(double x, double y) { return std::abs(x - y) <= 1e-12 * std::max(std::abs(x), std::abs(y)); }

// Reads the file back and checks that every value survived.
void check_round_trip(const loom::sim::Model& m, const std::string& path)
{
    const loom::sim::Model r = loom::sim::load_model(path);
    const bool ok = r.name == m.name && r.description == m.description && r.ranks_per_node == m.ranks_per_node &&
                    r.cores_per_node == m.cores_per_node && same(r.intra.latency_s, m.intra.latency_s) &&
                    same(r.intra.per_byte_s, m.intra.per_byte_s) && same(r.inter.latency_s, m.inter.latency_s) &&
                    same(r.inter.per_byte_s, m.inter.per_byte_s) && same(r.reduce_per_byte_s, m.reduce_per_byte_s) &&
                    same(r.copy_per_byte_s, m.copy_per_byte_s) && r.eager_limit == m.eager_limit &&
                    same(r.inter_exchange_per_byte_s, m.inter_exchange_per_byte_s) &&
                    r.inter_exchange_after == m.inter_exchange_after;
    if (!ok) throw std::runtime_error(path + ": the model read back differs from the one written");
}

} // namespace

int run_measure(const Options& o, int rank, int size)
{
    const int repeats = std::max(o.repeats, 9); // the ping-pong is cheap: more repeats, steadier medians
    Measurements m;
    m.ranks = size;
    m.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
    if (rank <= 1) {
        m.pingpong = measure_pingpong(rank, repeats);
        m.stream = measure_stream(rank, repeats, m.pingpong);
        m.exchange = measure_exchange(rank, repeats, m.pingpong);
    }
    sleeping_barrier();
    if (rank == 0) {
        m.reduce_s = time_reduce_kernel(repeats);
        m.copy_s = time_memcpy(repeats);
    }
    sleeping_barrier();
    {   // Where rank 1 runs: on another node, the ping-pong measured the network.
        char name[MPI_MAX_PROCESSOR_NAME + 1] = {};
        int len = 0;
        MPI_Get_processor_name(name, &len);
        if (rank == 1) MPI_Send(name, len, MPI_CHAR, 0, 4, MPI_COMM_WORLD);
        if (rank == 0) {
            char peer[MPI_MAX_PROCESSOR_NAME + 1] = {};
            MPI_Recv(peer, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            m.peer_host = peer;
            m.across_nodes = m.peer_host != name;
        }
        const long across = from_root(long(m.across_nodes), size);
        m.across_nodes = across != 0;
    }
    if (const auto eager = read_cvar(eager_cvar(m)))
        m.eager_limit = std::size_t(*eager), m.eager_from_mpi_t = true;
    if (rank != 0) return 0;

    m.latency_fit = fit(m.pingpong, 0, 1024);
    m.bandwidth_fit = m.across_nodes ? fit(m.pingpong, kNetBandwidthLo, kNetBandwidthHi)
                                     : fit(m.pingpong, kBandwidthLo, kBandwidthHi);
    m.all_fit = fit(m.pingpong, 0, 4u << 20);
    m.stream_fit = fit(m.stream, kBandwidthLo, kBandwidthHi);
    m.exchange_fit = m.across_nodes ? fit(m.exchange, kNetBandwidthLo, kNetBandwidthHi)
                                    : fit(m.exchange, kBandwidthLo, kBandwidthHi);
    if (m.bandwidth_fit.b <= 0) throw std::runtime_error("the large-message ping-pong times do not grow with size");
    const loom::sim::Model model = build_model(m, o.name);
    const std::string text = comment_block(m, o, repeats) + loom::sim::format_model(model);
    {
        std::ofstream out(o.out, std::ios::binary);
        out << text;
        if (!out) throw std::runtime_error(o.out + ": cannot write");
    }
    check_round_trip(model, o.out);
    std::fputs(text.c_str(), stdout);
    std::printf("# wrote %s (read back with load_model: identical)\n", o.out.c_str());
    return 0;
}

} // namespace loom::calibrate
