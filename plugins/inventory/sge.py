# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: sge
short_description: Grid Engine execution hosts, grouped by host group, queue and state
version_added: 0.1.0
author:
  - gridengine.balancer developers (@gridengine)
description:
  - Reads the hosts of a Grid Engine cluster from its qmaster and makes them an Ansible inventory.
  - Runs C(qhost -xml -q) (hosts, slots, load, memory, queue instances and their state letters),
    C(qconf -shgrpl) and one C(qconf -shgrp @group ...) for all host groups (nested host groups
    are resolved), and with O(include_master) C(qconf -sss) (the qmaster host).
  - The commands run on the controller (it is the qmaster or has the Grid Engine client
    installed) or, with O(qmaster_host), on that host through C(ssh -o BatchMode=yes).
  - Every host is in the group O(cluster) and in C(<cluster>_exec); it is also in
    C(<cluster>_hostgroup_<name>) for every host group it belongs to (C(@allhosts) gives
    C(<cluster>_hostgroup_allhosts)), C(<cluster>_queue_<queue>) for every queue it has an
    instance of (C(all.q) gives C(<cluster>_queue_all_q)) and C(<cluster>_state_<state>) for
    every state letter one of its queue instances shows (C(d) gives C(<cluster>_state_disabled),
    C(u) C(<cluster>_state_unknown)); a host whose queue instances show no letter is in
    C(<cluster>_state_ok). Group names are made safe with Ansible's C(to_safe_group_name).
  - "Host variables: C(sge_cluster), C(sge_exec), C(sge_arch), C(sge_num_proc), C(sge_load_avg),
    C(sge_mem_total), C(sge_mem_used), C(sge_swap_total), C(sge_swap_used) (bytes; C(null) when
    the host reports no load), C(sge_slots), C(sge_slots_used), C(sge_slots_reserved),
    C(sge_slots_free) (sums over the host's queue instances), C(sge_queues) (per queue: C(qtype),
    C(slots), C(used), C(reserved), C(state)), C(sge_state) (sorted state letters over all queue
    instances), C(sge_hostgroups) and, with O(include_master), C(sge_master)."
  - Names read from Grid Engine are data. A host whose name is not an RFC 1123 host name, a queue
    or host group whose name Grid Engine itself would not accept is skipped with a warning; such
    a name never reaches a command line or a group.
  - The configuration file name must end in C(.sge.yml) or C(.sge.yaml).
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
      - Name of the cluster. It is the group of every host and the prefix of every other group
        this plugin makes, so two clusters can share one inventory.
      - Letters, digits and C(_), not starting with a digit.
    type: str
    default: sge
  sge_root:
    description:
      - Grid Engine installation directory (E(SGE_ROOT)) on the host the commands run on.
    type: path
    default: /var/lib/gridengine
    env:
      - name: SGE_ROOT
  sge_cell:
    description:
      - Grid Engine cell (E(SGE_CELL)), one directory name under O(sge_root) (letters, digits,
        V(_), V(.), V(-), not starting with V(.) or V(-)).
    type: str
    default: default
    env:
      - name: SGE_CELL
  sge_qmaster_port:
    description:
      - TCP port of the qmaster (E(SGE_QMASTER_PORT)).
      - When not set, commands run on the controller take it from
        C($SGE_ROOT/$SGE_CELL/common/settings.sh); otherwise Grid Engine's own default applies.
    type: int
  sge_bin_dir:
    description:
      - Directory of C(qhost) and C(qconf).
      - When not set, commands run on the controller are looked up in C($SGE_ROOT/bin/<arch>),
        then in E(PATH); commands run through ssh are looked up in the remote E(PATH).
    type: path
  qmaster_host:
    description:
      - Run the commands on this host through ssh instead of on the controller.
      - A host name (RFC 1123) or an IP address.
    type: str
  ssh_user:
    description:
      - Remote user for O(qmaster_host) (C(ssh -l)). Default is ssh's own choice.
    type: str
  ssh_executable:
    description:
      - The ssh client used with O(qmaster_host), a program name looked up in E(PATH) or an
        absolute path.
    type: str
    default: ssh
  ssh_args:
    description:
      - Further options for the ssh client, one list item per argument (for example
        C([-i, /path/key, -o, StrictHostKeyChecking=accept-new])).
      - C(-o BatchMode=yes) is always passed first, so ssh never waits for a password.
    type: list
    elements: str
    default: []
  hostgroups:
    description:
      - Read the host groups (C(qconf -shgrpl), C(qconf -shgrp)) and make their groups.
    type: bool
    default: true
  include_master:
    description:
      - Read the qmaster host with C(qconf -sss), add it (also when it runs no execution
        daemon) to the groups O(cluster) and C(<cluster>_master) and set C(sge_master) on
        every host.
    type: bool
    default: false
  command_timeout:
    description:
      - Seconds each command may take before the inventory fails.
    type: int
    default: 60
notes:
  - The plugin only reads. Read-only Grid Engine commands work for any user on a submit or
    admin host; no manager rights are needed.
  - A host group member that is not an execution host listed by C(qhost) is not added.
  - Values are those of the moment the inventory is read (or cached, see O(cache)).
seealso:
  - module: gridengine.balancer.sge_queue_facts
"""

EXAMPLES = r"""
# mycluster.sge.yml -- the controller is the qmaster (or has the Grid Engine client)
plugin: gridengine.balancer.sge
cluster: mycluster
include_master: true

---
# remote.sge.yml -- read the cluster through ssh on its qmaster
plugin: gridengine.balancer.sge
cluster: prod
qmaster_host: qmaster.example.org
ssh_user: sgeadmin
ssh_args: [-i, ~/.ssh/sge_inventory]
sge_root: /opt/sge
sge_cell: default

