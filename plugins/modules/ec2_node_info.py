#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: ec2_node_info
short_description: List the EC2 instances of a Grid Engine cluster's nodes (by tag)
version_added: 0.1.0
description:
  - Lists the instances tagged C(gridengine-balancer:cluster=<cluster>) (see M(gridengine.balancer.ec2_node)),
    oldest first, as the reconciliation step (C(playbooks/tasks/reconcile.yml)) needs them - node name,
    instance id, state, private address, launch time, spot or on-demand.
  - Read-only. API calls are retried with jittered back-off on throttling.
  - Either the whole list or a failure - when a call fails after its retries, gets no answer (connection
    reset, timeout) or gets a C(200) that is no EC2 answer (no reservation set, XML cut short), the module
    fails and returns no list at all, so that a failed listing is never read as "no instances".
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - gridengine.balancer.attributes.no_diff
  - gridengine.balancer.ec2
attributes:
  check_mode:
    details: Read-only; runs in check mode too.
options:
  name:
    description:
      - Only this node (value of the tag C(gridengine-balancer:node)); an RFC 1123 host name,
        checked before any API call.
    type: str
  states:
    description:
      - Instance states to list. Default every state but V(terminated) (EC2 shows terminated instances for
        about an hour).
    type: list
    elements: str
    default: [pending, running, stopping, stopped, shutting-down]
notes:
  - Tested against C(moto_server) on 127.0.0.1 only; real AWS was not reachable from the test machine.
seealso:
  - module: gridengine.balancer.ec2_node
"""

EXAMPLES = r"""
- name: List the instances of mycluster
  gridengine.balancer.ec2_node_info:
    cluster: mycluster
    region: eu-west-1
  register: ec2_nodes

- name: Show the node names and addresses
  ansible.builtin.debug:
    msg: "{{ ec2_nodes.instances | map(attribute='node') | zip(ec2_nodes.instances | map(attribute='private_ip')) | list }}"
"""

RETURN = r"""
instances:
  description: The cluster's instances in the states asked for, oldest launch first.
  returned: success
  type: list
  elements: dict
  sample: [{"instance_id": "i-0123", "node": "node003", "cluster": "mycluster", "state": "running",
            "private_ip": "10.77.0.140", "instance_type": "c5.large", "market": "on-demand",
            "launch_time": 1700000000.0, "state_reason": null, "tags": {"Name": "node003"}}]
nodes:
  description: Node name -> instance ids (several ids for one name are duplicates to look at).
  returned: success
  type: dict
  sample: {"node003": ["i-0123"]}
error_code:
  description: EC2's error code, or the class of the error when no EC2 answer came (C(ReadTimeoutError), C(MalformedAnswer), ...).
  returned: failure
  type: str
  sample: RequestLimitExceeded
"""

import traceback

try:
    import botocore
    from botocore.parsers import ResponseParserError
except ImportError:
    pass  # handled by AnsibleAWSModule

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.gridengine.balancer.plugins.module_utils import ec2_nodes as en


def main():
    module = AnsibleAWSModule(
        argument_spec=en.ec2_argument_spec(
            name=dict(type='str'),
            states=dict(type='list', elements='str',
                        default=['pending', 'running', 'stopping', 'stopped', 'shutting-down']),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        en.check_names(p['cluster'], p['name'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    retry = AWSRetry.jittered_backoff(retries=max(0, p['api_retries']) + 1, delay=p['api_retry_delay'])
    client = module.client('ec2', retry_decorator=retry)
    kwargs = {'Filters': en.node_filters(p['cluster'], p['name'], states=p['states'])}
    found = []
    try:
        while True:
            page = client.describe_instances(aws_retry=True, **kwargs)
            found.extend(en.summarize(i) for i in en.page_instances(page))
            if not page.get('NextToken'):
                break
            kwargs['NextToken'] = page['NextToken']
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError, ResponseParserError,
            en.MalformedAnswer) as exc:
        # no partial list: what was read before the failure is dropped with it
        response = getattr(exc, 'response', None)
        err = response.get('Error', {}) if isinstance(response, dict) else {}
        code = err.get('Code') or type(exc).__name__
        module.fail_json(msg='cannot list the instances of cluster %s: DescribeInstances failed with %s: %s; '
                             'no instance list returned' % (p['cluster'], code, err.get('Message') or exc),
                         error_code=code, exception=traceback.format_exc())
    found = en.sort_instances(found)
    nodes = {}
    for inst in found:
        nodes.setdefault(inst['node'] or '', []).append(inst['instance_id'])
    module.exit_json(changed=False, instances=found, nodes=nodes)


if __name__ == '__main__':
    main()
