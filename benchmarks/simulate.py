"""Trace-driven simulator CLI: node cost and job wait of balancer policies on an SWF workload.

Replays a Standard Workload Format trace through a simulated Grid Engine scheduler and the same
``decide`` the playbook uses (plugins/plugin_utils/sim/engine.py), for each policy, cluster cap
and billing mode; prints a table, writes docs/sim/<trace>.md and PNG plots.  From the repository:

    .venv/bin/python -m benchmarks.simulate --trace ../shared/data/traces/KTH-SP2-1996-2.1-cln.swf \
        --slots-per-node 1 --cap 1x,2x --billing per_second,hourly --copies 10 --out docs/sim

``--cap`` takes node counts or multiples of the trace machine's size (``1x``: MaxProcs / slots
per node).  With ``--copies N`` every case is also run N times with submit times shifted at random
by up to 60 s, and each goal comparison is reported as holding in all, some or none of the copies.
"""
import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine, swf  # noqa: E402

COLUMNS = [("policy", "policy", "%s"), ("node_hours", "node-h", "%.0f"), ("cost", "cost", "%.0f"),
           ("wait_mean", "mean wait s", "%.0f"), ("wait_median", "median s", "%.0f"),
           ("wait_p95", "p95 wait s", "%.0f"), ("max_nodes", "max nodes", "%d"),
           ("launches_per_day", "launches/day", "%.1f"), ("scale_events", "scale events", "%d"),
           ("decide_calls", "decide calls", "%d")]


def parse_overrides(items):
    """``["idle_time=120", ...]`` (``--override``) as an options dict; values read as JSON when they
    parse (numbers, true/false, lists), else kept as strings.  Raises ValueError naming the item."""
    out = {}
    for item in items or ():
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError("--override: %r is not OPTION=VALUE" % item)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def run_case(jobs, policies, cap, spn, billing, boot_delay, overrides=None):
    """{policy: (Result, figures)} for one trace copy, cap and billing mode.

    ``overrides``: options of the ``default`` policy set on top of its shipped defaults (the
    baselines are never changed).
    """
    out = {}
    for policy in policies:
        config = None
        if overrides and policy == "default":
            config = engine.policy_config(policy, cap, spn, billing, overrides=overrides)
        res = engine.simulate(jobs, policy, cap, spn, boot_delay=boot_delay, billing=billing, config=config)
        fig = engine.summarize(res)
        fig["cost"] = fig["cost_per_second"] if billing == "per_second" else fig["cost_hourly"]
        out[policy] = (res, fig)
    return out


def goals(figs, billing, cap_reached_ratio):
    """Issue 9's goals for the default profile, as (name, holds) pairs (missing policies: skipped)."""
    out = []
    d = figs.get("default")
    if d is None:
        return out
    sc, pc, opt = figs.get("starcluster"), figs.get("parallelcluster"), figs.get("optimum")
    if billing == "per_second":
        if sc:
            out.append(("mean wait < starcluster", d["wait_mean"] < sc["wait_mean"]))
            out.append(("node-h <= starcluster", d["node_hours"] <= sc["node_hours"]))
        if pc:
            out.append(("node-h <= parallelcluster", d["node_hours"] <= pc["node_hours"]))
            slack = 1.01 if cap_reached_ratio else 1.0
            out.append(("p95 <= parallelcluster%s" % (" (+1%)" if cap_reached_ratio else ""),
                        d["wait_p95"] <= pc["wait_p95"] * slack + 1e-9))
        if opt and cap_reached_ratio is False:
            out.append(("node-h <= 1.25 x optimum", d["node_hours"] <= 1.25 * opt["node_hours"]))
    else:
        if sc:
            out.append(("mean wait < starcluster", d["wait_mean"] < sc["wait_mean"]))
            out.append(("node-h <= 1.02 x starcluster", d["node_hours"] <= 1.02 * sc["node_hours"]))
    return out


def goals21(figs, billing, cap_label):
    """Issue 21's goals (a lead with a margin), as (name, holds) pairs (missing policies: skipped)."""
    out = []
    d = figs.get("default")
    if d is None:
        return out
    sc, pc, opt = figs.get("starcluster"), figs.get("parallelcluster"), figs.get("optimum")
    if billing == "per_second":
        if pc:
            out.append(("node-h <= 0.98 x parallelcluster at p95 no higher",
                        d["node_hours"] <= 0.98 * pc["node_hours"] and d["wait_p95"] <= pc["wait_p95"]))
        if sc:
            out.append(("node-h <= 0.97 x starcluster at lower mean wait",
                        d["node_hours"] <= 0.97 * sc["node_hours"] and d["wait_mean"] < sc["wait_mean"]))
        if opt and cap_label == "2x":
            out.append(("node-h <= 1.15 x optimum", d["node_hours"] <= 1.15 * opt["node_hours"]))
    elif sc:
        out.append(("node-h <= 1.00 x starcluster at lower mean wait",
                    d["node_hours"] <= sc["node_hours"] and d["wait_mean"] < sc["wait_mean"]))
    return out


