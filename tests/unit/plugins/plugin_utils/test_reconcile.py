# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""policy/reconcile.py: instances vs exec hosts vs state, and the launch back-off.

Exec hosts come from a real snapshot where they matter: the SoGE 8.1.9 capture of the build
machine's cluster in tests/unit/fixtures/sge/local_soge819/ (master ``vm`` reporting, ``node002``
registered but not reporting yet, states ``au``), parsed by module_utils.sge_xml.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_xml
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reconcile as rc

T0 = 1700000000.0
FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'sge', 'local_soge819')
CFG = {'master': 'vm', 'provisioning_timeout': 900, 'backoff_base': 300, 'backoff_factor': 2, 'backoff_max': 3600}


def real_hosts():
    with open(os.path.join(FIXTURES, 'qstat_u_f_r.xml'), 'rb') as q, open(os.path.join(FIXTURES, 'qhost.xml'), 'rb') as h:
        return sge_xml.build_snapshot(q.read(), h.read(), T0, 'default')['hosts']


def inst(node, iid, state='running', age=60):
    return {'instance_id': iid, 'node': node, 'state': state, 'launch_time': T0 - age, 'private_ip': '10.77.0.140'}


def kinds(result):
    return [(a['action'], a['node']) for a in result['actions']]


def test_fixture_is_what_the_tests_assume():
    hosts = real_hosts()
    assert hosts['vm']['load_avg'] is not None and hosts['node002']['load_avg'] is None


def test_agreeing_cluster_changes_nothing_and_remembers_joined_nodes():
    hosts = {'vm': {'load_avg': 1.0}, 'node001': {'load_avg': 0.1}}
    res = rc.reconcile([inst('node001', 'i-1')], hosts, {}, CFG, T0, journal=[], balancer_nodes=['vm', 'node001'])
    assert res['actions'] == [] and res['summary'] == 'instances and exec hosts agree'
    assert res['state']['instances'] == {'node001': {'instance_id': 'i-1', 'first_seen': T0, 'joined_at': T0}}
    assert res['backoff']['active'] is False


def test_never_joined_after_timeout_is_terminated_and_counted():
    res = rc.reconcile([inst('node003', 'i-3', age=1000)], {'vm': {'load_avg': 1.0}}, {}, CFG, T0,
                       journal=[{'node': 'node003', 'operation': 'join', 'started': T0 - 1000}])
    assert res['terminate'] == [{'node': 'node003', 'instance_id': 'i-3', 'half_joined': False, 'journal': 'join'}]
    reason = res['actions'][0]['reason']
    assert reason == ('node003 (instance i-3) launched 16m40s ago never joined Grid Engine '
                      '(provisioning_timeout 15m00s); terminated, counted as a failure')
    assert res['backoff']['active'] and res['backoff']['until'] == T0 + 300 and res['backoff']['failures'] == 1
    assert res['state']['failures'][-1]['kind'] == 'timeout' and res['state']['counted'] == ['i-3']
    # the next poll (terminate still in progress) does not count the same instance twice
    again = rc.reconcile([inst('node003', 'i-3', state='running', age=1060)], {'vm': {'load_avg': 1.0}},
                         res['state'], CFG, T0 + 60, journal=[])
    assert again['terminate'] and again['state']['consecutive_failures'] == 1


def test_half_joined_real_host_is_terminated_as_half_joined():
    # node002 of the real capture: registered in Grid Engine, no load report
    res = rc.reconcile([inst('node002', 'i-2', age=901)], real_hosts(), {}, CFG, T0,
                       journal=[{'node': 'node002', 'operation': 'join'}])
    assert res['terminate'][0]['half_joined'] is True
    assert '(registered, no load report)' in res['actions'][0]['reason']


def test_booting_within_timeout_waits():
    res = rc.reconcile([inst('node002', 'i-2', state='pending', age=120)], real_hosts(), {}, CFG, T0,
                       journal=[{'node': 'node002', 'operation': 'join'}])
    assert kinds(res) == [('wait', 'node002')] and res['terminate'] == []
    assert 'is booting for 2m00s; joins or is terminated after 15m00s' in res['actions'][0]['reason']


def test_exec_host_whose_instance_is_gone_is_removed():
    hosts = {'vm': {'load_avg': 1.0}, 'node001': {'load_avg': 0.1}}
    state = rc.reconcile([inst('node001', 'i-1')], hosts, {}, CFG, T0)['state']
    # terminated behind the balancer's back (spot interruption, console): still an exec host
    res = rc.reconcile([inst('node001', 'i-1', state='terminated')], dict(hosts, node001={'load_avg': None}),
                       state, CFG, T0 + 60)
    assert res['remove'] == ['node001']
    assert res['actions'][0]['reason'] == 'exec host node001: its instance i-1 is gone (terminated); removed from Grid Engine'
    # not listed at all (EC2 forgets terminated instances after about an hour)
    assert rc.reconcile([], hosts, state, CFG, T0 + 7200)['remove'] == ['node001']
    # once Grid Engine has forgotten it, so does the state
    done = rc.reconcile([], {'vm': {'load_avg': 1.0}}, state, CFG, T0 + 7300)
    assert done['actions'] == [] and done['state']['instances'] == {}


