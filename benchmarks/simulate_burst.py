"""Burst simulator CLI: cloud node-hours bought and job wait saved by bursting to an elastic partner.

Replays SWF traces on two cells (plugins/plugin_utils/sim/burst.py): a home cell fixed at a
fraction of the trace machine's size and an elastic partner (profile ``default``, zero workers at
the start) fed by the cost-aware router (plugins/plugin_utils/policy/burst.py). Compares with the
home cell alone and with a static cloud extension of the burst run's peak size. Prints a table
per trace, writes ``<out>/burst.md`` and ``<out>/burst.png`` (a CSV instead when matplotlib is
missing). From the repository:

    .venv/bin/python -m benchmarks.simulate_burst \\
        --trace ../shared/data/traces/KTH-SP2-1996-2.1-cln.swf \\
        --trace ../shared/data/traces/NASA-iPSC-1993-3.1-cln.swf \\
        --trace ../shared/data/traces/lublin_256.swf --slots-per-node 1,1,8 --out docs/sim
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import burst, engine, swf  # noqa: E402

SCENARIOS = ("home_alone", "static_extension", "burst", "burst_wait_only")


def run_trace(jobs, home, cap, spn, opts):
    """{scenario: (result, figures)} for one trace (or one shifted copy)."""
    out = {}
    res = burst.fixed_cell(jobs, home, spn, kind="home_alone")
    out["home_alone"] = (res, burst.summarize(res))
    route = {"wait": opts.wait, "margin": opts.margin, "boot_delay": opts.boot_delay}
    res = burst.simulate(jobs, home, cap, spn, boot_delay=opts.boot_delay, billing=opts.billing,
                         route_config=route, timeline=True)
    out["burst"] = (res, burst.summarize(res))
    if not opts.no_wait_only:
        res = burst.simulate(jobs, home, cap, spn, boot_delay=opts.boot_delay, billing=opts.billing,
                             route_config=dict(route, cost_aware=False))
        out["burst_wait_only"] = (res, burst.summarize(res))
    peak = out["burst"][1]["max_cloud_nodes"]
    res = burst.fixed_cell(jobs, home, spn, extra=peak, kind="static_extension")
    out["static_extension"] = (res, burst.summarize(res))
    return {k: out[k] for k in SCENARIOS if k in out}


def table(figs, markdown):
    head = ["scenario", "cloud node-h", "cost per-second", "cost hourly", "peak cloud nodes", "launches",
            "jobs to partner", "mean wait s", "p95 wait s", "mean saved s", "p95 saved s"]
    base = figs["home_alone"]
    rows = []
    for name, f in figs.items():
        rows.append([name, "%.0f" % f["cloud_node_hours"], "%.0f" % f["cloud_cost_per_second"],
                     "%.0f" % f["cloud_cost_hourly"], "%d" % f["max_cloud_nodes"], "%d" % f["launches"],
                     "%d" % f["sent"], "%.0f" % f["wait_mean"], "%.0f" % f["wait_p95"],
                     "%.0f" % (base["wait_mean"] - f["wait_mean"]), "%.0f" % (base["wait_p95"] - f["wait_p95"])])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines.extend("| " + " | ".join(r) + " |" for r in rows)
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines.extend("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows)
    return "\n".join(lines)


def versus(figs):
    """One line: the burst run against the static extension of its peak size."""
    b, s = figs["burst"], figs["static_extension"]
    share = 100.0 * b["cloud_node_hours"] / s["cloud_node_hours"] if s["cloud_node_hours"] else float("nan")
    return ("burst buys %.1f %% of the static extension's cloud node-hours (%.0f of %.0f) for a mean wait "
            "%.0f s longer and a p95 %.0f s longer" % (share, b["cloud_node_hours"], s["cloud_node_hours"],
                                                       b["wait_mean"] - s["wait_mean"], b["wait_p95"] - s["wait_p95"]))


def plot(cases, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(cases), 2, figsize=(12, 3.6 * len(cases)), squeeze=False)
    for row, (name, case) in enumerate(cases):
        res = case["burst"][0]
        t0 = res.start
        xs = [(p[0] - t0) / 86400.0 for p in res.timeline]
        ax = axes[row][0]
        ax.step(xs, [p[1] for p in res.timeline], where="post", linewidth=0.6, label="cloud nodes billed")
        ax.set_ylabel("cloud nodes")
        ax.set_xlabel("days since the first submit")
        ax.set_title("%s: partner nodes (burst)" % name, fontsize=9)
        ax2 = ax.twinx()
        ax2.step(xs, [p[2] for p in res.timeline], where="post", linewidth=0.5, color="tab:red", alpha=0.6)
        ax2.set_ylabel("home jobs waiting", color="tab:red")
        ax = axes[row][1]
        for scen, (_r, f) in case.items():
            ax.scatter([f["cloud_node_hours"]], [f["wait_mean"]], s=40)
            ax.annotate(scen, (f["cloud_node_hours"], f["wait_mean"]), fontsize=8, xytext=(4, 4),
                        textcoords="offset points")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlabel("cloud node-hours bought")
        ax.set_ylabel("mean wait (s)")
        ax.set_title("%s: cloud cost vs mean wait" % name, fontsize=9)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=80)
    plt.close(fig)
    os.replace(tmp, path)


def write_csv(cases, path):
    keys = ["cloud_node_hours", "cloud_cost_per_second", "cloud_cost_hourly", "max_cloud_nodes", "launches",
            "sent", "wait_mean", "wait_median", "wait_p95", "jobs", "left_out"]
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write("trace,scenario," + ",".join(keys) + "\n")
        for name, case in cases:
            for scen, (_r, f) in case.items():
                fh.write("%s,%s,%s\n" % (name, scen, ",".join(str(f[k]) for k in keys)))
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", required=True, action="append", help="SWF file (repeatable)")
    parser.add_argument("--slots-per-node", default="1",
                        help="slots per node: one number, or one per --trace, comma-separated")
    parser.add_argument("--home-fraction", type=float, default=0.5,
                        help="home nodes = this fraction of the machine's nodes (MaxProcs / slots per node)")
    parser.add_argument("--partner-cap", default="1x",
                        help="partner's most worker nodes: a number, or Nx of the home cell's nodes")
    parser.add_argument("--wait", type=float, default=300.0, help="s a job waits at home before it may leave")
    parser.add_argument("--margin", type=float, default=120.0, help="s the expected home wait must exceed boot by")
    parser.add_argument("--boot-delay", type=float, default=120.0)
    parser.add_argument("--billing", default="per_second", choices=engine.BILLING,
                        help="the partner balancer's billing mode (both costs are printed either way)")
    parser.add_argument("--copies", type=int, default=0,
                        help="also run the burst and both baselines on N copies shifted by uniform(0, 60) s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-wait-only", action="store_true", help="leave out the wait-only router")
    parser.add_argument("--out", default=None, help="directory for <name>.md and <name>.png (or <name>.csv)")
    parser.add_argument("--name", default="burst", help="file name stem in --out (default burst)")
    parser.add_argument("--no-plots", action="store_true")
    opts = parser.parse_args(argv)
    if not opts.name.replace("-", "").replace("_", "").isalnum():
        parser.error("--name: letters, digits, - and _ only, got %r" % opts.name)
    spns = [s.strip() for s in opts.slots_per_node.split(",")]
    if len(spns) == 1:
        spns = spns * len(opts.trace)
    if len(spns) != len(opts.trace):
        parser.error("--slots-per-node: give one number or one per --trace (%d)" % len(opts.trace))
    try:
        spns = [int(s) for s in spns]
    except ValueError:
        parser.error("--slots-per-node: whole numbers, got %r" % opts.slots_per_node)
    if any(s < 1 for s in spns):
        parser.error("--slots-per-node: must be >= 1")
    if not 0 < opts.home_fraction <= 1:
        parser.error("--home-fraction: must be in (0, 1]")
    for name in ("wait", "margin", "boot_delay"):
        if getattr(opts, name) < 0:
            parser.error("--%s: must be >= 0 seconds" % name.replace("_", "-"))
    began = time.monotonic()
    command = ".venv/bin/python -m benchmarks.simulate_burst %s" % " ".join(
        argv if argv is not None else sys.argv[1:])
    md = ["# Burst simulator results", "",
          "Written by benchmarks/simulate_burst.py; see docs/burst.md for the model.", "",
          "Command: `%s`" % command, ""]
    cases = []
    for path, spn in zip(opts.trace, spns):
        try:
            trace = swf.load(path)
            machine = trace.machine_procs()
        except (OSError, swf.SwfError) as err:
            raise SystemExit("--trace: %s" % err)
        tname = os.path.basename(path).rsplit(".", 1)[0]
        home = max(1, int(machine // spn * opts.home_fraction))
        cap_text = opts.partner_cap.strip()
        try:
            cap = int(round(float(cap_text[:-1]) * home)) if cap_text.endswith("x") else int(cap_text)
        except ValueError:
            parser.error("--partner-cap: a number of nodes or Nx, got %r" % opts.partner_cap)
        if cap < 1:
            parser.error("--partner-cap: must be at least one node")
        t = time.monotonic()
        case = run_trace(trace.jobs, home, cap, spn, opts)
        took = time.monotonic() - t
        figs = {k: f for k, (_r, f) in case.items()}
        head = ("%s: %d jobs replayed, machine %d processors = %d nodes of %d slots; home %d nodes "
                "(%.2f of the machine), partner cap %d nodes; %d jobs wider than home left out; "
                "wait %.0f s, margin %.0f s, boot delay %.0f s, partner billing %s" % (
                    tname, len(trace.jobs), machine, machine // spn, spn, home, opts.home_fraction, cap,
                    figs["home_alone"]["left_out"], opts.wait, opts.margin, opts.boot_delay, opts.billing))
        print("\n" + head + " (%.1f s)" % took)
        print(table(figs, markdown=False))
        print(versus(figs))
        kept = ("cost rule (burst): %d jobs kept at home at least once for an expected wait <= boot delay + "
                "margin, %d of them sent later" % (figs["burst"]["kept_by_cost"], figs["burst"]["kept_then_sent"]))
        print(kept)
        print("partner decide calls %d, broker calls %d" % (figs["burst"]["decide_calls"], figs["burst"]["route_calls"]))
        md += ["## %s" % tname, "", head + ".", "", table(figs, markdown=True), "", versus(figs) + ".", "",
               kept[0].upper() + kept[1:] + ".", "",
               "Partner `decide` calls %d, broker calls %d; simulated in %.1f s." % (
                   figs["burst"]["decide_calls"], figs["burst"]["route_calls"], took), ""]
        if opts.copies > 0:
            rows = ["| copy (seed) | burst cloud node-h | static cloud node-h | burst / static | "
                    "mean wait s: home alone / burst / static | p95 wait s: home alone / burst / static |",
                    "|---|---|---|---|---|---|"]
            print("shifted copies:")
            for c in range(opts.copies):
                seed = opts.seed * 1000 + c
                cc = run_trace(engine.shifted(trace.jobs, seed=seed), home, cap, spn, opts)
                f = {k: v for k, (_r, v) in cc.items()}
                b, s, h = f["burst"], f["static_extension"], f["home_alone"]
                row = "| %d | %.0f | %.0f | %.3f | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |" % (
                    seed, b["cloud_node_hours"], s["cloud_node_hours"],
                    b["cloud_node_hours"] / s["cloud_node_hours"] if s["cloud_node_hours"] else float("nan"),
                    h["wait_mean"], b["wait_mean"], s["wait_mean"], h["wait_p95"], b["wait_p95"], s["wait_p95"])
                print(row)
                rows.append(row)
            md += ["Shifted copies (submit times + uniform(0, 60) s):", ""] + rows + [""]
        cases.append((tname, case))
    if opts.out:
        os.makedirs(opts.out, exist_ok=True)
        artefact = None
        if not opts.no_plots:
            try:
                import matplotlib  # noqa: F401  # pylint: disable=unused-import
            except ImportError:
                artefact = os.path.join(opts.out, opts.name + ".csv")
                write_csv(cases, artefact)
            else:
                artefact = os.path.join(opts.out, opts.name + ".png")
                plot(cases, artefact)
        if artefact:
            md += ["Plot: [%s](%s)." % (os.path.basename(artefact), os.path.basename(artefact)), ""]
        target = os.path.join(opts.out, opts.name + ".md")
        tmp = target + ".tmp"
        with open(tmp, "w") as fh:
            fh.write("\n".join(md))
        os.replace(tmp, target)
        print("\nwrote %s%s" % (target, " and " + artefact if artefact else ""))
    print("total %.1f s" % (time.monotonic() - began))


if __name__ == "__main__":
    main()
