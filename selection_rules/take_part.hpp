// Whether loom takes part in a job at all, before any call is decided:
//   * the Open MPI release the process runs in must be the one loom was compiled against
//     (Open MPI checks only the coll framework's interface version, so a loom built against
//     4.1.4's headers would otherwise run inside 4.1.8 with 4.1.4's struct layouts);
//   * every rank of a communicator must hold the same effective rule table, or ranks choose
//     different algorithms for one call (a hang or a wrong answer).
// The glue (coll_component/coll_loom_ompi.c, coll_loom_comm.c) gathers the facts; these are the
// pure functions over them, MPI-free and unit-tested.
#pragma once

#include "rules.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::take_part {

struct Release {
    int major = 0, minor = 0, release = 0;
    bool operator==(const Release&) const = default;
};

// The release named by MPI_Get_library_version's text: "Open MPI v4.1.4, package: ..." gives
// 4.1.4; a pre-release suffix is not part of it ("Open MPI v5.0.10rc2" gives 5.0.10). nullopt if
// the text names no Open MPI release (another MPI, a vendor's text loom cannot read).
std::optional<Release> parse_release(std::string_view library_version);

// One rule as the text of every field that decides what it matches and what it runs (not
// where it came from: two nodes with the same rules under different paths agree).
std::string canonical(const rules::Rule& rule);

// A 64-bit fingerprint (FNV-1a) of the process's effective rule table - loom's version, the
// user's and the site's rules (rules.hpp: as loaded; a file with errors contributes none), the
// built-in table's text - and of `settings`, the glue's text naming every parameter that
// changes a choice (forced algorithms, segment sizes, radix, online tuning's settings, ...).
// Two processes with the same fingerprint decide every call alike. Never 0 (the glue's "none").
std::uint64_t rules_fingerprint(std::string_view version, std::string_view settings);

// FNV-1a over `text`, continuing from `hash` (the offset basis to start).
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = kFnvOffset);

} // namespace loom::take_part
