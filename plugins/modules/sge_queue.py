#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_queue
short_description: Manage a Grid Engine cluster queue and enable or disable its instances
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
  - gridengine.balancer.sge.admin
description:
  - Creates, changes and deletes a Grid Engine cluster queue. Only the attributes given in
    O(attributes) are compared and changed; the others keep their values.
  - The queue is read with C(qconf -sq), changed with C(qconf -Mq FILE) (the whole object as
    read, with the differing attributes replaced), created with C(qconf -Aq FILE) and deleted
    with C(qconf -dq). C(qconf -aq)/C(-mq) start an editor and are never used. Object files are
    private temporary files (mode 0600), removed afterwards.
  - A new queue starts from Son of Grid Engine 8.1.9's built-in queue template, with two
    exceptions. The built-in template names the parallel environments C(make smp mpi), which
    usually do not exist (and C(qconf -Aq) then fails), so C(pe_list) in O(attributes)
    defaults to C(NONE). C(hostlist) is C(NONE) unless given.
  - With O(instance_state) it enables (C(qmod -e queue@host)) or disables (C(qmod -d queue@host))
    queue instances, after reading their state with C(qstat -f -q queue -xml). Only instances
    not yet in the wanted state are touched, so a drain step that disables a node's instances
    reports a change only when one was enabled.
options:
  name:
    description:
      - Name of the cluster queue, for example C(all.q).
      - Must match C(^[A-Za-z0-9_.-]+$) and not start with C(-); nothing runs otherwise.
    type: str
    required: true
  state:
    description:
      - V(present) creates the queue when it does not exist and sets O(attributes).
      - V(absent) deletes it with C(qconf -dq) (O(attributes) is then ignored). Grid Engine
        refuses while jobs run in it; the module then fails with Grid Engine's message.
    type: str
    choices: [present, absent]
    default: present
  attributes:
    description:
      - Queue attributes to ensure, named as in C(qconf -sq) (queue_conf(5)), for example
        C(hostlist), C(slots), C(pe_list), C(load_thresholds), C(starter_method), C(seq_no).
        C(qname) is O(name) and cannot be set here. An unknown attribute name is an error.
      - A value is the whole Grid Engine value, per-host overrides included, for example
        V(1,[node001=2]) for C(slots). Giving V(2) for C(slots) removes existing overrides of
        C(slots).
      - Booleans are written C(TRUE)/C(FALSE), null and empty values C(NONE), lists joined with
        spaces (name lists such as C(hostlist), C(pe_list)) or commas (C(load_thresholds),
        C(complex_values)), dictionaries as C(name=value,...).
      - Values are compared the way Grid Engine means them (C(NONE)/C(none),
        C(00:01:00)/C(60), the order of list entries does not matter). When Grid Engine stores a
        value in another form than given, the module warns, so the value can be written as Grid
        Engine prints it.
    type: dict
    default: {}
  instance_state:
    description:
      - Wanted state of the queue's instances on O(hosts) (all its instances when O(hosts) is
        not given). V(disabled) is Grid Engine's C(d) state set by C(qmod -d); no new job is
        started there, running jobs go on.
      - Requires O(state=present). A host without an instance of the queue is an error.
    type: str
    choices: [enabled, disabled]
  hosts:
    description:
      - Host names (RFC 1123) whose instances O(instance_state) applies to.
    type: list
    elements: str
notes:
  - Run it on the qmaster host or another Grid Engine admin host, as a Grid Engine manager
    (C(qmod) needs an operator).
  - In check mode, when the queue does not exist yet, the state of its future instances is
    taken from C(initial_state).
seealso:
  - module: gridengine.balancer.sge_hostgroup
  - module: gridengine.balancer.sge_exec_host
  - name: Grid Engine queue_conf(5)
    description: The queue attributes.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman5/queue_conf.html
"""

EXAMPLES = r"""
- name: A batch queue on the hosts of @allhosts, 2 slots each
  gridengine.balancer.sge_queue:
    name: batch.q
    attributes:
      hostlist: "@allhosts"
      slots: 2
      pe_list: NONE
      load_thresholds: np_load_avg=1.75

- name: Four slots on the big node only
  gridengine.balancer.sge_queue:
    name: batch.q
    attributes:
      slots: "2,[node009=4]"

- name: Drain node003 (no new jobs; running ones go on)
  gridengine.balancer.sge_queue:
    name: all.q
    instance_state: disabled
    hosts:
      - node003

- name: Open every instance of the queue again
  gridengine.balancer.sge_queue:
    name: all.q
    instance_state: enabled

- name: Delete a queue
  gridengine.balancer.sge_queue:
    name: old.q
    state: absent
"""

RETURN = r"""
name:
  description: Name of the cluster queue.
  returned: always
  type: str
  sample: all.q
attributes:
  description:
    - The attributes given in O(attributes), as Grid Engine prints them after the run (in check
      mode, as they would be). Empty when the queue does not exist.
  returned: always
  type: dict
  sample: {"hostlist": "@allhosts", "slots": "2", "pe_list": "NONE"}
