# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""policy.burst: cost-aware routing of waiting home jobs to an elastic partner (issue 26)."""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import burst

NOW = 1700000000.0


def _snap(slots_total=4, slots_used=4, running=(), pending=(), states=""):
    """Home facts: one host; running = [(slots, elapsed, h_rt)], pending = [dict overrides]."""
    return {
        "taken_at": NOW,
        "hosts": {"home01": {"slots_total": slots_total, "slots_used": slots_used, "states": states}},
        "running": [{"id": 100 + i, "slots": s, "start_time": NOW - e,
                     "hard_requests": {"h_rt": rt} if rt is not None else {}}
                    for i, (s, e, rt) in enumerate(running)],
        "pending": [dict({"id": 200 + i, "slots": 1, "task_count": 1, "submit_time": NOW - 600,
                          "hard_requests": {}, "hard_queues": [], "held": False, "error": False}, **p)
                    for i, p in enumerate(pending)],
    }


def _partner(max_nodes=4, slots_per_node=1, committed=0):
    return {"max_nodes": max_nodes, "slots_per_node": slots_per_node, "committed_slots": committed}


# history: run times of finished jobs; the running job's elapsed time decides its remaining time
LONG = [3600.0] * 10          # every job runs an hour
SHORT = [100.0] * 10          # every job runs 100 s

CASES = [
    # (name, snapshot, history, partner, config, expected [(to, reason fragment)])
    ("free slot at home: starts there", _snap(slots_used=3, running=[(3, 60, None)], pending=[{}]),
     LONG, _partner(), {}, [("home", "expected home wait 0 s <= boot delay 120 s + margin 120 s")]),
    ("home full for an hour: leaves", _snap(running=[(4, 60, None)], pending=[{}]),
     LONG, _partner(), {}, [("partner", "expected home wait 3540 s > boot delay 120 s + margin 120 s")]),
    ("home frees a slot in 40 s: stays", _snap(running=[(4, 60, None)], pending=[{}]),
     SHORT, _partner(), {}, [("home", "expected home wait 40 s <=")]),
    ("margin counts: 230 s wait < 120 + 120", _snap(running=[(4, 3370, None)], pending=[{}]),
     LONG, _partner(), {}, [("home", "expected home wait 230 s <=")]),
    ("margin counts: 250 s wait > 120 + 120", _snap(running=[(4, 3350, None)], pending=[{}]),
     LONG, _partner(), {}, [("partner", "expected home wait 250 s >")]),
    ("h_rt of the running job caps its remaining time",
     _snap(running=[(4, 60, "160")], pending=[{}]), LONG, _partner(), {}, [("home", "expected home wait 100 s")]),
    ("h_rt as h:m:s", _snap(running=[(4, 60, "0:02:40")], pending=[{}]), LONG, _partner(), {},
     [("home", "expected home wait 100 s")]),
    ("a job running longer than any in history runs as long again",
     _snap(running=[(4, 5000, None)], pending=[{}]), LONG, _partner(), {}, [("partner", "expected home wait 5000 s")]),
    ("waited less than the user's wait", _snap(running=[(4, 60, None)], pending=[{"submit_time": NOW - 100}]),
     LONG, _partner(), {}, [("home", "waited 100 s < wait 300 s")]),
    ("wait 0: a fresh job may leave", _snap(running=[(4, 60, None)], pending=[{"submit_time": NOW}]),
     LONG, _partner(), {"wait": 0}, [("partner", "expected home wait 3540 s")]),
    ("pinned: hard queue", _snap(running=[(4, 60, None)], pending=[{"hard_queues": ["all.q"]}]),
     LONG, _partner(), {}, [("home", "pinned: hard queue request -q all.q")]),
    ("a hard request for the transfer queue may leave",
     _snap(running=[(4, 60, None)], pending=[{"hard_queues": ["transfer.q@master"]}]),
     LONG, _partner(), {}, [("partner", "expected home wait")]),
    ("pinned: hard host", _snap(running=[(4, 60, None)], pending=[{"hard_requests": {"hostname": "home01"}}]),
     LONG, _partner(), {}, [("home", "pinned: hard host request -l hostname=home01")]),
    ("pinned: complex only home has",
     _snap(running=[(4, 60, None)], pending=[{"hard_requests": {"licence": "1"}}]),
     LONG, _partner(), {"home_only_complexes": ["licence"]},
     [("home", "pinned: hard request -l licence=1 of a complex only home has")]),
    ("another complex does not pin", _snap(running=[(4, 60, None)], pending=[{"hard_requests": {"licence": "1"}}]),
     LONG, _partner(), {}, [("partner", "expected home wait")]),
    ("pinned: -l remote=false", _snap(running=[(4, 60, None)], pending=[{"hard_requests": {"remote": "FALSE"}}]),
     LONG, _partner(), {}, [("home", "pinned: -l remote=FALSE")]),
    ("pinned: a parallel job when parallel_jobs is false",
     _snap(running=[(4, 60, None)], pending=[{"pe": "smp", "slots": 2}]), LONG, _partner(), {"parallel_jobs": False},
     [("home", "pinned: parallel job (-pe smp), which the transfer queue does not take")]),
    ("a parallel job may leave by default",
     _snap(running=[(4, 60, None)], pending=[{"pe": "smp", "slots": 2}]), LONG, _partner(), {},
     [("partner", "expected home wait")]),
    ("partner at its node cap", _snap(running=[(4, 60, None)], pending=[{}]),
     LONG, _partner(max_nodes=2, committed=2), {}, [("home", "partner at its node cap: 2 of 2 slots committed")]),
    ("partner room for one of two", _snap(running=[(4, 60, None)], pending=[{}, {}]),
     LONG, _partner(max_nodes=2, committed=1), {},
     [("partner", "expected home wait"), ("home", "partner at its node cap: 2 of 2 slots committed")]),
    ("a job too big for the room left stays, a smaller one behind it goes",
     _snap(running=[(4, 60, None)], pending=[{"slots": 2}, {}]),
     LONG, _partner(max_nodes=2, committed=1), {},
     [("home", "partner at its node cap: 1 of 2 slots committed, the job needs 2"), ("partner", "expected")]),
    ("wider than the partner", _snap(slots_total=8, slots_used=8, running=[(8, 60, None)], pending=[{"slots": 8}]),
     LONG, _partner(max_nodes=2, slots_per_node=2), {}, [("home", "wider than the partner: 8 slots > 2 nodes x 2")]),
    ("an array job needs all its tasks' slots at the partner",
     _snap(running=[(4, 60, None)], pending=[{"task_count": 5}]),
     LONG, _partner(max_nodes=4), {}, [("home", "the job needs 5")]),
    ("wait-only routing sends a job home would start soon",
     _snap(running=[(4, 60, None)], pending=[{}]), SHORT, _partner(), {"cost_aware": False},
     [("partner", "waited 600 s >= wait 300 s")]),
    ("held and error jobs get no decision", _snap(running=[(4, 60, None)], pending=[{"held": True}, {"error": True}]),
     LONG, _partner(), {}, []),
    ("a disabled host's slots do not count", _snap(slots_used=0, states="d", pending=[{}]),
     LONG, _partner(), {}, [("partner", "expected home wait unknown (past the horizon)")]),
    ("no history: running jobs are expected to run as long again",
     _snap(running=[(4, 500, None)], pending=[{}]), [], _partner(), {}, [("partner", "expected home wait 500 s")]),
]


