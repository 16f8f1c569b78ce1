"""What tools/loom-bench-compare and tools/loom-tune share: the two kinds of job (mpirun's or srun's) they run
loom-bench in (both with Open MPI's default selection: a loom job with the plugin of a build tree
or the installed one on the component path, and a job without loom, as a user's job would be),
one such run with its CSV read back and what loom-bench said about loom checked; further jobs
without loom in which one of Open MPI's coll components is made to serve, and the check, from
Open MPI's coll_base_verbose report, that it does (loom-bench-compare --ompi-contenders); sizes as text
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


def ompi_coll_components(ompi_info="ompi_info"):
    """The coll components this Open MPI has (ompi_info --parsable's mca:coll:NAME:... lines), in
    its order, and its version."""
    out = subprocess.run([ompi_info, "--parsable"], capture_output=True, text=True).stdout
    names = list(dict.fromkeys(re.findall(r"^mca:coll:([^:]+):version:", out, re.M)))
    version = next((line.split(":", 3)[3] for line in out.splitlines() if line.startswith("ompi:version:full:")),
                   "unknown")
    return names, version


LAUNCHERS = ("mpirun", "srun")


def srun_command(args, nproc):
    """srun of `nproc` tasks with the launcher arguments `args`: --mpi=pmix unless they name an
    --mpi (Open MPI's jobs under Slurm start through PMIx)."""
    args = list(args)
    mpi = [] if any(a == "--mpi" or a.startswith("--mpi=") for a in args) else ["--mpi=pmix"]
    return ["srun"] + mpi + ["-n", str(nproc)] + args


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
    stops the program before any job runs.

    Besides the loom job ("loom") and the job without loom ("ompi"), add_no_loom_job() adds
    further jobs without loom, named "ompi:..." (the same command as "ompi" with MCA parameters
    of their own: an Open MPI component made to serve)."""

    def __init__(self, prog, build, nproc, mpirun_args=(), installed=None, launcher="mpirun"):
        self.prog = prog
        self.launcher = launcher
        if build is not None:
            self.bench = os.path.join(build, "tools", "loom-bench")
            self.probe = os.path.join(build, "tools", "loom-core-rtt")
            self.rules_tool = os.path.join(build, "tools", "loom-rules")
            plugin_dir = os.path.realpath(os.path.join(build, "coll_component"))
            missing = f"build loom first (meson setup {build} && meson compile -C {build})"
            bindir = ompi_bindir_of_build(build)
        else:
            self.bench = os.path.join(installed[0], "loom-bench")
            self.probe = os.path.join(installed[0], "loom-core-rtt")
            self.rules_tool = os.path.join(installed[0], "loom-rules")
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
            placed = any(a in ("-N", "--nodes", "-w", "--nodelist", "--ntasks-per-node") or
                         a.startswith(("--nodes=", "--nodelist=", "--ntasks-per-node=")) for a in args)
            settings = ["OMPI_MCA_mpi_yield_when_idle=1"] if oversubscribed and not placed else []
            srun = srun_command(args, nproc)
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

    def add_no_loom_job(self, who, params):
        """A further job without loom named `who` ("ompi:NAME"): the job without loom's command
        with the MCA parameters `params` ([(name, value)]) added."""
        assert who.startswith("ompi:")
        self.jobs[who] = self.with_params(self.jobs["ompi"], params)

    def command(self, who, bench_args, params=()):
        return self.with_params(self.jobs[who], params) + [self.bench] + bench_args

    def output(self, who, bench_args, params=()):
        """Runs loom-bench in the `who` job with the MCA parameters `params` added; returns (the
        command, its exit status, stdout, stderr)."""
        cmd = self.command(who, bench_args, params) if params else self.command(who, bench_args)
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        return cmd, r.returncode, r.stdout, r.stderr

    def run(self, who, bench_args, csv_path):
        """Runs loom-bench in the `who` job ("loom", "ompi" or a job add_no_loom_job() added)
        writing `csv_path`; returns its rows as dicts and the number of nodes the job ran on. A
        failed run, a loom job in which loom was not enabled, or a job without loom that loaded
        it stops the program with loom-bench's output and the command."""
        cmd, status, out, err = self.output(who, bench_args + ["--csv", csv_path])
        if status != 0:
            sys.stderr.write(out + err)
            fail(self.prog, f"loom-bench failed (exit status {status}) in the {who} job: {shlex.join(cmd)}")
        kind = "ompi" if who.startswith("ompi:") else who  # every ompi:NAME job is one without loom
        check_loom_state(self.prog, kind, out, cmd)
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            # "bound" (loom-bench --bound) is a measurement of the machine, in either job;
            # "NAME+compute" (--overlap) is NAME's run with computation.
            name = row["contender"].split("+")[0]
            if name != "bound" and (name == "ompi") != (kind == "ompi"):
                fail(self.prog, f"contender {row['contender']} in the {who} job")
        nodes = re.search(r"^# loom-bench: np=\d+ on (\d+) node", out, re.M)
        return rows, int(nodes.group(1)) if nodes else 0


# ---- Open MPI's own components as contenders (loom-bench-compare --ompi-contenders) -----------
# A contender "ompi:NAME" is a job without loom, as the job "ompi", in which the coll component NAME
# is made to serve: its priority raised above every other component's that serves a communicator
# of 2 or more ranks (self's 75 is for MPI_COMM_SELF), plus what the component needs to serve at
# all (acoll declines communicators below coll_acoll_comm_size_thresh ranks, 16 by default).
# "tuned" runs tuned's fixed decisions (coll_tuned_use_dynamic_rules 0), "tuned=FILE" its
# dynamic rules from FILE (classic format, or JSON from Open MPI 6.0 on). Whether the component
# then serves is not taken on trust: check_contender() runs loom-bench once with
# coll_base_verbose and reads which component each rank's communicator got for each collective.
CONTENDER_PRIORITY = 70
# Enough for Open MPI 6.0's report of every slot of every communicator, persistent ones too
# (coll_base_comm_select.c: 10 reports MPI_COMM_WORLD's blocking and non-blocking slots, 20
# every communicator's, above 20 the persistent ones too); 4.1 and 5.0 report the components
# each communicator enabled, in order (9), and no slots.
SELECTION_VERBOSITY = 21


class OmpiContender:
    """One --ompi-contenders entry: NAME (any coll component), or tuned=FILE. `name` is its
    contender's name ("ompi:acoll", "ompi:tuned:STEM" for tuned=DIR/STEM.json), `component` the
    component, `params` the MCA parameters of its job ([(name, value)]), `rules` tuned's rule file
    (absolute) or None."""

    def __init__(self, spec):
        component, eq, rules = spec.strip().partition("=")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", component) or (eq and not rules):
            raise ValueError(f"{spec!r} is no contender: give a coll component's name (acoll, han, tuned, "
                             "libnbc, ...) or tuned=FILE")
        if eq and component != "tuned":
            raise ValueError(f"{spec!r}: only tuned takes a rule file (tuned=FILE)")
        self.component = component
        self.rules = os.path.abspath(rules) if eq else None
        self.name = f"ompi:{component}"
        self.params = [(f"coll_{component}_priority", CONTENDER_PRIORITY)]
        if component == "acoll":
            self.params.append(("coll_acoll_comm_size_thresh", 2))
        if component == "tuned":
            if self.rules:
                self.name += ":" + os.path.splitext(os.path.basename(self.rules))[0]
                self.params += [("coll_tuned_use_dynamic_rules", 1), ("coll_tuned_dynamic_rules_filename", self.rules)]
            else:
                self.params.append(("coll_tuned_use_dynamic_rules", 0))

    def check_params(self):
        """The MCA parameters check_contender's run adds to its job's: the reports."""
        extra = [("coll_base_verbose", SELECTION_VERBOSITY)]
        if self.rules:
            extra.append(("coll_tuned_verbose", 1))  # 6.0 says there why it ignored a file or a rule
        return extra


def ompi_contenders(text):
    """The OmpiContender of each entry of a comma-separated --ompi-contenders list."""
    out = [OmpiContender(spec) for spec in text.split(",") if spec.strip()]
    names = [c.name for c in out]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise ValueError(f"{', '.join(twice)} named twice (two tuned rule files need different base names)")
    return out


def slot_of(collective, form):
    """The coll slot Open MPI calls for loom-bench's `collective` in `form`: allreduce,
    iallreduce, allreduce_init."""
    return {"blocking": "{}", "nonblocking": "i{}", "persistent": "{}_init"}[form].format(collective)


# Open MPI 4.1 and 5.0 report no slots: which component a communicator's slot ends with follows
# from the components it enabled, in the order enabled (ascending priority), each copying over the
# slots it fills. These are the slots each fills on an intra-communicator, from the sources of
# 4.1.8 and 5.0.10 (the same in both; han's on a communicator spanning nodes, its top level).
_I = "allgather allgatherv allreduce alltoall alltoallv alltoallw barrier bcast exscan gather gatherv reduce " \
     "reduce_scatter reduce_scatter_block scan scatter scatterv"
_N = "neighbor_allgather neighbor_allgatherv neighbor_alltoall neighbor_alltoallv neighbor_alltoallw"
SLOTS_WITHOUT_REPORT = {
    "tuned": set("allgather allgatherv allreduce alltoall alltoallv barrier bcast gather reduce reduce_scatter "
                 "reduce_scatter_block scatter".split()),
    "han": set("allgather allreduce barrier bcast gather reduce scatter".split()),
    "libnbc": set(["i" + s for s in (_I + " " + _N).split()] + [s + "_init" for s in (_I + " " + _N).split()]),
    "basic": set((_I + " " + _N).split()),
    "adapt": set("bcast reduce ibcast ireduce".split()),
    "sm": set("allreduce barrier bcast reduce".split()),
}

_PROCESS_LINE = re.compile(r"^\[([^\[\]]+)\] (.*)$")
# A process's prefix, "[host:pid] " (no "[" inside: a prefix cut short, "[vm:1", may be followed at
# once by a whole one, "[vm:2] ", and the two must not read as one).
_PROCESS_MARK = re.compile(r"\[[^\[\]\s]+:\d+\] ")
# The start of a prefix cut short: "[", "[vm", "[vm:1", "[vm:1]".
_PREFIX_START = re.compile(r"\[[^\[\]\s]*(:\d*)?\]?")


def process_lines(output):
    """output's lines, each one process's. Open MPI 5's launcher forwards every rank's output in
    chunks that may end anywhere in a line, even inside its "[host:pid] " prefix, so another rank's
    whole line can follow a cut one on the same line ("[vm:1] coll:ba[vm:2] coll:base: ...",
    "[v[vm:2] coll:base: ...") and the cut line's rest comes later, at the start of a line ("se:
    ...", "m:1] coll:base: ..."). Each rest is joined back to the oldest cut line still waiting
    for one (a process's chunks come in order; which of several cut processes goes on first is
    not known, so two cuts at once can be joined crosswise). A cut whose rest never comes is
    returned as it is, after the other lines."""
    lines, cuts = [], []
    for line in output.splitlines():
        marks = [m.start() for m in _PROCESS_MARK.finditer(line)]
        head = line[:marks[0]] if marks else line
        if marks and head and _PREFIX_START.fullmatch(head):
            cuts.append(head)
        elif cuts and (head or not marks):
            lines.append(cuts.pop(0) + head)
        elif head or not marks:
            lines.append(head)
        pieces = [line[a:b] for a, b in zip(marks, marks[1:] + [len(line)])]
        cuts.extend(pieces[:-1])  # each cut short by the next prefix
        lines.extend(pieces[-1:])
    return lines + cuts


_NEW_COMM = re.compile(r"coll:base:comm_select: new communicator: (.*) \(cid (\S+)\)$")
_SELECTING = re.compile(r"coll:base:comm_select: selecting +(\S+), priority +(-?\d+), (Enabled|Disabled)$")
_SLOT = re.compile(r"coll:base:comm_select: communicator (.*) rank \d+ (\w+) -> (\S+)$")


def coll_selection(output):
    """What coll_base_verbose (SELECTION_VERBOSITY) said in a job's output: {process ("host:pid",
    the prefix of its lines): [communicator, in the order selected]}, each communicator a dict:
    name, cid, enabled (the components it enabled, in order) and slots ({slot: component}; Open
    MPI 6.0 only). A communicator selected again (the same cid) replaces the earlier one."""
    procs = {}
    for line in process_lines(output):
        m = _PROCESS_LINE.match(line)
        if not m:
            continue
        proc, text = m.groups()
        comms = procs.setdefault(proc, [])
        if (c := _NEW_COMM.search(text)):
            comms[:] = [x for x in comms if x["cid"] != c.group(2)]
            comms.append({"name": c.group(1), "cid": c.group(2), "enabled": [], "slots": {}})
        elif (c := _SELECTING.search(text)) and comms:
            if c.group(3) == "Enabled":
                comms[-1]["enabled"].append(c.group(1))
        elif (c := _SLOT.search(text)):
            named = [x for x in comms if x["name"] == c.group(1)]
            if named:
                named[-1]["slots"][c.group(2)] = c.group(3)
    return {p: comms for p, comms in procs.items() if comms}


def slot_server(comm, slot):
    """The component a communicator's `slot` ended with: as 6.0 reported it, or (4.1, 5.0) the last
    enabled component that fills it (SLOTS_WITHOUT_REPORT); "?NAME" where a component whose slots
    are not known here was enabled after the last known one that fills it; None if nothing fills it."""
    if comm["slots"]:
        got = comm["slots"].get(slot)
        return None if got in (None, "(null)") else got
    server = None
    for component in comm["enabled"]:
        known = SLOTS_WITHOUT_REPORT.get(component)
        if known is None:
            server = "?" + component
        elif slot in known:
            server = component
    return server


def slot_servers(selection, slot):
    """{component serving `slot`: number of processes} over the processes of coll_selection():
    on MPI_COMM_WORLD, or for a neighbourhood collective on every communicator but MPI_COMM_WORLD
    and MPI_COMM_SELF (those loom-bench made with a process topology; a process that made several
    counts each). A process that reported no such communicator counts as "(not reported)"."""
    count = {}
    for comms in selection.values():
        if "neighbor_" in slot:
            chosen = [c for c in comms if c["name"] not in ("MPI_COMM_WORLD", "MPI_COMM_SELF")]
        else:
            chosen = [c for c in comms if c["name"] == "MPI_COMM_WORLD"][-1:]
        for server in [slot_server(c, slot) or "(nothing)" for c in chosen] or ["(not reported)"]:
            count[server] = count.get(server, 0) + 1
    return count


def servers_text(servers):
    """slot_servers()'s count as a clause: "tuned serves it", "no component fills it", or "tuned on
    3, basic on 1" where the processes differ ("?NAME": a component whose slots are not known
    here, enabled after the last one known)."""
    def one(s):
        return {"(nothing)": "no component", "(not reported)": "no report"}.get(
            s, f"{s[1:]} (or one before it: its slots are not known here)" if s.startswith("?") else s)
    if len(servers) == 1:
        s = next(iter(servers))
        return ("no component fills it" if s == "(nothing)" else "no communicator it would be on was reported"
                if s == "(not reported)" else f"{one(s)} serves it")
    return ", ".join(f"{one(s)} on {n}" for s, n in sorted(servers.items()))


def declined(output, component):
    """The lines in which Open MPI said why `component` did not serve (its comm_query or enable
    disqualifying itself, the selection's "not available" or "Disabled"), each once, without the
    process prefix; none about MPI_COMM_SELF."""
    said = []
    comm = {}  # the communicator each process is selecting for: lines about MPI_COMM_SELF say nothing here
    for line in process_lines(output):
        m = _PROCESS_LINE.match(line)
        text = m.group(2) if m else line
        if m and (c := _NEW_COMM.search(text)):
            comm[m.group(1)] = c.group(1)
        if (m and comm.get(m.group(1)) == "MPI_COMM_SELF") or "MPI_COMM_SELF" in text:
            continue
        if (re.search(rf"coll:{re.escape(component)}:\S+ .*(disqualif|disabling|declin)", text) or
                re.search(rf"component not available: {re.escape(component)}$", text) or
                re.search(rf"selecting +{re.escape(component)}, priority .*Disabled$", text)):
            if text not in said:
                said.append(text)
    return said


# What Open MPI 6.0's tuned says (coll_tuned_verbose 1) when it ignores a rule file or a rule of it.
TUNED_TROUBLE = re.compile(r"Ignoring|is not valid|Failed to load|Cannot read|bad configure file|Could not read|"
                           r"Unrecognized|Problem occurred|Missing the required|Required top-level|must be (a|either)|"
                           r"Expected a set|could not interpret|Internal json error")


def tuned_rules_collectives(path, nproc, rules_tool=None):
    """The collectives tuned's rule file `path` has rules for at `nproc` ranks, and its format
    ("json" or "classic"). JSON (Open MPI 6.0's) is read here; a classic file is checked by
    loom-rules from-tuned (`rules_tool`, if there: every collective it lists covers every
    communicator size, tuned's first comm size rule also applying below it), else taken as
    covering every collective (None). Raises ValueError for a file that is not one."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}")
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{path}: not valid JSON ({e})")
        colls = doc.get("collectives") if isinstance(doc, dict) else None
        if not isinstance(colls, dict):
            raise ValueError(f"{path}: no \"collectives\" object (Open MPI's docs/tuning-apps/tuned_dynamic_file_schema.json)")
        covered = set()

        def bound(v, default):
            return float("inf") if isinstance(v, str) and v.lower() == "inf" else v if isinstance(v, int) else default
        for coll, comm_rules in colls.items():
            for rule in comm_rules if isinstance(comm_rules, list) else []:
                if isinstance(rule, dict) and bound(rule.get("comm_size_min"), 0) <= nproc <= \
                        bound(rule.get("comm_size_max"), float("inf")):
                    covered.add(coll)
        return "json", covered
    if rules_tool is None or not os.access(rules_tool, os.X_OK):
        return "classic", None
    r = subprocess.run([rules_tool, "from-tuned", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise ValueError(f"{path}: not a tuned rule file (loom-rules from-tuned: {r.stderr.strip()})")
    return "classic", set(re.findall(r"^# (\w+) \(tuned collective", r.stdout, re.M))


def check_contender(jobs, contender, bench_args, collectives, form, nproc, version):
    """Runs loom-bench once (bench_args: short) in `contender`'s job with coll_base_verbose, and
    reads which component served each of `collectives` (their slots in `form`) on every rank.
    Returns (the collectives `contender.component` served on every rank, notes: a line for each
    collective another component served, and for each that tuned's rule file has no rule for at
    this size). Stops the program if it served none of them, if the run failed or loaded loom, if
    Open MPI 6.0's tuned ignored the rule file or a rule of it, or if a rule file is JSON and this
    Open MPI (`version`) is older than 6.0, which reads only the classic format."""
    prog = jobs.prog
    notes = []
    covered = None
    if contender.rules:
        try:
            kind, covered = tuned_rules_collectives(contender.rules, nproc, jobs.rules_tool)
        except ValueError as e:
            fail(prog, f"{contender.name}: {e}", 2)
        major = re.match(r"(\d+)", version)
        if kind == "json" and major and int(major.group(1)) < 6:
            fail(prog, f"{contender.name}: {contender.rules} is a JSON rule file, which tuned reads from Open MPI "
                       f"6.0 on; Open MPI {version} reads the classic format only", 2)
    cmd, status, out, err = jobs.output(contender.name, bench_args, contender.check_params())
    if status != 0:
        sys.stderr.write(out + err)
        fail(prog, f"loom-bench failed (exit status {status}) in {contender.name}'s check: {shlex.join(cmd)}")
    check_loom_state(prog, "ompi", out, cmd)
    said = out + "\n" + err
    if contender.rules:
        trouble = [line for line in said.splitlines() if TUNED_TROUBLE.search(line) and "coll:base:" not in line]
        if trouble:
            fail(prog, f"{contender.name}: tuned did not take {contender.rules} as it is:\n  " +
                 "\n  ".join(dict.fromkeys(_PROCESS_LINE.sub(r"\2", t) for t in trouble)) + f"\n(the check: {shlex.join(cmd)})")
    selection = coll_selection(said)
    if len(selection) < nproc:
        fail(prog, f"{contender.name}: {len(selection)} of {nproc} ranks reported which coll components they selected "
                   f"(coll_base_verbose): which component serves cannot be checked: {shlex.join(cmd)}")
    served = []
    for coll in collectives:
        slot = slot_of(coll, form)
        servers = slot_servers(selection, slot)
        if servers == {contender.component: sum(servers.values())}:
            served.append(coll)
            if covered is not None and coll not in covered:
                notes.append(f"{contender.name}: {os.path.basename(contender.rules)} has no rule for {coll} at {nproc} "
                             f"ranks: tuned's fixed decisions serve it")
        else:
            notes.append(f"{contender.name}: {contender.component} does not serve {slot} here "
                         f"({servers_text(servers)}): not timed")
    if not served:
        why = declined(said, contender.component)
        hint = ("\n  han serves only communicators that span nodes: run the comparison across nodes "
                "(--mpirun-args \"--hostfile FILE\")" if any("only local processes" in w for w in why) else "")
        enabled = [any(c["name"] == "MPI_COMM_WORLD" and contender.component in c["enabled"] for c in comms)
                   for comms in selection.values()]
        if all(enabled):
            hint += (f"\n  {contender.component} was enabled on MPI_COMM_WORLD on every rank, and other components "
                     "serve these collectives")
        if contender.component == "libnbc" and form == "blocking":
            hint += "\n  libnbc serves the non-blocking and persistent collectives: --form nonblocking or persistent"
        fail(prog, f"{contender.name}: {contender.component} serves none of "
                   f"{', '.join(slot_of(c, form) for c in collectives)} here:\n  " +
             "\n  ".join(n[len(contender.name) + 2:] for n in notes) +
             (("\n Open MPI said:\n  " + "\n  ".join(why)) if why else "") + hint +
             f"\n(the check: {shlex.join(cmd)})")
    return served, notes


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


SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}  # as rule files (RULES.md)
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
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
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
