#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: task_data
short_description: Pack, receive, remove or clean up a copy of task data on a node
version_added: 0.1.0
description:
  - The steps of a task move on the nodes, as the task rebalancer (C(playbooks/rebalance.yml))
    runs them. The layout of a node's data root is in C(docs/rebalance.md).
  - O(state=packed) packs the copy of O(job)/O(task) into C(<data_root>/.outgoing/<job>.<task>.tar)
    (written under a temporary name, then renamed) and returns its content checksum, to be fetched.
  - O(state=present) first checks O(src) and its content checksum against O(checksum) without
    writing anything, then unpacks it into C(<job>/.partial.<task>), checks the checksum of what was
    unpacked again, and only then renames it to C(<job>/<task>), so a copy with its final name is
    always complete. A copy with the same checksum already there changes nothing; one with other content
    fails the task and is left as it is. Only directories, regular files and symbolic links are
    unpacked; hard links, device files, FIFOs, names given twice, absolute names, names with C(..),
    members under a link and links that lead outside the copy (followed through the archive's
    other links, chains included) fail the task naming the member, before anything is written.
    The unpacking does not depend on the Python version's C(data) filter; set-id and sticky bits
    and group/other write are dropped.
  - Run as root on a O(data_root) another user owns, every state that writes (O(state=packed),
    O(state=present), O(state=absent), O(state=clean)) does its work under the data root as that
    user (a child process that dropped to that user and no supplementary group). That user can
    swap any name there for a link at any moment and gains nothing by it. Only the archive of
    O(state=present) is read by root.
  - O(state=absent) removes the copy (renamed to C(.removing.<task>) first, so it stops counting
    as a copy before the files go).
  - O(state=clean) removes the leftovers of interrupted moves (C(.partial.*), C(.removing.*),
    C(.outgoing/*)); with O(job) and O(task) only those of that task.
  - Job and task names are data (1-64 letters, digits, V(_) or V(-)); nothing runs a shell.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.no_diff
  - gridengine.balancer.task_data
options:
  job:
    description:
      - Job name. Required unless O(state=clean).
      - 1-64 letters, digits, V(_) or V(-), starting with a letter or digit. Anything else (a path,
        V(..), a newline, a leading V(-)) fails the module naming the option; nothing is touched.
    type: str
  task:
    description:
      - Task name (a number is fine). Required unless O(state=clean). The same rules as O(job).
    type: str
  state:
    description: What to do; see the description.
    type: str
    choices: [packed, present, absent, clean]
    default: present
  src:
    description: With O(state=present), the archive made by O(state=packed) on the source node, on this node.
    type: path
  checksum:
    description: With O(state=present), the content checksum O(state=packed) returned on the source.
    type: str
seealso:
  - module: gridengine.balancer.task_data_info
  - module: gridengine.balancer.task_registry
"""

EXAMPLES = r"""
- name: Pack task logs/3 on the source
  gridengine.balancer.task_data:
    job: logs
    task: "3"
    state: packed
  delegate_to: node001
  register: packed

- name: Receive and verify it on the target
  gridengine.balancer.task_data:
    job: logs
    task: "3"
    src: /tmp/logs.3.tar
    checksum: "{{ packed.checksum }}"
  delegate_to: node004
"""

RETURN = r"""
path:
  description: The copy's directory (O(state=packed) also returns RV(archive)).
  returned: unless O(state=clean)
  type: str
  sample: /var/lib/gridengine-balancer/tasks/logs/3
archive:
  description: The packed archive.
  returned: O(state=packed)
  type: str
  sample: /var/lib/gridengine-balancer/tasks/.outgoing/logs.3.tar
archive_bytes:
  description: Size of the packed archive (not set in check mode).
  returned: O(state=packed)
  type: int
  sample: 52439040
checksum:
  description: Content checksum of the copy (O(state=packed)), or of the copy received (O(state=present)).
  returned: O(state=packed) or O(state=present)
  type: str
  sample: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
removed:
  description: Leftover paths removed (O(state=clean)), or would be in check mode.
  returned: O(state=clean)
  type: list
  elements: str
  sample: [/var/lib/gridengine-balancer/tasks/logs/.partial.3]
"""

import os
import tarfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils import task_data as td


def _leftovers(root, job, task):
    found = td.scan(root)["leftovers"]
    if job is None:
        return found
    mine = (os.path.join(root, job, td.PARTIAL + task), os.path.join(root, job, td.REMOVING + task),
            td.outgoing_path(root, job, task))
    return [p for p in found if p in mine]


def run(module):
    p = module.params
    root = td.check_root(p["data_root"])
    state = p["state"]
    job = td.check_name("job", p["job"]) if p["job"] is not None else None
    task = td.check_name("task", p["task"]) if p["task"] is not None else None
    if state != "clean" and (job is None or task is None):
        raise td.TaskDataError("job and task are required with state=%s" % state)
    if (job is None) != (task is None):
        raise td.TaskDataError("give both job and task, or neither")
    result = {"changed": False}
    if state == "clean":
        found = _leftovers(root, job, task)
        result["removed"] = found if module.check_mode else td.clean(root, found)
        result["changed"] = bool(result["removed"])
        return result
    path = td.copy_dir(root, job, task)
    result["path"] = path
    if state == "packed":
        if not os.path.isdir(path):
            raise td.TaskDataError("no copy of %s/%s under %s to pack" % (job, task, root))
        result["changed"] = True
        result["archive"] = td.outgoing_path(root, job, task)
        if module.check_mode:
            result["checksum"] = td.content_checksum(path)
        else:
            dummy_archive, result["checksum"], result["archive_bytes"] = td.pack(root, job, task)
        return result
    if state == "absent":
        result["changed"] = os.path.lexists(path)
        if result["changed"] and not module.check_mode:
            td.remove(root, job, task)
        return result
    # present
    if not p["checksum"]:
        raise td.TaskDataError("state=present needs the checksum of the source copy")
    if os.path.isdir(path):
        have = td.content_checksum(path)
        if have != p["checksum"]:
            raise td.TaskDataError("%s already holds a different copy of %s/%s (%s, wanted %s)" % (
                root, job, task, have, p["checksum"]))
        result["checksum"] = have
        return result
    if module.check_mode:
        result["changed"] = True
        return result
    if not p["src"]:
        raise td.TaskDataError("state=present needs src, the packed archive on this node")
    td.receive(root, job, task, p["src"], p["checksum"])
    result["changed"] = True
    result["checksum"] = p["checksum"]
    return result


def main():
    module = AnsibleModule(
        argument_spec=td.data_root_spec(
            job=dict(type="str"),
            task=dict(type="str"),
            state=dict(type="str", choices=["packed", "present", "absent", "clean"], default="present"),
            src=dict(type="path"),
            checksum=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except (td.TaskDataError, OSError, ValueError, tarfile.TarError) as exc:
        module.fail_json(msg="task_data %s of %s/%s: %s" % (
            module.params["state"], module.params["job"], module.params["task"], exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
