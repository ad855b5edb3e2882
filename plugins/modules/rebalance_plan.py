# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/rebalance_plan.py) and runs on the
# controller; this file holds its documentation.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: rebalance_plan
short_description: Plan task data moves across nodes (Hydra's SpawnBalancer)
version_added: 0.1.0
description:
  - Runs on the controller. Builds a snapshot from the task registry (M(gridengine.balancer.task_registry)),
    what every node holds (M(gridengine.balancer.task_data_info)) and the Grid Engine facts
    (M(gridengine.balancer.sge_queue_facts)), and runs the pure policy of C(plugins/plugin_utils/policy/spawn.py).
    See C(docs/rebalance.md).
  - Grid Engine work on a task is a job named C(<job_name_prefix><job>.<task>). A running one makes
    the task running (never moved); a pending one whose hard queue request names the live copy's host
    is returned in C(pinned_jobs) of the move, to be re-pointed (C(qalter -q)) when the live copy moves.
  - With O(mode=validate) it re-checks O(moves) against the current state and returns the moves still
    valid and the rejected ones with the reason (the task moved, started or was deleted; the target is
    full or gone).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.controller
  - gridengine.balancer.controller.plan
options:
  registry:
    description: The task registry, RV(gridengine.balancer.task_registry#module:registry).
    type: dict
    required: true
  scans:
    description: Host name -> the result of M(gridengine.balancer.task_data_info) on that host.
    type: dict
    required: true
  sge:
    description: C(ansible_facts.sge) from M(gridengine.balancer.sge_queue_facts) (its C(running) and C(pending) jobs).
    type: dict
  mode:
    description:
      - V(round) one cluster-wide rebalance (host rebalancing of the most out-of-line hosts in turn).
      - V(host) the seed's host rebalancing of O(host); V(job) job rebalancing of O(job) (repairs first).
      - V(join) push a fair share of the data onto O(host), a node that just joined.
      - V(drain) move every copy off O(host), a node about to leave (C(complete) false when some cannot move).
      - V(validate) re-check O(moves) against the current state.
    type: str
    choices: [round, host, job, join, drain, validate]
    default: round
  host:
    description: The host of O(mode=host), O(mode=join) and O(mode=drain).
    type: str
  job:
    description: The job of O(mode=job).
    type: str
  moves:
    description: With O(mode=validate), the moves of an earlier plan.
    type: list
    elements: dict
  options:
    description:
      - Policy options (C(profile) V(default) or V(hydra), C(tasks_moved_full_rebalance),
        C(bytes_moved_full_rebalance), C(min_task_size_bytes), C(active_task_cutoff), ...), with the
        defaults and meanings of the table in C(docs/rebalance.md).
    type: dict
    default: {}
  job_name_prefix:
    description: Prefix of the Grid Engine job names that work on a task.
    type: str
    default: task.
  down:
    description: Hosts that may neither give nor take copies (for example a node that is leaving).
    type: list
    elements: str
    default: []
  now:
    description: Seconds since the epoch the plan is made at (default the controller's clock).
    type: float
seealso:
  - module: gridengine.balancer.task_data
  - module: gridengine.balancer.task_registry
"""

EXAMPLES = r"""
- name: Plan one rebalance round
  gridengine.balancer.rebalance_plan:
    registry: "{{ registry.registry }}"
    scans: "{{ scans }}"
    sge: "{{ ansible_facts.sge }}"
    options:
      min_task_size_bytes: 1000000
  register: plan
"""

RETURN = r"""
moves:
  description:
    - Planned moves, each with C(job), C(task), C(source), C(target), C(bytes), C(role) (live or replica),
      C(rule), C(last_active), C(reason) (in words) and C(pinned_jobs) (pending Grid Engine job ids to re-point).
  returned: unless O(mode=validate)
  type: list
  elements: dict
repairs:
  description: Job rebalancing repairs (C(action) V(replicate) or V(resync)), with the same keys as a move.
  returned: unless O(mode=validate)
  type: list
  elements: dict
skipped:
  description: Copies considered and not moved, with the reason.
  returned: unless O(mode=validate)
  type: list
  elements: str
summary:
  description: One line, for example C(rebalance round - 12 moves (1.2 GB)).
  returned: unless O(mode=validate)
  type: str
hosts_before:
  description: Disk use (fraction) of every host in the snapshot.
  returned: always
  type: dict
hosts_after:
  description: Disk use every host would have after the moves.
  returned: unless O(mode=validate)
  type: dict
blocked:
  description: With O(mode=drain), copies that cannot leave the host now (running, or no host can take them).
  returned: O(mode=drain)
  type: list
  elements: dict
complete:
  description: With O(mode=drain), whether every copy can leave the host.
  returned: O(mode=drain)
  type: bool
accepted:
  description: With O(mode=validate), the moves still valid.
  returned: O(mode=validate)
  type: list
  elements: dict
rejected:
  description: With O(mode=validate), the other moves, each with C(rejected) giving the reason.
  returned: O(mode=validate)
  type: list
  elements: dict
snapshot_warnings:
  description: What looked wrong in the inputs (a live copy missing, copies of unknown jobs, leftovers).
  returned: always
  type: list
  elements: str
warnings_policy:
  description: The policy's warnings (a task without a live copy, replicas that cannot be placed).
  returned: unless O(mode=validate)
  type: list
  elements: str
"""
