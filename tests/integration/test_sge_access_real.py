# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sge_host_list, sge_manager, sge_project, sge_userset and sge_daemon against the real local
cluster (issue 24).

For each module but sge_daemon, a block of one play run with ansible-playbook on the master
(``<cluster>_master``): change an object, run the same task again (``changed`` must be false), run
it in check mode with another value (it must report the change), then read it with ``qconf`` (not
with the module): the change must be there and the check-mode value not; in an ``always`` section,
restore what was there before. The test then reads ``qconf`` itself and checks that the original
is back.

Objects used: a cluster node that is not a submit host (added to the submit host list, then
removed; the part is left out when every node is one), the job user ``tester`` as an operator
(left out when it is one already), a project ``geb_itest_prj`` and a user set ``geb_itest_us``
(both new, deleted at the end).

sge_daemon: a check-mode stop of the execd of a node whose execd reports load: it must report a
change and stop nothing (qhost still has the node's load values afterwards, and the execd still
answers ``qping``).

Skips (fails with GEB_REQUIRE_CLUSTER=1) when the cluster is not up. One ansible-playbook run of
21 tasks; not yet timed (written without running it: the brief reserved the cluster).

    .venv/bin/pytest tests/integration/test_sge_access_real.py -m integration
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import socket

import pytest

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, SGE_ENV, JOB_USER, _qhost, _run)
# one playbook run, its tasks' results by name (the same helper as the object modules' test)
from ansible_collections.gridengine.balancer.tests.integration.test_sge_objects_real import _play
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.integration

PROJECT = 'geb_itest_prj'
USERSET = 'geb_itest_us'


def _qconf(*args):
    proc = _run(['qconf'] + list(args))
    return proc.returncode, proc.stdout, proc.stderr


def _names(*args):
    rc, out, _err = _qconf(*args)
    return out.split() if rc == 0 else []


def _value(text, key):
    for line in text.splitlines():
        fields = line.split(None, 1)
        if fields and fields[0] == key:
            return fields[1].strip() if len(fields) > 1 else ''
    return None


HEAD = '''---
- name: sge access objects
  hosts: {cluster}_master
  gather_facts: false
  environment:
    SGE_ROOT: {root}
    SGE_CELL: {cell}
    LC_ALL: C.UTF-8
  module_defaults:
    group/gridengine.balancer.sge:
      sge_root: {root}
      sge_cell: {cell}
  tasks:
'''

TASKS = '''
    - name: submit
      when: submit_node | length > 0
      block:
        - name: submit change
          gridengine.balancer.sge_host_list: {{list: submit, host: "{{{{ submit_node }}}}"}}
        - name: submit again
          gridengine.balancer.sge_host_list: {{list: submit, host: "{{{{ submit_node }}}}"}}
        - name: submit check
          gridengine.balancer.sge_host_list: {{list: submit, host: "{{{{ submit_node }}}}", state: absent}}
          check_mode: true
        - name: submit read after check
          ansible.builtin.command: qconf -ss
          changed_when: false
      always:
        - name: submit restore
          gridengine.balancer.sge_host_list: {{list: submit, host: "{{{{ submit_node }}}}", state: absent}}

    - name: operator
      when: operator_user | length > 0
      block:
        - name: operator change
          gridengine.balancer.sge_manager: {{role: operator, users: ["{{{{ operator_user }}}}"]}}
        - name: operator again
          gridengine.balancer.sge_manager: {{role: operator, users: ["{{{{ operator_user }}}}"]}}
        - name: operator check
          gridengine.balancer.sge_manager: {{role: operator, users: ["{{{{ operator_user }}}}"], state: absent}}
          check_mode: true
        - name: operator read after check
          ansible.builtin.command: qconf -so
          changed_when: false
      always:
        - name: operator restore
          gridengine.balancer.sge_manager: {{role: operator, users: ["{{{{ operator_user }}}}"], state: absent}}

    - name: project
      block:
        - name: project change
          gridengine.balancer.sge_project: {{name: {project}, fshare: 10, acl: [arusers]}}
        - name: project again
          gridengine.balancer.sge_project: {{name: {project}, fshare: 10, acl: [arusers]}}
        - name: project check
          gridengine.balancer.sge_project: {{name: {project}, fshare: 20}}
          check_mode: true
        - name: project read after check
          ansible.builtin.command: qconf -sprj {project}
          changed_when: false
      always:
        - name: project restore
          gridengine.balancer.sge_project: {{name: {project}, state: absent}}

    - name: userset
      block:
        - name: userset change
          gridengine.balancer.sge_userset: {{name: {userset}, entries: ["{{{{ job_user }}}}"], mode: exact}}
        - name: userset again
          gridengine.balancer.sge_userset: {{name: {userset}, entries: ["{{{{ job_user }}}}"], mode: exact}}
        - name: userset check
          gridengine.balancer.sge_userset: {{name: {userset}, entries: [root]}}
          check_mode: true
        - name: userset read after check
          ansible.builtin.command: qconf -su {userset}
          changed_when: false
      always:
        - name: userset restore
          gridengine.balancer.sge_userset: {{name: {userset}, state: absent}}

    - name: daemon check
      gridengine.balancer.sge_daemon: {{daemon: execd, host: "{{{{ execd_node }}}}"}}
      check_mode: true
'''


