#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU seconds of the trace simulator per policy (issue 21, "fast enough to tune").

Two cases, each policy run ``--runs`` times and the least CPU time (``time.process_time``: this
process only) kept, since the machine is shared and other load inflates every figure:

``kth``
    the KTH SP2 trace at twice the machine's size (``--cap 2x``), one slot per node, per-second
    billing: what ``benchmarks/simulate.py --cap 2x --billing per_second`` runs.
``lublin``
    a 40,000-job replay on 1,000 nodes of 8 slots: the Lublin model trace (10,000 jobs, 256
    processors) repeated ``--copies`` times one after the other (stretched in time: copy k starts
    where copy k-1's submits ended) and each job's processors multiplied by ``--width`` (stretched
    in width: 256 processors -> 8,000 slots at the default 31.25).

Run from the collection root::

    .venv/bin/python benchmarks/sim_speed.py                      # both cases, every policy, 3 runs
    .venv/bin/python benchmarks/sim_speed.py --case kth --runs 1 --policies default
    .venv/bin/python benchmarks/sim_speed.py --case kth --split   # also CPU inside / outside decide

Prints one Markdown table row per case and policy, and the sum over the policies; with ``--split``
also the CPU seconds spent inside the lean ``decide`` and the rest (the engine's own event
handling: what no speed-up of ``decide`` can take away). The load average is printed before and
after: on a shared machine a high load inflates this process's CPU seconds too.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic  # noqa: E402
from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine, swf  # noqa: E402

TRACES = os.path.join(os.path.dirname(REPO), "shared", "data", "traces")


def kth_case(path):
    trace = swf.load(path)
    return trace.jobs, 2 * trace.machine_procs(), 1, "KTH, cap 2x = %d nodes x 1 slot" % (2 * trace.machine_procs())


def lublin_case(path, copies, width, nodes, spn):
    trace = swf.load(path)
    jobs = trace.jobs
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs) + 1.0
    out = []
    for copy in range(copies):
        for job in jobs:
            procs = min(nodes * spn, max(1, int(math.ceil(job.procs * width))))
            out.append(job._replace(id=copy * 1000000 + job.id, submit=job.submit + copy * span, procs=procs,
                                    line=copy * 1000000 + job.line))
    out.sort(key=lambda j: (j.submit, j.line))
    return out, nodes, spn, "Lublin x%d in time, x%g in width: %d jobs, %d nodes x %d slots" % (
        copies, width, len(out), nodes, spn)


class DecideClock(object):
    """CPU seconds spent inside the lean ``decide`` (``elastic._decide_validated``) while installed."""

    def __init__(self):
        self.seconds = 0.0
        self.real = elastic._decide_validated

    def __call__(self, *args, **kwargs):
        started = time.process_time()
        try:
            return self.real(*args, **kwargs)
        finally:
            self.seconds += time.process_time() - started


def cpu_of(jobs, policy, cap, spn, runs, split=False):
    """(least CPU seconds of ``runs`` runs, the CPU seconds inside decide in that run (0.0 without
    ``split``), the result)."""
    best = None
    best_decide = 0.0
    result = None
    for _run in range(runs):
        clock = DecideClock()
        if split:
            elastic._decide_validated = clock
        try:
            started = time.process_time()
            result = engine.simulate(jobs, policy, cap, spn, billing="per_second")
            took = time.process_time() - started
        finally:
            elastic._decide_validated = clock.real
        if best is None or took < best:
            best, best_decide = took, clock.seconds
    return best, best_decide, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--case", choices=("kth", "lublin", "both"), default="both")
    parser.add_argument("--policies", default=",".join(engine.POLICIES))
    parser.add_argument("--runs", type=int, default=3, help="least CPU time of this many runs (3)")
    parser.add_argument("--kth", default=os.path.join(TRACES, "KTH-SP2-1996-2.1-cln.swf"))
    parser.add_argument("--lublin", default=os.path.join(TRACES, "lublin_256.swf"))
    parser.add_argument("--copies", type=int, default=4, help="Lublin copies one after the other (4)")
    parser.add_argument("--width", type=float, default=31.25, help="Lublin processors multiplied by (31.25)")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--slots-per-node", type=int, default=8)
    parser.add_argument("--split", action="store_true",
                        help="also the CPU seconds inside decide and outside it (the engine's own work)")
    args = parser.parse_args(argv)
    cases = []
    if args.case in ("kth", "both"):
        cases.append(kth_case(args.kth))
    if args.case in ("lublin", "both"):
        cases.append(lublin_case(args.lublin, args.copies, args.width, args.nodes, args.slots_per_node))
    policies = [p for p in args.policies.split(",") if p]
    print("CPU seconds, least of %d run(s) (time.process_time), per-second billing; load average %s"
          % (args.runs, " ".join("%.2f" % x for x in os.getloadavg())))
    print()
    split_head = " inside decide s | outside decide s |" if args.split else ""
    print("| case | policy | CPU s |%s decide calls | node-h | mean wait s |" % split_head)
    print("|---|---|---|%s---|---|---|" % ("---|---|" if args.split else ""))
    for jobs, cap, spn, label in cases:
        total = inside = 0.0
        for policy in policies:
            took, in_decide, res = cpu_of(jobs, policy, cap, spn, args.runs, args.split)
            fig = engine.summarize(res)
            total += took
            split_cells = ""
            if args.split:
                inside += in_decide
                split_cells = " %.2f | %.2f |" % (in_decide, took - in_decide)
            print("| %s | %s | %.2f |%s %d | %.0f | %.0f |" % (label, policy, took, split_cells, res.decide_calls,
                                                               fig["node_hours"], fig["wait_mean"]))
            sys.stdout.flush()
        split_cells = " %.2f | %.2f |" % (inside, total - inside) if args.split else ""
        print("| %s | all %d | %.2f |%s | | |" % (label, len(policies), total, split_cells))
    print()
    print("load average %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
