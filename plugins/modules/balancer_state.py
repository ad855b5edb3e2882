#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: balancer_state
short_description: Read or write the Grid Engine load balancer's state file
version_added: 0.1.0
description:
  - Reads or writes the JSON state that M(gridengine.balancer.elastic_plan) keeps between polls
    (when each node joined and was last busy, when the cluster last changed, nodes booting, job wait history).
  - The file lives on the qmaster host, so a controller may run anywhere and die anywhere.
  - A missing file reads as an empty state C({}).
  - A file whose content is not a state (empty, truncated, not UTF-8, not JSON, JSON that is not
    an object) is renamed to C(<path>.corrupt-<UTC time>-<random>), kept for a person to look at
    and never deleted, and reads as an empty state C({}), with a warning naming both files and
    RV(corrupt) (O(on_corrupt=move_aside), the default). With O(on_corrupt=fail) the task fails
    instead and nothing is changed.
  - A file that cannot be read (permissions, a directory in its place, an I/O error) fails the
    task naming the path; it is never moved, replaced or reset.
  - Writes are atomic (temporary file in the same directory, fsync, rename), the file mode is V(0600)
    and a missing directory is created with mode V(0700). A write that fails (disk full, I/O error)
    fails the task and leaves the old file as it was; a temporary file left by a writer killed
    mid-write is removed by a later write once it is an hour old.
  - Writing a state whose C(schema) is older than the file's (a newer balancer wrote it) first keeps
    a copy of the file as C(<path>.schema<N>-<UTC time>), RV(schema_copy).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.diff
  - gridengine.balancer.cluster_file
options:
  path:
    description:
      - Path of the state file on the target host. Overrides the default derived from O(cluster),
        C(/var/lib/gridengine-balancer/<cluster>/state.json).
    type: path
  state:
    description:
      - V(read) returns the content of the file; it changes nothing, except that a corrupt file is
        moved aside (see O(on_corrupt)).
      - V(present) makes the file hold O(content); it reports C(changed) only when the content differs
        (compared as JSON, not as text).
    type: str
    choices: [read, present]
    default: read
  content:
    description:
      - The state to write, a JSON object. Required with O(state=present).
    type: dict
  on_corrupt:
    description:
      - What to do with a file whose content is not a state.
      - V(move_aside) renames it (RV(corrupt)), warns, and goes on with an empty state (V(read)) or
        writes O(content) (V(present)). For the balancer's state this is safe; see
        C(docs/reliability/state-faults.md) for what an empty state means to the decision.
      - V(fail) fails the task and changes nothing.
    type: str
    choices: [move_aside, fail]
    default: move_aside
notes:
  - The file is rewritten in a canonical form (sorted keys). Compare contents, not bytes.
  - In check mode a corrupt file is not moved; the result says that it would be.
seealso:
  - module: gridengine.balancer.elastic_plan
"""

EXAMPLES = r"""
- name: Read the balancer state of mycluster
  gridengine.balancer.balancer_state:
    cluster: mycluster
  register: balancer_state

- name: Save a new state
  gridengine.balancer.balancer_state:
    cluster: mycluster
    state: present
    content: "{{ balancer_plan_state }}"

- name: Start over (an empty state)
  gridengine.balancer.balancer_state:
    path: /var/lib/gridengine-balancer/mycluster/state.json
    state: present
    content: {}

- name: Read it, but fail (and move nothing) if it is corrupt
  gridengine.balancer.balancer_state:
    cluster: mycluster
    on_corrupt: fail
"""

RETURN = r"""
path:
  description: The state file's path on the target.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/state.json
exists:
  description: Whether the file existed before the task.
  returned: always
  type: bool
  sample: true
content:
  description:
    - With O(state=read), the state read (C({}) when the file does not exist).
    - With O(state=present), the state the file holds after the task (or would hold, in check mode).
  returned: always
  type: dict
  sample: {"schema": 1, "last_poll": 1700000000.0, "last_change": null, "nodes": {}}
