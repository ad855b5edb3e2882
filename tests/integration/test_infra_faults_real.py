# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Infrastructure failures on the real local cluster, during real polls (issue 7 part 4).

- the qmaster stops in the middle of a poll (before the snapshot, and between a drain's disable
  and its last look for jobs) and starts again;
- a node vanishes with a job on it (every process of its namespace killed, the namespace gone);
- a node hangs on ssh (its sshd stopped: TCP still connects, nothing answers);
- a job reaches a node in a drain's last second, after its re-check (the scheduler's window of
  docs/reliability/chaos-sim.md): the node is kept, the job runs to its own end.

For each: what the balancer does, and that it never acts on a snapshot it could not read, kills
no job and loses track of no node. The faults are put in place by a callback
(files/hook_callback/run_at_task.py) at the start of a named task, so they hit the same point of
the poll every time. The cluster is given back with its two nodes after each test that
left fewer than two.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, MASTER_HOST, REPO, _run, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gridengine.balancer.tests.integration.test_elastic_real import Jobs, _exec_hosts, _give_back_two_nodes, nodes_report

import pytest

# the slow tier (scripts/test.sh --full; docs/testing.md): about 10 minutes of faults
pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'files', 'hook_callback')
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))
from fault_inject import view, verdict  # noqa: E402 pylint: disable=wrong-import-position

STOP_QMASTER = ['sh', '-c', 'qconf -km; i=0; while qconf -sh >/dev/null 2>&1 && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done']


def _start_qmaster():
    if _run(['qconf', '-sh']).returncode == 0:
        return
    proc = _run(['/usr/sbin/sge_qmaster'])
    assert proc.returncode == 0, proc.stderr
    for _attempt in range(60):
        if _run(['qconf', '-sh']).returncode == 0:
            return
        time.sleep(1)
    raise AssertionError('the qmaster did not come back')


def _wait_nodes_report(names, timeout=120):
    """Until qhost shows a load for every name (execds report again after a qmaster restart)."""
    assert nodes_report(names, timeout), 'no load report from %s: %s' % (names, _run(['qhost']).stdout)


def _poll(state_dir, extra, hook_task=None, hook_argv=None):
    argv = [_tool('ansible-playbook'), 'playbooks/loadbalance.yml', '-e', 'cluster=%s' % CLUSTER,
            '-e', 'state_path=%s/state.json' % state_dir, '-e', 'journal_path=%s/journal.json' % state_dir,
            '-e', 'lock_path=%s/lock.json' % state_dir, '-e', 'job_wait_time=1', '-e', 'stabilization_time=0',
            '-e', 'drain_settle_time=2']
    for item in extra:
        argv += ['-e', item]
    env = {'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.json'}
    if hook_task:
        env.update(ANSIBLE_CALLBACK_PLUGINS=HOOKS, ANSIBLE_CALLBACKS_ENABLED='run_at_task',
                   GEB_HOOK_TASK=hook_task, GEB_HOOK_ARGV=json.dumps(hook_argv))
    proc = _run(argv, env=env, timeout=900)
    result = json.loads(proc.stdout[proc.stdout.index('{\n'):]) if '{\n' in proc.stdout else {}
    return proc, result


def _task_result(result, name):
    for play in result.get('plays', []):
        for task in play['tasks']:
            if task['task']['name'] == name:
                return task['hosts'][MASTER_HOST]
    return None


def _journal(state_dir):
    try:
        with open(os.path.join(state_dir, 'journal.json')) as handle:
            return json.load(handle).get('operations') or []
    except (OSError, ValueError):
        return []


def _address(node):
    with open('/etc/hosts') as handle:
        for line in handle:
            fields = line.split('#', 1)[0].split()
            if len(fields) >= 2 and node in fields[1:]:
                return fields[0]
    return None


def _nodes():
    return sorted(h for h in _exec_hosts() if h != MASTER_HOST)