RATIO_COLUMNS = [("copy", "%s"), ("default node-h", "%.0f"), ("/ parallelcluster", "%.4f"),
                 ("/ starcluster", "%.4f"), ("/ optimum", "%.4f"), ("p95 default s", "%.0f"),
                 ("p95 parallelcluster s", "%.0f"), ("mean default s", "%.0f"),
                 ("mean starcluster s", "%.0f"), ("mean parallelcluster s", "%.0f")]


def ratio_row(label, figs):
    """One copy's figures for issue 21's goals (default against the baselines)."""
    d = figs["default"]
    sc, pc, opt = figs.get("starcluster"), figs.get("parallelcluster"), figs.get("optimum")
    nan = float("nan")
    return [label, d["node_hours"],
            d["node_hours"] / pc["node_hours"] if pc else nan,
            d["node_hours"] / sc["node_hours"] if sc else nan,
            d["node_hours"] / opt["node_hours"] if opt else nan,
            d["wait_p95"], pc["wait_p95"] if pc else nan, d["wait_mean"],
            sc["wait_mean"] if sc else nan, pc["wait_mean"] if pc else nan]


BREAKDOWN_COLUMNS = [("policy", "%s"), ("node-h", "%.0f"), ("boot", "%.0f"), ("idle", "%.0f"),
                     ("partly free", "%.0f"), ("used", "%.0f"), ("launches", "%d"),
                     ("never ran a job", "%d"), ("their node-h", "%.0f")]


def breakdown_rows(case):
    """Per policy that launches nodes: where its node-hours went (engine.breakdown)."""
    rows = []
    for policy, (res, _f) in case.items():
        b = engine.breakdown(res)
        if b is None:
            continue
        rows.append([policy, b["node_hours"], b["boot"], b["idle"], b["partly_free"], b["used"], b["launches"],
                     b["unused_launches"], b["unused_hours"]])
    return rows


def breakdown_table(rows, markdown):
    cells = [[fmt % v for v, (_n, fmt) in zip(row, BREAKDOWN_COLUMNS)] for row in rows]
    head = [c[0] for c in BREAKDOWN_COLUMNS]
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] +
                         ["| " + " | ".join(c) + " |" for c in cells])
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    return "\n".join(["  ".join(h.rjust(w) for h, w in zip(head, widths))] +
                     ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells])


