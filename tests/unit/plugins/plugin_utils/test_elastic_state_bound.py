# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The elastic state keeps at most PENDING_RECORDS_LIMIT per-job records (issue 20, finding 7).

Before, the state kept one record per pending job: 17.1 MB at 200,000 pending jobs, rewritten
every poll (benchmarks/state_size.py). Now it keeps the records of jobs without a submit time
first, then the oldest by first_seen, up to the limit (2000; lowered here to keep the tests
small). These tests check what the bound keeps, that a kept job's record and everything decided
from it are the same as without the bound, and how a job left out is treated.
"""

from __future__ import annotations

import json
import sys

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic, elastic_state

T0 = 1700000000.0
# add_nodes_per_iter 1 (StarCluster's, set explicitly: the default profile has no per-poll limit): the
# last poll still has room to grow
CONFIG = {"master": "master", "max_nodes": 5, "stabilization_time": 0, "job_wait_time": 300, "add_nodes_per_iter": 1}


def _host():
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": 1.0, "mem_total": 2 << 30, "mem_used": 0,
            "slots_total": 2, "slots_used": 2, "slots_reserved": 0, "states": "", "queues": ["all.q"],
            "running_jobs": 1}


def _job(number, submit=None, state="qw"):
    return {"id": number, "state": state, "submit_time": submit, "task_count": 1, "slots": 1, "hard_requests": {},
            "hard_queues": [], "held": state.startswith("h"), "error": False}


def _snap(now, pending, running=()):
    hosts = {name: _host() for name in ("master", "node001")}
    run = [{"id": number, "task": None, "state": "r", "queue": "all.q", "host": "node001", "hosts": {"node001": 1},
            "slots": 1, "start_time": now - 30} for number in running]
    return {"schema": 1, "taken_at": now, "hosts": hosts, "queues": [], "pending": list(pending), "running": run}


def _polls(snaps, limit, monkeypatch):
    """The plans of consecutive polls (each on the state of the one before) with the bound ``limit``."""
    # the bound lives with the job history (elastic_state.py); elastic re-exports its default
    monkeypatch.setattr(elastic_state, "PENDING_RECORDS_LIMIT", limit)
    state, plans = {}, []
    for now, snap in snaps:
        plan = elastic.decide(snap, state, CONFIG, now)
        # through JSON, as the state file is written and read
        state = json.loads(json.dumps(plan["state"]))
        plans.append(plan)
    return plans


def _growth(plan):
    return [item["reason"] for item in plan["items"] if item["action"] in ("add", "none", "hold")]


def test_the_state_keeps_the_oldest_records_up_to_the_limit(monkeypatch):
    first = [_job(n, T0 - 1000 + n) for n in range(1, 11)]          # seen at T0
    later = [_job(n, T0 - 5000 + n) for n in range(11, 21)]          # seen at T0 + 60, submitted earlier
    plans = _polls([(T0, _snap(T0, first)), (T0 + 60, _snap(T0 + 60, first + later))], 5, monkeypatch)
    kept = plans[-1]["state"]["jobs"]["pending"]
    # by first_seen (not by submit time), ties by submit time: jobs 1..5 seen at T0
    assert sorted(kept, key=int) == ["1", "2", "3", "4", "5"]
    assert all(rec["first_seen"] == T0 for rec in kept.values())
    assert kept["3"] == {"submit_time": T0 - 997, "first_seen": T0}


def test_jobs_without_a_submit_time_are_kept_first(monkeypatch):
    """Their wait is known only from their record; the records of jobs with one only feed the stats."""
    timed = [_job(n, T0 - 1000 + n) for n in range(1, 11)]
    untimed = [_job(n) for n in (31, 32, 33)]
    plans = _polls([(T0, _snap(T0, timed)), (T0 + 60, _snap(T0 + 60, timed + untimed))], 5, monkeypatch)
    kept = plans[-1]["state"]["jobs"]["pending"]
    assert sorted(kept, key=int) == ["1", "2", "31", "32", "33"]
    assert kept["31"] == {"submit_time": None, "first_seen": T0 + 60}


def test_decisions_are_the_same_as_without_the_bound_for_the_jobs_kept(monkeypatch):
    """Growth from jobs without a submit time, over four polls, with the bound and without."""
    old = [_job(n) for n in range(1, 9)]
    new = [_job(n) for n in range(20, 40)]
    snaps = [(T0, _snap(T0, old)), (T0 + 200, _snap(T0 + 200, old + new)),
             (T0 + 400, _snap(T0 + 400, old[3:] + new)),                       # jobs 1-3 started
             (T0 + 700, _snap(T0 + 700, old[5:] + new, running=[1, 2, 3]))]
    bounded = _polls(snaps, 8, monkeypatch)
    unbounded = _polls(snaps, sys.maxsize, monkeypatch)
    left_out = set()
    for (dummy, snap), got, want in zip(snaps, bounded, unbounded):
        assert got["add"] == want["add"] and got["remove"] == want["remove"]
        assert _growth(got) == _growth(want)
        assert [i["reason"] for i in got["items"]] == [i["reason"] for i in want["items"]]
        kept = got["state"]["jobs"]["pending"]
        left_out |= set(str(job["id"]) for job in snap["pending"]) - set(kept)
        # the record of a job kept since it was first seen is the unbounded one (a job left out
        # once has its clock start again when it comes in)
        for key in set(kept) - left_out:
            assert want["state"]["jobs"]["pending"][key] == kept[key]
        assert got["state"]["jobs"]["started"] == want["state"]["jobs"]["started"]
    # what came in at poll 3 (jobs 20-22, left out at poll 2) starts its clock there
    assert bounded[2]["state"]["jobs"]["pending"]["20"]["first_seen"] == T0 + 400
    assert unbounded[2]["state"]["jobs"]["pending"]["20"]["first_seen"] == T0 + 200
    assert bounded[-1]["add"] > 0 and "oldest job 6 waited 11m40s" in _growth(bounded[-1])[0]
    assert len(bounded[1]["state"]["jobs"]["pending"]) == 8 < len(unbounded[1]["state"]["jobs"]["pending"])


def test_a_job_left_out_without_a_submit_time_waits_from_when_it_is_kept(monkeypatch):
    """Jobs 1 and 2 fill the bound; job 3 has no record. While they wait, it counts 0 s (it is
    younger than both); once they started, the next poll keeps it and its wait counts from there."""
    jobs = [_job(n) for n in (1, 2, 3)]
    snaps = [(T0, _snap(T0, jobs)), (T0 + 600, _snap(T0 + 600, jobs)),
             (T0 + 1200, _snap(T0 + 1200, jobs[2:], running=[1, 2])), (T0 + 1800, _snap(T0 + 1800, jobs[2:], running=[1, 2]))]
    plans = _polls(snaps, 2, monkeypatch)
    assert sorted(plans[0]["state"]["jobs"]["pending"]) == ["1", "2"]     # ties: the lowest job numbers
    assert "oldest job 1 waited 10m" in _growth(plans[1])[0] and plans[1]["add"] > 0
    assert "oldest job 3 waited 0s" in _growth(plans[2])[0] and plans[2]["add"] == 0
    assert plans[2]["state"]["jobs"]["pending"] == {"3": {"submit_time": None, "first_seen": T0 + 1200}}
    assert "oldest job 3 waited 10m" in _growth(plans[3])[0]
    # without the bound it would have counted from the first poll
    unbounded = _polls(snaps, sys.maxsize, monkeypatch)
    assert "oldest job 3 waited 20m" in _growth(unbounded[2])[0]


def test_a_job_with_a_submit_time_left_out_keeps_its_exact_wait(monkeypatch):
    jobs = [_job(1), _job(2), _job(3, T0 - 3600)]
    plans = _polls([(T0, _snap(T0, jobs)), (T0 + 60, _snap(T0 + 60, jobs))], 2, monkeypatch)
    assert "3" not in plans[-1]["state"]["jobs"]["pending"]
    assert "oldest job 3 waited 1h01m" in _growth(plans[-1])[0]


def test_a_state_from_before_the_bound_loads_and_is_bounded_at_the_next_poll(monkeypatch):
    monkeypatch.setattr(elastic_state, "PENDING_RECORDS_LIMIT", 3)
    jobs = [_job(n, T0 - 100) for n in range(1, 11)]
    old = {"schema": 1, "last_poll": T0 - 60, "nodes": {}, "jobs": {"pending": {
        str(n): {"submit_time": T0 - 100, "first_seen": T0 - 60 - n} for n in range(1, 11)}}}
    plan = elastic.decide(_snap(T0, jobs), old, CONFIG, T0)
    # the three seen first (jobs 10, 9, 8), their first_seen carried
    assert plan["state"]["jobs"]["pending"] == {str(n): {"submit_time": T0 - 100, "first_seen": T0 - 60 - n}
                                                for n in (8, 9, 10)}


def test_the_limit_is_2000():
    assert elastic.PENDING_RECORDS_LIMIT == 2000


@pytest.mark.parametrize("count", [0, 1, 2000])
def test_at_or_under_the_limit_every_job_has_its_record(count):
    jobs = [_job(n, T0 - n) for n in range(1, count + 1)]
    plan = elastic.decide(_snap(T0, jobs), {}, CONFIG, T0)
    assert len(plan["state"]["jobs"]["pending"]) == count


def test_many_pending_jobs_keep_the_state_small():
    """10,000 pending jobs: 2000 records, about 170 kB less than before (which kept 10,000)."""
    from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import dumps  # pylint: disable=import-outside-toplevel

    jobs = [_job(n, T0 - 20000 + n) for n in range(1, 10001)]
    state = elastic.decide(_snap(T0, jobs), {}, CONFIG, T0)["state"]
    state = elastic.decide(_snap(T0 + 60, jobs), state, CONFIG, T0 + 60)["state"]
    pending = state["jobs"]["pending"]
    assert len(pending) == 2000 and sorted(pending, key=int)[-1] == "2000"
    assert len(dumps(state)) < 200000
