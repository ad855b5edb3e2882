#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_userset
short_description: Manage a Grid Engine user set (access list or department)
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
  - gridengine.balancer.sge.shares
description:
  - Creates, changes and deletes a Grid Engine user set (access_list(5)), an access list
    (C(ACL)), a department (C(DEPT)) or both, and its entries (users and C(@groups)).
  - The list of user sets is read with C(qconf -sul) and the set with C(qconf -su NAME); a new set
    is added with C(qconf -Au FILE), a changed one written with C(qconf -Mu FILE) (the set as
    read, the differing values replaced), and C(qconf -dul NAME) deletes one. Object files are
    private temporary files (mode 0600), removed afterwards.
  - The set is read again after a change; C(changed), RV(userset) and the diff show what Grid
    Engine stored.
options:
  name:
    description:
      - Name of the user set. Letters, digits, V(_), V(.), V(-), not starting with V(.) or V(-);
        nothing runs otherwise.
    type: str
    required: true
  state:
    description:
      - V(present) creates the set when it does not exist and sets the options given.
      - V(absent) deletes it (C(qconf -dul)). Grid Engine refuses while a queue, host, project,
        PE or the configuration names it; the module then fails with Grid Engine's message.
    type: str
    choices: [present, absent]
    default: present
  type:
    description:
      - V(ACL), V(DEPT) or both. A new set is an V(ACL) when not given.
    type: list
    elements: str
    choices: [ACL, DEPT]
  entries:
    description:
      - User names, or primary UNIX groups written C(@group); see O(mode).
    type: list
    elements: str
  mode:
    description:
      - V(add) makes sure the O(entries) are in the set, leaving the others.
      - V(remove) makes sure they are not, leaving the others.
      - V(exact) makes them the only entries (an empty list is C(NONE)).
    type: str
    choices: [add, remove, exact]
    default: add
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager or
    operator.
  - Entries are compared exactly (user names are case-sensitive).
seealso:
  - module: gridengine.balancer.sge_project
  - module: gridengine.balancer.sge_queue
  - name: Grid Engine access_list(5)
    description: The user set attributes.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/access_list.html
"""

EXAMPLES = r"""
- name: An access list of two users and a group
  gridengine.balancer.sge_userset:
    name: chemists
    entries: [alice, bob, "@chem"]
    mode: exact

- name: Add a user to arusers (others stay)
  gridengine.balancer.sge_userset:
    name: arusers
    entries: [carol]

- name: A department with shares
  gridengine.balancer.sge_userset:
    name: physics
    type: [DEPT]
    entries: ["@phys"]
    fshare: 200
"""

RETURN = r"""
userset:
  description:
    - The set after the run (in check mode, as the run would leave it) as Grid Engine prints it,
      values as text; empty when it does not exist.
  returned: always
  type: dict
  sample: {"name": "chemists", "type": "ACL", "fshare": "0", "oticket": "0", "entries": "alice,bob,@chem"}
entries:
  description: The entries after the run (in check mode, would be).
  returned: always
  type: list
  elements: str
  sample: [alice, bob, "@chem"]
commands:
  description: The commands that added, changed or deleted the user set (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Au FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_access import (
    apply_named,
    check_named,
    entry_error,
    names_value,
    object_text,
    shares_spec,
    shares_wanted,
    unique,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    run_admin,
    same_value,
    split_list,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec

FIELDS = ("name", "type", "fshare", "oticket", "entries")


def _types(value):
    return sorted(set(t.upper() for t in split_list(value)))


def _entries(obj):
    return split_list((obj or {}).get("entries", "NONE"))


def _wanted_entries(current, entries, mode):
    if entries is None:
        return current
    if mode == "exact":
        return list(entries)
    if mode == "add":
        return current + [e for e in entries if e not in current]
    return [e for e in current if e not in entries]


def _differs(current, wanted):
    out = []
    for key, value in wanted.items():
        have = current.get(key, "NONE")
        if key == "type":
            same = _types(have) == _types(value)
        elif key == "entries":
            same = sorted(split_list(have)) == sorted(split_list(value))
        else:
            same = same_value(key, have, value)
        if not same:
            out.append(key)
    return out


def run(module, admin):
    p = module.params
    name = p["name"]
    label = "user set %s" % name
    entries = unique(p["entries"]) if p["entries"] is not None else None
    wanted = shares_wanted(p)
    if p["type"] is not None:
        wanted["type"] = ",".join(sorted(set(p["type"]))) if p["type"] else "ACL"

    def wanted_for(current):
        return dict(wanted, entries=names_value(_wanted_entries(_entries(current), entries, p["mode"])))

    before, after, changed = apply_named(
        module, admin, label, ("-sul", "-su", "-Au", "-Mu", "-dul"), name,
        dict(name=name, type="ACL", fshare="0", oticket="0", entries="NONE"), FIELDS,
        wanted_for, _differs)
    result = dict(changed=changed, userset=after or {}, entries=_entries(after),
                  commands=admin.commands)
    return with_diff(module, result, object_text(before), object_text(after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    check_named(params, "user set", [entry_error(e, "entries") for e in params["entries"] or []])


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        type=dict(type="list", elements="str", choices=["ACL", "DEPT"]),
        entries=dict(type="list", elements="str"),
        mode=dict(type="str", choices=["add", "remove", "exact"], default="add"),
    )
    argument_spec.update(shares_spec())
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
