# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile_plan action plugin's core, with the state module's own code on a file.

Only the transport to the qmaster is stood in: ``execute_state`` reads and writes the state file
under tmp_path with module_utils.balancer_state, as the balancer_state module would.
"""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.gridengine.balancer.plugins.action import reconcile_plan as action
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs

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
