# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration tests against the real local Grid Engine cluster.

Bring the cluster up first (docs/local-cluster.md):

    ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_nodes=2
    .venv/bin/pytest tests/integration -m integration

Nothing here is mocked: the qmaster, the execds, the nodes' sshd and namespaces are real. The
only stand-in of the local cluster is NFS (no kernel NFS on these machines); no test here uses it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import pwd
import re
import shutil
import subprocess
import time
import uuid

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import local_node as ln

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, '.venv', 'bin')
CLUSTER = os.environ.get('GEB_TEST_CLUSTER', 'mycluster')
STATE_DIR = '/var/lib/gridengine-balancer/local-nodes'
# C.UTF-8: Grid Engine's output as in C, and ansible insists on a UTF-8 locale
SGE_ENV = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'LC_ALL': 'C.UTF-8'}
JOB_USER = 'tester'
MASTER_HOST = os.environ.get('GEB_TEST_MASTER', 'vm')


def _tool(name):
    path = os.path.join(VENV_BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


def _run(argv, env=None, timeout=300, **kwargs):
    full_env = dict(os.environ)
    full_env.update(SGE_ENV)
    full_env.update(env or {})
    return subprocess.run(argv, cwd=REPO, env=full_env, timeout=timeout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False, **kwargs)


def _cluster_nodes():
    """Running local nodes of the cluster, from the provider's state directory."""
    nodes = []
    for record in ln.list_records(STATE_DIR):
        if record.get('cluster') == CLUSTER and ln.running_pid(STATE_DIR, record):
            nodes.append(record['name'])
    return nodes


def _qhost():
    """{host: load or None} from qhost."""
    proc = _run(['qhost'])
    assert proc.returncode == 0, proc.stderr
    hosts = {}
    for line in proc.stdout.splitlines()[3:]:
        fields = line.split()
        if len(fields) >= 7:
            hosts[fields[0]] = None if fields[6] == '-' else float(fields[6])
    return hosts


def _why_not_up():
    if os.geteuid() != 0:
        return 'needs root (namespaces, Grid Engine admin commands)'
    if not shutil.which('qstat') or _tool('ansible') is None:
        return 'Grid Engine client or ansible not installed (bash scripts/setup.sh)'
    if _run(['qstat']).returncode != 0:
        return ('the qmaster does not answer: bring the cluster up with '
                'ansible-playbook playbooks/local_cluster.yml -e cluster=%s' % CLUSTER)
    if not _cluster_nodes():
        return ('cluster %s has no running local node: ansible-playbook '
                'playbooks/local_cluster.yml -e cluster=%s' % (CLUSTER, CLUSTER))
    return None


@pytest.fixture(scope='module')
def cluster_nodes():
    reason = _why_not_up()
    if reason:
        if os.environ.get('GEB_REQUIRE_CLUSTER') == '1':  # scripts/test.sh: a skip would hide a failure
            pytest.fail(reason)
        pytest.skip(reason)
    return _cluster_nodes()


def test_nodes_answer_ssh(cluster_nodes):
    """ansible reaches the master (local) and every node (ssh, the provider's key)."""
    proc = _run([_tool('ansible'), CLUSTER, '-m', 'ansible.builtin.ping'],
                env={'ANSIBLE_LOAD_CALLBACK_PLUGINS': '1', 'ANSIBLE_STDOUT_CALLBACK': 'json'})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hosts = json.loads(proc.stdout)['plays'][0]['tasks'][0]['hosts']
    for node in cluster_nodes:
        assert hosts.get(node, {}).get('ping') == 'pong', (node, hosts.get(node))


def test_qhost_lists_nodes_with_load(cluster_nodes):
    hosts = _qhost()
    for node in cluster_nodes:
        assert node in hosts, 'qhost does not list %s: %s' % (node, sorted(hosts))
        assert hosts[node] is not None, '%s reports no load (execd down?)' % node


def test_job_runs_on_a_node(cluster_nodes, tmp_path):
    """A job script submitted as the job user runs on a node and exits 0 (qacct + marker)."""
    try:
        user = pwd.getpwnam(JOB_USER)
    except KeyError:
        pytest.skip('job user %s does not exist (roles/sge_master creates it)' % JOB_USER)
    node = cluster_nodes[0]
    tag = 'itest-' + uuid.uuid4().hex[:8]
    # /home is shared by the master and the nodes: the job's files live in the user's home, so
    # the job user can write them on the node (unwritable output paths put a job into Eqw).
    work = os.path.join(user.pw_dir, tag)
    os.mkdir(work, 0o755)
    os.chown(work, user.pw_uid, user.pw_gid)
    script = os.path.join(work, 'job.sh')
    with open(script, 'w') as handle:
        # a job script, not "qsub -b y sh -c ...", which loses the quoting
        handle.write('#!/bin/sh\n'
                     'hostname > "%s/ran-on"\n'
                     'id -un >> "%s/ran-on"\n'
                     'exit 0\n' % (work, work))
    os.chmod(script, 0o755)
    os.chown(script, user.pw_uid, user.pw_gid)
    try:
        proc = _run(['runuser', '-u', JOB_USER, '--', 'env',
                     'SGE_ROOT=' + SGE_ENV['SGE_ROOT'], 'SGE_CELL=' + SGE_ENV['SGE_CELL'],
                     'qsub', '-terse', '-N', tag, '-S', '/bin/sh', '-l', 'hostname=' + node,
                     '-o', os.path.join(work, 'job.out'), '-e', os.path.join(work, 'job.err'),
                     script])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        job_id = proc.stdout.strip().split('.')[0]
        assert job_id.isdigit(), proc.stdout

        # the accounting record is written when the job ends (flushed within ~15 s)
        deadline = time.time() + 120
        acct = None
        while time.time() < deadline:
            result = _run(['qacct', '-j', job_id])
            if result.returncode == 0 and 'exit_status' in result.stdout:
                acct = result.stdout
                break
            time.sleep(1)
        assert acct is not None, 'job %s has no accounting record after 120 s; qstat: %s' % (
            job_id, _run(['qstat', '-j', job_id]).stdout)
        fields = dict(re.findall(r'^(\w+)\s+(.*?)\s*$', acct, re.M))
        assert fields.get('hostname') == node, fields
        assert fields.get('owner') == JOB_USER, fields
        assert fields.get('failed', '').split()[0] == '0', fields
        assert fields.get('exit_status', '').split()[0] == '0', fields
        with open(os.path.join(work, 'ran-on')) as handle:
            assert handle.read().split() == [node, JOB_USER]
    finally:
        shutil.rmtree(work, ignore_errors=True)


# The provider role (launch, launch again with no change, reach over ssh, terminate with nothing
# left) is the molecule scenario provider_local (extensions/molecule/provider_local).
