#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_rqs
short_description: Per-host, per-project slot limits as a Grid Engine resource quota set
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Keeps one Grid Engine resource quota set (C(qconf -srqs NAME)) with one rule
    C(limit projects P hosts {h} to slots=n) per project and host, in the order given. This is
    how C(playbooks/fairshare.yml) enforces the allocation of the bank algorithm.
  - The set is written from a private temporary file (mode 0600) with C(qconf -Arqs FILE) when
    it does not exist and C(qconf -Mrqs FILE) when it differs; C(qconf -arqs)/C(-mrqs) start an
    editor and are never used. O(state=absent) deletes it with C(qconf -drqs NAME).
  - The set is read again after a change; C(changed) and the diff show what Grid Engine stored.
options:
  name:
    description:
      - Name of the resource quota set. Letters, digits, C(_ . -), not starting with a digit,
        C(.) or C(-).
    type: str
    required: true
  limits:
    description:
      - The rules, in order. Required with O(state=present); an empty list is refused (Grid
        Engine needs at least one rule).
    type: list
    elements: dict
    suboptions:
      project:
        description:
          - Grid Engine project (a service class), named as M(gridengine.balancer.sge_project) takes it
            (letters, digits, V(_), V(.), V(-), not starting with V(.) or V(-)).
        type: str
        required: true
      host:
        description: Execution host name as Grid Engine prints it (an RFC 1123 host name).
        type: str
        required: true
      slots:
        description: Slots the project may use on the host (0 or more).
        type: int
        required: true
  description:
    description:
      - Description stored with the set. No line breaks, other control characters or double quotes.
    type: str
    default: fair share by gridengine.balancer
  enabled:
    description: Whether Grid Engine applies the set.
    type: bool
    default: true
  state:
    description: V(present) creates or updates the set, V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Run it on the qmaster host or another admin host, as a Grid Engine manager.
  - A rule limits running jobs of the project on that host; jobs of other projects (or none)
    match no rule and are not limited by this set.
seealso:
  - module: gridengine.balancer.sge_queue_facts
  - name: sge_resource_quota(5)
    description: The resource quota set format.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/sge_resource_quota.html
"""

EXAMPLES = r"""
- name: Limit projects per host
  gridengine.balancer.sge_rqs:
    name: fairshare
    limits:
      - {project: alpha, host: node001, slots: 2}
      - {project: beta, host: node001, slots: 0}

- name: Remove the limits
  gridengine.balancer.sge_rqs:
    name: fairshare
    state: absent
"""

RETURN = r"""
name:
  description: Name of the resource quota set.
  returned: always
  type: str
  sample: fairshare
limits:
  description: Rule texts after the run (in check mode, those the run would leave); empty when the set does not exist.
  returned: always
  type: list
  elements: str
  sample: ["projects alpha hosts {node001} to slots=2"]
commands:
  description: The commands that added, changed or deleted the resource quota set (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Mrqs FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    CommandFailed,
    SgeAdminError,
    check_names,
    name_error,
    run_admin,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_access import object_error
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_rqs import (
    MISSING,
    RqsError,
    normal_description,
    parse_rqs,
    render_rqs,
    slot_rule,
)


def _read(admin, label, name):
    argv, rc, out, err = admin.run("qconf", ["-srqs", name])
    text = (out or "") + "\n" + (err or "")
    if rc != 0:
        if any(m in text for m in MISSING):
            return None
        raise CommandFailed("%s: qconf -srqs %s failed (rc %s): %s"
                            % (label, name, rc, " ".join(text.split())), rc, text)
    try:
        return parse_rqs(out)
    except RqsError as exc:
        raise SgeAdminError("%s: %s" % (label, exc))


def _text(name, obj):
    if obj is None:
        return ""
    return render_rqs(name, normal_description(obj["description"]), obj["enabled"],
                      obj["limits"])


def _same(a, b):
    if a is None or b is None:
        return a is b
    return (normal_description(a["description"]) == normal_description(b["description"])
            and bool(a["enabled"]) == bool(b["enabled"]) and a["limits"] == b["limits"])


def run(module, admin):
    p = module.params
    name = p["name"]
    label = "resource quota set %s" % name
    before = _read(admin, label, name)
    after = before
    if p["state"] == "absent":
        if before is not None:
            admin.change(label, "qconf", ["-drqs", name])
            after = None
    else:
        want = dict(name=name, description=p["description"], enabled=p["enabled"],
                    limits=[slot_rule(r["project"], r["host"], r["slots"]) for r in p["limits"]])
        if not _same(before, want):
            text = render_rqs(name, want["description"], want["enabled"], want["limits"])
            admin.change_with_text(label, "-Arqs" if before is None else "-Mrqs", text)
            after = want
        if admin.commands and not module.check_mode:
            after = _read(admin, label, name)
            if after is None:
                raise SgeAdminError("%s: not found after qconf reported success" % label)
    changed = bool(admin.commands) if module.check_mode else not _same(before, after)
    result = dict(changed=changed, name=name, commands=admin.commands,
                  limits=list(after["limits"]) if after else [])
    return with_diff(module, result, _text(name, before), _text(name, after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    msg = name_error("object", params["name"], "name")
    if msg:
        raise SgeAdminError(msg)
    limits = params["limits"] or []
    if params["state"] == "present" and not limits:
        raise SgeAdminError("limits: give at least one rule (Grid Engine refuses an empty "
                            "resource quota set)")
    for n, rule in enumerate(limits):
        msg = object_error(rule["project"], "limits[%d].project" % n, "project")
        if msg:
            raise SgeAdminError(msg)
        check_names("host", [rule["host"]], "limits[%d].host" % n)
        if rule["slots"] < 0:
            raise SgeAdminError("limits[%d].slots: must be >= 0, got %d"
                                % (n, rule["slots"]))
    description = params["description"] or ""
    if '"' in description or any(ord(ch) < 32 or ord(ch) == 127 for ch in description):
        raise SgeAdminError("description: no line breaks, other control characters or double quotes")


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        limits=dict(type="list", elements="dict", options=dict(
            project=dict(type="str", required=True),
            host=dict(type="str", required=True),
            slots=dict(type="int", required=True),
        )),
        description=dict(type="str", default="fair share by gridengine.balancer"),
        enabled=dict(type="bool", default=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[("state", "present", ["limits"])])
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
