#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_complex
short_description: Add, change or delete Grid Engine complex attributes
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Keeps the attributes given in O(attributes) in Grid Engine's complex list (complex(5)), and
    only those. Every other attribute of the list stays as it is, whatever this module is given.
  - The list is read with C(qconf -sc). When an attribute differs, the whole list as read, with
    the given attributes added, changed or left out, is written back with C(qconf -Mc FILE) from a
    private temporary file (mode 0600, removed afterwards). C(qconf -mc) starts an editor and is
    never used.
  - The list is read again after a change; C(changed), RV(attributes) and the diff show what Grid
    Engine stored.
options:
  attributes:
    description:
      - The complex attributes to keep or delete, each with its own O(attributes[].state).
      - A name may appear once.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - Name of the attribute, for example C(gpu). Letters, digits, V(_), V(.), V(-),
            starting with a letter or V(_); nothing runs otherwise.
        type: str
        required: true
      state:
        description:
          - V(present) adds the attribute or changes the columns given here.
          - V(absent) deletes it. Grid Engine refuses while a host, queue or resource quota set
            names it, and for its built-in attributes (C(slots), C(arch), ...); the module then
            fails with Grid Engine's message and nothing is changed.
        type: str
        choices: [present, absent]
        default: present
      shortcut:
        description:
          - Short name for C(qsub -l). For a new attribute, defaults to O(attributes[].name).
          - The same rules as O(attributes[].name).
        type: str
      type:
        description:
          - Value type, one of V(INT), V(DOUBLE), V(MEMORY), V(TIME), V(STRING), V(CSTRING),
            V(RESTRING), V(HOST), V(BOOL) (V(RSMAP) on Grid Engines that have it); case does not matter.
          - Required for a new attribute.
        type: str
      relop:
        description:
          - Relation operator, one of V(==), V(!=), V(<), V(<=), V(>), V(>=), V(EXCL).
          - For a new attribute, defaults to V(==) for string types and V(BOOL), V(<=) otherwise.
        type: str
      requestable:
        description:
          - V(YES), V(NO) or V(FORCED) (booleans are V(YES) and V(NO)). For a new attribute,
            defaults to V(YES).
        type: raw
      consumable:
        description:
          - V(YES), V(NO) or V(JOB) (booleans are V(YES) and V(NO)). For a new attribute,
            defaults to V(NO).
        type: raw
      default:
        description:
          - Default request of a consumable. For a new attribute, defaults to V(NONE) for string
            types, V(FALSE) for V(BOOL), V(0) otherwise.
        type: raw
      urgency:
        description:
          - Urgency weight of a request. For a new attribute, defaults to V(0).
        type: raw
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - Values are compared the way Grid Engine means them (C(yes)/C(YES), C(0:0:0)/C(0), C(1)/C(1.0)).
    When Grid Engine stores a value in another form than given, the module warns, so the value
    can be written as Grid Engine prints it.
  - C(qconf -Mc) replaces the whole list. Another change of the list made between this module's
    read and its write is lost; run the tasks that change complexes one at a time.
seealso:
  - module: gridengine.balancer.sge_exec_host
  - module: gridengine.balancer.sge_queue
  - name: Grid Engine complex(5)
    description: The complex attributes and their columns.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/complex.html
"""

EXAMPLES = r"""
- name: A consumable for GPUs, counted per job
  gridengine.balancer.sge_complex:
    attributes:
      - name: gpu
        shortcut: gpu
        type: INT
        relop: "<="
        requestable: true
        consumable: JOB
        default: 0
        urgency: 0

- name: Make h_vmem a consumable (the other columns stay)
  gridengine.balancer.sge_complex:
    attributes:
      - name: h_vmem
        consumable: true

- name: Delete an attribute no host or queue uses any more
  gridengine.balancer.sge_complex:
    attributes:
      - name: old_license
        state: absent
"""

RETURN = r"""
attributes:
  description:
    - The attributes given in O(attributes) that exist after the run (in check mode, that would),
      with their columns as Grid Engine prints them.
  returned: always
  type: dict
  sample: {"gpu": {"shortcut": "gpu", "type": "INT", "relop": "<=", "requestable": "YES",
           "consumable": "JOB", "default": "0", "urgency": "0"}}
