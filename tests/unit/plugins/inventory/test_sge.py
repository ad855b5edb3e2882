# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin gridengine.balancer.sge (plugins/inventory/sge.py).

Grid Engine's answers are the real captures in tests/unit/fixtures/inventory/ (PROVENANCE.md
there), handed to the plugin by a fake runner: each table row gives the command expected and
its rc/stdout/stderr. The plugin runs with its real options (DOCUMENTATION plus the
ansible.builtin constructed/inventory_cache fragments, registered as the plugin loader would),
a real InventoryData and DataLoader. At the end, two runs of the real ``ansible-inventory``
with stand-in ``qhost``/``qconf`` scripts, and one with a stand-in ``ssh`` that hands its
command to ``sh -c`` as sshd would.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from unittest.mock import MagicMock

import pytest
import yaml

from ansible import constants as C
from ansible.errors import AnsibleError, AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.doc_fragments import constructed as constructed_fragment
from ansible.plugins.doc_fragments import inventory_cache as cache_fragment

from ansible_collections.gridengine.balancer.plugins.inventory import sge

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "..", "fixtures", "inventory")
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def fixture(name, replace=()):
    with open(os.path.join(FIX, name), "rb") as handle:
        data = handle.read()
    for old, new in replace:
        assert old.encode() in data, (name, old)
        data = data.replace(old.encode(), new.encode())
    return data


def _register_options():
    """What the plugin loader does with the plugin's documentation."""
    options = dict(yaml.safe_load(sge.DOCUMENTATION)["options"])
    for fragment in (constructed_fragment, cache_fragment):
        options.update(yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)["options"])
    C.config.initialize_plugin_configuration_definitions("inventory", sge.InventoryModule.NAME,
                                                         options)


_register_options()

# command -> (rc, stdout, stderr) of the real cluster, 2026-11-23 (PROVENANCE.md)
QHOST = "qhost -xml -q"
SHGRPL = "qconf -shgrpl"
SHGRP_ALL = "qconf -shgrp @allhosts"
SSS = "qconf -sss"
NO_GROUPS = (1, b"", b"no host group list defined\n")
QMASTER_DOWN = (1, b"", fixture("qhost_port6999.err"))
# the real capture cut off before its last host, as a dying qhost could leave it
TRUNCATED = fixture("qhost_xml_q_3hosts.xml").split(b" <host name='vm'>")[0]
# the master without an execd: vm's entry renamed to another node
SSH_REFUSED = (255, b"", b"ssh: connect to host qmaster port 22: Connection refused\n")
NO_VM_EXECD = fixture("qhost_xml_q_3hosts.xml", (("<host name='vm'>", "<host name='node003'>"),))


