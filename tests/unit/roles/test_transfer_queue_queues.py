# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/transfer_queue: several transfer queues (transfer_queue_queues) and the howto's
high-throughput mode (issue 23, item 4), checked without running the role.

As in test_transfer_queue.py, the role is not run here (it talks to Grid Engine and creates a
user; tests/integration/test_transfer_real.py runs it on the real clusters): its expressions are
evaluated with Ansible's templar over the role's defaults, in the order the role evaluates them -
the queue list (tasks/main.yml), the per-queue include parameters, the queue's slots and
thresholds (tasks/present.yml), the queue file (templates/queue.conf.j2), the attributes the role
gives sge_queue and the parts ``absent.yml`` removes.
"""

from __future__ import annotations

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import same_value
from ansible_collections.gridengine.balancer.tests.unit.roles.test_transfer_queue import (
    ROLE, _load, _render, conditions_failing, role_vars, tasks)

pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

TWO = [{'name': 'transfer.q'},
       {'name': 'bigmem.q', 'slots': 4, 'complex_values': {'bigmem': True, 'mem_total': '512G'},
        'qsub_args': ['-l', 'mem_free=64G'], 'remote_cell': 'hpc2', 'remote_qmaster_port': 6500,
        'remote_execd_port': 6501, 'high_throughput': True}]


def _main_task(name):
    return [t for t in _load('tasks', 'main.yml') if t.get('name') == name][0]


def queue_list(**extra):
    variables = role_vars(**extra)
    spec = _main_task('Decide the transfer queues')['ansible.builtin.set_fact']['transfer_queue_queue_list']
    return _render(spec, variables), variables


def queue_vars(item, index, queue_list_value, **extra):
    """The variables present.yml/absent.yml see for one queue: the role's, then the include
    parameters main.yml gives that queue."""
    variables = role_vars(**extra)
    include = _main_task('Set up or remove each transfer queue')
    scope = dict(variables, transfer_queue_item=item, transfer_queue_index=index,
                 transfer_queue_queue_list=queue_list_value)
    params = {k: _render(v, scope) for k, v in include['vars'].items()}
    variables.update(params)
    # the defaults that refer to the overridden ones (vars/main.yml: the partner list)
    for key, value in _load('vars', 'main.yml').items():
        variables[key] = _render(value, variables) if isinstance(value, str) else value
    return variables


def slots_and_thresholds(variables, partner_slots=40):
    spec = tasks('present.yml')["Decide the queue's slots and load thresholds - {{ transfer_queue_name }}"]
    scope = dict(variables, transfer_queue_remote_cq={'results': [{'stdout': '<total>%d</total>' % partner_slots}]})
    for key, value in spec['vars'].items():
        scope[key] = _render(value, scope)
    return {k: _render(v, scope) for k, v in spec['ansible.builtin.set_fact'].items()}


def asserts_failing(variables):
    """The conditions of the role's second input check (the queues) that fail."""
    return conditions_failing(
        _main_task('Check the transfer queues (transfer_queue_queues) and the high-throughput mode'), variables)


# --------------------------------------------------------------------------- the queue list ----

def test_without_a_list_the_one_queue_of_the_variables_is_made_as_before():
    queues, variables = queue_list()
    assert [q['name'] for q in queues] == ['transfer.q']
    (q,) = queues
    assert q['dir'] == '/var/lib/gridengine-transfer/transfer.q' == variables['transfer_queue_dir']
    assert q['work_dir'] == variables['transfer_queue_work_dir']
    assert (q['pending_complex'], q['slots'], q['slots_fraction'], q['bulk_poll_interval'], q['high_throughput']) == \
        ('remote_pending', 0, 0.3333, 10, False)
    assert (q['remote_cell'], q['partners'], q['complex_values']) == ('remote', [], {})
    merged = queue_vars(q, 0, queues)
    assert merged['transfer_queue_all_names'] == ['transfer.q'] and merged['transfer_queue_last'] is True
    # the values the single-queue variables had reach the queue unchanged (tests/integration
    # /test_transfer_real.py sets some of them with -e)
    queues, _v = queue_list(transfer_queue_name='tq1', transfer_queue_bulk_poll_interval=5,
                            transfer_queue_resource_map={'h_rt': 's_rt'})
    assert (queues[0]['name'], queues[0]['bulk_poll_interval'], queues[0]['resource_map']) == ('tq1', 5, {'h_rt': 's_rt'})
    assert queues[0]['dir'] == '/var/lib/gridengine-transfer/tq1'
    assert failing_all(role_vars()) == []


