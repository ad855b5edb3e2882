# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/burst_plan.py) and runs on the
# controller; this file holds its documentation.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: burst_plan
short_description: Choose the waiting jobs of a home cell that burst into an elastic partner cell
version_added: 0.1.0
description:
  - Runs on the controller. Applies the cost-aware routing rule of C(plugins/plugin_utils/policy/burst.py)
    to every waiting job of the home cell, in queue order (C(docs/burst.md) has the rule and its
    reasons). A job pinned to home, wider than the partner's cap, waiting less than C(wait), or
    expected to start at home within C(boot_delay + margin) stays; otherwise it goes to the partner
    while the partner has room under its node cap.
  - Returns RV(send), the jobs to give the transfer queue's boolean complex (C(qalter -l <own list>,remote=true)),
    and RV(recall), jobs it sent before that wait at home again (pulled back) and now stay there,
    their own hard resource list, as it was before they were sent.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.controller
  - gridengine.balancer.controller.plan
options:
  home:
    description: C(ansible_facts.sge) of the home cell (M(gridengine.balancer.sge_queue_facts)).
    type: dict
    required: true
  partner:
    description:
      - C(ansible_facts.sge) of the partner cell. Its running and waiting jobs are the slots it has
        committed; the jobs sent and not yet submitted there count too.
    type: dict
    required: true
  partner_nodes:
    description: The partner's execution nodes at its cap (its C(max_nodes) less the master, which runs no job).
    type: int
    required: true
  slots_per_node:
    description: Slots of one partner node.
    type: int
    required: true
  qacct:
    description:
      - C(qacct -j -b YYMMDDhhmm) of the home cell, run with C(TZ=UTC) and C(LC_ALL=C). Its run times
        (end - start of each job task) are the history that the expected home wait is computed from.
      - Omitted or empty, the waiting jobs ahead count only with their C(h_rt) (the wait is underestimated).
    type: str
  state:
    description:
      - The last plan's RV(state) (M(gridengine.balancer.balancer_state)); V({}) the first time.
      - It holds the jobs this plan sent with their own resource lists, so a user's own
        C(-l remote=true) is never taken back.
    type: dict
    default: {}
  config:
    description:
      - Options of the rule (C(docs/burst.md)) C(wait), C(boot_delay), C(margin) (seconds), C(cost_aware),
        C(home_only_complexes), C(transfer_queues), C(parallel_jobs) (V(false) keeps a job with a
        parallel environment at home, since the transfer queue has no C(pe_list) and a parallel job
        sent there could never start); an unknown option fails the task.
    type: dict
    default: {}
  remote_complex:
    description: The transfer queue's boolean complex (C(transfer_queue_remote_complex)).
    type: str
    default: remote
notes:
  - The transfer queue must take only the jobs that ask for O(remote_complex)
    (C(transfer_queue_remote_requestable=FORCED)), and the load sensor's local-free threshold
    must be off, because this plan decides which job leaves (C(playbooks/burst.yml) sets both).
seealso:
  - module: gridengine.balancer.sge_queue_facts
  - module: gridengine.balancer.balancer_state
"""

EXAMPLES = r"""
- name: Choose the jobs that burst (facts of both cells read before)
  gridengine.balancer.burst_plan:
    home: "{{ home_facts.ansible_facts.sge }}"
    partner: "{{ ansible_facts.sge }}"
    partner_nodes: 4
    slots_per_node: 8
    qacct: "{{ home_qacct.stdout }}"
    state: "{{ burst_state.content }}"
    config: {wait: 300, boot_delay: 120, margin: 120}
  register: burst
"""

RETURN = r"""
send:
  description:
    - Jobs to send, each with C(id), C(resources) (the C(qalter -l) argument), C(reason) and
      C(qalter), the arguments of C(qalter) (C(-l <resources> -ac tq_burst=1 <id>)). The transfer
      starter's pull-back gives a job with that mark its own requests back.
  returned: always
  type: list
  elements: dict
recall:
  description:
    - Jobs sent before that stay at home now, each with C(id), C(resources) (their own list, maybe
      empty), C(reason) and C(qalter) (C(-l <resources> -dc tq_burst <id>)).
  returned: always
  type: list
  elements: dict
decisions:
  description: The rule's decision for every waiting job (C(id), C(to), C(expected_wait), C(reason), ...).
  returned: always
  type: list
  elements: dict
notes:
  description: Jobs left at home because a request of theirs could not be written back.
  returned: always
  type: list
  elements: str
state:
  description: What to save for the next plan (C(routed), job number -> own resource list).
  returned: always
  type: dict
"""
