# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/fairshare_plan.py) and runs on the
# controller; this file holds its documentation.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: fairshare_plan
short_description: Compute per-host, per-project slot limits for proportional shares (bank algorithm, cluster reserves)
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
  - With O(temporal=compensate) the bank accounts are kept between rounds in the fair-share state
    (O(state), returned as RV(state) to save with M(gridengine.balancer.balancer_state)), and usage is
    measured since the last round from C(qacct) (O(qacct)) and the running jobs, so a project that left
    its share unused gets it back in later rounds (Li & Parker's temporal compensation).
  - With O(hostgroups) there is one manager per host group and a top manager that divides the cluster
    among the host groups with a live execution host; a host group whose hosts all vanished has failed
    and its share goes to the others until a host returns (RV(failed_groups)).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.controller
  - gridengine.balancer.controller.plan
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
  allocation:
    description:
      - The allocation step every manager runs.
      - V(bank) is Li & Parker's bank algorithm (spatial and, with O(temporal=compensate), temporal
        compensation).
      - V(reserves) is cluster reserves (Aron et al.; C(plugins/plugin_utils/policy/reserves.py), two
        linear programmes solved by HiGHS, needs SciPy on the controller); it compensates only
        spatially, so it needs O(temporal=none). With O(hostgroups) the host groups' managers run
        cluster reserves and the top manager runs the bank (cluster reserves is formulated for nodes
        of equal size; host groups differ).
      - Both are enforced the same way, as the slot limits of RV(limits).
    type: str
    choices: [bank, reserves]
    default: bank
  temporal:
    description:
      - V(none) clears the bank accounts after every round (the paper's basic version; nothing is kept).
      - V(compensate) keeps O(temporal_retain) of every account in RV(state); a project's unused
        entitlement is paid back in later rounds, beyond its share, at most one round's entitlement.
        Usage is then measured over the time since the last round (O(qacct) and the snapshot's running
        jobs) instead of read from the snapshot alone.
    type: str
    choices: [none, compensate]
    default: none
  temporal_retain:
    description:
      - With O(temporal=compensate), the fraction of every account kept for the next round (V(1) full
        temporal compensation; less forgets older contributions geometrically).
    type: float
    default: 1.0
  hostgroups:
    description:
      - Host group name to its execution hosts (as C(qconf -shgrp_resolved) prints them). Given, the
        allocation is hierarchical; a top manager divides the cluster among the host groups, each host
        group's manager divides its share among its hosts and projects. Live hosts in no listed group form
        one more group, C((other hosts)). The groups must not overlap.
      - A pending job counts as waiting work only on the hosts its C(-q) requests allow (C(queue@@group),
        C(queue@host), wildcards).
    type: dict
  state:
    description:
      - The fair-share state of the last round (RV(state)), as read with
        M(gridengine.balancer.balancer_state); V({}) or omitted for the first round.
      - Its accounts are used only when it was written with the same O(temporal), O(allocation) and
        host group names.
    type: dict
    default: {}
  qacct:
    description:
      - The output of C(qacct -j -b YYMMDDhhmm) run on the qmaster with C(TZ=UTC) and C(LC_ALL=C), covering
        the time since the last round (C(last_round) of RV(state)). Its jobs' slot-seconds inside the window, with
        the running jobs of O(snapshot), give the measured usage.
      - Omitted, usage is the running slots of O(snapshot).
    type: str
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

- name: Temporal compensation, one manager per host group, cluster reserves at the host groups
  gridengine.balancer.fairshare_plan:
    snapshot: "{{ ansible_facts.sge }}"
    desired: {alpha: 60, beta: 30, gamma: 10}
    temporal: compensate
    state: "{{ fairshare_state.content }}"
    qacct: "{{ fairshare_qacct.stdout }}"
    hostgroups:
      "@rack1": [node001, node002]
      "@rack2": [node003, node004]
  register: fairshare_plan_hier

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
  description:
    - The bank accounts after the round, one per project in the order of O(desired) (tickets, percent of a
      host), of the top manager with O(hostgroups). All zero with O(temporal=none) or O(allocation=reserves).
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
state:
  description:
    - The fair-share state to keep for the next round (save it with M(gridengine.balancer.balancer_state)).
    - C(last_round) is the snapshot's C(taken_at); C(accounts) maps C(cluster) (one manager) or C(top) and
      every host group to its accounts per project.
  returned: success
  type: dict
  sample: {"schema": 1, "last_round": 1700000000.0, "temporal": "compensate", "allocation": "bank",
           "hostgroups": [], "failed_groups": [], "accounts": {"cluster": {"alpha": 0.0, "beta": 12.5}}}
groups:
  description: With O(hostgroups), per live host group its hosts, slots, the top manager's percentages and
    the slots of the limits per project.
  returned: when O(hostgroups) is given
  type: dict
  sample: {"@rack1": {"hosts": ["node001", "node002"], "slots": 8, "percent": {"alpha": 55.0, "beta": 25.0, "gamma": 20.0},
           "limits": {"alpha": 4, "beta": 2, "gamma": 2}}}
group_accounts:
  description: With O(hostgroups), the accounts of every live host group's manager.
  returned: when O(hostgroups) is given
  type: dict
  sample: {"@rack1": {"alpha": 0.0, "beta": 0.0, "gamma": 0.0}}
failed_groups:
  description: Host groups of O(hostgroups) without a live execution host; their share went to the others.
  returned: success
  type: list
  elements: str
  sample: ["@rack2"]
usage_source:
  description: C(qacct) when usage was measured since the last round, else C(snapshot).
  returned: success
  type: str
  sample: qacct
usage_window:
  description: The measured window (last round, this snapshot), epoch seconds, or null.
  returned: success
  type: list
  elements: float
  sample: [1700000000.0, 1700000300.0]
remarks:
  description: Remarks on the round (accounts started again from zero after a change of setting).
  returned: when there is a remark
  type: list
  elements: str
  sample: ["the accounts in the state were kept for another temporal/allocation/hostgroups setting; they start again from zero"]
"""
