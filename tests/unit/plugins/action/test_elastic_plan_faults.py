# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Faults of the state file and of the snapshot, seen from one poll (elastic_plan).

The state is read and written by the real ``gridengine.balancer.balancer_state`` module
(its ``main()``, in this process, against files under tmp_path); only the transport to the
qmaster is left out. Faults that cannot be made for real here are injected into that module's
file calls and say so: permission denied (these tests run as root) and a full disk (no tiny
tmpfs). The second half shows with ``decide()`` what an empty state means for a decision.
docs/reliability/state-faults.md lists every case.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

from ansible.errors import AnsibleActionFail
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.action import elastic_plan as action
from ansible_collections.gridengine.balancer.plugins.modules import balancer_state as state_module
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

T0 = 1700000000.0
HOUR = 3600.0


def host(used=0, jobs=0, load=0.1):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": load, "mem_total": 2 << 30, "mem_used": 0,
            "slots_total": 2, "slots_used": used, "slots_reserved": 0, "states": "", "queues": ["all.q"],
            "running_jobs": jobs}


def snapshot(now=T0, pending=(), **extra):
    """master busy, node001 and node002 idle."""
    snap = {"schema": 1, "taken_at": now, "flavour": "SoGE 8.1", "cell": "default",
            "hosts": {"master": host(2, 1), "node001": host(), "node002": host()},
            "queues": [], "pending": list(pending),
            "running": [{"id": 1, "task": None, "host": "master", "hosts": {"master": 2}, "slots": 2,
                         "start_time": T0 - 100, "state": "r", "queue": "all.q"}]}
    snap.update(extra)
    return snap


def waiting_job(waited):
    return {"id": 42, "state": "qw", "submit_time": T0 - waited, "slots": 1, "task_count": 1,
            "hard_queues": [], "hard_requests": {}, "held": False, "error": False}


def intact_state(idle_since=T0 - 2 * HOUR, joined=None, **extra):
    """What the previous polls left: node001 and node002 idle for two hours."""
    node = {"first_seen": T0 - 3 * HOUR, "joined": joined, "last_busy": idle_since}
    state = {"schema": 1, "profile": "default", "last_poll": T0 - 60, "last_change": T0 - 3 * HOUR,
             "last_change_reason": "plan: add 2", "cluster_size": 3,
             "nodes": {"master": dict(node, last_busy=T0 - 60), "node001": dict(node, launched=True),
                       "node002": dict(node, launched=True)},
             "booting": [], "jobs": {"pending": {}, "running": {"1": T0 - 100}, "started": [], "finished": []}}
    state.update(extra)
    return state


def real_state_module(module_args, check_mode=False):
    """gridengine.balancer.balancer_state, run for real (its main()) in this process."""
    out = io.StringIO()
    args = dict(module_args, _ansible_check_mode=check_mode)
    with patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            state_module.main()
        except SystemExit:
            pass
    return json.loads(out.getvalue())


class Qmaster(object):
    def __init__(self, check_mode=False):
        self.calls = []
        self.check_mode = check_mode

    def __call__(self, module_args):
        self.calls.append(dict(module_args))
        return real_state_module(module_args, self.check_mode)


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


def state_file(tmp_path):
    path = tmp_path / "qmaster" / "state.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def listing(tmp_path):
    return sorted(os.listdir(tmp_path / "qmaster"))


# ---------------------------------------------------------------------------------------------
# the state file: each fault, what one poll does
# ---------------------------------------------------------------------------------------------

def test_intact_state_removes_the_nodes_idle_for_two_hours(tmp_path):
    """The reference: with its state the poll removes both idle nodes."""
    state_file(tmp_path).write_text(json.dumps(intact_state()))
    res = action.plan_poll(args(tmp_path), Qmaster())
    assert res["plan"]["remove"] == ["node001", "node002"]


