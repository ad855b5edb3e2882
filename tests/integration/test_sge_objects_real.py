# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sge_complex, sge_pe, sge_sched_conf and sge_conf against the real local cluster (issue 24).

For each module a block of one play, run with ansible-playbook on the master (``<cluster>_master``):
change an object, run the same task again (``changed`` must be false), run it in check mode with
another value (it must report the change), then read it with ``qconf`` (not with the module): the
change must be there and the check-mode value not; in an ``always`` section, restore what was
there before. The test then reads ``qconf`` itself and checks that the original is back.

Objects used: a complex attribute ``geb_itest`` and a PE ``geb_itest_pe`` (both new, deleted at
the end), the scheduler's ``maxujobs``, the global configuration's ``max_aj_instances`` (both set
back to the value read first), and the local configuration of a node that has none (created with
the global ``load_report_time`` value, then deleted). Skips (fails with GEB_REQUIRE_CLUSTER=1)
when the cluster is not up. One ansible-playbook run of 25 tasks. A first version (two runs, 31
tasks) took 110 s on the shared machine (2026-11-27, run by mistake while writing it); this one
has not been timed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, SGE_ENV, _run, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.integration

COMPLEX = 'geb_itest'
PE = 'geb_itest_pe'
JSON_ENV = {'ANSIBLE_LOAD_CALLBACK_PLUGINS': '1', 'ANSIBLE_STDOUT_CALLBACK': 'json'}


def _qconf(*args):
    proc = _run(['qconf'] + list(args))
    return proc.returncode, proc.stdout, proc.stderr


def _value(text, key):
    for line in text.splitlines():
        fields = line.split(None, 1)
        if fields and fields[0] == key:
            return fields[1].strip() if len(fields) > 1 else ''
    return None


def _complex_line(text, name):
    for line in text.splitlines():
        if line.split()[:1] == [name]:
            return line.split()
    return None