@pytest.mark.parametrize("name,snapshot,history,partner,config,expected", CASES, ids=[c[0] for c in CASES])
def test_route(name, snapshot, history, partner, config, expected):
    out = burst.route(snapshot, history, partner, config)
    got = [(d["to"], d["reason"]) for d in out["decisions"]]
    assert len(got) == len(expected), (name, got)
    for (to, reason), (want_to, fragment) in zip(got, expected):
        assert to == want_to, (name, got)
        assert fragment in reason, (name, got)


def test_second_job_waits_behind_the_first_in_the_shadow():
    # one slot at home, frees in 100 s (history SHORT: 100 s runs); the first job waits 100 s and
    # stays, the second starts after it (200 s) and stays too, the third (300 s) leaves
    snap = _snap(slots_total=1, slots_used=1, running=[(1, 0, None)], pending=[{}, {}, {}])
    out = burst.route(snap, SHORT, _partner(), {"margin": 100})
    assert [(d["to"], d["expected_wait"]) for d in out["decisions"]] == [
        ("home", 100.0), ("home", 200.0), ("partner", 300.0)]
    assert out["partner_room"] == 3 and out["home_free"] == 0 and out["mean_run"] == 100.0
    assert out["reason"] == "1 of 3 waiting job(s) to the partner; 3 partner slot(s) left"