def failing_all(variables):
    return asserts_failing(variables)


def test_each_queue_has_its_own_directory_sensor_complex_resources_and_partner():
    queues, _v = queue_list(transfer_queue_queues=TWO)
    first, big = queues
    assert (first['name'], first['dir'], first['pending_complex']) == (
        'transfer.q', '/var/lib/gridengine-transfer/transfer.q', 'remote_pending')
    assert (big['dir'], big['work_dir'], big['pending_complex']) == (
        '/var/lib/gridengine-transfer/bigmem.q', '/var/lib/gridengine-balancer/transfer_queue/bigmem.q',
        'remote_pending_bigmem_q')
    assert big['complex_values'] == {'bigmem': True, 'mem_total': '512G'} and first['complex_values'] == {}
    assert big['qsub_args'] == ['-l', 'mem_free=64G'] and first['qsub_args'] == []
    merged = queue_vars(big, 1, queues)
    assert merged['transfer_queue_name'] == 'bigmem.q' and merged['transfer_queue_last'] is True
    assert merged['transfer_queue_all_names'] == ['transfer.q', 'bigmem.q']
    assert merged['transfer_queue_partner_list'] == [{
        'name': 'hpc2', 'root': '/var/lib/gridengine', 'cell': 'hpc2', 'qmaster_port': '6500',
        'execd_port': '6501', 'resource_map': {}, 'pass_resources': True}]
    assert queue_vars(first, 0, queues)['transfer_queue_last'] is False
    # every per-queue key of the list reaches the queue as the transfer_queue_* variable
    include = _main_task('Set up or remove each transfer queue')['vars']
    for key in big:
        assert include['transfer_queue_' + key] == '{{ transfer_queue_item.%s }}' % key, key
    assert failing_all(role_vars(transfer_queue_queues=TWO)) == []


def test_the_queue_file_carries_the_queue_resources():
    queues, _v = queue_list(transfer_queue_queues=TWO)
    with open(ROLE + '/templates/queue.conf.j2') as handle:
        template = handle.read()
    lines = {}
    for i, q in enumerate(queues):
        variables = queue_vars(q, i, queues)
        variables.update(transfer_queue_host_name='vm', transfer_queue_slot_count=3,
                         transfer_queue_thresholds='remote_pending=4')
        text = _render(template, variables)
        lines[q['name']] = dict(line.split(None, 1) for line in text.splitlines() if line.strip())
    assert lines['transfer.q']['complex_values'] == 'remote=TRUE'
    assert lines['bigmem.q']['complex_values'] == 'remote=TRUE,bigmem=TRUE,mem_total=512G'
    assert lines['bigmem.q']['starter_method'] == '/var/lib/gridengine-transfer/bigmem.q/starter'
    assert lines['bigmem.q']['qname'] == 'bigmem.q'


def test_a_queue_printed_with_its_resources_in_another_order_is_not_changed_again():
    """The role gives sge_queue every attribute of the rendered queue file but qname; sge_queue
    compares them as Grid Engine means them (complex_values in any order)."""
    task = tasks('present.yml')['Create or correct the transfer queue {{ transfer_queue_name }}']
    assert task['gridengine.balancer.sge_queue']['attributes'] == '{{ transfer_queue_attributes }}'
    wanted = 'qname   big.q\ncomplex_values   remote=TRUE,bigmem=TRUE\nslots 4\n\n'
    attributes = _render(task['vars']['transfer_queue_attributes'], {'transfer_queue_conf': wanted})
    assert dict(attributes) == {'complex_values': 'remote=TRUE,bigmem=TRUE', 'slots': '4'}
    assert same_value('complex_values', 'bigmem=TRUE,remote=TRUE', attributes['complex_values'])
    assert not same_value('complex_values', 'bigmem=FALSE,remote=TRUE', attributes['complex_values'])