CORRUPT = {
    "truncated": json.dumps(intact_state())[:200],
    "garbage": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "empty": "",
    "JSON of the wrong shape (a list)": json.dumps([intact_state()]),
    "JSON of the wrong shape (a string)": json.dumps("state"),
}


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_corrupt_state_is_moved_aside_and_the_poll_decides_from_an_empty_state(tmp_path, kind):
    path = state_file(tmp_path)
    raw = CORRUPT[kind] if isinstance(CORRUPT[kind], bytes) else CORRUPT[kind].encode()
    path.write_bytes(raw)
    res = action.plan_poll(args(tmp_path), Qmaster())
    moved = res["state_corrupt"]["moved_to"]
    assert open(moved, "rb").read() == raw  # kept, not deleted
    assert res["warnings"][0].startswith("state file %s " % path)
    assert "moved it aside to %s" % moved in res["warnings"][0]
    assert "none is removed before it has been seen idle for idle_time" in res["warnings"][0]
    # idle for two hours according to the lost state, but this poll cannot know it: kept
    assert res["plan"]["remove"] == []
    assert "- keep node001: idle 0s < idle_time 10m" in res["msg"]
    # the new state is written and reads back
    saved = json.loads(path.read_text())
    assert saved["nodes"]["node001"] == {"first_seen": T0, "joined": None, "last_busy": None}
    assert listing(tmp_path) == sorted(["state.json", os.path.basename(moved)])


def test_corrupt_state_in_check_mode_moves_and_writes_nothing(tmp_path):
    path = state_file(tmp_path)
    path.write_text("{truncated")
    res = action.plan_poll(args(tmp_path), Qmaster(check_mode=True), check_mode=True)
    assert res["state_corrupt"]["moved_to"] is None and "it would be moved aside" in res["warnings"][0]
    assert res["plan"]["remove"] == []
    assert path.read_text() == "{truncated" and listing(tmp_path) == ["state.json"]


def test_deleted_state_is_a_first_poll(tmp_path):
    path = state_file(tmp_path)
    path.write_text(json.dumps(intact_state()))
    path.unlink()
    res = action.plan_poll(args(tmp_path), Qmaster())
    assert "state_corrupt" not in res and res["plan"]["remove"] == []
    assert "- keep node002: idle 0s < idle_time 10m" in res["msg"]
    assert json.loads(path.read_text())["nodes"]["node002"]["first_seen"] == T0


def test_wrong_version_newer_schema_is_read_for_the_keys_it_knows_and_kept(tmp_path):
    path = state_file(tmp_path)
    newer = intact_state(schema=2, something_new={"a": 1})
    path.write_text(json.dumps(newer))
    res = action.plan_poll(args(tmp_path), Qmaster())
    assert "state: schema 2 is newer than 1; reading the keys this version knows" in res["warnings"]
    assert res["plan"]["remove"] == ["node001", "node002"]  # its idle times were read
    copies = [p for p in listing(tmp_path) if p.startswith("state.json.schema2-")]
    assert len(copies) == 1 and json.loads((tmp_path / "qmaster" / copies[0]).read_text()) == newer
    assert any("was kept as" in w for w in res["warnings"])


def test_object_with_damaged_keys_drops_those_keys_with_a_warning(tmp_path):
    """A JSON object is read key by key: a key of the wrong type is dropped, with a warning."""
    path = state_file(tmp_path)
    path.write_text(json.dumps(intact_state(nodes=["node001", "node002"], booting="two")))
    res = action.plan_poll(args(tmp_path), Qmaster())
    assert "state: 'nodes' has an unexpected type; ignored" in res["warnings"]
    assert "state: 'booting' has an unexpected type; ignored" in res["warnings"]
    assert res["plan"]["remove"] == []  # no node records: every idle clock starts now


def test_damaged_last_busy_of_one_node_does_not_make_it_idle_for_hours(tmp_path):
    path = state_file(tmp_path)
    state = intact_state(idle_since=T0 - 30)
    state["nodes"]["node001"]["last_busy"] = "garbage"
    path.write_text(json.dumps(state))
    res = action.plan_poll(args(tmp_path), Qmaster())
    assert res["plan"]["remove"] == []
    assert any("node001 has unreadable last_busy" in w for w in res["warnings"]), res["warnings"]


