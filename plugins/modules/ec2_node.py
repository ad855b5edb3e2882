#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: ec2_node
short_description: Launch or terminate one EC2 instance as a node of a Grid Engine cluster
version_added: 0.1.0
description:
  - The primitive of the C(ec2) node provider (role C(gridengine.balancer.provider_ec2)). A node is
    one EC2 instance tagged C(gridengine-balancer:cluster=<cluster>), C(gridengine-balancer:node=<name>)
    and C(Name=<name>); the tags, not a local record, say which instance is which node.
  - O(state=present) adopts a live instance of the node when there is one (nothing changes), else
    launches one, trying each instance type of O(instance_types) in every subnet of O(subnet_ids) in
    turn while EC2 answers with a capacity or spot error, and waits until it runs with a private
    address.
  - A launch that fails leaves nothing behind - an instance that did not become ready within
    O(wait_timeout), or that EC2 stopped before it ran, is terminated; after the last attempt every live
    instance tagged for the node is terminated too - and the module fails with RV(error_kind),
    RV(error_code) and a message that names what was tried and what the error means.
  - API calls are retried with jittered exponential back-off on throttling (C(RequestLimitExceeded),
    C(Throttling), ...) by C(amazon.aws)'s C(AWSRetry.jittered_backoff); botocore's own retries come
    on top of that.
  - A C(RunInstances) call that gets no usable answer (the connection reset or timed out, or a C(200)
    whose body is no EC2 answer) may have launched the instance - the launch stops there and the
    clean-up terminates every live instance tagged for the node. A C(DescribeInstances) answer without
    its reservation set is an error, never read as "no instance".
  - O(state=absent) terminates the node's instance(s), found by O(instance_id) or by the tags, and waits
    until they are terminated.
  - Registers nothing in Grid Engine. See C(docs/ec2.md).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - gridengine.balancer.attributes.no_diff
  - gridengine.balancer.ec2
attributes:
  check_mode:
    details: Reports what would be launched or terminated; makes no EC2 call that changes anything.
