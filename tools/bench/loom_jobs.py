"""What tools/loom-bench-compare and tools/loom-tune share: the two kinds of job (mpirun's or srun's) they run
loom-bench in (both with Open MPI's default selection: a loom job with the plugin of a build tree
or the installed one on the component path, and a job without loom, as a user's job would be),
one such run with its CSV read back and what loom-bench said about loom checked; sizes as text
and rule lines, the one writer of every script that writes rules or sizes (also
selection_rules/make-default-rules, tools/bench/version-rules, tools/sim/predict-rules and
make-report, tools/loom-trace); collectives.def's rows, its one reader among the scripts; and
reading a CSV file that the repository keeps in an archive beside it. `meson install` puts this file in DATADIR/loom (tools/meson.build)."""
import csv
import errno
import io
import os
import re
import shlex
import subprocess
import sys
import tarfile


def fail(prog, message, status=1):
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(status)


def collectives():
    """The collectives loom serves, in the table's order: the names of algorithms/collectives.def's
    rows, read from the source tree or from the copy `meson install` puts next to this file."""
    here = os.path.dirname(os.path.realpath(__file__))
    for path in (os.path.join(here, "collectives.def"), os.path.join(here, "..", "..", "algorithms", "collectives.def")):
        if os.path.exists(path):
            with open(path) as f:
                return re.findall(r"^LOOM_COLLECTIVE\((\w+),", f.read(), re.M)
    raise FileNotFoundError("collectives.def is neither next to loom_jobs.py nor in the source tree")


def ompi_components():
    out = subprocess.run(["ompi_info", "--parsable", "--path", "pkglibdir"], check=True,
                         capture_output=True, text=True).stdout.strip()
    return out.split("pkglibdir:", 1)[1]


# What a program run in these jobs says about loom on a line of its own (tools/common/loom_state.h:
# loom-bench, and the other tools' programs): "# loom enabled on MPI_COMM_WORLD", "# loom loaded but
# not enabled on MPI_COMM_WORLD", "# loom not loaded", or "# loom loaded" (a loom, or a loom-bench,
# from before coll_loom_communicators_enabled: loaded, enabled or not). The first prefix that
# matches names the state.
LOOM_STATES = (("# loom enabled on ", "enabled"), ("# loom loaded but not enabled on ", "not enabled"),
               ("# loom not loaded", "not loaded"), ("# loom loaded", "loaded"))


def loom_state(output):
    """What a program's output says about loom: "enabled", "not enabled", "not loaded" or "loaded"
    (LOOM_STATES); None if it says nothing."""
    for line in output.splitlines():
        for prefix, state in LOOM_STATES:
            if line.startswith(prefix):
                return state
    return None


def check_loom_state(prog, who, output, cmd):
    """Stops `prog` unless `output` (of the command `cmd`, a list) says loom served the job when
    `who` is "loom", and that loom was not loaded when `who` is "ompi" (the job without loom).
    A loom job's "loaded" (a loom or loom-bench too old to say whether loom was enabled) passes with
    a note on stderr."""
    state = loom_state(output)
    if who == "ompi" and state == "not loaded":
        return
    if who != "ompi":
        if state == "enabled":
            return
        if state == "loaded":
            print(f"{prog}: note: the {who} job's loom or program predates coll_loom_communicators_enabled: "
                  f"loom was loaded, whether it was enabled is not checked: {shlex.join(cmd)}", file=sys.stderr)
            return
    said = {None: "its program said nothing about loom", "enabled": "loom was enabled",
            "not enabled": "loom was loaded but not enabled (it served nothing: coll_loom_priority below 0, a "
                           "communicator of one rank, or loom standing aside)",
            "not loaded": "loom was not loaded", "loaded": "loom was loaded"}[state]
    want = "a job without loom must not load it" if who == "ompi" else "a loom job must use loom"
    sys.stderr.write(output)
    fail(prog, f"in the {who} job {said}; {want}: {shlex.join(cmd)}")


