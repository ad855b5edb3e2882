# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: sge
short_description: Grid Engine hosts, with the groups the balancer's playbooks use
version_added: 0.1.0
author:
  - gridengine.balancer developers (@gridengine)
description:
  - Reads the hosts of a Grid Engine cluster from its qmaster and makes them an Ansible inventory
    with the groups the collection's playbooks use, C(<cluster>_master) (the qmaster) and
    C(<cluster>_nodes) (the execution hosts the balancer launched and may remove), and groups by
    host group, queue and queue state.
  - Runs C(qhost -xml -q) (hosts, slots, load, memory, queue instances and their state letters),
    C(qconf -shgrpl) and one C(qconf -shgrp @group ...) for all host groups (nested host groups
    are resolved), with O(include_master) C(qconf -sss) (the qmaster host), and with
    O(nodes_from_state) reads the balancer's state file (O(state_path)).
  - The commands run on the controller (it is the qmaster or has the Grid Engine client
    installed) or, with O(qmaster_host), on that host through C(ssh -o BatchMode=yes).
  - "Groups: every host is in the group O(cluster). Every execution host that passes the filters
    (O(filters), O(include_filters), O(exclude_filters)) is in C(<cluster>_exec); in
    C(<cluster>_hostgroup_<name>) for every host group it belongs to (C(@allhosts) gives
    C(<cluster>_hostgroup_allhosts)); in C(<cluster>_queue_<queue>) for every queue it has an
    instance of (C(all.q) gives C(<cluster>_queue_all_q)); in C(<cluster>_state_<state>) for every
    state letter one of its queue instances shows (C(d) gives C(<cluster>_state_disabled)), or
    C(<cluster>_state_ok) when they show none; and in exactly one of C(<cluster>_nodes) and
    C(<cluster>_static). The qmaster (O(include_master)) is in C(<cluster>_master), whatever the
    filters say."
  - "C(<cluster>_nodes) holds only the execution hosts the balancer may remove: those its state
    file marks C(launched) (they filled a node a plan asked for), plus those matching
    O(managed_hosts), minus those matching O(protected_hosts), never the qmaster. Running an
    execution daemon is not enough: the C(loadbalance) playbook passes C(<cluster>_nodes) to the
    policy as the hosts it launched, and the policy may drain and remove them. Every other
    execution host is in C(<cluster>_static)."
  - The cluster part of a group name is O(cluster) as it is (C(my-cluster_master)); the part
    after it goes through Ansible's C(to_safe_group_name).
  - "Host variables: C(sge_name) (the host's name as Grid Engine reports it), C(sge_cluster),
    C(sge_exec), C(sge_node) (true in C(<cluster>_nodes)), C(sge_arch), C(sge_num_proc),
    C(sge_load_avg), C(sge_mem_total), C(sge_mem_used), C(sge_swap_total), C(sge_swap_used)
    (bytes; C(null) when the host reports no load), C(sge_slots), C(sge_slots_used),
    C(sge_slots_reserved), C(sge_slots_free) (sums over the host's queue instances), C(sge_queues)
    (per queue: C(qtype), C(slots), C(used), C(reserved), C(state)), C(sge_state) (sorted state
    letters over all queue instances), C(sge_hostgroups), with O(include_master) C(sge_master),
    and C(sge_address) when an address was resolved for it (O(hostnames), O(host_address))."
  - Names read from Grid Engine are data. A host whose name is not an RFC 1123 host name, a queue
    or host group whose name Grid Engine itself would not accept is skipped with a warning; such
    a name never reaches a command line or a group.
  - The configuration file name must end in C(.sge.yml) or C(.sge.yaml). Options set in it win
    over their environment variables, which win over the defaults.
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
options:
  plugin:
    description:
      - The name of this plugin; marks the file as a configuration of it.
    required: true
    type: str
    choices: [gridengine.balancer.sge]
  cluster:
    description:
      - Name of the cluster, as the playbooks take it (C(-e cluster=...)). It is the group of every
        host and the prefix of every other group this plugin makes, so two clusters can share one
        inventory.
      - Letters, digits, V(_), V(.) and V(-), starting with a letter or digit, at most 255
        characters (the rule of the playbooks and of the balancer's state directory); not
        V(all) or V(ungrouped).
    type: str
    default: sge
    env:
      - name: GEB_CLUSTER
  sge_root:
    description:
      - Grid Engine installation directory (E(SGE_ROOT)) on the host the commands run on.
      - E(GEB_SGE_ROOT) wins over E(SGE_ROOT) when both are set.
    type: path
    default: /var/lib/gridengine
    env:
      - name: SGE_ROOT
      - name: GEB_SGE_ROOT
  sge_cell:
    description:
      - Grid Engine cell (E(SGE_CELL)), one directory name under O(sge_root) (letters, digits,
        V(_), V(.), V(-), not starting with V(.) or V(-)).
      - E(GEB_SGE_CELL) wins over E(SGE_CELL) when both are set.
    type: str
    default: default
    env:
      - name: SGE_CELL
      - name: GEB_SGE_CELL
  sge_qmaster_port:
    description:
      - TCP port of the qmaster (E(SGE_QMASTER_PORT) of the commands).
      - When not set, commands run on the controller take it from
        C($SGE_ROOT/$SGE_CELL/common/settings.sh); otherwise Grid Engine's own default applies.
    type: int
    env:
      - name: GEB_SGE_QMASTER_PORT
  sge_bin_dir:
    description:
      - Directory of C(qhost) and C(qconf).
      - When not set, commands run on the controller are looked up in C($SGE_ROOT/bin/<arch>),
        then in E(PATH); commands run through ssh are looked up in the remote E(PATH).
    type: path
    env:
      - name: GEB_SGE_BIN_DIR
  qmaster_host:
    description:
      - Run the commands (and read the state file) on this host through ssh instead of on the
        controller.
      - A host name (RFC 1123) or an IP address.
      - The qmaster's C(ansible_host) is set to it (O(compose) can say otherwise).
    type: str
    env:
      - name: GEB_QMASTER_HOST
  ssh_user:
    description:
      - Remote user for O(qmaster_host) (C(ssh -l)). Default is ssh's own choice.
    type: str
    env:
      - name: GEB_SSH_USER
  ssh_private_key_file:
    description:
      - Private key for O(qmaster_host) (C(ssh -i)). Default is ssh's own choice.
      - An AWX credential can inject it as a file and set E(GEB_SSH_PRIVATE_KEY_FILE).
    type: path
    env:
      - name: GEB_SSH_PRIVATE_KEY_FILE
  ssh_executable:
    description:
      - The ssh client used with O(qmaster_host), a program name looked up in E(PATH) or an
        absolute path.
    type: str
    default: ssh
    env:
      - name: GEB_SSH_EXECUTABLE
  ssh_args:
    description:
      - Further options for the ssh client, one list item per argument (for example
        C([-o, StrictHostKeyChecking=accept-new])).
      - C(-o BatchMode=yes) is always passed first, so ssh never waits for a password.
      - In E(GEB_SSH_ARGS) the arguments are separated by commas (C(-o,ProxyJump=bastion)).
    type: list
    elements: str
    default: []
    env:
      - name: GEB_SSH_ARGS
  hostgroups:
    description:
      - Read the host groups (C(qconf -shgrpl), C(qconf -shgrp)) and make their groups.
    type: bool
    default: true
  include_master:
    description:
      - Read the qmaster host with C(qconf -sss), add it (also when it runs no execution
        daemon, and whatever the filters say) to the groups O(cluster) and C(<cluster>_master)
        and set C(sge_master) on every host.
      - The playbooks of this collection need C(<cluster>_master); V(false) only for an
        inventory used for something else.
    type: bool
    default: true
    env:
      - name: GEB_INCLUDE_MASTER
  nodes_from_state:
    description:
      - Put into C(<cluster>_nodes) the execution hosts the balancer's state file (O(state_path))
        marks C(launched).
      - A missing state file (no poll has run yet) gives no such host. A file that exists but
        cannot be read, is not owned by root or the reading user, is writable by others, or does
        not hold a state fails the inventory (a silent empty C(<cluster>_nodes) would keep the
        balancer's nodes for ever).
    type: bool
    default: true
    env:
      - name: GEB_NODES_FROM_STATE
  state_path:
    description:
      - The balancer's state file, on the host the commands run on (the controller, or
        O(qmaster_host)).
      - Default C(/var/lib/gridengine-balancer/<cluster>/state.json), the default of the
        C(loadbalance) playbook (its C(state_path)).
    type: path
    env:
      - name: GEB_STATE_PATH
  managed_hosts:
    description:
      - Host name patterns (shell wildcards, case-insensitive) of execution hosts put into
        C(<cluster>_nodes) although the state file does not mark them launched, so the balancer
        may remove them. The same meaning as the C(managed_hosts) variable of the playbooks.
      - V(["*"]) makes every execution host but the qmaster removable, as StarCluster did.
      - In E(GEB_MANAGED_HOSTS) the patterns are separated by commas.
    type: list
    elements: str
    default: []
    env:
      - name: GEB_MANAGED_HOSTS
  protected_hosts:
    description:
      - Host name patterns (shell wildcards, case-insensitive) never put into
        C(<cluster>_nodes), whatever the state file or O(managed_hosts) say.
      - In E(GEB_PROTECTED_HOSTS) the patterns are separated by commas.
    type: list
    elements: str
    default: []
    env:
      - name: GEB_PROTECTED_HOSTS
  filters:
    description:
      - Only execution hosts that match this filter are in the inventory (the qmaster stays in
        C(<cluster>_master)). Empty (the default) matches every host.
      - "Keys: V(host) (host name patterns, shell wildcards, case-insensitive), V(queue) (queue
        name patterns: the host has an instance of such a queue), V(hostgroup) (host group name
        patterns, with or without V(@); needs O(hostgroups)), V(state) (queue state letters such as
        V(d), or their names such as V(disabled), or V(ok) for no letter: one of the host's queue
        instances shows it), V(arch) (patterns of the architecture C(qhost) reports). Each value is
        a string or a list of strings; a host matches when every key matches one of its values."
    type: dict
    default: {}
  include_filters:
    description:
      - A list of filters in the form of O(filters). Hosts that match at least one of them are
        added to those O(filters) selects (useful when O(filters) is set).
    type: list
    elements: dict
    default: []
  exclude_filters:
    description:
      - A list of filters in the form of O(filters). Hosts that match at least one of them are
        left out, whatever O(filters) and O(include_filters) say (the qmaster still stays in
        C(<cluster>_master)).
    type: list
    elements: dict
    default: []
  hostnames:
    description:
      - How a host is named in the inventory, in order of preference; the first choice that gives
        a name is used, and V(name) is always the last resort.
      - "V(name) the name Grid Engine reports; V(short) that name up to its first dot; V(address),
        V(ipv4), V(ipv6) an address the controller resolves the name to (V(address): IPv4 when
        there is one, else IPv6)."
      - The balancer's playbooks compare C(<cluster>_nodes) with Grid Engine's names; keep V(name)
        for them and make hosts reachable with O(host_address) instead.
    type: list
    elements: str
    choices: [name, short, address, ipv4, ipv6]
    default: [name]
  host_address:
    description:
      - What C(ansible_host) of an execution host is set to. V(none) sets nothing (Ansible
        connects to the inventory name); V(name) and V(short) as in O(hostnames); V(address),
        V(ipv4), V(ipv6) an address the controller resolves the name to (a name that does not
        resolve leaves it unset, with a warning).
    type: str
    choices: [none, name, short, address, ipv4, ipv6]
    default: none
    env:
      - name: GEB_HOST_ADDRESS
  remote_user:
    description:
      - C(ansible_user) of every host. Not set by default.
    type: str
    env:
      - name: GEB_REMOTE_USER
  private_key_file:
    description:
      - C(ansible_ssh_private_key_file) of every host. Not set by default.
      - An AWX credential can inject it as a file and set E(GEB_PRIVATE_KEY_FILE).
    type: path
    env:
      - name: GEB_PRIVATE_KEY_FILE
  connection_vars:
    description:
      - Further variables set on every host as they are (not templates), for example
        C(ansible_port), C(ansible_python_interpreter), C(ansible_ssh_common_args).
      - Names must be valid variable names. O(compose) runs after them and can override them.
    type: dict
    default: {}
  command_timeout:
    description:
      - Seconds each command may take before the inventory fails.
    type: int
    default: 60
    env:
      - name: GEB_COMMAND_TIMEOUT
notes:
  - The plugin only reads. Read-only Grid Engine commands work for any user on a submit or
    admin host; no manager rights are needed. The state file is readable by its owner only
    (mode 0600, usually root), so O(nodes_from_state) needs that user, or O(managed_hosts).
  - A host group member that is not an execution host listed by C(qhost) is not added.
  - Values are those of the moment the inventory is read (or cached, see O(cache)).
  - "Environment variables for an AWX credential: E(GEB_CLUSTER), E(GEB_SGE_ROOT), E(GEB_SGE_CELL),
    E(GEB_SGE_QMASTER_PORT), E(GEB_SGE_BIN_DIR), E(GEB_QMASTER_HOST), E(GEB_SSH_USER),
    E(GEB_SSH_PRIVATE_KEY_FILE), E(GEB_SSH_EXECUTABLE), E(GEB_SSH_ARGS), E(GEB_INCLUDE_MASTER),
    E(GEB_NODES_FROM_STATE), E(GEB_STATE_PATH), E(GEB_MANAGED_HOSTS), E(GEB_PROTECTED_HOSTS),
    E(GEB_HOST_ADDRESS), E(GEB_REMOTE_USER), E(GEB_PRIVATE_KEY_FILE), E(GEB_COMMAND_TIMEOUT)."
seealso:
  - module: gridengine.balancer.sge_queue_facts
  - module: gridengine.balancer.elastic_plan
"""

EXAMPLES = r"""
# mycluster.sge.yml -- the controller is the qmaster (or has the Grid Engine client);
# ansible-playbook -i mycluster.sge.yml gridengine.balancer.loadbalance -e cluster=mycluster
plugin: gridengine.balancer.sge
cluster: mycluster

---
# remote.sge.yml -- read the cluster through ssh on its qmaster; reach the nodes by address
plugin: gridengine.balancer.sge
cluster: my-cluster
qmaster_host: qmaster.example.org
ssh_user: root
ssh_private_key_file: ~/.ssh/sge_inventory
sge_root: /opt/sge
host_address: ipv4
remote_user: root
private_key_file: ~/.ssh/cluster_nodes
connection_vars:
  ansible_python_interpreter: /usr/bin/python3

---
# awx.sge.yml -- everything else comes from the environment an AWX credential sets
# (GEB_CLUSTER, GEB_QMASTER_HOST, GEB_SSH_USER, GEB_SSH_PRIVATE_KEY_FILE, ...)
plugin: gridengine.balancer.sge

---
# only the hosts of queue gpu.q and of @compute, without disabled ones and login nodes;
# the site's cloud nodes are called cloud-NNN and may be removed by the balancer
plugin: gridengine.balancer.sge
cluster: mycluster
filters:
  queue: gpu.q
include_filters:
  - hostgroup: "@compute"
exclude_filters:
  - state: disabled
  - host: ["login*", "*.login.example.org"]
managed_hosts: ["cloud-*"]
protected_hosts: ["cloud-db*"]

---
# keyed groups by queue state and by architecture, composed variables, conditional groups
plugin: gridengine.balancer.sge
cluster: mycluster
compose:
  ansible_connection: "'local' if sge_master else 'ssh'"
  free_slots: sge_slots_free
groups:
  busy: sge_slots > 0 and sge_slots_free == 0
  not_reporting: sge_load_avg is none
keyed_groups:
  - key: sge_state
    prefix: state
  - key: sge_arch
    prefix: arch
  - key: sge_queues['all.q'].state | default('')
    prefix: all_q_state
    default_value: ok

---
# cached for five minutes in JSON files
plugin: gridengine.balancer.sge
cluster: mycluster
cache: true
cache_plugin: ansible.builtin.jsonfile
# a directory of the controller's user, not a fixed name in /tmp that another user could make first
cache_connection: ~/.cache/gridengine-balancer/inventory
cache_timeout: 300
"""

import fnmatch
import json
import os
import re
import shlex
import shutil
import socket
import stat
import subprocess

from ansible.errors import AnsibleParserError
from ansible.inventory.group import to_safe_group_name
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import (
    location_error,
    read_settings,
    sge_arch,
    sge_environment,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils import sge_inventory as inv

# The playbooks' rule for a cluster name (playbooks/loadbalance.yml) and the state directory's
# (module_utils/balancer_state.py): \A...\Z, since "$" also matches before a trailing newline.
_CLUSTER_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z")
_RESERVED_GROUPS = ("all", "ungrouped")
_USER_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.-]*\Z")
# IPv4, or IPv6 without brackets (ssh takes it so)
_IP_RE = re.compile(r"\A(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*)\Z")
_VAR_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_ERR_CHARS = 600
_STATE_ROOT = "/var/lib/gridengine-balancer"
_STATE_LIMIT = 64 * 1024 * 1024
# version of what this plugin adds to the cached model (the launched hosts)
_PLUGIN_MODEL = 2
_FILTER_KEYS = ("host", "queue", "hostgroup", "state", "arch")
_ADDRESS_CHOICES = ("address", "ipv4", "ipv6")
# Reads the state file on qmaster_host. The path is the script's first argument, never part of
# the script; the first line says whether the file exists, its owner and mode and the reader's uid.
_REMOTE_STATE_SCRIPT = (
    'p=$1; if [ -L "$p" ]; then echo "$p is a symbolic link" >&2; exit 3; fi; '
    'if [ ! -e "$p" ]; then echo "geb-state absent"; exit 0; fi; '
    'if [ ! -f "$p" ]; then echo "$p is not a regular file" >&2; exit 3; fi; '
    'meta=$(stat -c "%u %a" -- "$p") || exit 4; '
    'echo "geb-state $meta $(id -u)"; exec cat -- "$p"')


def _text(blob):
    if isinstance(blob, (bytes, bytearray)):
        return bytes(blob).decode("utf-8", "replace")
    return blob or ""


def _err_summary(err, out):
    text = _text(err).strip() or _text(out).strip() or "(no output)"
    text = " / ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= _ERR_CHARS else text[:_ERR_CHARS] + " ..."


def run_subprocess(argv, env, timeout):
    """Run ``argv`` (a list, no shell); return ``(rc, stdout bytes, stderr bytes)``."""
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=timeout, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def resolve_address(name, choice):
    """An address of host ``name`` as the controller resolves it, or None.

    ``choice``: ``ipv4``, ``ipv6`` or ``address`` (IPv4 when there is one, else IPv6)."""
    families = {"ipv4": [socket.AF_INET], "ipv6": [socket.AF_INET6],
                "address": [socket.AF_INET, socket.AF_INET6]}[choice]
    for family in families:
        try:
            infos = socket.getaddrinfo(name, None, family, socket.SOCK_STREAM)
        except (socket.gaierror, socket.herror, UnicodeError, OSError):
            continue
        for info in infos:
            address = info[4][0]
            if address:
                return address
    return None


def launched_hosts(content, path):
    """Names the state ``content`` (a parsed state file) marks ``launched``; ValueError when it
    does not hold a state (the message names ``path``)."""
    if not isinstance(content, dict):
        raise ValueError("state file %s holds a JSON %s, not an object"
                         % (path, type(content).__name__))
    nodes = content.get("nodes", {})
    if not isinstance(nodes, dict):
        raise ValueError("state file %s: 'nodes' is a %s, not an object"
                         % (path, type(nodes).__name__))
    return sorted(str(name) for name, rec in nodes.items()
                  if isinstance(rec, dict) and rec.get("launched") is True)


def _launched_sound(balancer):
    """The balancer part of a cached model: a list of names (only those among the model's hosts
    are ever used, as on a fresh read)."""
    launched = balancer.get("launched")
    return isinstance(launched, list) and all(isinstance(h, str) for h in launched)


def _as_list(value):
    return [value] if isinstance(value, str) else list(value)


def _match_any(value, patterns, fold=False):
    if fold:
        value = value.lower()
        return any(fnmatch.fnmatchcase(value, p.lower()) for p in patterns)
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _state_matches(letters, wanted):
    """True when one of ``wanted`` (state letters, their names, or ``ok``) is shown."""
    for item in wanted:
        if item == inv.STATE_OK:
            if not letters:
                return True
        elif item in letters or any(inv.state_group_suffix(x) == item for x in letters):
            return True
    return False


def host_matches(facts, name, spec):
    """True when Grid Engine host ``name`` with ``facts`` (model entry) matches filter ``spec``."""
    for key, values in spec.items():
        values = _as_list(values)
        if key == "host":
            ok = _match_any(name, values, fold=True)
        elif key == "queue":
            ok = any(_match_any(q, values) for q in facts["queues"])
        elif key == "hostgroup":
            wanted = [v if v.startswith("@") else "@" + v for v in values]
            ok = any(_match_any(g, wanted) for g in facts["hostgroups"])
        elif key == "state":
            ok = _state_matches(facts["state"], values)
        else:   # arch
            ok = _match_any(facts["arch"] or "", values)
        if not ok:
            return False
    return True


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """Hosts of a Grid Engine cluster read from its qmaster."""

    NAME = "gridengine.balancer.sge"

    def __init__(self):
        super().__init__()
        # replaced by the unit tests: (argv, env, timeout) -> (rc, stdout, stderr)
        self._runner = run_subprocess
        # replaced by the unit tests: (name, "address"|"ipv4"|"ipv6") -> address or None
        self._resolver = resolve_address

    def verify_file(self, path):
        if super().verify_file(path):
            return path.endswith((".sge.yml", ".sge.yaml"))
        return False

    # ------------------------------------------------------------------ options

    def _fail(self, message):
        raise AnsibleParserError("%s: %s" % (self.NAME, message))

    def _check_filter(self, option, spec):
        if not isinstance(spec, dict):
            self._fail("%s: %r is not a mapping of %s" % (option, spec, ", ".join(_FILTER_KEYS)))
        for key, value in spec.items():
            if key not in _FILTER_KEYS:
                self._fail("%s: unknown key %r (known: %s)" % (option, key, ", ".join(_FILTER_KEYS)))
            values = [value] if isinstance(value, str) else value
            if not isinstance(values, list) or not values \
                    or not all(isinstance(v, str) and v for v in values):
                self._fail("%s: %s must be a non-empty string or list of strings, got %r"
                           % (option, key, value))

    def _check_options(self):
        cluster = self.get_option("cluster")
        if not isinstance(cluster, str) or not _CLUSTER_RE.match(cluster) \
                or cluster in _RESERVED_GROUPS:
            self._fail("cluster %r is not a cluster name (letters, digits, '_', '.' and '-', "
                       "starting with a letter or digit, at most 255 characters; not 'all' or "
                       "'ungrouped')" % (cluster,))
        msg = location_error(self.get_option("sge_root"), self.get_option("sge_cell"))
        if msg:
            self._fail(msg)
        host = self.get_option("qmaster_host")
        if host is not None and not (inv.valid_host(host) or _IP_RE.match(host)):
            self._fail("qmaster_host %r is not a host name or IP address" % (host,))
        for option in ("ssh_user", "remote_user"):
            user = self.get_option(option)
            if user is not None and not _USER_RE.match(user):
                self._fail("%s %r is not a user name" % (option, user))
        timeout = self.get_option("command_timeout")
        if timeout is None or timeout < 1:
            self._fail("command_timeout must be at least 1 (seconds), got %r" % (timeout,))
        self._check_filter("filters", self.get_option("filters") or {})
        for option in ("include_filters", "exclude_filters"):
            for index, spec in enumerate(self.get_option(option) or []):
                self._check_filter("%s[%d]" % (option, index), spec)
        for option in ("managed_hosts", "protected_hosts"):
            for pattern in self.get_option(option) or []:
                if not isinstance(pattern, str) or not pattern.strip():
                    self._fail("%s: %r is not a host name pattern" % (option, pattern))
        for name in self.get_option("connection_vars") or {}:
            if not isinstance(name, str) or not _VAR_RE.match(name):
                self._fail("connection_vars: %r is not a variable name" % (name,))

    def state_path(self):
        return self.get_option("state_path") or os.path.join(
            _STATE_ROOT, self.get_option("cluster"), "state.json")

    # ------------------------------------------------------------------ commands

    def _where(self):
        host = self.get_option("qmaster_host")
        return "on %s through ssh" % host if host else "on the controller"

    def _local_program(self, name):
        bin_dir = self.get_option("sge_bin_dir")
        if bin_dir:
            return os.path.join(bin_dir, name)
        root = self.get_option("sge_root")
        settings = read_settings(root, self.get_option("sge_cell"))
        arch = sge_arch(root, settings)
        if arch:
            path = os.path.join(root, "bin", arch, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
        path = shutil.which(name)
        if path:
            return path
        raise AnsibleParserError(
            "%s: %s not found in %s or PATH; install the Grid Engine client, set sge_bin_dir, or "
            "set qmaster_host to read the cluster through ssh"
            % (self.NAME, name, os.path.join(root, "bin", arch or "<arch>")))

    def _sge_env(self):
        root = self.get_option("sge_root")
        cell = self.get_option("sge_cell")
        port = self.get_option("sge_qmaster_port")
        if self.get_option("qmaster_host"):
            env = {"SGE_ROOT": root, "SGE_CELL": cell, "LC_ALL": "C"}
            if port:
                env["SGE_QMASTER_PORT"] = str(int(port))
            return env
        return sge_environment(root, cell, port)

    def _ssh_argv(self, remote):
        """The ssh argv that runs the words ``remote`` on qmaster_host."""
        argv = [self.get_option("ssh_executable"), "-o", "BatchMode=yes"]
        argv += list(self.get_option("ssh_args") or [])
        if self.get_option("ssh_private_key_file"):
            argv += ["-i", self.get_option("ssh_private_key_file")]
        if self.get_option("ssh_user"):
            argv += ["-l", self.get_option("ssh_user")]
        # ssh hands its command to the remote shell as one string: every word is quoted
        argv += ["--", self.get_option("qmaster_host"),
                 " ".join(shlex.quote(word) for word in remote)]
        return argv

    def command(self, name, args):
        """``(argv, env, label)`` for Grid Engine command ``name`` with ``args``."""
        label = " ".join([name] + list(args))
        sge_env = self._sge_env()
        host = self.get_option("qmaster_host")
        if not host:
            env = dict(os.environ)
            env.update(sge_env)
            return [self._local_program(name)] + list(args), env, label
        bin_dir = self.get_option("sge_bin_dir")
        program = os.path.join(bin_dir, name) if bin_dir else name
        remote = ["env"] + ["%s=%s" % (k, sge_env[k]) for k in sorted(sge_env)]
        remote += [program] + list(args)
        env = dict(os.environ)
        env["LC_ALL"] = "C"
        return self._ssh_argv(remote), env, label

    def _call(self, argv, env, label):
        timeout = self.get_option("command_timeout")
        try:
            return self._runner(argv, env, timeout)
        except subprocess.TimeoutExpired:
            raise AnsibleParserError("%s: %s %s did not answer within %s s (command_timeout)"
                                     % (self.NAME, label, self._where(), timeout))
        except OSError as exc:
            raise AnsibleParserError("%s: cannot run %s %s: %s"
                                     % (self.NAME, argv[0], self._where(), exc))

    def _run(self, name, args, ok_rc=None):
        """Run a command; return ``(rc, stdout, stderr)``. Raises AnsibleParserError naming the
        command, rc and stderr unless rc is 0 or ``ok_rc(rc, out, err)`` accepts it."""
        argv, env, label = self.command(name, args)
        rc, out, err = self._call(argv, env, label)
        if rc == 0 or (ok_rc is not None and ok_rc(rc, out, err)):
            return rc, out, err
        host = self.get_option("qmaster_host")
        if host and rc == 255:
            raise AnsibleParserError("%s: ssh to %s failed (rc 255) running %s: %s"
                                     % (self.NAME, host, label, _err_summary(err, out)))
        raise AnsibleParserError(
            "%s: %s failed (rc %s) %s: %s (SGE_ROOT=%s, SGE_CELL=%s; is the qmaster up?)"
            % (self.NAME, label, rc, self._where(), _err_summary(err, out),
               self.get_option("sge_root"), self.get_option("sge_cell")))

    # ------------------------------------------------------------------ state file

    def _state_problem(self, path, problem):
        return AnsibleParserError(
            "%s: cannot take the launched hosts from the balancer's state file %s %s: %s "
            "(nodes_from_state: false and managed_hosts name the removable hosts instead)"
            % (self.NAME, path, self._where(), problem))

    @staticmethod
    def _owner_problem(owner, mode, reader):
        if owner not in (0, reader):
            return "owned by uid %d, not by root or the reading user (uid %d)" % (owner, reader)
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            return "writable by group or others (mode %04o)" % stat.S_IMODE(mode)
        return None

    def _read_state_local(self, path):
        """``(bytes or None, problem or None)``; None, None when the file does not exist."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            return None, exc.strerror or str(exc)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None, "not a regular file"
            problem = self._owner_problem(info.st_uid, info.st_mode, os.geteuid())
            if problem:
                return None, problem
            chunks = []
            size = 0
            while size <= _STATE_LIMIT:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks), None
        except OSError as exc:
            return None, exc.strerror or str(exc)
        finally:
            os.close(fd)

    def _read_state_remote(self, path):
        remote = ["env", "LC_ALL=C", "sh", "-c", _REMOTE_STATE_SCRIPT, "sh", path]
        env = dict(os.environ)
        env["LC_ALL"] = "C"
        label = "reading %s" % path
        rc, out, err = self._call(self._ssh_argv(remote), env, label)
        if rc == 255:
            raise AnsibleParserError("%s: ssh to %s failed (rc 255) %s: %s"
                                     % (self.NAME, self.get_option("qmaster_host"), label,
                                        _err_summary(err, out)))
        if rc != 0:
            return None, "rc %s: %s" % (rc, _err_summary(err, out))
        head, _sep, body = bytes(out or b"").partition(b"\n")
        words = _text(head).split()
        if words == ["geb-state", "absent"]:
            return None, None
        try:
            if len(words) != 4 or words[0] != "geb-state":
                raise ValueError
            owner, mode, reader = int(words[1]), int(words[2], 8), int(words[3])
        except ValueError:
            return None, "unexpected answer %r" % _text(head)[:80]
        problem = self._owner_problem(owner, mode, reader)
        return (None, problem) if problem else (body, None)

    def read_launched(self):
        """``(names, path, found)``: the hosts the state file marks launched."""
        path = self.state_path()
        if self.get_option("qmaster_host"):
            data, problem = self._read_state_remote(path)
        else:
            data, problem = self._read_state_local(path)
        if problem:
            raise self._state_problem(path, problem)
        if data is None:
            return [], path, False
        if len(data) > _STATE_LIMIT:
            raise self._state_problem(path, "larger than %d bytes" % _STATE_LIMIT)
        try:
            content = json.loads(_text(data))
        except ValueError as exc:
            raise self._state_problem(path, "not a state (not valid JSON: %s)" % exc)
        try:
            return launched_hosts(content, path), path, True
        except ValueError as exc:
            raise self._state_problem(path, "not a state (%s)" % exc)

    # ------------------------------------------------------------------ reading

    def read_cluster(self):
        """Run the commands and return the model of :func:`sge_inventory.build_inventory`, with
        the launched hosts of the state file under ``balancer``."""
        _rc, qhost_xml, _err = self._run("qhost", inv.qhost_args())
        group_text = None
        names = None
        pre_warnings = []
        if self.get_option("hostgroups"):
            def no_groups(rc, out, err):
                return rc == 1 and inv.NO_HOSTGROUP_LIST in _text(err) + _text(out)
            rc, out, _err = self._run("qconf", inv.shgrpl_args(), ok_rc=no_groups)
            names = inv.parse_hostgroup_names(out if rc == 0 else b"", pre_warnings)
            group_text = b""
            if names:
                def harmless(rc, out, err):
                    return rc == 1 and inv.hostgroup_error_is_harmless(err)
                _rc, group_text, _err = self._run("qconf", inv.shgrp_args(names), ok_rc=harmless)
        master = None
        if self.get_option("include_master"):
            _rc, out, _err = self._run("qconf", inv.master_args())
            master = _text(out).strip()
            if not master:
                raise AnsibleParserError("%s: qconf -sss printed no qmaster host %s"
                                         % (self.NAME, self._where()))
        balancer = {"schema": _PLUGIN_MODEL, "launched": [], "state_path": None,
                    "state_found": False}
        if self.get_option("nodes_from_state"):
            launched, path, found = self.read_launched()
            balancer.update(launched=launched, state_path=path, state_found=found)
        try:
            model = inv.build_inventory(qhost_xml, hostgroup_text=group_text,
                                        hostgroup_names=names, master=master)
        except inv.InventoryDataError as exc:
            raise AnsibleParserError("%s: %s (read %s)" % (self.NAME, exc, self._where()))
        model["warnings"] = pre_warnings + model["warnings"]
        model["balancer"] = balancer
        return model

    # ------------------------------------------------------------------ inventory

    def _add_group(self, raw, seen):
        """Add group ``raw`` (``<cluster>_<rest>``): the cluster part is kept as it is (the
        playbooks look for ``<cluster>_master``), the rest made safe."""
        cluster = self.get_option("cluster")
        prefix = cluster + "_"
        if raw.startswith(prefix):
            name = prefix + to_safe_group_name(raw[len(prefix):], force=True, silent=True)
        else:
            name = to_safe_group_name(raw, force=True, silent=True)
        if name in seen and seen[name] != raw:
            self.display.warning("%s: groups %r and %r both become %r; their hosts are merged"
                                 % (self.NAME, seen[name], raw, name))
        seen.setdefault(name, raw)
        return self.inventory.add_group(name)

    def select_hosts(self, model):
        """Grid Engine names of the execution hosts that pass the filters, sorted."""
        hosts = model["hosts"]
        filters = self.get_option("filters") or {}
        selected = set(h for h in hosts if host_matches(hosts[h], h, filters))
        for spec in self.get_option("include_filters") or []:
            selected.update(h for h in hosts if host_matches(hosts[h], h, spec))
        for spec in self.get_option("exclude_filters") or []:
            selected.difference_update([h for h in selected if host_matches(hosts[h], h, spec)])
        return sorted(selected)

    def node_hosts(self, model, selected):
        """The hosts of ``<cluster>_nodes``: of ``selected``, those the state marks launched or
        ``managed_hosts`` names, minus ``protected_hosts`` and the qmaster."""
        launched = set(n.lower() for n in model.get("balancer", {}).get("launched", []))
        managed = self.get_option("managed_hosts") or []
        protected = self.get_option("protected_hosts") or []
        master = model.get("master")
        out = []
        for host in selected:
            if host == master or _match_any(host, protected, fold=True):
                continue
            if host.lower() in launched or _match_any(host, managed, fold=True):
                out.append(host)
        return out

    def _resolve(self, host, choice, cache):
        key = (host, choice)
        if key not in cache:
            cache[key] = self._resolver(host, choice)
        return cache[key]

    def _name_for(self, host, choice, cache):
        if choice == "name":
            return host
        if choice == "short":
            return host.split(".", 1)[0]
        return self._resolve(host, choice, cache)

    def inventory_names(self, hosts, cache):
        """``{Grid Engine name: inventory name}`` by the ``hostnames`` preferences."""
        out = {}
        taken = {}
        for host in hosts:
            name = None
            for choice in list(self.get_option("hostnames") or []) + ["name"]:
                name = self._name_for(host, choice, cache)
                if name:
                    break
            if name != host and name in taken:
                self.display.warning("%s: hosts %s and %s would both be named %s; %s keeps its "
                                     "Grid Engine name" % (self.NAME, taken[name], host, name, host))
                name = host
            taken.setdefault(name, host)
            out[host] = name
        return out

    def populate(self, model):
        cluster = self.get_option("cluster")
        for message in model.get("warnings", []):
            self.display.warning("%s: %s" % (self.NAME, message))
        for message in model.get("notes", []):
            self.display.vvv("%s: %s" % (self.NAME, message))
        balancer = model.get("balancer", {})
        if self.get_option("nodes_from_state"):
            self.display.vvv("%s: state file %s: %s" % (
                self.NAME, balancer.get("state_path"),
                "launched: %s" % (", ".join(balancer.get("launched", [])) or "none")
                if balancer.get("state_found") else "not there (no poll yet): no launched host"))
        self.inventory.add_group(cluster)
        master = model.get("master")
        selected = self.select_hosts(model)
        hosts = list(selected)
        if master and master not in selected:
            hosts.append(master)
        cache = {}
        names = self.inventory_names(hosts, cache)
        nodes = self.node_hosts(model, selected)
        node_set = set(nodes)
        qmaster_host = self.get_option("qmaster_host")
        address_choice = self.get_option("host_address") or "none"
        fixed = {}
        if self.get_option("remote_user"):
            fixed["ansible_user"] = self.get_option("remote_user")
        if self.get_option("private_key_file"):
            fixed["ansible_ssh_private_key_file"] = self.get_option("private_key_file")
        fixed.update(self.get_option("connection_vars") or {})
        for host in hosts:
            name = names[host]
            self.inventory.add_host(name, group=cluster)
            variables = inv.host_variables(model, host, cluster)
            variables["sge_name"] = host
            variables["sge_node"] = host in node_set
            for choice in _ADDRESS_CHOICES:
                if (host, choice) in cache and cache[(host, choice)]:
                    variables["sge_address"] = cache[(host, choice)]
                    break
            if host == master and qmaster_host:
                variables["ansible_host"] = qmaster_host
            elif address_choice != "none":
                value = self._name_for(host, address_choice, cache)
                if value:
                    variables["ansible_host"] = value
                    if address_choice in _ADDRESS_CHOICES:
                        variables["sge_address"] = value
                else:
                    self.display.warning("%s: %s does not resolve on the controller "
                                         "(host_address: %s); ansible_host not set"
                                         % (self.NAME, host, address_choice))
            variables.update(fixed)
            for key, value in variables.items():
                self.inventory.set_variable(name, key, value)
        groups = {}
        selected_set = set(selected)
        for raw, members in inv.group_names(model, cluster).items():
            if raw == "%s_master" % cluster:
                groups[raw] = [m for m in members if m in names]
            else:
                groups[raw] = [m for m in members if m in selected_set]
        groups["%s_exec" % cluster] = list(selected)
        groups["%s_nodes" % cluster] = nodes
        groups["%s_static" % cluster] = [h for h in selected if h not in node_set]
        seen = {cluster: cluster}
        for raw, members in sorted(groups.items()):
            group = self._add_group(raw, seen)
            self.inventory.add_child(cluster, group)
            for host in members:
                self.inventory.add_host(names[host], group=group)
        strict = self.get_option("strict")
        for host in hosts:
            name = names[host]
            hostvars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, name,
                                              strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, name,
                                           strict=strict)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache=cache)
        self._read_config_data(path)
        self._check_options()
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        model = None
        if use_cache:
            try:
                model = self._cache[cache_key]
            except KeyError:
                update_cache = True
            if not isinstance(model, dict) or model.get("schema") != inv.MODEL_SCHEMA \
                    or not isinstance(model.get("balancer"), dict) \
                    or model["balancer"].get("schema") != _PLUGIN_MODEL:
                model = None
                update_cache = True
            elif not inv.model_is_sound(model) or not _launched_sound(model["balancer"]):
                # a cache is a file on disk: names in it pass the checks a fresh read applies
                self.display.warning("%s: the cached inventory %s holds names or a shape this plugin "
                                     "does not write; read again from Grid Engine" % (self.NAME, cache_key))
                model = None
                update_cache = True
        if model is None:
            model = self.read_cluster()
        if update_cache:
            self._cache[cache_key] = model
        self.populate(model)
