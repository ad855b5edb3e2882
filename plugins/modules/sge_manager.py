#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_manager
short_description: Add or remove Grid Engine managers and operators
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Makes sure that users are, or are not, on Grid Engine's manager list (C(qconf -sm), C(-am),
    C(-dm)) or operator list (C(qconf -so), C(-ao), C(-do)).
  - Reads the list first and runs a command only for a user whose entry differs, one user per
    command; users of the list that are not named are never touched. The list is read again
    after a change; RV(users), C(changed) and the diff show what Grid Engine stored.
options:
  role:
    description:
      - V(manager) (full access to the configuration) or V(operator) (operates the cluster but
        cannot change its configuration).
    type: str
    choices: [manager, operator]
    default: manager
  users:
    description:
      - User names (letters, digits, V(_), V(.), V(-), not starting with V(.) or V(-)); anything
        else fails the module before anything runs.
    type: list
    elements: str
    required: true
    aliases: [user, name]
  state:
    description:
      - V(present) adds each user not on the list, V(absent) removes each user on it.
      - Grid Engine never removes C(root) or its admin user (C(admin_user) of
        C($SGE_ROOT/$SGE_CELL/common/bootstrap)) from either list; asking for it fails the module
        before anything changes.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
seealso:
  - module: gridengine.balancer.sge_userset
  - name: Grid Engine qconf(1)
    description: Manual page of the command the module runs.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qconf.html
"""

EXAMPLES = r"""
- name: Let the balancer's service user manage the cluster
  gridengine.balancer.sge_manager:
    users: [balancer]

- name: An operator who may suspend and disable queues
  gridengine.balancer.sge_manager:
    role: operator
    users: oncall

- name: Take a former admin off the manager list
  gridengine.balancer.sge_manager:
    users: olduser
    state: absent
"""

RETURN = r"""
role:
  description: The list, V(manager) or V(operator).
  returned: always
  type: str
  sample: manager
users:
  description:
    - The whole list after the run (in check mode, the list the run would leave).
  returned: always
  type: list
  elements: str
  sample: [root, sgeadmin, balancer]
commands:
  description: The commands that added the users to the role or removed them (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -am balancer"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_access import (
    NAME_LISTS,
    admin_user,
    apply_list,
    check,
    lines_text,
    unique,
    user_error,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    run_admin,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec


def run(module, admin):
    role = module.params["role"]
    users = unique(module.params["users"])
    label, show, add, delete = NAME_LISTS[role]

    def refuse(before):
        kept = ["root"] + [u for u in [admin_user(admin)] if u]
        refused = [u for u in users if u in kept and u in before]
        if refused:
            raise SgeAdminError(
                "%s: %s is root or Grid Engine's admin user, which Grid Engine keeps on the list; "
                "nothing was changed" % (label, refused[0]))

    before, after = apply_list(module, admin, label, (show, add, delete), users,
                               lambda user, members: user if user in members else None, refuse)
    changed = bool(admin.commands) if module.check_mode else sorted(before) != sorted(after)
    result = dict(changed=changed, role=role, users=after, commands=admin.commands)
    return with_diff(module, result, lines_text(before), lines_text(after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    check(user_error(u, "users") for u in params["users"])


def main():
    argument_spec = sge_argument_spec(
        role=dict(type="str", choices=["manager", "operator"], default="manager"),
        users=dict(type="list", elements="str", required=True, aliases=["user", "name"]),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
