# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Snapshot, then validate (plugins/plugin_utils/policy/spawn_exec.py): every rejection of
validate_move, and the move state machine crashed at every step, then resumed."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import spawn_exec as ex

T0 = 1700000000.0
GB = 1000 ** 3


def state():
    return {
        "jobs": {"j": {"replicas": 1, "max_per_host": None, "no_autobalance": False}},
        "hosts": {"a": {"disk_used": 500 * GB, "disk_free": 500 * GB, "up": True, "readonly": False},
                  "b": {"disk_used": 100 * GB, "disk_free": 900 * GB, "up": True, "readonly": False},
                  "c": {"disk_used": 100 * GB, "disk_free": 900 * GB, "up": True, "readonly": False}},
        "tasks": [{"job": "j", "task": 1, "host": "a", "bytes": 50 * GB, "role": "live",
                   "last_active": T0 - 7200, "complete": True, "running": False},
                  {"job": "j", "task": 1, "host": "c", "bytes": 50 * GB, "role": "replica",
                   "last_active": T0 - 7200, "complete": True, "running": False}],
    }


MOVE = {"job": "j", "task": 1, "source": "a", "target": "b", "bytes": 50 * GB, "role": "live",
        "last_active": T0 - 7200}


def test_valid_move_is_accepted():
    assert ex.validate_move(MOVE, state()) is None


def _deleted(s):
    s["tasks"] = []


def _moved(s):
    s["tasks"][0]["host"] = "b"


def _started(s):
    s["tasks"][0]["running"] = True


def _ran(s):
    s["tasks"][0]["last_active"] = T0


def _gone(s):
    del s["hosts"]["b"]


def _down(s):
    s["hosts"]["b"]["up"] = False


def _readonly(s):
    s["hosts"]["b"]["readonly"] = True


def _full(s):
    s["hosts"]["b"]["disk_free"] = 10 * GB


def _job_deleted(s):
    s["jobs"] = {}


def _max(s):
    s["jobs"]["j"]["max_per_host"] = 1
    s["tasks"].append(dict(s["tasks"][0], task=2, host="b"))


def _moved_elsewhere(s):
    s["tasks"][0]["host"] = "d"


@pytest.mark.parametrize("change, reason", [
    (_deleted, "the task was deleted"),
    (_job_deleted, "job j was deleted"),
    (_moved_elsewhere, "the task moved (no copy on a"),
    (_moved, "the task moved"),
    (_started, "the task started (running on a)"),
    (_ran, "the task started since the snapshot"),
    (_gone, "target b is gone"),
    (_down, "target b is down"),
    (_readonly, "target b is read-only"),
    (_full, "target b is full"),
    (_max, "maximum 1"),
])
def test_move_is_rejected_when_state_changed(change, reason):
    s = state()
    change(s)
    why = ex.validate_move(MOVE, s)
    assert why is not None and reason in why and why.startswith("rejected j/1")


def test_validate_plan_does_not_overfill_a_target():
    s = state()
    s["hosts"]["b"]["disk_free"] = 60 * GB
    s["tasks"].append(dict(s["tasks"][0], task=2))
    second = dict(MOVE, task=2)
    accepted, rejected = ex.validate_plan({"moves": [MOVE, second]}, s)
    assert accepted == [MOVE]
    assert rejected[0][0] == second and "full" in rejected[0][1]


# ------------------------------------------------------------------------------------------
# move state machine
# ------------------------------------------------------------------------------------------

def full_run(model, move):
    """The steps of an uninterrupted move and the model before each (and after the last)."""
    seen = [model]
    steps = []
    while True:
        step = ex.next_step(model, move)
        if step is None:
            return steps, seen
        model = ex.apply_step(model, move, step)
        steps.append(step)
        seen.append(model)


LIVE = {"source": "a", "target": "b", "role": "live"}
REPLICA = {"source": "a", "target": "b", "role": "replica"}


def start(move):
    model = ex.task_model("a", live=move["role"] == "live")
    if move["role"] == "replica":
        model["copies"]["c"] = {"state": "complete", "checksum": model["checksum"]}
        model["live"] = "c"
    return model


def test_uninterrupted_moves():
    steps, seen = full_run(start(LIVE), LIVE)
    assert steps == ["copy", "verify", "switch", "remove"]
    assert seen[-1]["live"] == "b" and ex.complete_copies(seen[-1]) == ["b"]
    steps, seen = full_run(start(REPLICA), REPLICA)
    assert steps == ["copy", "verify", "remove"]
    assert seen[-1]["live"] == "c" and ex.complete_copies(seen[-1]) == ["b", "c"]


@pytest.mark.parametrize("move", [LIVE, REPLICA], ids=["live", "replica"])
def test_crash_at_every_step_keeps_a_complete_copy_and_resumes(move):
    steps, seen = full_run(start(move), move)
    final = seen[-1]
    checked = 0
    for index, step in enumerate(steps):
        # crash in the middle of the step, and crash right after it
        for crashed in (ex.crash_during(seen[index], move, step), seen[index + 1]):
            assert ex.invariant(crashed) is None, (step, crashed)
            resumed, ran = ex.run_move(copy.deepcopy(crashed), move)
            assert resumed["live"] == final["live"]
            assert ex.complete_copies(resumed) == ex.complete_copies(final)
            assert set(resumed["copies"]) == set(final["copies"])
            assert len(ran) <= len(steps)
            checked += 1
    assert checked == 2 * len(steps)


def test_damaged_copy_is_discarded_by_verify_and_copied_again():
    model = ex.apply_step(start(LIVE), LIVE, "copy", checksum_ok=False)
    model = ex.apply_step(model, LIVE, "verify")
    assert "b" not in model["copies"] and ex.invariant(model) is None
    assert ex.next_step(model, LIVE) == "copy"
    done, _ran = ex.run_move(model, LIVE)
    assert done["live"] == "b"


@pytest.mark.parametrize("steps, message", [
    (["switch"], "not verified complete"),
    (["copy", "switch"], "not verified complete"),
    (["copy", "verify", "remove"], "still holds the live copy"),
    (["verify"], "no unverified copy"),
    (["teleport"], "must be one of"),
])
def test_unsafe_step_orders_are_refused(steps, message):
    model = start(LIVE)
    with pytest.raises(ValueError, match=message):
        for step in steps:
            model = ex.apply_step(model, LIVE, step)
