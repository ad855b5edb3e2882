#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: balancer_journal_info
short_description: Read the node operations a Grid Engine balancer left in flight
version_added: 0.1.0
description:
  - Reads the balancer's journal on the qmaster host (see M(gridengine.balancer.balancer_journal))
    and returns the node operations that were started and not finished, oldest first.
  - A missing journal has no operations. A file that cannot be read or is not a journal fails
    the task naming the path.
  - The module only reads; it never reports a change and creates nothing.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.no_diff
  - gridengine.balancer.cluster_file
  - gridengine.balancer.cluster_file.journal
notes:
  - The journal is read without waiting for writers; every write replaces it atomically, so the
    result is the journal before or after a concurrent change, never a mix.
seealso:
  - module: gridengine.balancer.balancer_journal
  - module: gridengine.balancer.balancer_lock
"""

EXAMPLES = r"""
- name: What did the last controller leave half done?
  gridengine.balancer.balancer_journal_info:
    cluster: mycluster
  register: balancer_journal

- name: Nodes whose join must be finished or undone
  ansible.builtin.debug:
    msg: "{{ balancer_journal.operations | selectattr('operation', '==', 'join') | map(attribute='node') | list }}"
"""

RETURN = r"""
path:
  description: The journal's path on the target.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/journal.json
exists:
  description: Whether the journal file exists.
  returned: success
  type: bool
  sample: true
operations:
  description:
    - The operations in flight, oldest first; empty when there are none.
    - Each is a record with the fields that RV(gridengine.balancer.balancer_journal#module:record)
      describes (V(node), V(operation), V(started) on the qmaster's clock, V(detail), and the
      attempt fields of a record that a poll replayed).
  returned: success
  type: list
  elements: dict
  sample: [{"node": "node003", "operation": "join", "started": 1700000000.0, "detail": {"address": "10.0.0.13"}}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import cluster_file_module, cluster_file_spec, file_path
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_journal import (
    JournalError,
    default_path,
    read_journal,
)


def main():
    module = cluster_file_module(AnsibleModule, cluster_file_spec())
    path = module.params["path"]
    try:
        path = file_path(module.params, default_path)
        operations, exists = read_journal(path)
    except ValueError as exc:
        module.fail_json(msg=str(exc), path=path)
    except JournalError as exc:
        module.fail_json(msg=str(exc), path=path)
    module.exit_json(changed=False, path=path, exists=exists, operations=operations)


if __name__ == "__main__":
    main()
