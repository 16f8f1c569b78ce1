"""The measurements tools/sim/measure-emucluster writes (tools/dev/emucluster-bench's CSVs, named
PREFIX-PML-RATE-hHOSTSxSLOTS.csv), as check-emucluster and replay-table read them; also
tools/loom-bench-compare's CSVs of a real cluster named that way (RATE: any label), whose
core_rtt rows (the machine's round trip between jobs, not a collective) are skipped."""
import csv
import os
import re
import statistics
import sys

NAME = re.compile(r"-(ob1|ucx)-([A-Za-z0-9]+)-h(\d+)x(\d+)\.csv$")


def by_round(paths, prog):
    """{(collective, hosts, ppn, pml, rate, bytes): {contender: {round: us}}}; the point's pml,
    link rate, hosts and ranks per host come from the file's name (prog: the tool named in error
    messages)."""
    runs = {}
    for path in paths:
        m = NAME.search(os.path.basename(path))
        if not m:
            sys.exit(f"{prog}: {path}: the name does not say PML-RATE-hHOSTSxSLOTS.csv")
        pml, rate, hosts, ppn = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["collective"] == "core_rtt":
                    continue
                if int(row["np"]) != hosts * ppn:
                    sys.exit(f"{prog}: {path}: np {row['np']} is not {hosts} x {ppn}")
                key = (row["collective"], hosts, ppn, pml, rate, int(row["bytes"]))
                rounds = runs.setdefault(key, {}).setdefault(row["contender"], {})
                rounds[int(row.get("round") or len(rounds) + 1)] = float(row["time_us"])
    return runs


def medians(runs):
    """by_round's result as {point: {contender: median us over the rounds}}."""
    return {k: {c: statistics.median(v.values()) for c, v in d.items()} for k, d in runs.items()}


def measured(paths, prog):
    """{(collective, hosts, ppn, pml, rate, bytes): {contender: median us over the rounds}}, as
    by_round reads them."""
    return medians(by_round(paths, prog))


def repeatability(runs, tolerance, left_out=()):
    """How well one round of the measurement predicts the others, by check-emucluster's test: for
    every point with two or more algorithms measured in 3 or more rounds, and every round r, is
    round r's fastest algorithm within `tolerance` of the fastest by the mean of the other rounds?
    Returns (agreeing, tested). The simulator is checked against the median of all rounds, which
    is steadier than one round, so this bounds from below what a perfect predictor would score."""
    agree = tested = 0
    for contenders in runs.values():
        algs = [c for c, r in contenders.items() if c not in left_out and len(r) >= 3]
        if len(algs) < 2:
            continue
        rounds = sorted(set.intersection(*(set(contenders[c]) for c in algs)))
        for r in rounds:
            fastest = min(algs, key=lambda c: contenders[c][r])
            others = {c: statistics.mean(contenders[c][s] for s in rounds if s != r) for c in algs}
            tested += 1
            agree += others[fastest] <= (1 + tolerance) * min(others.values())
    return agree, tested
