#include "model.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace loom::sim {
namespace {

constexpr double kGB = 1e9; // bandwidths are in GB/s, 10^9 bytes per second
constexpr double kUs = 1e-6;

std::string trim(std::string_view s)
{
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t\r");
    return std::string(s.substr(first, last - first + 1));
}

// Parses one number; "inf" allowed only where the key says so.
double number(const std::string& text, bool allow_inf, const std::string& where)
{
    if (allow_inf && text == "inf") return std::numeric_limits<double>::infinity();
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
        throw ModelError(where + "'" + text + "' is not a number");
    if (v < 0) throw ModelError(where + "'" + text + "' is negative");
    return v;
}

int count_value(const std::string& text, int lo, const std::string& where)
{
    const double v = number(text, false, where);
    if (v != std::floor(v) || v < lo || v > 1e7)
        throw ModelError(where + "'" + text + "' is not a whole number >= " + std::to_string(lo));
    return int(v);
}

double per_byte(double gbps) { return std::isinf(gbps) ? 0.0 : 1.0 / (gbps * kGB); }

std::string gbps_text(double per_byte_s)
{
    if (per_byte_s == 0) return "inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", 1.0 / per_byte_s / kGB);
    return buf;
}

std::string num_text(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

const char* const kKeys[] = {"name",
                             "description",
                             "ranks_per_node",
                             "cores_per_node",
                             "shared_cores",
                             "intra_latency_us",
                             "intra_bandwidth_GBps",
                             "inter_latency_us",
                             "inter_bandwidth_GBps",
                             "reduce_bandwidth_GBps",
                             "copy_bandwidth_GBps",
                             "eager_limit_bytes",
                             "inter_eager_limit_bytes",
                             "inter_cpu_bandwidth_GBps",
                             "inter_exchange_bandwidth_GBps",
                             "inter_exchange_after_bytes",
                             "oversubscribed_wakeup_us",
                             "inter_send_overhead_us",
                             "inter_recv_overhead_us",
                             "rendezvous_handshakes",
                             "fat_tree_radix",
                             "fat_tree_taper",
                             "hop_latency_us"};

// The known key sharing the longest prefix with `key`, for "did you mean".
std::string nearest_key(const std::string& key)
{
    std::string best;
    std::size_t best_len = 0;
    for (const char* k : kKeys) {
        std::size_t n = 0;
        while (k[n] != '\0' && n < key.size() && k[n] == key[n]) ++n;
        if (n > best_len) best_len = n, best = k;
    }
    return best_len >= 3 ? best : std::string();
}

} // namespace

Model parse_model(std::string_view text, const std::string& source)
{
    Model m;
    m.source = source;
    bool header = false;
    std::vector<std::string> seen;
    std::size_t line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::string_view raw = text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++line_no;
        const std::string where = source + ":" + std::to_string(line_no) + ": ";
        for (char ch : raw)
            if ((unsigned char)ch < 0x20 && ch != '\t' && ch != '\r')
                throw ModelError(where + "control character in the file");
        const std::string line = trim(raw.substr(0, raw.find('#')));
        if (line.empty()) continue;
        if (!header) {
            if (line != "loom-sim-model 1")
                throw ModelError(where + "expected the header 'loom-sim-model 1', found '" + line + "'");
            header = true;
            continue;
        }
        const auto eq = line.find('=');
        if (eq == std::string::npos) throw ModelError(where + "expected 'key = value', found '" + line + "'");
        const std::string key = trim(std::string_view(line).substr(0, eq));
        const std::string value = trim(std::string_view(line).substr(eq + 1));
        for (const auto& s : seen)
            if (s == key) throw ModelError(where + "'" + key + "' is set twice");
        seen.push_back(key);
        const std::string at = where + key + ": ";
        if (value.empty() && key != "description") throw ModelError(at + "no value");
        if (key == "name")
            m.name = value;
        else if (key == "description")
            m.description = value;
        else if (key == "ranks_per_node")
            m.ranks_per_node = count_value(value, 1, at);
        else if (key == "cores_per_node")
            m.cores_per_node = count_value(value, 0, at);
        else if (key == "shared_cores")
            m.shared_cores = count_value(value, 0, at);
        else if (key == "intra_latency_us")
            m.intra.latency_s = number(value, false, at) * kUs;
        else if (key == "inter_latency_us")
            m.inter.latency_s = number(value, false, at) * kUs;
        else if (key == "hop_latency_us")
            m.hop_latency_s = number(value, false, at) * kUs;
        else if (key == "rendezvous_handshakes")
            m.rendezvous_handshakes = count_value(value, 0, at);
        else if (key == "oversubscribed_wakeup_us")
            m.oversubscribed_wakeup_s = number(value, false, at) * kUs;
        else if (key == "inter_send_overhead_us")
            m.inter_send_overhead_s = number(value, false, at) * kUs;
        else if (key == "inter_recv_overhead_us")
            m.inter_recv_overhead_s = number(value, false, at) * kUs;
        else if (key == "intra_bandwidth_GBps" || key == "inter_bandwidth_GBps" || key == "reduce_bandwidth_GBps" ||
                 key == "copy_bandwidth_GBps" || key == "inter_cpu_bandwidth_GBps" ||
                 key == "inter_exchange_bandwidth_GBps") {
            const double gbps = number(value, true, at);
            if (gbps == 0) throw ModelError(at + "a bandwidth must be > 0 ('inf' for free)");
            double& field = key == "intra_bandwidth_GBps"    ? m.intra.per_byte_s
                            : key == "inter_bandwidth_GBps"  ? m.inter.per_byte_s
                            : key == "reduce_bandwidth_GBps" ? m.reduce_per_byte_s
                            : key == "copy_bandwidth_GBps"   ? m.copy_per_byte_s
                            : key == "inter_cpu_bandwidth_GBps" ? m.inter_cpu_per_byte_s
                                                             : m.inter_exchange_per_byte_s;
            field = per_byte(gbps);
        } else if (key == "eager_limit_bytes") {
            m.eager_limit = value == "none" ? std::size_t(-1) : std::size_t(number(value, false, at));
        } else if (key == "inter_exchange_after_bytes") {
            m.inter_exchange_after = std::size_t(number(value, false, at));
        } else if (key == "inter_eager_limit_bytes") {
            m.inter_eager_limit = value == "none" ? std::size_t(-1) : std::size_t(number(value, false, at));
        } else if (key == "fat_tree_radix") {
            m.fat_tree_radix = count_value(value, 0, at);
            if (m.fat_tree_radix == 1) throw ModelError(at + "a radix must be 0 (no fat tree) or >= 2");
        } else if (key == "fat_tree_taper") {
            std::istringstream in(value);
            std::string word;
            while (in >> word) {
                const double t = number(word, false, at);
                if (t < 1) throw ModelError(at + "a taper factor is >= 1 (1: full bisection, 2: 2:1 oversubscribed)");
                m.taper.push_back(t);
            }
        } else {
            const std::string near = nearest_key(key);
            throw ModelError(where + "unknown key '" + key + "'" +
                             (near.empty() ? "" : " (did you mean '" + near + "'?)"));
        }
    }
    if (!header) throw ModelError(source + ": empty model file (expected the header 'loom-sim-model 1')");
    for (const char* required :
         {"intra_latency_us", "intra_bandwidth_GBps", "inter_latency_us", "inter_bandwidth_GBps"}) {
        bool found = false;
        for (const auto& s : seen) found = found || s == required;
        if (!found) throw ModelError(source + ": '" + required + "' is missing");
    }
    if (m.inter_send_overhead_s + m.inter_recv_overhead_s > m.inter.latency_s * (1 + 1e-12))
        throw ModelError(source + ": inter_send_overhead_us + inter_recv_overhead_us exceed inter_latency_us (they are part of it)");
    return m;
}

