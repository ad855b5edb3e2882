#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_exec_host
short_description: Register or remove a Grid Engine execution host
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Registers a host with the qmaster as an administrative host (C(qconf -ah)), an execution
    host (C(qconf -Ae FILE)) and optionally a submit host (C(qconf -as)), or removes it again.
    Reads the lists first (C(qconf -sh), C(-sel), C(-ss)) and changes only what differs.
  - O(complex_values) of an existing execution host are compared with C(qconf -se) and changed
    with C(qconf -Me FILE). C(qconf -ae)/C(-me) start an editor and are never used. Object files
    are private temporary files (mode 0600), removed afterwards.
  - The qmaster caches failed host name lookups for about a minute, so a node name that is
    added soon after it failed to resolve (or soon after it was removed) fails with
    C(can't resolve hostname). The module retries C(qconf -ah), C(-Ae) and C(-as) for up to
    O(resolve_timeout) seconds. The load balancer avoids such names, as it does not give a new node
    the name of one removed less than C(name_reuse_time) seconds ago
    (M(gridengine.balancer.elastic_plan), filter C(gridengine.balancer.next_node_names)).
  - O(state=absent) first looks for jobs on the host with C(qstat -u '*' -s rs -g t -xml), that
    is any job that is not pending (running, transferring, suspended, being deleted) with its
    master or a slave task in a queue instance of the host. It refuses while there is one,
    naming the job numbers, and changes nothing, as C(qconf -ke) would kill them.
    O(force=true) removes the host anyway, with a warning naming them.
  - O(state=absent) refuses while the host is still a member of a host group or named in a
    cluster queue's C(hostlist) (C(qconf -de) would fail), naming them; with
    O(purge_references=true) it removes it from them first (C(qconf -dattr)) and also purges
    the queues' per-host values for it (C(qconf -purge queue '*' queue@host)), which would
    otherwise apply again to a new host of the same name. Then it stops the host's execd with
    C(qconf -ke) when the qmaster has load values from it (C(qhost -h HOST -xml)), and removes
    it with C(qconf -de), C(qconf -dh) and, for a submit host, C(qconf -ds). The qmaster host
    itself (C($SGE_ROOT/$SGE_CELL/common/act_qmaster)) stays an administrative host, as Grid
    Engine requires.
options:
  name:
    description:
      - Host name (RFC 1123 labels separated by dots), as the qmaster resolves it.
      - Nothing runs when it is not a valid host name.
    type: str
    required: true
  state:
    description:
      - V(present) registers the host, V(absent) removes every registration.
    type: str
    choices: [present, absent]
    default: present
  admin_host:
    description:
      - With O(state=present), V(true) makes sure that the host is an administrative host
        (C(qconf -ah)). V(false) leaves its administrative host entry as it is.
    type: bool
    default: true
  submit_host:
    description:
      - With O(state=present), V(true) makes sure that the host is a submit host (C(qconf -as)).
        V(false) leaves its submit host entry as it is (it is never removed by
        O(state=present); O(state=absent) removes it).
    type: bool
    default: false
  complex_values:
    description:
      - Complex values of the execution host (C(complex_values) in host_conf(5)), as a dictionary
        of complex name to value, for example C(slots) to C(4) and C(h_vmem) to C(8G).
      - When given, the host's list is made exactly this (an empty dictionary gives C(NONE)).
        When not given, the current list is kept (and a new host gets C(NONE)).
      - Names are complex names (letters, digits, V(_), V(.), V(-), starting with a letter or V(_));
        values are single values without white space, commas, brackets or control characters.
        Anything else fails the module, naming the entry, before anything runs.
    type: dict
  complex_values_mode:
    description:
      - How O(complex_values) applies to the host's list.
      - V(exact) makes the list exactly O(complex_values).
      - V(add) adds or corrects the entries named and keeps every other entry.
      - V(remove) takes off the entries whose names are given (their values are not compared)
        and keeps every other entry.
    type: str
    choices: [exact, add, remove]
    default: exact
  purge_references:
    description:
      - With O(state=absent), remove the host from every host group and queue C(hostlist) that
        names it, and purge the per-host queue values kept for it, instead of failing.
    type: bool
    default: false
  force:
    description:
      - With O(state=absent), remove the host even when jobs still run on it (their tasks on the
        host are killed with its execd), or when C(qstat) cannot tell; a warning names them.
      - V(false) refuses, naming the job numbers, before anything is changed. Drain the host first.
    type: bool
    default: false
  resolve_timeout:
    description:
      - Seconds to keep retrying C(qconf -ah), C(-Ae) and C(-as) while the qmaster answers
        C(can't resolve hostname). C(0) does not retry.
    type: int
    default: 90
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - The host name must resolve on the qmaster (and back to the same name).
  - It does not wait for jobs to end. Drain the host first (M(gridengine.balancer.sge_queue)
    with O(gridengine.balancer.sge_queue#module:instance_state=disabled), then wait until
    C(qstat) shows no job on it); with jobs on it O(state=absent) fails unless O(force=true).
  - The read-only C(qstat) runs in check mode too, so a removal that would be refused fails
    in check mode as well.
seealso:
  - module: gridengine.balancer.sge_hostgroup
  - module: gridengine.balancer.sge_queue
  - name: Grid Engine host_conf(5)
    description: The execution host attributes.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/host_conf.html
"""

EXAMPLES = r"""
- name: Register a new node (admin and execution host)
  gridengine.balancer.sge_exec_host:
    name: node003

- name: Register a node that may also submit jobs, with 4 slots
  gridengine.balancer.sge_exec_host:
    name: node004
    submit_host: true
    complex_values:
      slots: 4

- name: Offer remote=FALSE on every host (the global host), keeping the site's other values
  gridengine.balancer.sge_exec_host:
    name: global
    complex_values:
      remote: "FALSE"
    complex_values_mode: add

- name: Remove a drained node, taking it out of host groups and queues first
  gridengine.balancer.sge_exec_host:
    name: node003
    state: absent
    purge_references: true

- name: Remove a dead node whose lost jobs are still listed (kills what is left of them)
  gridengine.balancer.sge_exec_host:
    name: node004
    state: absent
    purge_references: true
    force: true
"""

RETURN = r"""
name:
  description: The host name.
  returned: always
  type: str
  sample: node003
admin_host:
  description: Whether the host is an administrative host after the run; in check mode, would be.
  returned: always
  type: bool
  sample: true
exec_host:
  description: Whether the host is an execution host after the run; in check mode, would be.
  returned: always
  type: bool
  sample: true
submit_host:
  description: Whether the host is a submit host after the run; in check mode, would be.
  returned: always
  type: bool
  sample: false
complex_values:
  description: The execution host's complex values after the run, as C(name=value) pairs.
  returned: always
  type: dict
  sample: {"slots": "4"}
references:
  description:
    - With O(state=absent), the host groups and cluster queues that named the host, as
      C(hostgroups) and C(queues) lists; C(overrides) lists the queues with per-host values
      for it.
  returned: when O(state=absent)
  type: dict
  sample: {"hostgroups": ["@allhosts"], "queues": [], "overrides": ["all.q"]}
jobs:
  description:
    - With O(state=absent) for an execution host, the numbers of the jobs found with a task on
      the host (empty when it was idle). Only with O(force=true) can a removal go on with jobs
      here. Not returned when O(force=true) and C(qstat) failed (a warning says so).
    - Also returned, naming those jobs, when the removal was refused because of jobs on the host
      (the task failed).
  returned: when O(state=absent) and the host was an execution host
  type: list
  elements: int
  sample: []
commands:
  description: The commands that registered, changed or removed the execution host (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -ah node003", "qconf -Ae FILE"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    EXEC_HOST_ATTRIBUTES,
    EXEC_HOST_TEMPLATE,
    OBJECT_NAME_RE,
    OBJECT_NAME_RULE,
    SgeAdminError,
    check_names,
    find_member,
    parse_pairs,
    run_admin,
    same_host,
    same_value,
    split_list,
    split_value,
    to_sge_value,
    value_error,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec


# the global host: its complex_values apply to every host (host_conf(5))
GLOBAL_HOST = "global"


def _pairs_text(pairs):
    if not pairs:
        return "NONE"
    return ",".join("%s=%s" % (k, pairs[k]) for k in sorted(pairs))


def _wanted_complex_values(values):
    if values is None:
        return None
    wanted = {}
    for key in sorted(values):
        if not isinstance(key, str) or not OBJECT_NAME_RE.match(key):
            raise SgeAdminError("complex_values: %r is not a complex name (%s)" % (key, OBJECT_NAME_RULE))
        text = to_sge_value("complex_values", values[key])
        msg = value_error("complex_values.%s" % key, text)
        if msg or text == "NONE" or any(c in text for c in ",[]") or any(c.isspace() for c in text):
            raise SgeAdminError(msg or "complex_values.%s: %r is not a single value" % (key, text))
        wanted[key] = text
    return wanted


def _merged_complex_values(current, given, mode):
    """The list ``mode`` makes of the ``current`` entries and the ``given`` ones (None: keep)."""
    if given is None or mode == "exact":
        return given
    if mode == "add":
        merged = dict(current)
        for key, value in given.items():
            if key not in merged or not same_value("complex_values", merged[key], value):
                merged[key] = value
        return merged
    return dict((k, v) for k, v in current.items() if k not in given)


def _same_pairs(a, b):
    return set(a) == set(b) and all(same_value("complex_values", a[k], b[k]) for k in a)


def _state_text(name, reg):
    if not any((reg["admin_host"], reg["exec_host"], reg["submit_host"])):
        return ""
    lines = ["hostname %s" % name,
             "admin_host %s" % ("yes" if reg["admin_host"] else "no"),
             "exec_host %s" % ("yes" if reg["exec_host"] else "no"),
             "submit_host %s" % ("yes" if reg["submit_host"] else "no")]
    if reg["exec_host"]:
        lines.append("complex_values %s" % _pairs_text(reg["complex_values"]))
    for key in ("hostgroups", "queues"):
        if reg.get(key):
            lines.append("%s %s" % (key, " ".join(reg[key])))
    return "\n".join(lines) + "\n"


def _registration(admin, label, name):
    """Current registration of ``name``: lists, canonical name, exec host object."""
    if name == GLOBAL_HOST:
        # not in -sh/-sel/-ss; its object always exists
        obj = admin.show_object(label, "-se", GLOBAL_HOST)
        if obj is None:
            raise SgeAdminError("%s: qconf -se global showed no object" % label)
        return {"names": {"exec_host": GLOBAL_HOST}, "admin_host": False, "exec_host": True,
                "submit_host": False, "object": obj,
                "complex_values": parse_pairs(obj.get("complex_values", "NONE"))}
    lists = {
        "admin_host": admin.show_list(label, "-sh"),
        "exec_host": admin.show_list(label, "-sel"),
        "submit_host": admin.show_list(label, "-ss"),
    }
    reg = {"names": {}}
    for key, names in lists.items():
        match = [n for n in names if same_host(n, name)]
        reg[key] = bool(match)
        if match:
            reg["names"][key] = match[0]
    reg["object"] = None
    reg["complex_values"] = {}
    if reg["exec_host"]:
        obj = admin.show_object(label, "-se", reg["names"]["exec_host"])
        if obj is None:
            reg["exec_host"] = False
        else:
            reg["object"] = obj
            reg["complex_values"] = parse_pairs(obj.get("complex_values", "NONE"))
    return reg


def _is_qmaster(admin, host):
    """True when ``host`` is named in ``$SGE_ROOT/$SGE_CELL/common/act_qmaster``."""
    path = os.path.join(admin.root, admin.cell, "common", "act_qmaster")
    try:
        with open(path) as handle:
            master = handle.read().strip()
    except (IOError, OSError):
        return False
    return bool(master) and same_host(master, host)


def _references(admin, label, host):
    groups = []
    for group in admin.show_list(label, "-shgrpl"):
        obj = admin.show_object(label, "-shgrp", group)
        if obj is not None:
            member = find_member(host, split_list(obj.get("hostlist", "NONE")))
            if member is not None:
                groups.append((group, member))
    queues = []
    overrides = []
    for queue in admin.show_list(label, "-sql"):
        obj = admin.show_object(label, "-sq", queue)
        if obj is None:
            continue
        member = find_member(host, split_list(obj.get("hostlist", "NONE")))
        if member is not None:
            queues.append((queue, member))
        for attr, value in obj.items():
            if attr in ("qname", "hostlist"):
                continue
            hits = [h for h, _v in split_value(value)[1] if not h.startswith("@")
                    and same_host(h, host)]
            if hits:
                overrides.append((queue, hits[0]))
                break
    return groups, queues, overrides


def present(module, admin, label, name, before):
    p = module.params
    timeout = max(p["resolve_timeout"], 0)
    wanted_cv = _merged_complex_values(before["complex_values"],
                                       _wanted_complex_values(p["complex_values"]),
                                       p["complex_values_mode"])
    after = dict(before)
    after["names"] = dict(before["names"])
    if p["admin_host"] and not before["admin_host"] and name != GLOBAL_HOST:
        admin.change(label, "qconf", ["-ah", name], resolve_timeout=timeout)
        after["admin_host"] = True
    if not before["exec_host"]:
        obj = dict(EXEC_HOST_TEMPLATE)
        obj["hostname"] = name
        obj["complex_values"] = _pairs_text(wanted_cv or {})
        admin.change_with_file(label, "-Ae", obj, resolve_timeout=timeout)
        after["exec_host"] = True
        after["complex_values"] = dict(wanted_cv or {})
    elif wanted_cv is not None and not _same_pairs(before["complex_values"], wanted_cv):
        current = before["object"]
        obj = dict((k, current.get(k, "NONE")) for k in EXEC_HOST_ATTRIBUTES)
        obj["complex_values"] = _pairs_text(wanted_cv)
        admin.change_with_file(label, "-Me", obj)
        after["complex_values"] = dict(wanted_cv)
    if p["submit_host"] and not before["submit_host"]:
        admin.change(label, "qconf", ["-as", name], resolve_timeout=timeout)
        after["submit_host"] = True
    return after, wanted_cv


def _jobs_text(jobs, limit=20):
    shown = ", ".join(str(j) for j in jobs[:limit])
    if len(jobs) > limit:
        shown += " and %d more" % (len(jobs) - limit)
    return shown


class _JobsOnHost(SgeAdminError):
    """The refusal to remove a host with jobs; the failure result names them (``jobs``)."""

    def __init__(self, jobs, message):
        super(_JobsOnHost, self).__init__(message)
        self.fail_result = {"jobs": jobs}


def _check_jobs(module, admin, label, exec_name):
    """Job numbers on the host; refuses (SgeAdminError) while there are any, unless force."""
    force = module.params["force"]
    try:
        jobs = admin.jobs_on_host(label, exec_name)
    except SgeAdminError as exc:
        if not force:
            raise SgeAdminError(
                "%s; cannot tell whether jobs still run on the host, so nothing was changed "
                "(force=true removes it without knowing)" % exc)
        module.warn("%s; cannot tell whether jobs still run on the host; removing it anyway "
                    "(force=true)" % exc)
        return None
    if jobs and not force:
        raise _JobsOnHost(
            jobs,
            "%s still has %d job(s) running, transferring or suspended: %s (qstat -u '*' -s rs "
            "-g t); removing it would kill them (qconf -ke), so nothing was changed. Drain it "
            "first (disable its queue instances, wait for the jobs to end) or set force=true"
            % (label, len(jobs), _jobs_text(jobs)))
    if jobs:
        module.warn("%s: removing it with %d job(s) on it (force=true): %s; their tasks on the "
                    "host are killed" % (label, len(jobs), _jobs_text(jobs)))
    return jobs


def absent(module, admin, label, name, before, result):
    after = dict(before, admin_host=False, exec_host=False, submit_host=False, complex_values={})
    groups, queues, overrides = ([], [], [])
    if before["exec_host"]:
        # first, before anything changes: a host with jobs is not removed (unless force)
        jobs = _check_jobs(module, admin, label, before["names"]["exec_host"])
        if jobs is not None:
            result["jobs"] = jobs
        groups, queues, overrides = _references(admin, label, name)
    result["references"] = dict(hostgroups=[g for g, _m in groups], queues=[q for q, _m in queues],
                                overrides=[q for q, _m in overrides])
    before["hostgroups"] = result["references"]["hostgroups"]
    before["queues"] = result["references"]["queues"]
    if (groups or queues) and not module.params["purge_references"]:
        named = ["host group %s" % g for g, _m in groups] + \
                ["the hostlist of cluster queue %s" % q for q, _m in queues]
        raise SgeAdminError(
            "%s is still referenced by %s; Grid Engine refuses to delete it. Remove it there "
            "first (gridengine.balancer.sge_hostgroup mode=remove, gridengine.balancer.sge_queue) "
            "or set purge_references=true" % (label, ", ".join(named)))
    if overrides and not module.params["purge_references"]:
        module.warn(
            "%s keeps per-host values in cluster queue(s) %s; they apply again to a new host "
            "of this name (purge_references=true removes them)"
            % (label, ", ".join(q for q, _m in overrides)))
    for group, member in groups:
        admin.change(label, "qconf", ["-dattr", "hostgroup", "hostlist", member, group])
    for queue, member in queues:
        admin.change(label, "qconf", ["-dattr", "queue", "hostlist", member, queue])
    if module.params["purge_references"]:
        for queue, member in overrides:
            admin.change(label, "qconf", ["-purge", "queue", "*", "%s@%s" % (queue, member)])
    if before["exec_host"]:
        exec_name = before["names"]["exec_host"]
        if admin.execd_reporting(label, exec_name):
            try:
                admin.change(label, "qconf", ["-ke", exec_name])
            except SgeAdminError as exc:
                text = getattr(exc, "output", "")
                if "no execd known on host" not in text and "failed sending" not in text:
                    raise
                module.warn(
                    "%s: execd was not reachable (%s); removing the host anyway" % (label, text))
        admin.change(label, "qconf", ["-de", exec_name])
    if before["admin_host"]:
        if _is_qmaster(admin, before["names"]["admin_host"]):
            # Grid Engine refuses: "denied: can't delete master host ... from admin host list"
            module.warn("%s is the qmaster host (act_qmaster); it stays an administrative host"
                        % label)
            after["admin_host"] = True
        else:
            admin.change(label, "qconf", ["-dh", before["names"]["admin_host"]])
    if before["submit_host"]:
        admin.change(label, "qconf", ["-ds", before["names"]["submit_host"]])
    return after


def run(module, admin):
    name = module.params["name"]
    label = "exec host %s" % name
    result = {}
    if module.params["state"] == "present":
        # validate complex_values before anything runs
        _wanted_complex_values(module.params["complex_values"])
    if name == GLOBAL_HOST:
        if module.params["state"] == "absent":
            raise SgeAdminError("%s cannot be removed: Grid Engine's global host always exists "
                                "(remove its entries with complex_values_mode=remove)" % label)
        if module.params["submit_host"]:
            raise SgeAdminError("%s: the global host cannot be a submit host" % label)
    before = _registration(admin, label, name)
    if module.params["state"] == "present":
        after, wanted_cv = present(module, admin, label, name, before)
        if admin.commands and not module.check_mode:
            after = _registration(admin, label, name)
            if wanted_cv is not None and not _same_pairs(after["complex_values"], wanted_cv):
                module.warn(
                    "%s: complex_values given as %s; Grid Engine stored %s"
                    % (label, _pairs_text(wanted_cv), _pairs_text(after["complex_values"])))
    else:
        after = absent(module, admin, label, name, before, result)
    result.update(
        changed=bool(admin.commands),
        name=name,
        admin_host=after["admin_host"],
        exec_host=after["exec_host"],
        submit_host=after["submit_host"],
        complex_values=after["complex_values"],
        commands=admin.commands,
    )
    return with_diff(module, result, _state_text(name, before), _state_text(name, after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    check_names("host", [params["name"]], "name")


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        admin_host=dict(type="bool", default=True),
        submit_host=dict(type="bool", default=False),
        complex_values=dict(type="dict"),
        complex_values_mode=dict(type="str", choices=["exact", "add", "remove"], default="exact"),
        purge_references=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        resolve_timeout=dict(type="int", default=90),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
