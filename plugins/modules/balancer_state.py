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
  - A missing file reads as an empty state C({}). A file that exists but cannot be read or is not a
    JSON object is an error naming the path; it is never reset silently.
  - Writes are atomic (temporary file in the same directory, fsync, rename), the file mode is V(0600)
    and a missing directory is created with mode V(0700).
author:
  - gridengine.balancer developers (@gridengine)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  cluster:
    description:
      - Name of the cluster; gives the default O(path) C(/var/lib/gridengine-balancer/<cluster>/state.json).
      - Letters, digits, V(_), V(.) and V(-), starting with a letter or digit.
      - One of O(cluster) and O(path) is required.
    type: str
  path:
    description:
      - Path of the state file on the target host. Overrides the default derived from O(cluster).
    type: path
  state:
    description:
      - V(read) returns the content of the file and changes nothing.
      - V(present) makes the file hold O(content); it reports C(changed) only when the content differs
        (compared as JSON, not as text).
    type: str
    choices: [read, present]
    default: read
  content:
    description:
      - The state to write, a JSON object. Required with O(state=present).
    type: dict
notes:
  - The file is rewritten in a canonical form (sorted keys). Compare contents, not bytes.
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

- name: Start over (an empty state) after removing a corrupt file by hand
  gridengine.balancer.balancer_state:
    path: /var/lib/gridengine-balancer/mycluster/state.json
    state: present
    content: {}
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
diff:
  description: The file's text before and after, when run with C(--diff) and O(state=present).
  returned: when diff mode is on and O(state=present)
  type: dict
  sample: {"before": "{}\n", "after": "{\n \"schema\": 1\n}\n", "before_header": "/var/lib/gridengine-balancer/mycluster/state.json"}
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    StateFileError,
    default_path,
    dumps,
    read_state,
    write_atomic,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str"),
            path=dict(type="path"),
            state=dict(type="str", choices=["read", "present"], default="read"),
            content=dict(type="dict"),
        ),
        required_one_of=[("cluster", "path")],
        required_if=[("state", "present", ("content",))],
        supports_check_mode=True,
    )
    params = module.params
    path = params["path"]
    if path is None:
        try:
            path = default_path(params["cluster"])
        except ValueError as exc:
            module.fail_json(msg=str(exc))

    try:
        current, text = read_state(path)
        exists = text is not None
    except StateFileError as exc:
        if params["state"] == "read":
            module.fail_json(msg=str(exc), path=path)
        # An explicit write replaces an unreadable file; say so.
        module.warn("%s; replacing it with the given content" % exc)
        current, text, exists = None, None, True

    result = dict(changed=False, path=path, exists=exists)
    if params["state"] == "read":
        result["content"] = current
        module.exit_json(**result)

    content = params["content"]
    try:
        new_text = dumps(content)
    except (TypeError, ValueError) as exc:
        module.fail_json(msg="content: cannot be written as JSON: %s" % exc, path=path)
    # Compare as JSON values: formatting and key order do not matter.  A missing or unreadable
    # file is always (re)written.
    new_value = json.loads(new_text)
    changed = text is None or current is None or json.loads(dumps(current)) != new_value
    result["changed"] = changed
    result["content"] = new_value
    if module._diff:
        result["diff"] = dict(
            before=dumps(current) if text is not None and current is not None else "",
            after=new_text,
            before_header=path,
            after_header=path,
        )
    if changed and not module.check_mode:
        try:
            write_atomic(path, new_text)
        except StateFileError as exc:
            module.fail_json(msg=str(exc), path=path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
