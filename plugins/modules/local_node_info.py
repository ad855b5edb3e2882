#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: local_node_info
short_description: List the namespace nodes of the C(local) node provider
version_added: 0.1.0
description:
  - Lists the nodes that M(gridengine.balancer.local_node) launched under I(state_dir), with
    whether each one runs, read from their records and C(/proc). Changes nothing.
  - The provider role C(gridengine.balancer.provider_local) writes its inventory file of live
    nodes from this listing.
author:
  - gridengine.balancer developers (@gridengine)
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
options:
  state_dir:
    description: Directory holding one sub-directory per node.
    type: path
    default: /var/lib/gridengine-balancer/local-nodes
  cluster:
    description: Only nodes launched with this cluster label.
    type: str
  name:
    description: Only the node of this name.
    type: str
  running_only:
    description: Leave out nodes whose PID 1 is not running.
    type: bool
    default: false
seealso:
  - module: gridengine.balancer.local_node
'''

EXAMPLES = r'''
- name: Nodes of mycluster that run
  gridengine.balancer.local_node_info:
    cluster: mycluster
    running_only: true
  register: local_nodes

- name: Show their names
  ansible.builtin.debug:
    msg: "{{ local_nodes.nodes | map(attribute='name') | list }}"
'''

RETURN = r'''
nodes:
  description: The nodes, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name (its hostname).
      type: str
      sample: node001
    address:
      description: Node address.
      type: str
      sample: 10.77.0.11
    cluster:
      description: Cluster label given at launch, or null.
      type: str
      sample: mycluster
    bridge:
      description: Bridge the node is attached to.
      type: str
      sample: sgebr0
    veth:
      description: Host side of the node's veth pair.
      type: str
      sample: vnode001
    pid:
      description: Host PID of the node's PID 1, or null when it does not run.
      type: int
      sample: 12345
    running:
      description: Whether the node's PID 1 runs.
      type: bool
      sample: true
    node_dir:
      description: State directory of the node.
      type: str
      sample: /var/lib/gridengine-balancer/local-nodes/node001
    known_hosts:
      description: File with the node's host keys in C(known_hosts) format.
      type: str
      sample: /var/lib/gridengine-balancer/local-nodes/node001/known_hosts
    created:
      description: When the node was launched (seconds since the epoch).
      type: float
      sample: 1700000000.0
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils import local_node as ln


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state_dir=dict(type='path', default='/var/lib/gridengine-balancer/local-nodes'),
            cluster=dict(type='str'),
            name=dict(type='str'),
            running_only=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params.get('name'):
        err = ln.validate_name(params['name'])
        if err:
            module.fail_json(msg=err)
    nodes = []
    for record in ln.list_records(params['state_dir']):
        if params.get('name') and record['name'] != params['name']:
            continue
        if params.get('cluster') and record.get('cluster') != params['cluster']:
            continue
        view = ln.public_view(params['state_dir'], record,
                              ln.running_pid(params['state_dir'], record))
        if params['running_only'] and not view['running']:
            continue
        nodes.append(view)
    module.exit_json(changed=False, nodes=nodes)


if __name__ == '__main__':
    main()