def test_qmaster_stops_mid_poll(cluster_nodes, tmp_path):  # noqa: F811
    """A dead qmaster at the snapshot: the poll fails, names the cause, writes no state and acts on
    nothing. A dead qmaster in the middle of a drain: the poll fails, the journal keeps the node's
    leave, and the next poll (qmaster back) finishes it."""
    state_dir = str(tmp_path)
    nodes = _nodes()
    size = len(nodes) + 1
    hold = ['max_nodes=%d' % size, 'min_nodes=%d' % size]
    try:
        proc, _result = _poll(state_dir, hold)
        assert proc.returncode == 0, proc.stdout[-3000:]
        with open(os.path.join(state_dir, 'state.json'), 'rb') as handle:
            state_before = handle.read()

        # 1. the qmaster stops just before the snapshot is read
        proc, result = _poll(state_dir, hold, 'Read the queue and the hosts from the qmaster', STOP_QMASTER)
        assert proc.returncode != 0
        facts = _task_result(result, 'Read the queue and the hosts from the qmaster')
        assert facts and facts.get('failed'), result
        assert 'no snapshot returned' in facts['msg'] and re.search(r'qmaster|commlib|connect', facts['msg'], re.I), facts['msg']
        assert _task_result(result, 'Decide what to add and remove') is None  # no decision, no action
        with open(os.path.join(state_dir, 'state.json'), 'rb') as handle:
            assert handle.read() == state_before, 'the state was written although no snapshot was read'
        assert _journal(state_dir) == []
        assert not os.path.exists(os.path.join(state_dir, 'lock.json')), 'the lock was not released'
        _start_qmaster()
        assert _nodes() == nodes

        # 2. the qmaster stops between the drain's disable and its last look for jobs
        _wait_nodes_report(nodes)
        proc, result = _poll(state_dir, ['max_nodes=%d' % size, 'min_nodes=%d' % (size - 1), 'idle_time=0'],
                             'Look again for jobs on the node (qstat)', STOP_QMASTER)
        assert proc.returncode != 0, proc.stdout[-3000:]
        ops = _journal(state_dir)
        assert len(ops) == 1 and ops[0]['operation'] == 'leave', ops
        victim = ops[0]['node']
        _start_qmaster()
        assert victim in _nodes(), 'the node left Grid Engine although the drain never finished'
        qstate = _run(['qstat', '-f', '-q', '*@%s' % victim]).stdout
        assert re.search(r'\s[a-z]*d[a-z]*\s*$', qstate, re.M), 'the drain had disabled %s:\n%s' % (victim, qstate)

        # the next poll finishes the leave from the journal
        proc, result = _poll(state_dir, ['max_nodes=%d' % size, 'min_nodes=%d' % (size - 1), 'idle_time=0'])
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert _journal(state_dir) == []
        assert victim not in _nodes()
        places, _ops = view(victim, '0.0.0.0', CLUSTER)
        assert not any(v for k, v in places.items() if k not in ('/etc/hosts', '/etc/exports')), places
        assert _address(victim) is None
    finally:
        _start_qmaster()
        _give_back_two_nodes()


def _set_global_conf(changes):
    """Change lines of the global configuration; returns the old values."""
    current = _run(['qconf', '-sconf', 'global']).stdout
    old = {}
    lines = []
    for line in current.splitlines():
        key = line.split(None, 1)[0] if line.strip() else ''
        if key in changes:
            old[key] = line.split(None, 1)[1].strip()
            line = '%s %s' % (key, changes[key])
        lines.append(line)
    directory = tempfile.mkdtemp(prefix='geb-conf-')
    path = os.path.join(directory, 'global')  # qconf -Mconf takes the configuration's name from the file's
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    proc = _run(['qconf', '-Mconf', path])
    shutil.rmtree(directory)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return old


def _kill_namespace(node):
    pids = _run(['ip', 'netns', 'pids', node]).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    _run(['ip', 'netns', 'delete', node])
    return len(pids)