corrupt:
  description:
    - When the file's content was not a state, what was wrong and where the file was moved
      (C(moved_to) is null in check mode). RV(content) is then C({}) for O(state=read).
  returned: when a corrupt file was found (and O(on_corrupt=move_aside))
  type: dict
  sample: {"problem": "state file /var/lib/gridengine-balancer/mycluster/state.json is not valid JSON (Expecting value: line 1 column 1 (char 0))",
           "moved_to": "/var/lib/gridengine-balancer/mycluster/state.json.corrupt-20231114T221320Z-a1b2c3"}
schema_copy:
  description: Where the file was copied before a state of an older schema replaced it.
  returned: when O(state=present) replaced a file of a newer schema
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/state.json.schema2-20231114T221320Z
diff:
  description: The file's text before and after, when run with C(--diff) and O(state=present).
  returned: when diff mode is on and O(state=present)
  type: dict
  sample: {"before": "{}\n", "after": "{\n \"schema\": 1\n}\n", "before_header": "/var/lib/gridengine-balancer/mycluster/state.json"}
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    StateFileError,
    cluster_file_module,
    cluster_file_spec,
    default_path,
    dumps,
    file_path,
    read_state,
    read_state_or_move_aside,
    write_atomic,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff


def _newer_schema(current, content):
    """The schema number of ``current`` when it is newer than that of ``content``, else None."""
    old, new = current.get("schema"), content.get("schema")
    if isinstance(old, bool) or not isinstance(old, int):
        return None
    if isinstance(new, int) and not isinstance(new, bool) and new >= old:
        return None
    return old


def main():
    module = cluster_file_module(
        AnsibleModule,
        cluster_file_spec(
            state=dict(type="str", choices=["read", "present"], default="read"),
            content=dict(type="dict"),
            on_corrupt=dict(type="str", choices=["move_aside", "fail"], default="move_aside"),
        ),
        required_if=[("state", "present", ("content",))],
    )
    params = module.params
    try:
        path = file_path(params, default_path)
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    try:
        if params["on_corrupt"] == "fail":
            current, text = read_state(path)
            problem = moved = None
        else:
            current, text, problem, moved = read_state_or_move_aside(path, check_mode=module.check_mode)
    except StateFileError as exc:
        # unreadable (permissions, a directory, I/O error), or corrupt with on_corrupt=fail:
        # nothing is moved or replaced, and nothing may be decided from it
        module.fail_json(msg="%s; nothing was changed" % exc, path=path)

    result = dict(changed=False, path=path, exists=text is not None or problem is not None)
    if problem is not None:
        result["changed"] = True
        result["corrupt"] = dict(problem=problem, moved_to=moved)
        if module.check_mode:
            module.warn("%s; would move it aside and start from an empty state" % problem)
        else:
            module.warn("%s; moved it aside to %s (kept, not deleted) and started from an empty state"
                        % (problem, moved))
    if params["state"] == "read":
        result["content"] = current
        module.exit_json(**result)

    content = params["content"]
    try:
        new_text = dumps(content)
    except (TypeError, ValueError, RecursionError) as exc:
        module.fail_json(msg="content: cannot be written as JSON: %s" % exc, path=path)
    # Compare as JSON values: formatting and key order do not matter.  A missing or corrupt
    # file is always (re)written.
    new_value = json.loads(new_text)
    changed = text is None or json.loads(dumps(current)) != new_value
    result["changed"] = result["changed"] or changed
    result["content"] = new_value
    with_diff(module, result, dumps(current) if text is not None else "", new_text, path)
    newer = _newer_schema(current, new_value) if text is not None and changed else None
    if newer is not None:
        # a newer balancer wrote it: keep its state, whose keys this one does not know
        copy = "%s.schema%d-%s" % (path, newer, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        result["schema_copy"] = copy
        module.warn("state file %s has schema %d, newer than the content written (%r); %s a copy as %s"
                    % (path, newer, new_value.get("schema"), "would keep" if module.check_mode else "kept", copy))
        if not module.check_mode:
            try:
                write_atomic(copy, text)
            except StateFileError as exc:
                module.fail_json(msg="%s; the state was not replaced" % exc, path=path)
    if changed and not module.check_mode:
        try:
            write_atomic(path, new_text)
        except StateFileError as exc:
            module.fail_json(msg=str(exc), path=path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