def _play(tmp_path, name, text, extra_vars):
    path = tmp_path / name
    path.write_text(text)
    proc = _run([_tool('ansible-playbook'), str(path), '-e', json.dumps(extra_vars)], env=JSON_ENV, timeout=180)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError('ansible-playbook did not print JSON (rc %s):\n%s\n%s'
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    results = {}
    for play in out['plays']:
        for task in play['tasks']:
            for result in task['hosts'].values():
                results[task['task']['name']] = result
    return proc, results


HEAD = '''---
- name: {title}
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

OBJECTS = '''
    - name: complex
      block:
        - name: complex change
          gridengine.balancer.sge_complex:
            attributes:
              - {{name: {complex}, type: INT, relop: "<=", requestable: true, consumable: true, default: 0, urgency: 0}}
        - name: complex again
          gridengine.balancer.sge_complex:
            attributes:
              - {{name: {complex}, type: INT, relop: "<=", requestable: true, consumable: true, default: 0, urgency: 0}}
        - name: complex check
          gridengine.balancer.sge_complex:
            attributes:
              - {{name: {complex}, urgency: 5}}
          check_mode: true
        - name: complex read after check
          ansible.builtin.command: qconf -sc
          changed_when: false
      always:
        - name: complex restore
          gridengine.balancer.sge_complex:
            attributes:
              - {{name: {complex}, state: absent}}

    - name: pe
      block:
        - name: pe change
          gridengine.balancer.sge_pe:
            name: {pe}
            attributes: {{slots: 4, allocation_rule: $fill_up}}
        - name: pe again
          gridengine.balancer.sge_pe:
            name: {pe}
            attributes: {{slots: 4, allocation_rule: $fill_up}}
        - name: pe check
          gridengine.balancer.sge_pe:
            name: {pe}
            attributes: {{slots: 8}}
          check_mode: true
        - name: pe read after check
          ansible.builtin.command: qconf -sp {pe}
          changed_when: false
      always:
        - name: pe restore
          gridengine.balancer.sge_pe:
            name: {pe}
            state: absent

    - name: sched_conf
      block:
        - name: sched_conf change
          gridengine.balancer.sge_sched_conf:
            parameters: {{maxujobs: "{{{{ maxujobs_new }}}}"}}
        - name: sched_conf again
          gridengine.balancer.sge_sched_conf:
            parameters: {{maxujobs: "{{{{ maxujobs_new }}}}"}}
        - name: sched_conf check
          gridengine.balancer.sge_sched_conf:
            parameters: {{maxujobs: "{{{{ maxujobs_check }}}}"}}
          check_mode: true
        - name: sched_conf read after check
          ansible.builtin.command: qconf -ssconf
          changed_when: false
      always:
        - name: sched_conf restore
          gridengine.balancer.sge_sched_conf:
            parameters: {{maxujobs: "{{{{ maxujobs_old }}}}"}}

    - name: conf
      block:
        - name: conf change
          gridengine.balancer.sge_conf:
            parameters: {{max_aj_instances: "{{{{ aj_new }}}}"}}
        - name: conf again
          gridengine.balancer.sge_conf:
            parameters: {{max_aj_instances: "{{{{ aj_new }}}}"}}
        - name: conf check
          gridengine.balancer.sge_conf:
            parameters: {{max_aj_instances: "{{{{ aj_check }}}}"}}
          check_mode: true
        - name: conf read after check
          ansible.builtin.command: qconf -sconf
          changed_when: false
      always:
        - name: conf restore
          gridengine.balancer.sge_conf:
            parameters: {{max_aj_instances: "{{{{ aj_old }}}}"}}
'''

LOCAL = '''
    - name: local
      when: node | length > 0
      block:
        - name: local change
          gridengine.balancer.sge_conf:
            host: "{{{{ node }}}}"
            parameters: {{load_report_time: "{{{{ report_time }}}}"}}
        - name: local again
          gridengine.balancer.sge_conf:
            host: "{{{{ node }}}}"
            parameters: {{load_report_time: "{{{{ report_time }}}}"}}
        - name: local check
          gridengine.balancer.sge_conf:
            host: "{{{{ node }}}}"
            state: absent
          check_mode: true
        - name: local read after check
          ansible.builtin.command:
            argv: [qconf, -sconf, "{{{{ node }}}}"]
          changed_when: false
      always:
        - name: local restore
          gridengine.balancer.sge_conf:
            host: "{{{{ node }}}}"
            state: absent
'''


def _head(title):
    return HEAD.format(title=title, cluster=CLUSTER, root=SGE_ENV['SGE_ROOT'], cell=SGE_ENV['SGE_CELL'])


def _ok(results, name, changed):
    result = results.get(name)
    assert result is not None, 'task %r did not run: %s' % (name, sorted(results))
    assert not result.get('failed'), (name, result)
    assert result.get('changed') is changed, (name, result)
    return result


def _free_node(nodes):
    """A node of the cluster without a local configuration ("" when every node has one)."""
    rc, listed, _err = _qconf('-sconfl')
    with_local = set(listed.split()) if rc == 0 else set()
    free = [n for n in nodes if n not in with_local]
    return free[0] if free else ''


def test_change_read_idempotent_check_restore(cluster_nodes, tmp_path):  # noqa: F811 pylint: disable=redefined-outer-name
    rc, sc, err = _qconf('-sc')
    assert rc == 0, err
    assert _complex_line(sc, COMPLEX) is None, '%s left over from an earlier run' % COMPLEX
    assert _qconf('-sp', PE)[0] != 0, '%s left over from an earlier run' % PE
    rc, ssconf, err = _qconf('-ssconf')
    assert rc == 0, err
    rc, sconf, err = _qconf('-sconf')
    assert rc == 0, err
    maxujobs_old = _value(ssconf, 'maxujobs')
    aj_old = _value(sconf, 'max_aj_instances')
    maxujobs_new = '999' if maxujobs_old == '1000' else '1000'
    aj_new = str(int(aj_old) + 1)
    node = _free_node(cluster_nodes)
    report_time = _value(sconf, 'load_report_time')
    extra = dict(maxujobs_old=maxujobs_old, maxujobs_new=maxujobs_new, maxujobs_check='998',
                 aj_old=aj_old, aj_new=aj_new, aj_check=str(int(aj_old) + 2), node=node, report_time=report_time)

    # one ansible-playbook run (its start is a good part of the time)
    play = _head('sge objects') + OBJECTS.format(complex=COMPLEX, pe=PE) + LOCAL.format()
    proc, results = _play(tmp_path, 'objects.yml', play, extra)

    # every restore ran, whatever failed before it
    for name in ('complex restore', 'pe restore', 'sched_conf restore', 'conf restore', 'local restore'):
        assert not results.get(name, {}).get('failed'), (name, results.get(name))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    # change, again (no change), check mode (reports a change), then qconf: the change is there,
    # the check-mode value is not
    _ok(results, 'complex change', True)
    _ok(results, 'complex again', False)
    check = _ok(results, 'complex check', True)
    assert check['attributes'][COMPLEX]['urgency'] == '5', check
    line = _complex_line(results['complex read after check']['stdout'], COMPLEX)
    assert line == [COMPLEX, COMPLEX, 'INT', '<=', 'YES', 'YES', '0', '0'], line
    _ok(results, 'complex restore', True)

    _ok(results, 'pe change', True)
    _ok(results, 'pe again', False)
    _ok(results, 'pe check', True)
    pe_text = results['pe read after check']['stdout']
    assert _value(pe_text, 'slots') == '4' and _value(pe_text, 'allocation_rule') == '$fill_up', pe_text
    _ok(results, 'pe restore', True)

    _ok(results, 'sched_conf change', True)
    _ok(results, 'sched_conf again', False)
    _ok(results, 'sched_conf check', True)
    assert _value(results['sched_conf read after check']['stdout'], 'maxujobs') == maxujobs_new
    _ok(results, 'sched_conf restore', True)

    _ok(results, 'conf change', True)
    _ok(results, 'conf again', False)
    _ok(results, 'conf check', True)
    assert _value(results['conf read after check']['stdout'], 'max_aj_instances') == aj_new
    _ok(results, 'conf restore', True)

    if node:
        _ok(results, 'local change', True)
        _ok(results, 'local again', False)
        _ok(results, 'local check', True)
        assert _value(results['local read after check']['stdout'], 'load_report_time') == report_time
        _ok(results, 'local restore', True)

    # the originals are back (read by the test itself)
    assert _complex_line(_qconf('-sc')[1], COMPLEX) is None
    assert _qconf('-sp', PE)[0] != 0
    assert _value(_qconf('-ssconf')[1], 'maxujobs') == maxujobs_old
    assert _value(_qconf('-sconf')[1], 'max_aj_instances') == aj_old
    # (when every node has a local configuration, creating and deleting one is not tested)
    if node:
        assert _qconf('-sconf', node)[0] != 0, 'the local configuration of %s is still there' % node
