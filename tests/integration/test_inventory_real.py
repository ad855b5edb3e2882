# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin gridengine.balancer.sge against the real local cluster (docs/inventory.md).

``ansible-inventory -i <tmp>/cluster.sge.yml --list`` must list every host ``qhost`` lists, with
the slots qhost reports, in the group of ``@allhosts`` (checked against ``qconf -shgrp_resolved``,
a command the plugin itself does not use), and the qmaster in ``<cluster>_master``. Then
``ansible`` pings the hosts of that group, the connection settings coming from the static
inventory beside it. ``<cluster>_nodes`` holds only hosts the balancer's real state file marks
launched (issue 19: the playbooks may remove those), every other exec host is in
``<cluster>_static``. The cluster name has a ``-`` (``my-cluster`` style names are the playbooks'
and the plugin's). Only reads: nothing on the cluster is changed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, MASTER_HOST, REPO, SGE_ENV, _run, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.integration

# a cluster name of its own: its groups cannot be mistaken for the static inventory's
INV_CLUSTER = 'geb-inv'
# the state file of the balancer polls the other integration tests run on the real cluster
STATE_PATH = '/var/lib/gridengine-balancer/%s/state.json' % CLUSTER
CONFIG = '''---
plugin: gridengine.balancer.sge
cluster: %s
include_master: true
sge_root: %s
sge_cell: %s
state_path: %s
keyed_groups:
  - key: sge_state
    prefix: geb_inv_letter
''' % (INV_CLUSTER, SGE_ENV['SGE_ROOT'], SGE_ENV['SGE_CELL'], STATE_PATH)


def _plain(value):
    """ansible-inventory --list writes strings from an inventory plugin as
    {"__ansible_unsafe": "..."} (ansible-core 2.19: not trusted as templates)."""
    if isinstance(value, dict):
        if set(value) == {'__ansible_unsafe'}:
            return value['__ansible_unsafe']
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _qhost_slots():
    """{host: total slots over its queue instances}, straight from qhost -xml -q."""
    proc = _run(['qhost', '-xml', '-q'])
    assert proc.returncode == 0, proc.stderr
    slots = {}
    for host in ET.fromstring(proc.stdout).iter('host'):
        name = host.get('name')
        if name == 'global':
            continue
        total = 0
        for value in host.iter('queuevalue'):
            if value.get('name') == 'slots':
                total += int(value.text)
        slots[name] = total
    return slots


def _allhosts():
    proc = _run(['qconf', '-shgrp_resolved', '@allhosts'])
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def _config(tmp_path):
    path = os.path.join(str(tmp_path), 'cluster.sge.yml')
    with open(path, 'w') as handle:
        handle.write(CONFIG)
    return path


def _inventory_env():
    return {'ANSIBLE_INVENTORY_UNPARSED_FAILED': '1'}


def test_inventory_lists_every_qhost_host(cluster_nodes, tmp_path):
    expected = _qhost_slots()
    allhosts = _allhosts()
    proc = _run([_tool('ansible-inventory'), '-i', _config(tmp_path), '--list'],
                env=_inventory_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = _plain(json.loads(proc.stdout))
    hostvars = data['_meta']['hostvars']
    group = '%s_hostgroup_allhosts' % INV_CLUSTER
    for node in cluster_nodes:
        assert node in expected, 'qhost does not list the running node %s' % node
    for host, slots in expected.items():
        assert host in hostvars, '%s (listed by qhost) is not in the inventory' % host
        assert hostvars[host]['sge_slots'] == slots, (host, hostvars[host]['sge_slots'], slots)
        assert hostvars[host]['sge_cluster'] == INV_CLUSTER
        assert host in data[INV_CLUSTER]['hosts']
        assert host in data['%s_exec' % INV_CLUSTER]['hosts']
        if host in allhosts:
            assert host in data[group]['hosts'], (host, data.get(group))
            assert '@allhosts' in hostvars[host]['sge_hostgroups']
    assert sorted(data[group]['hosts']) == sorted(allhosts & set(expected))
    assert data['%s_master' % INV_CLUSTER]['hosts'] == [MASTER_HOST]
    assert hostvars[MASTER_HOST]['sge_master'] is True
    for queue in hostvars[cluster_nodes[0]]['sge_queues']:
        assert cluster_nodes[0] in data['%s_queue_%s' % (INV_CLUSTER, queue.replace('.', '_'))]['hosts']


def _launched():
    """Hosts the real state file marks launched (lower case), empty when there is no state."""
    if not os.path.exists(STATE_PATH):
        return set()
    with open(STATE_PATH) as handle:
        nodes = json.load(handle).get('nodes', {})
    return set(name.lower() for name, rec in nodes.items() if rec.get('launched') is True)


def test_inventory_nodes_are_only_launched_hosts(cluster_nodes, tmp_path):
    """<cluster>_nodes: only hosts the state marks launched, never the qmaster; every other exec
    host in <cluster>_static; the two together are <cluster>_exec."""
    proc = _run([_tool('ansible-inventory'), '-i', _config(tmp_path), '--list'],
                env=_inventory_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = _plain(json.loads(proc.stdout))
    launched = _launched()
    nodes = set(data.get('%s_nodes' % INV_CLUSTER, {}).get('hosts', []))
    static = set(data.get('%s_static' % INV_CLUSTER, {}).get('hosts', []))
    exec_hosts = set(data['%s_exec' % INV_CLUSTER]['hosts'])
    assert MASTER_HOST not in nodes
    assert MASTER_HOST in static
    assert set(h.lower() for h in nodes) <= launched, (nodes, launched)
    assert not set(h.lower() for h in static - {MASTER_HOST}) & launched, (static, launched)
    assert nodes | static == exec_hosts and not nodes & static
    for host in exec_hosts:
        assert data['_meta']['hostvars'][host]['sge_node'] is (host in nodes)


def test_inventory_hosts_answer_ansible(cluster_nodes, tmp_path):
    """ansible -i <static inventory> -i cluster.sge.yml <group> -m ping: the plugin's groups are
    usable as targets; ssh settings of the nodes come from the static inventory."""
    proc = _run([_tool('ansible'), '-i', os.path.join(REPO, 'inventory', 'local'),
                 '-i', _config(tmp_path), '%s_hostgroup_allhosts' % INV_CLUSTER,
                 '-m', 'ansible.builtin.ping'],
                env=dict(_inventory_env(), ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
                         ANSIBLE_STDOUT_CALLBACK='json'))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hosts = json.loads(proc.stdout)['plays'][0]['tasks'][0]['hosts']
    for node in cluster_nodes:
        assert hosts.get(node, {}).get('ping') == 'pong', (node, hosts.get(node))


def test_inventory_reports_a_qmaster_that_does_not_answer(cluster_nodes, tmp_path):
    """A wrong qmaster port: ansible-inventory fails and names the command, rc and stderr."""
    path = _config(tmp_path)
    with open(path, 'a') as handle:
        handle.write('sge_qmaster_port: 6999\ncommand_timeout: 60\n')
    proc = _run([_tool('ansible-inventory'), '-i', path, '--list'], env=_inventory_env())
    assert proc.returncode != 0
    text = ' '.join(proc.stderr.split())
    assert 'qhost -xml -q failed (rc 1) on the controller' in text, proc.stderr
    assert 'port 6999' in text, proc.stderr
