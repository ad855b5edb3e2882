# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compact forms of a large state (issue 21, "the poll at scale").

From ``COMPACT_FROM`` node records on, the records without ``launched`` are written grouped by
their clocks (``nodes_grouped``: clocks -> runs of names), and from ``COMPACT_FROM`` running tasks
on, the tasks are written as one text (``jobs.running_tasks``). A state in these forms gives the
same next poll as the same state in the one-record-per-node and one-line-per-start-time forms,
which are still read.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic, elastic_state
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy.elastic_state import (
    _name_runs, _names_of, _running_tasks, _read_running_tasks)

T0 = 1700000000.0
CONFIG = {"master": "master", "max_nodes": 60, "stabilization_time": 0}


def _snap(now, names, running, busy=()):
    hosts = {}
    for name in names:
        jobs = sum(1 for r in running if r[3] == name)
        hosts[name] = {"arch": "lx-amd64", "num_proc": 8, "load_avg": 1.0, "slots_total": 8,
                       "slots_used": jobs, "slots_reserved": 0, "states": "", "queues": ["all.q"],
                       "running_jobs": jobs + (1 if name in busy else 0)}
    run = [{"id": number, "task": task, "state": "r", "queue": "all.q", "host": host,
            "hosts": {host: 1}, "slots": 1, "start_time": start} for number, task, start, host in running]
    return {"schema": 1, "taken_at": now, "hosts": hosts, "queues": [], "pending": [], "running": run}


NAMES = ["node%03d" % i for i in range(1, 41)] + ["gpu-7.rack2", "gpu-8.rack2", "login", "odd name"]
RUNNING = [(11, None, T0 - 100.0, "node001"), (12, 3, T0 - 50.0, "node002"), (12, 4, T0 - 50.0, "node002"),
           (13, None, T0 - 12.5, "node003"), (900, None, T0 - 7200.0, "node004"), ("x7", None, T0 - 5, "node005"),
           (901, "07", T0 - 5, "node006"), (1000, 2, T0, "node007"), (1000, 10, T0 - 1, "node007")]


@pytest.fixture
def compact(monkeypatch):
    monkeypatch.setattr(elastic_state, "COMPACT_FROM", 0)


def test_name_runs_round_trip():
    names = ["node%03d" % i for i in (1, 2, 3, 5, 9, 10, 11)] + ["n9", "n10", "n11", "login", "a1b2", "a1b3"]
    text = _name_runs(names)
    assert text == "a1b[2-3] login n9 n[10-11] node005 node[001-003] node[009-011]"
    assert sorted(_names_of(text)) == sorted(names)


@pytest.mark.parametrize("token", ["n[3-1]", "n[01-9]", "n[0-2000000]", "n[1-2", "n[a-b]"])
def test_a_damaged_run_is_an_error(token):
    with pytest.raises(ValueError):
        list(_names_of(token))


def test_running_tasks_round_trip():
    running = {"11": T0 - 100.0, "12.3": T0 - 50.0, "12.4": T0 - 50.0, "13": T0 - 12.5, "x7": T0,
               "901.07": T0, "1000.2": T0, "1000.10": T0 - 1.0, "900": 1699992800, "-4": T0, "5.-1": T0,
               "+6": T0, " 7": T0, "8.1_0": T0, "9": float("inf"), "10": None, "14": True}
    rest, text = _running_tasks(running)
    assert rest == {"13": T0 - 12.5, "x7": T0, "901.07": T0, "-4": T0, "5.-1": T0, "+6": T0, " 7": T0, "8.1_0": T0,
                    "9": float("inf"), "10": None, "14": True}
    assert text == "1700000000 11:2s .3:1e 0.4:1e 888:5k0 100.2:0 0.10:1"
    back, warnings = {}, []
    _read_running_tasks(text, back, warnings)
    assert not warnings
    assert back == {k: v for k, v in running.items() if k not in rest}


