# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adopt a cluster this project did not build, as a site would (docs/adopt.md, issue 19).

The cluster: a Grid Engine cell ``site`` made with Debian's own ``init_cluster`` and plain
``qconf`` by ``tests/adopt/site_cluster.sh`` (none of this collection's roles), with a parallel
environment ``mpi`` (``$fill_up``) and one static execution host ``static01``.

The user: a fresh directory holding only an inventory and group vars, no ``ansible.cfg`` of ours
(``ANSIBLE_CONFIG`` names an empty file), the collection installed from its built tarball into a
collections path of its own. They run ``ansible-playbook gridengine.balancer.loadbalance
-e cluster=site`` once per poll (as an AWX schedule would) while a burst of serial, array and
parallel jobs arrives.

It checks: the cluster grows (the 4-slot ``$fill_up`` jobs cannot run on the static host's 2
slots, so growth is for them too) and shrinks back afterwards; every job ends ``failed 0`` with
the exit status it chose; the parallel jobs ran across two hosts; ``static01`` is untouched (the
same execd process, in ``@allhosts``, its queue instance never disabled, its ``/etc/hosts`` line).

Needs root, the Debian Grid Engine packages and this machine's namespace nodes. The site cell uses
the standard ports, so the cell ``default`` (playbooks/local_cluster.yml) must be down; or, with
``SGE_QMASTER_PORT`` and ``SGE_EXECD_PORT`` in the environment, ports of its own, which the user's
group vars then name (``cluster_sge_qmaster_port``, ``cluster_sge_execd_port``: the balancer's runs
get no port from the environment). scripts/test.sh runs it that way (6448/6449) beside the local
cluster's transfer queue and burst tests. Its burst nodes are 10.77.0.201 and up.
Run: ``GEB_REQUIRE_CLUSTER=1 .venv/bin/pytest tests/adopt -q -m adopt``. About 6 minutes.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml

pytestmark = pytest.mark.adopt

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, '.venv', 'bin')
SITE_SCRIPT = os.path.join(REPO, 'tests', 'adopt', 'site_cluster.sh')
CLUSTER = 'site'
CELL = 'site'
STATIC = 'static01'
JOB_USER = 'tester'
MASTER = os.uname()[1]
SGE_ENV = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': CELL, 'LC_ALL': 'C.UTF-8'}
STATE_DIR = '/var/lib/gridengine-balancer/%s' % CLUSTER
NODES_DIR = '/var/lib/gridengine-balancer/local-nodes'
BURST_FORMAT = 'burst%02d'
POLL_DEADLINE = 900      # seconds for the whole burst: grow, run, shrink
POLL_PAUSE = 5           # seconds between two polls (the schedule's interval)
# the site's own ports, when the environment gives them (scripts/test.sh: beside the local cluster)
PORTS = {name: os.environ[name] for name in ('SGE_QMASTER_PORT', 'SGE_EXECD_PORT') if os.environ.get(name)}

# What the user writes: the inventory and the group vars, nothing else.
HOSTS_YML = {
    'all': {'children': {CLUSTER: {'children': {
        '%s_master' % CLUSTER: {'hosts': {MASTER: {
            'ansible_connection': 'local',
            'ansible_python_interpreter': '/usr/bin/python3'}}},
        # the provider writes the nodes it launches into nodes.yml beside this file
        '%s_nodes' % CLUSTER: {'hosts': {}},
    }}}}}
GROUP_VARS = {
    # where the site's Grid Engine is and how nodes join it
    'cluster_provider': 'local',
    'cluster_sge_root': '/var/lib/gridengine',
    'cluster_sge_cell': CELL,
    'cluster_hostgroup': '@allhosts',
    'cluster_queue': 'all.q',
    'cluster_job_user': JOB_USER,
    'cluster_nfs_exports': ['/home', '/var/lib/gridengine'],
    # the local provider's machines (namespace nodes on this host; on EC2: cluster_provider ec2)
    'cluster_ssh_key': NODES_DIR + '/id_ed25519',
    'cluster_bridge': 'sgebr0',
    'cluster_bridge_address': '10.77.0.1/24',
    'cluster_node_name_format': BURST_FORMAT,
    'cluster_node_address_format': '10.77.0.%d',
    'cluster_node_address_offset': 200,   # 10.77.0.201 and up: apart from the burst partner's (.101) and the EC2 subnet (.128/26)
    # the balancer's options (docs/elastic.md); the rest are the shipped defaults
    'max_nodes': 4,
    'add_nodes_per_iter': 3,
    'job_wait_time': 15,
    'stabilization_time': 0,
    'idle_time': 20,
    'drain_settle_time': 3,
}
if PORTS:
    GROUP_VARS['cluster_sge_qmaster_port'] = int(PORTS['SGE_QMASTER_PORT'])
    GROUP_VARS['cluster_sge_execd_port'] = int(PORTS['SGE_EXECD_PORT'])


