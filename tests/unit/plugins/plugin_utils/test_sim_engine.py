# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trace simulator's engine (plugins/plugin_utils/sim/engine.py): small hand-checked traces."""

from __future__ import annotations

import random

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic
from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine, swf

E = engine.EPOCH


def jobs(*rows):
    """(submit, run, procs) rows -> swf.Job list in submit order."""
    out = [swf.Job(i + 1, float(s), float(r), p, i + 1, 1) for i, (s, r, p) in enumerate(rows)]
    return sorted(out, key=lambda j: (j.submit, j.line))


# ---- billing arithmetic -------------------------------------------------------------------

def test_billing_per_second_with_minimum_and_per_started_hour():
    res = engine.Result("x", "per_second", 4, 1)
    res.lives = [(0.0, 30.0), (0.0, 3600.0), (100.0, 3701.0), (0.0, 7200.0)]
    res.waits = [0.0, 10.0, 20.0, 30.0, 1000.0]
    res.start, res.end = 0.0, 86400.0
    res.launches = 4
    fig = engine.summarize(res, price=2.0)
    assert fig["node_hours"] == pytest.approx((30 + 3600 + 3601 + 7200) / 3600.0)
    assert fig["cost_per_second"] == pytest.approx(2.0 * (60 + 3600 + 3601 + 7200) / 3600.0)
    assert fig["cost_hourly"] == pytest.approx(2.0 * (1 + 1 + 2 + 2))
    assert fig["wait_mean"] == pytest.approx(212.0)
    assert fig["wait_median"] == 20.0
    assert fig["wait_p95"] == pytest.approx(30 + 0.8 * 970)   # linear between the 4th and 5th
    assert fig["launches_per_day"] == pytest.approx(4.0)


def test_optimum_is_slot_seconds_over_slots_per_node():
    trace = jobs((0, 100, 4), (50, 200, 2), (60, 10, 9))
    res = engine.simulate(trace, "optimum", cap=4, slots_per_node=2)
    fig = engine.summarize(res)
    assert res.unplaceable == 1                      # 9 slots > 4 nodes x 2
    assert fig["node_hours"] == pytest.approx((400 + 400) / 2 / 3600.0)
    assert fig["wait_p95"] == 0.0 and fig["max_nodes"] == 3   # 6 slots at once


# ---- the scheduler --------------------------------------------------------------------------

def test_static_scheduler_fifo_no_reservation_all_slots_at_once():
    # 2 nodes x 2 slots.  j1 takes 3 slots; j2 (2 slots) cannot start; j3 (1 slot) overtakes it.
    trace = jobs((0, 100, 3), (1, 50, 2), (2, 10, 1), (3, 5, 4))
    res = engine.simulate(trace, "static", cap=2, slots_per_node=2)
    # j1 0; j3 0 (overtakes); j2 starts at 100 (waited 99); j4 (all 4 slots) after j2: 150 - 3
    assert sorted(res.waits) == [0.0, 0.0, 99.0, 147.0]
    assert res.lives == [(E, E + 155.0), (E, E + 155.0)]
    assert engine.summarize(res)["max_nodes"] == 2


def test_wide_job_spans_nodes_and_too_wide_is_unplaceable():
    trace = jobs((0, 10, 5), (0, 10, 7))
    res = engine.simulate(trace, "static", cap=3, slots_per_node=2)
    assert res.waits == [0.0] and res.unplaceable == 1


# ---- the policies, through decide ------------------------------------------------------------

def test_parallelcluster_grows_at_once_and_removes_after_idle_time():
    res = engine.simulate(jobs((0, 1000, 1)), "parallelcluster", cap=4, slots_per_node=1)
    # poll at 0 adds one node, it joins at 120; the job ends at 1120; last seen busy at the 1080
    # poll; idle 600 s at 1680 -> removed by that poll.
    assert res.waits == [120.0]
    assert res.lives == [(E, E + 1680.0)]
    assert res.scale_events == 2 and res.launches == 1