# -------------------------------------------------------------------------- high throughput ----

def test_the_default_queue_keeps_its_pending_threshold_and_a_third_of_the_partner():
    queues, _v = queue_list()
    got = slots_and_thresholds(queue_vars(queues[0], 0, queues), partner_slots=40)
    assert got['transfer_queue_slot_count'] == 13 and got['transfer_queue_threshold_count'] == 4
    assert got['transfer_queue_thresholds'] == 'remote_pending=4,local_free=1'


def test_high_throughput_drops_the_pending_threshold_and_takes_a_tenth_of_the_partner():
    """The howto: "disabling the load threshold, and instead setting the number of slots to a
    smaller number (eg, 1/10 the number of remote slots) ... polling time ... like 5 seconds"."""
    queues, _v = queue_list(transfer_queue_high_throughput=True)
    (q,) = queues
    assert (q['high_throughput'], q['slots_fraction'], q['bulk_poll_interval']) == (True, 0.1, 5)
    got = slots_and_thresholds(queue_vars(q, 0, queues), partner_slots=40)
    assert got['transfer_queue_slot_count'] == 4
    # no threshold on the pending jobs: only a partner that does not answer (the sensor's
    # unreachable value) closes the queue; the broker gets no idle limit either
    assert got['transfer_queue_thresholds'] == 'remote_pending=99999,local_free=1'
    assert got['transfer_queue_threshold_count'] == 0
    # explicit slots win; a queue of the list can be high-throughput on its own
    queues, _v = queue_list(transfer_queue_high_throughput=True, transfer_queue_slots=7)
    assert slots_and_thresholds(queue_vars(queues[0], 0, queues))['transfer_queue_slot_count'] == 7
    queues, _v = queue_list(transfer_queue_queues=TWO)
    assert [q['high_throughput'] for q in queues] == [False, True]
    assert slots_and_thresholds(queue_vars(queues[0], 0, queues))['transfer_queue_thresholds'].startswith('remote_pending=4')
    assert slots_and_thresholds(queue_vars(queues[1], 1, queues))['transfer_queue_thresholds'] == \
        'remote_pending_bigmem_q=99999,local_free=1'


def test_transfer_json_names_every_transfer_queue_and_no_idle_limit_in_high_throughput():
    config = tasks('present.yml')["Write the methods' configuration (transfer.json)"]['vars']['transfer_queue_config']
    assert config['transfer_queues'] == '{{ transfer_queue_all_names | default([transfer_queue_name]) }}'
    assert config['pending_threshold'] == '{{ transfer_queue_threshold_count | int }}'


# ------------------------------------------------------------------------------ bad entries ----

@pytest.mark.parametrize('entries', [
    [{'name': 'a.q'}, {'name': 'a.q'}],
    [{'name': 'bad name'}],
    [{'slots': 3}],
    ['transfer.q'],
    [{'name': 'a.q', 'complex_values': {'bigmem': 'TRUE\nprolog root@/tmp/x'}}],
    [{'name': 'a.q', 'complex_values': {'big mem': 'TRUE'}}],
    [{'name': 'a.q', 'complex_values': ['bigmem=TRUE']}],
    [{'name': 'a.q', 'dir': '/tmp/$(id)'}],
    [{'name': 'a.q', 'pending_complex': 'x,y'}],
    [{'name': 'a.q', 'remote_cell': 'a b'}],
    [{'name': 'a.q', 'slots': -1}],
    [{'name': 'a.q', 'slots_fraction': 0}],
    [{'name': 'a.q', 'bulk_poll_interval': 2}],
    [{'name': 'a.q', 'high_throughput': 'yes'}],
    [{'name': 'a.q', 'user_lists': 'NONE\nx'}],
    [{'name': 'a.q', 'qsub_args': '-l x'}],
    [{'name': 'a.q', 'partners': [{'cell': 'a;b'}]}],
], ids=lambda e: repr(e)[:40])
def test_bad_entries_are_refused_before_anything_runs(entries):
    assert asserts_failing(role_vars(transfer_queue_queues=entries))


