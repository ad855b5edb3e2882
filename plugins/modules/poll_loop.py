# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/poll_loop.py) and runs on the
# controller; this file holds its documentation, which is also its argument spec.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: poll_loop
short_description: Run the current playbook's one-poll form again and again, each poll in a fresh process
version_added: 0.1.0
description:
  - The engine of C(continuous=true) in C(playbooks/loadbalance.yml) (StarCluster's C(loadbalance)
    running until Ctrl-C). It runs the C(ansible-playbook) command line of the current run again, with
    C(continuous=false) added last, as a new process per poll, and waits O(interval) seconds after each
    poll ends, so polls never overlap.
  - Every poll is a fresh C(ansible-playbook) process, so the controller's memory is flat by construction.
    A long run of one process keeps every task its includes loaded (ansible/ansible#31673), and used to
    grow 2.1 MiB a minute (C(docs/reliability/soak.md)).
  - The poll's output is shown as it comes, line by line. After each poll one line tells its exit status,
    how long it took and the peak resident memory of its largest process.
  - A poll that fails (non-zero exit status, for instance because another balancer holds the cluster's
    lock, or the qmaster does not answer) ends the loop, and this task fails naming the poll; what the
    poll left half-done is finished by the next run (the journal on the qmaster).
  - The command line is the current one (C(sys.argv) of this C(ansible-playbook)), so the inventory,
    C(--limit), C(--check), vault and connection options carry over. A run that prompts
    (C(--ask-pass), C(--ask-become-pass), C(--ask-vault-password), C(--step)) is refused, since no one
    answers a prompt at every poll. Use a password file or an agent.
  - A poll that terminated the cluster (C(kill_cluster)) ends the loop; this task then succeeds with
    RV(killed).
  - Runs on the controller only; the task's host should be C(localhost).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.controller
attributes:
  check_mode:
    details: The polls run with C(--check) when the run has it (they plan and show, nothing acts).
  diff_mode:
    support: none
options:
  interval:
    description:
      - Seconds to wait after a poll ends before the next one starts (StarCluster's C(interval)).
      - Unset, the default of O(profile) (C(docs/elastic.md)).
    type: float
  profile:
    description: The elastic profile whose default C(interval) applies when O(interval) is unset.
    type: str
    default: default
  max_polls:
    description: Polls of this run (1440 is 24 hours at a 60-second interval). Starting the run again resumes.
    type: int
    default: 1440
  kill_timeout:
    description:
      - When this task is interrupted (Ctrl-C, an AWX cancel), seconds to let the running poll end by itself
        (it got the same signal and gives its lock back), before it is terminated.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Poll every interval until max_polls (playbooks/loadbalance.yml -e continuous=true does this)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the one-poll playbook again and again, each poll a fresh process
      gridengine.balancer.poll_loop:
        interval: 60
        max_polls: 1440
"""

RETURN = r"""
polls:
  description: Polls run (the failed one included).
  returned: always
  type: int
  sample: 30
killed:
  description: True when a poll terminated the cluster (C(kill_cluster)) and so ended the loop.
  returned: when a poll terminated the cluster
  type: bool
  sample: true
failed_poll:
  description: The number of the poll that failed and ended the loop, when one did.
  returned: when a poll failed
  type: int
  sample: 7
rc:
  description: Exit status of the failed poll.
  returned: when a poll failed
  type: int
  sample: 2
recent:
  description:
    - The last 20 polls (at most), oldest first - C(poll), C(rc), C(seconds), C(pid) of its
      C(ansible-playbook), C(peak_rss_kib) (peak resident memory of its largest process) and
      C(loop_rss_kib) (this run's own C(ansible-playbook) after the poll).
  returned: always
  type: list
  elements: dict
peak_rss_kib:
  description: The largest C(peak_rss_kib) of all polls.
  returned: always
  type: int
loop_rss_kib:
  description: Resident memory of this run's own C(ansible-playbook) after the first and the last poll.
  returned: always
  type: dict
  sample: {first: 60112, last: 60240}
"""
