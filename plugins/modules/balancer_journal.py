#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: balancer_journal
short_description: Record the node operations a Grid Engine balancer has in flight
version_added: 0.1.0
description:
  - Keeps the balancer's journal on the qmaster host, a JSON file listing the node operations
    (a node joining or leaving the cluster) that were started and are not finished yet.
  - Record an operation with O(state=present) before its first step, and remove it with
    O(state=absent) after its last one. A controller killed in between leaves the record, and
    the next poll reads it (M(gridengine.balancer.balancer_journal_info)) and finishes or undoes
    the operation.
  - A node has at most one operation in flight. Recording O(operation=leave) for a node with a
    V(join) in flight (or the reverse) fails, naming the operation recorded and when it started.
  - Writes are atomic (temporary file in the same directory, fsync, rename), the file mode is V(0600)
    and a missing directory is created with mode V(0700). Changes are made under an exclusive
    C(flock) on a guard file beside the journal (C(.journal.json.guard)), so plays that record
    many nodes at once cannot lose each other's records.
  - A file that cannot be read or is not a journal fails the task naming the path and is never
    overwritten.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.diff
  - gridengine.balancer.cluster_file
  - gridengine.balancer.cluster_file.journal
options:
  state:
    description:
      - V(present) records that O(operation) of O(node) is in flight. If that very operation is
        already recorded, nothing changes (its start time is kept).
      - V(absent) removes the record of O(node) (only a record of O(operation), when given).
        No such record is not an error.
    type: str
    choices: [present, absent]
    default: present
  node:
    description:
      - The node the operation is about, as the balancer names it (normally its host name).
      - 1 to 255 characters, no blanks or control characters.
    type: str
    required: true
  operation:
    description:
      - What is in flight. V(join) adds the node to the cluster, V(leave) removes it.
      - Required with O(state=present).
    type: str
    choices: [join, leave]
  detail:
    description:
      - What the next poll needs to finish the operation, for example the node's address or the
        provider's instance id. Any JSON object.
      - With O(state=present) for an operation already recorded, a given O(detail) replaces the
        recorded one (a change); not giving it keeps the recorded one.
    type: dict
  attempt:
    description:
      - With O(state=present), count one more attempt of the operation (a poll replaying a record
        sets it before it starts). When the record already has O(max_attempts) attempts, it is
        parked instead and the module warns. A parked record stays in the journal (the node stays
        out of the plan) but a poll no longer replays it, so one operation that keeps failing
        cannot stall every later poll. A person finishes or undoes the operation and removes the
        record (O(state=absent)).
      - A parked record is left as it is (no change).
    type: bool
    default: false
  max_attempts:
    description: Attempts of one operation before it is parked (with O(attempt=true)).
    type: int
    default: 3
  error:
    description: With O(attempt=true), the reason of the last failure, kept in the record as C(last_error).
    type: str
notes:
  - All times are seconds since the epoch on the clock of the host the module runs on (the qmaster).
  - Use it while holding the cluster's M(gridengine.balancer.balancer_lock), so that one
    balancer at a time decides what to do about the records.
seealso:
  - module: gridengine.balancer.balancer_journal_info
  - module: gridengine.balancer.balancer_lock
  - module: gridengine.balancer.balancer_state
"""

EXAMPLES = r"""
- name: Record that node003 starts joining
  gridengine.balancer.balancer_journal:
    cluster: mycluster
    node: node003
    operation: join
    detail:
      address: 10.0.0.13
      provider: local

- name: The join is done
  gridengine.balancer.balancer_journal:
    cluster: mycluster
    node: node003
    operation: join
    state: absent
"""

RETURN = r"""
path:
  description: The journal's path on the target.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/journal.json
exists:
  description: Whether the journal file existed before the task.
  returned: success
  type: bool
  sample: true
