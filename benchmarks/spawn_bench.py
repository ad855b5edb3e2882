# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spawn balancing (plugins/plugin_utils/policy/spawn.py) on generated clusters.

    .venv/bin/python benchmarks/spawn_bench.py [--seed 4] [--sizes 50,500] [--out docs/spawn]

Each cluster: equal hosts of 4 TB, jobs whose tasks (1 live + 0-2 replicas each, lognormal
sizes) were placed by a spreading placer, then one host overloaded to 1.6x the mean (copies
moved onto it from random hosts) and one fresh empty host added.  Rebalancing calls
``plan_round`` and applies its moves until it plans none; both profiles (``hydra``: Hydra's
limits, ``default``: ours) start from the same cluster.  Prints a table, writes
docs/spawn/results.md and docs/spawn/spawn_<hosts>.png.
"""

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, ".collections")
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import spawn  # noqa: E402

TB = 1000 ** 4
GB = 1000 ** 3
T0 = 1700000000.0
CAP = 4 * TB
MAX_ROUNDS = 1000
GOALS = {"max_mean": 1.09, "min_mean": 0.91, "bytes_ratio": 1.2, "violations": 0}


def generate(hosts, seed):
    """A cluster of ``hosts`` hosts at about 50% disk use, then one overloaded and one empty."""
    rng = random.Random(seed)
    names = ["n%04d" % i for i in range(hosts)]
    used = {n: 0.0 for n in names}
    tasks, jobs = [], {}
    per_job = {}
    target_total = 0.5 * CAP * hosts
    total, j = 0.0, 0
    while total < target_total:
        job = "j%04d" % j
        j += 1
        replicas = rng.choice((0, 1, 1, 1, 2))
        ntasks = rng.randint(max(2, hosts // 10), hosts * 2)
        mean_size = rng.choice((4, 8, 16, 32)) * GB
        active = rng.random() < 0.3
        jobs[job] = {"replicas": replicas, "max_per_host": None, "no_autobalance": rng.random() < 0.05}
        counts = per_job.setdefault(job, {})
        for task in range(ntasks):
            size = int(rng.lognormvariate(0, 0.5) * mean_size)
            chosen = []
            for copy in range(1 + replicas):
                # spreading placer: fewest copies of this job, then the lightest disk of 3 random hosts
                pool = rng.sample(names, 3)
                pool.sort(key=lambda n: (counts.get(n, 0), used[n]))
                host = next(n for n in pool if n not in chosen)
                chosen.append(host)
                counts[host] = counts.get(host, 0) + 1
                used[host] += size
                total += size
                tasks.append({"job": job, "task": task, "host": host, "bytes": size,
                              "role": "live" if copy == 0 else "replica",
                              "last_active": T0 - (rng.uniform(0, 3600) if active else rng.uniform(2, 30) * 86400),
                              "complete": True, "running": False})
    # overload one host: copies from random hosts land on it until it is at 1.6x the mean
    heavy = names[0]
    mean = total / hosts
    holders = {}
    for t in tasks:
        holders.setdefault((t["job"], t["task"]), set()).add(t["host"])
    order = list(range(len(tasks)))
    rng.shuffle(order)
    for i in order:
        if used[heavy] >= 1.6 * mean:
            break
        t = tasks[i]
        if t["host"] == heavy or heavy in holders[(t["job"], t["task"])]:
            continue
        holders[(t["job"], t["task"])].discard(t["host"])
        holders[(t["job"], t["task"])].add(heavy)
        used[t["host"]] -= t["bytes"]
        used[heavy] += t["bytes"]
        t["host"] = heavy
    fresh = "n%04d" % hosts
    names.append(fresh)
    used[fresh] = 0.0
    snap = {"taken_at": T0, "jobs": jobs, "tasks": tasks,
            "hosts": {n: {"disk_used": used[n], "disk_free": CAP - used[n], "up": True, "readonly": False}
                      for n in names}}
    return snap, heavy, fresh


def measure(snap):
    used = {n: 0.0 for n in snap["hosts"]}
    active = {n: 0 for n in snap["hosts"]}
    for t in snap["tasks"]:
        used[t["host"]] += t["bytes"]
        if t["last_active"] >= T0 - 86400:
            active[t["host"]] += 1
    loads = [used[n] / CAP for n in sorted(used)]
    mean = statistics.fmean(loads)
    return {"loads": loads, "max_mean": max(loads) / mean, "min_mean": min(loads) / mean,
            "disk_std": statistics.pstdev(loads), "active_std": statistics.pstdev(active.values()),
            "used": used}


def lower_bounds(snap):
    """(full, band): least bytes to bring every host to the mean (sum of excess above the mean,
    a lower bound since each byte moved lowers one host's excess by at most one byte), and least
    bytes to meet the goal band (max of the excess above 1.09x mean and the shortfall below 0.91x)."""
    m = measure(snap)
    mean = statistics.fmean(m["used"].values())
    full = sum(max(0.0, u - mean) for u in m["used"].values())
    over = sum(max(0.0, u - GOALS["max_mean"] * mean) for u in m["used"].values())
    under = sum(max(0.0, GOALS["min_mean"] * mean - u) for u in m["used"].values())
    return full, max(over, under)


def rebalance(snap, profile):
    cfg = spawn.default_config(profile)
    rounds, moved, moves = 0, 0, 0
    started = time.perf_counter()
    history = [measure(snap)]
    while rounds < MAX_ROUNDS:
        plan = spawn.plan_round(snap, cfg)
        if not plan["moves"]:
            break
        rounds += 1
        moved += plan["bytes"]
        moves += len(plan["moves"])
        snap = spawn.apply_plan(snap, plan)
        history.append(measure(snap))
    return {"snap": snap, "rounds": rounds, "bytes": moved, "moves": moves, "history": history,
            "wall": time.perf_counter() - started, "converged": rounds < MAX_ROUNDS}


def plot(path, hosts, before, results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    ax = axes[0]
    mean = statistics.fmean(before["loads"])
    ax.plot(sorted(x / mean for x in before["loads"]), label="before", color="grey")
    for profile, res in results.items():
        after = res["history"][-1]
        m = statistics.fmean(after["loads"])
        ax.plot(sorted(x / m for x in after["loads"]), label="after (%s)" % profile)
    ax.axhline(GOALS["max_mean"], ls="--", color="red", lw=0.8)
    ax.axhline(GOALS["min_mean"], ls="--", color="red", lw=0.8)
    ax.set_xlabel("hosts, sorted by disk use")
    ax.set_ylabel("disk use / mean")
    ax.set_title("%d + 1 hosts: disk use before and after" % hosts)
    ax.legend()
    ax = axes[1]
    for profile, res in results.items():
        ax.plot([h["max_mean"] for h in res["history"]], label="max/mean (%s)" % profile)
        ax.plot([h["min_mean"] for h in res["history"]], label="min/mean (%s)" % profile)
    ax.axhline(GOALS["max_mean"], ls="--", color="red", lw=0.8)
    ax.axhline(GOALS["min_mean"], ls="--", color="red", lw=0.8)
    ax.set_xlabel("rebalance round")
    ax.set_ylabel("disk use / mean")
    ax.set_title("convergence per round")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--sizes", default="50,500")
    parser.add_argument("--out", default="docs/spawn")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    header = ("hosts", "profile", "rounds", "moves", "moved", "full LB", "x full", "band LB", "x band",
              "max/mean", "min/mean", "violations", "disk std before", "after", "active std before",
              "after", "wall s", "goals")
    for hosts in [int(x) for x in args.sizes.split(",")]:
        snap, heavy, fresh = generate(hosts, args.seed + hosts)
        before = measure(snap)
        full, band = lower_bounds(snap)
        results = {}
        for profile in ("hydra", "default"):
            res = rebalance(snap, profile)
            results[profile] = res
            after = res["history"][-1]
            violations = len(spawn.replica_violations(res["snap"]))
            ratio = res["bytes"] / full if full else 0.0
            met = (after["max_mean"] <= GOALS["max_mean"] and after["min_mean"] >= GOALS["min_mean"]
                   and ratio <= GOALS["bytes_ratio"] and violations == 0 and res["converged"])
            rows.append((hosts + 1, profile, res["rounds"] if res["converged"] else ">%d" % MAX_ROUNDS,
                         res["moves"], spawn.fmt_bytes(res["bytes"]), spawn.fmt_bytes(full), "%.2f" % ratio,
                         spawn.fmt_bytes(band), "%.2f" % (res["bytes"] / band if band else 0.0),
                         "%.3f" % after["max_mean"], "%.3f" % after["min_mean"], violations,
                         "%.4f" % before["disk_std"], "%.4f" % after["disk_std"],
                         "%.2f" % before["active_std"], "%.2f" % after["active_std"],
                         "%.1f" % res["wall"], "met" if met else "MISSED"))
        plot(os.path.join(args.out, "spawn_%d.png" % hosts), hosts, before, results)
        print("%d hosts + fresh %s, overloaded %s: before max/mean %.3f min/mean %.3f, %d copies, %d jobs"
              % (hosts, fresh, heavy, before["max_mean"], before["min_mean"], len(snap["tasks"]),
                 len(snap["jobs"])))
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(v).rjust(w) for v, w in zip(r, widths)))
    cmd = ".venv/bin/python benchmarks/spawn_bench.py" + ("" if argv is None and len(sys.argv) == 1
                                                          else " " + " ".join(sys.argv[1:]))
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as out:
        out.write("# Spawn balancing benchmark (generated)\n\nCommand: `%s`\n\n" % cmd)
        out.write("Clusters of N equal 4 TB hosts at about 50%% disk use (seed %d + N), one host "
                  "overloaded to 1.6x the mean and one fresh empty host added (N + 1 hosts). "
                  "`plan_round` is applied until it plans no move. Goals: max/mean <= %.2f, "
                  "min/mean >= %.2f, bytes moved <= %.1fx the least possible, 0 replica "
                  "violations. `full LB`: sum over hosts of bytes above the mean (least bytes for a "
                  "perfect balance; the goal's denominator); `band LB`: least bytes to meet the "
                  "max/min goals at all. Std: disk use fraction and active copies per host.\n\n"
                  % (args.seed, GOALS["max_mean"], GOALS["min_mean"], GOALS["bytes_ratio"]))
        out.write("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
        for r in rows:
            out.write("| " + " | ".join(str(v) for v in r) + " |\n")
        out.write("\nPlots: " + ", ".join("`spawn_%s.png`" % s for s in args.sizes.split(",")) + "\n")


if __name__ == "__main__":
    main()
