# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kill_cluster (StarCluster's -K) on the real local cluster: the balancer tears it down itself.

Marked ``kill`` and not ``integration``: it ends the cluster, so scripts/test.sh runs it after
every other test on the cluster (the molecule scenarios included), in place of the teardown.
Real jobs run first; continuous mode (``-e continuous=true -e kill_cluster=true``) lets them end,
drains and removes the idle nodes, and once only the master is left, drains the master, takes it
out of the cluster and stops its execd and qmaster. Then the loop ends by itself, green.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import subprocess
import time

from ansible_collections.gridengine.balancer.tests.integration.test_elastic_real import Jobs
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, MASTER_HOST, SGE_ENV, _cluster_nodes, _run, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

import pytest

pytestmark = pytest.mark.kill

ACCOUNTING = os.path.join(SGE_ENV['SGE_ROOT'], SGE_ENV['SGE_CELL'], 'common', 'accounting')


def _qmaster_pids():
    proc = subprocess.run(['pgrep', '-x', 'sge_qmaster'], capture_output=True, text=True, check=False)
    return proc.stdout.split()


def _accounting(job_ids):
    """{job id: (failed, exit_status)} read from the accounting file itself: qacct needs no
    qmaster, but reading the file shows what Grid Engine wrote (sge_accounting(5): job_number is
    field 6, failed 12, exit_status 13, colon-separated)."""
    out = {}
    with open(ACCOUNTING, encoding='utf-8', errors='replace') as handle:
        for line in handle:
            fields = line.rstrip('\n').split(':')
            if len(fields) > 13 and fields[5].isdigit() and int(fields[5]) in job_ids:
                out[int(fields[5])] = (fields[11], fields[12])
    return out


def test_the_balancer_terminates_the_cluster_after_its_jobs(cluster_nodes, tmp_path):  # noqa: F811
    assert _qmaster_pids(), 'the qmaster must run before this test'
    nodes_before = sorted(_cluster_nodes())
    assert nodes_before, 'the cluster must have nodes to remove'
    jobs = Jobs('kill')
    for seconds in (6, 8, 10, 12):
        jobs.submit(seconds)
    state_dir = str(tmp_path)
    argv = [_tool('ansible-playbook'), 'playbooks/loadbalance.yml', '-e', 'cluster=%s' % CLUSTER,
            '-e', 'continuous=true', '-e', 'max_polls=40', '-e', 'interval=5', '-e', 'kill_cluster=true',
            '-e', 'min_nodes=1', '-e', 'max_nodes=%d' % (len(nodes_before) + 1),
            '-e', 'job_wait_time=600', '-e', 'stabilization_time=0', '-e', 'idle_time=0',
            '-e', 'drain_settle_time=3',
            '-e', 'state_path=%s/state.json' % state_dir, '-e', 'journal_path=%s/journal.json' % state_dir,
            '-e', 'lock_path=%s/lock.json' % state_dir]
    started = time.time()
    proc = _run(argv, timeout=1500)
    seconds = time.time() - started
    out = proc.stdout
    print('kill_cluster: continuous run ended with rc %d after %.0f s' % (proc.returncode, seconds))
    assert proc.returncode == 0, out[-6000:] + proc.stderr[-2000:]
    assert re.search(r'poll_loop: poll \d+ terminated the cluster \(kill_cluster\)', out), out[-4000:]

    # every job ran to its end first: its own exit status, nothing killed
    outcomes = _accounting(set(jobs.ids))
    assert outcomes == {job: ('0', '0') for job in jobs.ids}, outcomes
    # the plan that killed it said why; the master left the cluster after its nodes
    assert 'kill_cluster, only the master is left and no job is queued or running' in out
    for node in nodes_before:
        assert 'leave %s: removed' % node in out, node
    assert 'leave %s: removed' % MASTER_HOST in out
    assert out.index('leave %s: removed' % MASTER_HOST) > max(out.index('leave %s: removed' % n) for n in nodes_before)
    # nothing of the cluster runs: no node, no qmaster; no node operation left in flight
    assert _cluster_nodes() == []
    assert _qmaster_pids() == []
    assert not os.path.exists(os.path.join(state_dir, 'lock.json'))
    journal = os.path.join(state_dir, 'journal.json')
    assert not os.path.exists(journal) or '"operations": []' in open(journal).read().replace('\n', '')
    with open('/etc/hosts') as handle:
        hosts = handle.read().split()
    assert not set(nodes_before) & set(hosts)
