#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_hostgroup
short_description: Manage a Grid Engine host group and its members
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Creates, changes and deletes a Grid Engine host group (C(qconf -shgrp)) and reports
    truthfully what changed, with the host list before and after as the diff.
  - O(mode=add) adds each missing host with C(qconf -aattr hostgroup hostlist HOST GROUP) and
    O(mode=remove) removes each listed member with C(qconf -dattr hostgroup hostlist HOST GROUP).
    These are single-member operations done by the qmaster, so several plays adding or removing
    hosts of the same group at the same time (node_join/node_leave with many forks) cannot lose
    each other's changes, as a read-modify-write of the whole list would.
  - O(mode=exact) replaces the whole list from a file with C(qconf -Mhgrp FILE); a new group is
    created with C(qconf -Ahgrp FILE). C(qconf -ahgrp)/C(-mhgrp) start an editor and are never
    used. Object files are private temporary files (mode 0600), removed afterwards.
  - The group is read again after a change; RV(hosts), C(changed) and the diff show what Grid
    Engine stored, not what was asked for.
options:
  name:
    description:
      - Name of the host group, with its C(@), for example C(@allhosts).
      - Must match C(^@[A-Za-z0-9_.-]+$); nothing runs otherwise.
    type: str
    required: true
  hosts:
    description:
      - Host names (RFC 1123) or other host groups (C(@name)) to ensure as members, to remove,
        or to set, depending on O(mode).
      - Give the names as Grid Engine prints them (C(qconf -shgrp)). Host names are compared
        like Grid Engine does (case-insensitively; a short name matches a qualified one).
      - Required with O(mode=exact), where an empty list empties the group (C(hostlist NONE)).
        With O(mode=add) or O(mode=remove), not giving it changes no member.
    type: list
    elements: str
  mode:
    description:
      - V(add) ensures that the listed hosts are members and leaves the others.
      - V(remove) ensures that the listed hosts are not members and leaves the others.
      - V(exact) makes the listed hosts the only members (an empty list gives C(hostlist NONE)).
    type: str
    choices: [add, remove, exact]
    default: add
  state:
    description:
      - V(present) creates the group when it does not exist (with the members O(mode) asks for).
      - V(absent) deletes it with C(qconf -dhgrp); O(hosts) and O(mode) are ignored. Grid
        Engine refuses while a cluster queue or another group still references it, so the
        module first reads the queues (C(hostlist) and per-host values) and the other groups and
        fails naming those that use it, in check mode too.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - Grid Engine resolves host names when they are added; a name that does not resolve on the
    qmaster fails with C(unable to resolve host).
  - In check mode, a host given under another name than Grid Engine stores (an alias) is
    predicted as a change although Grid Engine would find it already there.
seealso:
  - module: gridengine.balancer.sge_queue
  - module: gridengine.balancer.sge_exec_host
  - name: Grid Engine qconf(1)
    description: Manual page of the command the module runs.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qconf.html
"""

EXAMPLES = r"""
- name: Add a new node to @allhosts
  gridengine.balancer.sge_hostgroup:
    name: "@allhosts"
    hosts:
      - node003

- name: Take a drained node out of @allhosts
  gridengine.balancer.sge_hostgroup:
    name: "@allhosts"
    hosts: [node003]
    mode: remove

- name: Exactly these members
  gridengine.balancer.sge_hostgroup:
    name: "@gpu"
    hosts: [node001, node002]
    mode: exact

- name: Delete a group no queue uses any more
  gridengine.balancer.sge_hostgroup:
    name: "@old"
    state: absent
"""

RETURN = r"""
name:
  description: Name of the host group.
  returned: always
  type: str
  sample: "@allhosts"
hosts:
  description:
    - Members after the run (in check mode, the members the run would leave), as Grid Engine
      prints them. Empty when the group does not exist.
  returned: always
  type: list
  elements: str
  sample: [vm, node001, node002]
