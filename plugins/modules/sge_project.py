#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_project
short_description: Manage a Grid Engine project
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
  - gridengine.balancer.sge.shares
description:
  - Creates, changes and deletes a Grid Engine project (project(5)). Only the options given are
    compared and changed; the others keep their values.
  - The project list is read with C(qconf -sprjl) and the project with C(qconf -sprj NAME); a new
    project is added with C(qconf -Aprj FILE), a changed one written with C(qconf -Mprj FILE)
    (the project as read, the differing values replaced), and C(qconf -dprj NAME) deletes one.
    C(qconf -aprj)/C(-mprj) start an editor and are never used. Object files are private
    temporary files (mode 0600), removed afterwards.
  - The project is read again after a change; C(changed), RV(project) and the diff show what
    Grid Engine stored.
options:
  name:
    description:
      - Project name. Letters, digits, V(_), V(.), V(-), not starting with V(.) or V(-) (the
        portable part of Grid Engine's object names); nothing runs otherwise.
    type: str
    required: true
  state:
    description:
      - V(present) creates the project when it does not exist and sets the options given.
      - V(absent) deletes it. Grid Engine refuses while a queue, host, job or the configuration
        still names it; the module then fails with Grid Engine's message.
    type: str
    choices: [present, absent]
    default: present
  acl:
    description:
      - User sets (M(gridengine.balancer.sge_userset)) whose users may submit to the project; an
        empty list is C(NONE) (everyone not excluded by O(xacl)). Order does not matter.
    type: list
    elements: str
  xacl:
    description:
      - User sets whose users may not submit to the project; an empty list is C(NONE).
    type: list
    elements: str
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
seealso:
  - module: gridengine.balancer.sge_userset
  - module: gridengine.balancer.sge_rqs
  - name: Grid Engine project(5)
    description: The project attributes.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/project.html
"""

EXAMPLES = r"""
- name: A project for the chemistry group, open to one user set
  gridengine.balancer.sge_project:
    name: chemistry
    acl: [chemists]
    fshare: 100

- name: Delete a project no job uses any more
  gridengine.balancer.sge_project:
    name: oldproject
    state: absent
"""

RETURN = r"""
project:
  description:
    - The project after the run (in check mode, as the run would leave it) as Grid Engine
      prints it, values as text; empty when it does not exist.
  returned: always
  type: dict
  sample: {"name": "chemistry", "oticket": "0", "fshare": "100", "acl": "chemists", "xacl": "NONE"}
commands:
  description: The commands that added, changed or deleted the project (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Aprj FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_access import (
    apply_named,
    check_named,
    names_value,
    object_error,
    object_text,
    shares_spec,
    shares_wanted,
    unique,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    run_admin,
    same_value,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec

FIELDS = ("name", "oticket", "fshare", "acl", "xacl")
# canonical() ignores the order of these lists
LIST_ATTR = "user_lists"


def _wanted(params):
    wanted = {}
    for key in ("acl", "xacl"):
        if params[key] is not None:
            wanted[key] = names_value(unique(params[key]))
    wanted.update(shares_wanted(params))
    return wanted


def _differs(current, wanted):
    return [k for k, v in wanted.items()
            if not same_value(LIST_ATTR if k in ("acl", "xacl") else k, current.get(k, "NONE"), v)]


def run(module, admin):
    name = module.params["name"]
    label = "project %s" % name
    wanted = _wanted(module.params)
    before, after, changed = apply_named(
        module, admin, label, ("-sprjl", "-sprj", "-Aprj", "-Mprj", "-dprj"), name,
        dict(name=name, oticket="0", fshare="0", acl="NONE", xacl="NONE"), FIELDS,
        lambda current: wanted, _differs)
    if admin.commands and not module.check_mode and after is not None:
        stored = _differs(after, wanted)
        if stored:
            module.warn("%s: Grid Engine stored %s differently than given (%s)"
                        % (label, ", ".join(stored),
                           ", ".join("%s %s" % (k, after.get(k)) for k in stored)))
    result = dict(changed=changed, project=after or {}, commands=admin.commands)
    return with_diff(module, result, object_text(before), object_text(after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    check_named(params, "project",
                [object_error(n, key, "user set") for key in ("acl", "xacl") for n in params[key] or []])


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        acl=dict(type="list", elements="str"),
        xacl=dict(type="list", elements="str"),
    )
    argument_spec.update(shares_spec())
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
