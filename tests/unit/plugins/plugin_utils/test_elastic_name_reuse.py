# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names of nodes removed recently are not given to new nodes (``name_reuse_time``).

The qmaster caches failed lookups of a removed name, and a node joined under it again waits for
one more registration round (docs/node-join-leave.md, 37-47 s instead of about 17 s). The elastic
policy remembers the hosts that left (state ``removed``), the plan lists those that left less than
``name_reuse_time`` ago (``recently_removed``), and the poll names new nodes with
``next_node_names(..., avoid=plan.recently_removed)``. These tests run that chain: a scale-down
that removes node003 (the highest number), then a scale-up.
"""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.gridengine.balancer.plugins.action import elastic_plan as action
from ansible_collections.gridengine.balancer.plugins.filter.nodes import next_node_names
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

T0 = 1700000000.0
FMT = "node%03d"

# growth as soon as a job waits and no cool-down, so a scale-up can follow a scale-down at once
FAST = {"master": "master", "min_nodes": 1, "max_nodes": 6, "job_wait_time": 0, "stabilization_time": 0,
        "idle_time": 600, "add_nodes_per_iter": 1, "managed_hosts": ["node*"]}


def host(jobs=0):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": 0.05, "mem_total": 2 << 30, "mem_used": 0,
            "slots_total": 2, "slots_used": 2 * bool(jobs), "slots_reserved": 0, "states": "",
            "queues": ["all.q"], "running_jobs": jobs}


def snap(names, now, waiting=0):
    """``names`` are execution hosts besides the master, each running a job; ``waiting`` jobs wait."""
    hosts = {"master": host(1)}
    hosts.update((name, host(1)) for name in names)
    running = [{"id": 100 + i, "task": None, "name": "r", "owner": "tester", "project": None, "state": "r",
                "queue": "all.q", "host": name, "hosts": {name: 2}, "slots": 2, "start_time": now - 300}
               for i, name in enumerate(sorted(hosts))]
    pending = [{"id": 500 + i, "name": "w", "owner": "tester", "project": None, "state": "qw", "priority": 0.5,
                "submit_time": now - 30, "tasks": None, "task_count": 1, "slots": 1, "pe": None,
                "pe_range": None, "hard_requests": {}, "hard_queues": [], "held": False, "error": False}
               for i in range(waiting)]
    return {"schema": 1, "taken_at": now, "flavour": "SoGE 8.1", "cell": "default", "hosts": hosts,
            "queues": [], "pending": pending, "running": running}


def old_state(names, now):
    """A state as the balancer wrote it before ``removed`` existed (no such key)."""
    nodes = {name: {"first_seen": now - 7200, "joined": now - 7200, "last_busy": now - 60}
             for name in ["master"] + list(names)}
    return {"schema": 1, "profile": "default", "last_poll": now - 60, "last_change": now - 3600,
            "last_change_reason": "plan: add 1", "cluster_size": len(nodes), "nodes": nodes,
            "booting": [], "last_launch_failure": None,
            "jobs": {"pending": {}, "running": {}, "started": [], "finished": []}}


def state_warnings(plan):
    return [w for w in plan["warnings"] if w.startswith("state")]


def scale_down_then_up(delay, **config):
    """node001-node003 up; node003 is removed, a poll at T0 no longer sees it; ``delay`` seconds later
    a poll with a waiting job adds a node. Returns (that plan, the names the poll gives the new node,
    the state after the first poll)."""
    cfg = dict(FAST, **config)
    state = old_state(["node001", "node002", "node003"], T0)
    gone = elastic.decide(snap(["node001", "node002"], T0), state, cfg, T0)
    assert gone["add"] == 0 and gone["remove"] == []
    now = T0 + delay
    plan = elastic.decide(snap(["node001", "node002"], now, waiting=3), gone["state"], cfg, now)
    assert plan["add"] == 1, plan["items"]
    existing = ["master", "node001", "node002"]
    return plan, next_node_names(existing, plan["add"], FMT, avoid=plan["recently_removed"]), gone["state"]


def test_a_name_removed_60_s_ago_is_not_reused():
    plan, names, first = scale_down_then_up(60)
    assert first["removed"] == {"node003": T0}
    assert plan["recently_removed"] == ["node003"]
    assert plan["state"]["removed"] == {"node003": T0}
    assert names == ["node004"]
    # what the old naming gave (the test fails if avoid has no effect)
    assert next_node_names(["master", "node001", "node002"], 1, FMT) == ["node003"]


@pytest.mark.parametrize("window, delay, reused", [
    (600, 599, False),   # within the window: still avoided
    (600, 600, True),    # the window has passed: the name is free again
    (600, 3600, True),
    (300, 299, False),
    (300, 301, True),
])
def test_a_name_removed_longer_ago_than_the_window_is_reused(window, delay, reused):
    plan, names, _first = scale_down_then_up(delay, name_reuse_time=window)
    assert names == (["node003"] if reused else ["node004"])
    assert plan["recently_removed"] == ([] if reused else ["node003"])
    # forgotten once the window has passed: the state does not grow
    assert ("removed" in plan["state"]) is (not reused)


def test_the_default_window_is_600_s():
    assert elastic.default_config()["name_reuse_time"] == 600
    assert scale_down_then_up(590)[1] == ["node004"]


def test_window_0_keeps_the_old_naming_and_the_old_state():
    plan, names, first = scale_down_then_up(60, name_reuse_time=0)
    assert names == ["node003"]
    assert plan["recently_removed"] == []
    assert "removed" not in first and "removed" not in plan["state"]
    # the state is the one the balancer wrote before name_reuse_time existed: the same keys
    assert set(plan["state"]) == set(old_state([], T0))


def test_an_old_state_file_loads():
    """A state without ``removed`` (written by an earlier version): no warning, nothing known to have
    left, and the first host it sees leaving is recorded."""
    state = old_state(["node001", "node002", "node003"], T0)
    same = elastic.decide(snap(["node001", "node002", "node003"], T0), copy.deepcopy(state), FAST, T0)
    assert state_warnings(same) == [] and same["recently_removed"] == [] and "removed" not in same["state"]
    gone = elastic.decide(snap(["node001", "node002"], T0), copy.deepcopy(state), FAST, T0)
    assert state_warnings(gone) == []
    assert gone["recently_removed"] == ["node003"] and gone["state"]["removed"] == {"node003": T0}


def test_an_old_state_file_loads_through_the_action(tmp_path):
    """elastic_plan with a state file on the "qmaster" as the previous version wrote it; check mode
    names the same node as a real run, and writes nothing."""
    path = tmp_path / "qmaster" / "state.json"
    path.parent.mkdir()
    path.write_text(json.dumps(old_state(["node001", "node002", "node003"], T0 - 60)))

    def execute_state(module_args):
        content, _text = bs.read_state(module_args["path"])
        if module_args["state"] == "read":
            return {"changed": False, "content": content}
        bs.write_atomic(module_args["path"], bs.dumps(module_args["content"]))
        return {"changed": True, "content": module_args["content"]}

    def poll(snapshot, check_mode=False):
        task_args = {k: None for k in action.ARGUMENT_SPEC}
        task_args.update(FAST, cluster="mycluster", snapshot=snapshot, profile="default", state_path=str(path))
        return action.plan_poll(task_args, execute_state, check_mode=check_mode)

    res = poll(snap(["node001", "node002"], T0))  # node003 has left
    assert [w for w in res.get("warnings", []) if "state" in w] == []
    assert json.loads(path.read_text())["removed"] == {"node003": T0}
    before = path.read_text()
    up = snap(["node001", "node002"], T0 + 60, waiting=3)
    checked = poll(up, check_mode=True)
    assert path.read_text() == before
    real = poll(up)
    for res in (checked, real):
        assert res["plan"]["add"] == 1 and res["plan"]["recently_removed"] == ["node003"]
        assert next_node_names(list(up["hosts"]), 1, FMT, avoid=res["plan"]["recently_removed"]) == ["node004"]


def test_a_host_seen_again_is_forgotten():
    state = dict(old_state(["node001", "node002", "node003"], T0), removed={"node003": T0 - 30, "node009": T0 - 30})
    plan = elastic.decide(snap(["node001", "node002", "node003"], T0), state, FAST, T0)
    assert plan["recently_removed"] == ["node009"] and plan["state"]["removed"] == {"node009": T0 - 30}


def test_removed_times_that_cannot_be_read_are_dropped_with_a_warning():
    state = dict(old_state(["node001"], T0), removed={"node002": "yesterday", "node003": T0 - 30})
    plan = elastic.decide(snap(["node001"], T0), state, FAST, T0)
    assert plan["recently_removed"] == ["node003"]
    assert any("removed node node002 has no readable time" in w for w in plan["warnings"]), plan["warnings"]
    plan = elastic.decide(snap(["node001"], T0), dict(state, removed=["node002"]), FAST, T0)
    assert plan["recently_removed"] == []
    assert any("'removed' has an unexpected type" in w for w in plan["warnings"]), plan["warnings"]


def test_a_time_after_now_counts_as_now():
    """A clock that went back must not hold a name for longer than the window from now."""
    state = dict(old_state(["node001"], T0), removed={"node002": T0 + 86400})
    plan = elastic.decide(snap(["node001"], T0), state, dict(FAST, name_reuse_time=600), T0)
    assert plan["state"]["removed"] == {"node002": T0}
    later = elastic.decide(snap(["node001"], T0 + 600), plan["state"], dict(FAST, name_reuse_time=600), T0 + 600)
    assert later["recently_removed"] == []


@pytest.mark.parametrize("bad", [-1, "600", True, float("nan")])
def test_name_reuse_time_must_be_seconds(bad):
    with pytest.raises(ValueError) as err:
        elastic.validate_config({"name_reuse_time": bad})
    assert str(err.value).startswith("name_reuse_time: must be a number of seconds >= 0")


def test_the_simulator_s_lean_decision_records_nothing():
    """The trace simulator names no nodes: its lean state stays as it was (test_sim_engine compares it)."""
    state = old_state(["node001", "node002", "node003"], T0)
    cfg = elastic.validate_config(FAST)
    lean = elastic._decide_validated(snap(["node001", "node002"], T0), state, cfg, T0, lean=True)
    assert lean["recently_removed"] == [] and "removed" not in lean["state"]