options:
  name:
    description:
      - The node's name, its host name in Grid Engine (the tags C(gridengine-balancer:node) and C(Name)).
      - An RFC 1123 host name (no trailing newline, no leading V(-)); anything else fails the module,
        naming O(name), before any API call.
    type: str
    required: true
  state:
    description: V(present) launches (or adopts) the node's instance, V(absent) terminates it.
    type: str
    choices: [present, absent]
    default: present
  instance_id:
    description:
      - With O(state=absent), terminate this instance (it must carry the cluster's tag). Default - every
        live instance tagged for the node.
    type: str
  image_id:
    description: AMI of the node (StarCluster C(node_image_id), ParallelCluster C(custom_ami)). Required to launch.
    type: str
  instance_types:
    description:
      - Instance types in order of preference (StarCluster C(node_instance_type); ParallelCluster
        C(compute_instance_type), or the instance types of a queue). The next one is tried when EC2 has no
        capacity (or no spot capacity) for one.
    type: list
    elements: str
    aliases: [instance_type]
  subnet_ids:
    description:
      - Subnets to launch in, in order; each instance type is tried in each subnet before the next type.
        Empty means the default VPC's choice.
    type: list
    elements: str
    default: []
    aliases: [subnet_id]
  security_group_ids:
    description: Security group ids of the instance (ParallelCluster C(vpc_security_group_id), C(additional_sg)).
    type: list
    elements: str
    default: []
  key_name:
    description: EC2 key pair (StarCluster C(keyname), ParallelCluster C(key_name)).
    type: str
  market:
    description:
      - V(on-demand) or V(spot) (StarCluster C(--bid), ParallelCluster C(cluster_type)).
      - Spot instances are one-time requests made by C(RunInstances); they are terminated, never stopped,
        when EC2 takes them back.
    type: str
    choices: [on-demand, spot]
    default: on-demand
  spot_max_price:
    description:
      - Highest price in USD per hour for a spot instance (StarCluster C(--bid), ParallelCluster
        C(spot_price)). Empty means the on-demand price (EC2's default).
    type: str
  placement_group:
    description: Cluster placement group to launch in (ParallelCluster C(placement_group)). It must exist.
    type: str
  iam_instance_profile:
    description: Instance profile name or ARN.
    type: str
  user_data:
    description:
      - User data given to the instance (plain text; boto3 encodes it).
      - Not logged (C(no_log)), since user data often carries bootstrap secrets.
    type: str
  tags:
    description: More tags for the instance and its volumes. The provider's own tags win on a clash.
    type: dict
    default: {}
  private_ip:
    description: Ask for this private address (it must be free and inside the one subnet of O(subnet_ids)).
    type: str
  wait:
    description: Wait until a launched instance runs with a private address, or a terminated one is gone.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds a launched instance may take to run with a private address. After that it is terminated
        and the attempt counts as failed (RV(error_kind=timeout)).
    type: int
    default: 600
  poll_interval:
    description: Seconds between two looks at an instance while waiting.
    type: float
    default: 5
  api_retry_delay:
    description: First back-off delay in seconds; it doubles up to O(api_retry_max_delay), with full jitter.
  api_retry_max_delay:
    description: Longest back-off delay in seconds.
    type: float
    default: 60
notes:
  - The node's instance is found by its tags; an instance of the cluster with another node name is never
    touched.
  - Tested against C(moto_server) on 127.0.0.1 only; real AWS was not reachable from the test machine
    (C(docs/ec2.md)).
seealso:
  - module: gridengine.balancer.ec2_node_info
  - module: amazon.aws.ec2_instance
"""

EXAMPLES = r"""
- name: Launch node003 of mycluster (spot, two instance types, two subnets)
  gridengine.balancer.ec2_node:
    cluster: mycluster
    name: node003
    image_id: ami-0123456789abcdef0
    instance_types: [c5.large, c5a.large]
    subnet_ids: [subnet-0aaa, subnet-0bbb]
    security_group_ids: [sg-0123]
    key_name: mycluster
    market: spot
    spot_max_price: "0.05"
    region: eu-west-1
  register: node

- name: Terminate it
  gridengine.balancer.ec2_node:
    cluster: mycluster
    name: node003
    state: absent
    region: eu-west-1
"""

RETURN = r"""
name:
  description: The node's name.
  returned: always
  type: str
  sample: node003
cluster:
  description: The node's cluster.
  returned: always
  type: str
  sample: mycluster
instance_id:
  description: The node's instance (after O(state=present)), or the first one terminated. C(null) in check mode before a launch.
  returned: always
  type: str
  sample: i-0123456789abcdef0
address:
  description: The instance's private address (O(state=present)).
  returned: when O(state=present) and the instance runs
  type: str
  sample: 10.77.0.140
instance:
  description: The instance as found or launched (summary).
  returned: when there is one
  type: dict
  contains:
    instance_id:
      description: Instance id.
      type: str
    node:
      description: Value of the node tag.
      type: str
    cluster:
      description: Value of the cluster tag.
      type: str
    state:
      description: EC2 state name.
      type: str
    private_ip:
      description: Private address.
      type: str
    instance_type:
      description: Instance type.
      type: str
    subnet_id:
      description: Subnet.
      type: str
    market:
      description: V(on-demand) or V(spot).
      type: str
    launch_time:
      description: Launch time, seconds since the epoch.
      type: float
    state_reason:
      description: EC2's state reason (code, message), when it gives one.
      type: dict
    tags:
      description: All tags.
      type: dict
  sample: {"instance_id": "i-0123", "node": "node003", "cluster": "mycluster", "state": "running",
           "private_ip": "10.77.0.140", "instance_type": "c5.large", "market": "on-demand"}
terminated:
  description: Instances terminated by this task (O(state=absent), or the clean-up of a failed launch).
  returned: always
  type: list
  elements: str
  sample: ["i-0123456789abcdef0"]
duplicates:
  description: Other live instances tagged for the same node (reported, not touched, with O(state=present)).
  returned: always
  type: list
  elements: str
  sample: []
attempts:
  description: The failed launch attempts, in order (kind, code, message, msg, instance_type, subnet_id).
  returned: when O(state=present) launched or tried to
  type: list
  elements: dict
  sample: [{"kind": "capacity", "code": "InsufficientInstanceCapacity", "instance_type": "c5.large"}]
error_kind:
  description:
    - Why the launch failed - V(capacity), V(spot) (not fulfilled), V(limit) (account quota), V(throttling),
      V(config) (a wrong setting), V(timeout) (never ready) or V(error).
  returned: on failure
  type: str
  sample: capacity
error_code:
  description: EC2's error code (or the instance's state reason code) of the last attempt.
  returned: on failure
  type: str
  sample: InsufficientInstanceCapacity
"""

import time
import uuid

try:
    import botocore
    from botocore.parsers import ResponseParserError
except ImportError:
    pass  # handled by AnsibleAWSModule

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.gridengine.balancer.plugins.module_utils import ec2_nodes as en

NOT_FOUND = ('InvalidInstanceID.NotFound',)


def api_errors():
    """Every way an EC2 call can fail: an error answer (ClientError, after the retries), no answer
    (BotoCoreError: connection reset, timeout), or a 200 that is no EC2 answer."""
    return (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError, ResponseParserError,
            en.MalformedAnswer)


def lost_answers():
    """The failures after which an EC2 call may have acted although no answer said so."""
    return (botocore.exceptions.BotoCoreError, ResponseParserError, en.MalformedAnswer)


class Api(object):
    """The few EC2 calls of a node, with jittered retries on throttling."""

    def __init__(self, module):
        self.module = module
        p = module.params
        retry = AWSRetry.jittered_backoff(retries=p['api_retries'] + 1, delay=p['api_retry_delay'],
                                          max_delay=p['api_retry_max_delay'])
        self.client = module.client('ec2', retry_decorator=retry)
        self.poll = max(0.05, float(p['poll_interval']))

    def describe(self, filters=None, ids=None):
        kwargs = {}
        if filters:
            kwargs['Filters'] = filters
        if ids:
            kwargs['InstanceIds'] = list(ids)
        out = []
        while True:
            page = self.client.describe_instances(aws_retry=True, **kwargs)
            out.extend(en.summarize(i) for i in en.page_instances(page))
            token = page.get('NextToken')
            if not token:
                return en.sort_instances(out)
            kwargs['NextToken'] = token

    def one(self, instance_id):
        try:
            found = self.describe(ids=[instance_id])
        except botocore.exceptions.ClientError as exc:
            if exc.response.get('Error', {}).get('Code') in NOT_FOUND:
                return None  # not visible yet (eventual consistency) or long gone
            raise
        return found[0] if found else None

    def terminate(self, ids):
        if ids:
            self.client.terminate_instances(aws_retry=True, InstanceIds=list(ids))

    def wait_terminated(self, ids, timeout):
        deadline = time.time() + timeout
        pending = set(ids)
        while pending:
            for iid in sorted(pending):
                inst = self.one(iid)
                if inst is None or inst['state'] == 'terminated':
                    pending.discard(iid)
            if not pending or time.time() >= deadline:
                break
            time.sleep(self.poll)
        return sorted(pending)

    def spot_status(self, request_id):
        if not request_id:
            return None
        try:
            res = self.client.describe_spot_instance_requests(aws_retry=True, SpotInstanceRequestIds=[request_id])
        except botocore.exceptions.ClientError:
            return None
        for req in res.get('SpotInstanceRequests', []):
            status = req.get('Status') or {}
            return {'code': status.get('Code'), 'message': status.get('Message'), 'state': req.get('State')}
        return None

    def wait_ready(self, instance_id, timeout, itype, subnet, market):
        """(summary, None) once running with a private address; (summary or None, failure) otherwise."""
        deadline = time.time() + timeout
        inst = None
        while True:
            inst = self.one(instance_id) or inst
            if inst and inst['state'] == 'running' and inst.get('private_ip'):
                return inst, None
            if inst and inst['state'] in en.GONE_STATES:
                reason = inst.get('state_reason') or {}
                code, message = reason.get('code'), reason.get('message') or ''
                spot = self.spot_status(inst.get('spot_request_id'))
                if spot and en.error_kind(spot.get('code')) == 'spot':
                    code, message = spot['code'], spot.get('message') or message
                failure = en.classify(code or 'InstanceTerminated', '%s before it ran: %s' % (inst['state'], message),
                                      itype, subnet, market, operation='launch of %s' % instance_id)
                return inst, failure
            if time.time() >= deadline:
                state = inst['state'] if inst else 'not visible'
                failure = en.classify('Timeout', 'still %s after %ss' % (state, timeout), itype, subnet, market,
                                      operation='launch of %s' % instance_id)
                failure['kind'] = 'timeout'
                failure['try_next'] = False
                failure['msg'] = 'launch of %s (%s) was not ready in %ss (state %s) - %s' % (
                    instance_id, itype, timeout, state, en.KIND_MEANING['timeout'])
                return inst, failure
            time.sleep(self.poll)


def client_error(exc):
    """(code, message) of any API failure: EC2's error code, else the exception's class."""
    response = getattr(exc, 'response', None)
    err = response.get('Error', {}) if isinstance(response, dict) else {}
    return err.get('Code') or type(exc).__name__, err.get('Message') or str(exc)


def ensure_present(module, api, result):
    p = module.params
    cluster, name = p['cluster'], p['name']
    live = api.describe(filters=en.node_filters(cluster, name))
    if live:
        inst = live[0]
        result['duplicates'] = [i['instance_id'] for i in live[1:]]
        if result['duplicates']:
            module.warn('%s: more than one live instance is tagged for this node: %s; kept %s, reported the others'
                        % (name, ', '.join(i['instance_id'] for i in live), inst['instance_id']))
        if inst['state'] == 'pending' and p['wait'] and not module.check_mode:
            ready, failure = api.wait_ready(inst['instance_id'], p['wait_timeout'], inst['instance_type'],
                                            inst['subnet_id'], inst['market'])
            if failure:
                fail_launch(module, api, result, [failure], launched=False)
            inst = ready
        elif inst['state'] in ('stopping', 'stopped'):
            module.fail_json(msg='%s: its instance %s is %s; start it or terminate it (state=absent)'
                             % (name, inst['instance_id'], inst['state']), **result)
        result.update(instance=inst, instance_id=inst['instance_id'], address=inst.get('private_ip'))
        module.exit_json(**result)

    try:
        en.check_launch_options(p)
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    attempts = en.launch_attempts(p['instance_types'], p['subnet_ids'])
    if module.check_mode:
        result.update(changed=True, msg='would launch %s (%s)' % (name, ', '.join(
            '%s%s' % (t, (' in ' + s) if s else '') for t, s in attempts)))
        module.exit_json(**result)

    failures = []
    launched = False
    started = None
    for itype, subnet in attempts:
        params = en.run_instances_params(cluster, name, itype, subnet, p, 'geb-%s' % uuid.uuid4().hex)
        if p.get('private_ip'):
            params['PrivateIpAddress'] = p['private_ip']
        try:
            res = api.client.run_instances(aws_retry=True, **params)
            instance_id = en.launched_instance_id(res)
        except botocore.exceptions.ClientError as exc:
            code, message = client_error(exc)
            failure = en.classify(code, message, itype, subnet, p['market'])
            failure.update(instance_type=itype, subnet_id=subnet)
            failures.append(failure)
            if failure['try_next']:
                continue
            break
        except lost_answers() as exc:
            # no usable answer: EC2 may have launched it; fail_launch finds it by its tags
            code, message = client_error(exc)
            failure = en.lost_answer(code, message, itype, subnet, p['market'])
            failure.update(instance_type=itype, subnet_id=subnet)
            failures.append(failure)
            break
        launched = True
        started = instance_id
        try:
            if not p['wait']:
                inst = api.one(instance_id) or {'instance_id': instance_id, 'state': 'pending'}
                result.update(changed=True, instance=inst, instance_id=instance_id, address=inst.get('private_ip'),
                              attempts=failures)
                module.exit_json(**result)
            inst, failure = api.wait_ready(instance_id, p['wait_timeout'], itype, subnet, p['market'])
            if failure is None:
                # No live instance of the node existed before this launch, so any other one now is ours:
                # an earlier attempt whose answer was lost (EC2 honours ClientToken only per attempt).
                extra = [i['instance_id'] for i in api.describe(filters=en.node_filters(cluster, name))
                         if i['instance_id'] != instance_id]
                if extra:
                    api.terminate(extra)
                    result['terminated'].extend(extra)
                    module.warn('%s: terminated %s, launched by an earlier attempt whose answer was lost'
                                % (name, ', '.join(extra)))
                result.update(changed=True, instance=inst, instance_id=instance_id, address=inst['private_ip'],
                              attempts=failures)
                module.exit_json(**result)
        except api_errors() as exc:
            # EC2 failed while the launched instance was waited for: it must not stay (fail_launch)
            code, message = client_error(exc)
            failure = en.classify(code, message, itype, subnet, p['market'], operation='launch of %s' % instance_id)
            failure.update(try_next=False, instance_type=itype, subnet_id=subnet, instance_id=instance_id)
            failures.append(failure)
            break
        failure.update(instance_type=itype, subnet_id=subnet, instance_id=instance_id)
        failures.append(failure)
        started = None
        # nothing half-launched stays: terminate it before trying the next pair
        if inst is None or inst['state'] != 'terminated':
            try:
                api.terminate([instance_id])
            except api_errors():
                started = instance_id  # fail_launch tries again and says so
                break
            result['terminated'].append(instance_id)
        if not failure['try_next']:
            break
    fail_launch(module, api, result, failures, launched, started)


def fail_launch(module, api, result, failures, launched, started=None):
    """Terminate every live instance tagged for the node (a lost response may have launched one), fail.

    ``started``: an instance this launch started and has not terminated yet; it is terminated even when
    the instances cannot be listed.
    """
    p = module.params
    stuck = []
    try:
        left = api.describe(filters=en.node_filters(p['cluster'], p['name']))
        ids = [i['instance_id'] for i in left]
    except api_errors() as exc:  # cannot list: terminate at least what this launch started
        code, message = client_error(exc)
        ids = []
        stuck = ['(clean-up could not list the instances of %s: %s: %s)' % (p['name'], code, message)]
    if started and started not in ids:
        ids.append(started)
    try:
        api.terminate(ids)
        result['terminated'].extend(i for i in ids if i not in result['terminated'])
        stuck.extend(api.wait_terminated(result['terminated'], p['wait_timeout']) if p['wait'] else [])
    except api_errors() as exc:  # the clean-up itself failed: say so, loudly
        code, message = client_error(exc)
        stuck.append('(clean-up failed: %s: %s)' % (code, message))
    last = failures[-1] if failures else en.classify('error', 'no attempt made')
    msg = en.summary_message(p['name'], failures, result['terminated'])
    if stuck:
        msg += '; WARNING: not yet terminated: %s' % ', '.join(stuck)
    result.update(changed=bool(launched or result['terminated']), attempts=failures,
                  error_kind=last['kind'], error_code=last['code'])
    module.fail_json(msg=msg, **result)


def ensure_absent(module, api, result):
    p = module.params
    cluster, name = p['cluster'], p['name']
    if p.get('instance_id'):
        inst = api.one(p['instance_id'])
        if inst and inst.get('cluster') != cluster:
            module.fail_json(msg='instance %s is not tagged %s=%s (it has %r); not terminated'
                             % (p['instance_id'], en.TAG_CLUSTER, cluster, inst.get('cluster')), **result)
        found = [inst] if inst else []
    else:
        found = api.describe(filters=en.node_filters(cluster, name, states=en.LIVE_STATES + ('shutting-down',)))
    live = [i for i in found if i['state'] in en.LIVE_STATES]
    going = [i['instance_id'] for i in found if i['state'] == 'shutting-down']
    ids = [i['instance_id'] for i in live]
    if found:
        result['instance'] = found[0]
        result['instance_id'] = found[0]['instance_id']
    if module.check_mode:
        result.update(changed=bool(ids), terminated=ids,
                      msg=('would terminate %s' % ', '.join(ids)) if ids else 'nothing to terminate')
        module.exit_json(**result)
    api.terminate(ids)
    result.update(changed=bool(ids), terminated=ids)
    if p['wait']:
        stuck = api.wait_terminated(ids + going, p['wait_timeout'])
        if stuck:
            module.fail_json(msg='%s: terminate requested, still not terminated after %ss: %s'
                             % (name, p['wait_timeout'], ', '.join(stuck)), **result)
    module.exit_json(**result)


def main():
    argument_spec = en.ec2_argument_spec(
        name=dict(type='str', required=True),
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        instance_id=dict(type='str'),
        image_id=dict(type='str'),
        instance_types=dict(type='list', elements='str', aliases=['instance_type']),
        subnet_ids=dict(type='list', elements='str', default=[], aliases=['subnet_id']),
        security_group_ids=dict(type='list', elements='str', default=[]),
        key_name=dict(type='str', no_log=False),
        market=dict(type='str', choices=['on-demand', 'spot'], default='on-demand'),
        spot_max_price=dict(type='str'),
        placement_group=dict(type='str'),
        iam_instance_profile=dict(type='str'),
        user_data=dict(type='str', no_log=True),
        tags=dict(type='dict', default={}),
        private_ip=dict(type='str'),
        wait=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=600),
        poll_interval=dict(type='float', default=5),
        api_retry_max_delay=dict(type='float', default=60),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    p = module.params
    try:
        en.check_names(p['cluster'], p['name'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if p['wait_timeout'] <= 0 or p['api_retries'] < 0:
        module.fail_json(msg='wait_timeout must be > 0 and api_retries >= 0')
    result = dict(changed=False, name=p['name'], cluster=p['cluster'], instance_id=None,
                  terminated=[], duplicates=[])
    api = Api(module)
    try:
        if p['state'] == 'present':
            ensure_present(module, api, result)
        else:
            ensure_absent(module, api, result)
    except api_errors() as exc:
        code, message = client_error(exc)
        failure = en.classify(code, message, operation='EC2 call for %s' % p['name'])
        result.update(error_kind=failure['kind'], error_code=failure['code'])
        module.fail_json_aws(exc, msg=failure['msg'], **result)


if __name__ == '__main__':
    main()
