# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The elastic_plan action plugin, with a fake qmaster.

``_execute_module`` is replaced by :class:`FakeQmaster`, which runs the state module's own code
(module_utils.balancer_state) against a file under tmp_path, so reads, writes, corrupt files
and write failures are real; only the transport to the qmaster is faked.
"""

from __future__ import annotations

import json
import os
from unittest.mock import MagicMock

import pytest
import yaml

from ansible.errors import AnsibleActionFail

from ansible_collections.gridengine.balancer.plugins.action import elastic_plan as action
from ansible_collections.gridengine.balancer.plugins.modules import elastic_plan as doc
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

T0 = 1700000000.0


def host(used=0, jobs=0):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": 0.1, "mem_total": 2 << 30, "mem_used": 0,
            "slots_total": 2, "slots_used": used, "slots_reserved": 0, "states": "", "queues": ["all.q"],
            "running_jobs": jobs}


def snapshot(now=T0, pending=True):
    hosts = {"master": host(2, 1), "node001": host(2, 1)}
    return {"schema": 1, "taken_at": now, "flavour": "SoGE 8.1", "cell": "default", "hosts": hosts,
            "queues": [], "accounting": None,
            "pending": [{"id": 42, "state": "qw", "submit_time": T0 - 965, "slots": 1, "task_count": 7,
                         "hard_queues": [], "hard_requests": {}, "held": False, "error": False}] if pending else [],
            "running": [{"id": 1, "task": None, "host": "master", "hosts": {"master": 2}, "slots": 2,
                         "start_time": T0 - 100, "state": "r", "queue": "all.q"},
                        {"id": 2, "task": None, "host": "node001", "hosts": {"node001": 2}, "slots": 2,
                         "start_time": T0 - 100, "state": "r", "queue": "all.q"}]}


class FakeQmaster(object):
    """Answers gridengine.balancer.balancer_state calls like the module would."""

    def __init__(self, fail_write=False):
        self.calls = []
        self.fail_write = fail_write

    def __call__(self, module_args):
        self.calls.append(dict(module_args))
        path = module_args["path"]
        try:
            content, text = bs.read_state(path)
        except bs.StateFileError as exc:
            if module_args["state"] == "read":
                return {"failed": True, "msg": str(exc)}
            content, text = None, None
        if module_args["state"] == "read":
            return {"changed": False, "content": content, "path": path}
        if self.fail_write:
            return {"failed": True, "msg": "cannot write state file %s: Read-only file system" % path}
        new = module_args["content"]
        changed = text is None or bs.dumps(content) != bs.dumps(new)
        if changed:
            bs.write_atomic(path, bs.dumps(new))
        return {"changed": changed, "content": new, "path": path,
                "diff": {"before": bs.dumps(content) if content is not None and text else "", "after": bs.dumps(new)}}


def args(tmp_path, **kw):
    out = {k: None for k in action.ARGUMENT_SPEC}
    out.update({"cluster": "mycluster", "snapshot": snapshot(), "profile": "default", "min_nodes": 1,
                "max_nodes": 5, "add_nodes_per_iter": 2, "master": "master", "interval": 60,
                "job_wait_time": 900, "kill_after": 45, "stabilization_time": 300, "lookback_window": 3,
                "plot_stats": False, "dump_stats": False, "kill_cluster": False, "idle_time": 600,
                "queues": [], "boot_timeout": 1200, "state_path": str(tmp_path / "qmaster" / "state.json"),
                # the provider's list, as the playbook passes it
                "launched_hosts": ["node001", "node002", "node003"]})
    out.update(kw)
    return out


def test_first_poll_writes_state_and_returns_plan(tmp_path):
    qm = FakeQmaster()
    res = action.plan_poll(args(tmp_path), qm, home=str(tmp_path / "home"))
    assert [c["state"] for c in qm.calls] == ["read", "present"]
    assert res["changed"] is True
    plan = res["plan"]
    assert "state" not in plan
    assert plan["add"] == 2 and plan["remove"] == []
    assert res["msg"].splitlines()[0] == "mycluster: add 2 nodes (2 up, 0 booting, min 1, max 5)"
    assert ("- add 2 nodes: 7 slots waiting (oldest job 42 waited 16m05s > job_wait_time 15m), 2 slots per node, "
            "capped by add_nodes_per_iter=2") in res["msg"]
    assert "- keep node001: running 1 job" in res["msg"]
    saved = json.loads((tmp_path / "qmaster" / "state.json").read_text())
    assert saved["last_change"] == T0 and len(saved["booting"]) == 2
    assert not (tmp_path / "home").exists()  # no statistics asked for
    json.dumps(res)


def test_second_poll_reads_the_saved_state(tmp_path):
    qm = FakeQmaster()
    action.plan_poll(args(tmp_path), qm)
    res = action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 60)), qm)
    plan = res["plan"]
    assert plan["nodes"]["booting"] == 2
    assert plan["add"] == 0
    assert "hold: cluster changed 1m ago < stabilization_time 5m" in res["msg"]


def test_now_is_the_snapshot_clock(tmp_path):
    res = action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 12345)), FakeQmaster())
    assert res["plan"]["now"] == T0 + 12345


def test_check_mode_writes_nothing(tmp_path):
    qm = FakeQmaster()
    home = tmp_path / "home"
    res = action.plan_poll(args(tmp_path, dump_stats=True, plot_stats=True), qm, check_mode=True, diff=True,
                           home=str(home))
    assert [c["state"] for c in qm.calls] == ["read"]
    assert res["changed"] is True and res["plan"]["add"] == 2
    assert json.loads(res["diff"]["after"])["schema"] == 1
    assert not (tmp_path / "qmaster").exists()
    assert not home.exists()
    assert "stats_file" not in res and "plots" not in res


@pytest.mark.parametrize("snap, words", [
    (None, "snapshot: missing or empty"),
    ({}, "snapshot: missing or empty"),
    ([], "snapshot: missing or empty"),
    ("not a dict", "snapshot: must be a mapping"),
    ({"schema": 2}, "snapshot: schema must be 1"),
    ({"schema": 1, "hosts": {}, "pending": []}, "'running' must be a list"),
    (dict(snapshot(), taken_at=None), "taken_at"),
])
def test_malformed_snapshot_fails_and_writes_nothing(tmp_path, snap, words):
    qm = FakeQmaster()
    with pytest.raises(AnsibleActionFail) as err:
        action.plan_poll(args(tmp_path, snapshot=snap), qm)
    assert words in str(err.value) and "nothing written" in str(err.value)
    assert qm.calls == []


def test_bad_option_fails_naming_it(tmp_path):
    qm = FakeQmaster()
    with pytest.raises(AnsibleActionFail, match="^interval:"):
        action.plan_poll(args(tmp_path, interval=301), qm)
    with pytest.raises(AnsibleActionFail, match="^cluster:"):
        action.plan_poll(args(tmp_path, cluster="../x"), qm)
    assert qm.calls == []


def test_corrupt_state_fails_and_is_not_overwritten(tmp_path):
    path = tmp_path / "qmaster" / "state.json"
    path.parent.mkdir()
    path.write_text("{oops")
    qm = FakeQmaster()
    with pytest.raises(AnsibleActionFail) as err:
        action.plan_poll(args(tmp_path), qm)
    assert str(path) in str(err.value) and "not valid JSON" in str(err.value)
    assert [c["state"] for c in qm.calls] == ["read"]
    assert path.read_text() == "{oops"


def test_state_write_failure_fails_the_task(tmp_path):
    with pytest.raises(AnsibleActionFail, match="do not act on this plan"):
        action.plan_poll(args(tmp_path), FakeQmaster(fail_write=True))


def test_stats_and_plots_on_the_controller(tmp_path):
    qm = FakeQmaster()
    home = tmp_path / "home"
    for i in range(3):
        res = action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 60 * i), dump_stats=True, plot_stats=True),
                               qm, home=str(home))
    base = home / ".gridengine-balancer" / "mycluster"
    assert res["stats_file"] == str(base / "sge-stats.csv")
    lines = (base / "sge-stats.csv").read_text().splitlines()
    assert lines[0].startswith("time,hosts,") and len(lines) == 4
    assert sorted(os.path.basename(p) for p in res["plots"]) == sorted(c + ".png" for c in
                                                                       ("hosts", "running_jobs", "queued_jobs", "slots",
                                                                        "avg_duration", "avg_wait", "avg_load"))
    assert all(os.path.getsize(p) > 0 for p in res["plots"])


def test_explicit_stats_locations_and_unwritable_dir_only_warns(tmp_path):
    csv_path = tmp_path / "elsewhere" / "stats.csv"
    res = action.plan_poll(args(tmp_path, dump_stats=True, stats_file=str(csv_path)), FakeQmaster())
    assert res["stats_file"] == str(csv_path) and csv_path.exists()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 60), dump_stats=True,
                                stats_file=str(blocker / "s.csv")), FakeQmaster())
    assert any("statistics not written" in w for w in res["warnings"])
    assert res["changed"] is True  # the decision and the state went through


def test_argument_spec_matches_the_policy_defaults():
    """DOCUMENTATION is the argument spec; its defaults must be elastic.py's."""
    options = yaml.safe_load(doc.DOCUMENTATION)["options"]
    defaults = elastic.default_config("default")
    # an option whose default depends on the profile or the billing is documented without a
    # default: a default in the spec would be passed explicitly and win over the profile's
    variants = [elastic.default_config(p, b) for p in elastic.PROFILES for b in (None,) + elastic.BILLING
                if not (p == "starcluster" and b == "per_second")]
    varying = {name for name in elastic.OPTIONS if len({repr(v[name]) for v in variants}) > 1}
    varying -= {"profile", "queues"}  # the option itself; starcluster takes [] as all.q
    assert {"add_nodes_per_iter", "interval", "job_wait_time", "stabilization_time", "idle_time"} <= varying
    assert set(elastic.OPTIONS) <= set(options)
    for name in elastic.OPTIONS:
        if "default" in options[name]:
            assert name not in varying, name
            assert options[name]["default"] == defaults[name], name
        else:
            assert defaults[name] is None or name in varying, name
    assert action.ARGUMENT_SPEC["cluster"] == {"type": "str", "required": True}
    assert action.ARGUMENT_SPEC["queues"]["elements"] == "str"