Model load_model(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelError(path + ": cannot open the model file");
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().size() > (1u << 20)) throw ModelError(path + ": larger than 1 MiB; not a model file");
    return parse_model(text.str(), path);
}

std::string format_model(const Model& m)
{
    std::ostringstream out;
    out << "loom-sim-model 1\n"
        << "name = " << m.name << "\n"
        << "description = " << m.description << "\n"
        << "ranks_per_node = " << m.ranks_per_node << "\n"
        << "cores_per_node = " << m.cores_per_node << "\n";
    if (m.shared_cores > 0) out << "shared_cores = " << m.shared_cores << "\n";
    out << "intra_latency_us = " << num_text(m.intra.latency_s / kUs) << "\n"
        << "intra_bandwidth_GBps = " << gbps_text(m.intra.per_byte_s) << "\n"
        << "inter_latency_us = " << num_text(m.inter.latency_s / kUs) << "\n"
        << "inter_bandwidth_GBps = " << gbps_text(m.inter.per_byte_s) << "\n"
        << "reduce_bandwidth_GBps = " << gbps_text(m.reduce_per_byte_s) << "\n"
        << "copy_bandwidth_GBps = " << gbps_text(m.copy_per_byte_s) << "\n";
    if (m.inter_cpu_per_byte_s > 0) out << "inter_cpu_bandwidth_GBps = " << gbps_text(m.inter_cpu_per_byte_s) << "\n";
    if (m.inter_exchange_per_byte_s > 0)
        out << "inter_exchange_bandwidth_GBps = " << gbps_text(m.inter_exchange_per_byte_s) << "\n";
    if (m.inter_exchange_after > 0) out << "inter_exchange_after_bytes = " << m.inter_exchange_after << "\n";
    const auto limit = [](std::size_t v) { return v == std::size_t(-1) ? std::string("none") : std::to_string(v); };
    out << "eager_limit_bytes = " << limit(m.eager_limit) << "\n";
    if (m.inter_eager_limit) out << "inter_eager_limit_bytes = " << limit(*m.inter_eager_limit) << "\n";
    if (m.rendezvous_handshakes > 0) out << "rendezvous_handshakes = " << m.rendezvous_handshakes << "\n";
    if (m.oversubscribed_wakeup_s > 0)
        out << "oversubscribed_wakeup_us = " << num_text(m.oversubscribed_wakeup_s / kUs) << "\n";
    if (m.inter_send_overhead_s > 0)
        out << "inter_send_overhead_us = " << num_text(m.inter_send_overhead_s / kUs) << "\n";
    if (m.inter_recv_overhead_s > 0)
        out << "inter_recv_overhead_us = " << num_text(m.inter_recv_overhead_s / kUs) << "\n";
    out << "fat_tree_radix = " << m.fat_tree_radix << "\n";
    if (!m.taper.empty()) {
        out << "fat_tree_taper =";
        for (double t : m.taper) out << " " << num_text(t);
        out << "\n";
    }
    out << "hop_latency_us = " << num_text(m.hop_latency_s / kUs) << "\n";
    return out.str();
}

Model flat_model(double latency_s, double per_byte_s, double reduce_per_byte_s)
{
    Model m;
    m.name = "flat";
    m.intra = m.inter = LinkCost{latency_s, per_byte_s};
    m.reduce_per_byte_s = reduce_per_byte_s;
    return m;
}

} // namespace loom::sim
