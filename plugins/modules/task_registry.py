#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: task_registry
short_description: Keep the task registry of a cluster (jobs, live copies, moves in flight)
version_added: 0.1.0
description:
  - The task registry lives on the qmaster host (default C(/var/lib/gridengine-balancer/<cluster>/tasks.json))
    and says which jobs exist (with their replica count, per-host maximum and no-autobalance flag),
    on which host each task's live copy is, and which task moves are in flight. The data of the
    copies is on the nodes (M(gridengine.balancer.task_data_info)).
  - Without any change option the module only reads the registry (RV(registry)).
  - O(job) with O(job_state=present) creates or updates a job, O(tasks) giving live hosts;
    O(job_state=absent) removes the job from the registry (its data on the nodes is not touched).
  - O(switch) moves a task's live pointer (one atomic write); with C(expect) it fails when the live
    copy is no longer where the plan saw it.
  - O(move) with O(move_state=started) records a move before its first step; O(move_state=finished)
    drops the record after its last one. The next run reads the C(moves) of RV(registry) and finishes or undoes them.
  - Writes are atomic (temporary file, fsync, rename; mode V(0600)) under an exclusive C(flock) on a
    guard file beside the registry. A registry that cannot be read fails the task and is never overwritten.
  - Names are data and are checked before anything is written; the error names the option. Job and
    task names are 1-64 letters, digits, V(_) or V(-), starting with a letter or digit (no path, no
    V(..), no newline). Hosts (the values of O(tasks), O(switch.host), O(move.source),
    O(move.target)) are RFC 1123 host names, because the playbooks delegate to them. A registry file
    holding other names or hosts fails to read (fix or remove it).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.diff
  - gridengine.balancer.cluster_file
options:
  path:
    description:
      - Path of the registry on the target host. Overrides the default derived from O(cluster),
        C(/var/lib/gridengine-balancer/<cluster>/tasks.json).
    type: path
  job:
    description: Job to create, update or remove.
    type: str
  job_state:
    description: Whether O(job) is in the registry.
    type: str
    choices: [present, absent]
    default: present
  replicas:
    description: Replica copies each task of O(job) keeps besides its live copy.
    type: int
  max_per_host:
    description: Most copies of O(job) one host may hold.
    type: int
  no_autobalance:
    description: The job's author forbids moving its tasks for balance (a leaving node's tasks still move).
    type: bool
  tasks:
    description: Task name -> host of its live copy, added to O(job) or re-pointed.
    type: dict
  switch:
    description: Move a live pointer.
    type: dict
    suboptions:
      job: &task_job
        description: Job name.
        type: str
        required: true
      task: &task_name
        description: Task name.
        type: str
        required: true
      host:
        description: New host of the live copy.
        type: str
        required: true
      expect:
        description: Host the live copy must be on now (else the task fails).
        type: str
  move:
    description: A move to record or drop.
    type: dict
    suboptions:
      job: *task_job
      task: *task_name
      source:
        description: Host the copy moves from.
        type: str
      target:
        description: Host the copy moves to.
        type: str
      role:
        description: C(live), C(replica) or C(copy) (a repair that keeps the source).
        type: str
        default: copy
  move_state:
    description: Record (V(started)) or drop (V(finished)) O(move).
    type: str
    choices: [started, finished]
    default: started
seealso:
  - module: gridengine.balancer.task_data
  - module: gridengine.balancer.task_data_info
"""

EXAMPLES = r"""
- name: Register job logs with one replica per task
  gridengine.balancer.task_registry:
    cluster: mycluster
    job: logs
    replicas: 1
    tasks:
      "0": node001
      "1": node002

- name: Point the live copy of logs/0 at node003
  gridengine.balancer.task_registry:
    cluster: mycluster
    switch: {job: logs, task: "0", host: node003, expect: node001}
"""

RETURN = r"""
registry:
  description: The registry after the change (what it would be, in check mode).
  returned: always
  type: dict
  sample:
    version: 1
    jobs: {logs: {replicas: 1, max_per_host: null, no_autobalance: false, tasks: {"0": {live: node001}}}}
    moves: {}
path:
  description: The registry file.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/tasks.json
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils import task_registry as tr
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import CLUSTER_OR_PATH, cluster_file_spec, dumps
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff


def main():
    name_spec = dict(job=dict(type="str", required=True), task=dict(type="str", required=True))
    module = AnsibleModule(
        argument_spec=cluster_file_spec(
            job=dict(type="str"),
            job_state=dict(type="str", choices=["present", "absent"], default="present"),
            replicas=dict(type="int"),
            max_per_host=dict(type="int"),
            no_autobalance=dict(type="bool"),
            tasks=dict(type="dict"),
            switch=dict(type="dict", options=dict(name_spec, host=dict(type="str", required=True),
                                                  expect=dict(type="str"))),
            move=dict(type="dict", options=dict(name_spec, source=dict(type="str"), target=dict(type="str"),
                                                role=dict(type="str", default="copy"))),
            move_state=dict(type="str", choices=["started", "finished"], default="started"),
        ),
        required_one_of=CLUSTER_OR_PATH,
        supports_check_mode=True,
    )
    p = module.params
    try:
        path = p["path"] or tr.default_path(p["cluster"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    def change(reg):
        if p["job"] is not None:
            if p["job_state"] == "absent":
                tr.remove_job(reg, p["job"])
            else:
                tr.define_job(reg, p["job"], p["replicas"], p["max_per_host"], p["no_autobalance"], p["tasks"])
        if p["switch"]:
            s = p["switch"]
            tr.switch(reg, s["job"], s["task"], s["host"], s.get("expect"))
        if p["move"]:
            m = p["move"]
            if p["move_state"] == "started":
                tr.begin_move(reg, m["job"], m["task"], m.get("source"), m.get("target"), m.get("role"))
            else:
                tr.end_move(reg, m["job"], m["task"])
        return reg

    try:
        before, after, changed = tr.update(path, change, check_mode=module.check_mode)
    except (tr.RegistryError, ValueError, OSError) as exc:
        module.fail_json(msg="task registry %s: %s" % (path, exc), path=path)
    result = {"changed": changed, "registry": after, "path": path}
    module.exit_json(**with_diff(module, result, dumps(before), dumps(after), path))


if __name__ == "__main__":
    main()