# ---- through ActionModule.run, with Ansible's own argument validation -----------------------

def make_action(task_args, check_mode=False):
    task = MagicMock()
    task.args = task_args
    task.async_val = 0
    task.check_mode = check_mode
    task.diff = False
    task.action = "gridengine.balancer.elastic_plan"
    connection = MagicMock()
    plugin = action.ActionModule(task, connection, MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    qm = FakeQmaster()
    seen = []

    def execute_module(module_name=None, module_args=None, task_vars=None, **kw):
        seen.append(module_name)
        return qm(module_args)

    plugin._execute_module = execute_module
    return plugin, seen


def test_action_module_run(tmp_path):
    plugin, seen = make_action({"cluster": "mycluster", "snapshot": snapshot(), "master": "master", "max_nodes": "5",
                                "add_nodes_per_iter": 2, "state_path": str(tmp_path / "s.json")})
    res = plugin.run(task_vars={})
    assert seen == ["gridengine.balancer.balancer_state"] * 2
    assert res["plan"]["add"] == 2 and res["plan"]["nodes"]["max"] == 5  # "5" coerced to int
    assert res["changed"] is True and (tmp_path / "s.json").exists()


def test_action_module_run_check_mode(tmp_path):
    plugin, seen = make_action({"cluster": "mycluster", "snapshot": snapshot(), "master": "master",
                                "state_path": str(tmp_path / "s.json")}, check_mode=True)
    res = plugin.run(task_vars={})
    assert seen == ["gridengine.balancer.balancer_state"]
    assert not (tmp_path / "s.json").exists() and "plan" in res


@pytest.mark.parametrize("task_args, words", [
    ({"snapshot": {}}, "cluster"),
    ({"cluster": "c", "snapshot": {}, "profile": "aws"}, "profile"),
    ({"cluster": "c", "snapshot": {}, "max_nodes": "many"}, "max_nodes"),
    ({"cluster": "c", "snapshot": {}, "colour": "red"}, "colour"),
])
def test_action_module_rejects_bad_arguments(task_args, words):
    plugin, seen = make_action(task_args)
    with pytest.raises(AnsibleActionFail) as err:
        plugin.run(task_vars={})
    assert words in str(err.value)
    assert seen == []


# ---- node-hours and cost ---------------------------------------------------------------------

def test_cost_columns_and_result_with_a_price(tmp_path):
    qm = FakeQmaster()
    home = tmp_path / "home"
    results = [action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 60 * i), dump_stats=True, plot_stats=True,
                                     instance_hour_price=0.25), qm, home=str(home))
               for i in range(3)]
    base = home / ".gridengine-balancer" / "mycluster"
    lines = (base / "sge-stats.csv").read_text().splitlines()
    assert lines[0].endswith(",avg_load,node_hours,cost,total_node_hours,total_cost") and len(lines) == 4
    # two hosts in every snapshot, polls one minute apart
    assert results[0]["cost"] == {"node_hours": 0.0, "cost": 0.0, "total_node_hours": 0.0, "total_cost": 0.0,
                                  "instance_hour_price": 0.25}
    assert results[2]["cost"]["node_hours"] == pytest.approx(2 / 60)
    assert results[2]["cost"]["total_node_hours"] == pytest.approx(4 / 60, abs=1e-6)
    assert results[2]["cost"]["total_cost"] == pytest.approx(1 / 60, abs=1e-6)
    names = {os.path.basename(p) for p in results[2]["plots"]}
    assert {"node_hours.png", "cost.png", "hosts.png"} <= names and len(names) == 9


