# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_join / node_leave export stages (issue 25): one module call on the master's NFS server.

The task arguments are rendered with Ansible's templar from the roles' defaults, for both server
kinds: the join exports every share to the node's one address, the leave takes every address of
the node away, before the provider terminates it; the new inputs are checked up front.
"""

from __future__ import annotations

import os

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MODULE = "gridengine.balancer.nfs_export"

pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")


def _load(*parts):
    return DataLoader().load_from_file(os.path.join(REPO, *parts))


def _render(value, variables):
    templar = Templar(loader=DataLoader(), variables=variables)
    if isinstance(value, str):
        return templar.template(trust_as_template(value))
    if isinstance(value, list):
        return [_render(v, variables) for v in value]
    return value


def _defaults(role, base):
    raw = _load("roles", role, "defaults", "main.yml")
    variables = dict(base)
    for dummy in range(4):
        for key, value in raw.items():
            if key in base:
                continue
            try:
                variables[key] = _render(value, dict(raw, **variables))
            except Exception:  # pylint: disable=broad-except
                variables[key] = value
    return variables


def _args(spec, variables):
    return {k: _render(v, variables) for k, v in spec.items()}


@pytest.mark.parametrize("server, config", [("kernel", "/etc/exports"),
                                            ("ganesha", "/etc/ganesha/gridengine-balancer-mycluster.conf")])
def test_join_exports_every_share_to_the_node_address_only(server, config):
    task = [t for t in _load("roles", "node_join", "tasks", "exports.yml")
            if t["name"] == "Export the shares to the new node only"][0]
    variables = _defaults("node_join", {"node_join_cluster": "mycluster", "node_join_name": "node003",
                                        "cluster_nfs_server": server})
    variables["node_join_node_address"] = "10.77.0.13"
    args = _args(task[MODULE], variables)
    assert args["server"] == server and args["config"] == config and args["state"] == "present"
    assert args["clients"] == ["10.77.0.13"]
    assert args["paths"] == ["/home", "/var/lib/gridengine"]
    assert args["options"] == "rw,sync,root_squash,no_subtree_check" and args["squash"] == "root_squash"
    assert args["include_in"] == "/etc/ganesha/ganesha.conf" and args["pid_file"] == "/run/ganesha/ganesha.pid"


def test_leave_takes_every_address_of_the_node_away_before_the_provider_terminates_it():
    tasks = _load("roles", "node_leave", "tasks", "remove_rest.yml")
    names = [t["name"] for t in tasks]
    block = tasks[0]["block"]
    assert tasks[0]["name"].startswith("Remove the rest of an exec node")
    assert names.index("Terminate the node with the provider - {{ node_leave_provider }}") == 1
    # under the master's host-files lock: remove_rest.yml runs unexport.yml through locked.yml
    locked = [t for t in block if t["name"].startswith("Stop exporting the shares to the node")][0]
    assert locked["ansible.builtin.include_tasks"] == "locked.yml"
    assert locked["vars"] == {"node_leave_locked_tasks": "unexport.yml"}
    task = _load("roles", "node_leave", "tasks", "unexport.yml")[0]
    assert task["name"] == "Stop exporting the shares to the node"
    variables = _defaults("node_leave", {"node_leave_cluster": "mycluster", "node_leave_name": "node003",
                                         "cluster_nfs_server": "ganesha"})
    variables["node_leave_addresses"] = ["10.77.0.13", "fd00::13"]
    args = _args(task[MODULE], variables)
    assert args["state"] == "absent" and args["clients"] == ["10.77.0.13", "fd00::13"]
    assert args["server"] == "ganesha" and args["config"] == "/etc/ganesha/gridengine-balancer-mycluster.conf"
    # no exportfs/lineinfile left behind the module
    for name in ("remove_rest.yml", "unexport.yml"):
        text = open(os.path.join(REPO, "roles", "node_leave", "tasks", name), encoding="utf-8").read()
        assert "exportfs" not in "".join(line.split("#")[0] for line in text.splitlines())


def _asserts(role):
    out = []
    for task in _load("roles", role, "tasks", "validate.yml"):
        if "ansible.builtin.assert" in task:
            that = task["ansible.builtin.assert"]["that"]
            out.extend(that if isinstance(that, list) else [that])
    return [c for c in out if "nfs_server" in c or "ganesha" in c]


def _failing(conditions, variables):
    templar = Templar(loader=DataLoader(), variables=variables)
    bad = []
    for cond in conditions:
        try:
            if not templar.evaluate_conditional(trust_as_template(cond)):
                bad.append(cond)
        except Exception:  # pylint: disable=broad-except
            bad.append(cond)
    return bad


@pytest.mark.parametrize("role", ["node_join", "node_leave"])
@pytest.mark.parametrize("var, value", [
    ("nfs_server", "nfs"), ("nfs_server", "kernel\n"), ("ganesha_config", "relative.conf"),
    ("ganesha_config", "/etc/ganesha/../passwd"), ("ganesha_config", '/etc/ganesha/x"; }'),
    ("ganesha_config", "/etc/ganesha/x\n"), ("ganesha_include_in", "ganesha.conf"),
    ("ganesha_pid_file", "/run/ganesha/$(id).pid"), ("ganesha_squash", "none"),
])
def test_the_new_inputs_are_checked_first(role, var, value):
    name = "%s_%s" % (role, var)
    base = {"%s_cluster" % role: "mycluster", "%s_name" % role: "node003"}
    variables = _defaults(role, base)
    conditions = _asserts(role)
    assert conditions and _failing(conditions, variables) == []
    if name not in variables:
        pytest.skip("%s has no %s" % (role, var))
    variables[name] = value
    assert _failing(conditions, variables), "%s=%r passed" % (name, value)
