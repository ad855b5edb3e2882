# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Faults injected at every step of join and leave on the real local cluster (issue 7 part 2).

For every task of a node join (``playbooks/node_add.yml``) and of a node leave
(``playbooks/node_remove.yml``), the controller is killed (SIGKILL of the whole ansible-playbook
process group, workers and module processes included) just before that task starts
(benchmarks/fault_callback/kill_at_task.py). Then one balancer poll runs
(``playbooks/loadbalance.yml`` with nothing else to do: no jobs, idle_time of a day), which must
converge: the journal finished or cleaned up, and the node either fully part of the cluster
(exec/admin host, host group, queue, namespace node, inventory, /etc/hosts, /etc/exports, an
execd that reports load) or fully gone from all of them. Anything else is a leftover.

    .venv/bin/python benchmarks/fault_inject.py --markdown docs/reliability/fault-inject-results.md
    .venv/bin/python benchmarks/fault_inject.py --stride 2 --offset 1     # every 2nd point, from task 2

The local cluster must be up (playbooks/local_cluster.yml); the node used is ``--node``
(default node009 at 10.77.0.19), removed again at the end.

``--provider ec2`` does the same with the ec2 provider. Real AWS cannot be reached from here, so
EC2 is moto_server on 127.0.0.1 (tests/unit/plugins/modules/ec2_moto.py, started by this program),
and, as in tests/integration/test_ec2_moto.py, the test-only option ``provider_ec2_local_boot``
boots a namespace node at each instance's private address. The node (default ec2node9) gets a new
address at each launch; an instance that is not terminated counts as one more place the node is
known, so a launched instance that nobody knows of is a leftover.

    .venv/bin/python benchmarks/fault_inject.py --provider ec2 --markdown docs/reliability/fault-inject-ec2.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'SGE_QMASTER_PORT': '6444',
       'SGE_EXECD_PORT': '6445', 'PATH': '/usr/bin:/bin:/usr/sbin:/sbin', 'LC_ALL': 'C'}
STATE_ROOT = '/var/lib/gridengine-balancer'
NODE_DIR = os.path.join(STATE_ROOT, 'local-nodes')
CALLBACKS = os.path.join(ROOT, 'benchmarks', 'fault_callback')


def sh(argv, check=False):
    proc = subprocess.run(argv, env=ENV, capture_output=True, text=True, check=False, timeout=120)
    return proc.stdout if (proc.returncode == 0 or not check) else ''


