# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one-poll job as AWX runs it, on the real local cluster (issue 22 item 4).

AWX runs a job through ansible-runner over a private data directory: ``project/`` (the synced
project, here a site project whose ``loadbalance.yml`` imports ``gridengine.balancer.loadbalance``
as docs/awx.md shows), ``inventory/``, ``env/extravars`` (the template's extra vars plus AWX's own
``awx_job_id``), ``env/settings``, ``env/envvars``, and the project's collections installed into
``requirements_collections/`` (here from the built tarball). These tests lay it out the same way,
run ``ansible-runner run`` and read what AWX reads: ``artifacts/<ident>/status``, ``rc`` and the
job events. Nothing of this checkout's ``ansible.cfg`` is seen (the project has none; ANSIBLE_*
of the caller's environment are dropped).

The poll's min_nodes and max_nodes are the cluster's size, so it changes nothing on the cluster;
state, journal and lock go to a temporary directory.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import json
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, MASTER_HOST, REPO, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.integration

DECIDE = 'Decide what to add and remove'


class PrivateDataDir(object):
    """A private data directory laid out as AWX lays it out for a job."""

    def __init__(self, root, collections):
        self.root = root
        for sub in ('project', 'inventory', 'env'):
            os.makedirs(os.path.join(root, sub))
        with open(os.path.join(root, 'project', 'loadbalance.yml'), 'w') as handle:
            handle.write('---\n- name: One poll of the balancer\n'
                         '  ansible.builtin.import_playbook: gridengine.balancer.loadbalance\n')
        local = os.path.join(REPO, 'inventory', 'local')
        for name in ('hosts.yml', 'nodes.yml', 'group_vars'):
            src = os.path.join(local, name)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(root, 'inventory', name))
            elif os.path.exists(src):
                shutil.copy(src, os.path.join(root, 'inventory', name))
        self._write('env/settings', {'idle_timeout': 600, 'job_timeout': 1800, 'pexpect_timeout': 5,
                                     'suppress_ansible_output': True})
        self._write('env/envvars', {'ANSIBLE_COLLECTIONS_PATH': collections,
                                    'ANSIBLE_FORCE_COLOR': 'False', 'LC_ALL': 'C.UTF-8'})

    def _write(self, name, data):
        with open(os.path.join(self.root, name), 'w') as handle:
            yaml.safe_dump(data, handle, default_flow_style=False)

    def run(self, ident, extravars=None, module=None, module_args=None):
        """ansible-runner run; returns (status, rc, events, stdout)."""
        self._write('env/extravars', extravars or {})
        argv = [_tool('ansible-runner'), 'run', self.root, '--ident', ident]
        if module:
            argv += ['--hosts', '%s_master' % CLUSTER, '-m', module, '-a', module_args]
        else:
            argv += ['-p', 'loadbalance.yml']
        env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
        env.update({'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'LC_ALL': 'C.UTF-8',
                    # the execution environment's ansible-playbook: this checkout's venv
                    'PATH': os.path.dirname(_tool('ansible-playbook')) + os.pathsep + env.get('PATH', '')})
        proc = subprocess.run(argv, cwd=self.root, env=env, timeout=900, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=False)
        art = os.path.join(self.root, 'artifacts', ident)
        assert os.path.isdir(art), proc.stdout[-2000:] + proc.stderr[-2000:]
        with open(os.path.join(art, 'status')) as handle:
            status = handle.read().strip()
        with open(os.path.join(art, 'rc')) as handle:
            rc = int(handle.read().strip())
        events = []
        for path in glob.glob(os.path.join(art, 'job_events', '*.json')):
            with open(path) as handle:
                events.append(json.load(handle))
        events.sort(key=lambda e: e.get('counter', 0))
        with open(os.path.join(art, 'stdout')) as handle:
            stdout = handle.read()
        return status, rc, events, stdout


