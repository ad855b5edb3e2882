# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Crash test of the transfer-queue starter on the real partner cell (issue 5 part 8).

N transfers, each a run of the installed starter (``/var/lib/gridengine-transfer/<queue>/starter``)
as the user ``tester`` with the environment Grid Engine gives a job (JOB_ID, SGE_TASK_ID,
JOB_NAME, SGE_STDOUT_PATH, ...), against the real partner cell of ``playbooks/multicluster.yml``.
Every starter run is killed with SIGKILL (its whole process group, qsub included, as the
shepherd would) at a random moment with probability ``--kill-prob``, up to ``--max-kills`` times
per transfer, and started again, as Grid Engine reruns a job of a ``rerun TRUE`` queue. The last
run is left to finish and its exit status must be the job script's own (``exit <i mod 7>``).

Afterwards the partner's accounting is read: each transfer must have exactly one partner job
(name prefix ``tq<job>_``), none may be left in the partner's qstat. Prints the figures; exit
status 1 if a transfer was lost, duplicated or ended with the wrong status.

    .venv/bin/python benchmarks/transfer_crash.py --transfers 200 --markdown docs/multicluster/crash.md

The local cluster must be up (playbooks/local_cluster.yml); the partner and the transfer queue
are brought up with playbooks/multicluster.yml if they are not. Job ids are 900000 + i (above
the local cell's own), so no local job is touched.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import random
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCAL = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'SGE_QMASTER_PORT': '6444',
         'SGE_EXECD_PORT': '6445', 'PATH': '/usr/bin:/bin', 'LC_ALL': 'C'}
REMOTE = dict(LOCAL, SGE_CELL='remote', SGE_QMASTER_PORT='6446', SGE_EXECD_PORT='6447')
WORK = '/tmp/gridengine-balancer-tq-crash'
JOB = '#!/bin/sh\nsleep ${SLEEP:-1}\nexit ${CODE:-0}\n'
BASE = 900000


