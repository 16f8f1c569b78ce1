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
import json
import os
import re
import shlex
import shutil
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


def ompi_components(ompi_info="ompi_info"):
    """Open MPI's own component directory (ompi_info's pkglibdir)."""
    out = subprocess.run([ompi_info, "--parsable", "--path", "pkglibdir"], check=True,
                         capture_output=True, text=True).stdout.strip()
    return out.split("pkglibdir:", 1)[1]


def ompi_bindir_of_build(build):
    """The bin directory of the Open MPI the build tree `build` was configured against with
    -Dompi=PREFIX (PREFIX/bin, as meson's test setup puts it first on PATH), read from the
    options meson recorded (BUILD/meson-info/intro-buildoptions.json); None for a build against
    the Open MPI pkg-config found, whose mpirun is the one on PATH."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            options = {o["name"]: o["value"] for o in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    prefix = options.get("ompi")
    return os.path.join(prefix, "bin") if isinstance(prefix, str) and prefix else None


def ompi_program(bindir, name):
    """The command that runs Open MPI's program `name` (mpirun, ompi_info) of `bindir`: its bare
    name where PATH finds that very file, or with None for bindir (the one on PATH); else the full
    path."""
    if bindir is None:
        return name
    path = os.path.join(bindir, name)
    on_path = shutil.which(name)
    return name if on_path and os.path.realpath(on_path) == os.path.realpath(path) else path


def release(version):
    """A version's major.minor.release ("6.0.0a1" -> "6.0.0", "5.0.10rc2" -> "5.0.10")."""
    m = re.match(r"\d+(\.\d+)*", version or "")
    return m.group(0) if m else version


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


def ompi_version(ompi_info="ompi_info"):
    out = subprocess.run([ompi_info, "--parsable"], capture_output=True, text=True).stdout
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
    ["--hostfile", "hosts"] for mpirun, ["-N", "2"] for srun.

    The jobs run the Open MPI the build was made for: a build configured with -Dompi=PREFIX runs
    PREFIX/bin/mpirun and reads PREFIX/bin/ompi_info (ompi_bindir_of_build), any other the ones
    on PATH; where loom-bench says which Open MPI it was built for (--version), a different one
    stops the program before any job runs."""

    def __init__(self, prog, build, nproc, mpirun_args=(), installed=None, launcher="mpirun"):
        self.prog = prog
        self.launcher = launcher
        if build is not None:
            self.bench = os.path.join(build, "tools", "loom-bench")
            self.probe = os.path.join(build, "tools", "loom-core-rtt")
            plugin_dir = os.path.realpath(os.path.join(build, "coll_component"))
            missing = f"build loom first (meson setup {build} && meson compile -C {build})"
            bindir = ompi_bindir_of_build(build)
        else:
            self.bench = os.path.join(installed[0], "loom-bench")
            self.probe = os.path.join(installed[0], "loom-core-rtt")
            plugin_dir = installed[1]
            missing = "install loom (meson install -C BUILD), or name a build tree with --build-dir BUILD"
            bindir = None
        absent = [p for p, there in ((self.bench, os.access(self.bench, os.X_OK)),
                                     (os.path.join(plugin_dir, "mca_coll_loom.so"),
                                      os.path.isfile(os.path.join(plugin_dir, "mca_coll_loom.so")))) if not there]
        if absent:
            fail(prog, f"{' and '.join(absent)} missing: {missing}", 2)
        self.mpirun = ompi_program(bindir, "mpirun")
        self.ompi_info = ompi_program(bindir, "ompi_info")
        if bindir is not None and not os.access(os.path.join(bindir, "ompi_info"), os.X_OK):
            fail(prog, f"{self.ompi_info} missing: the Open MPI {build} was configured against (-Dompi) is not there", 2)
        if bindir is None and not shutil.which("ompi_info"):
            fail(prog, "no ompi_info on PATH: put the bin directory of the Open MPI loom was built against on PATH", 2)
        self.check_ompi_release(build)
        components = ompi_components(self.ompi_info)
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        oversubscribed = nproc > (os.cpu_count() or 1)
        # Both jobs get Open MPI's default selection, no coll list: what a user's job gets (on
        # Open MPI 5, han among them; on a site, hcoll or ucc). loom's plugin is on the component
        # path after Open MPI's own in the loom job; the job without loom has only Open MPI's own
        # directory and excludes loom by name too (a loom installed there, as the Debian package
        # does, or in ~/.openmpi/components, which a job under srun searches on 5.0 too). run()
        # checks what loom-bench says: loom enabled, or not loaded.
        if launcher == "mpirun":
            common = [self.mpirun, "-np", str(nproc)] + list(mpirun_args)
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

    def check_ompi_release(self, build):
        """Stops the program if loom-bench was built for another Open MPI release than the one
        whose ompi_info (and mpirun) the jobs would use. A loom-bench too old to say passes."""
        said = subprocess.run([self.bench, "--version"], capture_output=True, text=True).stdout
        built_for = re.search(r"built for Open MPI (\S+)", said)
        if not built_for:
            return
        running = ompi_version(self.ompi_info)
        if release(running) != release(built_for.group(1)):
            where = (f"{self.ompi_info}, on PATH" if os.sep not in self.ompi_info else self.ompi_info)
            fail(self.prog, f"{self.bench} was built for Open MPI {built_for.group(1)}, but the jobs would run Open MPI "
                            f"{running} ({where}): put the bin directory of the Open MPI it was built for first on PATH"
                            + (f", or configure {build} with -Dompi=PREFIX" if build else ""), 2)

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

    def with_params(self, cmd, params):
        """The job command `cmd` with the MCA parameters `params` ([(name, value)]) added: --mca
        NAME VALUE for mpirun, OMPI_MCA_NAME=VALUE before srun."""
        if not params:
            return list(cmd)
        if self.launcher == "srun":
            at = cmd.index("srun")
            return cmd[:at] + [f"OMPI_MCA_{k}={v}" for k, v in params] + cmd[at:]
        return list(cmd) + [x for k, v in params for x in ("--mca", k, str(v))]

    def command(self, who, bench_args, params=()):
        return self.with_params(self.jobs[who], params) + [self.bench] + bench_args

    def output(self, who, bench_args, params=()):
        """Runs loom-bench in the `who` job with the MCA parameters `params` added; returns (the
        command, its exit status, stdout, stderr)."""
        cmd = self.command(who, bench_args, params) if params else self.command(who, bench_args)
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        return cmd, r.returncode, r.stdout, r.stderr

    def run(self, who, bench_args, csv_path):
        """Runs loom-bench in the `who` job ("loom" or "ompi") writing `csv_path`; returns its rows as dicts and the number of nodes the job ran on. A
        failed run, a loom job in which loom was not enabled, or a job without loom that loaded
        it stops the program with loom-bench's output and the command."""
        cmd, status, out, err = self.output(who, bench_args + ["--csv", csv_path])
        if status != 0:
            sys.stderr.write(out + err)
            fail(self.prog, f"loom-bench failed (exit status {status}) in the {who} job: {shlex.join(cmd)}")
        check_loom_state(self.prog, who, out, cmd)
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            # "bound" (loom-bench --bound) is a measurement of the machine, in either job;
            # "NAME+compute" (--overlap) is NAME's run with computation.
            name = row["contender"].split("+")[0]
            if name != "bound" and (name == "ompi") != (who == "ompi"):
                fail(self.prog, f"contender {row['contender']} in the {who} job")
        nodes = re.search(r"^# loom-bench: np=\d+ on (\d+) node", out, re.M)
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
