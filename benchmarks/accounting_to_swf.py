"""Convert Grid Engine's accounting to Standard Workload Format (SWF) for the trace simulator.

Reads the raw accounting file (``$SGE_ROOT/<cell>/common/accounting``) or saved ``qacct -j``
output (told apart by the first record, or ``--format``), writes one SWF job per job or array
task (plugins/plugin_utils/sim/accounting.py has the mapping), and prints what it merged, split
and left out.  From the repository:

    .venv/bin/python -m benchmarks.accounting_to_swf $SGE_ROOT/default/common/accounting \\
        --nodes 16 --slots-per-node 8 -o site.swf

``--nodes``/``--slots-per-node`` write ``MaxNodes``/``MaxProcs`` header lines: the accounting
does not record the cluster's size, and the simulator needs it.
"""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import accounting  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="the accounting file, or a file holding qacct -j output")
    parser.add_argument("-o", "--output", required=True, help="the SWF file to write ('-': standard output)")
    parser.add_argument("--format", choices=("auto", "raw", "qacct"), default="auto")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip malformed records (counted, first line numbers printed) instead of stopping")
    parser.add_argument("--nodes", type=int, default=None, help="execution hosts of the cluster (MaxNodes)")
    parser.add_argument("--slots-per-node", type=int, default=None, help="slots per host (MaxProcs = nodes x this)")
    opts = parser.parse_args(argv)
    if opts.nodes is not None and opts.nodes < 1:
        parser.error("--nodes: must be >= 1")
    if opts.slots_per_node is not None and (opts.slots_per_node < 1 or not opts.nodes):
        parser.error("--slots-per-node: must be >= 1 and comes with --nodes")
    try:
        conv = accounting.load(opts.input, fmt=opts.format, skip_bad=opts.skip_bad, nodes=opts.nodes,
                               slots_per_node=opts.slots_per_node)
    except (OSError, accounting.AccountingError) as err:
        raise SystemExit("%s" % err)
    text = "\n".join(conv.lines) + "\n"
    if opts.output == "-":
        sys.stdout.write(text)
        out = sys.stderr
    else:
        tmp = opts.output + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text)
        os.replace(tmp, opts.output)
        out = sys.stdout
    out.write("%s: %d SWF jobs written to %s\n" % (opts.input, conv.jobs, opts.output))
    for reason, count in sorted(conv.left_out.items()):
        out.write("  left out %d records: %s\n" % (count, reason))
    if conv.merged:
        out.write("  merged %d parallel sub-task records into their job\n" % conv.merged)
    if conv.attempts:
        out.write("  %d extra attempts of rescheduled jobs written as jobs of their own\n" % conv.attempts)
    for problem, count in sorted(conv.bad.items()):
        out.write("  skipped %d malformed records: %s\n" % (count, problem))
    if conv.bad_lines:
        out.write("  malformed records at lines: %s\n" % ", ".join(str(n) for n in conv.bad_lines))
    if not opts.nodes:
        out.write("  no MaxNodes/MaxProcs header written: replaying needs --nodes N --slots-per-node S\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
