# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin burst_plan: the jobs it sends (their qalter -l lists), the jobs it calls back,
what it remembers, the run-time history from real qacct output, and its input errors."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gridengine.balancer.plugins.action import burst_plan as action

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sge", "captured", "accounting")
NOW = 1700010000.0


def home(pending, free=0, running_since=NOW - 600):
    """Two hosts of 2 slots, ``4 - free`` of them busy with one-slot jobs started at running_since."""
    busy = 4 - free
    return {
        "taken_at": NOW,
        "hosts": {"n1": {"slots_total": 2, "slots_used": min(busy, 2), "states": ""},
                  "n2": {"slots_total": 2, "slots_used": max(busy - 2, 0), "states": ""}},
        "running": [{"id": 100 + i, "slots": 1, "start_time": running_since, "hard_requests": {}}
                    for i in range(busy)],
        "pending": pending,
    }


def job(number, waited=900, requests=None, queues=None):
    return {"id": number, "slots": 1, "task_count": 1, "submit_time": NOW - waited,
            "hard_requests": dict(requests or {}), "hard_queues": list(queues or []),
            "held": False, "error": False}


PARTNER_EMPTY = {"taken_at": NOW, "hosts": {}, "running": [], "pending": []}
LONG_RUNS = [3600.0, 7200.0, 7200.0]


def plan(home_facts, state=None, nodes=2, slots=2, history=None, config=None, partner=None):
    qacct = "".join(
        "==============================================================\n"
        "qname all.q\nhostname n1\njobnumber %d\ntaskid undefined\n"
        "start_time Tue Nov 14 00:00:00 2023\nend_time Tue Nov 14 %02d:%02d:00 2023\n"
        % (900 + i, int(run // 3600), int(run % 3600 // 60))
        for i, run in enumerate(LONG_RUNS if history is None else history))
    return action.plan({"home": home_facts, "partner": partner or PARTNER_EMPTY, "qacct": qacct,
                        "state": state or {}, "partner_nodes": nodes, "slots_per_node": slots,
                        "config": dict({"wait": 300}, **(config or {}))})


def test_a_job_that_would_wait_long_at_home_is_sent_with_its_own_requests_and_remote_true():
    out = plan(home([job(7, requests={"h_rt": "3600", "mem_free": "1G"}),
                     job(8, requests={"hostname": "n1"})]))
    assert out["send"] == [{"id": "7", "resources": "h_rt=3600,mem_free=1G,remote=true",
                            "reason": out["decisions"][0]["reason"],
                            "qalter": ["-l", "h_rt=3600,mem_free=1G,remote=true", "-ac", "tq_burst=1", "7"]}]
    assert out["decisions"][1]["to"] == "home" and "pinned" in out["decisions"][1]["reason"]
    assert out["recall"] == [] and out["history_jobs"] == 3
    assert out["state"] == {"schema": 1, "routed": {"7": "h_rt=3600,mem_free=1G"}}


def test_a_job_that_starts_soon_at_home_stays_and_one_that_waited_too_little_stays():
    out = plan(home([job(7), job(8, waited=60)], free=1))
    assert [d["to"] for d in out["decisions"]] == ["home", "home"]
    assert "expected home wait 0 s" in out["decisions"][0]["reason"]
    assert "waited 60 s < wait 300 s" in out["decisions"][1]["reason"]
    assert out["send"] == [] and out["state"]["routed"] == {}


def test_a_job_sent_before_that_waits_at_home_again_and_now_stays_is_called_back_with_its_own_list():
    state = {"schema": 1, "routed": {"7": "h_rt=3600", "8": ""}}
    out = plan(home([job(7, requests={"h_rt": "3600", "remote": "true"}),
                     job(8, requests={"remote": "TRUE"})], free=2), state=state)
    assert [r["qalter"] for r in out["recall"]] == [["-l", "h_rt=3600", "-dc", "tq_burst", "7"],
                                                    ["-l", "", "-dc", "tq_burst", "8"]]
    assert out["send"] == [] and out["state"]["routed"] == {}


def test_a_parallel_job_stays_at_home_when_parallel_jobs_is_false():
    pe_job = dict(job(7), pe="smp", slots=2)
    out = plan(home([pe_job, job(8)]), config={"parallel_jobs": False})
    assert [d["to"] for d in out["decisions"]] == ["home", "partner"]
    assert [s["id"] for s in out["send"]] == ["8"]


def test_a_users_own_remote_true_is_never_taken_away():
    out = plan(home([job(7, requests={"remote": "true"})], free=2))
    assert out["decisions"][0]["to"] == "home"
    assert out["recall"] == [] and out["send"] == []


def test_a_job_already_sent_is_not_sent_again_and_stays_remembered_while_it_runs():
    state = {"schema": 1, "routed": {"7": "", "55": "h_rt=60", "56": ""}}
    facts = home([job(7, requests={"remote": "true"})])
    facts["running"].append({"id": 55, "slots": 1, "start_time": NOW - 10, "hard_requests": {"remote": "true"}})
    out = plan(facts, state=state)
    assert out["send"] == [] and out["recall"] == []
    # 56 has left the cell (finished or deleted): forgotten
    assert out["state"]["routed"] == {"7": "", "55": "h_rt=60"}


def test_jobs_sent_but_not_yet_at_the_partner_use_up_its_room():
    state = {"schema": 1, "routed": {"7": ""}}
    out = plan(home([job(7, requests={"remote": "true"}), job(8)]), state=state, nodes=1, slots=1)
    assert out["decisions"][1]["to"] == "home" and "node cap" in out["decisions"][1]["reason"]
    assert out["send"] == []


def test_a_request_that_cannot_be_written_back_keeps_the_job_at_home_with_a_note():
    out = plan(home([job(7, requests={"h_rt": "1,2"})]))
    assert out["send"] == [] and out["state"]["routed"] == {}
    assert out["notes"] == ["job 7 stays: job request 'h_rt'='1,2' cannot be written back with qalter -l"]


def test_run_times_from_real_qacct_output_one_per_job_task():
    # captured on the local cluster (meta.json): 2275 ran 2 s, 2276 1 s, array 2277 three tasks of
    # 1 s, the PE job 2278 2 s; 2279 never started (start_time 0 in the file) and does not count
    with open(os.path.join(FIX, "qacct_j.txt")) as handle:
        text = handle.read()
    assert action.run_times(text) == [1.0, 1.0, 1.0, 1.0, 2.0, 2.0]


@pytest.mark.parametrize("args, message", [
    ({"home": None}, "home and partner must be"),
    ({"state": []}, "state must be a dict"),
    ({"state": {"routed": {"7": 1}}}, "routed maps job numbers to resource lists"),
    ({"partner_nodes": "x"}, "whole numbers"),
    ({"slots_per_node": 0}, "slots_per_node >= 1"),
    ({"remote_complex": "a,b"}, "remote_complex must be a complex name"),
    ({"config": {"wait": -1}}, "wait: must be a number of seconds >= 0"),
    ({"config": {"bogus": 1}}, "unknown option 'bogus'"),
])
def test_bad_input_fails_naming_it(args, message):
    base = {"home": home([]), "partner": PARTNER_EMPTY, "partner_nodes": 2, "slots_per_node": 2}
    base.update(args)
    with pytest.raises(AnsibleActionFail, match=message):
        action.plan(base)