def test_starcluster_waits_job_wait_time_and_kills_after_45_minutes():
    res = engine.simulate(jobs((0, 1000, 1)), "starcluster", cap=4, slots_per_node=1)
    # the first poll after the job waited > 900 s is 960; it joins at 1080; idle from 2080, and
    # removed at 45 minutes past its hour (requested at 960): 960 + 2700 = 3660.
    assert res.waits == [1080.0]
    assert res.lives == [(E + 960.0, E + 3660.0)]


def test_starcluster_adds_one_node_per_stabilization_time():
    res = engine.simulate(jobs(*[(0, 4000, 1)] * 3), "starcluster", cap=4, slots_per_node=1)
    starts = sorted(a for a, b in res.lives)
    # one node at 960; it joins at 1080, the poll at 1080 sees the hosts change (the last change),
    # stabilization_time 300 s later the next one: 1380, joins 1500, next 1800.
    assert [s - E for s in starts] == [960.0, 1380.0, 1800.0]


def test_default_slot_aware_growth_counts_wide_jobs_and_stays_under_cap():
    res = engine.simulate(jobs((0, 600, 3), (0, 600, 2)), "default", cap=4, slots_per_node=1)
    # interval 30, job_wait_time 0: the poll at 30 asks for 4 nodes (5 slots, capped by 4 nodes)
    assert sorted(a - E for a, b in res.lives) == [30.0] * 4
    assert sorted(res.waits) == [150.0, 750.0]
    assert res.max_nodes == 4


def test_default_hourly_keeps_nodes_to_the_end_of_the_paid_hour():
    res = engine.simulate(jobs((0, 100, 1)), "default", cap=2, slots_per_node=1, billing="hourly")
    (start, end), = res.lives
    assert start == E + 30.0
    assert (end - start) // 60 % 60 >= 45 and end - start < 3600


def test_policy_config_validates_and_counts_the_master():
    cfg = engine.policy_config("default", cap=10, slots_per_node=4, billing="hourly")
    assert cfg["max_nodes"] == 11 and cfg["master"] == "master" and cfg["billing"] == "hourly"
    assert engine.policy_config("starcluster", 3, 1)["job_wait_time"] == 900
    # one truth: the simulated default is the shipped profile, with only the size, shape and billing set
    for billing in engine.BILLING:
        shipped = elastic.default_config("default", billing)
        shipped.update(master="master", max_nodes=11, min_nodes=1, slots_per_node=4)
        assert engine.policy_config("default", 10, 4, billing) == shipped
    assert not hasattr(engine, "DEFAULT_TUNING")
    with pytest.raises(ValueError, match="^policy:"):
        engine.policy_config("static", 3, 1)
    with pytest.raises(ValueError, match="^billing:"):
        engine.policy_config("default", 3, 1, billing="monthly")
    with pytest.raises(ValueError, match="^cap:"):
        engine.simulate(jobs((0, 1, 1)), "static", cap=0)


# ---- skipping polls changes nothing -----------------------------------------------------------

def _random_trace(seed, n=70):
    rng = random.Random(seed)
    rows, t = [], 0.0
    for _i in range(n):
        t += rng.choice([0, 0, 5, 40, 200, 700, 2500])
        rows.append((t, rng.choice([3, 30, 300, 1500, 5000]), rng.choice([1, 1, 1, 2, 3, 5, 8])))
    return jobs(*rows)


@pytest.mark.parametrize("policy, billing", [("default", "per_second"), ("default", "hourly"),
                                             ("starcluster", "hourly"), ("parallelcluster", "per_second")])
@pytest.mark.parametrize("seed", [1, 2])
def test_skipping_polls_gives_the_same_run_as_polling_every_tick(policy, billing, seed):
    trace = _random_trace(seed)
    fast = engine.simulate(trace, policy, cap=6, slots_per_node=2, billing=billing)
    slow = engine.simulate(trace, policy, cap=6, slots_per_node=2, billing=billing, skip=False, lean=False)
    assert slow.decide_calls > 2 * fast.decide_calls
    assert fast.lives == slow.lives
    assert fast.waits == slow.waits
    assert fast.scale_events == slow.scale_events
    assert fast.timeline == slow.timeline


