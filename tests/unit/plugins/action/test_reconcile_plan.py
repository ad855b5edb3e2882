# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile_plan action plugin's core, with the state module's own code on a file.

Only the transport to the qmaster is stood in: ``execute_state`` reads and writes the state file
under tmp_path with module_utils.balancer_state, as the balancer_state module would.
"""

from __future__ import annotations

import contextlib
import io
import json
from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleActionFail
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.action import reconcile_plan as action
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
from ansible_collections.gridengine.balancer.plugins.modules import balancer_state as state_module

T0 = 1700000000.0


class Qmaster:
    def __init__(self):
        self.calls = []

    def __call__(self, args):
        self.calls.append(dict(args))
        content, _text = bs.read_state(args['path'])
        if args['state'] == 'read':
            return {'content': content}
        changed = json.loads(bs.dumps(content)) != args['content']
        if changed:
            bs.write_atomic(args['path'], bs.dumps(args['content']))
        return {'changed': changed}


def args(tmp_path, **kw):
    base = {k: v.get('default') for k, v in action.ARGUMENT_SPEC.items()}
    base.update(cluster='mycluster', state_path=str(tmp_path / 'reconcile.json'), master='vm', now=T0)
    base.update(kw)
    return base


def test_record_failure_then_status_then_reconcile_drops_the_failed_join(tmp_path):
    qm = Qmaster()
    res = action.run_reconcile(args(tmp_path, mode='record_failure', failure={
        'node': 'node004', 'kind': 'capacity', 'code': 'InsufficientInstanceCapacity', 'message': 'none'}), qm)
    assert res['changed'] is True and res['backoff']['active'] is True
    assert res['msg'].startswith('mycluster: launch of node004 failed (capacity); launches back off for 5m00s')
    saved = json.loads((tmp_path / 'reconcile.json').read_text())
    assert saved['consecutive_failures'] == 1 and saved['backoff_until'] == T0 + 300

    status = action.run_reconcile(args(tmp_path, mode='status', now=T0 + 60), qm)
    assert status['changed'] is False and status['backoff']['remaining'] == 240

    res = action.run_reconcile(args(tmp_path, now=T0 + 60, exec_hosts={'vm': {'load_avg': 0.5}},
                                    journal=[{'node': 'node004', 'operation': 'join', 'started': T0}]), qm)
    assert res['drop_journal'] == ['node004']
    assert res['msg'].splitlines()[0].startswith('mycluster reconcile: drop failed join of node004; launches back off')


def test_check_mode_writes_nothing(tmp_path):
    qm = Qmaster()
    res = action.run_reconcile(args(tmp_path, instances=[{'instance_id': 'i-1', 'node': 'node001', 'state': 'running',
                                                          'launch_time': T0 - 10}],
                                    exec_hosts={'vm': {'load_avg': 0.5}, 'node001': {'load_avg': 0.1}}),
                               qm, check_mode=True, diff=True)
    assert res['changed'] is True and 'node001' in res['diff']['after']
    assert not (tmp_path / 'reconcile.json').exists()
    assert [c['state'] for c in qm.calls] == ['read']


@pytest.mark.parametrize('kw, words', [
    ({'cluster': 'bad name'}, 'not a valid cluster name'),
    ({'backoff_factor': 0.1}, 'backoff_factor'),
    ({'mode': 'record_failure'}, 'failure: a dict'),
    ({'exec_hosts': 'vm'}, 'exec_hosts'),
])
def test_bad_arguments_fail_and_write_nothing(tmp_path, kw, words):
    with pytest.raises(AnsibleActionFail, match=words):
        action.run_reconcile(args(tmp_path, **kw), Qmaster())
    assert not (tmp_path / 'reconcile.json').exists()


def test_corrupt_state_file_is_an_error(tmp_path):
    (tmp_path / 'reconcile.json').write_text('{nope')

    def execute_state(module_args):
        try:
            return {'content': bs.read_state(module_args['path'])[0]}
        except bs.StateFileError as exc:
            return {'failed': True, 'msg': str(exc)}
    with pytest.raises(AnsibleActionFail, match='cannot read the reconcile state'):
        action.run_reconcile(args(tmp_path), execute_state)
    assert (tmp_path / 'reconcile.json').read_text() == '{nope'


def test_default_path_and_clock(tmp_path):
    assert action.default_path('mycluster') == '/var/lib/gridengine-balancer/mycluster/reconcile.json'
    res = action.run_reconcile(args(tmp_path, now=None, mode='status'), Qmaster(), clock=lambda: T0)
    assert res['backoff']['active'] is False and res['summary'] == 'no launch back-off'


# ---------------------------------------------------------------------------------------------
# a corrupt state file, read by the real balancer_state module (its main(), in this process)
# ---------------------------------------------------------------------------------------------

def real_state_module(module_args, check_mode=False):
    out = io.StringIO()
    with patch_module_args(dict(module_args, _ansible_check_mode=check_mode)), contextlib.redirect_stdout(out):
        try:
            state_module.main()
        except SystemExit:
            pass
    return json.loads(out.getvalue())


@pytest.mark.parametrize('mode', ['reconcile', 'status'])
def test_corrupt_state_is_moved_aside_and_the_warning_is_returned(tmp_path, mode):
    path = tmp_path / 'reconcile.json'
    path.write_text('{"schema": 1, "consecutive_failures": 3, "backoff_un')   # cut short
    kw = {'exec_hosts': {'vm': {'load_avg': 0.5}}} if mode == 'reconcile' else {'mode': 'status'}
    res = action.run_reconcile(args(tmp_path, **kw), real_state_module)
    moved = res['state_corrupt']['moved_to']
    assert moved and open(moved).read().startswith('{"schema": 1, "consecutive_failures": 3')
    assert res['state_corrupt']['problem'].startswith('state file %s ' % path)
    warning = res['warnings'][0]
    assert warning.startswith('state file %s ' % path) and 'moved it aside to %s' % moved in warning
    assert 'reconciled from an empty state: the launch back-off and its failure count are forgotten' in warning
    assert res['backoff']['active'] is False
    if mode == 'reconcile':
        assert json.loads(path.read_text())['consecutive_failures'] == 0   # the new state is written


def test_corrupt_state_in_check_mode_says_it_would_be_moved_and_moves_nothing(tmp_path):
    path = tmp_path / 'reconcile.json'
    path.write_text('[1, 2]')   # JSON, but not a state

    def qmaster(module_args):
        return real_state_module(module_args, check_mode=True)
    res = action.run_reconcile(args(tmp_path, exec_hosts=['vm']), qmaster, check_mode=True)
    assert res['state_corrupt']['moved_to'] is None
    assert 'it would be moved aside' in res['warnings'][0]
    assert path.read_text() == '[1, 2]' and sorted(p.name for p in tmp_path.iterdir()) == ['reconcile.json']


def test_intact_state_gives_no_state_warning(tmp_path):
    res = action.run_reconcile(args(tmp_path, exec_hosts=['vm']), real_state_module)
    assert 'state_corrupt' not in res and 'warnings' not in res


def test_action_module_run_reads_the_state_through_balancer_state(tmp_path):
    """ActionModule (elastic_plan.StateAction): arguments validated, the core run with an
    execute_state that calls balancer_state on the task's host."""
    task = MagicMock()
    task.args = {"cluster": "c", "mode": "status", "state_path": str(tmp_path / "r.json")}
    task.async_val = 0
    task.check_mode = False
    task.diff = False
    task.action = "gridengine.balancer.reconcile_plan"
    plugin = action.ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    seen = []

    def execute_module(module_name=None, module_args=None, task_vars=None, **kw):
        seen.append((module_name, module_args))
        return {"content": {}, "changed": False}

    plugin._execute_module = execute_module
    res = plugin.run(task_vars={})
    assert seen == [("gridengine.balancer.balancer_state", {"path": str(tmp_path / "r.json"), "state": "read"})]
    assert res["changed"] is False and "backoff" in res
