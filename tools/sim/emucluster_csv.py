"""The measurements tools/sim/measure-emucluster writes (tools/dev/emucluster-bench's CSVs, named
PREFIX-PML-RATE-hHOSTSxSLOTS.csv), as check-emucluster and replay-table read them."""
import csv
import os
import re
import statistics
import sys

NAME = re.compile(r"-(ob1|ucx)-([A-Za-z0-9]+)-h(\d+)x(\d+)\.csv$")


def measured(paths, prog):
    """{(collective, hosts, ppn, pml, rate, bytes): {contender: median us over the rounds}}; the
    point's pml, link rate, hosts and ranks per host come from the file's name (prog: the tool
    named in error messages)."""
    runs = {}
    for path in paths:
        m = NAME.search(os.path.basename(path))
        if not m:
            sys.exit(f"{prog}: {path}: the name does not say PML-RATE-hHOSTSxSLOTS.csv")
        pml, rate, hosts, ppn = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if int(row["np"]) != hosts * ppn:
                    sys.exit(f"{prog}: {path}: np {row['np']} is not {hosts} x {ppn}")
                key = (row["collective"], hosts, ppn, pml, rate, int(row["bytes"]))
                runs.setdefault(key, {}).setdefault(row["contender"], []).append(float(row["time_us"]))
    return {k: {c: statistics.median(v) for c, v in d.items()} for k, d in runs.items()}
