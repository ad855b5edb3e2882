# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin gridengine.balancer.sge and the collection's playbooks (issue 22, item 7).

The groups the playbooks use (``<cluster>_master``, ``<cluster>_nodes``), the cluster names they
accept, the rule that ``<cluster>_nodes`` holds only hosts the balancer launched (issue 19:
the poll hands that group to the policy as ``launched_hosts``, and the policy may remove them),
host filters, the hostname choice, connection variables and the environment variables behind
the options.

Grid Engine's answers are the real captures of tests/unit/fixtures/inventory/ (PROVENANCE.md),
handed to the plugin by the fake runner of test_sge.py; the state file
``state_mycluster_node002_launched.json`` is a real one written by a loadbalance poll of the local
cluster (node002 launched by the balancer, vm the master, node001 removed earlier).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from unittest.mock import MagicMock

import pytest
import yaml

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader

from ansible_collections.gridengine.balancer.plugins.inventory import sge
from ansible_collections.gridengine.balancer.tests.unit.plugins.inventory.test_sge import (
    FIX, NO_GROUPS, QHOST, REPO, SHGRP_ALL, SHGRPL, SSS, _ansible_inventory, _fake_sge,
    _plain, _script, fixture, groups_of, hostvars, parse_config, warnings_of)

STATE_FIXTURE = "state_mycluster_node002_launched.json"
THREE = {QHOST: (0, fixture("qhost_xml_q_3hosts.xml"), b""),
         SHGRPL: (0, fixture("qconf_shgrpl.txt"), b""),
         SHGRP_ALL: (0, fixture("qconf_shgrp_allhosts_3hosts.txt"), b""),
         SSS: (0, fixture("qconf_sss.txt"), b"")}
