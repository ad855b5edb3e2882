# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ec2_node and ec2_node_info while the EC2 API throttles, fails or breaks on the wire.

EC2 is moto_server on 127.0.0.1 (real AWS cannot be reached from the test machine) behind the
fault proxy of ec2_fault_proxy.py, which answers the calls a test names with EC2's own error
documents (``RequestLimitExceeded`` 503, ``Throttling`` 400, ``InternalError`` 500,
``Unavailable`` 503), resets the connection, hangs, or answers ``200 OK`` with a body that is no
EC2 answer. The proxy logs every call, so each test counts the calls (the retries) and checks the
client tokens; after each fault the test looks at moto directly (not through the proxy) to see
what is really running.
"""

from __future__ import annotations

import json

import boto3
import botocore.exceptions
import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import ec2_node, ec2_node_info
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_fault_proxy import (  # noqa: F401 pylint: disable=unused-import
    INTERNAL, MORE_TOKEN, REQUEST_LIMIT, THROTTLING, UNAVAILABLE, FaultProxy, ec2_proxy, moto_required, moto_server, shared_botocore_loader)
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import IMAGE_ID

CLUSTER = 'faultcluster'
NO_BOTOCORE_RETRY = {'retries': {'total_max_attempts': 1}}
# a read timeout short enough for the "hang" cases
SHORT_READ = {'retries': {'total_max_attempts': 1}, 'read_timeout': 1, 'connect_timeout': 1}
ERRORS = {'RequestLimitExceeded': REQUEST_LIMIT, 'Throttling': THROTTLING, 'InternalError': INTERNAL,
          'Unavailable': UNAVAILABLE}


def run(capsys, module, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    result = json.loads(capsys.readouterr().out)
    result['rc'] = exc.value.code
    return result


@pytest.fixture
def ec2(ec2_proxy, shared_botocore_loader):  # noqa: F811 pylint: disable=redefined-outer-name,unused-argument
    net = ec2_proxy.moto.network()
    base = {'endpoint_url': ec2_proxy.endpoint, 'region': 'us-east-1', 'access_key': 'testing',
            'secret_key': 'testing', 'cluster': CLUSTER, 'image_id': IMAGE_ID, 'instance_types': ['t3.micro'],
            'subnet_ids': [net['subnet_id']], 'poll_interval': 0.05, 'api_retries': 3, 'api_retry_delay': 0.01,
            'api_retry_max_delay': 0.05, 'wait_timeout': 20, 'aws_config': NO_BOTOCORE_RETRY}
    return ec2_proxy, base


def info_args(proxy, **extra):
    return dict({'endpoint_url': proxy.endpoint, 'region': 'us-east-1', 'access_key': 'testing',
                 'secret_key': 'testing', 'cluster': CLUSTER, 'api_retries': 2, 'api_retry_delay': 0.01,
                 'aws_config': NO_BOTOCORE_RETRY}, **extra)


def live(proxy, node=None, cluster=CLUSTER):
    """Live instances of the cluster (of one node), asked of moto directly."""
    out = []
    for inst in proxy.moto.live_instances(cluster):
        if node is None or {t['Key']: t['Value'] for t in inst.get('Tags', [])}.get('gridengine-balancer:node') == node:
            out.append(inst['InstanceId'])
    return sorted(out)


def seed(proxy, node, cluster=CLUSTER):
    """An instance tagged as a node, launched on moto directly (not through the proxy): the world before."""
    tags = [{'Key': 'gridengine-balancer:cluster', 'Value': cluster},
            {'Key': 'gridengine-balancer:node', 'Value': node}, {'Key': 'Name', 'Value': node}]
    res = proxy.moto.client().run_instances(ImageId=IMAGE_ID, InstanceType='t3.micro', MinCount=1, MaxCount=1,
                                            TagSpecifications=[{'ResourceType': 'instance', 'Tags': tags}])
    return res['Instances'][0]['InstanceId']


def launched_by_moto(proxy):
    """RunInstances calls that reached moto (forwarded, also those whose answer was then lost)."""
    return [c for c in proxy.calls('RunInstances') if c['did'] in ('forwarded', 'cut') or c.get('after')]


# --- throttling that clears within the retry budget -------------------------------------------

def test_launch_throttled_by_each_code_then_served_launches_once(capsys, ec2):
    proxy, base = ec2
    codes = ['RequestLimitExceeded', 'Throttling', 'InternalError', 'Unavailable']
    proxy.script(*[dict(ERRORS[code], action='RunInstances', times=1) for code in codes])
    proxy.script(dict(REQUEST_LIMIT, action='DescribeInstances', times=1))
    res = run(capsys, ec2_node, dict(base, name='node001', api_retries=4))
    assert res['rc'] == 0 and res['changed'] is True and res['attempts'] == [], res
    runs = proxy.calls('RunInstances')
    # the retries are the proxy's log: 4 errors, then moto's answer; one client token for all five calls
    assert [(c['did'], c.get('code'), c['status']) for c in runs] == [
        ('error', code, ERRORS[code]['status']) for code in codes] + [('forwarded', None, 200)]
    assert len({c['client_token'] for c in runs}) == 1 and runs[0]['client_token'].startswith('geb-')
    assert proxy.calls('DescribeInstances')[0]['did'] == 'error'
    assert live(proxy, 'node001') == [res['instance_id']] and res['terminated'] == []


def test_info_throttled_then_served_lists_everything(capsys, ec2):
    proxy, _base = ec2
    ids = sorted(seed(proxy, n) for n in ('node001', 'node002'))
    proxy.script(dict(REQUEST_LIMIT, action='DescribeInstances', times=2))
    res = run(capsys, ec2_node_info, info_args(proxy))
    assert res['rc'] == 0 and sorted(i['instance_id'] for i in res['instances']) == ids
    assert [c['did'] for c in proxy.calls('DescribeInstances')] == ['error', 'error', 'forwarded']


def test_seeded_storm_of_throttling_on_every_call(capsys, ec2):
    """Half of all calls throttled (seeded): a launch, the listing and a terminate all get through."""
    proxy, base = ec2
    other = seed(proxy, 'node002')
    proxy.script(dict(REQUEST_LIMIT, action='*', rate=0.5, seed=11, times=-1))
    iid = run(capsys, ec2_node, dict(base, name='node001', api_retries=8))['instance_id']
    listed = run(capsys, ec2_node_info, info_args(proxy, api_retries=8))
    assert sorted(i['instance_id'] for i in listed['instances']) == sorted([iid, other])
    gone = run(capsys, ec2_node, dict(base, name='node002', state='absent', api_retries=8))
    assert gone['rc'] == 0 and gone['terminated'] == [other]
    assert live(proxy) == [iid]
    assert len(proxy.calls(did='error')) >= 3, proxy.log  # the storm really happened
    assert len(launched_by_moto(proxy)) == 1  # one RunInstances reached moto


# --- throttling that does not clear ------------------------------------------------------------

def test_launch_throttled_for_good_fails_clearly_and_touches_nothing_else(capsys, ec2):
    proxy, base = ec2
    mine, other = seed(proxy, 'node001'), seed(proxy, 'node002', cluster='othercluster')
    proxy.script(dict(REQUEST_LIMIT, action='RunInstances', times=-1))
    res = run(capsys, ec2_node, dict(base, name='node002', api_retries=2, instance_types=['c5.large', 't3.micro']))
    assert res['rc'] == 1 and res['failed'] is True
    assert res['error_kind'] == 'throttling' and res['error_code'] == 'RequestLimitExceeded'
    assert res['msg'].startswith('node002: no instance launched (throttling); attempt 1: RunInstances (c5.large in ')
    assert 'EC2 throttled the API calls even after the jittered retries' in res['msg']
    assert res['msg'].endswith('nothing of node002 is left running')
    runs = proxy.calls('RunInstances')
    assert len(runs) == 3 and len({c['client_token'] for c in runs}) == 1  # 1 + 2 retries, one token, one type
    assert proxy.calls('TerminateInstances') == [] and res['terminated'] == []
    assert live(proxy) == [mine] and live(proxy, cluster='othercluster') == [other]


def test_terminate_never_acts_on_a_list_it_could_not_read(capsys, ec2):
    proxy, base = ec2
    iid = seed(proxy, 'node001')
    for rule in (dict(THROTTLING, times=-1), {'fault': 'foreign', 'times': -1}):
        proxy.clear()
        proxy.script(dict(rule, action='DescribeInstances'))
        res = run(capsys, ec2_node, dict(base, name='node001', state='absent', api_retries=1))
        assert res['rc'] == 1 and res['terminated'] == [], res
        assert proxy.calls('TerminateInstances') == [] and live(proxy) == [iid]
    assert res['error_code'] == 'MalformedAnswer' and 'not an EC2 answer' in res['msg']
    # throttled TerminateInstances that clears: terminated once
    proxy.clear()
    proxy.script(dict(REQUEST_LIMIT, action='TerminateInstances', times=2))
    res = run(capsys, ec2_node, dict(base, name='node001', state='absent'))
    assert res['rc'] == 0 and res['terminated'] == [iid] and live(proxy) == []
    assert [c['did'] for c in proxy.calls('TerminateInstances')] == ['error', 'error', 'forwarded']


# --- a listing that fails: no list at all, never an empty or partial one --------------------------

INFO_FAULTS = {
    'InternalError': dict(INTERNAL),                                   # 500 after the retries
    'RequestLimitExceeded': dict(REQUEST_LIMIT),                       # throttled after the retries
    'reset': {'fault': 'reset'}, 'hang': {'fault': 'hang', 'seconds': 5},
    'empty': {'fault': 'empty'}, 'html': {'fault': 'html'}, 'foreign': {'fault': 'foreign'},
    'cut': {'fault': 'cut'},
}
INFO_CODES = {'InternalError': 'InternalError', 'RequestLimitExceeded': 'RequestLimitExceeded',
              'reset': 'ConnectionClosedError', 'hang': 'ReadTimeoutError', 'empty': 'ResponseParserError',
              'html': 'ResponseParserError', 'foreign': 'MalformedAnswer', 'cut': 'ResponseParserError'}


def test_info_fails_on_every_unreadable_answer_and_returns_no_list(capsys, ec2):
    proxy, _base = ec2
    seed(proxy, 'node001')
    seen = {}
    for name, rule in INFO_FAULTS.items():
        proxy.clear()
        proxy.script(dict(rule, action='DescribeInstances', times=-1))
        res = run(capsys, ec2_node_info, info_args(proxy, aws_config=SHORT_READ))
        seen[name] = (res['rc'], 'instances' in res or 'nodes' in res, res.get('error_code'),
                      len(proxy.calls('DescribeInstances')))
        assert res['msg'].startswith('cannot list the instances of cluster %s: DescribeInstances failed with %s: '
                                     % (CLUSTER, INFO_CODES[name])), res['msg']
        assert res['msg'].endswith('; no instance list returned')
    # every fault: failed, no list; error answers retried (1 + 2), the others not (the next poll retries)
    assert seen == {name: (1, False, INFO_CODES[name], 3 if name in ('InternalError', 'RequestLimitExceeded') else 1)
                    for name in INFO_FAULTS}


def test_info_listing_that_breaks_after_its_first_page_returns_no_list(capsys, ec2):
    proxy, _base = ec2
    seed(proxy, 'node001')
    proxy.script({'action': 'DescribeInstances', 'fault': 'more', 'times': 1},
                 dict(INTERNAL, action='DescribeInstances', when={'NextToken': MORE_TOKEN}, times=-1))
    res = run(capsys, ec2_node_info, info_args(proxy))
    assert res['rc'] == 1 and 'instances' not in res and 'nodes' not in res, res  # not the first page alone
    assert res['msg'].startswith('cannot list the instances of cluster %s: DescribeInstances failed with '
                                 'InternalError: ' % CLUSTER)
    assert [c['did'] for c in proxy.calls('DescribeInstances')] == ['more', 'error', 'error', 'error']


def test_adopt_check_that_cannot_be_read_launches_nothing(capsys, ec2):
    """The look for a live instance of the node gets a 200 that is no answer: no second launch."""
    proxy, base = ec2
    first = seed(proxy, 'node001')
    proxy.script({'action': 'DescribeInstances', 'fault': 'foreign', 'times': 1})
    res = run(capsys, ec2_node, dict(base, name='node001'))
    assert res['rc'] == 1 and res['error_kind'] == 'error' and res['error_code'] == 'MalformedAnswer', res
    assert 'DescribeInstances answered without a reservation set: not an EC2 answer' in res['msg']
    assert proxy.calls('RunInstances') == [] and live(proxy, 'node001') == [first]


# --- answers lost on the wire after EC2 acted --------------------------------------------------

LOST = {'reset': ({'fault': 'reset'}, 'ConnectionClosedError'), 'hang': ({'fault': 'hang', 'seconds': 5}, 'ReadTimeoutError'),
        'cut': ({'fault': 'cut'}, 'ResponseParserError'), 'foreign': ({'fault': 'foreign'}, 'MalformedAnswer'),
        'InternalError': (dict(INTERNAL), 'InternalError')}


def test_launch_whose_answer_is_lost_leaves_nothing_running(capsys, ec2):
    """moto launches, the answer is lost (reset, timeout, garbled, 500): the module finds and terminates it."""
    proxy, base = ec2
    for n, (name, (rule, code)) in enumerate(sorted(LOST.items())):
        node = 'node%03d' % (n + 1)
        proxy.clear()
        proxy.script(dict(rule, action='RunInstances', after=True, times=-1))
        res = run(capsys, ec2_node, dict(base, name=node, api_retries=0, aws_config=SHORT_READ))
        assert res['rc'] == 1 and res['failed'] is True and res['error_code'] == code, (name, res)
        assert len(launched_by_moto(proxy)) == 1, name  # EC2 did launch one
        assert len(res['terminated']) == 1 and live(proxy, node) == [], name
        if name != 'InternalError':  # an error answer is classified as before; the others are lost answers
            assert 'got no usable answer (%s: ' % code in res['msg'], res['msg']
        assert 'terminated what this launch had started: %s' % res['terminated'][0] in res['msg']
        assert res['msg'].endswith('nothing of %s is left running' % node), res['msg']
    assert live(proxy) == []


def test_lost_answer_retried_with_its_client_token_launches_once(capsys, ec2):
    """With AWS's ClientToken idempotency (the proxy keeps it; moto does not), the retry of a call whose
    answer was lost gets the first answer again: one instance, nothing to clean up."""
    proxy, base = ec2
    proxy.client_tokens = True
    for n, (name, rule) in enumerate([('reset', {'fault': 'reset'}), ('error', dict(REQUEST_LIMIT))]):
        node = 'node%03d' % (n + 1)
        proxy.clear()
        proxy.script(dict(rule, action='RunInstances', after=True, times=1))
        # botocore's own retries on (its default): they retry the reset, AWSRetry the throttled answer
        res = run(capsys, ec2_node, dict(base, name=node, aws_config={}))
        assert res['rc'] == 0 and res['terminated'] == [], (name, res)
        runs = proxy.calls('RunInstances')
        assert [c['did'] for c in runs] == [name, 'replayed'] and len({c['client_token'] for c in runs}) == 1
        assert live(proxy, node) == [res['instance_id']] and proxy.calls('TerminateInstances') == []


def test_adopt_after_a_throttled_launch_calls_run_instances_no_more(capsys, ec2):
    """What the next poll's journal resume does with a node whose launch was throttled: adopt it."""
    proxy, base = ec2
    proxy.script(dict(REQUEST_LIMIT, action='RunInstances', times=2))
    first = run(capsys, ec2_node, dict(base, name='node003'))
    again = run(capsys, ec2_node, dict(base, name='node003'))
    assert again['rc'] == 0 and again['changed'] is False and again['instance_id'] == first['instance_id']
    assert len(proxy.calls('RunInstances')) == 3 and live(proxy, 'node003') == [first['instance_id']]


