"""Tune the balancer on your own workload: the cheapest options that meet a wait target.

Replays a site's history (an SWF trace, or Grid Engine's accounting file / saved ``qacct -j``
output, converted on the fly) through the trace simulator under every candidate set of options
(a grid: ``--grid idle_time=120,300,600 --grid job_wait_time=0,300``...), prints each one's cost
and wait, and recommends the cheapest whose p95 (``--p95-wait S``) or mean (``--mean-wait S``) wait
is at most the target; when none is, it says so and names the closest.  Writes a plot (cost
against wait, one point per candidate) with ``--plot FILE.png``.  From the repository:

    .venv/bin/python -m benchmarks.tune --accounting $SGE_ROOT/default/common/accounting \\
        --nodes 16 --slots-per-node 8 --p95-wait 600 --plot tune.png

docs/simulator.md ("Tune on your own workload") has the model, the options and an example.
"""
import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic  # noqa: E402
from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import (  # noqa: E402
    accounting, engine, swf, tune)

DEFAULT_GRID = ("profile=default", "interval=30,60", "idle_time=120,300,600", "job_wait_time=0,300",
                "add_nodes_per_iter=1,cap")
BASELINES = ("default", "starcluster", "parallelcluster")
#: Options a recommendation is printed with when the simulator's setting differs from the shipped default.
SHOWN = tune.TUNABLE + ("billing",)


def load_jobs(opts, parser):
    """(trace name, jobs, machine processors or None, where the size came from, notes)."""
    notes = []
    if opts.accounting:
        try:
            conv = accounting.load(opts.accounting, fmt=opts.format, skip_bad=opts.skip_bad)
        except (OSError, accounting.AccountingError) as err:
            raise SystemExit("--accounting: %s" % err)
        if conv.bad:
            notes.append("skipped %d malformed records (%s; first at lines %s)" % (
                sum(conv.bad.values()), "; ".join("%d: %s" % (n, p) for p, n in sorted(conv.bad.items())),
                ", ".join(str(n) for n in conv.bad_lines[:5])))
        for reason, count in sorted(conv.left_out.items()):
            notes.append("left out %d records: %s" % (count, reason))
        if conv.merged:
            notes.append("%d parallel sub-task records merged into their job" % conv.merged)
        try:
            trace = swf.parse(conv.lines, name=opts.accounting)
        except swf.SwfError as err:
            raise SystemExit("--accounting: %s" % err)
    else:
        try:
            trace = swf.load(opts.trace, machines=opts.machines)
        except (OSError, swf.SwfError) as err:
            raise SystemExit("--trace: %s" % err)
    if trace.skipped:
        notes.append("skipped: %s" % ", ".join("%d %s" % (n, r) for r, n in sorted(trace.skipped.items())))
    name = os.path.basename(opts.accounting or opts.trace)
    return name, trace, notes


