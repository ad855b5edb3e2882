#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_sched_conf
short_description: Set parameters of the Grid Engine scheduler configuration
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Sets the parameters given in O(parameters) in Grid Engine's scheduler configuration
    (sched_conf(5)); every other parameter keeps its value.
  - The configuration is read with C(qconf -ssconf). When a given parameter differs, the whole
    configuration as read, with the differing parameters replaced, is written back with
    C(qconf -Msconf FILE) from a private temporary file (mode 0600, removed afterwards).
    C(qconf -msconf) starts an editor and is never used.
  - The configuration is read again after a change; RV(parameters) and the diff show what Grid
    Engine stored.
options:
  parameters:
    description:
      - Parameters to set, named as C(qconf -ssconf) prints them, for example
        C(schedule_interval), C(maxujobs), C(weight_tickets_share), C(params). A name the
        configuration does not have is an error, naming the known ones.
      - Booleans are written C(TRUE)/C(FALSE), null and empty values C(NONE), lists joined with
        commas, dictionaries as C(name=value,...).
      - Values are compared the way Grid Engine means them (C(0:0:15)/C(15), C(0.25)/C(0.250000),
        C(none)/C(NONE)). When Grid Engine stores a value in another form than given, the module
        warns.
    type: dict
    required: true
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - C(qconf -Msconf) replaces the whole configuration. Another change made between this module's
    read and its write is lost.
seealso:
  - module: gridengine.balancer.sge_conf
  - name: Grid Engine sched_conf(5)
    description: The scheduler configuration parameters.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/sched_conf.html
"""

EXAMPLES = r"""
- name: Schedule every second (test clusters)
  gridengine.balancer.sge_sched_conf:
    parameters:
      schedule_interval: "0:0:1"

- name: Share-tree tickets and job information for qstat -j
  gridengine.balancer.sge_sched_conf:
    parameters:
      weight_tickets_share: 10000
      schedd_job_info: true
"""

RETURN = r"""
parameters:
  description:
    - The parameters given in O(parameters), as Grid Engine prints them after the run (in check
      mode, as they would be).
  returned: always
  type: dict
  sample: {"schedule_interval": "0:0:1"}
commands:
  description: The commands that changed the scheduler configuration (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Msconf FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    parse_object,
    render_object,
    render_text,
    run_admin,
    warn_stored,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_objects import (
    checked_parameters,
    same,
)

# sched_conf keys padded as qconf -ssconf prints them (34 columns before the value)
KEY_WIDTH = 33


def run(module, admin):
    label = "scheduler configuration"
    given = checked_parameters(module.params["parameters"], "parameters")
    current = parse_object(admin.read(label, "qconf", ["-ssconf"]))
    unknown = [k for k in given if k not in current]
    if unknown:
        raise SgeAdminError("parameters: %s not in the scheduler configuration (sched_conf(5)); known: %s"
                            % (", ".join(repr(k) for k in unknown), ", ".join(current)))
    differing = dict((k, v) for k, v in given.items() if not same(k, current[k], v))
    result_parameters = dict((k, current[k]) for k in given)
    result_parameters.update(differing)
    if differing:
        obj = dict(current)
        obj.update(differing)
        admin.change_with_text(label, "-Msconf", render_object(obj, key_width=KEY_WIDTH))
        if not module.check_mode:
            stored = parse_object(admin.read(label, "qconf", ["-ssconf"]))
            result_parameters = dict((k, stored.get(k, "NONE")) for k in given)
            for key, value in sorted(differing.items()):
                if not same(key, stored.get(key, "NONE"), value):
                    warn_stored(module, label, key, value, stored.get(key))
    result = dict(changed=bool(admin.commands), parameters=result_parameters, commands=admin.commands)
    return with_diff(module, result, render_text(dict((k, current[k]) for k in differing)),
                     render_text(differing), label)


def _check(params):
    """Refuses bad input (SgeAdminError, naming the option) before anything runs."""
    checked_parameters(params["parameters"], "parameters")


def main():
    argument_spec = sge_argument_spec(parameters=dict(type="dict", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
