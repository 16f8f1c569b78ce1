// Which loom a tool is (docs/observing.md, "Which loom a job ran"): the line every installed
// tool prints for --version, "loom-rules 0.2.0 (commit 40a683b1c856)", with ", built for Open MPI
// 4.1.4" for a tool built against Open MPI (meson defines LOOM_TOOL_OMPI_RELEASE for those:
// tools/meson.build). The version and commit are the build's (loom_version.h, generated).
#pragma once

#include "loom_version.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace loom::tools {

#ifdef LOOM_TOOL_OMPI_RELEASE
#define LOOM_TOOL_BUILT_FOR ", built for Open MPI " LOOM_TOOL_OMPI_RELEASE
#else
#define LOOM_TOOL_BUILT_FOR ""
#endif

// "loom-rules 0.2.0 (commit 40a683b1c856)[, built for Open MPI 4.1.4]"
inline std::string version_line(const char* tool)
{
    return std::string(tool) + " " LOOM_VERSION " (commit " LOOM_COMMIT ")" LOOM_TOOL_BUILT_FOR;
}

// --version anywhere on the command line: prints the tool's version line and returns true (the
// tool then exits 0 before doing anything else, MPI_Init included).
inline bool print_version_if_asked(int argc, char** argv, const char* tool)
{
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--version") == 0) {
            std::printf("%s\n", version_line(tool).c_str());
            return true;
        }
    return false;
}

} // namespace loom::tools