ALL3 = ["node001", "node002", "vm"]
GEB_ENV = [name for name in os.environ if name.startswith("GEB_")] + [
    "GEB_CLUSTER", "GEB_SGE_ROOT", "GEB_SGE_CELL", "GEB_SGE_QMASTER_PORT", "GEB_SGE_BIN_DIR",
    "GEB_QMASTER_HOST", "GEB_SSH_USER", "GEB_SSH_PRIVATE_KEY_FILE", "GEB_SSH_EXECUTABLE",
    "GEB_SSH_ARGS", "GEB_INCLUDE_MASTER", "GEB_NODES_FROM_STATE", "GEB_STATE_PATH",
    "GEB_MANAGED_HOSTS", "GEB_PROTECTED_HOSTS", "GEB_HOST_ADDRESS", "GEB_REMOTE_USER",
    "GEB_PRIVATE_KEY_FILE", "GEB_COMMAND_TIMEOUT", "SGE_ROOT", "SGE_CELL"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """No GEB_*/SGE_* variable of the machine running the tests leaks into a test."""
    for name in GEB_ENV:
        monkeypatch.delenv(name, raising=False)


def state_file(tmp_path, name="state.json", content=None, mode=0o600):
    """A copy of the real state fixture (or ``content``) in the test's directory."""
    path = tmp_path / name
    if content is None:
        shutil.copyfile(os.path.join(FIX, STATE_FIXTURE), str(path))
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    path.chmod(mode)
    return path


class FakeResolver(object):
    """name, family -> address from a table; records the lookups."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def __call__(self, name, choice):
        self.calls.append((name, choice))
        return self.table.get((name, choice))


def run(tmp_path, config, answers, resolver=None, state=True, cache=False):
    """Run the plugin with exactly ``config`` (plus ``plugin``, ``sge_bin_dir`` and, unless
    ``state`` is False, ``state_path`` in the test's directory): every other option takes its
    default or its environment variable."""
    config = dict(config)
    config.setdefault("plugin", "gridengine.balancer.sge")
    if "qmaster_host" not in config:
        config.setdefault("sge_bin_dir", "/opt/sge/bin/lx-amd64")
    if state:
        config.setdefault("state_path", str(tmp_path / "state.json"))
    return parse_config(tmp_path / "cluster.sge.yml", config, answers,
                        resolver=resolver or FakeResolver({}), cache=cache)


# --------------------------------------------------------------------------- the playbooks' groups

def test_default_groups_are_the_playbooks_groups(tmp_path):
    """Defaults: the qmaster in <cluster>_master (qconf -sss is run), the host the state marks
    launched in <cluster>_nodes, the others in <cluster>_static, every exec host in _exec."""
    state_file(tmp_path)
    inventory, runner, plugin = run(tmp_path, {"cluster": "my-cluster"}, THREE)
    assert runner.commands == [QHOST, SHGRPL, SHGRP_ALL, SSS]
    groups = groups_of(inventory)
    assert groups["my-cluster_master"] == ["vm"]
    assert groups["my-cluster_nodes"] == ["node002"]
    assert groups["my-cluster_static"] == ["node001", "vm"]
    assert groups["my-cluster_exec"] == ALL3
    assert groups["my-cluster"] == ALL3
    assert groups["my-cluster_hostgroup_allhosts"] == ALL3
    assert groups["my-cluster_queue_all_q"] == ALL3
    assert hostvars(inventory, "node002")["sge_node"] is True
    assert hostvars(inventory, "node001")["sge_node"] is False
    assert hostvars(inventory, "vm")["sge_master"] is True
    assert hostvars(inventory, "node001")["sge_name"] == "node001"
    assert warnings_of(plugin) == []
    children = sorted(g.name for g in inventory.groups["my-cluster"].child_groups)
    assert "my-cluster_master" in children and "my-cluster_nodes" in children


def test_the_playbooks_read_these_group_names():
    """The contract this plugin fills: the poll passes groups[cluster ~ '_nodes'] as
    launched_hosts and every playbook runs on <cluster>_master."""
    with open(os.path.join(REPO, "playbooks", "tasks", "loadbalance_poll.yml")) as handle:
        poll = handle.read()
    launched = poll[poll.index("launched_hosts:"):]
    launched = launched[:launched.index("managed_hosts:")]
    assert "groups[cluster ~ '_nodes']" in launched
    assert "cluster ~ '_master'" in _playbook_text()


def _playbook_text():
    """loadbalance.yml and the files its cluster check may live in (playbooks/vars/)."""
    text = ""
    for name in ("loadbalance.yml", os.path.join("vars", "cluster_group.yml")):
        path = os.path.join(REPO, "playbooks", name)
        if os.path.exists(path):
            with open(path) as handle:
                text += handle.read()
    return text


def _playbook_cluster_rule():
    """The regular expression the playbooks check a cluster name with."""
    return re.search(r"'(\^\[A-Za-z0-9\][^']*\\Z)'", _playbook_text()).group(1)


NAMES = ["my-cluster", "mycluster", "my.cluster", "0cluster", "c_1", "C", "a" * 255,
         "", "all", "ungrouped", "-x", ".x", "_x", "a b", "a\n", "a/b", "../x", "x;id",
         "{{ lookup('pipe', 'id') }}", "a" * 256, "é", "my$cluster"]


@pytest.mark.parametrize("name", NAMES, ids=[repr(n)[:20] for n in NAMES])
def test_cluster_names_as_the_playbooks_take_them(tmp_path, name):
    """A name the playbooks accept works and makes <name>_master; any other is refused before a
    command runs. Compared with the rule read from playbooks/loadbalance.yml (plus its
    255-character limit of the state directory, and all/ungrouped, Ansible's own groups)."""
    playbook_ok = bool(re.match(_playbook_cluster_rule(), name)) and len(name) <= 255 \
        and name not in ("all", "ungrouped")
    if playbook_ok:
        inventory, _r, _p = run(tmp_path, {"cluster": name}, THREE)
        assert groups_of(inventory)[name + "_master"] == ["vm"]
        assert groups_of(inventory)[name + "_exec"] == ALL3
    else:
        with pytest.raises(AnsibleParserError, match="is not a cluster name") as err:
            run(tmp_path, {"cluster": name}, {})
        assert "cluster %r" % (name,) in str(err.value)


def test_default_state_path_follows_the_cluster():
    plugin = sge.InventoryModule()
    plugin._load_name = sge.InventoryModule.NAME
    plugin.set_options(direct={"plugin": "gridengine.balancer.sge", "cluster": "my-cluster"})
    assert plugin.state_path() == "/var/lib/gridengine-balancer/my-cluster/state.json"


# --------------------------------------------------------------------------- the safety rule

def test_no_state_file_means_no_removable_host(tmp_path):
    """Every host runs an execd, none was launched (no poll yet): <cluster>_nodes is empty."""
    inventory, _r, plugin = run(tmp_path, {"cluster": "c"}, THREE)
    assert "c_nodes" in inventory.groups and not inventory.groups["c_nodes"].get_hosts()
    assert groups_of(inventory)["c_static"] == ALL3
    assert warnings_of(plugin) == []


def test_static_host_with_a_state_record_is_not_a_node(tmp_path):
    """vm has a record in the real state (first_seen, last_busy) but no 'launched': running an
    execd and being known to the balancer is not enough, also when it is not the master."""
    state_file(tmp_path)
    inventory, _r, _p = run(tmp_path, {"cluster": "c", "include_master": False}, THREE)
    groups = groups_of(inventory)
    assert groups["c_nodes"] == ["node002"]
    assert "vm" not in groups["c_nodes"] and "node001" not in groups["c_nodes"]
    assert groups["c_static"] == ["node001", "vm"]


def test_launched_is_matched_without_case_and_needs_true(tmp_path):
    state_file(tmp_path, content={"nodes": {"NODE001": {"launched": True},
                                            "node002": {"launched": "yes"},
                                            "vm": {"launched": 1}}})
    inventory, _r, _p = run(tmp_path, {"cluster": "c", "include_master": False}, THREE)
    assert groups_of(inventory)["c_nodes"] == ["node001"]


@pytest.mark.parametrize("config, nodes", [
    ({"protected_hosts": ["NODE00*"]}, []),
    ({"managed_hosts": ["node001"]}, ["node001", "node002"]),
    ({"managed_hosts": ["*"]}, ["node001", "node002"]),            # never the qmaster
    ({"managed_hosts": ["*"], "protected_hosts": ["node002"]}, ["node001"]),
    ({"nodes_from_state": False}, []),
    ({"nodes_from_state": False, "managed_hosts": ["node00[12]"]}, ["node001", "node002"]),
    ({"exclude_filters": [{"host": "node002"}]}, []),
])
def test_managed_and_protected_hosts(tmp_path, config, nodes):
    state_file(tmp_path)
    config = dict(config, cluster="c")
    inventory, _r, _p = run(tmp_path, config, THREE)
    groups = groups_of(inventory)
    assert groups.get("c_nodes", []) == nodes
    assert groups["c_master"] == ["vm"]
    assert sorted(groups.get("c_static", []) + nodes) == groups["c_exec"]


@pytest.mark.parametrize("content, mode, message", [
    ("{not json", 0o600, "not valid JSON"),
    ("[1, 2]", 0o600, "holds a JSON list, not an object"),
    ('{"nodes": ["node002"]}', 0o600, "'nodes' is a list, not an object"),
    (None, 0o620, "writable by group or others (mode 0620)"),
    (None, 0o606, "writable by group or others"),
])
def test_a_state_file_that_cannot_be_trusted_fails(tmp_path, content, mode, message):
    path = state_file(tmp_path, content=content, mode=mode)
    with pytest.raises(AnsibleParserError) as err:
        run(tmp_path, {"cluster": "c"}, THREE)
    text = str(err.value)
    assert message in text and str(path) in text and "on the controller" in text
    assert "nodes_from_state: false" in text


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_state_file_of_another_user_fails(tmp_path):
    path = state_file(tmp_path)
    os.chown(str(path), 12345, 0)
    with pytest.raises(AnsibleParserError, match="owned by uid 12345, not by root"):
        run(tmp_path, {"cluster": "c"}, THREE)


def test_a_symlinked_state_file_fails(tmp_path):
    real = state_file(tmp_path, name="elsewhere.json")
    (tmp_path / "state.json").symlink_to(real)
    with pytest.raises(AnsibleParserError, match="cannot take the launched hosts"):
        run(tmp_path, {"cluster": "c"}, THREE)


def test_a_state_directory_fails(tmp_path):
    (tmp_path / "state.json").mkdir()
    with pytest.raises(AnsibleParserError, match="cannot take the launched hosts"):
        run(tmp_path, {"cluster": "c"}, THREE)


def _remote(tmp_path, answer):
    answers = dict(THREE)
    answers["read-state /srv/state.json"] = answer
    config = {"cluster": "c", "qmaster_host": "qmaster", "state_path": "/srv/state.json"}
    return run(tmp_path, config, answers, state=False)


def test_state_read_through_ssh(tmp_path):
    with open(os.path.join(FIX, STATE_FIXTURE), "rb") as handle:
        body = handle.read()
    inventory, runner, _p = _remote(tmp_path, (0, b"geb-state 0 600 0\n" + body, b""))
    assert runner.commands[-1] == "read-state /srv/state.json"
    groups = groups_of(inventory)
    assert groups["c_nodes"] == ["node002"]
    # the qmaster is reached where the plugin reached it
    assert hostvars(inventory, "vm")["ansible_host"] == "qmaster"
    assert "ansible_host" not in hostvars(inventory, "node002")


@pytest.mark.parametrize("answer, message", [
    ((0, b"geb-state 1000 600 0\n{}", b""), "owned by uid 1000"),
    ((0, b"geb-state 0 660 0\n{}", b""), "writable by group or others (mode 0660)"),
    ((0, b"geb-state 0 600 0\n{", b""), "not valid JSON"),
    ((0, b"hello\n", b""), "unexpected answer 'hello'"),
    ((1, b"", b"cat: /srv/state.json: Permission denied\n"), "rc 1: cat: /srv/state.json: Permission denied"),
    ((3, b"", b"/srv/state.json is not a regular file\n"), "is not a regular file"),
    ((255, b"", b"ssh: connect to host qmaster port 22: Connection refused\n"),
     "ssh to qmaster failed (rc 255) reading /srv/state.json"),
])
def test_state_through_ssh_errors(tmp_path, answer, message):
    with pytest.raises(AnsibleParserError) as err:
        _remote(tmp_path, answer)
    assert message in str(err.value)
    assert "qmaster through ssh" in str(err.value) or "rc 255" in str(err.value)


def test_state_absent_through_ssh(tmp_path):
    inventory, _r, _p = _remote(tmp_path, (0, b"geb-state absent\n", b""))
    assert "c_nodes" not in groups_of(inventory)
    assert groups_of(inventory)["c_static"] == ALL3


def test_remote_state_script_runs_under_sh(tmp_path):
    """The real script through a stand-in ssh that hands its command to sh -c as sshd does:
    absent file, a file read with its owner and mode, a path full of shell syntax taken as a
    path."""
    bin_dir, _log = _fake_sge(tmp_path)
    ssh = _script(tmp_path / "fake-ssh", r'''
import subprocess, sys
args = sys.argv[1:]
host_at = args.index("--") + 1
sys.exit(subprocess.call(["sh", "-c", args[host_at + 1]], cwd=%r))
''' % str(tmp_path))
    pwned = tmp_path / "pwned"
    weird = tmp_path / "state $(touch pwned) `touch pwned`;.json"
    base = {"plugin": "gridengine.balancer.sge", "cluster": "r", "qmaster_host": "qmaster",
            "ssh_executable": str(ssh), "sge_bin_dir": str(bin_dir)}
    for path, expected in ((tmp_path / "absent.json", []), (weird, ["node002"])):
        if expected:
            shutil.copyfile(os.path.join(FIX, STATE_FIXTURE), str(path))
            path.chmod(0o600)
        config = tmp_path / "remote.sge.yml"
        config.write_text(yaml.safe_dump(dict(base, state_path=str(path))))
        plugin = sge.InventoryModule()
        plugin._load_name = sge.InventoryModule.NAME
        plugin.display = MagicMock()
        inventory = InventoryData()
        plugin.parse(inventory, DataLoader(), str(config), cache=False)
        assert groups_of(inventory).get("r_nodes", []) == expected
        assert groups_of(inventory)["r_master"] == ["vm"]
    assert not pwned.exists()
    # a symbolic link is refused there as on the controller
    link = tmp_path / "link.json"
    link.symlink_to(weird)
    config.write_text(yaml.safe_dump(dict(base, state_path=str(link))))
    plugin = sge.InventoryModule()
    plugin._load_name = sge.InventoryModule.NAME
    plugin.display = MagicMock()
    with pytest.raises(AnsibleParserError, match="link.json is a symbolic link"):
        plugin.parse(InventoryData(), DataLoader(), str(config), cache=False)


# --------------------------------------------------------------------------- filters

TWO_QUEUES = {QHOST: (0, fixture("handmade_qhost_q_two_queues.xml"), b""),
              SSS: (0, fixture("qconf_sss.txt"), b"")}
FQDN = "ip-10-0-0-%s.eu-west-1.compute.internal"
NESTED = {
    QHOST: (0, fixture("handmade_qhost_q_soge819_fqdn.xml"), b""),
    SHGRPL: (0, fixture("handmade_qconf_shgrpl_nested.txt"), b""),
    "qconf -shgrp @allhosts -shgrp @big -shgrp @compute -shgrp @empty":
        (0, fixture("handmade_qconf_shgrp_nested.txt"), b"")}


@pytest.mark.parametrize("config, answers, exec_hosts", [
    ({"filters": {"host": "node*"}}, THREE, ["node001", "node002"]),
    ({"filters": {"host": ["NODE001", "vm"]}}, THREE, ["node001", "vm"]),
    ({"exclude_filters": [{"host": "node00?"}]}, THREE, ["vm"]),
    ({"filters": {"host": "node001"}, "include_filters": [{"host": "node002"}]}, THREE,
     ["node001", "node002"]),
    ({"filters": {"host": "node*"}, "exclude_filters": [{"host": "node002"}],
      "include_filters": [{"host": "node002"}]}, THREE, ["node001"]),
    ({"filters": {"queue": "big.q"}, "hostgroups": False}, TWO_QUEUES, ["node001", "vm"]),
    ({"filters": {"queue": "big.q", "state": "disabled"}, "hostgroups": False}, TWO_QUEUES,
     ["node001"]),
    ({"filters": {"state": ["d", "E"]}, "hostgroups": False}, TWO_QUEUES, ["node001", "vm"]),
    ({"filters": {"state": "ok"}, "hostgroups": False}, TWO_QUEUES, ["node002"]),
    ({"exclude_filters": [{"state": "error"}], "hostgroups": False}, TWO_QUEUES,
     ["node001", "node002"]),
    ({"filters": {"arch": "lx-*"}}, THREE, ALL3),
    ({"filters": {"arch": "darwin*"}}, THREE, []),
    ({"filters": {"hostgroup": "compute"}, "include_master": False}, NESTED,
     [FQDN % "116", FQDN % "166"]),
    ({"filters": {"hostgroup": "@big"}, "include_master": False}, NESTED, [FQDN % "52"]),
    ({"filters": {"hostgroup": "@allhosts", "state": "unknown"}, "include_master": False}, NESTED,
     [FQDN % "116"]),
])
def test_filters(tmp_path, config, answers, exec_hosts):
    state_file(tmp_path)
    inventory, _r, _p = run(tmp_path, dict(config, cluster="c"), answers)
    groups = groups_of(inventory)
    assert groups.get("c_exec", []) == exec_hosts
    # every group but the cluster's and the master's holds only the selected hosts
    for name, members in groups.items():
        if name not in ("c", "c_master"):
            assert set(members) <= set(exec_hosts), (name, members)
    if config.get("include_master", True):
        assert groups["c_master"] == ["vm"]       # the qmaster stays, whatever the filters say
        assert "vm" in groups["c"]


def test_filtered_out_master_keeps_its_variables(tmp_path):
    inventory, _r, _p = run(tmp_path, {"cluster": "c", "filters": {"host": "node*"}}, THREE)
    assert "vm" not in groups_of(inventory)["c_exec"]
    assert hostvars(inventory, "vm")["sge_slots"] == 2
    assert hostvars(inventory, "vm")["sge_master"] is True


@pytest.mark.parametrize("config, message", [
    ({"filters": {"name": "x"}}, "filters: unknown key 'name'"),
    ({"filters": {"host": 3}}, "filters: host must be a non-empty string or list of strings"),
    ({"filters": {"host": []}}, "filters: host must be a non-empty string"),
    ({"include_filters": [{"queue": "a"}, {"bogus": "b"}]}, "include_filters[1]: unknown key"),
    ({"exclude_filters": ["node001"]}, "is not a mapping"),
    ({"managed_hosts": [""]}, "managed_hosts: '' is not a host name pattern"),
    ({"connection_vars": {"ansible host": "x"}}, "connection_vars: 'ansible host' is not a "
                                                 "variable name"),
    ({"remote_user": "root;id"}, "remote_user 'root;id' is not a user name"),
])
def test_bad_options_are_named(tmp_path, config, message):
    with pytest.raises(AnsibleParserError) as err:
        run(tmp_path, dict(config, cluster="c"), {})
    assert message in str(err.value)


@pytest.mark.parametrize("config", [{"hostnames": ["bogus"]}, {"host_address": "dns"}])
def test_choices_are_enforced(tmp_path, config):
    with pytest.raises(AnsibleError, match="Invalid value"):
        run(tmp_path, dict(config, cluster="c"), {})


# --------------------------------------------------------------------------- hostnames, reachability

def test_hostnames_short(tmp_path):
    inventory, _r, _p = run(tmp_path, {"cluster": "aws", "hostnames": ["short"],
                                       "include_master": False}, NESTED)
    groups = groups_of(inventory)
    assert groups["aws_exec"] == ["ip-10-0-0-116", "ip-10-0-0-166", "ip-10-0-0-52"]
    assert groups["aws_hostgroup_big"] == ["ip-10-0-0-52"]
    assert hostvars(inventory, "ip-10-0-0-52")["sge_name"] == FQDN % "52"


def test_hostnames_address_first_then_name(tmp_path):
    resolver = FakeResolver({("node001", "address"): "10.77.0.11",
                             ("node002", "address"): "10.77.0.12"})
    inventory, _r, plugin = run(tmp_path, {"cluster": "c", "hostnames": ["address", "name"]},
                                THREE, resolver=resolver)
    groups = groups_of(inventory)
    assert groups["c_exec"] == ["10.77.0.11", "10.77.0.12", "vm"]    # vm does not resolve
    assert groups["c_master"] == ["vm"]
    assert hostvars(inventory, "10.77.0.11")["sge_name"] == "node001"
    assert hostvars(inventory, "10.77.0.11")["sge_address"] == "10.77.0.11"
    assert warnings_of(plugin) == []


def test_hostnames_that_collide_keep_grid_engine_names(tmp_path):
    qhost = fixture("qhost_xml_q_3hosts.xml", (("<host name='node001'>", "<host name='n.a.example'>"),
                                               ("<host name='node002'>", "<host name='n.b.example'>")))
    answers = {QHOST: (0, qhost, b""), SHGRPL: NO_GROUPS, SSS: THREE[SSS]}
    inventory, _r, plugin = run(tmp_path, {"cluster": "c", "hostnames": ["short"]}, answers)
    assert groups_of(inventory)["c_exec"] == ["n", "n.b.example", "vm"]
    assert any("n.a.example and n.b.example would both be named n" in w
               for w in warnings_of(plugin))


@pytest.mark.parametrize("choice, expected", [
    ("none", {}),
    ("name", {"node001": "node001", "node002": "node002", "vm": "vm"}),
    ("ipv4", {"node001": "10.77.0.11"}),
    ("ipv6", {"node001": "fd00::11"}),
    ("address", {"node001": "10.77.0.11"}),
])
def test_host_address(tmp_path, choice, expected):
    resolver = FakeResolver({("node001", "ipv4"): "10.77.0.11", ("node001", "address"): "10.77.0.11",
                             ("node001", "ipv6"): "fd00::11"})
    inventory, _r, plugin = run(tmp_path, {"cluster": "c", "host_address": choice}, THREE,
                                resolver=resolver)
    for host in ALL3:
        if host in expected:
            assert hostvars(inventory, host)["ansible_host"] == expected[host]
        else:
            assert "ansible_host" not in hostvars(inventory, host)
    unresolved = [w for w in warnings_of(plugin) if "does not resolve" in w]
    if choice in ("ipv4", "ipv6", "address"):
        assert sorted(w.split()[1] for w in unresolved) == ["node002", "vm"]
        assert hostvars(inventory, "node001")["sge_address"] == expected["node001"]
    else:
        assert unresolved == []


def test_resolve_address_on_this_machine():
    assert sge.resolve_address("localhost", "ipv4") == "127.0.0.1"
    assert sge.resolve_address("localhost", "address") == "127.0.0.1"


def test_connection_vars(tmp_path):
    config = {"cluster": "c", "remote_user": "root", "private_key_file": "/keys/nodes",
              "connection_vars": {"ansible_port": 2222,
                                  "ansible_python_interpreter": "/usr/bin/python3"},
              "compose": {"ansible_port": "22 if sge_master else ansible_port"}}
    inventory, _r, _p = run(tmp_path, config, THREE)
    for host in ALL3:
        variables = hostvars(inventory, host)
        assert variables["ansible_user"] == "root"
        assert variables["ansible_ssh_private_key_file"] == "/keys/nodes"
        assert variables["ansible_python_interpreter"] == "/usr/bin/python3"
    assert hostvars(inventory, "node001")["ansible_port"] == 2222
    assert hostvars(inventory, "vm")["ansible_port"] == 22          # compose runs after


# --------------------------------------------------------------------------- environment variables

ENV_CASES = [
    ({"GEB_CLUSTER": "my-cluster"}, "groups", ("my-cluster_master", ["vm"])),
    ({"GEB_SGE_ROOT": "/geb/sge", "SGE_ROOT": "/plain/sge"}, "env", ("SGE_ROOT", "/geb/sge")),
    ({"SGE_ROOT": "/plain/sge"}, "env", ("SGE_ROOT", "/plain/sge")),
    ({"GEB_SGE_CELL": "geb", "SGE_CELL": "plain"}, "env", ("SGE_CELL", "geb")),
    ({"GEB_SGE_QMASTER_PORT": "6444"}, "env", ("SGE_QMASTER_PORT", "6444")),
    ({"GEB_SGE_BIN_DIR": "/geb/bin"}, "argv0", "/geb/bin/qhost"),
    ({"GEB_COMMAND_TIMEOUT": "7"}, "timeout", 7),
    ({"GEB_INCLUDE_MASTER": "false"}, "commands", [QHOST, SHGRPL, SHGRP_ALL]),
    ({"GEB_STATE_PATH": "{tmp}/geb-state.json"}, "groups", ("c_nodes", ["node002"])),
    ({"GEB_NODES_FROM_STATE": "false", "GEB_STATE_PATH": "{tmp}/geb-state.json"}, "groups",
     ("c_nodes", None)),
    ({"GEB_MANAGED_HOSTS": "node001,node002"}, "groups", ("c_nodes", ["node001", "node002"])),
    ({"GEB_MANAGED_HOSTS": "node*", "GEB_PROTECTED_HOSTS": "node002"}, "groups",
     ("c_nodes", ["node001"])),
    ({"GEB_HOST_ADDRESS": "name"}, "hostvar", ("node001", "ansible_host", "node001")),
    ({"GEB_REMOTE_USER": "admin"}, "hostvar", ("node002", "ansible_user", "admin")),
    ({"GEB_PRIVATE_KEY_FILE": "/k/id"}, "hostvar", ("vm", "ansible_ssh_private_key_file", "/k/id")),
]


@pytest.mark.parametrize("env, what, expected", ENV_CASES,
                         ids=["-".join(sorted(c[0])) for c in ENV_CASES])
def test_options_from_environment(tmp_path, monkeypatch, env, what, expected):
    state_file(tmp_path, name="geb-state.json")
    for name, value in env.items():
        monkeypatch.setenv(name, value.replace("{tmp}", str(tmp_path)))
    config = {} if "GEB_CLUSTER" in env else {"cluster": "c"}
    inventory, runner, _p = run(tmp_path, dict(config, sge_bin_dir=None)
                                if what == "argv0" else config,
                                THREE, state="GEB_STATE_PATH" not in env)
    argv, child_env, timeout = runner.calls[0]
    if what == "groups":
        assert groups_of(inventory).get(expected[0]) == expected[1]
    elif what == "env":
        assert child_env[expected[0]] == expected[1]
    elif what == "argv0":
        assert argv[0] == expected
    elif what == "timeout":
        assert timeout == expected
    elif what == "commands":
        assert runner.commands == expected
    else:
        assert hostvars(inventory, expected[0])[expected[1]] == expected[2]


def test_qmaster_and_ssh_options_from_environment(tmp_path, monkeypatch):
    """What an AWX credential injects: the qmaster, the ssh user, key, client and arguments."""
    (tmp_path / "awx").mkdir()
    ssh = _script(tmp_path / "awx" / "ssh", "")
    monkeypatch.setenv("GEB_QMASTER_HOST", "qmaster.example.org")
    monkeypatch.setenv("GEB_SSH_USER", "sgeadmin")
    monkeypatch.setenv("GEB_SSH_PRIVATE_KEY_FILE", "/runner/env/ssh_key")
    monkeypatch.setenv("GEB_SSH_EXECUTABLE", str(ssh))
    monkeypatch.setenv("GEB_SSH_ARGS", "-o,ProxyJump=bastion")
    answers = dict(THREE)
    answers["read-state %s" % (tmp_path / "state.json")] = (0, b"geb-state absent\n", b"")
    inventory, runner, _p = run(tmp_path, {"cluster": "c"}, answers)
    argv = runner.calls[0][0]
    assert argv[:-1] == [str(ssh), "-o", "BatchMode=yes", "-o", "ProxyJump=bastion",
                         "-i", "/runner/env/ssh_key", "-l", "sgeadmin", "--",
                         "qmaster.example.org"]
    assert hostvars(inventory, "vm")["ansible_host"] == "qmaster.example.org"
    # the configuration file wins over the environment
    _inv, runner, _p = run(tmp_path, {"cluster": "c", "ssh_user": "root"}, answers)
    assert runner.calls[0][0][7:9] == ["-l", "root"]


def test_environment_names_are_documented():
    """Every env entry of the plugin is GEB_* (or Grid Engine's own SGE_ROOT/SGE_CELL), listed
    in the plugin's notes and in docs/inventory.md."""
    doc = yaml.safe_load(sge.DOCUMENTATION)
    names = set()
    for option, spec in doc["options"].items():
        for entry in spec.get("env", []):
            assert entry["name"].startswith("GEB_") or entry["name"] in ("SGE_ROOT", "SGE_CELL"), \
                (option, entry)
            names.add(entry["name"])
    geb = sorted(n for n in names if n.startswith("GEB_"))
    assert len(geb) >= 19
    notes = " ".join(doc["notes"])
    with open(os.path.join(REPO, "docs", "inventory.md")) as handle:
        guide = handle.read()
    for name in geb:
        assert "E(%s)" % name in notes, name
        assert "`%s`" % name in guide, name


# --------------------------------------------------------------------------- cache, end to end

def test_cache_written_before_the_state_was_read_is_read_again(tmp_path):
    """A model cached by the plugin before it read the state (no 'balancer' key) must not give
    an empty <cluster>_nodes: it is read again."""
    state_file(tmp_path)
    config = {"cluster": "c", "cache": True, "cache_plugin": "jsonfile",
              "cache_connection": str(tmp_path / "cache"), "cache_timeout": 3600}
    first, runner, _p = run(tmp_path, config, THREE, cache=True)
    assert len(runner.calls) == 4
    second, runner, _p = run(tmp_path, config, {}, cache=True)
    assert runner.calls == [] and groups_of(second)["c_nodes"] == ["node002"]
    for entry in (tmp_path / "cache").iterdir():
        data = json.loads(entry.read_text())
        model = json.loads(data["__payload__"])     # ansible.builtin.jsonfile's layout
        del model["balancer"]
        data["__payload__"] = json.dumps(model)
        entry.write_text(json.dumps(data))
    third, runner, _p = run(tmp_path, config, THREE, cache=True)
    assert len(runner.calls) == 4 and groups_of(third)["c_nodes"] == ["node002"]


def test_ansible_inventory_my_cluster_end_to_end(tmp_path):
    """The real ansible-inventory, stand-in qhost/qconf, the real state fixture, cluster
    my-cluster: the groups the loadbalance playbook needs."""
    bin_dir, _log = _fake_sge(tmp_path)
    state = state_file(tmp_path)
    proc = _ansible_inventory(tmp_path, {
        "plugin": "gridengine.balancer.sge", "cluster": "my-cluster",
        "sge_bin_dir": str(bin_dir), "state_path": str(state)})
    assert proc.returncode == 0, proc.stderr
    data = _plain(json.loads(proc.stdout))
    assert data["my-cluster_master"]["hosts"] == ["vm"]
    assert data["my-cluster_nodes"]["hosts"] == ["node002"]
    assert sorted(data["my-cluster_static"]["hosts"]) == ["node001", "vm"]
    assert "my-cluster_nodes" in data["my-cluster"]["children"]
    assert data["_meta"]["hostvars"]["node002"]["sge_node"] is True