@pytest.mark.parametrize("policy, billing", [("default", "per_second"), ("default", "hourly"),
                                             ("starcluster", "hourly"), ("parallelcluster", "per_second")])
def test_lean_decide_agrees_with_public_decide_on_every_poll(policy, billing, monkeypatch):
    """The simulator's fast entry point gives decide's add/remove and the state later polls read."""
    public = elastic.decide
    seen = []

    def both(snapshot, state, config, now):
        plan = public(snapshot, state, config, now)
        full = elastic._decide_validated(snapshot, state, elastic.validate_config(config), float(now))
        assert full == plan
        # a lean call from the lean state of the previous poll (here: the same state, trusted)
        lean = elastic._decide_validated(snapshot, state, elastic.validate_config(config), float(now), lean=True)
        for key in ("add", "remove", "kill_cluster", "summary", "nodes", "warnings"):
            assert lean[key] == plan[key], key
        assert [i for i in lean["items"] if i["action"] != "keep" and not i["reason"].startswith("ignored")] == \
            [i for i in plan["items"] if i["action"] != "keep" and not i["reason"].startswith("ignored")]
        assert lean["stats"] is None
        for key in ("nodes", "booting", "last_change", "last_poll", "cluster_size", "profile"):
            assert lean["state"][key] == plan["state"][key], key
        seen.append(plan["add"] or plan["remove"])
        return plan

    monkeypatch.setattr(elastic, "decide", both)
    for seed in (3, 4):
        engine.simulate(_random_trace(seed), policy, cap=6, slots_per_node=2, billing=billing, skip=False, lean=False)
    assert any(seen) and len(seen) > 100


@pytest.mark.parametrize("lean", [True, False])
def test_fast_paths_give_the_same_run_on_a_real_trace_prefix(lean):
    import os
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))))
    path = os.path.join(os.path.dirname(repo), "shared", "data", "traces", "KTH-SP2-1996-2.1-cln.swf")
    if not os.path.exists(path):
        pytest.skip("the KTH trace is not here")
    trace = swf.load(path).jobs[:300]
    for policy, billing in (("default", "per_second"), ("starcluster", "hourly"), ("parallelcluster", "per_second")):
        fast = engine.simulate(trace, policy, cap=20, slots_per_node=1, billing=billing, lean=lean)
        slow = engine.simulate(trace, policy, cap=20, slots_per_node=1, billing=billing, skip=False, lean=False)
        assert (fast.lives, fast.waits, fast.timeline) == (slow.lives, slow.waits, slow.timeline)


def test_shifted_copies_move_submits_by_at_most_the_spread():
    trace = jobs((0, 1, 1), (10, 1, 1), (20, 1, 1))
    copy = engine.shifted(trace, seed=3, spread=60.0)
    assert sorted(j.id for j in copy) == [1, 2, 3]
    by_id = {j.id: j.submit for j in trace}
    assert all(0.0 <= j.submit - by_id[j.id] <= 60.0 for j in copy)
    assert copy == engine.shifted(trace, seed=3, spread=60.0)


# ---- the decide rules the simulator added ---------------------------------------------------

def _pc_snapshot():
    hosts = {"node001": {"slots_total": 2, "slots_used": 2, "running_jobs": 1, "load_avg": 2.0, "states": ""},
             "node002": {"slots_total": 2, "slots_used": 0, "running_jobs": 0, "load_avg": 0.0, "states": ""}}
    pending = [{"id": 7, "state": "qw", "submit_time": 1000.0, "slots": 5, "task_count": 1, "pe": "mpi"},
               {"id": 8, "state": "qw", "submit_time": 1000.0, "slots": 1, "task_count": 1, "pe": None}]
    running = [{"id": 5, "host": "node001", "hosts": {"node001": 2}, "slots": 2, "start_time": 900.0}]
    return {"schema": 1, "taken_at": 1010.0, "hosts": hosts, "pending": pending, "running": running}


