"""Which loom this is, for the scripts' --version and the files they write (docs/observing.md,
"Which loom a job ran"): "0.2.0 (commit 40a683b1c856)", as the build's loom_version.h says it
(generated at every build from algorithms/loom_version.h.in: meson.build's version and `git
describe` of the source tree). `meson install` puts a copy of that header beside this file, in
DATADIR/loom (the top-level meson.build), where installed scripts read it. From the source tree a script
reads the header of the build tree it runs (BUILD/algorithms/loom_version.h), or, without one,
works it out as meson does.

Shell scripts (emucluster) run it: python3 loom_version.py PROG [BUILD] prints PROG's --version line."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
INSTALLED_HEADER = os.path.join(HERE, "loom_version.h")
SOURCE = os.path.realpath(os.path.join(HERE, "..", ".."))


def _from_header(path):
    with open(path) as f:
        text = f.read()
    found = dict(re.findall(r'^#define (LOOM_VERSION|LOOM_COMMIT) "([^"]*)"', text, re.M))
    return found["LOOM_VERSION"], found["LOOM_COMMIT"]


def _from_source():
    """What meson would write into loom_version.h now (algorithms/meson.build: the same git
    command, "unknown" where the tree is no git checkout)."""
    try:
        with open(os.path.join(SOURCE, "meson.build")) as f:
            version = re.search(r"^\s*version:\s*'([^']+)'", f.read(), re.M).group(1)
    except (OSError, AttributeError):
        version = "unknown"
    try:
        r = subprocess.run(["git", "-C", SOURCE, "describe", "--always", "--dirty", "--abbrev=12", "--exclude", "*"],
                           capture_output=True, text=True)
        commit = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"
    except OSError:
        commit = "unknown"
    return version, commit


def version(build=None):
    """ "0.2.0 (commit 40a683b1c856)": the build tree `build`'s where given, else the installation's;
    where that header is not there (the source tree without a build), the source tree's."""
    header = os.path.join(build, "algorithms", "loom_version.h") if build else INSTALLED_HEADER
    v, c = _from_header(header) if os.path.exists(header) else _from_source()
    return f"{v} (commit {c})"


def text(build=None):
    """ "loom 0.2.0 (commit 40a683b1c856)": how files and messages name a loom (LOOM_VERSION_TEXT)."""
    return f"loom {version(build)}"


def exit_if_asked(prog, argv, build=None):
    """--version anywhere in argv (a script's arguments): prints "PROG 0.2.0 (commit ...)" and
    exits 0, before the script checks its other arguments. The build tree is --build-dir's where
    given, else `build` (the one the script would run)."""
    if "--version" not in argv:
        return
    for i, arg in enumerate(argv):
        if arg == "--build-dir" and i + 1 < len(argv):
            build = argv[i + 1]
        elif arg.startswith("--build-dir="):
            build = arg.split("=", 1)[1]
    print(f"{prog} {version(build)}")
    sys.exit(0)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: loom_version.py PROG [BUILD]")
    print(f"{sys.argv[1]} {version(sys.argv[2] if len(sys.argv) == 3 else None)}")
