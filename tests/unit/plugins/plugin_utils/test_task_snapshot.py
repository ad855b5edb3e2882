# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils.task_snapshot: registry + node scans + Grid Engine jobs -> the spawn snapshot."""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils import task_snapshot as ts
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import spawn, spawn_exec

MB = 1000 ** 2


def _scan(copies, used, total=64 * MB):
    return {"disk_used": used, "disk_free": total - used, "leftovers": [],
            "copies": [{"job": j, "task": t, "bytes": b, "last_active": 100.0} for j, t, b in copies]}


REGISTRY = {"version": 1, "moves": {},
            "jobs": {"logs": {"replicas": 0, "tasks": {str(t): {"live": "vm"} for t in range(6)}},
                     "rep": {"replicas": 1, "tasks": {"0": {"live": "vm"}}}}}
SCANS = {"vm": _scan([("logs", str(t), 3 * MB) for t in range(6)] + [("rep", "0", 2 * MB)], 20 * MB),
         "n1": _scan([("rep", "0", 2 * MB), ("stray", "0", 2 * MB)], 4 * MB),
         "n2": _scan([], 0)}
SGE = {"running": [{"id": 7, "name": "task.logs.1", "queue": "all.q", "host": "vm"}],
       "pending": [{"id": 8, "name": "task.logs.5", "hard_queues": ["all.q@vm"]},
                   {"id": 9, "name": "$(touch x)", "hard_queues": []}]}


def test_roles_running_pinned_and_warnings():
    snap, extra = ts.build(REGISTRY, SCANS, SGE, now=200.0)
    roles = {(t["job"], t["task"], t["host"]): (t["role"], t["running"]) for t in snap["tasks"]}
    assert roles[("rep", "0", "vm")] == ("live", False)
    assert roles[("rep", "0", "n1")] == ("replica", False)
    assert roles[("logs", "1", "vm")] == ("live", True)
    assert ts.pinned_to(extra, "logs", "5", "vm") == [8] and ts.pinned_to(extra, "logs", "5", "n1") == []
    assert any("stray" in w for w in extra["warnings"])
    assert "stray" not in snap["jobs"]


def test_the_plan_never_moves_a_running_task_and_validation_rejects_stale_moves():
    snap, dummy = ts.build(REGISTRY, SCANS, SGE, now=200.0)
    plan = spawn.plan_round(snap, {"min_task_size_bytes": MB})
    assert plan["moves"], plan
    assert all((m["job"], str(m["task"])) != ("logs", "1") for m in plan["moves"])
    move = plan["moves"][0]
    moved = dict(SCANS, **{move["target"]: _scan([(move["job"], move["task"], 3 * MB)], 3 * MB)})
    now, dummy = ts.build(REGISTRY, moved, SGE, now=201.0)
    accepted, rejected = spawn_exec.validate_plan({"moves": [move]}, now)
    assert not accepted and "moved" in rejected[0][1]


@pytest.mark.parametrize("name, key", [("task.logs.3", ("logs", "3")), ("task.a.b.c", ("a.b", "c")),
                                       ("task.", None), ("other", None), (None, None)])
def test_work_key(name, key):
    assert ts.work_key(name) == key


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="scans"):
        ts.build(REGISTRY, {"vm": {"copies": []}})


def test_a_replica_that_differs_from_the_live_copy_is_resynced():
    scans = {h: dict(s, copies=[dict(c, checksum="sha256:good") for c in s["copies"]]) for h, s in SCANS.items()}
    scans["n1"]["copies"][0]["checksum"] = "sha256:bad"     # rep/0 on n1
    snap, extra = ts.build(REGISTRY, scans, SGE, now=200.0)
    assert [t["complete"] for t in snap["tasks"] if t["job"] == "rep"] == [False, True]
    assert any("differs from the live copy" in w for w in extra["warnings"])
    plan = spawn.rebalance_job(snap, "rep", {"min_task_size_bytes": MB})
    assert [(r["action"], r["source"], r["target"]) for r in plan["repairs"]] == [("resync", "vm", "n1")]
