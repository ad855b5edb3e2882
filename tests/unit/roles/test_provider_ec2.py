# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/provider_ec2 through ansible-playbook on localhost, EC2 being moto_server on 127.0.0.1.

No Grid Engine here (tests/integration/test_ec2_moto.py joins real nodes): the provider's
launch, its back-off after an injected capacity error and its terminate, as a playbook runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import (  # noqa: F401 pylint: disable=unused-import
    IMAGE_ID, moto_ec2, moto_server)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..'))


def play(server, tmp_path, net, what, node):
    extra = {'what': what, 'node': node, 'provider_ec2_endpoint_url': server.endpoint,
             'provider_ec2_image_id': IMAGE_ID, 'provider_ec2_instance_types': ['c5.large', 't3.micro'],
             'provider_ec2_subnet_ids': [net['subnet_id']], 'provider_ec2_region': 'us-east-1',
             'provider_ec2_access_key': 'testing', 'provider_ec2_secret_key': 'testing',
             'provider_ec2_aws_config': {'retries': {'total_max_attempts': 1}},
             'provider_ec2_poll_interval': 0.2, 'provider_ec2_api_retry_delay': 0.05,
             'provider_ec2_state_path': str(tmp_path / 'reconcile.json')}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'),
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json', ANSIBLE_NOCOLOR='1')
    tool = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    proc = subprocess.run([tool, os.path.join(HERE, 'provider_ec2_play.yml'), '-e', json.dumps(extra)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    out = json.loads(proc.stdout)
    # role tasks are named '<role> : <name>' by some versions: keep the name only
    tasks = {t['task']['name'].split(' : ')[-1]: t['hosts'].get('localhost', {}) for t in out['plays'][0]['tasks']}
    return proc.returncode, tasks


def test_launch_backoff_terminate(moto_ec2, tmp_path):  # noqa: F811 pylint: disable=redefined-outer-name
    net = moto_ec2.network()
    moto_ec2.inject({'action': 'RunInstances', 'code': 'InsufficientInstanceCapacity', 'status': 500, 'times': -1,
                     'when': {'InstanceType': 'c5.large'}})
    rc, tasks = play(moto_ec2, tmp_path, net, 'launch', 'n1')
    assert rc == 0
    node = tasks['Show what the provider returned']['provider_node']
    assert node['provider'] == 'ec2' and node['name'] == 'n1' and node['cluster'] == 'rolecluster'
    assert node['instance_type'] == 't3.micro' and node['address'].startswith('10.77.0.')
    assert node['ssh_vars']['ansible_host'] == node['address'] and node['ssh_vars']['ansible_user'] == 'root'

    # every type out of capacity: the launch fails with the reason, leaves nothing, backs off
    moto_ec2.inject({'action': 'RunInstances', 'code': 'InsufficientInstanceCapacity', 'status': 500, 'times': -1})
    rc, tasks = play(moto_ec2, tmp_path, net, 'launch', 'n2')
    assert rc != 0
    msg = tasks['Fail with the reason']['msg']
    assert msg.startswith('EC2 launch of n2 failed (capacity): n2: no instance launched (capacity)')
    assert 'no instance of it is left, nothing was registered in Grid Engine; launches back off for 5m00s' in msg
    saved = json.loads((tmp_path / 'reconcile.json').read_text())
    assert saved['consecutive_failures'] == 1 and saved['failures'][0]['node'] == 'n2'
    live = {i['InstanceId'] for i in moto_ec2.live_instances('rolecluster')}
    assert live == {node['instance_id']}

    moto_ec2.clear_faults()
    calls = moto_ec2.faults()['calls'].get('RunInstances', 0)
    rc, tasks = play(moto_ec2, tmp_path, net, 'launch', 'n3')
    assert rc != 0 and tasks['Refuse to launch while launches back off']['msg'].startswith(
        'EC2 launch of n3 not tried: launches back off for')
    assert moto_ec2.faults()['calls'].get('RunInstances', 0) == calls

    rc, tasks = play(moto_ec2, tmp_path, net, 'terminate', 'n1')
    assert rc == 0
    gone = tasks['Show what the provider returned']['provider_node']
    assert gone['state'] == 'absent' and gone['terminated'] == [node['instance_id']]
    assert moto_ec2.live_instances('rolecluster') == []