@pytest.mark.parametrize('extra', [{'transfer_queue_high_throughput': 'yes'},
                                   {'transfer_queue_complex_values': {'x': 'a,b'}},
                                   {'transfer_queue_high_throughput_slots_fraction': 2}])
def test_bad_global_values_are_refused(extra):
    assert asserts_failing(role_vars(**extra))


def test_queues_sharing_a_directory_are_refused():
    check = _main_task('Check that the queues differ in name, directory and pending complex')
    queues, _v = queue_list(transfer_queue_queues=[{'name': 'a.q', 'dir': '/srv/tq'}, {'name': 'b.q', 'dir': '/srv/tq'}])
    templar = Templar(loader=DataLoader(), variables={'transfer_queue_queue_list': queues})
    assert not all(templar.evaluate_conditional(trust_as_template(c)) for c in check['ansible.builtin.assert']['that'])


# ------------------------------------------------------------------------------- removal ----

def test_the_shared_complexes_go_with_the_last_queue_only():
    remove = tasks('absent.yml')['Remove the complexes']['vars']['transfer_queue_names']
    queues, _v = queue_list(transfer_queue_queues=TWO)
    assert _render(remove, queue_vars(queues[0], 0, queues)) == ['remote_pending']
    assert _render(remove, queue_vars(queues[1], 1, queues)) == ['remote_pending_bigmem_q', 'remote', 'local_free']
    queues, _v = queue_list()
    assert _render(remove, queue_vars(queues[0], 0, queues)) == ['remote_pending', 'remote', 'local_free']
    glob = tasks('absent.yml')['Remove the boolean complex from the global host - {{ transfer_queue_remote_complex }}']
    when = glob['when'] if isinstance(glob['when'], list) else [glob['when']]
    assert when == ['transfer_queue_last | default(true) | bool']


def test_the_queue_step_refuses_per_queue_values_overridden_by_extra_vars():
    check = [t for t in _load('tasks', 'queue.yml') if 'ansible.builtin.assert' in t][0]
    conds = check['ansible.builtin.assert']['that']
    item = {'name': 'b.q', 'dir': '/d/b.q', 'pending_complex': 'p_b'}
    good = Templar(loader=DataLoader(), variables={'transfer_queue_item': item, 'transfer_queue_name': 'b.q',
                                                   'transfer_queue_dir': '/d/b.q', 'transfer_queue_pending_complex': 'p_b'})
    assert all(good.evaluate_conditional(trust_as_template(c)) for c in conds)
    bad = Templar(loader=DataLoader(), variables={'transfer_queue_item': item, 'transfer_queue_name': 'x.q',
                                                  'transfer_queue_dir': '/d/b.q', 'transfer_queue_pending_complex': 'p_b'})
    assert not all(bad.evaluate_conditional(trust_as_template(c)) for c in conds)


def test_the_argument_specs_know_the_new_options():
    specs = _load('meta', 'argument_specs.yml')['argument_specs']['main']['options']
    assert specs['transfer_queue_queues']['type'] == 'list' and specs['transfer_queue_queues']['elements'] == 'dict'
    assert specs['transfer_queue_high_throughput'] == dict(specs['transfer_queue_high_throughput'], type='bool', default=False)
    assert specs['transfer_queue_complex_values']['type'] == 'dict'
    assert specs['transfer_queue_high_throughput_slots_fraction']['default'] == 0.1