def _task_events(events, task, kind=None):
    return [e for e in events if e.get('event_data', {}).get('task') == task
            and (kind is None or e['event'] == kind)]


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """The collection built and installed from its tarball, its dependencies beside it."""
    root = str(tmp_path_factory.mktemp('awx-collections'))
    build = os.path.join(root, 'build')
    proc = subprocess.run([_tool('ansible-galaxy'), 'collection', 'build', '--output-path', build, REPO],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    tarball, = glob.glob(os.path.join(build, '*.tar.gz'))
    path = os.path.join(root, 'requirements_collections')
    proc = subprocess.run([_tool('ansible-galaxy'), 'collection', 'install', '--no-deps', '-p', path, tarball],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False,
                          cwd=root)
    assert proc.returncode == 0, proc.stdout
    for dep in ('amazon', 'ansible', 'awx'):
        os.symlink(os.path.join(REPO, '.collections', 'ansible_collections', dep),
                   os.path.join(path, 'ansible_collections', dep))
    return path


def _size():
    """The cluster's size as the balancer counts it: exec hosts (the master is one)."""
    proc = subprocess.run(['qconf', '-sel'], stdout=subprocess.PIPE, universal_newlines=True, check=True,
                          env=dict(os.environ, SGE_ROOT='/var/lib/gridengine', SGE_CELL='default'))
    return len(proc.stdout.split())


def test_awx_job_poll_overlap_and_wrong_cluster(cluster_nodes, installed, tmp_path):  # noqa: F811
    pdd = PrivateDataDir(str(tmp_path / 'pdd'), installed)
    state = tmp_path / 'state'
    state.mkdir(mode=0o700)
    size = _size()
    template = {'cluster': CLUSTER, 'continuous': False, 'max_nodes': size, 'min_nodes': size,
                'state_path': str(state / 'state.json'), 'journal_path': str(state / 'journal.json'),
                'lock_path': str(state / 'lock.json')}

    # 1. the scheduled job: successful, its events carry the plan, its output one line per item
    status, rc, events, stdout = pdd.run('101', dict(template, awx_job_id=101))
    assert (status, rc) == ('successful', 0), stdout[-4000:]
    decided = _task_events(events, DECIDE, 'runner_on_ok')
    assert len(decided) == 1, [e['event'] for e in events]
    plan = decided[0]['event_data']['res']['plan']
    assert plan['add'] == 0 and plan['remove'] == [], plan
    stats = [e for e in events if e['event'] == 'playbook_on_stats'][-1]['event_data']
    assert not stats.get('failures') and not stats.get('dark'), stats
    assert '\\n' not in stdout, 'an escaped line break in the job output'
    assert not os.path.exists(str(state / 'lock.json')), 'the job did not give its lock back'

    # 2. an overlapping job: another AWX job holds the lock; this one fails naming it, acts on
    #    nothing and leaves the holder's lock as it was
    status, rc, events, stdout = pdd.run(
        'hold', {}, module='gridengine.balancer.balancer_lock',
        module_args='cluster=%s owner="AWX job 102" ttl=600 path=%s' % (CLUSTER, state / 'lock.json'))
    assert (status, rc) == ('successful', 0), stdout[-3000:]
    token = [e for e in events if e['event'] == 'runner_on_ok'][0]['event_data']['res']['token']
    with open(str(state / 'lock.json')) as handle:
        held = handle.read()
    status, rc, events, stdout = pdd.run('103', dict(template, awx_job_id=103))
    assert status == 'failed' and rc != 0, stdout[-3000:]
    refused = _task_events(events, "Take the cluster's lock (one balancer at a time)", 'runner_on_failed')
    assert refused and 'AWX job 102' in json.dumps(refused[0]['event_data']['res']), refused
    assert not _task_events(events, DECIDE), 'the overlapping job went on to decide'
    with open(str(state / 'lock.json')) as handle:
        assert handle.read() == held
    status, rc, events, stdout = pdd.run(
        'release', {}, module='gridengine.balancer.balancer_lock',
        module_args='cluster=%s state=absent token=%s path=%s' % (CLUSTER, token, state / 'lock.json'))
    assert (status, rc) == ('successful', 0), stdout[-3000:]

    # 3. a template with a wrong cluster name: the job ends failed, the message names the group
    status, rc, events, stdout = pdd.run('104', dict(template, cluster='nosuch', awx_job_id=104))
    assert status == 'failed' and rc != 0, stdout[-3000:]
    assert 'nosuch_master' in stdout, stdout[-3000:]
    assert not _task_events(events, DECIDE)
    assert MASTER_HOST not in json.dumps([e['event_data'].get('host') for e in events if 'event_data' in e])
