# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils.ec2_nodes: error kinds, tags, RunInstances parameters, instance summaries."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import ec2_nodes as en


# The error codes of the EC2 API reference (errors-overview), spot request status codes and state
# reason codes, each with the kind the provider gives it.
@pytest.mark.parametrize('code, kind, try_next', [
    ('InsufficientInstanceCapacity', 'capacity', True),
    ('InsufficientHostCapacity', 'capacity', True),
    ('InsufficientFreeAddressesInSubnet', 'capacity', True),
    ('Server.InsufficientInstanceCapacity', 'capacity', True),
    ('InsufficientSomethingNew', 'capacity', True),
    ('SpotMaxPriceTooLow', 'spot', True),
    ('capacity-not-available', 'spot', True),
    ('price-too-low', 'spot', True),
    ('Server.SpotInstanceTermination', 'spot', True),
    ('InstanceLimitExceeded', 'limit', False),
    ('VcpuLimitExceeded', 'limit', False),
    ('MaxSpotInstanceCountExceeded', 'limit', False),
    ('RequestLimitExceeded', 'throttling', False),
    ('Throttling', 'throttling', False),
    ('InvalidAMIID.NotFound', 'config', False),
    ('InvalidSubnetID.NotFound', 'config', False),
    ('InvalidGroup.NotFound', 'config', False),
    ('InvalidKeyPair.NotFound', 'config', False),
    ('InvalidPlacementGroup.Unknown', 'config', False),
    ('UnauthorizedOperation', 'config', False),
    ('InternalError', 'error', False),
    ('', 'error', False),
    (None, 'error', False),
])
def test_error_kinds(code, kind, try_next):
    assert en.error_kind(code) == kind
    out = en.classify(code, 'the message', 'c5.large', 'subnet-1')
    assert out['kind'] == kind and out['try_next'] is try_next
    assert out['msg'].startswith('RunInstances (c5.large in subnet-1) failed with ')
    assert en.KIND_MEANING[kind] in out['msg']


def test_classify_message_names_spot_and_code():
    out = en.classify('SpotMaxPriceTooLow', 'Your Spot request price of 0.001 is lower than the minimum',
                      'm5.large', None, market='spot')
    assert out['msg'] == ('RunInstances (m5.large spot) failed with SpotMaxPriceTooLow: Your Spot request price of '
                          '0.001 is lower than the minimum - ' + en.KIND_MEANING['spot'])


def test_summary_message_lists_every_attempt_and_the_cleanup():
    fails = [en.classify('InsufficientInstanceCapacity', 'none', 'c5.large', 's-1'),
             en.classify('InstanceLimitExceeded', 'quota', 'c5a.large', 's-1')]
    msg = en.summary_message('node004', fails, ['i-1'])
    assert msg.startswith('node004: no instance launched (limit); attempt 1: RunInstances (c5.large in s-1)')
    assert 'attempt 2: RunInstances (c5a.large in s-1) failed with InstanceLimitExceeded: quota' in msg
    assert msg.endswith('terminated what this launch had started: i-1; nothing of node004 is left running')


def test_tags_and_filters():
    tags = en.node_tags('mycluster', 'node003', {'Name': 'other', 'team': 'hpc'})
    assert tags == {'Name': 'node003', 'team': 'hpc', en.TAG_CLUSTER: 'mycluster', en.TAG_NODE: 'node003'}
    assert en.node_filters('mycluster', 'node003') == [
        {'Name': 'tag:gridengine-balancer:cluster', 'Values': ['mycluster']},
        {'Name': 'tag:gridengine-balancer:node', 'Values': ['node003']},
        {'Name': 'instance-state-name', 'Values': ['pending', 'running', 'stopping', 'stopped']}]
    assert en.node_filters('c', states=None) == [{'Name': 'tag:gridengine-balancer:cluster', 'Values': ['c']}]


def test_attempt_order_is_type_major():
    assert en.launch_attempts(['a', 'b'], ['s1', 's2']) == [('a', 's1'), ('a', 's2'), ('b', 's1'), ('b', 's2')]
    assert en.launch_attempts(['a'], []) == [('a', None)]


def test_run_instances_params_on_demand():
    opts = {'image_id': 'ami-1', 'security_group_ids': ['sg-1'], 'key_name': 'k', 'placement_group': 'pg',
            'iam_instance_profile': 'nodes', 'market': 'on-demand', 'tags': {'team': 'hpc'}}
    params = en.run_instances_params('c', 'node001', 'c5.large', 'subnet-1', opts, 'tok')
    assert params['ImageId'] == 'ami-1' and params['InstanceType'] == 'c5.large'
    assert params['MinCount'] == params['MaxCount'] == 1 and params['ClientToken'] == 'tok'
    assert params['SubnetId'] == 'subnet-1' and params['SecurityGroupIds'] == ['sg-1']
    assert params['KeyName'] == 'k' and params['Placement'] == {'GroupName': 'pg'}
    assert params['IamInstanceProfile'] == {'Name': 'nodes'}
    assert 'InstanceMarketOptions' not in params
    tags = {t['Key']: t['Value'] for t in params['TagSpecifications'][0]['Tags']}
    assert tags == {'Name': 'node001', 'team': 'hpc', en.TAG_CLUSTER: 'c', en.TAG_NODE: 'node001'}
    assert [s['ResourceType'] for s in params['TagSpecifications']] == ['instance', 'volume']