def test_parallelcluster_profile_wants_busy_plus_pending_nodes():
    cfg = {"profile": "parallelcluster", "master": "master", "max_nodes": 10}
    plan = elastic.decide(_pc_snapshot(), {}, cfg, 1010.0)
    # 6 slots waiting / 2 per node = 3 nodes, + 1 busy = 4 wanted; 2 up -> add 2
    assert plan["add"] == 2
    assert "1 busy + 3 needed = 4 wanted, 2 up + 0 booting" in plan["items"][0]["reason"]
    assert not any("stabilization_time" in w for w in plan["warnings"])


def test_default_profile_counts_parallel_jobs_across_nodes_and_idle_hosts():
    cfg = {"master": "master", "max_nodes": 10, "job_wait_time": 0, "add_nodes_per_iter": 10}
    plan = elastic.decide(_pc_snapshot(), {}, cfg, 1010.0)
    # 6 slots -> 3 nodes; the idle node002 counts for the parallel job -> add 2
    assert plan["add"] == 2 and plan["ignored_jobs"] == []
    assert ", 1 idle" in plan["items"][0]["reason"]
    snap = _pc_snapshot()
    snap["pending"][0]["slots"] = 99
    plan = elastic.decide(snap, {}, cfg, 1010.0)
    assert plan["ignored_jobs"] == [{"id": 7, "reason": "needs 99 slots > 10 nodes x 2 slots per node (max_nodes)"}]


# ---- the engine's per-host hints change nothing --------------------------------------------

@pytest.mark.parametrize("policy, billing", [("default", "per_second"), ("default", "hourly"),
                                             ("starcluster", "hourly"), ("parallelcluster", "per_second")])
@pytest.mark.parametrize("skip", [True, False])
def test_hinted_lean_decide_equals_unhinted_on_every_poll(policy, billing, skip, monkeypatch):
    """Every hinted call gives the same plan as the same call deriving the host facts itself."""
    import copy
    real = elastic._decide_validated
    calls = []

    def both(snapshot, state, cfg, now, lean=False, hints=None):
        plain = real(copy.deepcopy(snapshot), copy.deepcopy(state), cfg, now, lean=lean)
        if hints is not None:
            # the hints are exactly what decide derives from the snapshot
            check = elastic._Decision(snapshot, state, cfg, now, lean=lean)
            check._census()
            check._queues_and_template()
            assert check.status == hints["status"]
            assert hints["busy"] == {n for n, s in check.status.items() if s["busy"]}
            assert hints["unknown"] == {n for n, s in check.status.items() if s["unknown"]}
            assert hints["running"] == {n for n, s in check.status.items() if s["jobs"]}
            assert check.slots_of == hints["slots_of"]
            assert (check.known_queues, check.archs, check.node_mem) == \
                (set(hints["known_queues"]), set(hints["archs"]), hints["node_mem"])
            # the node names and their changes since the state was made, the hosts running nothing
            assert hints["names"] == check.node_names
            assert hints["idle"] == set(snapshot["hosts"]) - hints["busy"]
            if isinstance(state.get("nodes"), dict):
                assert hints["came"] == check.node_names - set(state["nodes"])
                assert hints["went"] == set(state["nodes"]) - check.node_names
        plan = real(snapshot, state, cfg, now, lean=lean, hints=hints)
        assert plan == plain
        calls.append(hints is not None)
        return plan

    monkeypatch.setattr(elastic, "_decide_validated", both)
    for seed in (5, 6):
        engine.simulate(_random_trace(seed), policy, cap=6, slots_per_node=2, billing=billing, skip=skip)
    assert calls and all(calls)


@pytest.mark.parametrize("policy, billing", [("default", "per_second"), ("default", "hourly"),
                                             ("starcluster", "hourly"), ("parallelcluster", "per_second")])