def _deny(monkeypatch, path):
    real_open = open

    def deny(name, *a, **kw):  # injected: these tests run as root, who reads any file
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(name, *a, **kw)

    monkeypatch.setattr(bs, "open", deny, raising=False)


def test_unreadable_state_refuses_the_poll_and_changes_nothing(tmp_path, monkeypatch):
    path = state_file(tmp_path)
    path.write_text(json.dumps(intact_state()))
    _deny(monkeypatch, path)
    qm = Qmaster()
    with pytest.raises(AnsibleActionFail) as err:
        action.plan_poll(args(tmp_path), qm)
    assert str(err.value) == ("cannot read the balancer state (%s): cannot read state file %s: Permission denied; "
                              "nothing was changed" % (path, path))
    assert [c["state"] for c in qm.calls] == ["read"]
    monkeypatch.undo()
    assert json.loads(path.read_text()) == intact_state() and listing(tmp_path) == ["state.json"]


def test_directory_in_place_of_the_state_refuses_the_poll(tmp_path):
    path = state_file(tmp_path)
    path.mkdir()
    qm = Qmaster()
    with pytest.raises(AnsibleActionFail, match="it is a directory; move it away"):
        action.plan_poll(args(tmp_path), qm)
    assert [c["state"] for c in qm.calls] == ["read"] and path.is_dir()


def test_disk_full_on_write_refuses_to_hand_out_the_plan_and_keeps_the_old_state(tmp_path, monkeypatch):
    path = state_file(tmp_path)
    path.write_text(json.dumps(intact_state()))

    def full(fd):  # injected: a full disk reports at write or at fsync
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bs.os, "fsync", full)
    with pytest.raises(AnsibleActionFail) as err:
        action.plan_poll(args(tmp_path), Qmaster())
    assert "the plan was computed but the state could not be saved" in str(err.value)
    assert "No space left on device; the file was left as it was" in str(err.value)
    assert "do not act on this plan" in str(err.value)
    monkeypatch.undo()
    assert json.loads(path.read_text()) == intact_state() and listing(tmp_path) == ["state.json"]


# ---------------------------------------------------------------------------------------------
# the snapshot: never decide from one that was not read
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("snap, words", [
    (None, "snapshot: missing or empty, no snapshot of the cluster was read"),
    ({}, "snapshot: missing or empty"),
    (dict(snapshot(), complete=False, errors=["qhost -q -xml failed (rc 1)"]),
     "snapshot: flagged incomplete (complete: False; ['qhost -q -xml failed (rc 1)'])"),
    (dict(snapshot(), complete=None), "snapshot: flagged incomplete (complete: None)"),
    (dict(snapshot(), hosts=None), "snapshot: 'hosts' must be a mapping"),
])
def test_missing_or_incomplete_snapshot_is_refused_before_the_state_is_read(tmp_path, snap, words):
    qm = Qmaster()
    with pytest.raises(AnsibleActionFail) as err:
        action.plan_poll(args(tmp_path, snapshot=snap), qm)
    assert words in str(err.value) and "no decision made, nothing written" in str(err.value)
    assert qm.calls == []


def test_complete_snapshot_is_accepted(tmp_path):
    res = action.plan_poll(args(tmp_path, snapshot=dict(snapshot(), complete=True)), Qmaster())
    assert res["plan"]["now"] == T0