def ompi_version():
    out = subprocess.run(["ompi_info", "--parsable"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("ompi:version:full:"):
            return line.split(":", 3)[3]
    return "unknown"


LAUNCHERS = ("mpirun", "srun")


class Jobs:
    """Command lines for loom-bench at `nproc` ranks, loom-bench and the plugin from the build
    tree `build`, or, if `build` is None, from where `meson install` put them: `installed` is (the
    directory of loom-bench, the directory of mca_coll_loom.so). `launcher` starts the jobs:
    "mpirun", or "srun" (Slurm, inside an allocation: salloc or a batch script; srun --mpi=pmix
    unless `mpirun_args` name an --mpi). `mpirun_args` (a list) go to the launcher, e.g.
    ["--hostfile", "hosts"] for mpirun, ["-N", "2"] for srun."""

    def __init__(self, prog, build, nproc, mpirun_args=(), installed=None, launcher="mpirun"):
        self.prog = prog
        if build is not None:
            self.bench = os.path.join(build, "tools", "loom-bench")
            self.probe = os.path.join(build, "tools", "loom-core-rtt")
            plugin_dir = os.path.realpath(os.path.join(build, "coll_component"))
            missing = f"build loom first (meson setup {build} && meson compile -C {build})"
        else:
            self.bench = os.path.join(installed[0], "loom-bench")
            self.probe = os.path.join(installed[0], "loom-core-rtt")
            plugin_dir = installed[1]
            missing = "install loom (meson install -C BUILD), or name a build tree with --build-dir BUILD"
        absent = [p for p, there in ((self.bench, os.access(self.bench, os.X_OK)),
                                     (os.path.join(plugin_dir, "mca_coll_loom.so"),
                                      os.path.isfile(os.path.join(plugin_dir, "mca_coll_loom.so")))) if not there]
        if absent:
            fail(prog, f"{' and '.join(absent)} missing: {missing}", 2)
        components = ompi_components()
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        oversubscribed = nproc > (os.cpu_count() or 1)
        # Both jobs get Open MPI's default selection, no coll list: what a user's job gets (on
        # Open MPI 5, han among them; on a site, hcoll or ucc). loom's plugin is on the component
        # path after Open MPI's own in the loom job; the job without loom has only Open MPI's own
        # directory and excludes loom by name too (a loom installed there, as the Debian package
        # does, or in ~/.openmpi/components, which a job under srun searches on 5.0 too). run()
        # checks what loom-bench says: loom enabled, or not loaded.
        if launcher == "mpirun":
            common = ["mpirun", "-np", str(nproc)] + list(mpirun_args)
            placed = any(a in ("--hostfile", "-hostfile", "--machinefile", "--host", "-H") for a in mpirun_args)
            if oversubscribed and not placed:
                common += ["--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]
            self.jobs = {
                "loom": common + ["--mca", "mca_base_component_path", f"{components}:{plugin_dir}"],
                "ompi": common + ["--mca", "mca_base_component_path", components, "--mca", "coll", "^loom"],
            }
        elif launcher == "srun":
            # srun has no --mca: the same settings as OMPI_MCA_* variables, which srun hands to
            # the ranks (its default --export=ALL), put on each job's command line with env so
            # that the command printed is the command run.
            if "SLURM_JOB_ID" not in os.environ:
                fail(prog, "--launcher srun runs inside a Slurm allocation, so that every job runs on the same "
                           f"nodes: e.g. salloc -n {nproc} {prog} --launcher srun ...", 2)
            args = list(mpirun_args)
            mpi = [] if any(a == "--mpi" or a.startswith("--mpi=") for a in args) else ["--mpi=pmix"]
            placed = any(a in ("-N", "--nodes", "-w", "--nodelist", "--ntasks-per-node") or
                         a.startswith(("--nodes=", "--nodelist=", "--ntasks-per-node=")) for a in args)
            settings = ["OMPI_MCA_mpi_yield_when_idle=1"] if oversubscribed and not placed else []
            srun = ["srun"] + mpi + ["-n", str(nproc)] + args
            self.jobs = {
                "loom": ["env"] + settings + [f"OMPI_MCA_mca_base_component_path={components}:{plugin_dir}"] + srun,
                "ompi": ["env"] + settings + [f"OMPI_MCA_mca_base_component_path={components}",
                                              "OMPI_MCA_coll=^loom"] + srun,
            }
        else:
            fail(prog, f"--launcher {launcher}: the launchers are {', '.join(LAUNCHERS)}", 2)

    def core_rtt(self):
        """The machine's core-to-core round trip now (loom-core-rtt, nanoseconds), or None where
        it cannot be measured (no such program, fewer than 2 CPUs)."""
        if not os.access(self.probe, os.X_OK):
            return None
        r = subprocess.run([self.probe], capture_output=True, text=True)
        try:
            return float(r.stdout) if r.returncode == 0 else None
        except ValueError:
            return None

    def command(self, who, bench_args):
        return self.jobs[who] + [self.bench] + bench_args

    def run(self, who, bench_args, csv_path):
        """Runs loom-bench in the `who` job ("loom" or "ompi") writing `csv_path`; returns its rows
        as dicts and the number of nodes the job ran on. A failed run, a loom job in which loom was
        not enabled, or a job without loom that loaded it stops the program with loom-bench's
        output and the command."""
        cmd = self.command(who, bench_args + ["--csv", csv_path])
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr)
            fail(self.prog, f"loom-bench failed (exit status {r.returncode}) in the {who} job: {shlex.join(cmd)}")
        check_loom_state(self.prog, who, r.stdout, cmd)
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            # "bound" (loom-bench --bound) is a measurement of the machine, in either job;
            # "NAME+compute" (--overlap) is NAME's run with computation.
            name = row["contender"].split("+")[0]
            if name != "bound" and (name == "ompi") != (who == "ompi"):
                fail(self.prog, f"contender {row['contender']} in the {who} job")
        nodes = re.search(r"^# loom-bench: np=\d+ on (\d+) node", r.stdout, re.M)
        return rows, int(nodes.group(1)) if nodes else 0


# Raw measurements kept in archives. The repository keeps the CSV files of finished runs
# (loom-tune's job files in a state directory, loom-bench-compare's --csv files in
# tools/lab/results/, make-report's loom-sim data in tools/sim/report/) in xz-compressed tar
# archives of plain file names, DIR/*.tar.xz, beside where the files were (tools/dev/archive-csv
# makes them). A file DIR/NAME that does not exist is read from the member NAME of the first of
# those archives (in name order) that holds one; a plain file wins over an archived one.
ARCHIVE_SUFFIX = ".tar.xz"


def archives(directory):
    """The archives in `directory` (its *.tar.xz files), sorted by name; none if it does not exist."""
    try:
        names = os.listdir(directory or ".")
    except FileNotFoundError:
        return []
    return sorted(os.path.join(directory, n) for n in names if n.endswith(ARCHIVE_SUFFIX))


def archived_names(directory):
    """{file name: the archive holding it} for the files archived in `directory`."""
    out = {}
    for path in archives(directory):
        with tarfile.open(path, "r:xz") as t:
            for m in t.getmembers():
                if m.isfile() and "/" not in m.name:
                    out.setdefault(m.name, path)
    return out


def read_text(path):
    """The text of the file `path`, or, where there is none, of the member of that name in an
    archive in its directory (above). Raises FileNotFoundError if neither exists."""
    if os.path.exists(path):
        with open(path, newline="") as f:
            return f.read()
    directory, name = os.path.split(path)
    for archive in archives(directory):
        with tarfile.open(archive, "r:xz") as t:
            try:
                member = t.getmember(name)
            except KeyError:
                continue
            if member.isfile():
                return t.extractfile(member).read().decode()
    raise FileNotFoundError(errno.ENOENT, f"no such file, nor a member {name} of an archive "
                            f"{os.path.join(directory, '*' + ARCHIVE_SUFFIX)}", path)


def csv_rows(path):
    """csv.DictReader over the CSV file `path`, plain or archived (read_text)."""
    return csv.DictReader(io.StringIO(read_text(path), newline=""))


# Readings of loom-core-rtt (Jobs.core_rtt) describe one state of the machine if every one is
# within this factor of the others.
SAME_STATE = 1.5


def same_state(readings):
    """True if the readings (loom-core-rtt, one unit) are all within SAME_STATE of each other."""
    return bool(readings) and max(readings) <= SAME_STATE * min(readings)


SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
PEOPLE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_text(n, for_people=False):
    """A size in bytes as text, the one way the scripts write sizes. As rule files and loom's own
    programs write it (tools/common/size_text.hpp's format_size): the shortest exact text, 4K,
    16M, or plain bytes (1000). for_people: in tables and summaries, 4 KiB, 1.5 MiB, 100 B
    (a size that is no whole number of its unit to one decimal)."""
    if for_people:
        b = float(n)
        for unit in PEOPLE_UNITS:
            if b < 1024 or unit == PEOPLE_UNITS[-1]:
                return f"{b:.0f} {unit}" if b == int(b) else f"{b:.1f} {unit}"
            b /= 1024
    for suffix, unit in reversed(SIZE_UNITS.items()):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def size_value(text):
    """size_text's inverse (4K -> 4096); None if `text` is not a size."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    return int(m.group(1)) * SIZE_UNITS.get(m.group(2), 1) if m else None


def range_text(lo, hi, plain=False):
    """A rule's bytes column for [lo, hi] (hi None: no upper end): "*", "4K-*", "0-4095".
    plain: both ends in bytes and no "*" for the whole range ("4096-65535", "0-*"), as
    tools/bench/version-rules and tools/sim/predict-rules' backup rules write them, so that the
    committed files they made (selection_rules/measured/version.rules, predicted.rules) come out
    again byte for byte."""
    if plain:
        return f"{lo}-{'*' if hi is None else hi}"
    if lo == 0 and hi is None:
        return "*"
    return f"{size_text(lo)}-{'*' if hi is None else size_text(hi)}"


def range_value(text):
    """range_text's inverse: (lo, hi), hi None for an open end; None if `text` is not a range.
    A single size ("4K") is the range of that size alone."""
    if text == "*":
        return 0, None
    lo, dash, hi = text.partition("-")
    if not dash:
        v = size_value(lo)
        return None if v is None else (v, v)
    lo_v, hi_v = size_value(lo), None if hi == "*" else size_value(hi)
    if lo_v is None or (hi != "*" and hi_v is None):
        return None
    return lo_v, hi_v


# A rule line's columns (selection_rules/RULES.md): collective, ranks, bytes, algorithm, keys,
# padded to these widths so that a file's rules line up (a longer value pushes the rest right).
RULE_WIDTHS = (21, 6, 13, 19)


def rule_line(collective, ranks, size, algorithm, keys=(), widths=RULE_WIDTHS):
    """One rule as every script writes it: `ranks` and `size` are the columns' text (range_text
    for sizes), `keys` the key=value words after the algorithm. `widths` pads the first four
    columns (predicted.rules' ranks column is 10 wide; loom-bench-compare's --fallback-rules
    does not pad the algorithm: 0); trailing blanks are dropped."""
    columns = (collective, ranks, size, algorithm)
    return (" ".join(f"{c!s:<{w}}" for c, w in zip(columns, widths)) + " " + " ".join(keys)).rstrip()
