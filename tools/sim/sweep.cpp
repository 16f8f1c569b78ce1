#include "sweep.hpp"

#include "size_text.hpp"

#include <atomic>
#include <mutex>
#include <thread>

namespace loom::sim {

std::vector<SweepPoint> run_sweep(const SweepSpec& spec)
{
    std::vector<SweepPoint> points;
    for (std::size_t bytes : spec.sizes)
        for (const Algorithm* a : spec.algorithms) points.push_back(SweepPoint{a, bytes, {}, {}});
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex progress_lock;
    auto worker = [&] {
        for (std::size_t i; (i = next++) < points.size();) {
            SweepPoint& p = points[i];
            Scenario s = spec.shape;
            s.algorithm = p.algorithm;
            s.bytes = p.bytes;
            try {
                p.result = simulate(*spec.model, s);
            } catch (const std::exception& e) {
                p.error = e.what();
            }
            const std::size_t finished = ++done;
            if (spec.progress) {
                std::lock_guard<std::mutex> hold(progress_lock);
                spec.progress(finished, points.size());
            }
        }
    };
    const int threads = std::max(1, std::min<int>(spec.jobs, int(points.size())));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    return points;
}

std::vector<std::size_t> power_of_two_sizes(std::size_t lo, std::size_t hi)
{
    std::vector<std::size_t> sizes;
    std::size_t s = 1;
    if (lo == 0) sizes.push_back(0);
    while (s < lo && s <= hi / 2) s *= 2;
    if (s < lo) return sizes;
    for (; s <= hi; s *= 2) {
        sizes.push_back(s);
        if (s > hi / 2) break;
    }
    return sizes;
}

std::vector<Winner> winners(const std::vector<SweepPoint>& points)
{
    std::vector<Winner> out;
    for (std::size_t i = 0; i < points.size();) {
        const std::size_t bytes = points[i].bytes;
        Winner w{bytes, nullptr, 0, nullptr, 0};
        for (; i < points.size() && points[i].bytes == bytes; ++i) {
            const SweepPoint& p = points[i];
            if (!p.error.empty()) continue;
            if (p.result.bytes == 0 && p.bytes != 0) continue; // blocks rounded to nothing: no call to serve
            const double t = p.result.seconds;
            if (w.algorithm == nullptr || t < w.seconds) {
                w.runner_up = w.algorithm, w.runner_up_seconds = w.seconds;
                w.algorithm = p.algorithm, w.seconds = t;
            } else if (w.runner_up == nullptr || t < w.runner_up_seconds) {
                w.runner_up = p.algorithm, w.runner_up_seconds = t;
            }
        }
        if (w.algorithm != nullptr) out.push_back(w);
    }
    return out;
}

std::string emit_rules(const std::vector<Winner>& ws, int ranks, const std::vector<std::string>& comment,
                       std::size_t segment_bytes, std::size_t buffer_bytes)
{
    using tools::format_size;
    std::string text = "loom-rules 1\n";
    for (const auto& line : comment) text += "# " + line + "\n";
    if (ws.empty()) return text + "# (no size could be simulated: no rules)\n";
    const std::string collective(to_string(ws.front().algorithm->collective));
    for (std::size_t i = 0; i < ws.size();) {
        std::size_t j = i;
        while (j + 1 < ws.size() && ws[j + 1].algorithm == ws[i].algorithm) ++j;
        const std::string lo = i == 0 ? "0" : format_size(ws[i].bytes);
        const std::string hi = j + 1 == ws.size() ? "*" : format_size(ws[j + 1].bytes - 1);
        std::string line = collective;
        line.resize(std::max<std::size_t>(line.size() + 1, 22), ' ');
        line += std::to_string(ranks);
        line.resize(std::max<std::size_t>(line.size() + 1, 30), ' ');
        line += lo + "-" + hi;
        line.resize(std::max<std::size_t>(line.size() + 1, 48), ' ');
        line += ws[i].algorithm->name;
        const std::string_view name = ws[i].algorithm->name;
        if (segment_bytes != 0 && (name == "ring_pipelined" || name == "binomial"))
            line += " segment=" + format_size(segment_bytes);
        if (buffer_bytes != 0 && name == "pat") line += " buffer=" + format_size(buffer_bytes);
        text += line + "\n";
        i = j + 1;
    }
    return text;
}

} // namespace loom::sim