def test_the_previous_polls_snapshot_is_refused(tmp_path):
    """Facts outlive a failed task: a poll whose sge_queue_facts failed (ignored) must not decide
    again from the snapshot of the poll before."""
    qm = Qmaster()
    action.plan_poll(args(tmp_path), qm)
    before = (tmp_path / "qmaster" / "state.json").read_text()
    with pytest.raises(AnsibleActionFail, match="it is the previous poll's snapshot, not a new one"):
        action.plan_poll(args(tmp_path), qm)
    assert (tmp_path / "qmaster" / "state.json").read_text() == before
    res = action.plan_poll(args(tmp_path, snapshot=snapshot(now=T0 + 60)), qm)  # a new one is fine
    assert res["plan"]["now"] == T0 + 60


# ---------------------------------------------------------------------------------------------
# what an empty state means to decide()
# ---------------------------------------------------------------------------------------------

def decide(state, now=T0, pending=(), **config):
    # the provider's list, as the playbook passes it: it outlives a lost state
    cfg = {"master": "master", "max_nodes": 5, "stabilization_time": 300, "launched_hosts": ["node001", "node002"]}
    cfg.update(config)
    return elastic.decide(snapshot(now=now, pending=pending), state, cfg, now)


@pytest.mark.parametrize("config", [
    {"profile": "default"},
    {"profile": "default", "idle_time": 60},
    {"profile": "parallelcluster"},
], ids=["default", "default-idle_time-60", "parallelcluster"])
def test_per_second_billing_no_removal_before_idle_time_after_the_loss(config):
    assert decide(intact_state(), **config)["remove"] == ["node001", "node002"]
    plan = decide({}, **config)  # the first poll after the loss
    assert plan["remove"] == []
    idle_time = plan["config"]["idle_time"]
    state = plan["state"]
    for now in (T0 + idle_time / 2, T0 + idle_time - 1):
        plan = decide(state, now=now, **config)
        assert plan["remove"] == [], now
        state = plan["state"]
    assert decide(state, now=T0 + idle_time, **config)["remove"] == ["node001", "node002"]


def test_hourly_billing_no_removal_before_kill_after_minutes_after_the_loss():
    config = {"profile": "starcluster", "kill_after": 45}
    # intact: joined 50 minutes past an hour ago -> removed now
    assert decide(intact_state(joined=T0 - 50 * 60), **config)["remove"] == ["node001", "node002"]
    plan = decide({}, **config)
    assert plan["remove"] == [] and "up 0m past the hour < kill_after 45m" in json.dumps(plan["items"])
    assert decide(plan["state"], now=T0 + 44 * 60, **config)["remove"] == []
    assert decide(plan["state"], now=T0 + 45 * 60, **config)["remove"] == ["node001", "node002"]


@pytest.mark.parametrize("config", [{"profile": "starcluster", "kill_after": 0}, {"profile": "default", "idle_time": 0}])
def test_no_clock_to_restart_with_kill_after_0_or_idle_time_0(config):
    """These settings remove any node seen idle at all: an empty state changes nothing."""
    assert decide({}, **config)["remove"] == decide(intact_state(), **config)["remove"] == ["node001", "node002"]


def test_empty_state_other_effects_on_growth():
    wait = [waiting_job(1000)]  # waited 16m40s > job_wait_time 15m
    # stabilization: the lost state knew of a change 60 s ago (hold); an empty state does not
    held = decide(intact_state(last_change=T0 - 60), pending=wait)
    assert held["add"] == 0 and "hold: cluster changed 1m ago" in held["summary"]
    assert decide({}, pending=wait)["add"] == 1
    # booting nodes are forgotten: the lost state counted 1 requested a minute ago
    booting = decide(intact_state(booting=[{"requested_at": T0 - 60}]), pending=wait)
    assert booting["add"] == 0 and booting["nodes"]["booting"] == 1
    assert decide({}, pending=wait)["nodes"]["booting"] == 0
    # max_nodes unset: the size remembered at the first poll (5) becomes today's (3)
    assert decide(intact_state(cluster_size=5), max_nodes=None)["nodes"]["max"] == 5
    plan = decide({}, max_nodes=None)
    assert plan["nodes"]["max"] == 3 and "max_nodes not set: using 3" in " ".join(plan["warnings"])