commands:
  description: The commands that created, changed or deleted the host group (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -aattr hostgroup hostlist node003 @allhosts"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    find_member,
    name_and_hosts_check,
    run_admin,
    split_list,
    split_value,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec


def _object_text(name, members):
    if members is None:
        return ""
    return "group_name %s\nhostlist %s\n" % (name, " ".join(members) if members else "NONE")


def _read(admin, label, name):
    obj = admin.show_object(label, "-shgrp", name)
    if obj is None:
        return None
    return split_list(obj.get("hostlist", "NONE"))


def _users(admin, label, name):
    """Cluster queues (hostlist or per-host values) and host groups that name group ``name``."""
    users = []
    for queue in admin.show_list(label, "-sql"):
        obj = admin.show_object(label, "-sq", queue)
        if obj is None:
            continue
        if name in split_list(obj.get("hostlist", "NONE")) or any(
                host == name for value in obj.values() for host, _v in split_value(value)[1]):
            users.append("cluster queue %s" % queue)
    for group in admin.show_list(label, "-shgrpl"):
        if group == name:
            continue
        members = _read(admin, label, group)
        if members and name in members:
            users.append("host group %s" % group)
    return users


def _unique(hosts):
    result = []
    for host in hosts:
        if find_member(host, result) is None:
            result.append(host)
    return result


def _same_members(a, b):
    if a is None or b is None:
        return a is b
    return (len(a) == len(b) and all(find_member(h, b) is not None for h in a)
            and all(find_member(h, a) is not None for h in b))


def run(module, admin):
    name = module.params["name"]
    hosts = _unique(module.params["hosts"] or [])
    mode = module.params["mode"]
    state = module.params["state"]
    label = "host group %s" % name

    before = _read(admin, label, name)
    after = before

    if state == "absent":
        if before is not None:
            users = _users(admin, label, name)
            if users:
                raise SgeAdminError(
                    "%s is still used by %s; Grid Engine refuses to delete it. Remove it there "
                    "first" % (label, ", ".join(users)))
            admin.change(label, "qconf", ["-dhgrp", name])
            after = None
    elif before is None:
        after = [] if mode == "remove" else hosts
        admin.change_with_file(label, "-Ahgrp", {"group_name": name,
                                                 "hostlist": " ".join(after) or "NONE"})
    elif mode == "add":
        after = list(before)
        for host in hosts:
            if find_member(host, after) is None:
                admin.change(label, "qconf", ["-aattr", "hostgroup", "hostlist", host, name])
                after.append(host)
    elif mode == "remove":
        after = list(before)
        for host in hosts:
            member = find_member(host, after)
            if member is not None:
                admin.change(label, "qconf", ["-dattr", "hostgroup", "hostlist", member, name])
                after.remove(member)
    else:
        if not _same_members(before, hosts):
            admin.change_with_file(label, "-Mhgrp", {"group_name": name,
                                                     "hostlist": " ".join(hosts) or "NONE"})
            after = list(hosts)

    if state == "present" and admin.commands and not module.check_mode:
        after = _read(admin, label, name)
        if after is None:
            raise SgeAdminError("%s: not found after qconf reported success" % label)
        if mode in ("add", "exact"):
            missing = [h for h in hosts if find_member(h, after) is None]
            if missing:
                module.warn(
                    "%s: Grid Engine stored the host list as %s; %s not found under the "
                    "given name (an alias?). Give names as qconf -shgrp prints them."
                    % (label, " ".join(after) or "NONE", ", ".join(missing)))

    changed = not _same_members(before, after) if not module.check_mode else bool(admin.commands)
    result = dict(
        changed=changed,
        name=name,
        hosts=after or [],
        commands=admin.commands,
    )
    return with_diff(module, result, _object_text(name, before), _object_text(name, after), label)


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        hosts=dict(type="list", elements="str"),
        mode=dict(type="str", choices=["add", "remove", "exact"], default="add"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[("mode", "exact", ["hosts"])])
    run_admin(module, run, name_and_hosts_check("hostgroup", "host_or_group"))


if __name__ == "__main__":
    main()
