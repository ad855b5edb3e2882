# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the ``ec2`` node provider (standard library only, no boto3 import).

What the modules ``ec2_node`` and ``ec2_node_info`` need that is not an API call:

* the tags that make an instance a node of a cluster (:func:`node_tags`, :func:`node_filters`);
* the ``RunInstances`` parameters for one attempt (:func:`run_instances_params`), one attempt per
  (instance type, subnet) pair in the order given (:func:`launch_attempts`);
* error classification (:func:`classify`): every EC2 error code the provider can meet while
  launching becomes a *kind* (``capacity``, ``spot``, ``limit``, ``throttling``, ``config``,
  ``timeout``, ``error``) and a sentence a person can act on;
* a compact, JSON-friendly summary of an instance (:func:`summarize`);
* the checks that an answer is one (:func:`page_instances`, :func:`launched_instance_id`): a
  ``200 OK`` whose body is no EC2 answer (a middlebox's page, a body cut short) parses into a
  dict without the operation's fields; it must fail, never read as "no instances".

The modules do the calls; everything here is plain data in, plain data out, so it is tested
without AWS and without moto.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import datetime
import re

#: Tag keys that make an instance a node of a cluster.  ``Name`` is set too (the console shows it).
TAG_CLUSTER = 'gridengine-balancer:cluster'
TAG_NODE = 'gridengine-balancer:node'
TAG_NAME = 'Name'

#: Instance states that count as "the node exists" (it costs money or may come back).
LIVE_STATES = ('pending', 'running', 'stopping', 'stopped')
#: States on the way out or gone.
GONE_STATES = ('shutting-down', 'terminated')

MARKETS = ('on-demand', 'spot')

# \Z, not $: "$" also matches before a trailing newline ("node003\n" would pass)
NAME_RE = re.compile(r'\A[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z')
CLUSTER_RE = re.compile(r'\A[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z')
PRICE_RE = re.compile(r'\A[0-9]+(\.[0-9]+)?\Z')

# --------------------------------------------------------------------------------------------
# error classification
# --------------------------------------------------------------------------------------------

#: kind -> (error codes, whether another instance type / subnet may succeed, what it means)
_KINDS = (
    ('capacity', ('InsufficientInstanceCapacity', 'InsufficientHostCapacity',
                  'InsufficientReservedInstanceCapacity', 'InsufficientCapacity',
                  'InsufficientFreeAddressesInSubnet', 'Server.InsufficientInstanceCapacity'),
     True, 'EC2 has not enough capacity for this instance type in this availability zone or subnet'),
    ('spot', ('SpotMaxPriceTooLow', 'Server.SpotInstanceTermination', 'Server.SpotInstanceShutdown',
              'capacity-not-available', 'capacity-oversubscribed', 'price-too-low', 'not-scheduled-yet',
              'launch-group-constraint', 'az-group-constraint', 'placement-group-constraint',
              'constraint-not-fulfilled', 'schedule-expired', 'canceled-before-fulfillment',
              'instance-terminated-no-capacity', 'instance-terminated-capacity-oversubscribed',
              'instance-terminated-by-price', 'marked-for-termination'),
     True, 'the spot request was not fulfilled (no spot capacity at the maximum price)'),
    ('limit', ('InstanceLimitExceeded', 'VcpuLimitExceeded', 'MaxSpotInstanceCountExceeded',
               'AddressLimitExceeded', 'ResourceLimitExceeded', 'Client.InstanceLimitExceeded'),
     False, 'an account limit (quota) of EC2 is reached; raise it (Service Quotas) or lower max_nodes'),
    ('throttling', ('RequestLimitExceeded', 'Throttling', 'ThrottlingException', 'RequestThrottled',
                    'TooManyRequestsException', 'SlowDown'),
     False, 'EC2 throttled the API calls even after the jittered retries'),
    ('config', ('InvalidAMIID.NotFound', 'InvalidAMIID.Malformed', 'InvalidAMIID.Unavailable',
                'InvalidSubnetID.NotFound', 'InvalidSubnetID.Malformed', 'InvalidGroup.NotFound',
                'InvalidGroupId.Malformed', 'InvalidKeyPair.NotFound', 'InvalidPlacementGroup.Unknown',
                'InvalidParameterValue', 'InvalidParameterCombination', 'InvalidParameter',
                'MissingParameter', 'Unsupported', 'UnsupportedOperation', 'UnauthorizedOperation',
                'AuthFailure', 'OptInRequired', 'Blocked', 'InvalidClientTokenId', 'SignatureDoesNotMatch',
                'InvalidInstanceType'),
     False, 'the request itself is wrong (image, subnet, security group, key pair, placement group, '
            'instance type or credentials); fix the provider_ec2 settings'),
)
_CODE_KIND = {}
for _kind, _codes, _next, _meaning in _KINDS:
    for _code in _codes:
        _CODE_KIND[_code.lower()] = _kind
KIND_MEANING = dict((k, m) for k, _c, _n, m in _KINDS)
KIND_MEANING['timeout'] = 'the instance did not become ready (running, with a private address) in time'
KIND_MEANING['error'] = 'an unexpected EC2 error'
#: kinds after which the next (instance type, subnet) pair is tried
TRY_NEXT = frozenset(k for k, _c, n, _m in _KINDS if n)
KINDS = tuple(k for k, _c, _n, _m in _KINDS) + ('timeout', 'error')


def ec2_argument_spec(**options):
    """The argument spec of an EC2 node module: ``cluster``, ``api_retries`` and
    ``api_retry_delay`` (doc fragment ``gridengine.balancer.ec2``), then the module's own
    ``options`` (which may refine one of them)."""
    spec = dict(
        cluster=dict(type='str', required=True),
        api_retries=dict(type='int', default=10),
        api_retry_delay=dict(type='float', default=3),
    )
    spec.update(options)
    return spec


def error_kind(code):
    """The kind of an EC2 error code (or spot status code, or state reason code)."""
    if not code:
        return 'error'
    text = str(code)
    kind = _CODE_KIND.get(text.lower())
    if kind:
        return kind
    if text.startswith('InvalidAMIID') or text.startswith('InvalidSubnetID') or text.startswith('InvalidGroup') \
            or text.startswith('InvalidKeyPair') or text.startswith('InvalidPlacementGroup'):
        return 'config'
    if text.startswith('Insufficient'):
        return 'capacity'
    return 'error'


def classify(code, message='', instance_type=None, subnet_id=None, market='on-demand', operation='RunInstances'):
    """Describe one EC2 failure: ``{kind, code, message, try_next, msg}``.

    ``msg`` is one sentence naming what failed, where, the code and what it means.
    """
    kind = error_kind(code)
    where = []
    if instance_type:
        where.append(str(instance_type))
    if market == 'spot':
        where.append('spot')
    if subnet_id:
        where.append('in %s' % subnet_id)
    head = '%s%s failed' % (operation, (' (%s)' % ' '.join(where)) if where else '')
    detail = '%s: %s' % (code or 'no code', message) if message else (code or 'no code')
    return {
        'kind': kind,
        'code': code or '',
        'message': message or '',
        'try_next': kind in TRY_NEXT,
        'msg': '%s with %s - %s' % (head, detail, KIND_MEANING[kind]),
    }


def summary_message(node, failures, cleaned_up):
    """One message for a launch that failed after every attempt.

    ``failures``: the :func:`classify` results in the order tried; ``cleaned_up``: instance ids
    terminated because of this launch.
    """
    if not failures:
        return 'launch of %s failed' % node
    last = failures[-1]
    parts = ['%s: no instance launched (%s)' % (node, last['kind'])]
    parts.extend('attempt %d: %s' % (i + 1, f['msg']) for i, f in enumerate(failures))
    if cleaned_up:
        parts.append('terminated what this launch had started: %s' % ', '.join(cleaned_up))
    parts.append('nothing of %s is left running' % node)
    return '; '.join(parts)


def lost_answer(code, message, instance_type=None, subnet_id=None, market='on-demand'):
    """A ``RunInstances`` call that got no usable answer (connection reset, read timeout, a body
    that is no EC2 answer): EC2 may have launched the instance; no other type or subnet is tried."""
    failure = classify(code, message, instance_type, subnet_id, market)
    where = failure['msg'].split(' failed with ', 1)[0]
    failure['try_next'] = False
    failure['msg'] = ('%s got no usable answer (%s: %s) - EC2 may have launched the instance all the same; '
                      'every live instance tagged for the node is terminated' % (where, code, message))
    return failure


# --------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------

class MalformedAnswer(Exception):
    """An answer without the fields its operation always has (EC2 sends ``<reservationSet/>`` even
    when nothing matches): a ``200 OK`` from something that is not EC2, or a body cut short."""


def _not_an_answer(operation, missing):
    return MalformedAnswer('%s answered without %s: not an EC2 answer (a proxy or middlebox page, or a body cut '
                           'short); it was not used' % (operation, missing))


def page_instances(page):
    """The instances of one ``DescribeInstances`` page (boto3's parsed answer); MalformedAnswer when the
    page has no reservation set, so that a broken answer is never read as "no instances"."""
    reservations = page.get('Reservations') if isinstance(page, dict) else None
    if not isinstance(reservations, list):
        raise _not_an_answer('DescribeInstances', 'a reservation set')
    out = []
    for reservation in reservations:
        instances = reservation.get('Instances') if isinstance(reservation, dict) else None
        if not isinstance(instances, list) or not all(isinstance(i, dict) and i.get('InstanceId') for i in instances):
            raise _not_an_answer('DescribeInstances', 'the instance ids of a reservation')
        out.extend(instances)
    return out


def launched_instance_id(answer):
    """The instance id of a ``RunInstances`` answer (one instance); MalformedAnswer without one."""
    instances = answer.get('Instances') if isinstance(answer, dict) else None
    if not isinstance(instances, list) or not instances or not isinstance(instances[0], dict) \
            or not instances[0].get('InstanceId'):
        raise _not_an_answer('RunInstances', 'an instance id')
    return instances[0]['InstanceId']


# --------------------------------------------------------------------------------------------
# tags, filters, parameters
# --------------------------------------------------------------------------------------------

def check_names(cluster, name=None):
    """Raise ValueError naming the input when the cluster or node name cannot be a tag value we trust."""
    if not isinstance(cluster, str) or not CLUSTER_RE.match(cluster):
        raise ValueError("cluster: %r is not a valid cluster name (1-255 letters, digits, '_', '.', '-', "
                         "starting with a letter or digit)" % (cluster,))
    if name is not None and (not isinstance(name, str) or len(name) > 253 or not NAME_RE.match(name)):
        raise ValueError('name: %r is not a host name (RFC 1123)' % (name,))


def node_tags(cluster, name, extra=None):
    """The instance's tags: extra tags first, then the provider's own (they win)."""
    tags = dict(extra or {})
    tags[TAG_CLUSTER] = cluster
    tags[TAG_NODE] = name
    tags[TAG_NAME] = name
    return tags


def node_filters(cluster, name=None, states=LIVE_STATES):
    """``DescribeInstances`` filters for a cluster's nodes (one node when ``name`` is given)."""
    filters = [{'Name': 'tag:%s' % TAG_CLUSTER, 'Values': [cluster]}]
    if name is not None:
        filters.append({'Name': 'tag:%s' % TAG_NODE, 'Values': [name]})
    if states:
        filters.append({'Name': 'instance-state-name', 'Values': list(states)})
    return filters


def launch_attempts(instance_types, subnet_ids):
    """(instance type, subnet or None) pairs in the order tried: every subnet of the first type, ..."""
    subnets = list(subnet_ids or []) or [None]
    return [(itype, subnet) for itype in instance_types for subnet in subnets]


def check_launch_options(opts):
    """Validate the launch options; raise ValueError naming the option."""
    if not opts.get('image_id'):
        raise ValueError('image_id: required to launch a node')
    types = opts.get('instance_types') or []
    if not types or not all(isinstance(t, str) and t for t in types):
        raise ValueError('instance_types: at least one instance type is required to launch a node')
    market = opts.get('market') or 'on-demand'
    if market not in MARKETS:
        raise ValueError('market: must be one of %s, got %r' % (', '.join(MARKETS), market))
    price = opts.get('spot_max_price')
    if price not in (None, ''):
        if market != 'spot':
            raise ValueError('spot_max_price: only with market=spot')
        if not PRICE_RE.match(str(price)) or float(price) <= 0:
            raise ValueError('spot_max_price: %r is not a price in USD per hour (e.g. 0.05)' % (price,))


def run_instances_params(cluster, name, instance_type, subnet_id, opts, client_token):
    """The keyword arguments of ``ec2.run_instances`` for one attempt (one instance)."""
    tags = [{'Key': k, 'Value': str(v)} for k, v in sorted(node_tags(cluster, name, opts.get('tags')).items())]
    params = {
        'ImageId': opts['image_id'],
        'InstanceType': instance_type,
        'MinCount': 1,
        'MaxCount': 1,
        'ClientToken': client_token,
        'TagSpecifications': [{'ResourceType': 'instance', 'Tags': tags},
                              {'ResourceType': 'volume', 'Tags': tags}],
    }
    groups = list(opts.get('security_group_ids') or [])
    if subnet_id:
        params['SubnetId'] = subnet_id
    if groups:
        params['SecurityGroupIds'] = groups
    if opts.get('key_name'):
        params['KeyName'] = opts['key_name']
    if opts.get('placement_group'):
        params['Placement'] = {'GroupName': opts['placement_group']}
    if opts.get('iam_instance_profile'):
        profile = opts['iam_instance_profile']
        params['IamInstanceProfile'] = {'Arn': profile} if profile.startswith('arn:') else {'Name': profile}
    if opts.get('user_data'):
        params['UserData'] = opts['user_data']
    if (opts.get('market') or 'on-demand') == 'spot':
        spot = {'SpotInstanceType': 'one-time', 'InstanceInterruptionBehavior': 'terminate'}
        if opts.get('spot_max_price') not in (None, ''):
            spot['MaxPrice'] = str(opts['spot_max_price'])
        params['InstanceMarketOptions'] = {'MarketType': 'spot', 'SpotOptions': spot}
    return params


# --------------------------------------------------------------------------------------------
# instances
# --------------------------------------------------------------------------------------------

def _epoch(value):
    """A LaunchTime (datetime from boto3, or ISO text) as seconds since the epoch, or None."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return float(calendar.timegm(value.timetuple())) + value.microsecond / 1e6
    text = str(value).strip().replace('Z', '+00:00')
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return _epoch(parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc))


def tag_dict(instance):
    return dict((t.get('Key'), t.get('Value')) for t in instance.get('Tags') or [])


def summarize(instance):
    """A JSON-friendly summary of a ``DescribeInstances`` instance."""
    tags = tag_dict(instance)
    state = (instance.get('State') or {}).get('Name')
    reason = instance.get('StateReason') or {}
    return {
        'instance_id': instance.get('InstanceId'),
        'node': tags.get(TAG_NODE),
        'cluster': tags.get(TAG_CLUSTER),
        'state': state,
        'private_ip': instance.get('PrivateIpAddress'),
        'instance_type': instance.get('InstanceType'),
        'subnet_id': instance.get('SubnetId'),
        'market': 'spot' if instance.get('InstanceLifecycle') == 'spot' else 'on-demand',
        'spot_request_id': instance.get('SpotInstanceRequestId'),
        'launch_time': _epoch(instance.get('LaunchTime')),
        'state_reason': {'code': reason.get('Code'), 'message': reason.get('Message')} if reason else None,
        'tags': tags,
    }


def sort_instances(summaries):
    """Oldest launch first, then by id (a stable order for reports and for picking one)."""
    return sorted(summaries, key=lambda s: (s.get('launch_time') or 0.0, s.get('instance_id') or ''))