def _kill_execd(node):
    """SIGKILL the sge_execd of a namespace node; returns how many were killed."""
    killed = 0
    for pid in _run(['ip', 'netns', 'pids', node]).stdout.split():
        try:
            with open('/proc/%s/comm' % pid) as handle:
                if handle.read().strip() != 'sge_execd':
                    continue
            os.kill(int(pid), signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def _wait_unknown(node, unknown=True, timeout=120):
    """Until the qmaster shows the node unknown (its queue instances in state u: max_unheard
    passed), or, with ``unknown=False``, known again (no state u, and a load in qhost)."""
    deadline = time.time() + timeout
    while True:
        out = _run(['qstat', '-f', '-q', '*@%s' % node]).stdout
        is_unknown = bool(re.search(r'@%s\s.*\s[a-zA-Z]*u[a-zA-Z]*\s*$' % re.escape(node), out, re.M))
        if is_unknown if unknown else (not is_unknown and nodes_report([node], 0)):
            return
        assert time.time() < deadline, 'the qmaster %s %s unknown:\n%s' % (
            'never marked' if unknown else 'still has', node, out)
        time.sleep(2)


def test_node_vanishes_with_a_job(cluster_nodes, tmp_path):  # noqa: F811
    """A node whose namespace is killed with a job on it: the balancer keeps it (a job is listed on
    it, then its state is unknown) however long it has been unknown, never removes or re-counts it
    as capacity, kills nothing; once the admin's qdel -f ends the job's listing, the next poll
    removes the node (unknown for longer than unknown_timeout) from everything. Then the other
    node's execd dies (the node itself stays up): two polls later that node is gone as well, its
    shares unmounted."""
    state_dir = str(tmp_path)
    nodes = _nodes()
    size = len(nodes) + 1
    victim = nodes[-1]
    address = _address(victim)
    old = None
    jobs = Jobs('vanish')
    try:
        proc = _run(['su', '-', 'tester', '-c', 'qsub -terse -N vanish -l h=%s -o /dev/null -e /dev/null -b y sleep 600' % victim])
        assert proc.returncode == 0, proc.stderr
        job = int(proc.stdout.strip())
        jobs.ids.append(job)
        deadline = time.time() + 60
        while victim not in _run(['qstat', '-s', 'r', '-u', 'tester']).stdout:
            assert time.time() < deadline, 'the job did not start on %s' % victim
            time.sleep(1)
        # max_unheard goes down only once the job runs: lowered before, it is shorter than the
        # execds' old load_report_time (40 s) and the qmaster refuses to deliver the job ("got
        # max. unheard timeout for target execd ... can't deliver job") until the next report
        old = _set_global_conf({'max_unheard': '00:00:20', 'load_report_time': '00:00:05'})
        assert _kill_namespace(victim) > 0

        # right away: the job is still listed on the node, the node is kept (idle_time keeps the
        # other, idle node for part 2)
        proc, result = _poll(state_dir, ['max_nodes=%d' % size, 'min_nodes=1', 'idle_time=3600'])
        assert proc.returncode == 0, proc.stdout[-3000:]
        plan = _task_result(result, 'Decide what to add and remove')['plan']
        assert victim not in plan['remove'], plan['items']

        # once the qmaster has not heard from it for max_unheard: state unknown, kept, said so
        _wait_unknown(victim)
        # unknown_timeout=1: two polls make it unknown for longer than that; the listed job keeps it
        short = ['max_nodes=%d' % size, 'min_nodes=1', 'idle_time=3600', 'unknown_timeout=1']
        for _poll_index in range(2):
            proc, result = _poll(state_dir, short)
            assert proc.returncode == 0, proc.stdout[-3000:]
            plan = _task_result(result, 'Decide what to add and remove')['plan']
            assert victim not in plan['remove'], plan['items']
            assert 'keep %s: running 1 job' % victim in [item['reason'] for item in plan['items']], plan['items']
            assert any(w.startswith('%s: state unknown' % victim) and 'with 1 job listed on it' in w
                       for w in plan['warnings']), plan['warnings']
            assert job in jobs.active(), 'the balancer removed the vanished node\'s job'
            assert victim in _nodes()
        with open(os.path.join(state_dir, 'state.json')) as handle:
            assert victim in json.load(handle)['unknown'], 'the state does not time the unknown node'

        # the admin's qdel -f ends the job's listing; the next poll removes the node, which does
        # not answer (no ssh: its shares cannot be unmounted from it), from everything else.
        # The other node must be known then: with max_unheard at 20 s its execd's report can come
        # late on this loaded machine and make it unknown for a moment, and with 2 of 2 workers
        # unknown the plan rightly removes neither (seen in the first run of this test). Back at
        # its old value, max_unheard cannot expire for it; the vanished node stays unknown.
        _set_global_conf(old)
        for node in nodes:
            if node != victim:
                _wait_unknown(node, unknown=False)
        _run(['qdel', '-f', str(job)])
        proc, result = _poll(state_dir, short)
        assert proc.returncode == 0, proc.stdout[-3000:]
        plan = _task_result(result, 'Decide what to add and remove')['plan']
        assert plan['remove'] == [victim], json.dumps([plan['items'], plan['warnings']], indent=1)
        assert re.search(r'remove %s: state unknown for \S+ >= unknown_timeout 1s \(load -, states \S*u\S*\), no job '
                         r'listed on it' % re.escape(victim), ' '.join(i['reason'] for i in plan['items'])), plan['items']
        assert _journal(state_dir) == []
        places, _ops = view(victim, address, CLUSTER)
        assert verdict(places, []) == 'absent', places

        # part 2: the execd of the other node dies, the node stays up
        other = nodes[0]
        other_address = _address(other)
        _set_global_conf({'max_unheard': '00:00:20', 'load_report_time': '00:00:05'})
        assert _kill_execd(other) > 0
        _wait_unknown(other)
        proc, result = _poll(state_dir, short)
        assert proc.returncode == 0, proc.stdout[-3000:]
        plan = _task_result(result, 'Decide what to add and remove')['plan']
        assert other not in plan['remove'] and any(
            item['reason'].startswith('keep %s: state unknown' % other) for item in plan['items']), plan['items']
        time.sleep(1)
        proc, result = _poll(state_dir, short)
        assert proc.returncode == 0, proc.stdout[-3000:]
        plan = _task_result(result, 'Decide what to add and remove')['plan']
        assert plan['remove'] == [other], json.dumps([plan['items'], plan['warnings']], indent=1)
        places, _ops = view(other, other_address, CLUSTER)
        assert verdict(places, _journal(state_dir)) == 'absent', places
    finally:
        if old is not None:
            _set_global_conf(old)
        _give_back_two_nodes()


def _sshd_pids(node):
    pids = []
    for pid in _run(['ip', 'netns', 'pids', node]).stdout.split():
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                if handle.read().split(b'\0')[0].startswith(b'sshd'):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def test_node_hangs_on_ssh(cluster_nodes, tmp_path):  # noqa: F811
    """A member whose sshd is stopped (connects, never answers): a new node still joins (the
    member is skipped with a warning, not waited for); the hung node itself is drained and
    removed without its ssh (its shares cannot be unmounted from it; everything else goes)."""
    state_dir = str(tmp_path)
    nodes = _nodes()
    size = len(nodes) + 1
    hung = nodes[0]
    address = _address(hung)
    # ssh connections Ansible keeps open (ControlPersist) would still answer: close them first
    subprocess.run(['pkill', '-f', r'\.ansible/cp/'], check=False)
    time.sleep(1)
    pids = _sshd_pids(hung)
    assert pids, 'no sshd in %s' % hung
    for pid in pids:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:  # a session's sshd that was just ending
            pass
    jobs = Jobs('hang')
    try:
        for _job in range(2 * size * 2 + 2):
            jobs.submit(15)
        time.sleep(3)
        started = time.time()
        proc, result = _poll(state_dir, ['max_nodes=%d' % (size + 1), 'min_nodes=%d' % size])
        took = time.time() - started
        assert proc.returncode == 0, proc.stdout[-4000:]
        plan = _task_result(result, 'Decide what to add and remove')['plan']
        assert plan['add'] == 1, plan['items']
        new = sorted(set(_nodes()) - set(nodes))
        assert len(new) == 1, _nodes()
        assert 'did not answer ssh' in proc.stdout and hung in proc.stdout
        assert took < 240, 'the join waited %.0f s for the hung member' % took
        jobs.wait_done()

        # the hung node leaves (it is idle); so does the new one
        proc, result = _poll(state_dir, ['max_nodes=%d' % (size + 1), 'min_nodes=1', 'idle_time=0'])
        assert proc.returncode == 0, proc.stdout[-4000:]
        plan = _task_result(result, 'Decide what to add and remove')['plan']
        assert hung in plan['remove'], plan['items']
        assert hung not in _nodes()
        places, _ops = view(hung, address, CLUSTER)
        assert verdict(places, []) == 'absent', places
        assert _journal(state_dir) == []
        bad = {j: o for j, o in jobs.outcomes().items() if o != ('0', '0')}
        assert bad == {}, bad
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        _give_back_two_nodes()


# Run at the start of node_leave's "Take the node out of the host group": what a scheduler run
# that read the node before the drain's disable and sent its order after the drain's re-check
# would do. The node's queue instance is enabled again and a job started there (it exits 5).
LAST_SECOND_JOB = r'''
import subprocess, sys, time
node, out = sys.argv[1], sys.argv[2]
subprocess.run(['qmod', '-e', 'all.q@' + node], check=True, capture_output=True)
# the job script on qsub's stdin: with -b y, '/bin/sh -c "sleep 8; exit 5"' loses its quoting
# and ends at once (exit 5 from a bare 'sleep'), before any check can see it
proc = subprocess.run(['runuser', '-u', 'tester', '--', 'qsub', '-terse', '-N', 'lastsecond', '-o', '/dev/null',
                       '-e', '/dev/null', '-l', 'h=' + node, '-S', '/bin/sh'],
                      input='sleep 25\nexit 5\n', check=True, capture_output=True, text=True)
job = proc.stdout.strip()
with open(out, 'w') as handle:
    handle.write(job)
for _attempt in range(60):
    listing = subprocess.run(['qstat', '-s', 'r', '-u', 'tester'], capture_output=True, text=True).stdout
    if any(line.split()[:1] == [job] and '@' + node in line for line in listing.splitlines()):
        sys.exit(0)
    time.sleep(1)
sys.exit(3)
'''


def test_a_job_in_the_drains_last_second_keeps_the_node(cluster_nodes, tmp_path):  # noqa: F811
    """A job that reaches the node after the drain's re-check (the window of
    docs/reliability/chaos-sim.md) is found by sge_exec_host's last look, once the node has left
    the host group: node_leave puts the node back, enables its queue instance and keeps it; the
    job ends with its own exit status."""
    nodes = _nodes()
    node = nodes[0]
    job_file = str(tmp_path / 'job')
    env = {'ANSIBLE_CALLBACK_PLUGINS': HOOKS, 'ANSIBLE_CALLBACKS_ENABLED': 'run_at_task',
           'GEB_HOOK_TASK': 'Take the node out of the host group - @allhosts',
           'GEB_HOOK_ARGV': json.dumps([sys.executable, '-c', LAST_SECOND_JOB, node, job_file]),
           'GEB_HOOK_LOG': str(tmp_path / 'hook.rc')}
    jobs = Jobs('lastsecond')
    try:
        proc = _run([_tool('ansible-playbook'), 'playbooks/node_remove.yml', '-e', 'cluster=%s' % CLUSTER,
                     '-e', 'node=%s' % node, '-e', 'drain_settle_time=2'], env=env, timeout=600)
        with open(str(tmp_path / 'hook.rc')) as handle:
            assert handle.read().strip() == '0', 'the job did not start on %s before the task' % node
        with open(job_file) as handle:
            jobs.ids.append(int(handle.read().strip()))
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert 'was dispatched during the drain' in proc.stdout, proc.stdout[-4000:]
        assert node in _nodes(), 'the node was removed with a job on it'
        assert re.search(r'(?<![\w.-])%s(?![\w-])' % re.escape(node), _run(['qconf', '-shgrp', '@allhosts']).stdout)
        qstate = _run(['qstat', '-f', '-q', 'all.q@%s' % node]).stdout
        assert 'all.q@%s' % node in qstate and not re.search(r'\s[a-z]*[do][a-z]*\s*$', qstate, re.M), qstate
        jobs.wait_done(timeout=120)
        assert jobs.outcomes() == {jobs.ids[0]: ('0', '5')}
    finally:
        if sorted(_nodes()) != nodes:
            _give_back_two_nodes()
