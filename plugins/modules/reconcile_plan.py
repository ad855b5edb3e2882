# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/reconcile_plan.py) and runs on the
# controller; this file holds its documentation, which is also its argument spec.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: reconcile_plan
short_description: Reconcile a cluster's cloud instances with Grid Engine, and keep the launch back-off
version_added: 0.1.0
description:
  - Runs on the controller; reads and writes its state file on the task's host (the qmaster) with
    M(gridengine.balancer.balancer_state), like M(gridengine.balancer.elastic_plan).
  - O(mode=reconcile) compares the provider's instances (found by tag, e.g. with
    M(gridengine.balancer.ec2_node_info)) with Grid Engine's exec hosts, the journal of operations in flight
    and the nodes the balancer knows, and returns what to do, each item with a reason - terminate an
    instance that never joined within O(provisioning_timeout); remove an exec host whose instance is gone;
    report (never terminate) an instance the balancer does not know; drop a failed join from the journal
    while launches back off.
  - O(mode=record_failure) counts one launch failure (O(failure)) and starts or lengthens the back-off.
  - O(mode=status) only reports the back-off.
  - The decision is the pure function C(reconcile) of C(plugins/plugin_utils/policy/reconcile.py); see
    C(docs/ec2.md).
  - In check mode nothing is written; the plan is computed and shown.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.controller
  - gridengine.balancer.controller.state
options:
  cluster:
    description: Name of the cluster; names the default state file.
    type: str
    required: true
  mode:
    description: What to do (see the description).
    type: str
    choices: [reconcile, record_failure, status]
    default: reconcile
  instances:
    description:
      - The cluster's instances (C(instances) of M(gridengine.balancer.ec2_node_info)) - dicts with
        C(instance_id), C(node), C(state), C(launch_time).
    type: list
    elements: dict
    default: []
  exec_hosts:
    description:
      - Grid Engine's exec hosts - the snapshot's C(hosts) mapping of M(gridengine.balancer.sge_queue_facts)
        (a host has joined when its C(load_avg) is not null), or a list of names.
    type: raw
    default: {}
  journal:
    description: The operations in flight (C(operations) of M(gridengine.balancer.balancer_journal_info)).
    type: list
    elements: dict
    default: []
  balancer_nodes:
    description: Names of the nodes the elastic balancer's state knows (the keys of its C(nodes)).
    type: list
    elements: str
    default: []
  failure:
    description:
      - With O(mode=record_failure), the failure - C(node), C(kind) (V(capacity), V(spot), V(limit),
        V(throttling), V(config), V(timeout), V(error)), C(code), C(message), optionally C(instance_id).
    type: dict
  master:
    description: The master's Grid Engine name; never removed.
    type: str
  provisioning_timeout:
    description: Seconds from an instance's launch until its node must have joined Grid Engine.
    type: int
    default: 900
  backoff_base:
    description: Seconds launches wait after the first failure.
    type: int
    default: 300
  backoff_factor:
    description: Each further consecutive failure multiplies the wait by this.
    type: float
    default: 2.0
  backoff_max:
    description: Longest wait in seconds.
    type: int
    default: 3600
  now:
    description:
      - The decision time, seconds since the epoch. Default the controller's clock (EC2's launch times
        are AWS's clock; keep the controller on NTP).
    type: float
  state_path:
    description:
      - The state file on the task's host. Default C(/var/lib/gridengine-balancer/<cluster>/reconcile.json).
    type: str
notes:
  - The task must run on the qmaster host (the state file is there).
seealso:
  - module: gridengine.balancer.ec2_node_info
  - module: gridengine.balancer.elastic_plan
"""

EXAMPLES = r"""
- name: Compare instances, exec hosts and state
  gridengine.balancer.reconcile_plan:
    cluster: mycluster
    instances: "{{ ec2_nodes.instances }}"
    exec_hosts: "{{ ansible_facts.sge.hosts }}"
    journal: "{{ balancer_journal.operations }}"
    master: "{{ inventory_hostname }}"
    provisioning_timeout: 900
  register: balancer_reconcile

- name: Count a failed launch (the provider_ec2 role does this)
  gridengine.balancer.reconcile_plan:
    cluster: mycluster
    mode: record_failure
    failure:
      node: node003
      kind: capacity
      code: InsufficientInstanceCapacity
      message: no c5.large in eu-west-1a
"""

RETURN = r"""
msg:
  description: The summary, then one line per action with its reason.
  returned: always
  type: str
  sample: "mycluster reconcile: terminate node004 (never joined)\n- node004 (instance i-0123) launched 16m00s ago never joined ..."
summary:
  description: One line.
  returned: always
  type: str
  sample: instances and exec hosts agree
actions:
  description:
    - Every finding with C(action) (V(terminate), V(remove_exec_host), V(report), V(drop_journal), V(wait),
      V(info)), C(node), C(instance_id) and C(reason).
  returned: with O(mode=reconcile)
  type: list
  elements: dict
  sample: [{"action": "report", "node": "node009", "instance_id": "i-0999", "reason": "instance i-0999 ... not touched"}]
terminate:
  description: Instances to terminate - C(node), C(instance_id), C(half_joined) (Grid Engine lists it), C(journal).
  returned: with O(mode=reconcile)
  type: list
  elements: dict
  sample: [{"node": "node004", "instance_id": "i-0123", "half_joined": false, "journal": "join"}]
remove:
  description: Exec hosts to remove from Grid Engine (their instance is gone).
  returned: with O(mode=reconcile)
  type: list
  elements: str
  sample: ["node002"]
report:
  description: The actions of kind V(report) (instances left alone for a person to look at).
  returned: with O(mode=reconcile)
  type: list
  elements: dict
  sample: []
drop_journal:
  description: Nodes whose failed C(join) is removed from the journal (not retried during the back-off).
  returned: with O(mode=reconcile)
  type: list
  elements: str
  sample: ["node005"]
backoff:
  description: The launch back-off - C(active), C(until), C(remaining) (seconds), C(failures) (consecutive), C(last), C(reason).
  returned: always
  type: dict
  sample: {"active": true, "until": 1700000300.0, "remaining": 300.0, "failures": 1, "reason": "launches back off for 5m00s more ..."}
failures:
  description:
    - The launch failures kept in the state (the last 20, oldest first), each with C(time) (this module's
      clock), C(node), C(kind), C(code), C(message) and, for an instance that was launched, C(instance_id).
    - M(gridengine.balancer.elastic_plan) takes them with RV(backoff) as its O(gridengine.balancer.elastic_plan#module:launches).
  returned: with O(mode=reconcile)
  type: list
  elements: dict
  sample: [{"time": 1700000000.0, "node": "node005", "kind": "capacity", "code": "InsufficientInstanceCapacity",
            "message": "no c5.large in eu-west-1a"}]
state_path:
  description: The state file on the task's host.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/reconcile.json
state_corrupt:
  description:
    - The state file was corrupt - C(problem), and C(moved_to) where M(gridengine.balancer.balancer_state)
      moved it (null in check mode, where nothing is moved). The run then started from an empty state,
      and a warning says what that means.
  returned: when the state file was corrupt
  type: dict
  sample: {"problem": "state file /var/lib/gridengine-balancer/mycluster/reconcile.json is not valid JSON (...)",
           "moved_to": "/var/lib/gridengine-balancer/mycluster/reconcile.json.corrupt-20231114T221320Z-a1b2c3"}
"""
