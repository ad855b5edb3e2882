# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure part of the inventory plugin ``gridengine.balancer.sge`` (docs/inventory.md).

Controller side, no Ansible import, no I/O: the plugin runs the commands and hands their output
here; this module turns it into hosts, host variables and (unsanitised) group names.

* :func:`qhost_args`, :func:`shgrpl_args`, :func:`shgrp_args`, :func:`master_args` -- the
  arguments of each command (the program is prepended by the caller).
* :func:`parse_hostgroup_names` -- ``qconf -shgrpl``.
* :func:`parse_hostgroups` -- one ``qconf -shgrp @a -shgrp @b ...`` (objects one after another).
* :func:`resolve_hostgroups` -- nested host groups expanded to hosts.
* :func:`build_inventory` -- everything combined into a JSON-able model (also what is cached).

Every name that comes from Grid Engine is data: host names must be RFC 1123 names, host group
and queue names must match Grid Engine's own rules (the patterns of ``sge_admin``); anything else
is skipped with a warning that names it and never reaches a command line or a group name.
"""

from __future__ import annotations

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    HOSTGROUP_RE,
    HOSTNAME_RE,
    QUEUE_RE,
    parse_object,
    split_list,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import (
    SgeParseError,
    parse_qhost,
)

MODEL_SCHEMA = 1

# Queue instance state letters (qstat(1) of SGE 6.2 / SoGE 8.1; "P" is UGE's "preempted").
STATE_NAMES = {
    "a": "alarm",
    "A": "suspend_alarm",
    "c": "config_ambiguous",
    "C": "calendar_suspended",
    "d": "disabled",
    "D": "calendar_disabled",
    "E": "error",
    "o": "orphaned",
    "P": "preempted",
    "s": "suspended",
    "S": "subordinated",
    "u": "unknown",
}
# group of the hosts whose queue instances show no state letter at all
STATE_OK = "ok"

# messages of qconf that mean "nothing there", not "failed" (SoGE 8.1.9, captured)
NO_HOSTGROUP_LIST = "no host group list defined"
HOSTGROUP_MISSING = "does not exist"


class InventoryDataError(Exception):
    """Grid Engine output the inventory cannot use; the message names the command and why."""


# ---------------------------------------------------------------------------------------------
# command arguments
# ---------------------------------------------------------------------------------------------

def qhost_args():
    """``qhost -xml -q``: every execution host with its queue instances."""
    return ["-xml", "-q"]


def shgrpl_args():
    """``qconf -shgrpl``: the host group names."""
    return ["-shgrpl"]


def shgrp_args(groups):
    """``qconf -shgrp @a -shgrp @b ...``: one command for every group (qconf handles the options
    one after another). Only valid group names are accepted (they become argv elements)."""
    args = []
    for group in groups:
        if not valid_hostgroup(group):
            raise InventoryDataError("qconf -shgrp: %r is not a host group name" % (group,))
        args.extend(["-shgrp", group])
    return args


def master_args():
    """``qconf -sss``: the host the scheduler (a thread of the qmaster) runs on."""
    return ["-sss"]


# ---------------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------------

def valid_host(name):
    return isinstance(name, str) and len(name) <= 253 and bool(HOSTNAME_RE.match(name))


def valid_hostgroup(name):
    return isinstance(name, str) and bool(HOSTGROUP_RE.match(name))


def valid_queue(name):
    return isinstance(name, str) and bool(QUEUE_RE.match(name))


def _text(blob):
    if blob is None:
        return ""
    if isinstance(blob, (bytes, bytearray)):
        return bytes(blob).decode("utf-8", "replace")
    return blob


# ---------------------------------------------------------------------------------------------
# qconf output
# ---------------------------------------------------------------------------------------------

def parse_hostgroup_names(text, warnings):
    """Names of ``qconf -shgrpl`` output; invalid lines are skipped with a warning."""
    names = []
    seen = set()
    for line in _text(text).splitlines():
        name = line.strip()
        if not name:
            continue
        if name == NO_HOSTGROUP_LIST:
            continue
        if not valid_hostgroup(name):
            warnings.append("qconf -shgrpl: skipped %r (not a host group name)" % (name,))
            continue
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def hostgroup_error_is_harmless(err):
    """True when every line of ``qconf -shgrp`` stderr says a group does not exist (a group
    removed between ``-shgrpl`` and ``-shgrp``): the other groups were printed all the same."""
    lines = [line.strip() for line in _text(err).splitlines() if line.strip()]
    return bool(lines) and all(
        line.startswith("Host group ") and line.endswith(HOSTGROUP_MISSING) for line in lines)


def parse_hostgroups(text, warnings):
    """``{group: [members]}`` from ``qconf -shgrp`` output of one or more groups.

    Members are Grid Engine's text (host names and ``@groups``); ``NONE`` gives ``[]``. A group
    with an invalid name is skipped with a warning.
    """
    blocks = []
    current = None
    for line in _text(text).splitlines():
        if line.split(None, 1)[:1] == ["group_name"]:
            current = [line]
            blocks.append(current)
        elif current is not None:
            current.append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise InventoryDataError("qconf -shgrp: unexpected line before the first group_name: %r"
                                     % (line.strip()[:80],))
    groups = {}
    for block in blocks:
        obj = parse_object("\n".join(block))
        name = obj.get("group_name", "")
        if not valid_hostgroup(name):
            warnings.append("qconf -shgrp: skipped group %r (not a host group name)" % (name,))
            continue
        groups[name] = split_list(obj.get("hostlist", "NONE"))
    return groups


def resolve_hostgroups(groups, warnings):
    """``{group: [hosts]}`` with nested groups expanded (order of first appearance).

    A member group that is not defined, or a cycle, is reported in ``warnings`` and skipped.
    Expanded depth first with an explicit stack: a chain of thousands of nested groups needs no
    recursion (and cannot exhaust Python's recursion limit).
    """
    resolved = {}

    def add(target, hosts):
        _name, _pos, out, seen = target
        for host in hosts:
            if host not in seen:
                seen.add(host)
                out.append(host)

    for group in groups:
        if group in resolved:
            continue
        stack = [[group, 0, [], set()]]     # name, next member, hosts, hosts seen
        path = [group]
        on_path = {group}
        while stack:
            frame = stack[-1]
            name, pos = frame[0], frame[1]
            members = groups.get(name, [])
            if pos >= len(members):
                resolved[name] = frame[2]
                stack.pop()
                path.pop()
                on_path.discard(name)
                if stack:
                    add(stack[-1], frame[2])
                continue
            frame[1] = pos + 1
            member = members[pos]
            if not member.startswith("@"):
                add(frame, (member,))
            elif member in on_path:
                warnings.append("host group %s: cycle through %s skipped" % (name, " -> ".join(path + [member])))
            elif member not in groups:
                warnings.append("host group %s: member group %r is not defined; skipped" % (name, member))
            elif member in resolved:
                add(frame, resolved[member])
            else:
                stack.append([member, 0, [], set()])
                path.append(member)
                on_path.add(member)
    return resolved


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------

class _HostIndex(object):
    """Match a host group member to a qhost name: exact, then case-insensitive, then by short
    name when that is unique (Grid Engine compares host names the same way)."""

    def __init__(self, names):
        self.names = set(names)
        self.lower = {}
        self.short = {}
        for name in names:
            self.lower.setdefault(name.lower(), name)
            self.short.setdefault(name.lower().split(".", 1)[0], []).append(name)

    def find(self, member):
        if member in self.names:
            return member
        low = member.lower()
        if low in self.lower:
            return self.lower[low]
        candidates = self.short.get(low.split(".", 1)[0], [])
        if len(candidates) == 1 and ("." not in low or "." not in candidates[0]):
            return candidates[0]
        return None


def _state_letters(queues):
    letters = []
    for queue in queues.values():
        for letter in queue.get("state") or "":
            if letter not in letters:
                letters.append(letter)
    return sorted(letters)


def state_group_suffix(letter):
    """``disabled`` for ``d``; an unknown letter stays itself."""
    return STATE_NAMES.get(letter, letter)


def build_inventory(qhost_xml, hostgroup_text=None, hostgroup_names=None, master=None,
                    strict_schema=True):
    """The inventory model of one cluster, JSON-able (cached as it is).

    ``qhost_xml``: ``qhost -xml -q`` output (bytes). ``hostgroup_text``: ``qconf -shgrp ...``
    output for ``hostgroup_names`` (None: host groups not read). ``master``: the qmaster host
    name (``qconf -sss``) or None.

    Returns ``{"schema", "flavour", "hosts": {name: facts}, "hostgroups": {group: [hosts]},
    "queues": {queue: [hosts]}, "states": {letter: [hosts]} (``""``: no letter), "master",
    "warnings", "notes"}``; ``facts`` are the host's variables without the ``sge_`` prefix;
    ``warnings`` name what was skipped, ``notes`` host group members that are not execution
    hosts. Raises InventoryDataError when the
    output cannot be read (the message names the command).
    """
    warnings = []
    notes = []
    try:
        qhost = parse_qhost(bytes(qhost_xml) if isinstance(qhost_xml, bytearray) else qhost_xml,
                            strict_schema=strict_schema)
    except SgeParseError as err:
        raise InventoryDataError(str(err))

    hosts = {}
    queues = {}
    states = {}
    for name in sorted(qhost["hosts"]):
        info = qhost["hosts"][name]
        if not valid_host(name):
            warnings.append("qhost: skipped host %r (not a valid host name)" % (name,))
            continue
        host_queues = {}
        for qname in sorted(info["queues"]):
            if not valid_queue(qname):
                warnings.append("qhost: host %s: skipped queue %r (not a valid queue name)"
                                % (name, qname))
                continue
            q = info["queues"][qname]
            host_queues[qname] = {
                "qtype": q["qtype"],
                "slots": q["slots_total"] or 0,
                "used": q["slots_used"] or 0,
                "reserved": q["slots_reserved"] or 0,
                "state": q["states"] or "",
            }
            queues.setdefault(qname, []).append(name)
        slots = sum(q["slots"] for q in host_queues.values())
        used = sum(q["used"] for q in host_queues.values())
        reserved = sum(q["reserved"] for q in host_queues.values())
        letters = _state_letters(host_queues)
        for letter in letters:
            states.setdefault(letter, []).append(name)
        if host_queues and not letters:
            states.setdefault("", []).append(name)
        hosts[name] = {
            "arch": info["arch"],
            "num_proc": info["num_proc"],
            "load_avg": info["load_avg"],
            "mem_total": info["mem_total"],
            "mem_used": info["mem_used"],
            "swap_total": info["swap_total"],
            "swap_used": info["swap_used"],
            "slots": slots,
            "slots_used": used,
            "slots_reserved": reserved,
            "slots_free": max(slots - used - reserved, 0),
            "queues": host_queues,
            "state": letters,
            "hostgroups": [],
        }

    hostgroups = {}
    if hostgroup_text is not None:
        members = parse_hostgroups(hostgroup_text, warnings)
        wanted = hostgroup_names if hostgroup_names is not None else list(members)
        for group in wanted:
            if group not in members:
                warnings.append("host group %s: not printed by qconf -shgrp (removed meanwhile?); "
                                "skipped" % group)
        resolved = resolve_hostgroups(members, warnings)
        index = _HostIndex(list(hosts))
        for group in sorted(resolved):
            found = []
            seen = set()
            for member in resolved[group]:
                host = index.find(member)
                if host is None:
                    notes.append("host group %s: member %r is not an execution host qhost lists; "
                                 "not added" % (group, member))
                elif host not in seen:
                    seen.add(host)
                    found.append(host)
            hostgroups[group] = sorted(found)
            for host in found:
                hosts[host]["hostgroups"].append(group)

    if master is not None:
        master = master.strip()
        if not master:
            master = None
        elif not valid_host(master):
            warnings.append("qconf -sss: skipped master %r (not a valid host name)" % (master,))
            master = None
        elif master not in hosts:
            match = _HostIndex(list(hosts)).find(master)
            if match is not None:
                master = match

    return {
        "schema": MODEL_SCHEMA,
        "flavour": qhost["flavour"],
        "hosts": hosts,
        "hostgroups": hostgroups,
        "queues": dict((q, sorted(h)) for q, h in queues.items()),
        "states": dict((s, sorted(h)) for s, h in states.items()),
        "master": master,
        "warnings": warnings,
        "notes": notes,
    }


def model_is_sound(model):
    """Whether ``model`` (read back from an inventory cache) has the shape :func:`build_inventory`
    gives, with only the names it lets through: valid host, host group and queue names, and no
    group member that is not one of the model's hosts. A cache is a file another program may have
    written; a model that fails this is read again from Grid Engine, never used."""
    try:
        hosts = model["hosts"]
        if not isinstance(hosts, dict) or not all(valid_host(h) and isinstance(v, dict) for h, v in hosts.items()):
            return False
        master = model["master"]
        if master is not None and not valid_host(master):
            return False
        checks = {"hostgroups": valid_hostgroup, "queues": valid_queue,
                  "states": lambda name: isinstance(name, str) and len(name) <= 1 and (not name or name.isalpha())}
        for key, valid_name in checks.items():
            table = model[key]
            if not isinstance(table, dict):
                return False
            for name, members in table.items():
                if not valid_name(name) or not isinstance(members, list) or not all(
                        isinstance(m, str) and m in hosts for m in members):
                    return False
        for key in ("warnings", "notes"):
            if not isinstance(model[key], list) or not all(isinstance(m, str) for m in model[key]):
                return False
    except (KeyError, TypeError, AttributeError):
        return False
    return True


def group_names(model, cluster):
    """``{raw group name: [hosts]}`` of the model, before Ansible sanitises the names.

    ``<cluster>_hostgroup_<group without @>``, ``<cluster>_queue_<queue>``,
    ``<cluster>_state_<state name>`` (``<cluster>_state_ok`` for hosts without a state letter),
    ``<cluster>_exec`` (every host qhost lists) and ``<cluster>_master`` (when a master is known).
    The cluster group itself (every host) is not part of it.
    """
    out = {}
    for group, hosts in model["hostgroups"].items():
        out["%s_hostgroup_%s" % (cluster, group[1:])] = list(hosts)
    for queue, hosts in model["queues"].items():
        out["%s_queue_%s" % (cluster, queue)] = list(hosts)
    for letter, hosts in model["states"].items():
        suffix = STATE_OK if letter == "" else state_group_suffix(letter)
        out["%s_state_%s" % (cluster, suffix)] = list(hosts)
    out["%s_exec" % cluster] = sorted(model["hosts"])
    if model.get("master"):
        out["%s_master" % cluster] = [model["master"]]
    return out


def host_variables(model, host, cluster):
    """The ``sge_*`` variables of ``host`` (the master without an execd gets only the first
    three)."""
    facts = model["hosts"].get(host)
    out = {"sge_cluster": cluster}
    if model.get("master") is not None:
        out["sge_master"] = host == model["master"]
    out["sge_exec"] = facts is not None
    if facts is None:
        return out
    for key in ("arch", "num_proc", "load_avg", "mem_total", "mem_used", "swap_total",
                "swap_used", "slots", "slots_used", "slots_reserved", "slots_free", "state",
                "hostgroups"):
        value = facts[key]
        out["sge_" + key] = list(value) if isinstance(value, list) else value
    out["sge_queues"] = dict((q, dict(v)) for q, v in facts["queues"].items())
    return out