def _ok(results, name, changed):
    result = results.get(name)
    assert result is not None, 'task %r did not run: %s' % (name, sorted(results))
    assert not result.get('failed'), (name, result)
    assert result.get('changed') is changed, (name, result)
    return result


def _execd_port():
    try:
        return socket.getservbyname('sge_execd', 'tcp')
    except OSError:
        return 6445


def test_change_read_idempotent_check_restore(cluster_nodes, tmp_path):  # noqa: F811 pylint: disable=redefined-outer-name
    assert PROJECT not in _names('-sprjl'), '%s left over from an earlier run' % PROJECT
    assert USERSET not in _names('-sul'), '%s left over from an earlier run' % USERSET
    submit_before = _names('-ss')
    operators_before = _names('-so')
    free = [n for n in cluster_nodes if n not in submit_before]
    submit_node = free[0] if free else ''
    operator_user = JOB_USER if JOB_USER not in operators_before else ''
    loads = _qhost()
    reporting = [n for n in cluster_nodes if loads.get(n) is not None]
    assert reporting, 'no node of %s reports load: %s' % (cluster_nodes, loads)
    execd_node = reporting[0]
    extra = dict(submit_node=submit_node, operator_user=operator_user, job_user=JOB_USER,
                 execd_node=execd_node)

    play = (HEAD.format(cluster=CLUSTER, root=SGE_ENV['SGE_ROOT'], cell=SGE_ENV['SGE_CELL'])
            + TASKS.format(project=PROJECT, userset=USERSET))
    proc, results = _play(tmp_path, 'access.yml', play, extra)

    for name in ('submit restore', 'operator restore', 'project restore', 'userset restore'):
        assert not results.get(name, {}).get('failed'), (name, results.get(name))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    if submit_node:
        _ok(results, 'submit change', True)
        _ok(results, 'submit again', False)
        check = _ok(results, 'submit check', True)
        assert check['commands'] == ['qconf -ds %s' % submit_node], check
        assert submit_node in results['submit read after check']['stdout'].split()
        _ok(results, 'submit restore', True)

    if operator_user:
        _ok(results, 'operator change', True)
        _ok(results, 'operator again', False)
        _ok(results, 'operator check', True)
        assert operator_user in results['operator read after check']['stdout'].split()
        _ok(results, 'operator restore', True)

    _ok(results, 'project change', True)
    _ok(results, 'project again', False)
    _ok(results, 'project check', True)
    prj = results['project read after check']['stdout']
    assert _value(prj, 'fshare') == '10' and _value(prj, 'acl') == 'arusers', prj
    _ok(results, 'project restore', True)

    _ok(results, 'userset change', True)
    _ok(results, 'userset again', False)
    check = _ok(results, 'userset check', True)
    assert sorted(check['entries']) == sorted([JOB_USER, 'root']), check
    us = results['userset read after check']['stdout']
    assert _value(us, 'entries') == JOB_USER, us
    _ok(results, 'userset restore', True)

    daemon = _ok(results, 'daemon check', True)
    assert daemon['commands'] == ['qconf -ke %s' % execd_node] and daemon['was_running'], daemon

    # the originals are back, and the execd still runs (read by the test itself)
    assert PROJECT not in _names('-sprjl')
    assert USERSET not in _names('-sul')
    assert sorted(_names('-ss')) == sorted(submit_before)
    assert sorted(_names('-so')) == sorted(operators_before)
    assert _qhost().get(execd_node) is not None, 'the execd of %s stopped reporting' % execd_node
    ping = _run(['qping', '-info', execd_node, str(_execd_port()), 'execd', '1'], timeout=60)
    assert ping.returncode == 0, 'the execd of %s does not answer qping: %s' % (execd_node, ping.stdout + ping.stderr)