def test_the_proxy_itself_loopback_only_and_client_tokens(ec2):
    proxy, _base = ec2
    assert proxy.server.server_address[0] == '127.0.0.1'
    for upstream in ('http://10.77.0.1:5000', 'https://127.0.0.1:5000', 'http://example.com:80'):
        with pytest.raises(ValueError, match='only http://127.0.0.1:PORT'):
            FaultProxy(upstream)
    # AWS's ClientToken rule as the proxy keeps it: same token and parameters, the first answer again;
    # same token, other parameters, IdempotentParameterMismatch
    proxy.client_tokens = True
    ec2c = boto3.client('ec2', region_name='us-east-1', endpoint_url=proxy.endpoint, aws_access_key_id='testing',
                        aws_secret_access_key='testing')
    ids = [ec2c.run_instances(ImageId=IMAGE_ID, MinCount=1, MaxCount=1, ClientToken='t-1')['Instances'][0]['InstanceId']
           for attempt in (1, 2)]
    assert ids[0] == ids[1] and [c['did'] for c in proxy.calls('RunInstances')] == ['forwarded', 'replayed']
    with pytest.raises(botocore.exceptions.ClientError, match='IdempotentParameterMismatch'):
        ec2c.run_instances(ImageId=IMAGE_ID, InstanceType='c5.large', MinCount=1, MaxCount=1, ClientToken='t-1')
    assert len(proxy.moto.live_instances()) == 1