def machine(opts, trace, parser):
    """(worker nodes the history ran on, slots per node, where that came from)."""
    spn = opts.slots_per_node
    if opts.nodes:
        if spn is None:
            parser.error("--nodes: give --slots-per-node too (the slots of one node)")
        return opts.nodes, spn, "--nodes %d --slots-per-node %d" % (opts.nodes, spn)
    if opts.accounting:
        parser.error("--accounting: the accounting does not record the cluster's size; "
                     "give --nodes N --slots-per-node S (the execution hosts and the slots of each)")
    try:
        procs, source = trace.machine_size()
    except swf.MachineSizeUnknown as err:
        raise SystemExit("--trace: %s" % err)
    if spn is None and trace.machines and trace.cpus_per_node() is None:
        raise SystemExit("--trace: %s: clusters with different CPUs per node (%s); the simulator's nodes are "
                         "all alike: give --slots-per-node S" % (
                             trace.machines_name, ", ".join(sorted(set(str(c.cpus) for c in trace.machines)))))
    if spn is None:
        spn = trace.cpus_per_node() or 1
    return max(1, procs // spn), spn, "%s: %d processors, %d slot(s) per node" % (source, procs, spn)


def parse_cap(text, nodes):
    text = text.strip()
    try:
        if text.endswith("x"):
            return max(1, int(round(float(text[:-1]) * nodes)))
        value = int(text)
    except ValueError:
        raise SystemExit("--cap: %r is not a node count or a multiple like 1x, 2x" % text)
    if value < 1:
        raise SystemExit("--cap: must be >= 1")
    return value


COLUMNS = [("label", "candidate", "%s"), ("node_hours", "node-h", "%.1f"), ("cost", "cost", "%.1f"),
           ("wait_mean", "mean wait s", "%.0f"), ("wait_p95", "p95 wait s", "%.0f"),
           ("max_nodes", "max nodes", "%d"), ("launches_per_day", "launches/day", "%.1f"), ("meets", "meets", "%s")]


def table(rows, markdown=False):
    head = [c[1] for c in COLUMNS]
    cells = [[fmt % r[key] for key, _n, fmt in COLUMNS] for r in rows]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out.extend("| " + " | ".join(c) + " |" for c in cells)
        return "\n".join(out)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    out.extend("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
               for row in cells)
    return "\n".join(out)


def playbook_options(row, cap, spn, billing):
    """The options to give the playbook for a row: those whose simulated value differs from the shipped default."""
    cand = row["candidate"]
    profile = cand.get("profile", "default")
    cfg = engine.policy_config(profile, cap, spn, billing,
                               overrides={k: v for k, v in cand.items() if k not in ("profile", "baseline")})
    shipped = elastic.default_config(profile)
    opts = ["profile=%s" % profile]
    opts += ["%s=%s" % (k, cfg[k]) for k in SHOWN if cfg.get(k) != shipped.get(k)]
    return opts


def plot(rows, best, met, target, limit, title, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 6))
    shift = 0
    for row in rows:
        wait = tune.wait_of(row, target)
        base = row["candidate"].get("baseline")
        ok = wait <= limit + 1e-9
        ax.scatter([row["cost"]], [wait], s=60 if base else 28, marker="s" if base else "o",
                   color="tab:gray" if base else ("tab:green" if ok else "tab:red"), zorder=3)
        if base:
            shift += 1
            ax.annotate(row["candidate"]["profile"], (row["cost"], wait), fontsize=7, color="dimgray",
                        xytext=(6, 12 * shift - 18), textcoords="offset points")
    wait = tune.wait_of(best, target)
    ax.scatter([best["cost"]], [wait], s=260, marker="*", color="gold", edgecolor="black", zorder=4,
               label=("recommended: " if met else "closest (target missed): ") + best["label"])
    ax.axhline(limit, color="tab:blue", linestyle="--", linewidth=1, label="target: %s wait <= %g s" % (target, limit))
    ax.set_xlabel("cost (node-hours as billed)")
    ax.set_ylabel("%s wait (s)" % target)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.scatter([], [], color="tab:green", s=28, label="candidate meeting the target")
    ax.scatter([], [], color="tab:red", s=28, label="candidate missing it")
    ax.scatter([], [], color="tab:gray", marker="s", s=60, label="profile as the simulator runs it (reference)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=7, ncol=1)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=90, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--trace", help="an SWF file (also extended SWF with a .machines file next to it)")
    src.add_argument("--accounting", help="Grid Engine's accounting file, or saved qacct -j output")
    parser.add_argument("--format", choices=("auto", "raw", "qacct"), default="auto",
                        help="of --accounting (auto: told by its first record)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip malformed accounting records (counted) instead of stopping at the first")
    parser.add_argument("--machines", default=None, help="the trace's .machines file (default: found next to it)")
    goal = parser.add_mutually_exclusive_group(required=True)
    goal.add_argument("--p95-wait", type=float, help="target: 95th percentile of the wait, seconds")
    goal.add_argument("--mean-wait", type=float, help="target: mean wait, seconds")
    parser.add_argument("--nodes", type=int, default=None, help="execution hosts the history ran on")
    parser.add_argument("--slots-per-node", type=int, default=None, help="slots of each node")
    parser.add_argument("--cap", default="1x", help="the most worker nodes: a number or Nx of --nodes (default 1x)")
    parser.add_argument("--billing", choices=engine.BILLING, default="per_second")
    parser.add_argument("--boot-delay", type=float, default=120.0, help="seconds from asking for a node to its joining")
    parser.add_argument("--grid", action="append", default=None, metavar="OPTION=V1,V2",
                        help="candidate values of one option (repeatable); default: %s" % " ".join(DEFAULT_GRID))
    parser.add_argument("--no-baselines", action="store_true",
                        help="do not also replay default, starcluster and parallelcluster as the simulator runs them")
    parser.add_argument("--plot", default=None, help="write the cost/wait plot to this PNG file")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    opts = parser.parse_args(argv)
    if opts.slots_per_node is not None and opts.slots_per_node < 1:
        parser.error("--slots-per-node: must be >= 1")
    if opts.nodes is not None and opts.nodes < 1:
        parser.error("--nodes: must be >= 1")
    target, limit = ("p95", opts.p95_wait) if opts.p95_wait is not None else ("mean", opts.mean_wait)
    if limit < 0:
        parser.error("--%s-wait: must be >= 0 seconds" % target)

    began = time.monotonic()
    name, trace, notes = load_jobs(opts, parser)
    nodes, spn, source = machine(opts, trace, parser)
    cap = parse_cap(opts.cap, nodes)
    try:
        candidates = tune.grid(opts.grid or list(DEFAULT_GRID), cap)
    except ValueError as err:
        parser.error("--grid: %s" % err)
    if not opts.no_baselines:
        candidates += [{"profile": p, "baseline": True} for p in BASELINES]
    span = (max(j.submit + j.run for j in trace.jobs) - trace.jobs[0].submit) / 86400.0 if trace.jobs else 0.0
    print("%s: %d jobs over %.1f days; machine: %d nodes x %d slots (%s); cap %d nodes; %s billing; "
          "boot delay %.0f s" % (name, len(trace.jobs), span, nodes, spn, source, cap, opts.billing, opts.boot_delay))
    for note in notes:
        print("  " + note)
    if not trace.jobs:
        raise SystemExit("%s: no job to replay" % name)
    wide = sum(1 for j in trace.jobs if j.procs > cap * spn)
    if wide:
        print("  %d jobs wider than the cap (%d slots) can never run and are left out of every replay" % (
            wide, cap * spn))
    print("replaying %d candidates ..." % len(candidates))
    try:
        rows = tune.sweep(trace.jobs, candidates, cap, spn, opts.billing, opts.boot_delay)
    except ValueError as err:
        raise SystemExit("--grid: %s" % err)
    opt = engine.summarize(engine.optimum(trace.jobs, cap, spn))
    best, met = tune.recommend(rows, target, limit)
    for row in rows:
        row["meets"] = "yes" if tune.wait_of(row, target) <= limit + 1e-9 else "no"
    rows.sort(key=lambda r: (r["cost"], tune.wait_of(r, target)))
    print()
    print(table(rows, markdown=opts.markdown))
    print("(lower bound, every slot-second packed with no wait: %.1f node-h)" % opt["node_hours"])
    print()
    wait = tune.wait_of(best, target)
    options = " ".join("-e %s" % o for o in playbook_options(best, cap, spn, opts.billing))
    if met:
        print("recommended: %s: %.1f node-h (cost %.1f), %s wait %.0f s <= %g s" % (
            best["label"], best["node_hours"], best["cost"], target, wait, limit))
    else:
        print("no candidate meets %s wait <= %g s; the closest: %s: %s wait %.0f s, %.1f node-h (cost %.1f)" % (
            target, limit, best["label"], target, wait, best["node_hours"], best["cost"]))
    print("playbook options: %s" % options)
    if opts.plot:
        title = "%s: %d jobs, cap %d x %d slots, %s; target %s wait <= %g s" % (
            name, len(trace.jobs), cap, spn, opts.billing, target, limit)
        plot(rows, best, met, target, limit, title, opts.plot)
        print("wrote %s" % opts.plot)
    print("wall time: %.1f s" % (time.monotonic() - began))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