def playbook(name, extra, kill_at=0, log=None, timeout=900, keep=None):
    """Run a playbook; (rc, seconds). rc -9 means the injected kill happened."""
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, ANSIBLE_CALLBACKS_ENABLED='kill_at_task',
               GEB_KILL_AT_TASK=str(kill_at), LC_ALL='C.UTF-8')
    env.pop('GEB_TASK_LOG', None)
    if log:
        env['GEB_TASK_LOG'] = log
    t0 = time.time()
    proc = subprocess.Popen([os.path.join(ROOT, '.venv/bin/ansible-playbook'), os.path.join(ROOT, 'playbooks', name)] + extra,
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate()[0]
    if keep or proc.returncode not in (0, -9):
        with open(keep or '/tmp/geb-fault-inject-last-failure.log', 'w') as handle:
            handle.write(out)
    return proc.returncode, time.time() - t0


def view(node, address, cluster, instance_live=None):
    """Where the node is known: a dict of place -> bool, plus the journal.

    ``address`` is the node's address, or a list of every address it had (EC2 gives a new one at
    each launch): a hosts line or an export for any of them counts. ``instance_live`` (EC2 only)
    is how many instances of the node are not terminated (more than one is a leftover)."""
    addresses = [address] if isinstance(address, str) else list(address)
    hgrp = sh(['qconf', '-shgrp', '@allhosts'])
    qhost = sh(['qhost', '-h', node])
    with open('/etc/hosts') as handle:
        hosts = handle.read()
    with open('/etc/exports') as handle:
        exports = handle.read()
    inv_path = os.path.join(ROOT, 'inventory', 'local', 'nodes.yml')
    inventory = open(inv_path).read() if os.path.exists(inv_path) else ''
    word = re.compile(r'(?<![A-Za-z0-9.-])%s(?![A-Za-z0-9-])' % re.escape(node))
    places = {
        'exec host': node in sh(['qconf', '-sel']).split(),
        'admin host': node in sh(['qconf', '-sh']).split(),
        'host group': bool(word.search(hgrp)),
        'queue instance': bool(sh(['qselect', '-q', '*@%s' % node]).strip()),
        'namespace': node in [line.split()[0] for line in sh(['ip', 'netns', 'list']).splitlines() if line.strip()],
        'node state dir': os.path.isdir(os.path.join(NODE_DIR, node)),
        'inventory': bool(word.search(inventory)),
        '/etc/hosts': any(re.search(r'(?m)^%s\s+%s\b' % (re.escape(a), re.escape(node)), hosts) for a in addresses),
        '/etc/exports': any(re.search(r'(?m)\s%s\(' % re.escape(a), exports) for a in addresses),
    }
    if instance_live is not None:
        places['EC2 instance'] = bool(instance_live)
        if int(instance_live) > 1:  # (the key only then: a second live instance is a leftover)
            places['no second live EC2 instance'] = False
    places['execd reports load'] = reports_load(node, qhost)
    journal = os.path.join(STATE_ROOT, cluster, 'journal.json')
    try:
        with open(journal) as handle:
            ops = json.load(handle).get('operations') or []
    except (OSError, ValueError, AttributeError):
        ops = []
    return places, ops


def reports_load(node, qhost=None):
    """Whether ``qhost -h node`` (read now unless given) shows the node's numbers and a load."""
    qhost = sh(['qhost', '-h', node]) if qhost is None else qhost
    return bool(re.search(r'(?m)^%s\s+\S+\s+\d+\s+\d+\s+\d+\s+\d+\s+[0-9.]+' % re.escape(node), qhost))


def diagnose(node, path, wait=90):
    """What a node that is not converged looks like, written to ``path``; the seconds until its
    execd reports load with nobody acting (None: not within ``wait``), to tell a late load report
    from an execd that is gone."""
    qmaster_log = '/var/spool/gridengine/qmaster/messages'
    execd_log = '/var/spool/gridengine/execd/%s/messages' % node
    parts = [('qhost -h %s -q' % node, sh(['qhost', '-h', node, '-q'])),
             ('qstat -f -q *@%s' % node, sh(['qstat', '-f', '-q', '*@%s' % node])),
             ('ip netns pids %s (with their commands)' % node,
              '\n'.join('%s %s' % (pid, sh(['ps', '-o', 'comm=', '-p', pid]).strip())
                        for pid in sh(['ip', 'netns', 'pids', node]).split()))]
    for name in (execd_log, qmaster_log):
        try:
            with open(name, errors='replace') as handle:
                parts.append(('tail of ' + name, ''.join(handle.readlines()[-15:])))
        except OSError as exc:
            parts.append((name, str(exc)))
    t0, seen = time.time(), None
    while time.time() - t0 < wait:
        if reports_load(node):
            seen = time.time() - t0
            break
        time.sleep(2)
    parts.append(('load report with nobody acting', 'after %.0f s' % seen if seen is not None else 'none in %d s' % wait))
    with open(path, 'w') as handle:
        for title, text in parts:
            handle.write('### %s\n%s\n' % (title, text.rstrip('\n')))
    return seen


def verdict(places, ops):
    """'joined', 'absent' or a description of the leftovers."""
    if ops:
        return 'journal not empty: %s' % ops
    present = [k for k, v in places.items() if v]
    if len(present) == len(places):
        return 'joined'
    if not present:
        return 'absent'
    return 'half: present in %s; missing from %s' % (', '.join(present), ', '.join(k for k, v in places.items() if not v))


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n\n', maxsplit=1)[0])
    parser.add_argument('--cluster', default='mycluster')
    parser.add_argument('--provider', choices=['local', 'ec2'], default='local',
                        help='ec2: moto_server on 127.0.0.1 as EC2, each instance a namespace node')
    parser.add_argument('--node', help='default node009 (local) or ec2node9 (ec2)')
    parser.add_argument('--address', default='10.77.0.19', help='the local node\'s address (EC2 picks its own)')
    parser.add_argument('--only', choices=['join', 'leave'])
    parser.add_argument('--stride', type=int, default=1, help='inject at every STRIDE-th task')
    parser.add_argument('--offset', type=int, default=0, help='start at task 1 + OFFSET')
    parser.add_argument('--join-from', type=int, help='skip the join points before this task (resume a run)')
    parser.add_argument('--leave-from', type=int, help='skip the leave points before this task (resume a run)')
    parser.add_argument('--limit', type=int, help='at most this many points per operation')
    parser.add_argument('--settle', type=int, default=5, help='drain_settle_time of the leaves')
    parser.add_argument('--markdown')
    args = parser.parse_args()
    args.node = args.node or ('ec2node9' if args.provider == 'ec2' else 'node009')
    if not sh(['qstat'], check=True) and sh(['qconf', '-sel'], check=True) == '':
        raise SystemExit('the local cluster is not up: ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster')
    base = ['-e', 'cluster=%s' % args.cluster]
    ec2 = Ec2(args.node, args.cluster) if args.provider == 'ec2' else None
    try:
        if ec2:
            base += ['-e', '@%s' % ec2.vars_path]
        return run(args, base, ec2)
    finally:
        if ec2:
            ec2.stop()


class Ec2(object):
    """moto_server on 127.0.0.1 standing in for EC2 (real AWS is not reachable from here)."""

    def __init__(self, node, cluster):
        sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit', 'plugins', 'modules'))
        import ec2_moto  # pylint: disable=import-outside-toplevel,import-error
        import yaml  # pylint: disable=import-outside-toplevel
        self.node, self.cluster, self.addresses = node, cluster, set()
        self.server = ec2_moto.MotoEc2().start()
        self.work = tempfile.mkdtemp(prefix='geb-fault-ec2-')
        net = self.server.network()
        with open(os.path.join(ROOT, 'tests', 'integration', 'files', 'ec2_vars.yml')) as handle:
            extra = yaml.safe_load(handle)
        extra.update(provider_ec2_endpoint_url=self.server.endpoint, provider_ec2_subnet_ids=[net['subnet_id']],
                     provider_ec2_security_group_ids=[net['security_group_id']],
                     provider_ec2_state_path=os.path.join(self.work, 'reconcile.json'))
        self.vars_path = os.path.join(self.work, 'ec2.json')
        with open(self.vars_path, 'w') as handle:
            json.dump(extra, handle)

    def instances(self):
        """The node's instances in every state."""
        out = []
        filters = [{'Name': 'tag:gridengine-balancer:node', 'Values': [self.node]}]
        for res in self.server.client().describe_instances(Filters=filters)['Reservations']:
            out.extend(res['Instances'])
        return out

    def look(self):
        instances = self.instances()
        self.addresses.update(i['PrivateIpAddress'] for i in instances if i.get('PrivateIpAddress'))
        live = [i for i in instances if i['State']['Name'] not in ('shutting-down', 'terminated')]
        return view(self.node, sorted(self.addresses) or ['0.0.0.0'], self.cluster, instance_live=len(live))

    def stop(self):
        self.server.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def run(args, base, ec2):
    """Every injection point; 0 when each converged after one poll."""
    def look():
        return ec2.look() if ec2 else view(args.node, args.address, args.cluster)

    op_args = {'join': ('node_add.yml', base + ['-e', 'node=%s' % args.node]),
               'leave': ('node_remove.yml', base + ['-e', 'node=%s' % args.node, '-e', 'drain_settle_time=%d' % args.settle])}
    poll = base + ['-e', 'min_nodes=1', '-e', 'max_nodes=20', '-e', 'idle_time=86400', '-e', 'drain_settle_time=%d' % args.settle]

    def ensure(want):
        now = verdict(*look())
        for attempt in range(2):         # a failed attempt is finished by the second one (journal)
            if now == want:
                break
            name, extra = op_args['join' if want == 'joined' else 'leave']
            if now.startswith('journal'):
                name, extra = 'loadbalance.yml', poll
            rc, dummy = playbook(name, extra, keep='/tmp/geb-fault-inject-ensure-%d.log' % attempt)
            now = verdict(*look())
        if now != want:
            raise SystemExit('cannot bring %s to %s (now %s); see /tmp/geb-fault-inject-ensure-*.log'
                             % (args.node, want, now))

    results = []
    t_start = time.time()
    ops = [op for op in ('join', 'leave') if not args.only or op == args.only]
    points = {}
    for op in ops:
        ensure('absent' if op == 'join' else 'joined')
        log = '/tmp/geb-fault-inject-%s.tasks' % op
        if os.path.exists(log):
            os.unlink(log)
        name, extra = op_args[op]
        rc, seconds = playbook(name, extra, log=log)
        tasks = [line.rstrip('\n').split('\t', 1) for line in open(log)]
        first = 1 + args.offset + max(0, ((getattr(args, op + '_from') or 1) - 1 - args.offset + args.stride - 1)
                                      // args.stride * args.stride)
        points[op] = [(index, tasks[index - 1][1], len(tasks)) for index in range(first, len(tasks) + 1, args.stride)]
        points[op] = points[op][:args.limit] if args.limit else points[op]
        print('%s: %d task starts in an undisturbed run (%.0f s, rc %s); %d injection points' % (
            op, len(tasks), seconds, rc, len(points[op])))
    # a join point and a leave point in turn: a killed join that the poll finishes leaves the node
    # joined, ready for the next leave point (and the other way round), so few resets are needed
    queue = {op: list(points[op]) for op in ops}
    while any(queue.values()):
        state = verdict(*look())
        op = 'leave' if (state == 'joined' and queue.get('leave')) or not queue.get('join') else 'join'
        index, task, total = queue[op].pop(0)
        ensure('absent' if op == 'join' else 'joined')
        name, extra = op_args[op]
        rc_kill, t_kill = playbook(name, extra, kill_at=index)
        after_kill = verdict(*look())
        keep = '/tmp/geb-fault-inject-poll-%s-%d.log' % (op, index)
        rc_poll, t_poll = playbook('loadbalance.yml', poll, keep=keep)
        final = verdict(*look())
        ok = rc_poll == 0 and final in ('joined', 'absent')
        second = ''
        if not ok:       # what is it, and does a second poll converge?
            if 'execd reports load' in final.partition('missing from ')[2]:
                late = diagnose(args.node, keep + '.diag')
                print('  diagnosis in %s.diag; load report with nobody acting: %s' % (
                    keep, 'after %.0f s' % late if late is not None else 'none'))
            rc2, dummy = playbook('loadbalance.yml', poll, keep=keep + '.2')
            second = '%s (rc %s)' % (verdict(*look()), rc2)
        results.append({'op': op, 'point': index, 'task': task, 'killed': rc_kill == -9, 'after_kill': after_kill,
                        'poll_rc': rc_poll, 'final': final, 'ok': ok, 'seconds': t_kill + t_poll, 'second': second})
        print('%-5s %3d/%d %-70.70s killed=%-5s poll rc=%s -> %s%s' % (
            op, index, total, task, rc_kill == -9, rc_poll, final,
            '' if ok else '   <-- NOT CONVERGED (log %s); a second poll: %s' % (keep, second)))
        sys.stdout.flush()
    ensure('absent')
    bad = [r for r in results if not r['ok']]
    total = time.time() - t_start
    joins = sum(1 for r in results if r['op'] == 'join')
    summary = [('injection points', len(results)),
               ('join points / leave points', '%d / %d' % (joins, len(results) - joins)),
               ('controller killed at the point', sum(1 for r in results if r['killed'])),
               ('half-done after the kill (before the next poll)', sum(1 for r in results if r['after_kill'] not in ('joined', 'absent'))),
               ('converged after one poll: joined / absent', '%d / %d' % (
                   sum(1 for r in results if r['final'] == 'joined'), sum(1 for r in results if r['final'] == 'absent'))),
               ('not converged after one poll', len(bad)),
               ('of those, converged after a second poll', sum(1 for r in bad if r['second'].split(' ')[0] in ('joined', 'absent'))),
               ('wall time (s)', '%.0f' % total)]
    for key, value in summary:
        print('%-50s %s' % (key, value))
    if args.markdown:
        with open(args.markdown, 'w') as handle:
            handle.write('# Faults injected at every step of join and leave\n\n`%s` on %s (%s provider, node %s).\n\n'
                         % (' '.join(['benchmarks/fault_inject.py'] + sys.argv[1:]), time.strftime('%Y-%m-%d'),
                            args.provider, args.node))
            handle.write('| figure | value |\n|---|---|\n')
            for key, value in summary:
                handle.write('| %s | %s |\n' % (key, value))
            handle.write('\n| op | point | killed before task | state after the kill | after one poll |\n|---|---|---|---|---|\n')
            for r in results:
                cells = [r['task'], r['after_kill'], r['final'] + ('; second poll: ' + r['second'] if r['second'] else '')]
                handle.write('| %s | %d | %s |\n' % (r['op'], r['point'], ' | '.join(c.replace('|', '/') for c in cells)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
