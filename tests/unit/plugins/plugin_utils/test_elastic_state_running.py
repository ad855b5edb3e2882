# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The running tasks' start times in the state: one line per start time (issue 21, "the poll at scale").

``jobs.running_since`` maps a start time to the keys of the tasks that started then; states
written before it (``jobs.running``: one record per task) still load, and give the same history.
"""

from __future__ import annotations

import json

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

T0 = 1700000000.0
CONFIG = {"master": "master", "max_nodes": 5, "stabilization_time": 0}


def _snap(now, running):
    hosts = {"node001": {"arch": "lx-amd64", "num_proc": 8, "load_avg": 1.0, "slots_total": 8,
                         "slots_used": len(running), "slots_reserved": 0, "states": "", "queues": ["all.q"],
                         "running_jobs": len(running)}}
    run = [{"id": number, "task": task, "state": "r", "queue": "all.q", "host": "node001",
            "hosts": {"node001": 1}, "slots": 1, "start_time": start} for number, task, start in running]
    return {"schema": 1, "taken_at": now, "hosts": hosts, "queues": [], "pending": [], "running": run}


RUNNING = [(11, None, T0 - 100.0), (12, 3, T0 - 50.0), (12, 4, T0 - 50.0), (13, None, T0 - 12.5)]


def test_tasks_started_together_share_one_line():
    plan = elastic.decide(_snap(T0, RUNNING), {}, CONFIG, T0)
    jobs = plan["state"]["jobs"]
    assert "running" not in jobs
    assert jobs["running_since"] == {"1699999900": "11", "1699999950": "12.3 12.4", "1699999987.5": "13"}


def test_the_old_and_the_new_form_give_the_same_next_poll():
    """A task that ended is a finished row with its duration, read from either form."""
    first = elastic.decide(_snap(T0, RUNNING), {}, CONFIG, T0)
    new_state = json.loads(json.dumps(first["state"]))
    old_state = json.loads(json.dumps(first["state"]))
    del old_state["jobs"]["running_since"]
    old_state["jobs"]["running"] = {"11": T0 - 100.0, "12.3": T0 - 50.0, "12.4": T0 - 50.0, "13": T0 - 12.5}
    later = _snap(T0 + 60, RUNNING[1:3])   # 11 and 13 ended between the polls
    plans = [elastic.decide(later, state, CONFIG, T0 + 60) for state in (new_state, old_state)]
    assert plans[0]["state"] == plans[1]["state"]
    assert plans[0]["stats"] == plans[1]["stats"]
    assert plans[0]["warnings"] == plans[1]["warnings"]
    assert sorted(plans[0]["state"]["jobs"]["finished"]) == [["11", T0 + 30, 130.0], ["13", T0 + 30, 42.5]]
    assert plans[0]["state"]["jobs"]["running_since"] == {"1699999950": "12.3 12.4"}


def test_unreadable_entries_are_read_as_before():
    """A start time that is no time reads as an unknown start (as a bad value of ``jobs.running``
    did); an entry whose keys are not text is ignored; the poll goes on."""
    state = json.loads(json.dumps(elastic.decide(_snap(T0, RUNNING), {}, CONFIG, T0)["state"]))
    state["jobs"]["running_since"] = {"soon": "11", "1699999950": ["12.3"], "nan": "13", "1699999900": "12.4"}
    plan = elastic.decide(_snap(T0 + 60, RUNNING[1:3]), state, CONFIG, T0 + 60)
    finished = plan["state"]["jobs"]["finished"]
    # 11 and 13 had no readable start: no duration; 12.3 was never recorded: it counts as running now
    assert finished == []
    assert plan["state"]["jobs"]["running_since"] == {"1699999950": "12.3 12.4"}
    state["jobs"]["running_since"] = "not a mapping"
    assert elastic.decide(_snap(T0 + 60, RUNNING[1:3]), state, CONFIG, T0 + 60)["add"] == 0
