# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The balancer's sensing and deciding on the real local Grid Engine cluster.

Real jobs are submitted as the job user; sge_queue_facts is compared with what qstat itself
prints; playbooks/loadbalance.yml must plan growth under a burst and removal once idle. Nothing
is mocked. The balancer's state goes to a temporary file so the cluster's own state is untouched.
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


def _poll(state_path, *extra, check=False):
    # room for growth whatever size the cluster has when the test starts
    max_nodes = len(_facts()['hosts']) + 2
    argv = [_tool('ansible-playbook'), 'playbooks/loadbalance.yml', '-e', 'cluster=%s' % CLUSTER,
            '-e', 'state_path=%s' % state_path, '-e', 'max_nodes=%d' % max_nodes, '-e', 'min_nodes=1',
            '-e', 'job_wait_time=1', '-e', 'stabilization_time=0', '-e', 'idle_time=4']
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
    facts = _facts()
    slots = sum(h['slots_total'] for h in facts['hosts'].values())
    assert slots > 0
    # a burst: more single-slot jobs than slots, so some must wait
    ids = _submit(slots + 4, 25, 'lbtest')
    try:
        time.sleep(4)  # one scheduler run (schedule_interval is 1 s)
        seen = _qstat_ids()
        facts = _facts()
        pending = {j['id'] for j in facts['pending']}
        running = {j['id'] for j in facts['running']}
        ours = set(ids)
        # the module sees what qstat sees: same job ids, same split into waiting and running
        assert pending & ours == {i for i in ours if i in seen and 'qw' in seen[i]}
        assert running & ours == {i for i in ours if i in seen and seen[i] == 'r'}
        assert len(pending & ours) >= 4
        for job in facts['running']:
            if job['id'] in ours:
                assert job['owner'] == JOB_USER and job['host'] in facts['hosts'] and job['slots'] == 1
        for job in facts['pending']:
            if job['id'] in ours:
                assert job['task_count'] == 1 and job['slots'] == 1 and not job['held']
                assert abs(job['submit_time'] - time.time()) < 120

        # under the burst the plan grows the cluster, with a reason
        result = _poll(state_path)
        plan = result['plan']
        assert plan['add'] >= 1, result['msg']
        adds = [i for i in plan['items'] if i['action'] == 'add']
        assert adds and 'waiting' in adds[0]['reason'], plan['items']
        assert plan['remove'] == []
        assert os.path.exists(state_path), 'state not written on the master'

        # check mode decides the same way and writes nothing
        with open(state_path) as handle:
            before = handle.read()
        checked = _poll(state_path, check=True)
        assert checked['plan']['add'] >= 1
        with open(state_path) as handle:
            assert handle.read() == before, 'check mode wrote the state file'
    finally:
        _run(['qdel'] + [str(i) for i in ids])
    _wait_empty(ids)

    # idle: the first poll records the nodes idle, a later one (after idle_time) removes them
    first = _poll(state_path)
    assert first['plan']['add'] == 0
    time.sleep(6)
    second = _poll(state_path)
    plan = second['plan']
    removable = set(cluster_nodes)
    assert set(plan['remove']) and set(plan['remove']) <= removable, second['msg']
    assert MASTER_HOST not in plan['remove']
    for item in plan['items']:
        assert item['reason']
        if item['action'] == 'remove':
            assert 'idle' in item['reason']
