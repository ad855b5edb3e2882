# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the controller's resident memory rose in a chaos/soak run: in steps or along a slope.

Reads the samples.csv of ``benchmarks/chaos_real.py`` (seconds, controller_rss_kib, drains, ...)
and prints every step up of at least ``--step`` MiB between two samples, what the run had done by
then (scale-down events, nodes removed), how often memory fell, and the share of the total rise
that came in those steps. A leak that grows with the work grows along a slope, a little with every
drain; a heap whose resident size is the highest peak so far (CPython's allocator gives freed
memory back to the system only rarely) rises in a few steps and stays level between them.

  python3 benchmarks/rss_steps.py docs/reliability/chaos-real-runs/run3-samples.csv
"""

from __future__ import annotations

import argparse
import csv
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n\n', maxsplit=1)[0])
    parser.add_argument('samples', help="chaos_real.py's samples.csv")
    parser.add_argument('--step', type=float, default=0.5, help='smallest rise between two samples shown, MiB')
    args = parser.parse_args(argv)
    with open(args.samples, newline='') as handle:
        # (a sample of 0 was taken after the controller had ended)
        rows = [r for r in csv.DictReader(handle) if r.get('controller_rss_kib') not in (None, '', '0')]
    if len(rows) < 3:
        print('%s: fewer than 3 samples' % args.samples, file=sys.stderr)
        return 2
    # from the second sample: the first is taken before ansible-playbook has loaded anything
    rss = [int(r['controller_rss_kib']) / 1024.0 for r in rows[1:]]
    times = [float(r['seconds']) / 60.0 for r in rows[1:]]
    steps, falls, in_steps = [], 0, 0.0
    for i in range(1, len(rss)):
        delta = rss[i] - rss[i - 1]
        if delta >= args.step:
            steps.append(i)
            in_steps += delta
        elif delta < 0:
            falls += 1
    total = rss[-1] - rss[0]
    print('%d samples over %.1f min; RSS %.1f -> %.1f MiB (+%.1f)' % (len(rss), times[-1], rss[0], rss[-1], total))
    print('steps of >= %.1f MiB between two samples:' % args.step)
    for i in steps:
        row = rows[i + 1]
        print('  %5.1f min  %6.1f -> %6.1f MiB  (scale-downs so far %s, nodes removed %s)' % (
            times[i], rss[i - 1], rss[i], row.get('drains', '?'), row.get('removed', '?')))
    print('%.1f of the +%.1f MiB came in those %d steps; RSS fell in %d of %d intervals' % (
        in_steps, total, len(steps), falls, len(rss) - 1))
    last = steps[-1] if steps else 0
    print('after the last step (%.1f min): %.1f -> %.1f MiB over %.1f min, scale-downs %s -> %s' % (
        times[last], rss[last], rss[-1], times[-1] - times[last], rows[last + 1].get('drains', '?'),
        rows[-1].get('drains', '?')))
    return 0


if __name__ == '__main__':
    sys.exit(main())
