# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The balancer's sensing and deciding on the real local Grid Engine cluster.

Real jobs are submitted as the job user; sge_queue_facts is compared with what qstat itself
prints; playbooks/loadbalance.yml must plan growth under a burst and removal once idle. Nothing
is mocked. The balancer's state, journal and lock go to temporary files so the cluster's own
are untouched. The playbook acts: min_nodes is the cluster's size when the test starts, so the
only node it may remove is the one it added under the burst.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import tempfile
import time

import pytest

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, JOB_USER, MASTER_HOST, _run, _tool)
# the fixture that skips (or, under scripts/test.sh, fails) when the cluster is not up
from ansible_collections.gridengine.balancer.tests.integration import test_nfs_local_cluster_real as nfs
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.integration


def _submit(count, seconds, tag):
    # a directory the job user can read (pytest's tmp_path lives under a 0700 directory of root)
    jobdir = tempfile.mkdtemp(prefix='geb-%s-' % tag)
    os.chmod(jobdir, 0o755)
    script = os.path.join(jobdir, 'job.sh')
    with open(script, 'w') as handle:
        handle.write('#!/bin/sh\nsleep %d\n' % seconds)
    os.chmod(script, 0o755)
    ids = []
    for i in range(count):
        proc = _run(['su', '-', JOB_USER, '-c',
                     'qsub -terse -N %s%d -o /dev/null -e /dev/null %s' % (tag, i, script)])
        assert proc.returncode == 0, proc.stderr
        ids.append(int(proc.stdout.strip().split('.')[0]))
    return ids


def _qstat_ids():
    """{job id: state} as plain qstat prints it, for every user."""
    proc = _run(['qstat', '-u', '*'])
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.splitlines()[2:]:
        fields = line.split()
        if fields and fields[0].isdigit():
            out[int(fields[0])] = fields[4]
    return out


def _facts():
    proc = _run([_tool('ansible'), '%s_master' % CLUSTER, '-m', 'gridengine.balancer.sge_queue_facts',
                 '-o'], env={'ANSIBLE_LOAD_CALLBACK_PLUGINS': '1'})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payload = proc.stdout.split('=>', 1)[1]
    return json.loads(payload)['ansible_facts']['sge']


def _exec_hosts():
    proc = _run(['qconf', '-sel'])
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def _poll(state_path, size, *extra, check=False):
    # one node of room above the size the cluster had when the test started, and never below it
    base = os.path.dirname(state_path)
    argv = [_tool('ansible-playbook'), 'playbooks/loadbalance.yml', '-e', 'cluster=%s' % CLUSTER,
            '-e', 'state_path=%s' % state_path, '-e', 'journal_path=%s/journal.json' % base,
            '-e', 'lock_path=%s/lock.json' % base,
            '-e', 'max_nodes=%d' % (size + 1), '-e', 'min_nodes=%d' % size,
            '-e', 'job_wait_time=1', '-e', 'stabilization_time=0', '-e', 'idle_time=4',
            '-e', 'drain_settle_time=2']
    for item in extra:
        argv += ['-e', item]
    if check:
        argv.append('--check')
    proc = _run(argv, env={'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.json'})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout[proc.stdout.index('{\n'):])  # after pause's own lines
    for play in result['plays']:
        for task in play['tasks']:
            if task['task']['name'] == 'Decide what to add and remove':
                return task['hosts'][MASTER_HOST]
    raise AssertionError('no decision task in the playbook output')


def _wait_empty(ids, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not set(ids) & set(_qstat_ids()):
            return
        time.sleep(2)
    raise AssertionError('jobs %s still in qstat after %ds' % (sorted(set(ids) & set(_qstat_ids())), timeout))


def test_facts_match_qstat_and_plan_grows_then_shrinks(cluster_nodes, tmp_path):  # noqa: F811
    state_path = str(tmp_path / 'state.json')
    before_hosts = _exec_hosts()
    size = len(before_hosts)
    facts = _facts()
    slots = sum(h['slots_total'] for h in facts['hosts'].values())
    assert slots > 0
    # a burst: more single-slot jobs than slots, so some must wait
    ids = _submit(slots + 4, 25, 'lbtest')
    try:
        time.sleep(4)  # one scheduler run (schedule_interval is 1 s)
        seen = _qstat_ids()
        facts = _facts()
        later = _qstat_ids()
        pending = {j['id'] for j in facts['pending']}
        running = {j['id'] for j in facts['running']}
        ours = set(ids)
        # the module sees what qstat sees: same job ids, same split into waiting and running;
        # the scheduler may start a job between the three reads, never the other way round
        waiting_before = {i for i in ours if i in seen and 'qw' in seen[i]}
        waiting_after = {i for i in ours if i in later and 'qw' in later[i]}
        assert waiting_after <= pending & ours <= waiting_before, (waiting_before, pending, waiting_after)
        running_before = {i for i in ours if i in seen and seen[i] == 'r'}
        running_after = {i for i in ours if i in later and later[i] in ('r', 't')}
        assert running_before <= running & ours <= running_after, (running_before, running, running_after)
        assert len(pending & ours) >= 4
        for job in facts['running']:
            if job['id'] in ours:
                assert job['owner'] == JOB_USER and job['host'] in facts['hosts'] and job['slots'] == 1
        for job in facts['pending']:
            if job['id'] in ours:
                assert job['task_count'] == 1 and job['slots'] == 1 and not job['held']
                assert abs(job['submit_time'] - time.time()) < 120

        # check mode plans the growth, with a reason, and changes nothing: no state file, no node
        checked = _poll(state_path, size, check=True)
        plan = checked['plan']
        assert plan['add'] == 1, checked['msg']
        adds = [i for i in plan['items'] if i['action'] == 'add']
        assert adds and 'waiting' in adds[0]['reason'], plan['items']
        assert plan['remove'] == []
        assert not os.path.exists(state_path), 'check mode wrote the state file'
        assert _exec_hosts() == before_hosts, 'check mode changed the exec hosts'

        # the real poll decides the same and acts: one more exec host, the state on the master
        result = _poll(state_path, size)
        assert result['plan']['add'] == 1, result['msg']
        assert os.path.exists(state_path), 'state not written on the master'
        grown = _exec_hosts()
        assert len(grown - before_hosts) == 1 and before_hosts <= grown, (before_hosts, grown)
        if nfs.serves():  # the join's export lets the new node in (issue 25)
            nfs.node_lists_share(next(iter(grown - before_hosts)))
    finally:
        _run(['qdel'] + [str(i) for i in ids])
    _wait_empty(ids)

    # idle: a poll records the nodes idle, a later one (after idle_time) removes one of them,
    # whichever the policy picks (not necessarily the one just added), never below min_nodes
    removed = []
    addresses = nfs.node_addresses()
    for _attempt in range(3):
        result = _poll(state_path, size)
        plan = result['plan']
        assert plan['add'] == 0, result['msg']
        assert MASTER_HOST not in plan['remove']
        for item in plan['items']:
            assert item['reason']
            if item['action'] == 'remove':
                assert 'idle' in item['reason'], item
        removed += plan['remove']
        if len(_exec_hosts()) == size:
            break
        time.sleep(6)
    assert len(removed) == 1, removed
    after = _exec_hosts()
    assert len(after) == size and removed[0] not in after, (removed, after)
    if nfs.serves():  # the leave took the node's access away before the provider terminated it
        nfs.address_refused(addresses[removed[0]])
