#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_pe
short_description: Manage a Grid Engine parallel environment
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Creates, changes and deletes a Grid Engine parallel environment (sge_pe(5)). Only the
    attributes given in O(attributes) are compared and changed; the others keep their values.
  - The PE is read with C(qconf -sp), changed with C(qconf -Mp FILE) (the whole object as read,
    with the differing attributes replaced), created with C(qconf -Ap FILE) and deleted with
    C(qconf -dp). C(qconf -ap)/C(-mp) start an editor and are never used. Object files are
    private temporary files (mode 0600), removed afterwards.
  - A new PE starts from C(slots 0), C(user_lists NONE), C(xuser_lists NONE),
    C(start_proc_args NONE), C(stop_proc_args NONE), C(allocation_rule $pe_slots),
    C(control_slaves FALSE), C(job_is_first_task TRUE), C(urgency_slots min),
    C(accounting_summary FALSE), C(qsort_args NONE), with O(attributes) on top.
  - The PE is read again after a change; RV(attributes) and the diff show what Grid Engine stored.
options:
  name:
    description:
      - Name of the parallel environment, for example C(smp). Letters, digits, V(_), V(.), V(-),
        starting with a letter or V(_); nothing runs otherwise.
    type: str
    required: true
  state:
    description:
      - V(present) creates the PE when it does not exist and sets O(attributes).
      - V(absent) deletes it with C(qconf -dp) (O(attributes) is then ignored). Grid Engine refuses
        while a cluster queue lists it in C(pe_list) or a job runs in it; the module then fails
        with Grid Engine's message.
    type: str
    choices: [present, absent]
    default: present
  attributes:
    description:
      - PE attributes to ensure, named as in C(qconf -sp) (sge_pe(5)), that is C(slots), C(user_lists),
        C(xuser_lists), C(start_proc_args), C(stop_proc_args), C(allocation_rule),
        C(control_slaves), C(job_is_first_task), C(urgency_slots), C(accounting_summary),
        C(qsort_args), or another attribute the existing PE has. C(pe_name) is O(name) and
        cannot be set here. An unknown attribute name is an error.
      - Booleans are written C(TRUE)/C(FALSE), null and empty values C(NONE), lists joined with
        spaces (C(user_lists), C(xuser_lists)) or commas.
      - Values are compared the way Grid Engine means them (C(true)/C(TRUE), C(none)/C(NONE)).
        When Grid Engine stores a value in another form than given, the module warns.
    type: dict
    default: {}
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - A queue runs jobs of the PE only when its C(pe_list) names it (M(gridengine.balancer.sge_queue)).
seealso:
  - module: gridengine.balancer.sge_queue
  - name: Grid Engine sge_pe(5)
    description: The parallel environment attributes.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/sge_pe.html
"""

EXAMPLES = r"""
- name: Shared-memory jobs on one host
  gridengine.balancer.sge_pe:
    name: smp
    attributes:
      slots: 999
      allocation_rule: $pe_slots

- name: MPI over hosts, tightly integrated
  gridengine.balancer.sge_pe:
    name: mpi
    attributes:
      slots: 9999
      allocation_rule: $fill_up
      control_slaves: true
      job_is_first_task: false

- name: Delete a PE no queue lists any more
  gridengine.balancer.sge_pe:
    name: old_mpi
    state: absent
"""

RETURN = r"""
name:
  description: Name of the parallel environment.
  returned: always
  type: str
  sample: smp
attributes:
  description:
    - The attributes given in O(attributes), as Grid Engine prints them after the run (in check
      mode, as they would be). Empty when the PE does not exist.
  returned: always
  type: dict
  sample: {"slots": "999", "allocation_rule": "$pe_slots"}
commands:
  description: The commands that added, changed or deleted the parallel environment (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Ap FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    delete_object,
    name_error,
    parse_object,
    render_object,
    render_text,
    run_admin,
    same_value,
    stored_attributes,
    wanted_attributes,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_objects import (
    PE_ATTRIBUTES,
    PE_MISSING,
    PE_TEMPLATE,
    show,
)

KEY_WIDTH = 18


def _wanted(attributes, current):
    known = list(PE_ATTRIBUTES[1:]) + [k for k in (current or {}) if k not in PE_ATTRIBUTES]
    return wanted_attributes(attributes, known, "pe_name", "PE's",
                             "parallel environment attribute (sge_pe(5))")


def _read(admin, label, name):
    text = show(admin, label, ["-sp", name], PE_MISSING)
    return None if text is None else parse_object(text)


def run(module, admin):
    p = module.params
    name = p["name"]
    label = "parallel environment %s" % name
    attributes = p["attributes"] or {}
    # names and values are checked before anything runs; attributes only an existing PE has
    # are checked again once it is read
    _wanted(dict((k, v) for k, v in attributes.items() if k in PE_ATTRIBUTES), None)
    current = _read(admin, label, name)
    wanted = _wanted(attributes, current) if p["state"] == "present" else {}
    before_text = after_text = ""
    result_attributes = {}

    if p["state"] == "absent":
        before_text = delete_object(admin, label, "-dp", name, current)
    elif current is None:
        obj = dict(PE_TEMPLATE)
        obj["pe_name"] = name
        obj.update(wanted)
        admin.change_with_text(label, "-Ap", render_object(obj, key_width=KEY_WIDTH))
        after_text = render_text(obj)
        result_attributes = dict((k, obj[k]) for k in wanted)
    else:
        differing = dict((k, v) for k, v in wanted.items() if not same_value(k, current.get(k, "NONE"), v))
        result_attributes = dict((k, current.get(k, "NONE")) for k in wanted)
        if differing:
            obj = dict(current)
            obj.update(differing)
            admin.change_with_text(label, "-Mp", render_object(obj, key_width=KEY_WIDTH))
            before_text = render_text(dict((k, current.get(k, "NONE")) for k in differing))
            after_text = render_text(differing)
            result_attributes.update(differing)

    if p["state"] == "present" and admin.commands and not module.check_mode:
        result_attributes = stored_attributes(module, label, _read(admin, label, name), wanted)

    result = dict(changed=bool(admin.commands), name=name, attributes=result_attributes,
                  commands=admin.commands)
    return with_diff(module, result, before_text, after_text, label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    msg = name_error("object", params["name"], "name")
    if msg:
        raise SgeAdminError(msg)


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        attributes=dict(type="dict", default={}),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