def test_no_price_no_cost_and_check_mode_writes_nothing(tmp_path):
    res = action.plan_poll(args(tmp_path, dump_stats=True, stats_file=str(tmp_path / "s.csv")), FakeQmaster())
    assert "cost" not in res
    assert (tmp_path / "s.csv").read_text().splitlines()[0].endswith(",avg_load")
    res = action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 60), dump_stats=True,
                                stats_file=str(tmp_path / "c.csv"), instance_hour_price=1.0),
                           FakeQmaster(), check_mode=True)
    assert "cost" not in res and not (tmp_path / "c.csv").exists()


def test_bad_price_fails_naming_it_and_writes_nothing(tmp_path):
    qm = FakeQmaster()
    with pytest.raises(AnsibleActionFail, match="instance_hour_price"):
        action.plan_poll(args(tmp_path, dump_stats=True, stats_file=str(tmp_path / "s.csv"),
                              instance_hour_price=-0.1), qm)
    assert qm.calls == [] and not (tmp_path / "s.csv").exists()


def test_action_module_coerces_the_price(tmp_path):
    plugin, seen = make_action({"cluster": "mycluster", "snapshot": snapshot(), "master": "master",
                                "state_path": str(tmp_path / "s.json"), "dump_stats": True,
                                "stats_file": str(tmp_path / "s.csv"), "instance_hour_price": "0.5"})
    res = plugin.run(task_vars={})
    assert res["cost"]["instance_hour_price"] == 0.5
    plugin, seen = make_action({"cluster": "c", "snapshot": {}, "instance_hour_price": "cheap"})
    with pytest.raises(AnsibleActionFail, match="instance_hour_price"):
        plugin.run(task_vars={})
    assert seen == []
