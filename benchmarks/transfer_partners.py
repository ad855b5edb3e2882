# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two real partner clusters behind one transfer queue: the broker's routing, measured.

Brings up (playbooks/multicluster.yml) the partner cells ``remote`` (partner01) and ``remote2``
(partner02, qmaster port 6448) and a transfer queue routing among them, then:

A. both partners idle: N jobs go through the transfer queue; they should be spread over both;
B. ``remote2`` made busy (jobs of its own pending beyond the queue's threshold): N more jobs; the
   broker must leave ``remote2`` out and send every one to ``remote``.

Counts come from each partner's accounting (partner jobs are named ``tq<local job>_``); the
broker's distribution and exclusions from the sensor's status.json. Tears the partners down at
the end. Exit status 1 if phase A used one partner only or phase B sent a job to the busy one.

    .venv/bin/python benchmarks/transfer_partners.py --jobs 8 --markdown docs/multicluster/partners.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCAL = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'SGE_QMASTER_PORT': '6444',
         'SGE_EXECD_PORT': '6445', 'PATH': '/usr/bin:/bin', 'LC_ALL': 'C'}
CELLS = {'remote': dict(LOCAL, SGE_CELL='remote', SGE_QMASTER_PORT='6446', SGE_EXECD_PORT='6447'),
         'remote2': dict(LOCAL, SGE_CELL='remote2', SGE_QMASTER_PORT='6448', SGE_EXECD_PORT='6449')}
EXTRA = [{'cell': 'remote2', 'qmaster_port': 6448, 'execd_port': 6449, 'node': 'partner02',
          'address': '10.77.0.32', 'gid_range': '65100-65199', 'slots': 3}]
WORK = '/tmp/gridengine-balancer-tq-partners'
STATUS = '/var/lib/gridengine-transfer/transfer.q/status.json'
JOB = '#!/bin/sh\nsleep ${SLEEP:-3}\nexit 0\n'


def run(argv, env, check=True):
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=900)
    if check and proc.returncode != 0:
        raise SystemExit('%s: rc %s\n%s%s' % (' '.join(argv), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def play(*extra):
    env = dict(os.environ, SGE_ROOT=LOCAL['SGE_ROOT'], SGE_CELL='default', LC_ALL='C.UTF-8')
    run([os.path.join(ROOT, '.venv/bin/ansible-playbook'), os.path.join(ROOT, 'playbooks/multicluster.yml'),
         '-e', 'cluster=mycluster', '-e', json.dumps({'multicluster_extra_partners': EXTRA})] + list(extra), env)


def qsub(env, *args):
    argv = ['runuser', '-u', 'tester', '--', 'env'] + ['%s=%s' % kv for kv in env.items()] + \
        ['/usr/bin/qsub', '-terse', '-o', WORK, '-e', WORK] + list(args)
    return run(argv, None).stdout.strip().split('.')[0]


def status():
    with open(STATUS) as handle:
        return json.load(handle)


def wait_for(what, func, timeout=300, step=2.0):
    deadline = time.time() + timeout
    while True:
        value = func()
        if value:
            return value
        if time.time() > deadline:
            raise SystemExit('timed out waiting for %s' % what)
        time.sleep(step)


def where(jobs):
    """``{local job: partner cell}`` from the partners' accounting, for the jobs that have a record."""
    out = {}
    for cell, env in CELLS.items():
        text = run(['qacct', '-j', 'tq*'], env, check=False).stdout
        for name in re.findall(r'(?m)^jobname\s+tq([0-9]+)_', text):
            if name in jobs:
                out[name] = cell
    return out


def phase(label, count, args):
    route = status().get('route', {})
    jobs = [qsub(LOCAL, '-q', 'transfer.q', '-l', 'remote=true', '-N', 'route', '-v', 'SLEEP=%d' % args.sleep,
                 os.path.join(WORK, 'job.sh')) for dummy in range(count)]

    def all_placed():
        placed = where(jobs)
        return placed if len(placed) == len(jobs) else None

    placed = wait_for('the %s jobs in the partners\' accounting' % label, all_placed, timeout=120 + 30 * count)
    counts = {cell: sum(1 for c in placed.values() if c == cell) for cell in CELLS}
    print('%s: %s; broker distribution %s, left out %s' % (
        label, counts, {k: round(v, 3) for k, v in route.get('distribution', {}).items()}, route.get('excluded', {})))
    return counts, route


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n\n', maxsplit=1)[0])
    parser.add_argument('--jobs', type=int, default=8, help='jobs per phase')
    parser.add_argument('--sleep', type=int, default=3)
    parser.add_argument('--markdown')
    parser.add_argument('--keep', action='store_true', help='leave the partners up at the end')
    args = parser.parse_args()
    if run(['qstat'], LOCAL, check=False).returncode != 0:
        raise SystemExit('the local cluster is not up: ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster')
    os.makedirs(WORK, exist_ok=True)
    os.chmod(WORK, 0o777)
    with open(os.path.join(WORK, 'job.sh'), 'w') as handle:
        handle.write(JOB)
    os.chmod(os.path.join(WORK, 'job.sh'), 0o755)
    t0 = time.time()
    play('-e', 'transfer_queue_remote_requestable=FORCED', '-e', 'transfer_queue_local_free_complex=',
         '-e', 'transfer_queue_slots=4', '-e', 'transfer_queue_pending_threshold=2',
         '-e', 'transfer_queue_bulk_poll_interval=5', '-e', 'transfer_queue_poll_interval=2')
    setup = time.time() - t0
    wait_for('both partners in status.json', lambda: all(
        p.get('reachable') for p in status()['partners'].values()) and len(status()['partners']) == 2, timeout=120)
    rows = []
    try:
        counts_a, route_a = phase('A, both idle', args.jobs, args)
        rows.append(('A, both partners idle', counts_a, route_a))
        busy = [qsub(CELLS['remote2'], '-N', 'busy', '-v', 'SLEEP=300', os.path.join(WORK, 'job.sh')) for dummy in range(6)]
        wait_for('remote2 left out by the broker', lambda: 'remote2' in status().get('route', {}).get('excluded', {}), timeout=60)
        counts_b, route_b = phase('B, remote2 busy', args.jobs, args)
        rows.append(('B, remote2 busy (6 jobs of its own, 3 slots)', counts_b, route_b))
        run(['qdel'] + busy, CELLS['remote2'], check=False)
    finally:
        if not args.keep:
            play('-e', 'multicluster_state=absent', '-e', 'multicluster_destroy=true')
    ok = min(counts_a.values()) > 0 and counts_b['remote2'] == 0 and counts_b['remote'] == args.jobs
    if args.markdown:
        with open(args.markdown, 'w') as handle:
            command = ' '.join(['benchmarks/transfer_partners.py'] + sys.argv[1:])
            handle.write('# Two partner clusters behind one transfer queue\n\n`%s` on %s: partners set up in %.0f s, '
                         'whole run %.0f s.\n\n' % (command, time.strftime('%Y-%m-%d'), setup, time.time() - t0))
            handle.write('| phase | jobs to remote | jobs to remote2 | broker distribution at submission | left out |\n'
                         '|---|---|---|---|---|\n')
            for label, counts, route in rows:
                handle.write('| %s | %d | %d | %s | %s |\n' % (
                    label, counts['remote'], counts['remote2'],
                    ', '.join('%s %.1f%%' % (k, 100 * v) for k, v in sorted(route.get('distribution', {}).items())),
                    '; '.join('%s: %s' % kv for kv in sorted(route.get('excluded', {}).items())) or '-'))
    print('result:', 'as expected' if ok else 'NOT as expected')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
