# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/fairshare_plan.py) and runs on the
# controller; this file holds its documentation.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: fairshare_plan
short_description: Compute per-host, per-project slot limits for proportional shares (bank algorithm)
version_added: 0.1.0
description:
  - Runs on the controller. Takes the cluster snapshot from M(gridengine.balancer.sge_queue_facts), the
    desired cluster-wide share of every Grid Engine project, and the resource quota set now in force,
    and runs one round of Li & Parker's bank algorithm (C(plan_slots) in
    C(plugins/plugin_utils/policy/bank.py)). See C(docs/shares.md).
  - Service classes are Grid Engine projects, nodes are execution hosts, tickets are slots. Usage is
    the running slots per project and host; a project with work waiting counts as using its whole
    limit.
  - Returns integer slot limits (largest-remainder rounding) to pass to M(gridengine.balancer.sge_rqs).
    Slots a project without waiting work would leave idle go to projects with waiting work.
  - The plan is only a decision; it changes nothing and always reports C(changed=false).
author:
  - gridengine.balancer developers (@gridengine)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: The plan is computed the same way; nothing is changed in either mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  snapshot:
    description:
      - The cluster snapshot, C(ansible_facts.sge) as returned by M(gridengine.balancer.sge_queue_facts)
        (with C(hosts), C(running) and C(pending)).
      - Hosts without slots or in state C(u), C(E), C(d) or C(D) are left out.
    type: dict
    required: true
  desired:
    description:
      - The desired cluster-wide share of every project, in percent, as a mapping project name to percent.
      - The values must sum to 100. Jobs of projects not listed are not counted.
    type: dict
    required: true
  current:
    description:
      - The text of the resource quota set now in force, as printed by C(qconf -srqs <name>), or empty.
      - Its C(limit projects P hosts {h} to slots=n) rules are the previous allocation. Pairs without a
        rule count as the static split by O(desired).
    type: str
    default: ""
  profile:
    description:
      - V(default) runs the bank algorithm with the measured extensions described in C(docs/shares.md).
      - V(paper) runs the six steps exactly as Li & Parker wrote them.
    type: str
    choices: [default, paper]
    default: default
notes:
  - Run the task on the qmaster host after M(gridengine.balancer.sge_queue_facts); the computation itself
    happens on the controller.
  - Limits never preempt running jobs; a project over its new limit shrinks as its jobs end.
seealso:
  - module: gridengine.balancer.sge_rqs
  - module: gridengine.balancer.sge_queue_facts
"""

EXAMPLES = r"""
- name: Read the cluster
  gridengine.balancer.sge_queue_facts:

- name: Read the limits now in force
  ansible.builtin.command:
    argv: [qconf, -srqs, fairshare]
  register: fairshare_current
  changed_when: false
  failed_when: fairshare_current.rc not in [0, 1]

- name: Compute the allocation (bank algorithm)
  gridengine.balancer.fairshare_plan:
    snapshot: "{{ ansible_facts.sge }}"
    desired:
      alpha: 60
      beta: 30
      gamma: 10
    current: "{{ fairshare_current.stdout if fairshare_current.rc == 0 else '' }}"
  register: fairshare_plan

- name: Apply the limits
  gridengine.balancer.sge_rqs:
    name: fairshare
    limits: "{{ fairshare_plan.limits }}"

- name: The paper's algorithm taken literally
  gridengine.balancer.fairshare_plan:
    snapshot: "{{ ansible_facts.sge }}"
    desired: {alpha: 60, beta: 30, gamma: 10}
    profile: paper
  register: fairshare_plan_paper
"""

RETURN = r"""
limits:
  description: One slot limit per project and host, ready for the O(gridengine.balancer.sge_rqs#module:limits) option.
  returned: success
  type: list
  elements: dict
  sample: [{"project": "alpha", "host": "node001", "slots": 2}, {"project": "beta", "host": "node001", "slots": 1}]
  contains:
    project:
      description: The project.
      type: str
      sample: alpha
    host:
      description: The execution host.
      type: str
      sample: node001
    slots:
      description: The slots the project may use on the host.
      type: int
      sample: 2
accounts:
  description: The bank accounts after the round, one per project in the order of O(desired) (tickets, percent of a host).
  returned: success
  type: list
  elements: float
  sample: [0.0, 0.0, 0.0]
percent:
  description: The bank algorithm's allocation before rounding, per host and project, in percent of the host's slots.
  returned: success
  type: dict
  sample: {"node001": {"alpha": 60.0, "beta": 30.0, "gamma": 10.0}}
usage:
  description: Running slots per project, cluster-wide, as read from the snapshot.
  returned: success
  type: dict
  sample: {"alpha": 6.0, "beta": 3.0, "gamma": 1.0}
waiting:
  description: Projects with work waiting (pending jobs neither held nor in error state), sorted.
  returned: success
  type: list
  elements: str
  sample: ["alpha", "gamma"]
"""
