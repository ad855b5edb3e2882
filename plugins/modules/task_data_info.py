#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: task_data_info
short_description: Report the task data a node holds, for the task rebalancer
version_added: 0.1.0
description:
  - Reads the data root of a node (default C(/var/lib/gridengine-balancer/tasks)), with one directory
    per job and one directory per copy of a task (C(<data_root>/<job>/<task>/)), and reports every copy
    with its size and last activity (the newest modification time of its files), the disk use of
    the file system that holds the data root, and leftovers of interrupted moves.
  - The layout is described in C(docs/rebalance.md). A copy only gets its final name after its
    data was verified, so every copy reported is complete; C(.partial.*), C(.removing.*) and
    C(.outgoing) entries are reported as RV(leftovers), never as copies.
  - Names that are not valid job or task names are reported in RV(ignored) and never touched.
  - Changes nothing. A missing data root is a node without tasks.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.no_diff
  - gridengine.balancer.task_data
options:
  checksums:
    description:
      - Also compute each copy's content checksum (sha256 over every file's path, size and bytes).
      - Reads all the data; off by default.
    type: bool
    default: false
seealso:
  - module: gridengine.balancer.task_data
  - module: gridengine.balancer.task_registry
"""

EXAMPLES = r"""
- name: What does node001 hold?
  gridengine.balancer.task_data_info:
    data_root: /srv/tasks
  delegate_to: node001
  register: node001_tasks
"""

RETURN = r"""
data_root:
  description: The data root read.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/tasks
exists:
  description: Whether the data root exists.
  returned: always
  type: bool
  sample: true
disk_total:
  description: Size in bytes of the file system holding the data root.
  returned: always
  type: int
  sample: 1000204886016
disk_used:
  description: Bytes used on that file system (by anything, as C(df) counts them).
  returned: always
  type: int
  sample: 400081954406
disk_free:
  description: Bytes available on that file system to an unprivileged user.
  returned: always
  type: int
  sample: 600122931610
copies:
  description: One entry per copy held (live or replica is the master's registry's business).
  returned: always
  type: list
  elements: dict
  contains:
    job:
      description: Job name.
      type: str
      sample: logs
    task:
      description: Task name.
      type: str
      sample: "3"
    bytes:
      description: Bytes of the copy's regular files.
      type: int
      sample: 52428800
    last_active:
      description: Newest modification time under the copy (seconds since the epoch).
      type: float
      sample: 1700000000.0
    path:
      description: Directory of the copy.
      type: str
      sample: /var/lib/gridengine-balancer/tasks/logs/3
    checksum:
      description: Content checksum, with O(checksums=true) only.
      type: str
      sample: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
leftovers:
  description: Paths left by interrupted moves (partial copies, copies being removed, packed archives).
  returned: always
  type: list
  elements: str
  sample: [/var/lib/gridengine-balancer/tasks/logs/.partial.3]
ignored:
  description: Entries under the data root that are not valid job or task directories (left alone).
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils import task_data


def main():
    module = AnsibleModule(
        argument_spec=task_data.data_root_spec(checksums=dict(type="bool", default=False)),
        supports_check_mode=True,
    )
    try:
        result = task_data.scan(module.params["data_root"], checksums=module.params["checksums"])
    except (task_data.TaskDataError, OSError) as exc:
        module.fail_json(msg="cannot read the task data under %s: %s" % (module.params["data_root"], exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
