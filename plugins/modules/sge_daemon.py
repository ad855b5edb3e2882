#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_daemon
short_description: Stop a Grid Engine execd or qmaster through the qmaster
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
description:
  - Stops the execution daemon of one host (C(qconf -ke HOST)) or the cell's qmaster
    (C(qconf -km)), and only when it is running, so a second run changes nothing.
  - "Whether an execd runs: the qmaster has load values from it (C(qhost -h HOST -xml); Grid
    Engine clears them when it sends the execd a stop) or, when it has none (just after a
    qmaster restart), the execd answers C(qping -info HOST PORT execd 1) within 20 seconds. The
    port is C(SGE_EXECD_PORT) of C(settings.sh), else the C(sge_execd) service, else 6445."
  - "Whether the qmaster runs: it answers C(qconf -sh). Grid Engine's answers when nothing
    listens on its port (C(Connection refused), C(unable to contact qmaster), C(unable to send
    message to qmaster)) mean it is not running; any other failure fails the module."
  - Only the daemon asked for is stopped. C(qconf -ke all) and C(qconf -kej) are never run; the
    host is one validated host name. With O(daemon=qmaster) and O(host), the qmaster is stopped
    only when C($SGE_ROOT/$SGE_CELL/common/act_qmaster) names that host.
  - The module does not wait for the daemon's process to end; the stop is a message the daemon
    acts on within seconds. Running jobs are not killed (execd leaves them running).
options:
  daemon:
    description:
      - V(execd) stops the execution daemon of O(host) through the qmaster.
      - V(qmaster) stops the cell's qmaster (and its scheduler thread).
    type: str
    choices: [execd, qmaster]
    required: true
  host:
    description:
      - Host whose daemon is stopped (RFC 1123 host name, as the qmaster knows it). Required
        with O(daemon=execd).
      - With O(daemon=qmaster), the host the qmaster is expected on; the module fails, stopping
        nothing, when C(act_qmaster) names another host (or cannot be read).
    type: str
  state:
    description:
      - V(stopped) is the only state; starting daemons is left to the roles that install them.
    type: str
    choices: [stopped]
    default: stopped
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - In check mode nothing is stopped; the result tells whether the daemon would be.
  - Stopping an execd needs the qmaster; when the qmaster does not answer, the module fails.
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
seealso:
  - module: gridengine.balancer.sge_exec_host
  - name: Grid Engine qping(1)
    description: How a daemon's status is asked for.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qping.html
"""

EXAMPLES = r"""
- name: Stop the execd of node003 (its running jobs go on)
  gridengine.balancer.sge_daemon:
    daemon: execd
    host: node003

- name: Stop the qmaster, but only if it runs on vm
  gridengine.balancer.sge_daemon:
    daemon: qmaster
    host: vm
"""

RETURN = r"""
daemon:
  description: The daemon, V(execd) or V(qmaster).
  returned: always
  type: str
  sample: execd
host:
  description: The host of the daemon (for the qmaster, the host C(act_qmaster) names, if any).
  returned: always
  type: str
  sample: node003
was_running:
  description: Whether the daemon was found running before the run.
  returned: always
  type: bool
  sample: true
seen_by:
  description:
    - How a running daemon was found, V(qhost) (load values at the qmaster), V(qping) (the
      execd answered) or V(qconf) (the qmaster answered); null when it was not running.
  returned: always
  type: str
  sample: qhost
commands:
  description:
    - The commands that changed the cluster; in check mode, those that would have run.
  returned: always
  type: list
  elements: str
  sample: ["qconf -ke node003"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_access import (
    RESERVED_HOSTS,
    execd_answers,
    qmaster_answers,
    qmaster_host,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    check_names,
    run_admin,
    same_host,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec


def _state_text(daemon, host, running):
    return "%s on %s: %s\n" % (daemon, host or "(unknown host)", "running" if running else "stopped")


def run(module, admin):
    daemon = module.params["daemon"]
    host = module.params["host"]
    if daemon == "execd":
        label = "execd on %s" % host
        running, seen_by = execd_answers(admin, label, host)
        if running:
            admin.change(label, "qconf", ["-ke", host])
    else:
        master = qmaster_host(admin)
        label = "qmaster of cell %s" % admin.cell
        if host is not None and (master is None or not same_host(master, host)):
            raise SgeAdminError(
                "%s: asked to stop it on %s, but %s; nothing was stopped"
                % (label, host, ("act_qmaster names %s" % master) if master
                   else "$SGE_ROOT/$SGE_CELL/common/act_qmaster cannot be read"))
        host = master or host
        running = qmaster_answers(admin, label)
        seen_by = "qconf" if running else None
        if running:
            admin.change(label, "qconf", ["-km"])
    result = dict(changed=running, daemon=daemon, host=host, was_running=running,
                  seen_by=seen_by, commands=admin.commands)
    return with_diff(module, result, _state_text(daemon, host, running), _state_text(daemon, host, False), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    host = params["host"]
    if host is not None:
        check_names("host", [host], "host")
        if host.lower() in RESERVED_HOSTS:
            raise SgeAdminError("host: %r is a word Grid Engine reads as a keyword (qconf -ke "
                                "all stops every execd), not a host name" % host)


def main():
    argument_spec = sge_argument_spec(
        daemon=dict(type="str", choices=["execd", "qmaster"], required=True),
        host=dict(type="str"),
        state=dict(type="str", choices=["stopped"], default="stopped"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[("daemon", "execd", ["host"])])
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
