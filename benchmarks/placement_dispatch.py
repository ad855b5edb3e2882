# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dispatch over one target-distribution interval: smooth weighted round robin vs a random draw.

For each distribution, jobs are placed in intervals of ``--jobs`` jobs (the seed: "out of 100
jobs processed by the load balancer in the last 2 seconds, approximately 15 would be sent to
node01 and 85 to node02"). After every job of an interval, the deviation of each node's job count
from its target share of the jobs sent so far is measured; the figures are the largest deviation
(in jobs) within an interval, over ``--intervals`` intervals:

- ``swrr``: the collection's dispatcher (placement.Dispatcher, earliest deadline first);
- ``nginx``: the classic nginx smooth weighted round robin (largest current weight first);
- ``random``: an independent weighted random draw per job (``random.choices``), seeded.

The deterministic ones give the same sequence every interval. Prints a table and writes a PNG.

    .venv/bin/python benchmarks/placement_dispatch.py [--jobs 100] [--intervals 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import placement  # noqa: E402


def deviations(shares, sequence):
    """Per step, the largest |count - step * share| over the nodes (floats, for plots)."""
    total = float(sum(shares.values()))
    share = {n: s / total for n, s in shares.items()}
    counts = dict.fromkeys(shares, 0)
    out = []
    for step, name in enumerate(sequence, 1):
        counts[name] += 1
        out.append(max(abs(counts[n] - step * share[n]) for n in shares))
    return out


def distributions(rng):
    seed = placement.distribution(
        {"node01": {"mem_free": 1000, "mem_max": 4000, "cpu_usage": 0.1},
         "node02": {"mem_free": 3000, "mem_max": 4000, "cpu_usage": 0.1}},
        {"ratio_digits": 2})["distribution"]
    five = {"n00": 100, "n01": 3, "n02": 1, "n03": 100, "n04": 5}
    loads = {"node%02d" % i: {"mem_free": rng.uniform(500, 4000), "mem_max": 4000,
                              "cpu_usage": rng.uniform(0, 0.85)} for i in range(20)}
    twenty = placement.distribution(loads)["distribution"]
    return [("seed 2 nodes (15.1/84.9 %)", seed), ("5 nodes 100:3:1:100:5", five),
            ("20 nodes, random load", twenty)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--jobs", type=int, default=100, help="jobs per interval (default 100)")
    parser.add_argument("--intervals", type=int, default=1000, help="random-draw intervals (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "placement", "dispatch.png"))
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    rows = []
    curves = {}
    for label, shares in distributions(rng):
        names = list(shares)
        weights = [shares[n] for n in names]
        swrr = placement.dispatch(shares, args.jobs)
        nginx = placement.nginx_swrr(shares, args.jobs)
        swrr_max = float(placement.max_deviation(shares, swrr))
        nginx_max = float(placement.max_deviation(shares, nginx))
        per_interval = []
        over_one = 0
        first_random = None
        for _i in range(args.intervals):
            draw = rng.choices(names, weights=weights, k=args.jobs)
            dev = deviations(shares, draw)
            if first_random is None:
                first_random = dev
            worst = max(dev)
            per_interval.append(worst)
            over_one += worst > 1 + 1e-9
        per_interval.sort()
        rows.append((label, len(names), swrr_max, nginx_max, sum(per_interval) / len(per_interval),
                     per_interval[len(per_interval) // 2], per_interval[int(len(per_interval) * 0.95)],
                     per_interval[-1], 100.0 * over_one / len(per_interval)))
        curves[label] = (deviations(shares, swrr), deviations(shares, nginx), first_random)

    print("max deviation from the target share within one interval of %d jobs (jobs; %d random intervals, "
          "seed %d)" % (args.jobs, args.intervals, args.seed))
    head = ("distribution", "nodes", "swrr", "nginx", "random mean", "random p50", "random p95",
            "random max", "random >1")
    print("%-28s %5s %6s %6s %11s %10s %10s %10s %9s" % head)
    for row in rows:
        print("%-28s %5d %6.3f %6.3f %11.3f %10.3f %10.3f %10.3f %8.1f%%" % row)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.8), sharey=True)
    steps = list(range(1, args.jobs + 1))
    for axis, (label, (swrr_dev, nginx_dev, random_dev)) in zip(axes, curves.items()):
        axis.plot(steps, random_dev, color="tab:red", lw=1, label="random draw (1st interval)")
        axis.plot(steps, nginx_dev, color="tab:orange", lw=1, label="nginx SWRR")
        axis.plot(steps, swrr_dev, color="tab:blue", lw=1.5, label="SWRR (earliest deadline)")
        axis.axhline(1, color="black", ls="--", lw=0.8)
        axis.set_title(label, fontsize=9)
        axis.set_xlabel("jobs sent in the interval")
    axes[0].set_ylabel("max |count - n * share| (jobs)")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print("plot: %s" % os.path.relpath(args.out, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
