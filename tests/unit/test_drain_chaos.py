# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain chaos model (tests/unit/drain_chaos.py): small runs, a few seconds each.

The model must find no killed or lost job for node_leave as implemented, and must find kills for
a drain without the re-check: the second half is the test that the checker can see a kill.
"""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic
from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine
from ansible_collections.gridengine.balancer.tests.unit import drain_chaos

EVENTS = 300
SLOW_SAME_RUN = {"straddle_time": (16.0, 40.0), "scenarios": {"same_run_as_disable": 1.0}}


def books_balance(fig):
    """Every job submitted has ended with its own exit status, was killed, or still waits."""
    return (fig["jobs_submitted"] == fig["jobs_finished"] + fig["jobs_killed"] + fig["pending_end"]
            and fig["exit_status_own"] == fig["jobs_finished"] and fig["jobs_lost"] == 0)


@pytest.mark.parametrize("stale_orders", drain_chaos.STALE_ORDERS)
def test_node_leave_as_implemented_kills_and_loses_nothing(stale_orders):
    res = drain_chaos.run(EVENTS, seed=11, options={"stale_orders": stale_orders})
    fig = drain_chaos.summarize(res)
    assert fig["jobs_killed"] == 0 and fig["jobs_lost"] == 0 and res.kills == []
    assert books_balance(fig) and fig["pending_end"] == 0
    assert fig["drains_started"] == EVENTS == fig["removals_planned"]
    assert fig["drains_removed"] + fig["backed_out"] == EVENTS
    # the races did happen: jobs reached nodes being drained and the re-check backed out
    assert fig["dispatched_during_drain"] > 0 and fig["adversary_hits"] > 0
    assert fig["backed_out_recheck"] > 0 and fig["backed_out_first_check"] > 0
    assert fig["drains_removed"] > EVENTS // 4
    if stale_orders == "accept":
        assert fig["dispatched_disabled"] > 0 and fig["orders_refused_stale"] == 0
    else:
        assert fig["dispatched_disabled"] == 0 and fig["orders_refused_stale"] > 0


@pytest.mark.parametrize("stale_orders", drain_chaos.STALE_ORDERS)
def test_the_checker_finds_kills_without_the_recheck(stale_orders):
    res = drain_chaos.run(EVENTS, seed=11, protocol="no_recheck", options={"stale_orders": stale_orders})
    fig = drain_chaos.summarize(res)
    assert fig["jobs_killed"] > 0 and fig["backed_out_recheck"] == 0
    assert books_balance(fig)
    assert set(fig["killed_at"]) == {"qconf -ke"}
    kill = res.kills[0]
    assert kill["killed"] > kill["dispatched"] and kill["step"] == "qconf -ke"


def test_settle_zero_kills_only_when_the_qmaster_accepts_stale_orders():
    accept = drain_chaos.summarize(drain_chaos.run(EVENTS, seed=11, protocol="settle0",
                                                   options={"stale_orders": "accept"}))
    reject = drain_chaos.summarize(drain_chaos.run(EVENTS, seed=11, protocol="settle0",
                                                   options={"stale_orders": "reject"}))
    assert accept["jobs_killed"] > 0 and books_balance(accept)
    assert reject["jobs_killed"] == 0 and books_balance(reject) and reject["orders_refused_stale"] > 0


def test_a_scheduler_run_longer_than_the_settle_time_and_the_proposed_final_check():
    # a qmaster without the queue-version check, and scheduler runs whose orders arrive 16-40 s
    # after the disable: the re-check is too early, the job lands before the host group removal
    slow = drain_chaos.summarize(drain_chaos.run(EVENTS, seed=5, options=dict(SLOW_SAME_RUN, stale_orders="accept")))
    assert slow["jobs_killed"] > 0 and books_balance(slow)
    # one more qstat after the host group removal (where no order can land) catches them
    final = drain_chaos.summarize(drain_chaos.run(EVENTS, seed=5, protocol="final_check",
                                                  options=dict(SLOW_SAME_RUN, stale_orders="accept")))
    assert final["jobs_killed"] == 0 and books_balance(final) and final["backed_out_final_check"] > 0
    # Grid Engine's rule (the order's queue version is stale) refuses them in the first place
    sge = drain_chaos.summarize(drain_chaos.run(EVENTS, seed=5, options=dict(SLOW_SAME_RUN, stale_orders="reject")))
    assert sge["jobs_killed"] == 0 and sge["orders_refused_stale"] > 0


def test_a_job_dispatched_just_before_the_disable_is_found_and_ends_with_its_status():
    only = {"scenarios": {"dispatched_before_disable": 1.0}}
    fig = drain_chaos.summarize(drain_chaos.run(100, seed=3, options=only))
    assert fig["scenarios"]["dispatched_before_disable"] == 100
    assert fig["adversary_hits"] > 50 and fig["backed_out_recheck"] >= fig["adversary_hits"] // 2
    assert fig["jobs_killed"] == 0 and books_balance(fig)
    killed = drain_chaos.summarize(drain_chaos.run(100, seed=3, protocol="no_recheck", options=only))
    assert killed["jobs_killed"] > 50


def test_every_drain_is_a_removal_of_decide(monkeypatch):
    planned = []
    real = elastic.decide

    configs = []

    def spy(snapshot, state, config, now):
        plan = real(snapshot, state, config, now)
        planned.append((now, list(plan["remove"]), {n for n, h in snapshot["hosts"].items() if h["running_jobs"]}))
        configs.append(config)
        return plan

    monkeypatch.setattr(drain_chaos.elastic, "decide", spy)
    res = drain_chaos.run(60, seed=2)
    assert res.polls == len(planned) and res.drains_started == 60
    removed = [name for _now, names, _busy in planned for name in names]
    assert len(removed) >= 60
    # decide never asks to remove a node that its snapshot shows running a job
    assert all(not set(names) & busy for _now, names, busy in planned)
    assert res.removals_planned == 60
    # the configuration is the trace simulator's default profile (8 nodes of 2 slots)
    assert all(c == engine.policy_config("default", 8, 2, "per_second") for c in configs)


def test_the_checker_counts_a_job_no_kill_was_counted_for_as_lost(monkeypatch):
    # break the kill accounting: jobs stay on the removed node, their ends never reported
    monkeypatch.setattr(drain_chaos._Chaos, "_kill_jobs", lambda self, node, step: None)
    fig = drain_chaos.summarize(drain_chaos.run(100, seed=11, protocol="no_recheck"))
    assert fig["jobs_killed"] == 0 and fig["jobs_lost"] > 0
    assert fig["jobs_submitted"] == fig["jobs_finished"] + fig["jobs_lost"] + fig["pending_end"]


def test_same_seed_same_run_other_seed_other_run():
    one = drain_chaos.summarize(drain_chaos.run(40, seed=9))
    two = drain_chaos.summarize(drain_chaos.run(40, seed=9))
    other = drain_chaos.summarize(drain_chaos.run(40, seed=10))
    assert one == two
    assert one != other


@pytest.mark.parametrize("kwargs, message", [
    ({"events": 0}, "^events:"),
    ({"protocol": "drain_faster"}, "^protocol:"),
    ({"options": {"cap": 0}}, "^cap:"),
    ({"options": {"stale_orders": "maybe"}}, "^stale_orders:"),
    ({"options": {"task_time": (2.0, 1.0)}}, "^task_time:"),
    ({"options": {"scenarios": {"meteor": 1.0}}}, "^scenarios:"),
    ({"options": {"adversary": 1.5}}, "^adversary:"),
    ({"options": {"colour": "blue"}}, "^colour: unknown option"),
    ({"options": {"policy_overrides": {"idle_time": -1}}}, "^idle_time:"),
])
def test_bad_input_is_refused_naming_it(kwargs, message):
    with pytest.raises(ValueError, match=message):
        drain_chaos.run(**dict({"events": 5}, **kwargs))