def ratio_table(rows):
    lines = ["| " + " | ".join(c[0] for c in RATIO_COLUMNS) + " |", "|" + "---|" * len(RATIO_COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(fmt % v for v, (_n, fmt) in zip(row, RATIO_COLUMNS)) + " |")
    return "\n".join(lines)


def table(rows, markdown):
    head = [c[1] for c in COLUMNS]
    lines = []
    cells = [[fmt % r[key] for key, _n, fmt in COLUMNS] for r in rows]
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines.extend("| " + " | ".join(c) + " |" for c in cells)
    else:
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
        lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths)))
        lines.extend("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)
    return "\n".join(lines)


def plot(case, name, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    for policy, (res, _f) in case.items():
        if not res.timeline:
            continue
        t0 = res.start
        xs = [(p[0] - t0) / 86400.0 for p in res.timeline]
        axes[0].step(xs, [p[1] for p in res.timeline], where="post", label=policy, linewidth=0.7)
        axes[1].step(xs, [p[2] for p in res.timeline], where="post", label=policy, linewidth=0.7)
    axes[0].set_ylabel("billed nodes")
    axes[1].set_ylabel("waiting jobs")
    axes[1].set_xlabel("days since the first submit")
    axes[0].legend(loc="upper right", fontsize=8)
    axes[0].set_title(name)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=90)
    plt.close(fig)
    os.replace(tmp, path)


def plot_plane(case, name, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    for policy, (_r, f) in case.items():
        ax.scatter([f["cost"]], [f["wait_mean"]], s=40)
        ax.annotate(policy, (f["cost"], f["wait_mean"]), fontsize=8, xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("cost (node-hours as billed)")
    ax.set_ylabel("mean wait (s)")
    ax.set_title(name)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=90)
    plt.close(fig)
    os.replace(tmp, path)


def parse_caps(text, machine, spn):
    caps = []
    for part in text.split(","):
        part = part.strip()
        if part.endswith("x"):
            caps.append((part, max(1, int(round(float(part[:-1]) * machine / float(spn))))))
        else:
            caps.append((part, int(part)))
    return caps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True, action="append", help="SWF file (repeatable)")
    parser.add_argument("--slots-per-node", type=int, default=1)
    parser.add_argument("--policies", default=",".join(engine.POLICIES))
    parser.add_argument("--billing", default="per_second,hourly", help="per_second, hourly or both")
    parser.add_argument("--cap", default="1x,2x", help="worker nodes, or Nx of the trace machine")
    parser.add_argument("--boot-delay", type=float, default=120.0)
    parser.add_argument("--copies", type=int, default=0, help="shifted copies per case (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None, help="directory for the Markdown table and plots")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--issue21", action="store_true",
                        help="also check issue 21's goals and print each copy's ratios (default vs the baselines)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also print where each policy's node-hours went (boot, idle, free slots of "
                             "busy nodes, used) and the nodes that never ran a job, for the plain trace")
    parser.add_argument("--override", action="append", default=[], metavar="OPTION=VALUE",
                        help="set an option of the default policy (repeatable), e.g. idle_time=120; "
                             "the baselines keep theirs")
    opts = parser.parse_args(argv)
    try:
        overrides = parse_overrides(opts.override)
        if overrides:
            engine.policy_config("default", 1, opts.slots_per_node, "per_second", overrides=overrides)
    except ValueError as err:
        parser.error("--override: %s" % err)
    policies = [p.strip() for p in opts.policies.split(",") if p.strip()]
    for p in policies:
        if p not in engine.POLICIES:
            parser.error("--policies: unknown policy %r (known: %s)" % (p, ", ".join(engine.POLICIES)))
    billings = [b.strip() for b in opts.billing.split(",") if b.strip()]
    for b in billings:
        if b not in engine.BILLING:
            parser.error("--billing: %r is not one of %s" % (b, ", ".join(engine.BILLING)))
    if opts.slots_per_node < 1:
        parser.error("--slots-per-node: must be >= 1")
    if opts.out:
        os.makedirs(opts.out, exist_ok=True)
    began = time.monotonic()
    md = ["# Trace simulator results", "", "Written by benchmarks/simulate.py; see docs/simulator.md for the model.", "",
          "Command: `.venv/bin/python -m benchmarks.simulate %s`" % " ".join(argv if argv is not None else sys.argv[1:]),
          ""]
    for path in opts.trace:
        try:
            trace = swf.load(path)
        except (OSError, swf.SwfError) as err:
            raise SystemExit("--trace: %s" % err)
        tname = os.path.basename(path).rsplit(".", 1)[0]
        try:
            machine = trace.machine_procs()
        except swf.MachineSizeUnknown as err:
            # caps relative to the machine ("2x") need its size; node counts do not
            if any(c.strip().endswith("x") for c in opts.cap.split(",")):
                raise SystemExit("--trace: %s; or give --cap as node counts" % err)
            machine = 0
        size = "%d processors" % machine if machine else "size unknown (caps given as node counts)"
        print("%s: %d jobs replayed (%s skipped), machine %s" % (
            tname, len(trace.jobs), sum(trace.skipped.values()), size))
        md += ["## %s" % tname, "",
               "%d jobs replayed, skipped: %s; machine: %s; %d slot(s) per node; boot delay %.0f s."
               % (len(trace.jobs), trace.skipped or "none", size, opts.slots_per_node, opts.boot_delay), ""]
        if overrides:
            md += ["Policy `default` with %s on top of its shipped defaults." % ", ".join(
                "`%s=%s`" % (k, json.dumps(v)) for k, v in sorted(overrides.items())), ""]
        for cap_label, cap in parse_caps(opts.cap, machine, opts.slots_per_node):
            for billing in billings:
                t = time.monotonic()
                case = run_case(trace.jobs, policies, cap, opts.slots_per_node, billing, opts.boot_delay, overrides)
                took = time.monotonic() - t
                rows = [f for _r, f in case.values()]
                figs = {p: f for p, (_r, f) in case.items()}
                title = "%s, cap %s = %d nodes, %s billing" % (tname, cap_label, cap, billing)
                reached = any(f["max_nodes"] >= cap for p, f in figs.items() if p in engine.DECIDE_POLICIES)
                print("\n%s (%.1f s)" % (title, took))
                print(table(rows, markdown=False))
                md += ["### %s" % title, "", table(rows, markdown=True), "",
                       "Simulated in %.1f s (one copy, %s)." % (took, ", ".join(policies)), ""]
                if opts.breakdown:
                    brows = breakdown_rows(case)
                    if brows:
                        print("node-hours by where they went (plain trace):")
                        print(breakdown_table(brows, markdown=False))
                        md += ["Where the node-hours went (plain trace; node-hours):", "",
                               breakdown_table(brows, markdown=True), ""]
                results = goals(figs, billing, reached if cap_label != "2x" else False)
                if results:
                    print("goals: " + "; ".join("%s: %s" % (n, "met" if ok else "MISSED") for n, ok in results))
                results21 = goals21(figs, billing, cap_label) if opts.issue21 else []
                if results21:
                    print("issue 21 goals: " + "; ".join("%s: %s" % (n, "met" if ok else "MISSED") for n, ok in results21))
                ratios = [ratio_row("plain", figs)] if opts.issue21 and "default" in figs else []
                copies_text = copies21_text = None
                if opts.copies > 0 and (results or results21):
                    held = {n: 0 for n, _ok in results}
                    held21 = {n: 0 for n, _ok in results21}
                    for c in range(opts.copies):
                        jobs = engine.shifted(trace.jobs, seed=opts.seed * 1000 + c)
                        cc = run_case(jobs, policies, cap, opts.slots_per_node, billing, opts.boot_delay, overrides)
                        cf = {p: f for p, (_r, f) in cc.items()}
                        for n, ok in goals(cf, billing, reached if cap_label != "2x" else False):
                            held[n] = held.get(n, 0) + (1 if ok else 0)
                        for n, ok in goals21(cf, billing, cap_label) if opts.issue21 else []:
                            held21[n] = held21.get(n, 0) + (1 if ok else 0)
                        if ratios:
                            ratios.append(ratio_row("seed %d" % (opts.seed * 1000 + c), cf))
                            print("copy %d: %s" % (c, "  ".join(fmt % v for v, (_n, fmt) in zip(ratios[-1], RATIO_COLUMNS))))
                    copies21_text = "; ".join("%s: %s (%d/%d)" % (
                        n, "all" if k == opts.copies else ("none" if k == 0 else "some"), k, opts.copies)
                        for n, k in held21.items()) or None
                    if copies21_text:
                        print("issue 21 goals in %d shifted copies: %s" % (opts.copies, copies21_text))
                    copies_text = "; ".join("%s: %s (%d/%d)" % (
                        n, "all" if k == opts.copies else ("none" if k == 0 else "some"), k, opts.copies)
                        for n, k in held.items())
                    print("in %d shifted copies: %s" % (opts.copies, copies_text))
                if results:
                    md += ["Goals (one copy): " + "; ".join(
                        "%s: **%s**" % (n, "met" if ok else "missed") for n, ok in results), ""]
                if copies_text:
                    md += ["In %d copies with submit times shifted by up to 60 s: %s." % (opts.copies, copies_text), ""]
                if results21:
                    md += ["Issue 21 goals (one copy): " + "; ".join(
                        "%s: **%s**" % (n, "met" if ok else "missed") for n, ok in results21), ""]
                if copies21_text:
                    md += ["Issue 21 goals in %d copies shifted by up to 60 s: %s." % (opts.copies, copies21_text), ""]
                if ratios:
                    md += ["Default against the baselines, the plain trace and each copy:", "", ratio_table(ratios), ""]
                if opts.out and not opts.no_plots:
                    stem = "%s-%s-%s" % (tname, cap_label, billing)
                    plot(case, title, os.path.join(opts.out, stem + "-timeline.png"))
                    plot_plane(case, title, os.path.join(opts.out, stem + "-plane.png"))
                    md += ["![nodes and queue](%s-timeline.png)" % stem, "",
                           "![cost vs wait](%s-plane.png)" % stem, ""]
    wall = time.monotonic() - began
    print("\nwall time: %.1f s" % wall)
    md += ["Wall time of the whole run: %.1f s." % wall, ""]
    if opts.out:
        names = [os.path.basename(t).rsplit(".", 1)[0] for t in opts.trace]
        target = os.path.join(opts.out, "%s.md" % "+".join(names))
        with open(target + ".tmp", "w") as handle:
            handle.write("\n".join(md))
        os.replace(target + ".tmp", target)
        print("wrote %s" % target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
