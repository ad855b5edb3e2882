# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time one bank-algorithm allocation round (steps 1-6, no usage simulation) at 100,000 nodes
x 8 classes (target <= 50 ms), and cluster reserves at small sizes for comparison.

    .venv/bin/python benchmarks/shares_bench.py
"""

import sys
import time

import numpy as np

sys.path.insert(0, ".collections")
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank  # noqa: E402
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reserves  # noqa: E402


def inputs(n, s, seed=1):
    rng = np.random.default_rng(seed)
    alloc = rng.uniform(1, 50, (n, s))
    alloc = 100 * alloc / alloc.sum(axis=1, keepdims=True)
    usage = alloc * rng.uniform(0.5, 1.5, (n, s))
    desired = np.full(s, 100.0 / s)
    return alloc, usage, desired


def best_of(fn, repeat):
    times = []
    for _rep in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), float(np.median(times))


def main():
    alloc, usage, desired = inputs(100000, 8)
    for profile in ("paper", "default"):
        best, med = best_of(lambda: bank.bank_round(alloc, usage, desired, profile=profile), 15)
        print("bank %-7s 100000 nodes x 8 classes: best %.1f ms, median %.1f ms (target 50 ms)"
              % (profile, best * 1e3, med * 1e3))
    group = np.arange(100000) // 100
    dg = np.tile(desired, (1000, 1))
    best, med = best_of(lambda: bank.bank_round(alloc, usage, dg, group=group), 15)
    print("bank default grouped (1000 managers x 100 nodes) x 8 classes: best %.1f ms, "
          "median %.1f ms" % (best * 1e3, med * 1e3))
    for n in (100, 900):
        a, u, d = inputs(n, 3)
        d = np.array([60.0, 30.0, 10.0])
        best, med = best_of(lambda: reserves.cluster_reserves(a, u, d), 3)
        bb, bm = best_of(lambda: bank.bank_round(a, u, d), 15)
        print("%d nodes x 3 classes: cluster reserves best %.1f ms; bank best %.3f ms"
              % (n, best * 1e3, bb * 1e3))


if __name__ == "__main__":
    main()
