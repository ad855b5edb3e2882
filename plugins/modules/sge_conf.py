#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_conf
short_description: Set parameters of the Grid Engine global or host-local configuration
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Sets the parameters given in O(parameters) in Grid Engine's global configuration, or in the
    local configuration of O(host) (sge_conf(5)); every other parameter keeps its value. Deletes a
    host's local configuration with O(state=absent).
  - The configuration is read with C(qconf -sconf) (C(qconf -sconf HOST)). When a given parameter
    differs, the whole configuration as read, with the given parameters replaced, added or
    removed, is written back with C(qconf -Mconf FILE); a host without a local configuration gets
    one with C(qconf -Aconf FILE), and a local configuration left without parameters is deleted
    with C(qconf -dconf HOST). Grid Engine takes the configuration's name from the file's name,
    so the file is named after the host (C(global) for the global configuration), in a private
    temporary directory (mode 0700, the file 0600), removed afterwards. C(qconf -aconf)/C(-mconf)
    start an editor and are never used.
  - The configuration is read again after a change; RV(parameters) and the diff show what Grid
    Engine stored.
options:
  host:
    description:
      - Host whose local configuration is meant (an RFC 1123 host name, as the qmaster resolves
        it). Not given, or V(global), means the global configuration.
    type: str
  parameters:
    description:
      - Parameters to set, named as C(qconf -sconf) prints them, for example C(gid_range),
        C(load_report_time), C(execd_params), C(reporting_params).
      - Booleans are written C(TRUE)/C(FALSE), empty values C(NONE), lists joined with commas.
      - In a host's local configuration, a null value removes the parameter (the host then uses
        the global value). The global configuration keeps every parameter, so null is refused
        there.
      - Values are compared the way Grid Engine means them (C(00:00:40)/C(40), C(none)/C(NONE)).
        When Grid Engine stores a value in another form than given, the module warns; when it
        does not store a parameter at all (an unknown name), the module fails.
      - Required with O(state=present); not allowed with O(state=absent).
    type: dict
  state:
    description:
      - V(present) sets O(parameters), creating the host's local configuration when it has none.
      - V(absent) deletes the local configuration of O(host) (C(qconf -dconf HOST)); the host then
        uses the global configuration. Requires O(host); the global configuration cannot be deleted.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager.
  - Some parameters take effect only when the daemons start again (for example C(gid_range) of an
    execution host, whose execd must be stopped with C(qconf -ke) and started again).
  - C(qconf -Mconf) replaces the whole configuration. Another change made between this module's
    read and its write is lost.
seealso:
  - module: gridengine.balancer.sge_sched_conf
  - name: Grid Engine sge_conf(5)
    description: The global and host-local configuration parameters.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/sge_conf.html
"""

EXAMPLES = r"""
- name: Accounting records every 15 s, no reporting file
  gridengine.balancer.sge_conf:
    parameters:
      reporting_params: accounting=true reporting=false flush_time=00:00:15 joblog=false sharelog=00:00:00

- name: The master's execd gets its own additional group ids
  gridengine.balancer.sge_conf:
    host: vm
    parameters:
      gid_range: 65300-65399

- name: Back to the global load sensor on node001
  gridengine.balancer.sge_conf:
    host: node001
    parameters:
      load_sensor: null

- name: Delete the local configuration of a removed host
  gridengine.balancer.sge_conf:
    host: node009
    state: absent
"""

RETURN = r"""
host:
  description: The host of the local configuration, or V(global).
  returned: always
  type: str
  sample: vm
exists:
  description: Whether the configuration exists after the run (in check mode, would).
  returned: always
  type: bool
  sample: true
parameters:
  description:
    - The parameters given in O(parameters), as Grid Engine prints them after the run (in check
      mode, as they would be); null for one the configuration does not have.
  returned: always
  type: dict
  sample: {"gid_range": "65300-65399"}
