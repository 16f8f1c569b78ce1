#!/usr/bin/env python3
"""Embeds a text file into a C++ source as loom::rules::detail::kDefaultRulesText."""
import sys

src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
body = ",".join(str(b) for b in data)
with open(out, "w") as f:
    f.write("// Generated from %s by selection_rules/embed.py. Do not edit.\n" % src.split("/")[-1])
    f.write("#include <cstddef>\n#include <string_view>\n")
    f.write("namespace loom::rules::detail {\n")
    f.write("static const unsigned char kBytes[] = {%s%s0};\n" % (body, "," if body else ""))
    f.write("extern const std::string_view kDefaultRulesText(reinterpret_cast<const char*>(kBytes), sizeof(kBytes) - 1);\n")
    f.write("}\n")
