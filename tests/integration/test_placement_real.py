# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Weighted placement on the real local cluster (docs/placement.md).

A playbook reads the cluster with sge_queue_facts, turns it into the target distribution with the
placement_distribution filter, picks one host per job with placement_next_hosts and submits each
job with sge_submit as the job user, pinned to its host (qsub -q queue@host). Every job must run
on the host it was placed on and end with exit status 0; a hostile script argument reaches the
job as one literal argument and is never run by a shell.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import tempfile
import time

import pytest

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, JOB_USER, _run, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.integration

HOSTILE = '$(touch /tmp/geb-placement-owned)'
PLAYBOOK = '''
- name: Place and submit jobs
  hosts: "{{ cluster }}_master"
  gather_facts: false
  become: true
  tasks:
    - name: Read the cluster
      gridengine.balancer.sge_queue_facts:

    - name: Target distribution and one host per job
      ansible.builtin.set_fact:
        placement: "{{ ansible_facts.sge | gridengine.balancer.placement_distribution(queue='all.q') }}"

    - name: Hosts for the jobs
      ansible.builtin.set_fact:
        job_hosts: "{{ placement | gridengine.balancer.placement_next_hosts(jobs | int) }}"

    - name: Submit each job to its host as the job user
      gridengine.balancer.sge_submit:
        script: "{{ script }}"
        args: ["{{ hostile }}"]
        name: "placed{{ index }}"
        queue: all.q
        host: "{{ item }}"
        stdout_path: "{{ outdir }}"
        stderr_path: "{{ outdir }}"
      loop: "{{ job_hosts }}"
      loop_control:
        index_var: index
      become_user: "{{ job_user }}"
      become_method: ansible.builtin.su  # root to the job user: no password, no sudo needed
      register: submitted

    - name: What was placed where
      ansible.builtin.debug:
        msg: "{{ {'placement': placement.distribution, 'jobs': submitted.results | map(attribute='job_id') | list,
                  'hosts': job_hosts} | to_json }}"
'''


def test_jobs_run_where_the_placement_put_them(cluster_nodes, tmp_path):  # noqa: F811
    if os.path.exists('/tmp/geb-placement-owned'):
        os.unlink('/tmp/geb-placement-owned')
    outdir = tempfile.mkdtemp(prefix='geb-placement-')
    os.chmod(outdir, 0o777)
    script = os.path.join(outdir, 'job.sh')
    with open(script, 'w') as handle:
        handle.write('#!/bin/sh\nprintf "%s|%s\\n" "$(hostname)" "$1"\nsleep 2\n')
    os.chmod(script, 0o755)
    playbook = str(tmp_path / 'place.yml')
    with open(playbook, 'w') as handle:
        handle.write(PLAYBOOK)
    jobs = 6
    extra = {'cluster': CLUSTER, 'script': script, 'outdir': outdir, 'jobs': jobs,
             'job_user': JOB_USER, 'hostile': HOSTILE}
    proc = _run([_tool('ansible-playbook'), playbook, '-e', json.dumps(extra)],
                env={'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.json'}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout[proc.stdout.index('{\n'):])
    shown = None
    for play in result['plays']:
        for task in play['tasks']:
            if task['task']['name'] == 'What was placed where':
                shown = json.loads(list(task['hosts'].values())[0]['msg'])
    assert shown, 'no placement shown'
    placement, ids, hosts = shown['placement'], shown['jobs'], shown['hosts']
    assert len(ids) == jobs and len(hosts) == jobs
    assert abs(sum(placement.values()) - 1.0) < 1e-9 and set(hosts) <= set(placement)
    # within one job of its share at every point (the dispatcher's promise)
    for count in range(1, jobs + 1):
        for host, share in placement.items():
            assert abs(hosts[:count].count(host) - share * count) <= 1.0, (count, host, hosts, placement)

    deadline = time.time() + 180
    while time.time() < deadline:
        live = set(line.split()[0] for line in _run(['qstat', '-u', JOB_USER]).stdout.splitlines()[2:]
                   if line.split())
        if not live & set(str(i) for i in ids):
            break
        time.sleep(2)
    for job_id, host in zip(ids, hosts):
        for _attempt in range(60):  # the accounting record comes a little after the job ends
            acct = _run(['qacct', '-j', str(job_id)])
            if acct.returncode == 0:
                break
            time.sleep(1)
        fields = dict(line.split(None, 1) for line in acct.stdout.splitlines() if len(line.split(None, 1)) == 2)
        assert fields.get('hostname', '').strip() == host, (job_id, host, fields.get('hostname'))
        assert fields.get('exit_status', '?').split()[0] == '0' and fields.get('failed', '?').split()[0] == '0'
        with open(os.path.join(outdir, 'placed%d.o%s' % (ids.index(job_id), job_id))) as handle:
            ran_on, arg = handle.read().strip().split('|', 1)
        assert ran_on == host and arg == HOSTILE
    assert not os.path.exists('/tmp/geb-placement-owned'), 'the hostile argument was run by a shell'