commands:
  description: The commands that changed the global or host configuration (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qconf -Mconf FILE"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdminError,
    check_names,
    parse_object,
    render_object,
    render_text,
    run_admin,
    warn_stored,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_objects import (
    CONF_MISSING,
    checked_parameters,
    same,
    show,
)

GLOBAL = "global"
# keys padded as qconf -sconf prints them (29 columns before the value)
KEY_WIDTH = 28


def _read(admin, label, host):
    if host == GLOBAL:
        return parse_object(admin.read(label, "qconf", ["-sconf"]))
    text = show(admin, label, ["-sconf", host], CONF_MISSING)
    return None if text is None else parse_object(text)


def _check(params):
    """(host, {name: text or None}), or SgeAdminError before anything runs."""
    host = params["host"] or GLOBAL
    if host != GLOBAL:
        check_names("host", [host], "host")
    if params["state"] == "absent":
        if host == GLOBAL:
            raise SgeAdminError("state=absent deletes a host's local configuration: give host "
                                "(the global configuration cannot be deleted)")
        if params["parameters"]:
            raise SgeAdminError("parameters: not used with state=absent, which deletes the whole local "
                                "configuration of %s (a null value removes one parameter)" % host)
        return host, {}
    if not params["parameters"]:
        raise SgeAdminError("parameters: give at least one parameter with state=present")
    if host == GLOBAL:
        nulls = sorted(k for k, v in params["parameters"].items() if v is None)
        if nulls:
            raise SgeAdminError("parameters.%s: null removes a parameter from a host's local configuration; "
                                "the global configuration keeps every parameter (give NONE)" % nulls[0])
    given = checked_parameters(params["parameters"], "parameters", keep_none=True)
    return host, given


def _text(obj):
    return render_text(obj) if obj else ""


def run(module, admin):
    host, given = _check(module.params)
    label = "global configuration" if host == GLOBAL else "local configuration of %s" % host
    current = _read(admin, label, host)
    after = None if current is None else dict(current)

    if module.params["state"] == "absent":
        if current is not None:
            admin.change(label, "qconf", ["-dconf", host])
            after = None
    else:
        after = dict(current or {})
        for key, value in given.items():
            if value is None:
                after.pop(key, None)
            elif key not in after or not same(key, after[key], value):
                after[key] = value
        if current is None:
            if after:
                admin.change_with_text(label, "-Aconf", render_object(after, key_width=KEY_WIDTH), file_name=host)
            else:
                after = None
        elif after != current:
            if after:
                admin.change_with_text(label, "-Mconf", render_object(after, key_width=KEY_WIDTH), file_name=host)
            else:
                admin.change(label, "qconf", ["-dconf", host])
                after = None

    if admin.commands and not module.check_mode:
        stored = _read(admin, label, host)
        if after is None and stored is not None:
            raise SgeAdminError("%s: still there after qconf reported success" % label)
        if after is not None:
            if stored is None:
                raise SgeAdminError("%s: not found after qconf reported success" % label)
            for key, value in sorted(given.items()):
                if value is None:
                    if key in stored:
                        raise SgeAdminError("%s: %s is still there after qconf reported success" % (label, key))
                elif key not in stored:
                    raise SgeAdminError("%s: Grid Engine did not store %s (not a parameter of sge_conf(5)?)"
                                        % (label, key))
                elif not same(key, stored[key], value):
                    warn_stored(module, label, key, value, stored[key])
        after = stored

    changed_keys = sorted(set(k for k in (current or {}) if (after or {}).get(k) != current[k])
                          | set(k for k in (after or {}) if (current or {}).get(k) != after[k]))
    result = dict(changed=bool(admin.commands), host=host, exists=after is not None,
                  parameters=dict((k, (after or {}).get(k)) for k in given), commands=admin.commands)
    if current is None or after is None:
        before_text, after_text = _text(current), _text(after)
    else:
        before_text = _text(dict((k, current[k]) for k in changed_keys if k in current))
        after_text = _text(dict((k, after[k]) for k in changed_keys if k in after))
    return with_diff(module, result, before_text, after_text, label)


def main():
    argument_spec = sge_argument_spec(
        host=dict(type="str"),
        parameters=dict(type="dict"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_admin(module, run, _check)


if __name__ == "__main__":
    main()
