# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.ec2_node and ec2_node_info against moto_server on 127.0.0.1.

EC2 is moto's server in a child process (ec2_moto.py), reached over HTTP by boto3 exactly as AWS
would be: real AWS cannot be reached from the test machine.  Errors are injected by the server's
fault layer; after each one the test checks with its own boto3 client that no instance of the
node is left running.
"""

from __future__ import annotations

import ipaddress
import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import ec2_node, ec2_node_info
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import (  # noqa: F401 pylint: disable=unused-import
    IMAGE_ID, SUBNET_CIDR, moto_ec2, moto_server)

CLUSTER = 'ec2test'
# botocore's own retries off, so that every call the fault layer counts is one of the module's
NO_BOTOCORE_RETRY = {'retries': {'total_max_attempts': 1}}


def run(capsys, module, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    result['rc'] = exc.value.code
    return result


@pytest.fixture
def ec2(moto_ec2):  # noqa: F811 pylint: disable=redefined-outer-name
    net = moto_ec2.network()
    base = dict(moto_ec2.aws_args(), cluster=CLUSTER, image_id=IMAGE_ID, instance_types=['t3.micro'],
                subnet_ids=[net['subnet_id']], security_group_ids=[net['security_group_id']],
                poll_interval=0.05, api_retry_delay=0.01, api_retry_max_delay=0.05,
                aws_config=NO_BOTOCORE_RETRY)
    return moto_ec2, base, net


def live(server, node=None):
    out = server.live_instances(CLUSTER)
    if node:
        out = [i for i in out if {t['Key']: t['Value'] for t in i.get('Tags', [])}.get('gridengine-balancer:node') == node]
    return out


def test_launch_adopt_terminate(capsys, ec2):
    server, base, net = ec2
    res = run(capsys, ec2_node, dict(base, name='node001'))
    assert res['rc'] == 0 and res['changed'] is True, res
    inst = res['instance']
    assert inst['state'] == 'running' and inst['subnet_id'] == net['subnet_id']
    assert inst['tags'] == {'Name': 'node001', 'gridengine-balancer:cluster': CLUSTER,
                            'gridengine-balancer:node': 'node001'}
    # the address is in the nodes' /26 of the bridge's /24: never the master (.1) nor a local node (.11-.127)
    address = ipaddress.ip_address(res['address'])
    assert address in ipaddress.ip_network(SUBNET_CIDR) and address > ipaddress.ip_address('10.77.0.127')

    again = run(capsys, ec2_node, dict(base, name='node001'))
    assert again['changed'] is False and again['instance_id'] == res['instance_id']
    assert server.faults()['calls']['RunInstances'] == 1

    checked = run(capsys, ec2_node, dict(base, name='node001', state='absent', _ansible_check_mode=True))
    assert checked['changed'] is True and checked['msg'] == 'would terminate %s' % res['instance_id']
    assert len(live(server, 'node001')) == 1

    gone = run(capsys, ec2_node, dict(base, name='node001', state='absent'))
    assert gone['changed'] is True and gone['terminated'] == [res['instance_id']]
    assert live(server) == []
    assert run(capsys, ec2_node, dict(base, name='node001', state='absent'))['changed'] is False


def test_check_mode_launches_nothing(capsys, ec2):
    server, base, _net = ec2
    res = run(capsys, ec2_node, dict(base, name='node002', instance_types=['c5.large', 't3.micro'],
                                     _ansible_check_mode=True))
    assert res['changed'] is True and res['msg'].startswith('would launch node002 (c5.large in subnet-')
    assert 'RunInstances' not in server.faults()['calls'] and live(server) == []


def test_spot_with_max_price(capsys, ec2):
    server, base, _net = ec2
    res = run(capsys, ec2_node, dict(base, name='node003', market='spot', spot_max_price='0.05'))
    assert res['rc'] == 0 and res['instance']['market'] == 'spot'
    assert len(live(server, 'node003')) == 1


def test_capacity_error_falls_back_to_the_next_type(capsys, ec2):
    server, base, _net = ec2
    server.inject({'action': 'RunInstances', 'code': 'InsufficientInstanceCapacity', 'status': 500, 'times': -1,
                   'when': {'InstanceType': 'c5.large'},
                   'message': 'We currently do not have sufficient c5.large capacity in the Availability Zone'})
    res = run(capsys, ec2_node, dict(base, name='node004', instance_types=['c5.large', 't3.micro']))
    assert res['rc'] == 0 and res['instance']['instance_type'] == 't3.micro', res
    assert [(a['kind'], a['instance_type']) for a in res['attempts']] == [('capacity', 'c5.large')]
    assert len(live(server, 'node004')) == 1


@pytest.mark.parametrize('code, status, kind, market, attempts', [
    # capacity and spot: every (type, subnet) pair is tried, then nothing is left
    ('InsufficientInstanceCapacity', 500, 'capacity', 'on-demand', 2),
    ('SpotMaxPriceTooLow', 400, 'spot', 'spot', 2),
    ('InsufficientInstanceCapacity', 500, 'capacity', 'spot', 2),
    # limits: no other type helps; stop at the first
    ('InstanceLimitExceeded', 400, 'limit', 'on-demand', 1),
    ('VcpuLimitExceeded', 400, 'limit', 'on-demand', 1),
    ('MaxSpotInstanceCountExceeded', 400, 'limit', 'spot', 1),
    ('InvalidAMIID.NotFound', 400, 'config', 'on-demand', 1),
])
def test_launch_errors_leave_nothing(capsys, ec2, code, status, kind, market, attempts):
    server, base, _net = ec2
    server.inject({'action': 'RunInstances', 'code': code, 'status': status, 'times': -1})
    res = run(capsys, ec2_node, dict(base, name='node005', instance_types=['c5.large', 't3.micro'], market=market))
    assert res['rc'] == 1 and res['failed'] is True
    assert res['error_kind'] == kind and res['error_code'] == code
    assert len(res['attempts']) == attempts and server.faults()['calls']['RunInstances'] == attempts
    assert res['msg'].startswith('node005: no instance launched (%s); attempt 1: RunInstances (c5.large' % kind)
    assert res['msg'].endswith('nothing of node005 is left running')
    assert live(server) == []


def test_throttling_is_retried_with_jittered_backoff(capsys, ec2):
    server, base, _net = ec2
    server.inject({'action': 'RunInstances', 'code': 'RequestLimitExceeded', 'status': 503, 'times': 2})
    res = run(capsys, ec2_node, dict(base, name='node006'))
    assert res['rc'] == 0 and res['changed'] is True
    assert server.faults()['calls']['RunInstances'] == 3
    assert len(live(server, 'node006')) == 1


def test_throttling_that_does_not_stop_fails_cleanly(capsys, ec2):
    server, base, _net = ec2
    server.inject({'action': 'RunInstances', 'code': 'RequestLimitExceeded', 'status': 503, 'times': -1})
    res = run(capsys, ec2_node, dict(base, name='node007', api_retries=2, instance_types=['c5.large', 't3.micro']))
    assert res['rc'] == 1 and res['error_kind'] == 'throttling' and res['error_code'] == 'RequestLimitExceeded'
    assert server.faults()['calls']['RunInstances'] == 3  # 1 + 2 retries, then no other type (throttling)
    assert live(server) == []


def test_lost_answer_instance_is_terminated(capsys, ec2):
    """EC2 launched the instance but the answer was an error: the clean-up finds it by its tags."""
    server, base, _net = ec2
    server.inject({'action': 'RunInstances', 'code': 'InternalError', 'status': 500, 'times': 1, 'after': True})
    res = run(capsys, ec2_node, dict(base, name='node008', api_retries=0))
    assert res['rc'] == 1 and res['error_kind'] == 'error'
    assert len(res['terminated']) == 1 and live(server) == []
    assert 'terminated what this launch had started: %s' % res['terminated'][0] in res['msg']


def test_lost_answer_then_retry_keeps_one_instance(capsys, ec2):
    """A throttled answer after EC2 acted, then the retry launches: the earlier instance is terminated."""
    server, base, _net = ec2
    server.inject({'action': 'RunInstances', 'code': 'RequestLimitExceeded', 'status': 503, 'times': 1, 'after': True})
    res = run(capsys, ec2_node, dict(base, name='node009'))
    assert res['rc'] == 0 and len(res['terminated']) == 1
    assert [i['InstanceId'] for i in live(server, 'node009')] == [res['instance_id']]


def test_never_ready_is_terminated_after_the_timeout(capsys, ec2):
    server, base, _net = ec2
    # the instance never shows up in DescribeInstances by id (as if it stayed invisible/pending)
    server.inject({'action': 'DescribeInstances', 'code': 'InvalidInstanceID.NotFound', 'status': 400,
                   'times': -1, 'when': {'InstanceId.1': '*'}})
    res = run(capsys, ec2_node, dict(base, name='node010', wait_timeout=1, instance_types=['c5.large', 't3.micro']))
    assert res['rc'] == 1 and res['error_kind'] == 'timeout', res
    assert len(res['attempts']) == 1  # a timeout is not a capacity problem: no other type tried
    assert len(res['terminated']) == 1
    server.clear_faults()
    assert live(server) == []


def test_terminate_refuses_another_clusters_instance(capsys, ec2):
    server, base, _net = ec2
    other = run(capsys, ec2_node, dict(base, cluster='othercluster', name='node001'))
    res = run(capsys, ec2_node, dict(base, name='node001', state='absent', instance_id=other['instance_id']))
    assert res['rc'] == 1 and 'not tagged gridengine-balancer:cluster=%s' % CLUSTER in res['msg']
    assert len(server.live_instances('othercluster')) == 1


def test_info_lists_by_tag(capsys, ec2):
    server, base, _net = ec2
    ids = [run(capsys, ec2_node, dict(base, name=n))['instance_id'] for n in ('node001', 'node002')]
    run(capsys, ec2_node, dict(base, cluster='othercluster', name='node001'))
    res = run(capsys, ec2_node_info, dict(server.aws_args(), cluster=CLUSTER, aws_config=NO_BOTOCORE_RETRY))
    assert res['changed'] is False
    assert sorted(i['instance_id'] for i in res['instances']) == sorted(ids)
    assert res['nodes'] == {'node001': [ids[0]], 'node002': [ids[1]]}
    one = run(capsys, ec2_node_info, dict(server.aws_args(), cluster=CLUSTER, name='node002'))
    assert [i['node'] for i in one['instances']] == ['node002']


def test_bad_input_names_it(capsys, ec2):
    server, base, _net = ec2
    res = run(capsys, ec2_node, dict(base, name='node_1'))
    assert res['rc'] == 1 and res['msg'].startswith("name: 'node_1' is not a host name")
    res = run(capsys, ec2_node, dict(base, name='node011', market='spot', spot_max_price='cheap'))
    assert res['rc'] == 1 and res['msg'].startswith('spot_max_price:')
    assert live(server) == []