def test_the_compact_state_is_smaller_and_gives_the_same_next_poll(compact):
    busy = {"node010", "node011"}
    first = elastic.decide(_snap(T0, NAMES, RUNNING, busy), {}, CONFIG, T0)
    state = first["state"]
    assert set(state["nodes"]) == {"odd name"}
    # (the number of a run is the last one in the name: rack2 for gpu-7.rack2)
    assert state["nodes_grouped"] == {"1700000000 - 1700000000": "node[001-007] node[010-011]",
                                      "1700000000 - -": "gpu-7.rack2 gpu-8.rack2 login master node[008-009] "
                                                        "node[012-040]"}
    assert state["jobs"]["running_tasks"] == "1700000000 11:2s .3:1e 0.4:1e 888:5k0 100.2:0 0.10:1"
    assert state["jobs"]["running_since"] == {"1699999987.5": "13", "1699999995": "901.07 x7"}

    # the same state in the forms written before
    old = json.loads(json.dumps(state))
    del old["nodes_grouped"], old["jobs"]["running_tasks"]
    old["nodes"] = {name: {"first_seen": T0, "joined": None,
                           "last_busy": T0 if name in busy or name in {"node%03d" % i for i in range(1, 8)} else None}
                    for name in NAMES + ["master"]}
    old["jobs"]["running_since"] = {"1699999900": "11", "1699999950": "12.3 12.4", "1699999987.5": "13",
                                    "1699992800": "900", "1699999995": "901.07 x7", "1700000000": "1000.2",
                                    "1699999999": "1000.10"}
    assert elastic_state._read_state(json.loads(json.dumps(state)), []) == elastic_state._read_state(old, [])

    later = _snap(T0 + 60, NAMES[:-5] + NAMES[-4:], RUNNING[1:3] + RUNNING[5:], {"node012"})
    plans = [elastic.decide(later, json.loads(json.dumps(s)), CONFIG, T0 + 60) for s in (state, old)]
    for key in ("add", "remove", "items", "stats", "warnings", "summary"):
        assert plans[0][key] == plans[1][key]
    assert sorted(plans[0]["state"]["jobs"]["finished"]) == sorted(
        [["11", T0 + 30, 130.0], ["13", T0 + 30, 42.5], ["900", T0 + 30, 7230.0]])
    for plan in plans:  # (the rows of tasks that ended in one interval come in the order the state lists them)
        plan["state"]["jobs"]["finished"].sort()
    assert plans[0]["state"] == plans[1]["state"]


def test_small_states_keep_the_readable_forms():
    plan = elastic.decide(_snap(T0, NAMES, RUNNING), {}, CONFIG, T0)
    assert "nodes_grouped" not in plan["state"] and "running_tasks" not in plan["state"]["jobs"]
    assert len(plan["state"]["nodes"]) == len(NAMES) + 1


def test_launched_nodes_stay_records(compact):
    state = elastic.decide(_snap(T0, NAMES[:3], []), {}, dict(CONFIG, min_nodes=6), T0)["state"]
    assert len(state["booting"]) == 2
    state = elastic.decide(_snap(T0 + 60, NAMES[:5], []), state, dict(CONFIG, min_nodes=6), T0 + 60)["state"]
    assert state["nodes"] == {"node004": {"first_seen": T0 + 60, "joined": T0, "last_busy": None, "launched": True},
                              "node005": {"first_seen": T0 + 60, "joined": T0, "last_busy": None, "launched": True}}
    assert "node[001-003]" in " ".join(state["nodes_grouped"].values())


@pytest.mark.parametrize("grouped, text, warned", [
    ({"soon - -": "node001"}, "1700000000 11:5", "nodes_grouped entry 'soon - -'"),
    ({"1700000000 - -": "node[2-1]"}, "1700000000 11:5", "unreadable run of names"),
    ({"1700000000 - -": ["node001"]}, "1700000000 11:5", "nodes_grouped entry"),
    ({}, "11:5", "jobs.running_tasks has no base time"),
    ({}, "1700000000 11:5 x 1:3", "token 2 ('x') cannot be read; it and the 1 after it"),
    ({}, "1700000000 11:5 1:A", "token 2 ('1:A') cannot be read; it and the 0 after it"),
    ({}, 17, "no base time"),
])
def test_damaged_compact_forms_warn_and_the_poll_goes_on(grouped, text, warned):
    state = {"schema": 1, "nodes": {}, "nodes_grouped": grouped, "jobs": {"running_tasks": text}}
    plan = elastic.decide(_snap(T0, NAMES[:3], []), state, CONFIG, T0)
    assert any(warned in w for w in plan["warnings"]), plan["warnings"]
    assert plan["add"] == 0