def test_a_job_sent_away_takes_no_home_slot():
    snap = _snap(running=[(4, 60, None)], pending=[{"slots": 4}, {"hard_queues": ["all.q"]}])
    out = burst.route(snap, LONG, _partner(), {})
    assert [(d["to"], d["expected_wait"]) for d in out["decisions"]] == [("partner", 3540.0), ("home", 3540.0)]
    # without room at the partner, the pinned job waits behind the first one's hour as well
    out = burst.route(snap, LONG, _partner(committed=4), {})
    assert [d["to"] for d in out["decisions"]] == ["home", "home"]
    snap["pending"][0]["hard_queues"] = ["all.q"]
    out = burst.route(snap, LONG, _partner(), {})
    assert [(d["to"], d["expected_wait"]) for d in out["decisions"]] == [("home", 3540.0), ("home", 7140.0)]


def test_jobs_behind_the_last_candidate_change_no_decision():
    """The simulator passes only the jobs that waited ``wait``: the jobs behind cannot matter."""
    pending = [{"submit_time": NOW - 900 + 10 * i, "slots": 1 + i % 3} for i in range(12)]
    young = [{"submit_time": NOW - 10, "slots": 2} for _i in range(5)]
    snap = _snap(slots_total=6, slots_used=6, running=[(3, 1000, None), (3, 50, None)], pending=pending)
    full = _snap(slots_total=6, slots_used=6, running=[(3, 1000, None), (3, 50, None)], pending=pending + young)
    hist = [60.0, 600.0, 1200.0, 4000.0]
    a = burst.route(snap, hist, _partner(max_nodes=3), {})["decisions"]
    b = burst.route(full, hist, _partner(max_nodes=3), {})["decisions"][:len(a)]
    assert a == b
    assert {d["to"] for d in a} == {"home", "partner"}


@pytest.mark.parametrize("history,elapsed,remaining", [
    ([100, 200, 300], 150, 100.0),      # mean of 200 and 300, less 150
    ([100, 200, 300], 0, 200.0),
    ([100, 200, 300], 300, 300.0),      # none longer: as long again
    ([], 40, 40.0),
])
def test_expected_remaining_time(history, elapsed, remaining):
    assert burst.RunTimes(history).remaining(elapsed) == remaining


@pytest.mark.parametrize("text,seconds", [
    ("3600", 3600.0), ("1:00:00", 3600.0), ("0:30", 30.0), (90, 90.0), ("", None), ("x", None),
    ("1:2:3:4", None), ("-5", None), (None, None),
])
def test_parse_seconds(text, seconds):
    assert burst.parse_seconds(text) == seconds


def test_partner_demand_counts_running_and_waiting_slots():
    facts = {"running": [{"slots": 4}, {"slots": 1}],
             "pending": [{"slots": 2, "task_count": 3}, {"slots": 8, "held": True}, {"slots": 8, "error": True}]}
    assert burst.partner_demand(facts) == 11


@pytest.mark.parametrize("config,message", [
    ({"wiat": 1}, "unknown option 'wiat'"),
    ({"wait": -1}, "wait: must be a number of seconds >= 0"),
    ({"margin": "x"}, "margin: must be a number"),
    ({"cost_aware": "yes"}, "cost_aware: must be true or false"),
    ({"parallel_jobs": 1}, "parallel_jobs: must be true or false"),
    ({"home_only_complexes": "licence"}, "home_only_complexes: must be a list of names"),
    ({"horizon_tasks": 0}, "horizon_tasks: must be an integer >= 1"),
])
def test_bad_config_is_named(config, message):
    with pytest.raises(burst.BurstError, match=message):
        burst.route(_snap(pending=[{}]), LONG, _partner(), config)


@pytest.mark.parametrize("snapshot,history,partner,message", [
    ({"hosts": {}}, [], _partner(), "taken_at is required"),
    (_snap(), [-1], _partner(), "history: run times must be numbers"),
    (_snap(), [float("nan")], _partner(), "history: run times must be numbers"),
    (_snap(), [True], _partner(), "history: run times must be numbers"),
    (_snap(), ["60"], _partner(), "history: run times must be numbers"),
    (_snap(), [], {"max_nodes": 2, "slots_per_node": 1}, "partner.committed_slots: must be an integer"),
    (_snap(), [], None, "partner: a mapping"),
])
def test_bad_input_is_named(snapshot, history, partner, message):
    with pytest.raises(burst.BurstError, match=message):
        burst.route(snapshot, history, partner)


def test_array_tasks_past_the_horizon_have_no_estimate():
    snap = _snap(running=[(4, 60, None)], pending=[{"task_count": 10, "submit_time": NOW - 900}, {}])
    out = burst.route(snap, LONG, _partner(max_nodes=1), {"horizon_tasks": 5})
    first, second = out["decisions"]
    assert first["to"] == "home" and "the job needs 10" in first["reason"]
    assert second["to"] == "partner" and second["expected_wait"] is None
    assert "unknown (past the horizon)" in second["reason"]
