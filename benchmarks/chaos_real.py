# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Chaos and soak on the real local cluster (issue 7, parts 3 and 8).

One controller runs ``playbooks/loadbalance.yml -e continuous=true`` (the balancer's own
continuous mode: one ansible-playbook process whose gridengine.balancer.poll_loop runs each poll
as a new ansible-playbook process; before 2026-11-27 the polls ran inside it) against the local cluster while real jobs arrive
at random: bursts that make the cluster grow, a trickle of short jobs, and jobs submitted the
moment a drain starts (when node_leave's "Disable the node's queue instances" task starts, so
they are pending in the very second before the disable). With ``idle_time=0`` every node idle
at a poll is drained at once, which makes scale-down events as frequent as the nodes' join time
allows. Every job exits with its own status (0-7, chosen at random); at the end each job's
accounting record must say failed 0 and that status. Nothing else counts as success.

The soak half samples the controller (the ansible-playbook process: resident memory and open
files; and its whole process tree, the running poll's processes included) every ``--sample``
seconds; the loop's own line after each poll gives that poll's peak.

At the end the workload stops, the balancer shrinks the cluster to ``min_nodes``, the
controller is stopped between polls (after a poll gave its lock back), and every node the run touched must be
either fully joined or gone everywhere (Grid Engine, /etc/hosts, /etc/exports, namespace,
inventory; benchmarks/fault_inject.py's check), with an empty journal.

Usage (as root, the local cluster up, nothing else using it):
  .venv/bin/python benchmarks/chaos_real.py --minutes 60 --scale-downs 200 \
      --markdown docs/reliability/chaos-real-results.md --plot docs/reliability/chaos-real.png
The run stops at --minutes, or earlier once both --scale-downs and --soak-minutes are reached.
Afterwards `ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster
-e local_cluster_nodes=2` gives the tests their two nodes back.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_inject import ENV, ROOT, view, verdict  # noqa: E402 pylint: disable=wrong-import-position

CALLBACKS = os.path.join(ROOT, 'benchmarks', 'chaos_callback')
JOB_USER = 'tester'
DISABLE_TASK = "Disable the node's queue instances (no new job starts there)"


def sh(argv, timeout=120):
    proc = subprocess.run(argv, env=ENV, capture_output=True, text=True, check=False, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


class Workload(object):
    """Real jobs as the job user; each exits with its own status."""

    def __init__(self, rng, workdir):
        self.rng = rng
        self.lock = threading.Lock()
        self.jobs = {}  # id -> expected exit status
        self.kinds = {}  # id -> 'burst' | 'trickle' | 'at-drain'
        self.errors = []
        self.script = os.path.join(workdir, 'job.sh')
        with open(self.script, 'w') as handle:
            handle.write('#!/bin/sh\nsleep "$1"\nexit "$2"\n')
        os.chmod(self.script, 0o755)
        os.chmod(workdir, 0o755)

    def submit(self, seconds, kind):
        status = self.rng.randint(0, 7)
        command = 'qsub -terse -N chaos -o /dev/null -e /dev/null %s %d %d' % (self.script, seconds, status)
        proc = subprocess.run(['su', '-', JOB_USER, '-c', command], env=ENV, capture_output=True,
                              text=True, check=False, timeout=60)
        if proc.returncode != 0 or not proc.stdout.strip().isdigit():
            self.errors.append('qsub: rc %d %s' % (proc.returncode, proc.stderr.strip()[:200]))
            return
        with self.lock:
            job = int(proc.stdout.strip())
            self.jobs[job] = status
            self.kinds[job] = kind

    def active(self):
        rc, out, _err = sh(['qstat', '-u', JOB_USER])
        if rc != 0:
            return None
        live = set()
        for line in out.splitlines()[2:]:
            fields = line.split()
            if fields and fields[0].isdigit():
                live.add(int(fields[0]))
        with self.lock:
            return live & set(self.jobs)

    def outcomes(self):
        """{job: (failed, exit_status)} from one full qacct listing (the newest record per job)."""
        rc, out, err = sh(['qacct', '-j', 'chaos'], timeout=600)
        if rc != 0:
            raise RuntimeError('qacct: %s' % err)
        found = {}
        for block in out.split('=' * 62):
            fields = {}
            for line in block.splitlines():
                parts = line.split(None, 1)
                if len(parts) == 2:
                    fields[parts[0]] = parts[1].strip()
            if fields.get('jobnumber', '').isdigit():
                found[int(fields['jobnumber'])] = (fields.get('failed', '?').split()[0],
                                                   fields.get('exit_status', '?').split()[0])
        return found


def tree_pids(pid):
    """pid and all its descendants (from /proc)."""
    children = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                ppid = int(handle.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def rss_kib(pid):
    try:
        with open('/proc/%d/status' % pid) as handle:
            for line in handle:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def open_files(pid):
    try:
        return len(os.listdir('/proc/%d/fd' % pid))
    except OSError:
        return 0


def exec_hosts():
    rc, out, _err = sh(['qconf', '-sel'])
    return sorted(out.split()) if rc == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--cluster', default='mycluster')
    parser.add_argument('--minutes', type=float, default=60, help='hard stop of the workload phase')
    parser.add_argument('--soak-minutes', type=float, default=30, help='run at least this long')
    parser.add_argument('--scale-downs', type=int, default=200, help='stop once this many drains started (and soak done)')
    parser.add_argument('--max-nodes', type=int, default=4, help='hosts including the master')
    parser.add_argument('--min-nodes', type=int, default=1)
    parser.add_argument('--interval', type=int, default=5)
    parser.add_argument('--settle', type=int, default=2, help='drain_settle_time')
    parser.add_argument('--sample', type=float, default=10)
    parser.add_argument('--seed', type=int, default=20261125)
    parser.add_argument('--workdir', default=None)
    parser.add_argument('--markdown', default=None)
    parser.add_argument('--plot', default=None)
    parser.add_argument('--render', metavar='WORKDIR', default=None,
                        help="write --markdown/--plot again from a finished run's report.json and samples.csv")
    args = parser.parse_args()
    if args.render:
        return render(args)

    if os.geteuid() != 0:
        sys.exit('chaos_real.py: run as root (it submits jobs as %s and drives the local cluster)' % JOB_USER)
    rng = random.Random(args.seed)
    workdir = args.workdir or tempfile.mkdtemp(prefix='geb-chaos-')
    os.makedirs(workdir, exist_ok=True)
    events_path = os.path.join(workdir, 'events.jsonl')
    log_path = os.path.join(workdir, 'controller.log')
    samples_path = os.path.join(workdir, 'samples.csv')
    print('chaos_real: workdir %s' % workdir, flush=True)
    start_hosts = exec_hosts()
    if start_hosts is None:
        sys.exit('chaos_real.py: qconf -sel failed: is the local cluster up?')

    start_addresses = {}
    with open('/etc/hosts') as handle:
        for line in handle:
            fields = line.split('#', 1)[0].split()
            for name in fields[1:]:
                if name in start_hosts and len(fields) >= 2:
                    start_addresses[name] = fields[0]
    start_addresses.pop(os.uname()[1], None)  # the master is never removed
    work = Workload(rng, workdir)
    extra = ['-e', 'cluster=%s' % args.cluster, '-e', 'continuous=true', '-e', 'max_polls=1440',
             '-e', 'interval=%d' % args.interval, '-e', 'max_nodes=%d' % args.max_nodes,
             '-e', 'min_nodes=%d' % args.min_nodes, '-e', 'add_nodes_per_iter=%d' % (args.max_nodes - 1),
             '-e', 'job_wait_time=5', '-e', 'stabilization_time=0', '-e', 'idle_time=0',
             '-e', 'drain_settle_time=%d' % args.settle,
             '-e', 'state_path=%s/state.json' % workdir, '-e', 'journal_path=%s/journal.json' % workdir,
             '-e', 'lock_path=%s/lock.json' % workdir]
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, ANSIBLE_CALLBACKS_ENABLED='chaos_events',
               GEB_CHAOS_EVENTS=events_path, LC_ALL='C.UTF-8')
    open(events_path, 'w').close()
    log = open(log_path, 'w')
    t0 = time.time()
    controller = subprocess.Popen([os.path.join(ROOT, '.venv/bin/ansible-playbook'),
                                   os.path.join(ROOT, 'playbooks', 'loadbalance.yml')] + extra,
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    stop_work = threading.Event()
    stop_all = threading.Event()
    counts = {'drains': 0, 'removed': 0, 'kept': {}, 'joins': 0, 'failed': [], 'plans': 0, 'at_drain_jobs': 0}
    last_task = {'name': ''}

    def follow_events():
        with open(events_path) as handle:
            while not stop_all.is_set():
                line = handle.readline()
                if not line:
                    time.sleep(0.1)
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    time.sleep(0.05)
                    continue
                kind = event.get('ev')
                if kind == 'task':
                    last_task['name'] = event['name']
                    # role tasks are named "<role> : <task>"
                    if event['name'].endswith(DISABLE_TASK) and not stop_work.is_set():
                        # a job pending in the last second before the drain disables the node
                        for _job in range(rng.choice([1, 2])):
                            threading.Thread(target=work.submit, args=(rng.choice([1, 2, 3]), 'at-drain')).start()
                            counts['at_drain_jobs'] += 1
                elif kind == 'leave':
                    counts['drains'] += 1
                    result = event['result']
                    if result.get('removed'):
                        counts['removed'] += 1
                    else:
                        reason = re.sub(r'job \d+', 'job N', re.sub(r'node\d+', 'nodeN', str(result.get('reason'))))
                        counts['kept'][reason] = counts['kept'].get(reason, 0) + 1
                elif kind == 'join':
                    counts['joins'] += 1
                elif kind == 'plan':
                    counts['plans'] += 1
                elif kind in ('failed', 'unreachable'):
                    counts['failed'].append(event)

    def submitter():
        # a burst now and then makes the queue wait, and the cluster grow; in between a trickle of
        # short jobs at random times leaves nodes idle (drains) and lands on nodes being drained
        while not stop_work.is_set():
            if rng.random() < 0.06:
                for _job in range(rng.randint(3, 8)):
                    work.submit(rng.randint(5, 25), 'burst')
            else:
                work.submit(rng.randint(1, 4), 'trickle')
            stop_work.wait(rng.expovariate(1 / 6.0))

    samples = []

    def sampler():
        with open(samples_path, 'w', newline='') as handle:
            writer = csv.writer(handle, lineterminator='\n')
            writer.writerow(['seconds', 'controller_rss_kib', 'controller_open_files', 'tree_rss_kib',
                             'tree_processes', 'exec_hosts', 'jobs_active', 'drains', 'removed'])
            while not stop_all.is_set():
                pids = tree_pids(controller.pid)
                hosts = exec_hosts()
                active = work.active()
                row = [round(time.time() - t0, 1), rss_kib(controller.pid), open_files(controller.pid),
                       sum(rss_kib(p) for p in pids), len(pids), len(hosts) if hosts is not None else -1,
                       len(active) if active is not None else -1, counts['drains'], counts['removed']]
                samples.append(row)
                writer.writerow(row)
                handle.flush()
                stop_all.wait(args.sample)

    threads = [threading.Thread(target=follow_events, daemon=True), threading.Thread(target=sampler, daemon=True),
               threading.Thread(target=submitter, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        while True:
            time.sleep(5)
            elapsed = (time.time() - t0) / 60
            if controller.poll() is not None:
                print('chaos_real: the controller ended early (rc %s); see %s' % (controller.returncode, log_path))
                break
            if elapsed >= args.minutes or (elapsed >= args.soak_minutes and counts['drains'] >= args.scale_downs):
                break
            print('chaos_real: %5.1f min, %d jobs, %d drains (%d removed), %d joins, %d failures' % (
                elapsed, len(work.jobs), counts['drains'], counts['removed'], counts['joins'],
                len(counts['failed'])), flush=True)
        workload_minutes = (time.time() - t0) / 60
        stop_work.set()
        threads[2].join()
        # the jobs end, the balancer shrinks the cluster back to min_nodes
        deadline = time.time() + 900
        while controller.poll() is None and time.time() < deadline:
            hosts = exec_hosts()
            if not work.active() and hosts is not None and len(hosts) <= args.min_nodes:
                break
            time.sleep(5)
        # stop the controller between polls, never in the middle of a node operation: once the
        # loop says when the next poll comes (its poll has ended and given its lock back)
        log.flush()
        offset = os.path.getsize(log_path)
        deadline = time.time() + 600
        while controller.poll() is None and time.time() < deadline:
            with open(log_path, errors='replace') as handle:
                handle.seek(offset)
                if 'poll_loop: next poll in' in handle.read():
                    break
            time.sleep(0.2)
        if controller.poll() is None:
            os.killpg(controller.pid, signal.SIGTERM)
            try:
                controller.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(controller.pid, signal.SIGKILL)
                controller.wait()
    finally:
        stop_work.set()
        time.sleep(args.sample + 1)
        stop_all.set()
        if controller.poll() is None:
            os.killpg(controller.pid, signal.SIGKILL)
        log.close()
    total_minutes = (time.time() - t0) / 60

    # every job: failed 0 and its own exit status
    time.sleep(5)
    outcomes = work.outcomes()
    bad, missing = {}, []
    for job, status in sorted(work.jobs.items()):
        if job not in outcomes:
            missing.append(job)
        elif outcomes[job] != ('0', str(status)):
            bad[job] = (outcomes[job], status, work.kinds[job])
    # every node the run touched: joined everywhere or gone everywhere; the journal empty
    nodes = dict(start_addresses)
    with open(events_path) as handle:
        for line in handle:
            event = json.loads(line)
            if event.get('ev') in ('join', 'leave') and event['result'].get('address'):
                nodes[event['result']['name']] = event['result']['address']
    half = {}
    try:
        with open(os.path.join(workdir, 'journal.json')) as handle:
            journal = json.load(handle).get('operations') or []
    except (OSError, ValueError):
        journal = []
    for node, address in sorted(nodes.items()):
        places, _ops = view(node, address, args.cluster)
        state = verdict(places, [])
        if state not in ('joined', 'absent'):
            half[node] = state
    alive = [row for row in samples if row[1] > 0]  # the controller is gone in the last samples
    first, last = (alive[0], alive[-1]) if alive else (None, None)
    peak_rss = max(row[1] for row in alive) if alive else 0
    report = {
        'workload_minutes': round(workload_minutes, 1), 'total_minutes': round(total_minutes, 1),
        'jobs': len(work.jobs), 'jobs_at_drain': sum(1 for k in work.kinds.values() if k == 'at-drain'),
        'qsub_errors': len(work.errors), 'bad': bad, 'missing': missing,
        'drains': counts['drains'], 'removed': counts['removed'], 'kept': counts['kept'],
        'joins': counts['joins'], 'polls': counts['plans'], 'failed_tasks': counts['failed'][:20],
        'failed_task_count': len(counts['failed']), 'half_nodes': half, 'journal': journal,
        'controller_rc': controller.returncode, 'first_sample': first, 'last_sample': last,
        'peak_controller_rss_kib': peak_rss, 'nodes_touched': len(nodes), 'workdir': workdir,
    }
    with open(os.path.join(workdir, 'report.json'), 'w') as handle:
        json.dump(report, handle, indent=1, default=str)
    print(json.dumps(report, indent=1, default=str))
    if args.plot and samples:
        plot(samples, args.plot)
    if args.markdown:
        write_markdown(args, report, samples)
    ok = (not bad and not missing and not half and not journal and not counts['failed'] and not work.errors)
    print('chaos_real: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


def render(args):
    with open(os.path.join(args.render, 'report.json')) as handle:
        report = json.load(handle)
    samples = []
    with open(os.path.join(args.render, 'samples.csv')) as handle:
        for row in list(csv.reader(handle))[1:]:
            samples.append([float(row[0])] + [int(value) for value in row[1:]])
    alive = [row for row in samples if row[1] > 0]
    report['first_sample'], report['last_sample'] = alive[0], alive[-1]
    report['peak_controller_rss_kib'] = max(row[1] for row in alive)
    if args.plot:
        plot(samples, args.plot)
    if args.markdown:
        write_markdown(args, report, samples)
    return 0


def plot(samples, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    minutes = [row[0] / 60 for row in samples]
    fig, (top, middle, bottom) = plt.subplots(3, 1, sharex=True, figsize=(9, 7))
    top.plot(minutes, [row[5] for row in samples], drawstyle='steps-post', label='exec hosts')
    top.plot(minutes, [row[6] for row in samples], label='jobs queued or running', alpha=0.6)
    top.legend(loc='upper right')
    top.set_title('chaos_real.py: the balancer in continuous mode under random jobs')
    middle.plot(minutes, [row[7] for row in samples], label='scale-down events')
    middle.plot(minutes, [row[8] for row in samples], label='nodes removed')
    middle.legend(loc='upper left')
    alive = [row for row in samples if row[1] > 0]  # while the controller runs
    alive_minutes = [row[0] / 60 for row in alive]
    bottom.plot(alive_minutes, [row[1] / 1024 for row in alive], label='controller RSS (MiB)')
    bottom.plot(alive_minutes, [row[3] / 1024 for row in alive], label='controller tree RSS (MiB)', alpha=0.6)
    bottom2 = bottom.twinx()
    bottom2.plot(alive_minutes, [row[2] for row in alive], color='tab:red', label='open files', linestyle=':')
    bottom2.set_ylim(0, max(row[2] for row in alive) * 1.5)
    bottom2.set_ylabel('open files')
    bottom.legend(loc='upper left')
    bottom.set_xlabel('minutes')
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def write_markdown(args, report, samples):
    first, last = report['first_sample'], report['last_sample']
    # the controller's memory after its first poll loaded the tasks (the start proper), and at the end
    settled = next((row for row in samples if row[0] >= 120), first)
    lines = [
        '# Chaos and soak on the real cluster: results',
        '',
        'Written by `benchmarks/chaos_real.py` (see its docstring and [chaos-real.md](chaos-real.md)):',
        '',
        '```',
        '.venv/bin/python benchmarks/chaos_real.py --minutes %g --soak-minutes %g --scale-downs %d --max-nodes %d '
        '--interval %d --settle %d --seed %d' % (args.minutes, args.soak_minutes, args.scale_downs, args.max_nodes,
                                                 args.interval, args.settle, args.seed),
        '```',
        '',
        '| figure | value |',
        '|---|---|',
        '| workload phase / whole run | %s min / %s min |' % (report['workload_minutes'], report['total_minutes']),
        '| polls (decisions) | %d |' % report['polls'],
        '| jobs submitted (of them at the start of a drain) | %d (%d) |' % (report['jobs'], report['jobs_at_drain']),
        '| jobs not ending failed 0 with their own exit status | %d |' % len(report['bad']),
        '| jobs without an accounting record (lost) | %d |' % len(report['missing']),
        '| scale-down events (node_leave runs the plans asked for) | %d |' % report['drains'],
        '| nodes removed | %d |' % report['removed'],
        '| of them kept: a job ran there, or was dispatched in the drain | %s |' % (sum(report['kept'].values()) if report['kept'] else 0),
        '| nodes joined | %d |' % report['joins'],
        '| failed or unreachable tasks | %d |' % report['failed_task_count'],
        '| nodes half-joined or half-removed at the end / journal records left | %d / %d |' % (
            len(report['half_nodes']), len(report['journal'])),
        '| controller RSS at 2 min / end / peak (MiB) | %.1f / %.1f / %.1f |' % (
            settled[1] / 1024, last[1] / 1024, report['peak_controller_rss_kib'] / 1024),
        '| controller open files at 2 min / end | %d / %d |' % (settled[2], last[2]),
        '| controller process tree RSS at 2 min / end (MiB) | %.1f / %.1f |' % (settled[3] / 1024, last[3] / 1024),
        '',
    ]
    if report['kept']:
        lines += ['Why drains backed out:', '']
        lines += ['- %s: %d' % (reason, n) for reason, n in sorted(report['kept'].items())]
        lines.append('')
    if args.plot:
        lines += ['![chaos run](%s)' % os.path.basename(args.plot), '']
    with open(args.markdown, 'w') as handle:
        handle.write('\n'.join(lines))


if __name__ == '__main__':
    sys.exit(main())