def run(argv, env, check=True, timeout=600):
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=timeout)
    if check and proc.returncode != 0:
        raise SystemExit('%s: rc %s\n%s%s' % (' '.join(argv), proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    return proc


def ensure_partner(queue):
    if run(['qstat'], LOCAL, check=False).returncode != 0:
        raise SystemExit('the local cluster is not up: ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster')
    if os.path.exists('/var/lib/gridengine-transfer/%s/starter' % queue) and \
            run(['qstat'], REMOTE, check=False).returncode == 0:
        return
    env = dict(os.environ, SGE_ROOT=LOCAL['SGE_ROOT'], SGE_CELL='default', LC_ALL='C.UTF-8')
    run([os.path.join(ROOT, '.venv/bin/ansible-playbook'), os.path.join(ROOT, 'playbooks/multicluster.yml'),
         '-e', 'cluster=mycluster', '-e', 'transfer_queue_remote_requestable=FORCED'], env)


def transfer(i, args, rng):
    """Run one transfer to completion with crashes injected; (kills, exit status, seconds)."""
    job_id = BASE + i
    script = os.path.join(WORK, 'job_scripts', str(job_id))
    env = {'JOB_ID': str(job_id), 'SGE_TASK_ID': 'undefined', 'JOB_NAME': 'crash%d' % i, 'HOME': '/home/tester',
           'USER': 'tester', 'LOGNAME': 'tester', 'PATH': '/usr/bin:/bin', 'SGE_CELL': 'default',
           'SGE_STDOUT_PATH': os.path.join(WORK, 'out', '%d.o' % job_id), 'SGE_STDERR_PATH': os.path.join(WORK, 'out', '%d.e' % job_id),
           'SGE_CWD_PATH': WORK, 'SLEEP': str(args.sleep), 'CODE': str(i % 7)}
    argv = ['runuser', '-u', 'tester', '--', 'env', '-i'] + ['%s=%s' % kv for kv in sorted(env.items())] + \
        ['/var/lib/gridengine-transfer/%s/starter' % args.queue, script]
    kills = 0
    start = time.time()
    while True:
        proc = subprocess.Popen(argv, cwd=WORK, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, text=True)
        if kills < args.max_kills and rng.random() < args.kill_prob:
            delay = rng.uniform(0, args.kill_window)
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
        try:
            err = proc.communicate(timeout=args.timeout)[1]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            return kills, None, time.time() - start, 'timed out'
        if proc.returncode == 99:          # sent back to the local cluster: Grid Engine would rerun it
            continue
        return kills, proc.returncode, time.time() - start, err.strip()[-300:]


def partner_records(args):
    """``{local job id: [partner job ids]}`` from the partner's accounting."""
    out = run(['qacct', '-j', 'tq9*'], REMOTE, check=False).stdout
    found = {}
    for block in re.split(r'(?m)^=+\s*$', out):
        name = re.search(r'(?m)^jobname\s+(\S+)', block)
        number = re.search(r'(?m)^jobnumber\s+([0-9]+)', block)
        if name and number:
            match = re.match(r'^tq([0-9]+)_', name.group(1))
            if match and BASE <= int(match.group(1)) < BASE + args.transfers:
                found.setdefault(int(match.group(1)), []).append(number.group(1))
    return found


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n\n', maxsplit=1)[0])
    parser.add_argument('--transfers', type=int, default=200)
    parser.add_argument('--parallel', type=int, default=8)
    parser.add_argument('--kill-prob', type=float, default=0.7, help='chance that a starter run is killed')
    parser.add_argument('--max-kills', type=int, default=3, help='kills per transfer at most')
    parser.add_argument('--kill-window', type=float, default=6.0, help='a kill comes within this many seconds')
    parser.add_argument('--sleep', type=int, default=1, help='seconds each partner job sleeps')
    parser.add_argument('--timeout', type=float, default=600)
    parser.add_argument('--queue', default='transfer.q')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--markdown', help='write the figures as Markdown to this file')
    args = parser.parse_args()

    ensure_partner(args.queue)
    os.makedirs(os.path.join(WORK, 'job_scripts'), exist_ok=True)
    os.makedirs(os.path.join(WORK, 'out'), exist_ok=True)
    for path in (WORK, os.path.join(WORK, 'out')):
        os.chmod(path, 0o777)
    for i in range(args.transfers):
        path = os.path.join(WORK, 'job_scripts', str(BASE + i))
        with open(path, 'w') as handle:
            handle.write(JOB)
        os.chmod(path, 0o755)
    before = partner_records(args)
    if before:
        raise SystemExit('the partner already has accounting records of job ids %d..: use a fresh partner '
                         '(multicluster.yml -e multicluster_state=absent -e multicluster_destroy=true)' % BASE)
    t0 = time.time()
    rngs = [random.Random(args.seed * 1000003 + i) for i in range(args.transfers)]
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        results = list(pool.map(lambda i: transfer(i, args, rngs[i]), range(args.transfers)))
    elapsed = time.time() - t0
    time.sleep(3)
    records = {}
    deadline = time.time() + 120
    while time.time() < deadline:     # accounting records are written a little after a job ends
        records = partner_records(args)
        if len(records) >= args.transfers:
            break
        time.sleep(5)
    left = [j for j in re.findall(r'<JB_name>(tq9[0-9]+)_', run(['qstat', '-u', '*', '-xml'], REMOTE).stdout)
            if BASE <= int(j[2:]) < BASE + args.transfers]
    lost = [i for i in range(args.transfers) if BASE + i not in records]
    duplicated = {j: ids for j, ids in records.items() if len(ids) > 1}
    wrong = [(i, r[1], r[3]) for i, r in enumerate(results) if r[1] != i % 7]
    kills = sum(r[0] for r in results)
    leftovers = sorted(os.listdir('/var/lib/gridengine-transfer/%s/jobs' % args.queue))
    rows = [
        ('transfers', args.transfers), ('starter runs killed (SIGKILL of the process group)', kills),
        ('transfers with at least one kill', sum(1 for r in results if r[0])),
        ('lost (no partner job)', len(lost)), ('duplicated (more than one partner job)', len(duplicated)),
        ('wrong exit status', len(wrong)), ('partner jobs left in qstat', len(left)),
        ('files left in jobs/ (records, temp files)', len(leftovers)),
        ('wall time (s)', '%.0f' % elapsed),
        ('mean / max seconds per transfer', '%.1f / %.1f' % (sum(r[2] for r in results) / len(results), max(r[2] for r in results))),
    ]
    for name, value in rows:
        print('%-48s %s' % (name, value))
    for item in wrong[:5]:
        print('wrong:', item)
    if lost:
        print('lost:', lost[:10])
    if duplicated:
        print('duplicated:', sorted(duplicated.items())[:10])
    if args.markdown:
        with open(args.markdown, 'w') as handle:
            handle.write('# Transfer starter crash test\n\n`%s`\n\n' % ' '.join(['benchmarks/transfer_crash.py'] + sys.argv[1:]))
            handle.write('Run on %s: %d parallel starters, kill probability %.2f per run, at most %d kills per transfer, '
                         'kills within %.1f s of a start, seed %d.\n\n| figure | value |\n|---|---|\n'
                         % (time.strftime('%Y-%m-%d'), args.parallel, args.kill_prob, args.max_kills, args.kill_window, args.seed))
            for name, value in rows:
                handle.write('| %s | %s |\n' % (name, value))
    return 1 if lost or duplicated or wrong else 0


if __name__ == '__main__':
    sys.exit(main())
