#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_host_list
short_description: Add hosts to or remove them from the Grid Engine admin or submit host list
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Makes sure that hosts are, or are not, on Grid Engine's administrative host list
    (C(qconf -sh), C(-ah), C(-dh)) or submit host list (C(qconf -ss), C(-as), C(-ds)).
  - Reads the list first and runs a command only for a host whose entry differs, one host per
    command, so hosts of the list that are not named are never touched. Host names are compared
    as Grid Engine compares them (case-insensitively; a short name matches a qualified one).
  - The list is read again after a change; RV(hosts), C(changed) and the diff show what Grid
    Engine stored.
  - Execution hosts are registered with M(gridengine.balancer.sge_exec_host).
options:
  list:
    description:
      - Which host list. V(admin) is the administrative host list (hosts that may run C(qconf)),
        V(submit) the submit host list (hosts that may run C(qsub)).
    type: str
    choices: [admin, submit]
    required: true
  host:
    description:
      - Host name, or a list of host names (RFC 1123 labels separated by dots), as the qmaster
        resolves them. A name that is not a host name, or is one of the words Grid Engine reads
        as a keyword (V(all), V(global), V(template)), fails the module before anything runs.
    type: list
    elements: str
    required: true
    aliases: [hosts, name]
  state:
    description:
      - V(present) adds each host not on the list (C(qconf -ah HOST) or C(-as HOST)).
      - V(absent) removes each host on the list (C(qconf -dh HOST) or C(-ds HOST)). The qmaster
        host (C($SGE_ROOT/$SGE_CELL/common/act_qmaster)) cannot leave the administrative host
        list (Grid Engine refuses); asking for it fails the module before anything changes.
    type: str
    choices: [present, absent]
    default: present
  resolve_timeout:
    description:
      - Seconds to keep retrying C(qconf -ah)/C(-as) while the qmaster answers C(can't resolve
        hostname) (it caches a failed lookup for about a minute). C(0) does not retry.
    type: int
    default: 90
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - The host name must resolve on the qmaster when it is added.
seealso:
  - module: gridengine.balancer.sge_exec_host
  - name: Grid Engine qconf(1)
    description: Manual page of the command the module runs.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qconf.html
"""

EXAMPLES = r"""
- name: Let the login node submit jobs
  gridengine.balancer.sge_host_list:
    list: submit
    host: login01

- name: Make two hosts administrative hosts
  gridengine.balancer.sge_host_list:
    list: admin
    host: [node001, node002]

- name: Take a host off the submit host list
  gridengine.balancer.sge_host_list:
    list: submit
    host: oldlogin
    state: absent
"""

RETURN = r"""
list:
  description: The list, V(admin) or V(submit).
  returned: always
  type: str
  sample: submit
hosts:
  description:
    - The whole list after the run (in check mode, the list the run would leave), as Grid
      Engine prints it.
  returned: always
  type: list
  elements: str
  sample: [vm, login01]
commands:
  description: The commands that added the hosts to the list or removed them (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -as login01"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_access import (
    NAME_LISTS,
    RESERVED_HOSTS,
    apply_list,
    find_host,
    lines_text,
    qmaster_host,
    unique,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    check_names,
    run_admin,
    same_host,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec


def _same_list(a, b):
    return (len(a) == len(b) and all(find_host(h, b) is not None for h in a)
            and all(find_host(h, a) is not None for h in b))


def run(module, admin):
    which = module.params["list"]
    hosts = unique(module.params["host"], same_host)
    label, show, add, delete = NAME_LISTS[which]

    def refuse(before):
        if which != "admin":
            return
        master = qmaster_host(admin)
        refused = [h for h in hosts if master and same_host(h, master)
                   and find_host(h, before) is not None]
        if refused:
            raise SgeAdminError(
                "%s: %s is the qmaster host (act_qmaster); Grid Engine keeps it an "
                "administrative host, so nothing was changed" % (label, refused[0]))

    before, after = apply_list(module, admin, label, (show, add, delete), hosts, find_host, refuse,
                               resolve_timeout=max(module.params["resolve_timeout"], 0))
    if admin.commands and not module.check_mode and module.params["state"] == "present":
        missing = [h for h in hosts if find_host(h, after) is None]
        if missing:
            module.warn("%s: %s not found under the given name after qconf %s (an alias?); "
                        "give names as qconf %s prints them"
                        % (label, ", ".join(missing), add, show))

    changed = bool(admin.commands) if module.check_mode else not _same_list(before, after)
    result = dict(changed=changed, list=which, hosts=after, commands=admin.commands)
    return with_diff(module, result, lines_text(before), lines_text(after), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    check_names("host", params["host"], "host")
    for host in params["host"]:
        if host.lower() in RESERVED_HOSTS:
            raise SgeAdminError("host: %r is a word Grid Engine reads as a keyword, not a "
                                "host name" % host)


def main():
    argument_spec = sge_argument_spec(
        list=dict(type="str", choices=["admin", "submit"], required=True),
        host=dict(type="list", elements="str", required=True, aliases=["hosts", "name"]),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        resolve_timeout=dict(type="int", default=90),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