def test_gone_instance_with_operation_in_flight_is_left_to_the_journal():
    hosts = {'vm': {'load_avg': 1.0}, 'node001': {'load_avg': 0.1}}
    state = rc.reconcile([inst('node001', 'i-1')], hosts, {}, CFG, T0)['state']
    res = rc.reconcile([], hosts, state, CFG, T0 + 60, journal=[{'node': 'node001', 'operation': 'leave'}])
    assert res['remove'] == []


def test_unknown_instance_is_reported_never_terminated():
    # old enough to be past the timeout: still only reported
    res = rc.reconcile([inst('node042', 'i-42', age=99999), inst(None, 'i-43')], real_hosts(), {}, CFG, T0)
    assert res['terminate'] == [] and res['remove'] == []
    assert sorted(a['instance_id'] for a in res['report']) == ['i-42', 'i-43']
    assert 'the balancer did not launch it' in res['report'][1]['reason'] or \
        'the balancer did not launch it' in res['report'][0]['reason']
    assert res['state']['instances'] == {}  # not adopted either


def test_static_exec_hosts_and_master_are_never_removed():
    hosts = real_hosts()
    res = rc.reconcile([], hosts, {}, CFG, T0)
    assert res['actions'] == []


def test_duplicate_instance_is_reported():
    hosts = {'vm': {'load_avg': 1.0}, 'node001': {'load_avg': 0.1}}
    res = rc.reconcile([inst('node001', 'i-1', age=600), inst('node001', 'i-9', age=30)], hosts, {}, CFG, T0)
    assert [(a['action'], a['instance_id']) for a in res['actions']] == [('report', 'i-9')]
    assert res['state']['instances']['node001']['instance_id'] == 'i-1'


def test_backoff_grows_caps_and_ends_when_a_later_node_joins():
    state, cfg = {}, rc.validate_config(CFG)
    delays = []
    for n in range(6):
        state, status = rc.record_failure(state, {'node': 'node005', 'kind': 'capacity',
                                                  'code': 'InsufficientInstanceCapacity'}, cfg, T0 + n)
        delays.append(status['until'] - (T0 + n))
    assert delays == [300, 600, 1200, 2400, 3600, 3600]
    assert status['reason'].startswith('launches back off for 60m00s more after 6 consecutive failures '
                                       '(last: capacity on node005: InsufficientInstanceCapacity)')
    # a join in the journal that left nothing is dropped during the back-off
    res = rc.reconcile([], {'vm': {'load_avg': 1.0}}, state, cfg, T0 + 10,
                       journal=[{'node': 'node005', 'operation': 'join'}])
    assert res['drop_journal'] == ['node005']
    # an instance launched before the last failure joining does not end it; one launched after does
    hosts = {'vm': {'load_avg': 1.0}, 'node006': {'load_avg': 0.2}}
    early = rc.reconcile([dict(inst('node006', 'i-6'), launch_time=T0 - 100)], hosts, state, cfg, T0 + 20,
                         journal=[{'node': 'node006', 'operation': 'join'}])
    assert early['backoff']['active'] is True
    late = rc.reconcile([dict(inst('node006', 'i-7'), launch_time=T0 + 15)], hosts, state, cfg, T0 + 20,
                        journal=[{'node': 'node006', 'operation': 'join'}])
    assert late['backoff']['active'] is False and late['state']['consecutive_failures'] == 0
    assert ('info', 'node006') in kinds(late)


def test_backoff_expires_with_time_and_failed_join_is_then_retried():
    state, status = rc.record_failure({}, {'node': 'node005', 'kind': 'spot'}, CFG, T0)
    assert status['active']
    res = rc.reconcile([], {'vm': {'load_avg': 1.0}}, state, CFG, T0 + 301,
                       journal=[{'node': 'node005', 'operation': 'join'}])
    assert res['backoff']['active'] is False and res['drop_journal'] == []


@pytest.mark.parametrize('bad, name', [
    ({'provisioning_timeout': -1}, 'provisioning_timeout'),
    ({'backoff_base': 'x'}, 'backoff_base'),
    ({'backoff_factor': 0.5}, 'backoff_factor'),
    ({'backoff_base': 600, 'backoff_max': 60}, 'backoff_max'),
    ({'nonsense': 1}, 'nonsense'),
])
def test_bad_config_names_the_option(bad, name):
    with pytest.raises(ValueError, match=name):
        rc.validate_config(bad)


def test_garbage_state_is_tolerated():
    res = rc.reconcile([], {}, {'consecutive_failures': 'x', 'failures': [1, {'time': 'y'}], 'instances': []},
                       CFG, T0)
    assert res['state']['consecutive_failures'] == 0 and res['state']['failures'] == []
