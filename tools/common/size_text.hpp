// Sizes on the command line and in tool output: "4096", "4K", "1.5M", "2G", "1T" (powers of
// 1024, as in rule files).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace loom::tools {

// Throws std::invalid_argument naming the text on anything but a non-negative size.
inline std::size_t parse_size(const std::string& text)
{
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || errno == ERANGE || !std::isfinite(v) || v < 0)
        throw std::invalid_argument("bad size '" + text + "' (expected a number with an optional K, M, G or T)");
    const std::string suffix(end);
    double scale = 1;
    if (suffix == "K" || suffix == "k")
        scale = 1024;
    else if (suffix == "M" || suffix == "m")
        scale = 1024.0 * 1024;
    else if (suffix == "G" || suffix == "g")
        scale = 1024.0 * 1024 * 1024;
    else if (suffix == "T" || suffix == "t")
        scale = 1024.0 * 1024 * 1024 * 1024;
    else if (!suffix.empty())
        throw std::invalid_argument("bad size '" + text + "' (unknown suffix '" + suffix + "')");
    if (v * scale >= 18446744073709551615.0) throw std::invalid_argument("size '" + text + "' is too large");
    return std::size_t(v * scale);
}

// The shortest exact text: 16384 -> "16K", 1000 -> "1000".
inline std::string format_size(std::size_t bytes)
{
    const char* suffixes[] = {"", "K", "M", "G", "T"};
    int i = 0;
    while (i < 4 && bytes != 0 && bytes % 1024 == 0) bytes /= 1024, ++i;
    return std::to_string(bytes) + suffixes[i];
}

} // namespace loom::tools
