# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Chaos simulation of node_leave's drain: scale-down events while jobs keep arriving (issue 7 part 3).

Runs the model of tests/unit/drain_chaos.py (the balancer's ``decide``, node_leave
task by task, Grid Engine's scheduler and qmaster, random and adversarial job arrivals) until
``--events`` drains have started and every job submitted has ended, for the role as implemented
and for variants, all with the same seed and workload.  Prints a table; with ``--markdown PATH``
writes it there too.  From the repository:

    nice .venv/bin/python benchmarks/chaos_sim.py --events 10000 --markdown docs/reliability/chaos-sim-results.md

Exit status 1 when a run that must kill nothing (node_leave as implemented with the default
scheduler, under either qmaster rule; the proposed final check) kills or loses a job, or a job
ends with another exit status than its own; also when the variant without the re-check finds no
kill (then the checker itself is broken).  The other variants are reported, not judged.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.gridengine.balancer.tests.unit import drain_chaos  # noqa: E402

#: A scheduler run whose orders arrive 16-40 s after the disable: longer than the settle time.
SLOW = {"straddle_time": (16.0, 40.0)}

#: (label, protocol, options, expectation): "none" = must kill and lose nothing, "kills" = must
#: find a kill (the checker's own test), None = reported only.
RUNS = [
    ("node_leave", "node_leave", {"stale_orders": "accept"}, "none"),
    ("node_leave", "node_leave", {"stale_orders": "reject"}, "none"),
    ("no re-check", "no_recheck", {"stale_orders": "accept"}, "kills"),
    ("no re-check", "no_recheck", {"stale_orders": "reject"}, None),
    ("settle 0", "settle0", {"stale_orders": "accept"}, None),
    ("settle 0", "settle0", {"stale_orders": "reject"}, None),
    ("node_leave, slow scheduler", "node_leave", dict(SLOW, stale_orders="accept"), None),
    ("node_leave, slow scheduler", "node_leave", dict(SLOW, stale_orders="reject"), None),
    ("proposed final check, slow scheduler", "final_check", dict(SLOW, stale_orders="accept"), "none"),
]

COLUMNS = [
    ("run", "%s"), ("stale orders", "%s"), ("drains", "%d"), ("removed", "%d"),
    ("backed out (1st/re/final)", "%s"), ("jobs", "%d"), ("adversary jobs", "%d"),
    ("dispatched in a drain", "%d"), ("to a disabled instance", "%d"), ("stale orders refused", "%d"),
    ("finished, own exit status", "%d"), ("killed", "%d"), ("lost", "%d"), ("pending at end", "%d"),
    ("mean removal s", "%.1f"), ("polls", "%d"), ("sim h", "%.0f"), ("runtime s", "%.1f"), ("verdict", "%s"),
]


def row(label, fig, runtime, verdict):
    backed = "%d (%d/%d/%d)" % (fig["backed_out"], fig["backed_out_first_check"], fig["backed_out_recheck"],
                                fig["backed_out_final_check"])
    return [label, fig["stale_orders"], fig["drains_started"], fig["drains_removed"], backed,
            fig["jobs_submitted"], fig["jobs_adversary"], fig["dispatched_during_drain"], fig["dispatched_disabled"],
            fig["orders_refused_stale"], fig["exit_status_own"], fig["jobs_killed"], fig["jobs_lost"],
            fig["pending_end"], fig["drain_mean_seconds"], fig["polls"], fig["sim_hours"], runtime, verdict]


def judge(fig, expectation):
    """'ok', 'FAILED: ...' or '-' (not judged)."""
    if expectation == "none":
        bad = []
        if fig["jobs_killed"]:
            bad.append("%d killed" % fig["jobs_killed"])
        if fig["jobs_lost"]:
            bad.append("%d lost" % fig["jobs_lost"])
        if fig["exit_status_own"] != fig["jobs_finished"]:
            bad.append("%d other exit status" % (fig["jobs_finished"] - fig["exit_status_own"]))
        return "FAILED: " + ", ".join(bad) if bad else "ok (0 killed, 0 lost)"
    if expectation == "kills":
        return "ok (checker finds kills)" if fig["jobs_killed"] else "FAILED: the checker found no kill"
    return "-"


def table(rows, markdown):
    head = [c[0] for c in COLUMNS]
    cells = [[fmt % value for (_h, fmt), value in zip(COLUMNS, r)] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines.extend("| " + " | ".join(c) + " |" for c in cells)
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells)
    return "\n".join(lines)


def kill_lines(results):
    out = []
    for label, fig, res in results:
        if not res.kills:
            continue
        where = ", ".join("%s %d" % kv for kv in sorted(fig["killed_at"].items()))
        first = res.kills[0]
        out.append("- %s, stale orders %s: %d killed (%s); first: job %d on %s, dispatched at %.3f s, "
                   "killed at %.3f s (%s)" % (label, fig["stale_orders"], fig["jobs_killed"], where, first["job"],
                                              first["node"], first["dispatched"], first["killed"],
                                              "an adversary's job" if first["adversary"] else "a background job"))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--events", type=int, default=10000, help="scale-down events (drains) per run (default 10000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed, the same for every run (default 1)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the figures there")
    parser.add_argument("--no-variants", action="store_true",
                        help="only node_leave as implemented (both qmaster rules) and the no-re-check checker")
    args = parser.parse_args(argv)
    if args.events < 1:
        parser.error("--events: must be >= 1, got %d" % args.events)
    runs = RUNS[:3] if args.no_variants else RUNS
    rows = []
    results = []
    failed = []
    start_all = time.perf_counter()
    for label, protocol, options, expectation in runs:
        began = time.perf_counter()
        res = drain_chaos.run(args.events, seed=args.seed, protocol=protocol, options=options)
        runtime = time.perf_counter() - began
        fig = drain_chaos.summarize(res)
        verdict = judge(fig, expectation)
        if verdict.startswith("FAILED"):
            failed.append("%s (stale orders %s): %s" % (label, fig["stale_orders"], verdict))
        rows.append(row(label, fig, runtime, verdict))
        results.append((label, fig, res))
        print("%-38s stale=%-6s drains %d, removed %d, backed out %d, jobs %d, killed %d, lost %d  (%.1f s)"
              % (label, fig["stale_orders"], fig["drains_started"], fig["drains_removed"], fig["backed_out"],
                 fig["jobs_submitted"], fig["jobs_killed"], fig["jobs_lost"], runtime), flush=True)
    total = time.perf_counter() - start_all
    print()
    print(table(rows, markdown=False))
    kills = kill_lines(results)
    if kills:
        print()
        print("\n".join(kills))
    head = results[0][1]
    print()
    print("adversary scenarios (node_leave, stale orders accept): %s" % ", ".join(
        "%s %d" % kv for kv in sorted(head["scenarios"].items())))
    print(settings())
    print("total runtime %.1f s" % total)
    if args.markdown:
        write_markdown(args, rows, results, kills, total)
    if failed:
        print("FAILED: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


def settings():
    """The model's settings and the decide options of the runs, as one line."""
    opt = drain_chaos.validate_options(None)
    cfg = drain_chaos.engine.policy_config("default", opt["cap"], opt["slots_per_node"], "per_second")
    keys = ("profile", "interval", "job_wait_time", "stabilization_time", "idle_time", "min_nodes", "max_nodes",
            "add_nodes_per_iter")
    model = ("cap", "slots_per_node", "schedule_interval", "sched_run_time", "straddle_time", "transfer_time",
             "task_time", "join_time", "busy_mean", "quiet_mean", "busy_load", "quiet_gap", "job_median",
             "job_sigma", "short_jobs", "adversary", "prefer_draining")
    decide_text = ", ".join("%s=%s" % (k, cfg[k]) for k in keys)
    model_text = ", ".join("%s=%s" % (k, opt[k]) for k in model)
    return "decide: %s; model: %s" % (decide_text, model_text)


def write_markdown(args, rows, results, kills, total):
    path = args.markdown
    head = results[0][1]
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    text = [
        "# Drain chaos simulation: figures",
        "",
        "Produced by `nice .venv/bin/python benchmarks/chaos_sim.py --events %d --seed %d --markdown %s` on %s "
        "(total runtime %.1f s, this machine, one core). The model and how to read these figures: "
        "[chaos-sim.md](chaos-sim.md)." % (args.events, args.seed, path, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                           total),
        "",
        "Every run has the same seed and workload generator; the protocol, the qmaster's rule for stale "
        "orders (`accept`: a pessimistic qmaster; `reject`: Grid Engine's queue-version check) and the "
        "scheduler's run time differ. \"slow scheduler\": the scheduler run that reads its view before "
        "the disable sends its orders 16-40 s after it, longer than the settle time. Backed out: at the "
        "first check / at the re-check / at the proposed final check. Mean removal s: node_leave's "
        "simulated time (journal tasks included) over the drains that removed their node.",
        "",
        "Settings (the same in every run but the scheduler's run time): %s." % settings(),
        "",
        table(rows, markdown=True),
        "",
        "Adversary scenarios drawn in the first run: %s." % ", ".join("%s %d" % kv for kv in sorted(head["scenarios"].items())),
        "",
    ]
    if kills:
        text += ["Kills (times in simulated seconds from the start of the run):", ""] + kills + [""]
    with open(path + ".tmp", "w") as handle:
        handle.write("\n".join(text))
    os.replace(path + ".tmp", path)
    print("wrote %s" % path)


if __name__ == "__main__":
    sys.exit(main())