record:
  description:
    - With O(state=present), the record of O(node) after the task (in check mode, as it would be).
    - With O(state=absent), the record removed (or that would be), null when there was none to remove.
  returned: success
  type: dict
  contains:
    node:
      description: The node.
      type: str
      sample: node003
    operation:
      description: V(join) or V(leave).
      type: str
      sample: join
    started:
      description: When the operation was recorded (seconds since the epoch).
      type: float
      sample: 1700000000.0
    detail:
      description: O(detail) as recorded.
      type: dict
      sample: {"address": "10.0.0.13"}
    attempts:
      description: Attempts counted with O(attempt=true) (absent before the first).
      type: int
      sample: 2
    parked:
      description: True once the operation was parked (never replayed again).
      type: bool
      sample: true
    parked_at:
      description: When it was parked (seconds since the epoch).
      type: float
      sample: 1700000300.0
    last_error:
      description: O(error) of the last attempt.
      type: str
      sample: "node_leave failed: ..."
parked:
  description: With O(attempt=true), whether the record is parked after the task.
  returned: success, with O(attempt=true)
  type: bool
  sample: false
operations:
  description:
    - Every operation in flight after the task (in check mode, as it would be), oldest first.
      Same fields as RV(record).
  returned: success
  type: list
  elements: dict
  sample: [{"node": "node003", "operation": "join", "started": 1700000000.0, "detail": {"address": "10.0.0.13"}}]
in_flight:
  description:
    - When O(state=present) failed because the node has another operation in flight, that record.
  returned: on failure, for a conflicting operation
  type: dict
  sample: {"node": "node003", "operation": "join", "started": 1700000000.0, "detail": {}}
diff:
  description: The journal's text before and after, when run with C(--diff).
  returned: when diff mode is on
  type: dict
  sample: {"before": "", "after": "{\n \"operations\": [...],\n \"schema\": 1\n}\n"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import cluster_file_module, cluster_file_spec, file_path
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_journal import (
    JournalConflict,
    JournalError,
    attempt,
    check_node,
    default_path,
    record,
    remove,
    render,
    update,
)


def main():
    module = cluster_file_module(
        AnsibleModule,
        cluster_file_spec(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            node=dict(type="str", required=True),
            operation=dict(type="str", choices=["join", "leave"]),
            detail=dict(type="dict"),
            attempt=dict(type="bool", default=False),
            max_attempts=dict(type="int", default=3),
            error=dict(type="str"),
        ),
        required_if=[("state", "present", ("operation",))],
    )
    p = module.params
    path = p["path"]
    try:
        path = file_path(p, default_path)
        check_node(p["node"])
        if p["attempt"] and p["state"] != "present":
            raise ValueError("attempt: counts an attempt of a recorded operation; it needs state=present")
        if p["state"] == "present":
            def change(operations):
                operations, changed, entry = record(operations, p["node"], p["operation"], p["detail"], path=path)
                if not p["attempt"]:
                    return operations, changed, entry
                operations, counted, entry = attempt(operations, p["node"], p["max_attempts"], p["error"])
                return operations, changed or counted, entry
        else:
            def change(operations):
                return remove(operations, p["node"], p["operation"])
        before, after, changed, entry, exists = update(path, change, check_mode=module.check_mode)
    except ValueError as exc:
        module.fail_json(msg=str(exc), path=path)
    except JournalConflict as exc:
        module.fail_json(msg=str(exc), path=path, in_flight=exc.record)
    except JournalError as exc:
        module.fail_json(msg=str(exc), path=path)

    result = dict(changed=changed, path=path, exists=exists, record=entry, operations=after)
    if p["attempt"]:
        result["parked"] = bool(entry and entry.get("parked"))
        if result["parked"]:
            module.warn("the %s of node %s is parked after %d attempts (last error: %s): it will not be "
                        "replayed again; the node stays out of the plan until a person finishes or undoes "
                        "it and removes its record from %s" % (
                            entry["operation"], entry["node"], entry.get("attempts", 0),
                            entry.get("last_error") or "not recorded", path))
    with_diff(module, result, render(before) if exists else "", render(after) if exists or changed else "", path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