def _run(argv, env=None, timeout=300, cwd=REPO, drop=()):
    full_env = dict(os.environ)
    full_env.update(SGE_ENV)
    full_env.update(env or {})
    for name in drop:
        full_env.pop(name, None)
    return subprocess.run(argv, cwd=cwd, env=full_env, timeout=timeout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def _tool(name):
    path = os.path.join(VENV_BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


def _exec_hosts():
    proc = _run(['qconf', '-sel'])
    return set(proc.stdout.split()) if proc.returncode == 0 else set()


def _static_execd_pid():
    key = NODES_DIR + '/id_ed25519'
    proc = _run(['ssh', '-n', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10', '-i', key,
                 '-o', 'UserKnownHostsFile=%s/%s/known_hosts' % (NODES_DIR, STATIC),
                 'root@10.77.0.90', 'pgrep -x sge_execd'])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _static_queue_state():
    """The state column of all.q@static01 in qstat -f ('' when it has no flag)."""
    out = _run(['qstat', '-f', '-q', 'all.q@%s' % STATIC]).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == 'all.q@%s' % STATIC:
            return fields[5] if len(fields) > 5 else ''
    return None


class Site(object):
    """The user's side: a workspace with an inventory and group vars, the installed collection."""

    def __init__(self, root):
        self.root = root
        self.inventory = os.path.join(root, 'inventory')
        self.collections = os.path.join(root, 'collections')
        os.makedirs(os.path.join(self.inventory, 'group_vars'))
        with open(os.path.join(self.inventory, 'hosts.yml'), 'w') as handle:
            yaml.safe_dump(HOSTS_YML, handle, default_flow_style=False)
        with open(os.path.join(self.inventory, 'group_vars', '%s.yml' % CLUSTER), 'w') as handle:
            yaml.safe_dump(GROUP_VARS, handle, default_flow_style=False)
        self.config = os.path.join(root, 'empty.cfg')
        with open(self.config, 'w') as handle:
            handle.write('[defaults]\n')
        self._install()

    def _install(self):
        """ansible-galaxy collection build + install into this workspace's own collections path;
        amazon.aws and ansible.posix beside it (Galaxy is unreachable: from setup.sh's copies)."""
        build = os.path.join(self.root, 'build')
        proc = _run([_tool('ansible-galaxy'), 'collection', 'build', '--output-path', build, REPO])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        tarball, = glob.glob(os.path.join(build, 'gridengine-balancer-*.tar.gz'))
        proc = _run([_tool('ansible-galaxy'), 'collection', 'install', '--no-deps', '-p', self.collections, tarball],
                    cwd=self.root, env=self.env())
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for dep in ('amazon', 'ansible'):
            os.symlink(os.path.join(REPO, '.collections', 'ansible_collections', dep),
                       os.path.join(self.collections, 'ansible_collections', dep))
        self.installed = os.path.join(self.collections, 'ansible_collections', 'gridengine', 'balancer')
        assert os.path.isdir(self.installed) and not os.path.islink(self.installed)

    def env(self):
        return {'ANSIBLE_CONFIG': self.config, 'ANSIBLE_COLLECTIONS_PATH': self.collections,
                'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.json'}

    def playbook(self, name, *extra, **kwargs):
        argv = [_tool('ansible-playbook'), 'gridengine.balancer.%s' % name, '-i', self.inventory,
                '-e', 'cluster=%s' % CLUSTER]
        for item in extra:
            argv += ['-e', item]
        # the ports come from the user's group vars only, as from an AWX job's
        return _run(argv, cwd=self.root, env=self.env(), timeout=kwargs.get('timeout', 900), drop=tuple(PORTS))

    def poll(self):
        """One poll; returns its plan (the elastic_plan result)."""
        proc = self.playbook('loadbalance')
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
        result = json.loads(proc.stdout[proc.stdout.index('{\n'):])
        for play in result['plays']:
            for task in play['tasks']:
                if task['task']['name'] == 'Decide what to add and remove':
                    return task['hosts'][MASTER]['plan']
        raise AssertionError('no plan in the poll output')


class Burst(object):
    """The jobs: each chooses its exit status, so qacct shows whether it ended on its own."""

    def __init__(self, workdir):
        self.dir = workdir
        os.chmod(self.dir, 0o755)
        self.out = os.path.join(self.dir, 'out')
        os.mkdir(self.out)
        shutil.chown(self.out, JOB_USER, JOB_USER)
        self.expected = {}     # (job id, task id or None) -> exit status
        self.pe_jobs = []

    def _script(self, name, body):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as handle:
            handle.write('#!/bin/sh\n' + body)
        os.chmod(path, 0o755)
        return path

    def _qsub(self, *args):
        command = 'qsub -terse -o %s -e %s %s' % (self.out, self.out, ' '.join(args))
        ports = ''.join('%s=%s ' % item for item in sorted(PORTS.items()))
        proc = _run(['su', '-', JOB_USER, '-c', '%sSGE_ROOT=%s SGE_CELL=%s %s' % (
            ports, SGE_ENV['SGE_ROOT'], CELL, command)])
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout.strip().split('.')[0])

    def submit(self):
        for k in range(4):
            job = self._qsub('-N', 'serial%d' % k, self._script('serial%d.sh' % k, 'sleep 25\nexit %d\n' % (k + 1)))
            self.expected[(job, None)] = k + 1
        job = self._qsub('-N', 'array', '-t', '1-6', self._script('array.sh', 'sleep 20\nexit $((SGE_TASK_ID + 10))\n'))
        for task in range(1, 7):
            self.expected[(job, task)] = task + 10
        for k in range(2):
            # $fill_up over 2-slot hosts: 4 slots are two hosts; the job writes the hosts it got
            body = 'cp "$PE_HOSTFILE" %s/pe_hosts.$JOB_ID\nsleep 30\nexit %d\n' % (self.out, 20 + k)
            job = self._qsub('-N', 'mpi%d' % k, '-pe', 'mpi', '4', self._script('mpi%d.sh' % k, body))
            self.expected[(job, None)] = 20 + k
            self.pe_jobs.append(job)

    def active(self):
        out = _run(['qstat', '-u', '*']).stdout
        ids = set(int(line.split()[0]) for line in out.splitlines()[2:] if line.split() and line.split()[0].isdigit())
        return ids & set(job for job, _task in self.expected)

    def outcomes(self):
        """{(job, task): (failed, exit_status)} from qacct."""
        found = {}
        for job in sorted(set(job for job, _task in self.expected)):
            for _attempt in range(60):
                proc = _run(['qacct', '-j', str(job)])
                if proc.returncode == 0:
                    break
                time.sleep(1)
            for record in re.split(r'(?m)^=+$', proc.stdout):
                fields = dict(line.split(None, 1) for line in record.splitlines() if len(line.split(None, 1)) == 2)
                if 'jobnumber' not in fields:
                    continue
                task = fields.get('taskid', 'undefined').strip()
                key = (job, None if task == 'undefined' else int(task))
                found[key] = (fields.get('failed', '?').split()[0], int(fields.get('exit_status', '-1').split()[0]))
        return found

    def pe_hosts(self, job):
        with open(os.path.join(self.out, 'pe_hosts.%d' % job)) as handle:
            return sorted(line.split()[0] for line in handle if line.strip())


@pytest.fixture(scope='module')
def site_cluster():
    if os.geteuid() != 0 or not shutil.which('qconf'):
        pytest.skip('needs root and the Grid Engine packages')
    if not PORTS and subprocess.run(['pgrep', '-x', 'sge_qmaster'], stdout=subprocess.DEVNULL, check=False).returncode == 0 \
            and not os.path.exists('/var/spool/gridengine-%s/made-by-site_cluster.sh' % CELL):
        message = 'a qmaster runs (the local cluster?): the site cell needs the standard ports'
        if os.environ.get('GEB_REQUIRE_CLUSTER'):
            pytest.fail(message)
        pytest.skip(message)
    shutil.rmtree(STATE_DIR, ignore_errors=True)   # this test's own cluster name: a fresh start
    proc = _run(['bash', SITE_SCRIPT, 'up'], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield
    proc = _run(['bash', SITE_SCRIPT, 'down'], timeout=300)
    shutil.rmtree(STATE_DIR, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _burst_nodes():
    """Running namespace nodes the provider launched for the site cluster."""
    names = []
    for path in glob.glob(os.path.join(NODES_DIR, '*', 'node.json')):
        with open(path) as handle:
            record = json.load(handle)
        if record.get('cluster') == CLUSTER:
            names.append(record['name'])
    return sorted(names)


def test_adopt_a_cluster_built_by_hand(site_cluster, tmp_path):  # pylint: disable=redefined-outer-name,unused-argument
    started = time.time()
    site = Site(str(tmp_path / 'user'))
    burst = Burst(tempfile.mkdtemp(prefix='geb-adopt-'))
    static_before = {'pid': _static_execd_pid(), 'state': _static_queue_state()}
    assert _exec_hosts() == {STATIC}
    assert 'd' not in static_before['state'], static_before

    burst.submit()
    added, removed, polls, peak, static_states = set(), set(), 0, 0, set()
    try:
        deadline = time.time() + POLL_DEADLINE
        while True:
            t_poll = time.time()
            plan = site.poll()
            polls += 1
            now = _exec_hosts()
            print('poll %2d at %4ds (%3ds): add %s remove %s; hosts %s; jobs left %d' % (
                polls, t_poll - started, time.time() - t_poll, plan.get('add'), plan.get('remove'),
                ' '.join(sorted(now)), len(burst.active())))
            peak = max(peak, len(now))
            added |= now - {STATIC}
            removed |= set(plan.get('remove', []))
            static_states.add(_static_queue_state())
            assert STATIC not in plan.get('remove', []), plan
            if not burst.active() and now == {STATIC}:
                break
            assert time.time() < deadline, 'after %d polls: jobs %s, hosts %s, plan %s' % (
                polls, sorted(burst.active()), sorted(now), plan.get('items'))
            time.sleep(POLL_PAUSE)
        # a long idle period: one more poll after idle_time with nothing to do
        time.sleep(GROUP_VARS['idle_time'])
        plan = site.poll()
        polls += 1
        assert plan['add'] == 0 and plan['remove'] == [], plan
        kept = [i['reason'] for i in plan['items'] if i.get('host') == STATIC]
        assert kept and 'not launched by the balancer' in kept[0], plan['items']
    finally:
        if burst.active():
            _run(['qdel', '-f'] + [str(job) for job in sorted(burst.active())])
        for node in _burst_nodes():
            site.playbook('node_remove', 'node=%s' % node)

    outcomes = burst.outcomes()
    wall = time.time() - started
    assert outcomes == dict((key, ('0', status)) for key, status in burst.expected.items()), outcomes
    for job in burst.pe_jobs:
        hosts = burst.pe_hosts(job)
        assert len(set(hosts)) >= 2, (job, hosts)   # it spanned hosts ($fill_up: as free slots fall)
    assert added and removed == added, (added, removed)
    assert _burst_nodes() == []
    assert _exec_hosts() == {STATIC}
    assert _static_execd_pid() == static_before['pid']
    assert not any('d' in state for state in static_states), static_states   # never disabled (drained)
    members = _run(['qconf', '-shgrp', '@allhosts']).stdout
    assert re.search(r'\b%s\b' % STATIC, members), members
    with open('/etc/hosts') as handle:
        assert any(line.split()[:2] == ['10.77.0.90', STATIC] for line in handle if line.strip()), 'hosts line gone'
    figures = {'jobs': len(set(job for job, _t in burst.expected)), 'tasks': len(burst.expected),
               'pe_jobs': len(burst.pe_jobs), 'nodes_added': len(added), 'nodes_removed': len(removed),
               'peak_exec_hosts': peak, 'polls': polls, 'wall_s': round(wall)}
    print('ADOPT FIGURES %s' % json.dumps(figures, sort_keys=True))
    shutil.rmtree(burst.dir, ignore_errors=True)