def test_hinted_run_equals_public_decide_every_tick(policy, billing):
    trace = _random_trace(7, n=90)
    fast = engine.simulate(trace, policy, cap=5, slots_per_node=3, billing=billing)
    plain = engine.simulate(trace, policy, cap=5, slots_per_node=3, billing=billing, hints=False)
    slow = engine.simulate(trace, policy, cap=5, slots_per_node=3, billing=billing, skip=False, lean=False)
    for run in (plain, slow):
        assert (fast.lives, fast.waits, fast.timeline, fast.scale_events) == \
            (run.lives, run.waits, run.timeline, run.scale_events)


@pytest.mark.parametrize("policy, billing, overrides", [
    ("default", "hourly", None), ("starcluster", "hourly", None), ("default", "per_second", None),
    ("parallelcluster", "per_second", None),
    # hourly billing without a stabilization time: the kill_after window decides alone
    ("default", "hourly", {"stabilization_time": 0}), ("starcluster", "hourly", {"stabilization_time": 0}),
    # a cool-down under per-second billing, and growth capped per poll
    ("default", "per_second", {"stabilization_time": 120, "add_nodes_per_iter": 1}),
])
@pytest.mark.parametrize("seed", [8, 9, 10])
def test_emulated_join_polls_equal_a_real_decide_call(policy, billing, overrides, seed, monkeypatch):
    """A poll the engine emulates is what decide returns: the poll after a change of hosts with
    stabilization_time > 0, a poll with nothing waiting and no idle host due for removal, and a
    poll at which jobs wait and the profile wants no node (or is on hold)."""
    import copy
    real = engine._Sim._emulate_quiet_poll
    checked = []

    def checking(sim, now):
        snapshot = copy.deepcopy(sim._snapshot(now))
        before = copy.deepcopy(sim.state)
        done = real(sim, now)
        if done:
            plan = elastic._decide_validated(snapshot, before, sim.cfg, float(now), lean=True)
            assert plan["add"] == 0 and plan["remove"] == [] and not plan["kill_cluster"]
            assert sim.state == plan["state"]
            public = elastic.decide(snapshot, copy.deepcopy(before), sim.cfg, now)
            for key in ("nodes", "booting", "last_change", "last_change_reason", "last_poll", "cluster_size"):
                assert public["state"][key] == sim.state[key], key
            checked.append(now)
        return done

    monkeypatch.setattr(engine._Sim, "_emulate_quiet_poll", checking)
    config = engine.policy_config(policy, 6, 2, billing, overrides=overrides)
    fast = engine.simulate(_random_trace(seed), policy, cap=6, slots_per_node=2, billing=billing, config=config)
    slow = engine.simulate(_random_trace(seed), policy, cap=6, slots_per_node=2, billing=billing, config=config,
                           skip=False, lean=False)
    assert checked and fast.emulated == len(checked)
    assert (fast.lives, fast.waits, fast.timeline, fast.scale_events) == \
        (slow.lives, slow.waits, slow.timeline, slow.scale_events)


@pytest.mark.parametrize("policy, billing", [("default", "per_second"), ("default", "hourly"),
                                             ("starcluster", "hourly"), ("parallelcluster", "per_second")])
def test_lean_state_read_fast_equals_the_long_way(policy, billing, monkeypatch):
    """elastic_state._read_lean_state gives what _read_state's checks give, for every state of a run."""
    from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic_state

    class Plain(dict):
        """(not a dict by type: _read_state takes the long way)"""

    real = elastic_state._read_state
    fast = []

    def both(state, warnings, trusted=False):
        out = real(state, warnings, trusted=trusted)
        if trusted and isinstance(state, dict) and state:
            long_way = real(Plain(state), [], trusted=True)
            assert out == long_way
            fast.append(elastic_state._read_lean_state(state) is not None)
        return out

    monkeypatch.setattr(elastic, "_read_state", both)
    engine.simulate(_random_trace(11), policy, cap=6, slots_per_node=2, billing=billing)
    assert fast and all(fast)