instances:
  description:
    - With O(instance_state), the state (V(enabled) or V(disabled)) of each instance concerned,
      keyed by host, after the run (in check mode, as it would be).
  returned: when O(instance_state) is set
  type: dict
  sample: {"node003": "disabled"}
commands:
  description: The commands that changed the queue or its instances (see the notes).
  returned: always
  type: list
  elements: str
  sample: ["qmod -d all.q@node003"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_admin
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    QUEUE_ATTRIBUTES,
    QUEUE_TEMPLATE,
    SgeAdminError,
    delete_object,
    name_and_hosts_check,
    render_text,
    run_admin,
    same_host,
    same_value,
    stored_attributes,
    wanted_attributes,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec

INSTANCE_READS = 3


def _instances(admin, label, name, hosts):
    """{host as Grid Engine prints it: states} for ``hosts`` (all instances when None)."""
    attempt = 0
    while True:
        attempt += 1
        states = admin.queue_instances(label, name)
        if not hosts:
            return states
        picked = {}
        missing = []
        for host in hosts:
            match = [h for h in states if same_host(h, host)]
            if match:
                picked[match[0]] = states[match[0]]
            else:
                missing.append(host)
        if not missing:
            return picked
        if attempt >= INSTANCE_READS:
            raise SgeAdminError(
                "%s has no instance on host(s) %s (instances: %s)"
                % (label, ", ".join(missing), ", ".join(sorted(states)) or "none"))
        # qstat has been seen to list no instance right after a qmod: read again
        sge_admin._sleep(1)


def _state_word(letters):
    return "disabled" if "d" in (letters or "") else "enabled"


def run(module, admin):
    p = module.params
    name = p["name"]
    label = "cluster queue %s" % name
    wanted = wanted_attributes(p["attributes"] or {}, QUEUE_ATTRIBUTES[1:], "qname", "queue's",
                               "cluster queue attribute (queue_conf(5))")
    want_instances = p["instance_state"]
    hosts = p["hosts"]
    if p["state"] == "absent" and want_instances:
        raise SgeAdminError("%s: instance_state needs state=present" % label)

    current = admin.show_object(label, "-sq", name)
    before_text = ""
    after_text = ""
    result_attributes = {}
    instances_before = {}
    instances_after = {}
    created = False

    if p["state"] == "absent":
        before_text = delete_object(admin, label, "-dq", name, current)
    elif current is None:
        obj = dict(QUEUE_TEMPLATE)
        obj["qname"] = name
        obj["pe_list"] = "NONE"
        obj.update(wanted)
        admin.change_with_file(label, "-Aq", obj)
        created = True
        after_text = render_text(obj)
        result_attributes = dict((k, obj[k]) for k in wanted)
    else:
        differing = dict((k, v) for k, v in wanted.items()
                         if not same_value(k, current.get(k, "NONE"), v))
        if differing:
            obj = dict(current)
            obj.update(differing)
            admin.change_with_file(label, "-Mq", obj)
            before_text = render_text(dict((k, current.get(k, "NONE")) for k in differing))
            after_text = render_text(differing)
        result_attributes = dict((k, current.get(k, "NONE")) for k in wanted)
        result_attributes.update(differing)

    if p["state"] == "present" and admin.commands and not module.check_mode:
        result_attributes = stored_attributes(module, label, admin.show_object(label, "-sq", name), wanted)

    if want_instances:
        if created and module.check_mode:
            initial = wanted.get("initial_state", "default").lower()
            instances_before = dict((h, "d" if initial == "disabled" else "") for h in hosts or [])
        else:
            instances_before = _instances(admin, label, name, hosts)
        flip = [h for h in sorted(instances_before)
                if _state_word(instances_before[h]) != want_instances]
        instances_after = dict((h, want_instances if h in flip else _state_word(s))
                               for h, s in instances_before.items())
        if flip:
            admin.change(label, "qmod", ["-d" if want_instances == "disabled" else "-e"]
                         + ["%s@%s" % (name, h) for h in flip])
            if not module.check_mode:
                states = _instances(admin, label, name, sorted(instances_before))
                instances_after = dict((h, _state_word(s)) for h, s in states.items())
                wrong = [h for h in flip if instances_after.get(h) != want_instances]
                if wrong:
                    raise SgeAdminError("%s: instances on %s are still not %s after qmod"
                                        % (label, ", ".join(wrong), want_instances))
        before_text += "".join("instance %s@%s %s\n" % (name, h, _state_word(instances_before[h]))
                               for h in flip)
        after_text += "".join("instance %s@%s %s\n" % (name, h, instances_after[h])
                              for h in flip)

    result = dict(
        changed=bool(admin.commands),
        name=name,
        attributes=result_attributes,
        commands=admin.commands,
    )
    if want_instances:
        result["instances"] = instances_after
    return with_diff(module, result, before_text, after_text, label)


def main():
    argument_spec = sge_argument_spec(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        attributes=dict(type="dict", default={}),
        instance_state=dict(type="str", choices=["enabled", "disabled"]),
        hosts=dict(type="list", elements="str"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_by=dict(hosts="instance_state"))
    run_admin(module, run, name_and_hosts_check("queue", "host"))


if __name__ == "__main__":
    main()
