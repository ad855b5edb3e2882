# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Li & Parker's experiments (their Figures 4-8 and a manager failure) on the simulator
``tests/unit/shares_sim.py``, under the three demand processes (steady,
heavy, tight), both node-to-manager assignments (blocks, round-robin) and both profiles
(paper, default), at the paper's sizes and at 10,000 nodes; plus bank vs cluster reserves on
the 100-node case.

Prints a table, writes ``docs/shares/results.md`` and PNG plots (usage share per class over
cycles) to ``docs/shares/``.

    .venv/bin/python benchmarks/shares_experiments.py            # full run
    .venv/bin/python benchmarks/shares_experiments.py --quick    # fewer cycles, no 10,000 nodes
    .venv/bin/python benchmarks/shares_experiments.py --only fig8,big8 --stop-cycles 20
    .venv/bin/python benchmarks/shares_experiments.py --readings # the paper profile's readings

Fig. 8 (and ``big8``) stop class 1 twice for the paper's 1.5 s: ``--stop-seconds`` (1.5) over
``--cycle-seconds`` (0.3, one node report period: the paper's Fig. 6 nodes report every 0.3 s,
and its Fig. 8 puts 3 reporting cycles at "about 1 second"), rounded: 5 cycles.
``--stop-cycles`` sets the length in cycles instead (the earlier runs stopped class 1 for a
tenth of the run: 20 of 200 cycles, until this option on 2026-11-27). ``--only`` and
``--readings`` print and write no file.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, ".collections")
from ansible_collections.gridengine.balancer.tests.unit import shares_sim as sim  # noqa: E402

DEMANDS = ("steady", "heavy", "tight")
ASSIGNMENTS = ("blocks", "round_robin")
PROFILES = ("paper", "default")
MEAN_TOL = 0.3
STD_MAX = 0.3
FLOOR_RATIO = 1.2
RECOVERY_MAX = 2


def stop_cycles(stop_seconds, cycle_seconds):
    """The stop's length in cycles: ``stop_seconds / cycle_seconds`` rounded, at least 1."""
    if not (stop_seconds > 0 and cycle_seconds > 0):
        raise ValueError("--stop-seconds and --cycle-seconds must be > 0")
    return max(1, int(round(stop_seconds / cycle_seconds)))


def two_stops(cycles, length):
    """Class 1 (index 0) stopped at 30 % and at 60 % of the run for ``length`` cycles each."""
    first, second = cycles * 3 // 10, cycles * 6 // 10
    if length < 1 or first + length > second or second + length + 10 > cycles:
        raise ValueError("a stop of %d cycles does not fit twice in %d cycles (at most %d)"
                         % (length, cycles, min(second - first, cycles - second - 10)))
    return [(0, first, first + length), (0, second, second + length)]