def test_run_instances_params_spot_with_max_price():
    params = en.run_instances_params('c', 'n1', 't3.micro', None, {'image_id': 'ami-1', 'market': 'spot',
                                                                   'spot_max_price': '0.05'}, 'tok')
    assert params['InstanceMarketOptions'] == {
        'MarketType': 'spot',
        'SpotOptions': {'SpotInstanceType': 'one-time', 'InstanceInterruptionBehavior': 'terminate', 'MaxPrice': '0.05'}}
    assert 'SubnetId' not in params and 'SecurityGroupIds' not in params


@pytest.mark.parametrize('opts, word', [
    ({'instance_types': ['t3.micro']}, 'image_id'),
    ({'image_id': 'ami-1', 'instance_types': []}, 'instance_types'),
    ({'image_id': 'ami-1', 'instance_types': ['t3.micro'], 'market': 'reserved'}, 'market'),
    ({'image_id': 'ami-1', 'instance_types': ['t3.micro'], 'spot_max_price': '0.1'}, 'spot_max_price: only'),
    ({'image_id': 'ami-1', 'instance_types': ['t3.micro'], 'market': 'spot', 'spot_max_price': 'cheap'}, 'spot_max_price'),
    ({'image_id': 'ami-1', 'instance_types': ['t3.micro'], 'market': 'spot', 'spot_max_price': '0'}, 'spot_max_price'),
])
def test_bad_launch_options_name_the_option(opts, word):
    with pytest.raises(ValueError, match=word):
        en.check_launch_options(opts)


@pytest.mark.parametrize('cluster, name', [('my cluster', 'n1'), ('c', 'node_1'), ('c', '-x'), (None, 'n')])
def test_bad_names(cluster, name):
    with pytest.raises(ValueError):
        en.check_names(cluster, name)


def test_summarize_describe_instances_item():
    # the shape boto3 returns for DescribeInstances (a moto_server answer, trimmed)
    item = {'InstanceId': 'i-1', 'InstanceType': 't3.micro', 'PrivateIpAddress': '10.77.0.132',
            'SubnetId': 'subnet-1', 'State': {'Code': 16, 'Name': 'running'}, 'InstanceLifecycle': 'spot',
            'LaunchTime': datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc),
            'StateReason': {'Code': 'Server.SpotInstanceTermination', 'Message': 'gone'},
            'Tags': [{'Key': en.TAG_CLUSTER, 'Value': 'c'}, {'Key': en.TAG_NODE, 'Value': 'node001'}]}
    out = en.summarize(item)
    assert out['launch_time'] == 1700000000.0
    assert (out['instance_id'], out['node'], out['cluster'], out['state'], out['market']) == \
        ('i-1', 'node001', 'c', 'running', 'spot')
    assert out['state_reason'] == {'code': 'Server.SpotInstanceTermination', 'message': 'gone'}
    assert en.summarize({'InstanceId': 'i-2', 'LaunchTime': '2023-11-14T22:13:20Z'})['launch_time'] == 1700000000.0
    assert en.summarize({'InstanceId': 'i-3'})['launch_time'] is None


@pytest.mark.parametrize('page', [
    {},                                                    # a 200 whose body is no EC2 answer (a middlebox page)
    {'ResponseMetadata': {'HTTPStatusCode': 200}},
    {'Reservations': None},
    {'Reservations': [{'ReservationId': 'r-1'}]},          # a reservation without its instances
    {'Reservations': [{'Instances': [{'State': {'Name': 'running'}}]}]},  # an instance without an id
    None,
])
def test_a_describe_answer_without_its_fields_is_no_answer_never_no_instances(page):
    with pytest.raises(en.MalformedAnswer, match='^DescribeInstances answered without .*: not an EC2 answer'):
        en.page_instances(page)


def test_describe_and_run_answers():
    inst = {'InstanceId': 'i-1', 'State': {'Name': 'running'}}
    assert en.page_instances({'Reservations': []}) == []  # EC2's answer when nothing matches
    assert en.page_instances({'Reservations': [{'Instances': [inst]}, {'Instances': []}]}) == [inst]
    assert en.launched_instance_id({'Instances': [inst]}) == 'i-1'
    for answer in ({}, {'Instances': []}, {'Instances': [{}]}, None):
        with pytest.raises(en.MalformedAnswer, match='^RunInstances answered without an instance id'):
            en.launched_instance_id(answer)


def test_lost_answer_is_no_capacity_problem_and_says_ec2_may_have_acted():
    out = en.lost_answer('ReadTimeoutError', 'Read timeout on endpoint URL', 't3.micro', 'subnet-1')
    assert out['kind'] == 'error' and out['try_next'] is False and out['code'] == 'ReadTimeoutError'
    assert out['msg'] == ('RunInstances (t3.micro in subnet-1) got no usable answer (ReadTimeoutError: Read timeout on '
                          'endpoint URL) - EC2 may have launched the instance all the same; every live instance '
                          'tagged for the node is terminated')
