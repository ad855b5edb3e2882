# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time one bank-algorithm allocation round (steps 1-6, no usage simulation) at 100,000 nodes
x 8 classes (target <= 50 ms), and cluster reserves at small sizes for comparison.

    .venv/bin/python benchmarks/shares_bench.py [--runs 7] [--rounds 15]

Figures a reader can reproduce on another machine, or on this one under other load:

* every case is timed in ``--runs`` runs; a run times ``--rounds`` rounds (cluster reserves:
  ``--reserves-rounds``) and keeps their median; the table gives the min / median / max of those
  per-run medians;
* the runs are interleaved (run 1 of every case, then run 2, ...), so a burst of load from
  elsewhere hits every case alike;
* a baseline is timed in every run beside the cases: one pass of plain numpy arithmetic over the
  same 8 x 100,000 float64 layout (five in-place array operations, as a round does); the
  ``x base`` column is the median over runs of (case's run median / baseline's run median),
  which moves much less with the machine's speed and load than milliseconds do;
* the machine's CPU count (and the CPUs this process may use) and its load average before and
  after are printed.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, ".collections")
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank  # noqa: E402
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reserves  # noqa: E402


TARGET_CASE = "bank default, 100,000 nodes x 8 classes"


def inputs(n, s, seed=1):
    rng = np.random.default_rng(seed)
    alloc = rng.uniform(1, 50, (n, s))
    alloc = 100 * alloc / alloc.sum(axis=1, keepdims=True)
    usage = alloc * rng.uniform(0.5, 1.5, (n, s))
    desired = np.full(s, 100.0 / s)
    return alloc, usage, desired


def median_of(fn, rounds):
    """The median wall time (s) of ``rounds`` calls of ``fn``."""
    times = []
    for _rep in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def baseline_fn(n=100000, s=8):
    """Plain numpy work on the round's layout (classes x nodes, C order): five in-place ops."""
    rng = np.random.default_rng(2)
    a = np.ascontiguousarray(rng.uniform(1, 50, (s, n)))
    b = np.ascontiguousarray(rng.uniform(1, 50, (s, n)))
    c = np.empty_like(a)

    def run():
        np.subtract(a, b, out=c)
        np.multiply(c, a, out=c)
        np.add(c, b, out=c)
        np.maximum(c, 0.0, out=c)
        c.sum(axis=1)
    return run


def cases(reserves_rounds, rounds):
    alloc, usage, desired = inputs(100000, 8)
    group = np.arange(100000) // 100
    dg = np.tile(desired, (1000, 1))
    out = [
        ("baseline: numpy, 5 in-place ops on 8 x 100,000", baseline_fn(), rounds),
        ("bank paper, 100,000 nodes x 8 classes",
         lambda: bank.bank_round(alloc, usage, desired, profile="paper"), rounds),
        (TARGET_CASE,
         lambda: bank.bank_round(alloc, usage, desired, profile="default"), rounds),
        ("bank default, 1000 managers x 100 nodes x 8 classes",
         lambda: bank.bank_round(alloc, usage, dg, group=group), rounds),
    ]
    d3 = np.array([60.0, 30.0, 10.0])
    for n in (100, 900):
        a, u, _d = inputs(n, 3)
        out.append(("cluster reserves, %d nodes x 3 classes" % n,
                    (lambda a=a, u=u: reserves.cluster_reserves(a, u, d3)), reserves_rounds))
    for n in (100, 900):
        a, u, _d = inputs(n, 3)
        out.append(("bank default, %d nodes x 3 classes" % n,
                    (lambda a=a, u=u: bank.bank_round(a, u, d3)), rounds))
    return out


def fmt_ms(seconds):
    ms = seconds * 1e3
    return "%.3f" % ms if ms < 1 else "%.1f" % ms


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per case (default 7)")
    parser.add_argument("--rounds", type=int, default=15, help="rounds per run (default 15)")
    parser.add_argument("--reserves-rounds", type=int, default=3,
                        help="rounds per run for cluster reserves (default 3)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.rounds < 1 or args.reserves_rounds < 1:
        parser.error("--runs, --rounds and --reserves-rounds must be at least 1")

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    load_before = os.getloadavg()
    started = time.time()
    todo = cases(args.reserves_rounds, args.rounds)
    for _name, fn, _rounds in todo:  # warm up: caches, per-thread work arrays, HiGHS import
        fn()
    medians = {name: [] for name, _fn, _rounds in todo}
    for _run in range(args.runs):
        for name, fn, rounds in todo:
            medians[name].append(median_of(fn, rounds))
    load_after = os.getloadavg()
    names = [name for name, _fn, _rounds in todo]
    for line in report(names, medians, load_before, load_after, usable, args,
                       time.time() - started):
        print(line)


def machine_line(usable):
    return ("machine: %s, Python %s, numpy %s; CPUs %d (usable by this process %d)"
            % (platform.machine(), platform.python_version(), np.__version__, os.cpu_count(),
               usable))


def rows(names, medians):
    """(name, min, median, max, x base) per case: min / median / max of the per-run medians
    (seconds); ``x base``: the median over runs of (case / baseline of the same run). The
    first name is the baseline."""
    base = medians[names[0]]
    out = []
    for name in names:
        values = medians[name]
        ratio = float(np.median([v / b for v, b in zip(values, base)]))
        out.append((name, min(values), float(np.median(values)), max(values), ratio))
    return out


def report(names, medians, load_before, load_after, usable, args, elapsed):
    """The lines the command prints (the machine, its load, the table, the target)."""
    lines = [machine_line(usable),
             "load average (1/5/15 min): before %.2f %.2f %.2f, after %.2f %.2f %.2f"
             % (tuple(load_before) + tuple(load_after)),
             "%d runs per case, interleaved; a run's figure is the median of %d rounds (cluster "
             "reserves: %d); total %.0f s" % (args.runs, args.rounds, args.reserves_rounds, elapsed),
             "",
             "%-52s %9s %9s %9s %8s" % ("case (ms per round over runs)", "min", "median", "max",
                                        "x base")]
    for name, low, mid, high, ratio in rows(names, medians):
        lines.append("%-52s %9s %9s %9s %8.2f" % (name, fmt_ms(low), fmt_ms(mid), fmt_ms(high),
                                                  ratio))
    if TARGET_CASE in medians:
        target = float(np.median(medians[TARGET_CASE])) * 1e3
        lines += ["", "target 50 ms per round at 100,000 x 8 (bank default, median of runs): "
                  "%s (%.1f ms)" % ("met" if target <= 50 else "NOT met", target)]
    return lines


if __name__ == "__main__":
    main()