commands:
  description: The commands that changed the complex configuration (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Mc FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    name_error,
    run_admin,
    warn_stored,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_objects import (
    COMPLEX_FIELDS,
    COMPLEX_RELOPS,
    COMPLEX_TYPES,
    complex_defaults,
    complex_same,
    complex_text,
    parse_complexes,
    render_complexes,
    value_text,
)

CHOICES = {"requestable": ("YES", "NO", "FORCED"), "consumable": ("YES", "NO", "JOB")}


def _column(option, field, value):
    """Text of one column given to the module, or SgeAdminError naming it."""
    if isinstance(value, bool) and field in CHOICES:
        return "YES" if value else "NO"
    if isinstance(value, (list, dict)):
        raise SgeAdminError("%s: a single value is expected, got %r" % (option, value))
    text = value_text(value)
    if field in ("type", "requestable", "consumable"):
        text = text.upper()
    if field == "type" and text not in COMPLEX_TYPES:
        raise SgeAdminError("%s: %r is not a complex type (%s)" % (option, value, ", ".join(COMPLEX_TYPES)))
    if field == "relop" and text not in COMPLEX_RELOPS:
        raise SgeAdminError("%s: %r is not a relation operator (%s)" % (option, value, " ".join(COMPLEX_RELOPS)))
    if field in CHOICES and text not in CHOICES[field]:
        raise SgeAdminError("%s: %r is not one of %s" % (option, value, ", ".join(CHOICES[field])))
    if field == "shortcut":
        msg = name_error("object", text, option)
        if msg:
            raise SgeAdminError(msg)
    if not text or text.startswith("#") or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise SgeAdminError("%s: %r must be one word without white space, control characters or a leading '#' "
                            "(the complex list has white-space separated columns)" % (option, value))
    return text


def wanted_attributes(specs):
    """[(name, state, {field: text given})], validated before anything runs."""
    wanted = []
    seen = set()
    for n, spec in enumerate(specs):
        option = "attributes[%d]" % n
        name = spec.get("name")
        msg = name_error("object", name, option + ".name")
        if msg:
            raise SgeAdminError(msg)
        if name in seen:
            raise SgeAdminError("%s.name: %s is given more than once" % (option, name))
        seen.add(name)
        given = {}
        for field in COMPLEX_FIELDS:
            if spec.get(field) is not None:
                given[field] = _column("%s.%s" % (option, field), field, spec[field])
        wanted.append((name, spec.get("state") or "present", given))
    return wanted


def _read(admin, label):
    return parse_complexes(admin.read(label, "qconf", ["-sc"]))


def plan(before, wanted):
    """(entries after, names changed): the list with the wanted attributes applied."""
    after = dict((n, dict(e)) for n, e in before.items())
    changed = []
    for name, state, given in wanted:
        if state == "absent":
            if name in after:
                del after[name]
                changed.append(name)
            continue
        if name not in after:
            if "type" not in given:
                raise SgeAdminError("attributes: %s is a new complex attribute; give its type" % name)
            entry = complex_defaults(given["type"])
            entry["shortcut"] = name
            entry.update(given)
            entry["extra"] = []
            after[name] = entry
            changed.append(name)
            continue
        current = after[name]
        differing = dict((f, v) for f, v in given.items() if not complex_same(f, current[f], v))
        if differing:
            current.update(differing)
            changed.append(name)
    return after, changed


def _public(entries, names):
    return dict((n, dict((f, entries[n][f]) for f in COMPLEX_FIELDS)) for n in names if n in entries)


def run(module, admin):
    label = "complex list"
    wanted = wanted_attributes(module.params["attributes"])
    names = [n for n, _s, _g in wanted]
    before = _read(admin, label)
    after, changed = plan(before, wanted)
    if changed:
        admin.change_with_text(label, "-Mc", render_complexes(after))
        if not module.check_mode:
            stored = _read(admin, label)
            for name, state, given in wanted:
                if state == "absent" and name in stored:
                    raise SgeAdminError("%s: %s is still there after qconf -Mc reported success" % (label, name))
                if state == "present" and name not in stored:
                    raise SgeAdminError("%s: %s is not there after qconf -Mc reported success" % (label, name))
                for field, value in sorted(given.items()):
                    if state == "present" and not complex_same(field, stored[name][field], value):
                        warn_stored(module, label, "%s of %s" % (field, name), value, stored[name][field])
            after = stored
    result = dict(changed=bool(admin.commands), attributes=_public(after, names), commands=admin.commands)
    return with_diff(module, result, complex_text(changed, before), complex_text(changed, after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    wanted_attributes(params["attributes"])


def main():
    argument_spec = sge_argument_spec(
        attributes=dict(type="list", elements="dict", required=True, options=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            shortcut=dict(type="str"),
            type=dict(type="str"),
            relop=dict(type="str"),
            requestable=dict(type="raw"),
            consumable=dict(type="raw"),
            default=dict(type="raw"),
            urgency=dict(type="raw"),
        )),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