---
# keyed groups by queue state and by architecture, composed variables, conditional groups
plugin: gridengine.balancer.sge
cluster: mycluster
include_master: true
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
cache_connection: /tmp/sge_inventory_cache
cache_timeout: 300
"""

import os
import re
import shlex
import shutil
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

_CLUSTER_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED_GROUPS = ("all", "ungrouped")
_USER_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.-]*\Z")
# IPv4, or IPv6 without brackets (ssh takes it so)
_IP_RE = re.compile(r"\A(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*)\Z")
_ERR_CHARS = 600


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


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """Hosts of a Grid Engine cluster read from its qmaster."""

    NAME = "gridengine.balancer.sge"

    def __init__(self):
        super().__init__()
        # replaced by the unit tests: (argv, env, timeout) -> (rc, stdout, stderr)
        self._runner = run_subprocess

    def verify_file(self, path):
        if super().verify_file(path):
            return path.endswith((".sge.yml", ".sge.yaml"))
        return False

    # ------------------------------------------------------------------ options

    def _check_options(self):
        cluster = self.get_option("cluster")
        if not isinstance(cluster, str) or not _CLUSTER_RE.match(cluster) \
                or cluster in _RESERVED_GROUPS:
            raise AnsibleParserError(
                "%s: cluster %r is not usable as a group name (letters, digits and '_', not "
                "starting with a digit, not 'all' or 'ungrouped')" % (self.NAME, cluster))
        msg = location_error(self.get_option("sge_root"), self.get_option("sge_cell"))
        if msg:
            raise AnsibleParserError("%s: %s" % (self.NAME, msg))
        host = self.get_option("qmaster_host")
        if host is not None and not (inv.valid_host(host) or _IP_RE.match(host)):
            raise AnsibleParserError("%s: qmaster_host %r is not a host name or IP address"
                                     % (self.NAME, host))
        user = self.get_option("ssh_user")
        if user is not None and not _USER_RE.match(user):
            raise AnsibleParserError("%s: ssh_user %r is not a user name" % (self.NAME, user))
        timeout = self.get_option("command_timeout")
        if timeout is None or timeout < 1:
            raise AnsibleParserError("%s: command_timeout must be at least 1 (seconds), got %r"
                                     % (self.NAME, timeout))

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
        argv = [self.get_option("ssh_executable"), "-o", "BatchMode=yes"]
        argv += list(self.get_option("ssh_args") or [])
        if self.get_option("ssh_user"):
            argv += ["-l", self.get_option("ssh_user")]
        # ssh hands its command to the remote shell as one string: every word is quoted
        argv += ["--", host, " ".join(shlex.quote(word) for word in remote)]
        env = dict(os.environ)
        env["LC_ALL"] = "C"
        return argv, env, label

    def _run(self, name, args, ok_rc=None):
        """Run a command; return ``(rc, stdout, stderr)``. Raises AnsibleParserError naming the
        command, rc and stderr unless rc is 0 or ``ok_rc(rc, out, err)`` accepts it."""
        argv, env, label = self.command(name, args)
        timeout = self.get_option("command_timeout")
        try:
            rc, out, err = self._runner(argv, env, timeout)
        except subprocess.TimeoutExpired:
            raise AnsibleParserError("%s: %s %s did not answer within %s s (command_timeout)"
                                     % (self.NAME, label, self._where(), timeout))
        except OSError as exc:
            raise AnsibleParserError("%s: cannot run %s %s: %s"
                                     % (self.NAME, argv[0], self._where(), exc))
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

    def read_cluster(self):
        """Run the commands and return the model of :func:`sge_inventory.build_inventory`."""
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
        try:
            model = inv.build_inventory(qhost_xml, hostgroup_text=group_text,
                                        hostgroup_names=names, master=master)
        except inv.InventoryDataError as exc:
            raise AnsibleParserError("%s: %s (read %s)" % (self.NAME, exc, self._where()))
        model["warnings"] = pre_warnings + model["warnings"]
        return model

    # ------------------------------------------------------------------ inventory

    def _add_group(self, raw, seen):
        name = to_safe_group_name(raw, force=True, silent=True)
        if name in seen and seen[name] != raw:
            self.display.warning("%s: groups %r and %r both become %r; their hosts are merged"
                                 % (self.NAME, seen[name], raw, name))
        seen.setdefault(name, raw)
        return self.inventory.add_group(name)

    def populate(self, model):
        cluster = self.get_option("cluster")
        for message in model.get("warnings", []):
            self.display.warning("%s: %s" % (self.NAME, message))
        for message in model.get("notes", []):
            self.display.vvv("%s: %s" % (self.NAME, message))
        self.inventory.add_group(cluster)
        hosts = sorted(model["hosts"])
        if model.get("master") and model["master"] not in model["hosts"]:
            hosts.append(model["master"])
        for host in hosts:
            self.inventory.add_host(host, group=cluster)
            for key, value in inv.host_variables(model, host, cluster).items():
                self.inventory.set_variable(host, key, value)
        seen = {cluster: cluster}
        for raw, members in sorted(inv.group_names(model, cluster).items()):
            group = self._add_group(raw, seen)
            self.inventory.add_child(cluster, group)
            for host in members:
                self.inventory.add_host(host, group=group)
        strict = self.get_option("strict")
        for host in hosts:
            hostvars = self.inventory.get_host(host).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host,
                                              strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host,
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
            if not isinstance(model, dict) or model.get("schema") != inv.MODEL_SCHEMA:
                model = None
                update_cache = True
        if model is None:
            model = self.read_cluster()
        if update_cache:
            self._cache[cache_key] = model
        self.populate(model)