def scenarios(quick, big, stop_len=5):
    """(key, title, kwargs, goals) for every experiment. ``goals``: which goals apply.
    ``stop_len``: cycles class 1 is stopped in fig8 / big8."""
    cyc = 100 if quick else 200
    warm = 30 if quick else 40
    out = [
        ("fig4", "Fig. 4: 4 nodes, class 3 only on one node",
         dict(nodes=4, fanout=4, class3_nodes=1, cycles=cyc, warmup=warm), ()),
        ("fig5", "Fig. 5: 100 nodes, 10 managers, class 3 on the first 30",
         dict(nodes=100, fanout=10, class3_nodes=30, cycles=cyc, warmup=warm), ("share",)),
        ("fig6", "Fig. 6: as Fig. 5, managers report 5x less often, skewed node reports",
         dict(nodes=100, fanout=10, class3_nodes=30, cycles=cyc, warmup=warm,
              manager_period=5, skew=True), ()),
        ("fig7", "Fig. 7: 900 nodes, 30 managers, class 3 on the first 300",
         dict(nodes=900, fanout=30, class3_nodes=300, cycles=cyc, warmup=warm), ("share",)),
        ("fig8", "Fig. 8: 100 nodes, class 1 stopped %d cycles, restarted, twice" % stop_len,
         dict(nodes=100, fanout=10, cycles=cyc, warmup=warm, stops=two_stops(cyc, stop_len)),
         ("recovery",)),
        ("kill", "Manager failure: level-1 manager 0 killed, then the top manager",
         dict(nodes=100, fanout=10, class3_nodes=30, cycles=cyc, warmup=warm,
              kill=[(cyc * 4 // 10, 0), (cyc * 6 // 10, "top")]), ()),
    ]
    if big:
        bc = 60 if quick else 150
        bw = 20 if quick else 40
        out += [
            ("big", "10,000 nodes, 100 managers, class 3 on the first 3,000",
             dict(nodes=10000, fanout=100, class3_nodes=3000, cycles=bc, warmup=bw),
             ("share",)),
            ("big8", "10,000 nodes, 100 managers, class 1 stopped %d cycles, restarted, twice"
             % stop_len,
             dict(nodes=10000, fanout=100, cycles=bc, warmup=bw, stops=two_stops(bc, stop_len)),
             ("recovery",)),
        ]
    return out


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def run_all(args):
    rows = []
    floors = {}
    runs = {}
    for key, title, kw, goals in scenarios(args.quick, not args.no_big, args.stop_len):
        if args.only and key not in args.only:
            continue
        for demand in DEMANDS:
            for assignment in ASSIGNMENTS:
                if kw["nodes"] <= kw["fanout"] and assignment != "blocks":
                    continue        # one manager: the assignment does not matter
                fkey = (kw["nodes"], kw.get("class3_nodes"), assignment, demand)
                if demand == "tight" and fkey not in floors:
                    fscn = sim.Scenario(demand="tight", assignment=assignment,
                                        **dict((k, v) for k, v in kw.items()
                                               if k in ("nodes", "fanout", "class3_nodes")))
                    fcyc = 60 if kw["nodes"] >= 10000 else (150 if args.quick else 300)
                    floors[fkey] = sim.noise_floor(fscn, cycles=fcyc)[0]
                for profile in PROFILES:
                    scn = sim.Scenario(name=key, demand=demand, assignment=assignment,
                                       profile=profile, **kw)
                    t0 = time.perf_counter()
                    res = sim.simulate(scn)
                    wall = time.perf_counter() - t0
                    mean, std = res.stats()
                    rec = res.recoveries() if res.restarts else []
                    floor = floors.get(fkey) if demand == "tight" else None
                    verdict = []
                    if "share" in goals and demand in ("steady", "heavy"):
                        verdict.append(abs(mean - 10.0) <= MEAN_TOL and std <= STD_MAX)
                    if "share" in goals and demand == "tight":
                        verdict.append(std <= FLOOR_RATIO * floor)
                    if "recovery" in goals and demand in ("steady", "tight"):
                        verdict.append(all(r is not None and r <= RECOVERY_MAX for r in rec))
                    goal = "-" if not verdict else ("met" if all(verdict) else "MISSED")
                    row = dict(key=key, nodes=kw["nodes"], demand=demand, assignment=assignment,
                               profile=profile, mean=mean, std=std, floor=floor,
                               recovery=",".join("never" if r is None else str(r) for r in rec)
                               or "-", goal=goal, wall=wall, cycles=kw["cycles"])
                    rows.append(row)
                    runs[(key, demand, assignment, profile)] = (title, res)
                    print("%-5s %6d %-6s %-11s %-7s class3 %6.2f%% std %5.2f floor %5s "
                          "recovery %-7s goal %-6s (%.1f s)"
                          % (key, kw["nodes"], demand, assignment, profile, mean, std,
                             fmt(floor), row["recovery"], goal, wall), flush=True)
    return rows, runs


def compare_reserves(args):
    """Bank vs cluster reserves, 100 nodes under one manager (reserves is single-manager)."""
    out = []
    cyc = 60 if args.quick else 120
    for demand in DEMANDS:
        for algorithm, profile in (("bank", "paper"), ("bank", "default"), ("reserves", "paper")):
            scn = sim.Scenario(name="cmp", nodes=100, fanout=100, class3_nodes=30, demand=demand,
                               cycles=cyc, warmup=30, algorithm=algorithm, profile=profile)
            res = sim.simulate(scn, timer=time.perf_counter)
            mean, std = res.stats()
            shares = res.usage_share[scn.warmup:].mean(axis=0)
            out.append(dict(demand=demand, algorithm="%s/%s" % (algorithm, profile)
                            if algorithm == "bank" else "reserves", shares=shares, mean=mean,
                            std=std, ms=res.seconds_per_round * 1e3))
            print("compare %-6s %-13s shares %s class3 std %.2f, %.2f ms per round"
                  % (demand, out[-1]["algorithm"], np.round(shares, 2), std, out[-1]["ms"]),
                  flush=True)
    return out


READINGS = (
    ("one manager over the 100 nodes", "-", dict(fanout=100)),
    ("manager = child of 100 x n tickets (project)", "blocks", dict()),
    ("manager = child of 100 x n tickets (project)", "round_robin", dict()),
    ("  same, top floor 10 tickets (1 per node)", "blocks", dict(top_floor=10.0)),
    ("  same, top c 20 tickets (2 per node)", "blocks", dict(top_c=20.0)),
    ("  same, top c 20 tickets (2 per node)", "round_robin", dict(top_c=20.0)),
    ("manager = node of 100 tickets (percent)", "blocks", dict(top_units="percent")),
    ("manager = node of 100 tickets (percent)", "round_robin", dict(top_units="percent")),
)


def readings(seeds=8):
    """The ``paper`` profile under the readings of what a level-1 manager is to the top
    (docs/shares.md): Fig. 5's case (100 nodes, 10 managers, class 3 on the first 30), 200
    cycles, warm-up 40. Steady demand is deterministic; heavy demand is drawn with seeds
    1..``seeds`` (min / median / max of the class-3 means). Prints; returns the rows."""
    print("paper profile, 100 nodes, 10 managers, class 3 on the first 30, 200 cycles, "
          "warm-up 40; class-3 usage share after warm-up (%%), allocation share in brackets; "
          "heavy: min / median / max over seeds 1-%d" % seeds)
    print("%-46s %-11s %-16s %s" % ("what a level-1 manager is to the top", "assignment",
                                    "steady (alloc)", "heavy min / median / max"))
    out = []
    for label, assignment, extra in READINGS + (("default profile, project's reading", "blocks",
                                                 dict(profile="default")),
                                                ("default profile, project's reading",
                                                 "round_robin", dict(profile="default"))):
        kw = dict(nodes=100, fanout=10, class3_nodes=30, cycles=200, warmup=40,
                  profile="paper", assignment="blocks" if assignment == "-" else assignment)
        kw.update(extra)
        res = sim.simulate(sim.Scenario(demand="steady", **kw))
        steady = res.stats()[0]
        steady_alloc = float(res.alloc_share[kw["warmup"]:, 2].mean())
        heavy = [sim.simulate(sim.Scenario(demand="heavy", seed=seed, **kw)).stats()[0]
                 for seed in range(1, seeds + 1)]
        row = dict(label=label, assignment=assignment, steady=steady, steady_alloc=steady_alloc,
                   heavy=(min(heavy), float(np.median(heavy)), max(heavy)))
        out.append(row)
        print("%-46s %-11s %6.2f (%5.2f)   %.2f / %.2f / %.2f"
              % ((label, assignment.replace("_", "-"), steady, steady_alloc) + row["heavy"]),
              flush=True)
    return out


def plot(runs, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    keys = sorted(set(k for k, _d, _a, _p in runs))
    for key in keys:
        for demand in DEMANDS:
            cells = [(a, p) for a in ASSIGNMENTS for p in PROFILES
                     if (key, demand, a, p) in runs]
            if not cells:
                continue
            fig, axes = plt.subplots(1, len(cells), figsize=(4.2 * len(cells), 3.4),
                                     sharey=True, squeeze=False)
            title = runs[(key, demand) + cells[0]][0]
            for ax, (a, p) in zip(axes[0], cells):
                res = runs[(key, demand, a, p)][1]
                for j, name in enumerate(("class 1", "class 2", "class 3")):
                    ax.plot(res.usage_share[:, j], lw=0.9, label=name)
                for y in res.scenario.desired:
                    ax.axhline(y, color="grey", lw=0.5, ls=":")
                ax.set_title("%s, %s profile" % (a.replace("_", "-"), p), fontsize=9)
                ax.set_xlabel("cycle")
            axes[0][0].set_ylabel("usage share (%)")
            axes[0][0].legend(fontsize=7)
            fig.suptitle("%s\nworkload: %s demand (desired 60/30/10)" % (title, demand),
                         fontsize=10)
            fig.tight_layout()
            path = os.path.join(outdir, "%s_%s.png" % (key, demand))
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)
    return written


def write_md(rows, cmp_rows, plots, path, command, stop_note=""):
    lines = ["# Shares experiments (generated)", "", "Command: `%s`" % command, ""]
    if stop_note:
        lines += [stop_note, ""]
    lines += ["Class-3 usage share after warm-up (desired 10%); floor: the tight workload's own "
              "noise floor (std of a static oracle allocation); recovery: cycles from each "
              "restart until every class is within 1 point for 3 cycles. Goals: steady/heavy at "
              "100, 900 and 10,000 nodes: |mean - 10| <= 0.3 and std <= 0.3; tight: std <= 1.2 x "
              "floor; recovery <= 2 cycles under steady and tight. `-`: no goal for that row.", "",
              "| exp | nodes | demand | assignment | profile | class 3 mean | std | floor | "
              "recovery | goal | cycles | wall s |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %d | %s | %s | %s | %.2f | %.3f | %s | %s | %s | %d | %.1f |"
                     % (r["key"], r["nodes"], r["demand"], r["assignment"], r["profile"],
                        r["mean"], r["std"], fmt(r["floor"], "%.3f"), r["recovery"], r["goal"],
                        r["cycles"], r["wall"]))
    met = sum(r["goal"] == "met" for r in rows)
    missed = [r for r in rows if r["goal"] == "MISSED"]
    lines += ["", "Goals met in %d rows, missed in %d." % (met, len(missed)), ""]
    for prof in PROFILES:
        miss = [r for r in missed if r["profile"] == prof]
        names = "; ".join("%s %s %s" % (r["key"], r["demand"], r["assignment"]) for r in miss)
        lines.append("* `%s` profile: %d missed%s" % (prof, len(miss),
                                                      (": " + names) if miss else ""))
    lines += ["", "## Bank vs cluster reserves (100 nodes, one manager, class 3 on the first 30)",
              "", "| demand | algorithm | usage shares (1/2/3) | class 3 std | ms per round |",
              "|---|---|---|---|---|"]
    for r in cmp_rows:
        lines.append("| %s | %s | %s | %.3f | %.2f |" % (
            r["demand"], r["algorithm"], " / ".join("%.2f" % x for x in r["shares"]), r["std"],
            r["ms"]))
    lines += ["", "## Plots", ""] + ["* `%s`" % os.path.basename(p) for p in plots]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--quick", action="store_true", help="fewer cycles, no 10,000-node runs")
    ap.add_argument("--no-big", action="store_true", help="skip the 10,000-node runs")
    ap.add_argument("--out", default="docs/shares", help="output directory (default docs/shares)")
    ap.add_argument("--cycle-seconds", type=float, default=0.3,
                    help="seconds per cycle, one node report period (default 0.3, the paper's)")
    ap.add_argument("--stop-seconds", type=float, default=1.5,
                    help="how long class 1 is stopped in fig8 / big8 (default 1.5, the paper's)")
    ap.add_argument("--stop-cycles", type=int,
                    help="the stop's length in cycles instead (the earlier runs: 20)")
    ap.add_argument("--only", help="comma-separated experiments to run (fig4, fig5, fig6, fig7, "
                    "fig8, kill, big, big8); prints, writes no file, no reserves comparison")
    ap.add_argument("--readings", action="store_true",
                    help="only the paper profile's readings of the hierarchy; prints, writes "
                    "no file")
    ap.add_argument("--seeds", type=int, default=8,
                    help="heavy-demand seeds for --readings (default 8)")
    args = ap.parse_args(argv)
    if args.quick:
        args.no_big = True
    try:
        args.stop_len = args.stop_cycles if args.stop_cycles is not None \
            else stop_cycles(args.stop_seconds, args.cycle_seconds)
        for cycles in ((100, ) if args.quick else (200, 150)):
            two_stops(cycles, args.stop_len)
    except ValueError as exc:
        ap.error(str(exc))
    keys = [k for k, _t, _kw, _g in scenarios(False, True)]
    args.only = [k.strip() for k in args.only.split(",") if k.strip()] if args.only else None
    if args.only and set(args.only) - set(keys):
        ap.error("--only: unknown experiment(s) %s (known: %s)"
                 % (", ".join(sorted(set(args.only) - set(keys))), ", ".join(keys)))
    if args.seeds < 1:
        ap.error("--seeds must be at least 1")
    t0 = time.perf_counter()
    stop_note = ("Fig. 8 / big8: class 1 stopped for %d cycles (%s) twice, at 30 %% and 60 %% "
                 "of the run; a cycle is %g s." % (
                     args.stop_len, ("--stop-cycles %d" % args.stop_cycles)
                     if args.stop_cycles is not None else "%g s / %g s per cycle"
                     % (args.stop_seconds, args.cycle_seconds), args.cycle_seconds))
    if args.readings:
        readings(args.seeds)
        print("%.0f s" % (time.perf_counter() - t0))
        return
    print(stop_note)
    rows, runs = run_all(args)
    if args.only:
        print("%.0f s (--only: no file written)" % (time.perf_counter() - t0))
        return
    os.makedirs(args.out, exist_ok=True)
    cmp_rows = compare_reserves(args)
    plots = plot(runs, args.out)
    command = ".venv/bin/python benchmarks/shares_experiments.py"
    if args.quick:
        command += " --quick"
    elif args.no_big:
        command += " --no-big"
    for flag in ("stop_cycles", "stop_seconds", "cycle_seconds"):
        value = getattr(args, flag)
        if value is not None and value != ap.get_default(flag):
            command += " --%s %g" % (flag.replace("_", "-"), value)
    write_md(rows, cmp_rows, plots, os.path.join(args.out, "results.md"), command, stop_note)
    print("wrote %s and %d plots in %.0f s" % (os.path.join(args.out, "results.md"), len(plots),
                                               time.perf_counter() - t0))


if __name__ == "__main__":
    main()