class FakeRunner(object):
    """Answers commands from a table; records every argv."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv, env, timeout):
        self.calls.append((list(argv), dict(env), timeout))
        key = command_key(argv)
        if key not in self.answers:
            raise AssertionError("unexpected command %r" % key)
        answer = self.answers[key]
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def commands(self):
        return [command_key(a) for a, _e, _t in self.calls]


def command_key(argv):
    """``qhost -xml -q`` for a local argv, and for ssh the remote command after ``env VAR=...``;
    ``read-state PATH`` for the script that reads the state file through ssh."""
    if os.path.basename(argv[0]) == "ssh":
        words = shlex.split(argv[-1])
        assert words[0] == "env", words
        words = [w for w in words[1:] if not re.match(r"\ASGE_[A-Z_]+=|\ALC_ALL=", w)]
        if words[:2] == ["sh", "-c"]:
            assert words[2] == sge._REMOTE_STATE_SCRIPT and words[3] == "sh", words
            return "read-state " + words[4]
        argv = words
    return " ".join([os.path.basename(argv[0])] + list(argv[1:]))


def run_plugin(tmp_path, config, answers, cache=False, name="cluster.sge.yml"):
    path = tmp_path / name
    config = dict(config)
    config.setdefault("plugin", "gridengine.balancer.sge")
    config.setdefault("sge_bin_dir", "/opt/sge/bin/lx-amd64")
    # The cases below were written when include_master defaulted to false; they keep that, and
    # test_sge_playbook_groups.py covers the default (true). The balancer's state file is looked
    # for in the test's own directory (absent unless a test writes it), never in /var/lib.
    config.setdefault("include_master", False)
    config.setdefault("state_path", str(tmp_path / "state.json"))
    return parse_config(path, config, answers, cache=cache)


def parse_config(path, config, answers, resolver=None, cache=False):
    """Write ``config`` to ``path`` and parse it with the plugin, Grid Engine's answers from
    ``answers`` (and host names from ``resolver`` when given); (inventory, runner, plugin)."""
    path.write_text(yaml.safe_dump(config))
    plugin = sge.InventoryModule()
    plugin._load_name = sge.InventoryModule.NAME
    plugin.display = MagicMock()
    runner = FakeRunner(answers)
    plugin._runner = runner
    if resolver is not None:
        plugin._resolver = resolver
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), str(path), cache=cache)
    try:  # what InventoryManager does after parse()
        plugin.update_cache_if_changed()
    except AttributeError:  # no cache configured
        pass
    return inventory, runner, plugin


def groups_of(inventory):
    """{group: sorted host names} of the groups that have hosts, without all/ungrouped."""
    out = {}
    for name, group in inventory.groups.items():
        if name in ("all", "ungrouped"):
            continue
        hosts = sorted(h.name for h in group.get_hosts())
        if hosts:
            out[name] = hosts
    return out


def hostvars(inventory, host):
    return inventory.get_host(host).vars


def warnings_of(plugin):
    return [c.args[0] for c in plugin.display.warning.call_args_list]


# --------------------------------------------------------------------------- groups and hostvars

CASES = [
    {
        "id": "real-vm-only-with-master",
        "config": {"cluster": "mycluster", "include_master": True},
        "answers": {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""),
                    SHGRPL: (0, fixture("qconf_shgrpl.txt"), b""),
                    SHGRP_ALL: (0, fixture("qconf_shgrp_allhosts_vm.txt"), b""),
                    SSS: (0, fixture("qconf_sss.txt"), b"")},
        "commands": [QHOST, SHGRPL, SHGRP_ALL, SSS],
        "groups": {
            "mycluster": ["vm"], "mycluster_exec": ["vm"],
            "mycluster_static": ["vm"], "mycluster_master": ["vm"],
            "mycluster_hostgroup_allhosts": ["vm"], "mycluster_queue_all_q": ["vm"],
            "mycluster_state_ok": ["vm"],
        },
        "hostvars": {"vm": {"sge_cluster": "mycluster", "sge_master": True, "sge_exec": True,
                            "sge_slots": 2, "sge_slots_used": 0, "sge_slots_free": 2,
                            "sge_load_avg": 0.60, "sge_state": [],
                            "sge_hostgroups": ["@allhosts"], "sge_arch": "lx-amd64"}},
    },
    {
        "id": "real-three-hosts-default-cluster",
        "config": {},
        "answers": {QHOST: (0, fixture("qhost_xml_q_3hosts.xml"), b""),
                    SHGRPL: (0, fixture("qconf_shgrpl.txt"), b""),
                    SHGRP_ALL: (0, fixture("qconf_shgrp_allhosts_3hosts.txt"), b"")},
        "commands": [QHOST, SHGRPL, SHGRP_ALL],
        "groups": {
            "sge": ["node001", "node002", "vm"], "sge_exec": ["node001", "node002", "vm"],
            "sge_static": ["node001", "node002", "vm"],
            "sge_hostgroup_allhosts": ["node001", "node002", "vm"],
            "sge_queue_all_q": ["node001", "node002", "vm"],
            "sge_state_ok": ["node001", "node002", "vm"],
        },
        "hostvars": {"node001": {"sge_slots": 2, "sge_mem_total": 25232932864,
                                 "sge_queues": {"all.q": {"qtype": "BIP", "slots": 2, "used": 0,
                                                          "reserved": 0, "state": ""}}}},
        "absent": {"node001": ["sge_master"]},
    },
    {
        "id": "real-not-reporting-no-hostgroups-defined",
        "config": {"cluster": "c"},
        "answers": {QHOST: (0, fixture("qhost_q_local_soge819.xml"), b""), SHGRPL: NO_GROUPS},
        "commands": [QHOST, SHGRPL],
        "groups": {"c": ["node002", "vm"], "c_exec": ["node002", "vm"],
                   "c_static": ["node002", "vm"],
                   "c_queue_all_q": ["node002", "vm"], "c_state_alarm": ["node002"],
                   "c_state_unknown": ["node002"], "c_state_ok": ["vm"]},
        "hostvars": {"node002": {"sge_state": ["a", "u"], "sge_load_avg": None,
                                 "sge_hostgroups": []}},
    },
    {
        "id": "hostgroups-off",
        "config": {"cluster": "c", "hostgroups": False},
        "answers": {QHOST: (0, fixture("qhost_xml_q_3hosts.xml"), b"")},
        "commands": [QHOST],
        "groups": {"c": ["node001", "node002", "vm"], "c_exec": ["node001", "node002", "vm"],
                   "c_static": ["node001", "node002", "vm"],
                   "c_queue_all_q": ["node001", "node002", "vm"],
                   "c_state_ok": ["node001", "node002", "vm"]},
    },
    {
        "id": "nested-groups-one-qconf-call",
        "config": {"cluster": "aws"},
        "answers": {
            QHOST: (0, fixture("handmade_qhost_q_soge819_fqdn.xml"), b""),
            SHGRPL: (0, fixture("handmade_qconf_shgrpl_nested.txt"), b""),
            "qconf -shgrp @allhosts -shgrp @big -shgrp @compute -shgrp @empty":
                (0, fixture("handmade_qconf_shgrp_nested.txt"), b"")},
        "commands": [QHOST, SHGRPL,
                     "qconf -shgrp @allhosts -shgrp @big -shgrp @compute -shgrp @empty"],
        "groups": {
            "aws": ["ip-10-0-0-116.eu-west-1.compute.internal",
                    "ip-10-0-0-166.eu-west-1.compute.internal",
                    "ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_exec": ["ip-10-0-0-116.eu-west-1.compute.internal",
                         "ip-10-0-0-166.eu-west-1.compute.internal",
                         "ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_static": ["ip-10-0-0-116.eu-west-1.compute.internal",
                           "ip-10-0-0-166.eu-west-1.compute.internal",
                           "ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_hostgroup_allhosts": ["ip-10-0-0-116.eu-west-1.compute.internal",
                                       "ip-10-0-0-166.eu-west-1.compute.internal",
                                       "ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_hostgroup_compute": ["ip-10-0-0-116.eu-west-1.compute.internal",
                                      "ip-10-0-0-166.eu-west-1.compute.internal"],
            "aws_hostgroup_big": ["ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_queue_all_q": ["ip-10-0-0-116.eu-west-1.compute.internal",
                                "ip-10-0-0-166.eu-west-1.compute.internal",
                                "ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_state_alarm": ["ip-10-0-0-116.eu-west-1.compute.internal"],
            "aws_state_unknown": ["ip-10-0-0-116.eu-west-1.compute.internal"],
            "aws_state_disabled": ["ip-10-0-0-52.eu-west-1.compute.internal"],
            "aws_state_ok": ["ip-10-0-0-166.eu-west-1.compute.internal"],
        },
        "empty_groups": ["aws_hostgroup_empty"],
    },
    {
        "id": "two-queues-states",
        "config": {"cluster": "c", "hostgroups": False},
        "answers": {QHOST: (0, fixture("handmade_qhost_q_two_queues.xml"), b"")},
        "commands": [QHOST],
        "groups": {"c": ["node001", "node002", "vm"], "c_exec": ["node001", "node002", "vm"],
                   "c_static": ["node001", "node002", "vm"],
                   "c_queue_all_q": ["node001", "node002", "vm"],
                   "c_queue_big_q": ["node001", "vm"], "c_state_disabled": ["node001"],
                   "c_state_error": ["vm"], "c_state_ok": ["node002"]},
        "hostvars": {"node001": {"sge_slots": 6, "sge_slots_used": 3, "sge_slots_reserved": 1,
                                 "sge_slots_free": 2, "sge_state": ["d"]}},
    },
    {
        "id": "group-removed-between-shgrpl-and-shgrp",
        "config": {"cluster": "c"},
        "answers": {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""),
                    SHGRPL: (0, b"@allhosts\n@nosuch\n", b""),
                    "qconf -shgrp @allhosts -shgrp @nosuch":
                        (1, fixture("qconf_shgrp_allhosts_nosuch.out"),
                         fixture("qconf_shgrp_allhosts_nosuch.err"))},
        "commands": [QHOST, SHGRPL, "qconf -shgrp @allhosts -shgrp @nosuch"],
        "groups": {"c": ["vm"], "c_exec": ["vm"],
                   "c_static": ["vm"], "c_hostgroup_allhosts": ["vm"],
                   "c_queue_all_q": ["vm"], "c_state_ok": ["vm"]},
        "warnings": ["host group @nosuch: not printed by qconf -shgrp"],
    },
    {
        "id": "master-without-execd",
        "config": {"cluster": "c", "include_master": True, "hostgroups": False},
        "answers": {QHOST: (0, NO_VM_EXECD, b""), SSS: (0, fixture("qconf_sss.txt"), b"")},
        "commands": [QHOST, SSS],
        "groups": {"c": ["node001", "node002", "node003", "vm"],
                   "c_exec": ["node001", "node002", "node003"],
                   "c_static": ["node001", "node002", "node003"],
                   "c_master": ["vm"], "c_queue_all_q": ["node001", "node002", "node003"],
                   "c_state_ok": ["node001", "node002", "node003"]},
        "hostvars": {"vm": {"sge_master": True, "sge_exec": False},
                     "node001": {"sge_master": False, "sge_exec": True}},
        "absent": {"vm": ["sge_slots"]},
    },
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_groups_and_hostvars(tmp_path, case):
    inventory, runner, plugin = run_plugin(tmp_path, case["config"], case["answers"])
    assert runner.commands == case["commands"]
    assert groups_of(inventory) == case["groups"]
    for group in case.get("empty_groups", []):
        assert group in inventory.groups and not inventory.groups[group].get_hosts()
    for host, expected in case.get("hostvars", {}).items():
        for key, value in expected.items():
            assert hostvars(inventory, host)[key] == value, (host, key)
    for host, keys in case.get("absent", {}).items():
        for key in keys:
            assert key not in hostvars(inventory, host), (host, key)
    warnings = warnings_of(plugin)
    assert len(warnings) == len(case.get("warnings", [])), warnings
    for fragment, warning in zip(case.get("warnings", []), warnings):
        assert fragment in warning
    # every other group is a child of the cluster group
    cluster = case["config"].get("cluster", "sge")
    children = sorted(g.name for g in inventory.groups[cluster].child_groups)
    assert children == sorted(g for g in inventory.groups if g.startswith(cluster + "_"))


# --------------------------------------------------------------------------- commands

def test_local_commands_environment_and_timeout(tmp_path):
    answers = {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""), SHGRPL: NO_GROUPS}
    _inv, runner, _p = run_plugin(tmp_path, {"sge_root": "/opt/sge", "sge_cell": "c1",
                                             "sge_qmaster_port": 6444, "command_timeout": 7},
                                  answers)
    argv, env, timeout = runner.calls[0]
    assert argv == ["/opt/sge/bin/lx-amd64/qhost", "-xml", "-q"]
    assert (env["SGE_ROOT"], env["SGE_CELL"], env["SGE_QMASTER_PORT"], env["LC_ALL"]) == (
        "/opt/sge", "c1", "6444", "C")
    assert timeout == 7
    assert runner.calls[1][0] == ["/opt/sge/bin/lx-amd64/qconf", "-shgrpl"]


def test_sge_root_and_cell_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SGE_ROOT", "/env/sge")
    monkeypatch.setenv("SGE_CELL", "envcell")
    answers = {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""), SHGRPL: NO_GROUPS}
    _inv, runner, _p = run_plugin(tmp_path, {}, answers)
    env = runner.calls[0][1]
    assert (env["SGE_ROOT"], env["SGE_CELL"]) == ("/env/sge", "envcell")
    # the configuration file wins over the environment
    _inv, runner, _p = run_plugin(tmp_path, {"sge_root": "/cfg/sge"}, answers)
    assert runner.calls[0][1]["SGE_ROOT"] == "/cfg/sge"


def test_local_program_lookup(tmp_path, monkeypatch):
    """Without sge_bin_dir: $SGE_ROOT/bin/<arch> first, then PATH, else a clear error."""
    root = tmp_path / "sge"
    (root / "default" / "common").mkdir(parents=True)
    (root / "default" / "common" / "settings.sh").write_text(
        "SGE_ARCH=lx-amd64; export SGE_ARCH\n")
    bin_dir = root / "bin" / "lx-amd64"
    bin_dir.mkdir(parents=True)
    qhost = bin_dir / "qhost"
    qhost.write_text("#!/bin/sh\n")
    qhost.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    plugin = sge.InventoryModule()
    plugin._load_name = sge.InventoryModule.NAME
    plugin.set_options(direct={"plugin": "gridengine.balancer.sge", "sge_root": str(root)})
    assert plugin._local_program("qhost") == str(qhost)
    with pytest.raises(AnsibleParserError, match=r"qconf not found in .*/bin/lx-amd64 or PATH"):
        plugin._local_program("qconf")


def state_absent(tmp_path):
    """The answer of the state-reading script through ssh when there is no state file."""
    return {"read-state %s" % (tmp_path / "state.json"): (0, b"geb-state absent\n", b"")}


def test_ssh_argv(tmp_path):
    answers = {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""), SHGRPL: NO_GROUPS}
    answers.update(state_absent(tmp_path))
    config = {"qmaster_host": "qmaster.example.org", "ssh_user": "sgeadmin",
              "ssh_args": ["-i", "/keys/id_ed25519"], "sge_root": "/opt/my sge",
              "sge_bin_dir": None}
    _inv, runner, _p = run_plugin(tmp_path, config, answers)
    argv, env, _t = runner.calls[0]
    assert argv == ["ssh", "-o", "BatchMode=yes", "-i", "/keys/id_ed25519", "-l", "sgeadmin",
                    "--", "qmaster.example.org",
                    "env LC_ALL=C SGE_CELL=default 'SGE_ROOT=/opt/my sge' qhost -xml -q"]
    assert env["LC_ALL"] == "C"


@pytest.mark.parametrize("host", ["10.77.0.11", "::1", "fe80::1", "node001", "qmaster.example.org"])
def test_ssh_destination_accepted(tmp_path, host):
    answers = {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""), SHGRPL: NO_GROUPS}
    answers.update(state_absent(tmp_path))
    _inv, runner, _p = run_plugin(tmp_path, {"qmaster_host": host, "sge_bin_dir": None}, answers)
    assert runner.calls[0][0][3:5] == ["--", host]


# --------------------------------------------------------------------------- errors

ERROR_CASES = [
    {
        "id": "qmaster-down-real-stderr",
        "answers": {QHOST: QMASTER_DOWN},
        "message": ["gridengine.balancer.sge: qhost -xml -q failed (rc 1) on the controller",
                    "error: commlib error: got select error (Connection refused)",
                    'unable to send message to qmaster using port 6999 on host "vm"',
                    "SGE_ROOT=/var/lib/gridengine, SGE_CELL=default; is the qmaster up?"],
    },
    {
        "id": "qconf-shgrpl-fails",
        "answers": {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""),
                    SHGRPL: (1, b"", fixture("qconf_shgrpl_port6999.err"))},
        "message": ["qconf -shgrpl failed (rc 1)", "Connection refused"],
    },
    {
        "id": "qconf-shgrp-fails-for-another-reason",
        "answers": {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""),
                    SHGRPL: (0, fixture("qconf_shgrpl.txt"), b""),
                    SHGRP_ALL: (1, b"", b"error: commlib error: got select error\n")},
        "message": ["qconf -shgrp @allhosts failed (rc 1)", "commlib error"],
    },
    {
        "id": "qconf-sss-prints-nothing",
        "config": {"include_master": True, "hostgroups": False},
        "answers": {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""), SSS: (0, b"\n", b"")},
        "message": ["qconf -sss printed no qmaster host"],
    },
    {
        "id": "broken-xml-empty",
        "config": {"hostgroups": False},
        "answers": {QHOST: (0, fixture("broken/xenon_jobs-empty.xml"), b"")},
        "message": ["gridengine.balancer.sge: qhost -xml: document is empty (read on the "
                    "controller)"],
    },
    {
        "id": "broken-xml-wrong-document",
        "config": {"hostgroups": False},
        "answers": {QHOST: (0, fixture("broken/xenon_queues.xml"), b"")},
        "message": ["root element is <job_info>, expected <qhost>"],
    },
    {
        "id": "broken-xml-truncated",
        "config": {"hostgroups": False},
        "answers": {QHOST: (0, TRUNCATED, b"")},
        "message": ["qhost -xml: document ends before its root element is closed"],
    },
    {
        "id": "entity-declaration",
        "config": {"hostgroups": False},
        "answers": {QHOST: (0, fixture("qhost_xml_q_vm.xml", (
            ("<?xml version='1.0'?>",
             "<?xml version='1.0'?><!DOCTYPE q [<!ENTITY a \"aaaa\">]>"),)), b"")},
        "message": ["document type/entity declarations are not accepted"],
    },
    {
        "id": "program-missing",
        "answers": {QHOST: FileNotFoundError(2, "No such file or directory")},
        "message": ["cannot run /opt/sge/bin/lx-amd64/qhost on the controller",
                    "No such file or directory"],
    },
    {
        "id": "timeout",
        "config": {"command_timeout": 3},
        "answers": {QHOST: subprocess.TimeoutExpired(["qhost"], 3)},
        "message": ["qhost -xml -q on the controller did not answer within 3 s (command_timeout)"],
    },
    {
        "id": "ssh-fails",
        "config": {"qmaster_host": "qmaster", "sge_bin_dir": None},
        "answers": {QHOST: SSH_REFUSED},
        "message": ["ssh to qmaster failed (rc 255) running qhost -xml -q",
                    "port 22: Connection refused"],
    },
    {
        "id": "bad-cluster-name",
        "config": {"cluster": "my cluster"},
        "answers": {},
        "message": ["cluster 'my cluster' is not a cluster name"],
    },
    {
        "id": "cluster-all",
        "config": {"cluster": "all"},
        "answers": {},
        "message": ["cluster 'all' is not a cluster name", "not 'all' or 'ungrouped'"],
    },
    {
        "id": "hostile-qmaster-host",
        "config": {"qmaster_host": "-oProxyCommand=id"},
        "answers": {},
        "message": ["qmaster_host '-oProxyCommand=id' is not a host name or IP address"],
    },
    {
        "id": "bracketed-ipv6",
        "config": {"qmaster_host": "[::1]"},
        "answers": {},
        "message": ["qmaster_host '[::1]' is not a host name or IP address"],
    },
    {
        "id": "hostile-ssh-user",
        "config": {"qmaster_host": "qmaster", "ssh_user": "root;id"},
        "answers": {},
        "message": ["ssh_user 'root;id' is not a user name"],
    },
    {
        "id": "timeout-zero",
        "config": {"command_timeout": 0},
        "answers": {},
        "message": ["command_timeout must be at least 1"],
    },
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["id"] for c in ERROR_CASES])
def test_errors(tmp_path, monkeypatch, case):
    monkeypatch.delenv("SGE_ROOT", raising=False)
    monkeypatch.delenv("SGE_CELL", raising=False)
    with pytest.raises(AnsibleParserError) as err:
        run_plugin(tmp_path, case.get("config", {}), case["answers"])
    for fragment in case["message"]:
        assert fragment in str(err.value)


# --------------------------------------------------------------------------- hostile data

@pytest.mark.parametrize("bad", ["node001;touch /tmp/x", "-oProxyCommand=id",
                                 "{{ lookup('pipe', 'id') }}", "node 001"])
def test_hostile_host_name_never_in_inventory(tmp_path, bad):
    qhost = fixture("qhost_xml_q_3hosts.xml",
                    (("<host name='node001'>", "<host name='%s'>" % bad.replace("'", "&apos;")),))
    answers = {QHOST: (0, qhost, b""), SHGRPL: NO_GROUPS}
    inventory, _r, plugin = run_plugin(tmp_path, {"cluster": "c"}, answers)
    assert sorted(inventory.hosts) == ["node002", "vm"]
    assert warnings_of(plugin) == [
        "gridengine.balancer.sge: qhost: skipped host %r (not a valid host name)" % bad]


def test_hostile_hostgroup_name_never_reaches_qconf(tmp_path):
    answers = {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b""),
               SHGRPL: (0, b"@allhosts\n@x;touch /tmp/y\n-sq\n", b""),
               SHGRP_ALL: (0, fixture("qconf_shgrp_allhosts_vm.txt"), b"")}
    inventory, runner, plugin = run_plugin(tmp_path, {"cluster": "c"}, answers)
    assert runner.commands == [QHOST, SHGRPL, SHGRP_ALL]
    assert groups_of(inventory)["c_hostgroup_allhosts"] == ["vm"]
    assert len(warnings_of(plugin)) == 2


def test_strings_from_grid_engine_are_not_templated(tmp_path):
    """An architecture string with a template stays text (ansible-core 2.19 trust)."""
    qhost = fixture("qhost_xml_q_vm.xml", (("lx-amd64", "{{ 7 * 6 }}"),))
    answers = {QHOST: (0, qhost, b""), SHGRPL: NO_GROUPS}
    config = {"cluster": "c", "compose": {"arch_copy": "sge_arch"}}
    inventory, _r, _p = run_plugin(tmp_path, config, answers)
    assert hostvars(inventory, "vm")["arch_copy"] == "{{ 7 * 6 }}"


def test_group_name_collision_is_warned(tmp_path):
    qhost = fixture("handmade_qhost_q_two_queues.xml", (("'big.q'", "'all_q'"),))
    answers = {QHOST: (0, qhost, b"")}
    inventory, _r, plugin = run_plugin(tmp_path, {"cluster": "c", "hostgroups": False}, answers)
    assert groups_of(inventory)["c_queue_all_q"] == ["node001", "node002", "vm"]
    assert any("both become 'c_queue_all_q'" in w for w in warnings_of(plugin))


# --------------------------------------------------------------------------- constructed

def test_compose_groups_keyed_groups(tmp_path):
    config = {
        "cluster": "c", "hostgroups": False, "include_master": True,
        "compose": {"ansible_connection": "'local' if sge_master else 'ssh'",
                    "free": "sge_slots_free"},
        "groups": {"full": "sge_slots > 0 and sge_slots_free == 0",
                   "flagged": "sge_state | length > 0"},
        "keyed_groups": [{"key": "sge_state", "prefix": "state"},
                         {"key": "sge_arch", "prefix": "arch"},
                         {"key": "sge_queues.keys() | list", "prefix": "q"}],
    }
    answers = {QHOST: (0, fixture("handmade_qhost_q_two_queues.xml"), b""),
               SSS: (0, fixture("qconf_sss.txt"), b"")}
    inventory, _r, _p = run_plugin(tmp_path, config, answers)
    groups = groups_of(inventory)
    assert hostvars(inventory, "vm")["ansible_connection"] == "local"
    assert hostvars(inventory, "node001")["ansible_connection"] == "ssh"
    assert hostvars(inventory, "node001")["free"] == 2
    assert groups["full"] == ["node002"]
    assert groups["flagged"] == ["node001", "vm"]
    assert groups["state_d"] == ["node001"]
    assert groups["state_E"] == ["vm"]
    assert groups["arch_lx_amd64"] == ["node001", "node002", "vm"]
    assert groups["q_all_q"] == ["node001", "node002", "vm"]
    assert groups["q_big_q"] == ["node001", "vm"]


def test_leading_separator(tmp_path):
    config = {"cluster": "c", "hostgroups": False, "leading_separator": False,
              "keyed_groups": [{"key": "sge_state"}]}
    answers = {QHOST: (0, fixture("handmade_qhost_q_two_queues.xml"), b"")}
    inventory, _r, _p = run_plugin(tmp_path, config, answers)
    groups = groups_of(inventory)
    assert groups["d"] == ["node001"]
    assert "_d" not in groups


@pytest.mark.parametrize("strict", [True, False])
def test_strict(tmp_path, strict):
    config = {"cluster": "c", "hostgroups": False, "strict": strict,
              "keyed_groups": [{"key": "no_such_variable", "prefix": "x"}],
              "compose": {"y": "no_such_variable + 1"}}
    answers = {QHOST: (0, fixture("qhost_xml_q_vm.xml"), b"")}
    if strict:
        with pytest.raises(AnsibleError, match="no_such_variable"):
            run_plugin(tmp_path, config, answers)
    else:
        inventory, _r, _p = run_plugin(tmp_path, config, answers)
        assert "y" not in hostvars(inventory, "vm")
        assert not any(g.startswith("x_") for g in inventory.groups)


# --------------------------------------------------------------------------- cache, verify_file

def _cached_config(tmp_path):
    """A configuration with a jsonfile cache under ``tmp_path`` and the answers of a 3-host cluster."""
    config = {"cluster": "c", "cache": True, "cache_plugin": "jsonfile",
              "cache_connection": str(tmp_path / "cache"), "cache_timeout": 3600}
    answers = {QHOST: (0, fixture("qhost_xml_q_3hosts.xml"), b""),
               SHGRPL: (0, fixture("qconf_shgrpl.txt"), b""),
               SHGRP_ALL: (0, fixture("qconf_shgrp_allhosts_3hosts.txt"), b"")}
    return config, answers


def test_cache_reads_once(tmp_path):
    config, answers = _cached_config(tmp_path)
    first, runner, _p = run_plugin(tmp_path, config, answers, cache=True)
    assert len(runner.calls) == 3
    second, runner, _p = run_plugin(tmp_path, config, {}, cache=True)
    assert runner.calls == []
    assert groups_of(second) == groups_of(first)
    assert hostvars(second, "node001") == hostvars(first, "node001")
    # cache=False (ansible-inventory --flush-cache, meta: refresh_inventory) reads again
    _inv, runner, _p = run_plugin(tmp_path, config, answers, cache=False)
    assert len(runner.calls) == 3


@pytest.mark.parametrize("tamper", [
    lambda m: m["hosts"].update({"bad host\nx": {}}),
    lambda m: m.update(master="x;$(id)"),
    lambda m: m["queues"].update({"all.q": ["node001", "not-a-host-of-the-model"]}),
    lambda m: m["hostgroups"].update({"@x\n": []}),
    lambda m: m.update(hosts=[]),
    lambda m: m["balancer"].update(launched="node001"),
    lambda m: m.pop("states"),
], ids=["host", "master", "queue-member", "hostgroup", "hosts-list", "launched", "no-states"])
def test_a_tampered_cache_is_read_again_not_used(tmp_path, tamper):
    config, answers = _cached_config(tmp_path)
    first, runner, _p = run_plugin(tmp_path, config, answers, cache=True)
    files = [p for p in (tmp_path / "cache").iterdir() if p.is_file()]
    assert len(files) == 1
    stored = json.loads(files[0].read_text())
    # ansible-core 2.19's jsonfile cache keeps the value as a JSON text under "__payload__"
    model = json.loads(stored["__payload__"]) if "__payload__" in stored else stored
    tamper(model)
    if "__payload__" in stored:
        stored["__payload__"] = json.dumps(model)
    else:
        stored = model
    files[0].write_text(json.dumps(stored))
    second, runner, _p = run_plugin(tmp_path, config, answers, cache=True)
    assert len(runner.calls) == 3, "a tampered cache was used"
    assert groups_of(second) == groups_of(first)


@pytest.mark.parametrize("name, ok", [("mycluster.sge.yml", True), ("mycluster.sge.yaml", True),
                                      ("mycluster.yml", False), ("sge.yml", False)])
def test_verify_file(tmp_path, name, ok):
    path = tmp_path / name
    path.write_text("plugin: gridengine.balancer.sge\n")
    assert sge.InventoryModule().verify_file(str(path)) is ok
    assert sge.InventoryModule().verify_file(str(tmp_path / ("missing-" + name))) is False


# --------------------------------------------------------------------------- real processes

def _script(path, body):
    path.write_text("#!%s\n%s" % (sys.executable, body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


FAKE_SGE = r'''
import os, sys
fix = %(fix)r
log = %(log)r
with open(log, "a") as handle:
    handle.write(repr([os.path.basename(sys.argv[0])] + sys.argv[1:] + [os.environ.get("SGE_ROOT"),
                      os.environ.get("SGE_CELL"), os.environ.get("LC_ALL")]) + "\n")
key = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
files = {"qhost -xml -q": "qhost_xml_q_3hosts.xml", "qconf -shgrpl": "qconf_shgrpl.txt",
         "qconf -shgrp @allhosts": "qconf_shgrp_allhosts_3hosts.txt", "qconf -sss": "qconf_sss.txt"}
if os.environ.get("FAKE_SGE_DOWN"):
    sys.stderr.write(open(os.path.join(fix, "qhost_port6999.err")).read())
    sys.exit(1)
sys.stdout.write(open(os.path.join(fix, files[key])).read())
'''


def _fake_sge(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    body = FAKE_SGE % {"fix": os.path.abspath(FIX), "log": str(log)}
    _script(bin_dir / "qhost", body)
    _script(bin_dir / "qconf", body)
    return bin_dir, log


def test_real_subprocess_through_fake_ssh(tmp_path):
    """A stand-in ssh hands its command to sh -c as sshd does: quoting holds, nothing is run."""
    bin_dir, log = _fake_sge(tmp_path)
    ssh = _script(tmp_path / "fake-ssh", r'''
import subprocess, sys
args = sys.argv[1:]
assert args[:2] == ["-o", "BatchMode=yes"], args
host_at = args.index("--") + 1
assert args[host_at] == "qmaster", args
sys.exit(subprocess.call(["sh", "-c", args[host_at + 1]]))
''')
    pwned = tmp_path / "pwned"
    root = "/opt/sge $(touch %s) `touch %s`" % (pwned, pwned)
    path = tmp_path / "remote.sge.yml"
    path.write_text(yaml.safe_dump({
        "plugin": "gridengine.balancer.sge", "cluster": "r", "qmaster_host": "qmaster",
        "ssh_executable": str(ssh), "sge_bin_dir": str(bin_dir), "sge_root": root,
        "include_master": True, "state_path": str(tmp_path / "no-state.json")}))
    plugin = sge.InventoryModule()
    plugin._load_name = sge.InventoryModule.NAME
    plugin.display = MagicMock()
    plugin._runner = sge.run_subprocess
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), str(path), cache=False)
    assert not pwned.exists()
    assert groups_of(inventory)["r_hostgroup_allhosts"] == ["node001", "node002", "vm"]
    assert groups_of(inventory)["r_master"] == ["vm"]
    calls = [ast.literal_eval(line) for line in log.read_text().splitlines()]
    assert calls == [["qhost", "-xml", "-q", root, "default", "C"],
                     ["qconf", "-shgrpl", root, "default", "C"],
                     ["qconf", "-shgrp", "@allhosts", root, "default", "C"],
                     ["qconf", "-sss", root, "default", "C"]]


def _ansible_inventory(tmp_path, config, env=None):
    tool = os.path.join(REPO, ".venv", "bin", "ansible-inventory")
    if not os.path.exists(tool):
        tool = shutil.which("ansible-inventory")
    if tool is None:
        pytest.skip("ansible-inventory not installed")
    path = tmp_path / "mycluster.sge.yml"
    path.write_text(yaml.safe_dump(config))
    full_env = dict(os.environ)
    full_env.update({"ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO, ".collections"),
                     "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "LC_ALL": "C.UTF-8"})
    full_env.update(env or {})
    return subprocess.run([tool, "-i", str(path), "--list"], cwd=str(tmp_path), env=full_env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120, check=False)


def _plain(value):
    """ansible-inventory --list writes strings from an inventory plugin as
    {"__ansible_unsafe": "..."} (ansible-core 2.19: not trusted as templates)."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_ansible_inventory_end_to_end(tmp_path):
    bin_dir, log = _fake_sge(tmp_path)
    proc = _ansible_inventory(tmp_path, {
        "plugin": "gridengine.balancer.sge", "cluster": "mycluster", "include_master": True,
        "sge_bin_dir": str(bin_dir), "state_path": str(tmp_path / "no-state.json"),
        "keyed_groups": [{"key": "sge_state", "prefix": "state", "default_value": "none"}]})
    assert proc.returncode == 0, proc.stderr
    data = _plain(json.loads(proc.stdout))
    assert sorted(data["mycluster"]["hosts"]) == ["node001", "node002", "vm"]
    assert "mycluster_hostgroup_allhosts" in data["mycluster"]["children"]
    assert sorted(data["mycluster_hostgroup_allhosts"]["hosts"]) == ["node001", "node002", "vm"]
    assert data["mycluster_master"]["hosts"] == ["vm"]
    node = data["_meta"]["hostvars"]["node001"]
    assert node["sge_slots"] == 2 and node["sge_arch"] == "lx-amd64"
    assert node["sge_queues"]["all.q"]["qtype"] == "BIP"
    assert len(log.read_text().splitlines()) == 4


def test_ansible_inventory_qmaster_down(tmp_path):
    bin_dir, _log = _fake_sge(tmp_path)
    proc = _ansible_inventory(tmp_path, {"plugin": "gridengine.balancer.sge",
                                         "sge_bin_dir": str(bin_dir),
                                         "state_path": str(tmp_path / "no-state.json")},
                              env={"FAKE_SGE_DOWN": "1"})
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    assert "qhost -xml -q failed (rc 1) on the controller" in text, proc.stderr
    assert "Connection refused" in text
