# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sim.burst: the two-cell burst simulator (home fixed, partner elastic, cost-aware routing)."""

from __future__ import annotations

import random

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import burst, swf


def _jobs(spec):
    """[(submit, run, procs)] -> swf.Job list in submit order."""
    return [swf.Job(i + 1, float(s), float(r), p, i + 1, 1) for i, (s, r, p) in enumerate(spec)]


def _random_jobs(seed, count=120, width=4):
    rng = random.Random(seed)
    t, spec = 0.0, []
    for _i in range(count):
        t += rng.expovariate(1 / 90.0)
        spec.append((round(t), rng.choice([30, 200, 900, 2400, 7200]), rng.randint(1, width)))
    return _jobs(spec)


@pytest.mark.parametrize("seed,billing", [(1, "per_second"), (2, "per_second"), (3, "hourly"), (4, "per_second")])
def test_skipping_polls_gives_the_same_run_as_polling_every_tick(seed, billing):
    jobs = _random_jobs(seed)
    fast = burst.simulate(jobs, 3, 4, 2, billing=billing, route_config={"wait": 60})
    slow = burst.simulate(jobs, 3, 4, 2, billing=billing, route_config={"wait": 60}, skip=False)
    assert fast.sent > 0
    assert sorted(fast.waits) == sorted(slow.waits)
    assert fast.lives == slow.lives
    assert fast.sent == slow.sent
    assert fast.decide_calls < slow.decide_calls


@pytest.mark.parametrize("seed", [5, 6])
def test_every_job_runs_once_and_the_partner_stays_under_its_cap(seed):
    jobs = _random_jobs(seed, width=6)
    res = burst.simulate(jobs, 2, 3, 2, route_config={"wait": 0}, timeline=True)
    assert res.left_out == sum(1 for j in jobs if j.procs > 4)
    assert len(res.waits) == len(jobs) - res.left_out
    assert all(w >= 0 for w in res.waits)
    assert res.max_cloud <= 3
    assert max(p[1] for p in res.timeline) <= 3
    assert res.sent > 0 and res.launches > 0


def test_partner_grows_for_a_burst_and_shrinks_back_to_zero():
    # home: one node of one slot; three jobs of an hour arrive together, then one more a day later
    jobs = _jobs([(0, 3600, 1), (0, 3600, 1), (0, 3600, 1), (86400, 60, 1)])
    res = burst.simulate(jobs, 1, 4, 1, route_config={"wait": 0}, timeline=True)
    figs = burst.summarize(res)
    assert figs["sent"] == 2 and figs["max_cloud_nodes"] == 2
    # no history yet: the running job is expected to run as long as it ran so far, so at 0 s the
    # broker keeps both jobs; it runs again after ``reroute`` (300 s) with nothing changed, finds
    # 300 s > boot 120 s + margin 120 s and sends them; the partner adds two nodes at the next poll
    # (330 s: a job must have waited more than job_wait_time 0 s), which join 120 s later
    assert sorted(res.waits) == [0.0, 0.0, 450.0, 450.0]
    # each node billed from its request to its removal: idle_time (540 s) after the last poll that
    # saw it busy (4020 s; the jobs end at 4050 s)
    assert res.lives == [(res.start + 330, res.start + 4020 + 540)] * 2
    # back to zero cloud nodes after the burst, long before the last job
    zero = [t for t, billed, _p in res.timeline if billed == 0 and t > res.start + 3600]
    assert zero and zero[0] == res.start + 4020 + 540


def test_cost_aware_routing_keeps_jobs_home_would_start_soon():
    # one home slot; every 1000 s two 100 s jobs arrive: the second waits 100 s at home, less
    # than boot + margin. Wait-only routing sends it after 30 s and buys a node for it (and it
    # waits longer: the poll and the boot); cost-aware routing keeps it home and buys nothing
    jobs = _jobs([(1000 * (i // 2), 100, 1) for i in range(40)])
    aware = burst.summarize(burst.simulate(jobs, 1, 4, 1, route_config={"wait": 30}))
    blind = burst.summarize(burst.simulate(jobs, 1, 4, 1, route_config={"wait": 30, "cost_aware": False}))
    assert (aware["sent"], aware["cloud_node_hours"], aware["wait_mean"]) == (0, 0.0, 50.0)
    assert (aware["kept_by_cost"], aware["kept_then_sent"]) == (20, 0)
    assert blind["kept_by_cost"] == 0
    assert blind["sent"] == 20 and blind["launches"] == 20
    assert blind["cloud_node_hours"] > 20 * (120 + 100) / 3600.0
    assert blind["wait_mean"] > aware["wait_mean"]


def test_home_that_never_fills_buys_nothing():
    jobs = _jobs([(100 * i, 50, 1) for i in range(30)])
    res = burst.summarize(burst.simulate(jobs, 2, 4, 1, route_config={"wait": 0}))
    assert res["sent"] == 0 and res["cloud_node_hours"] == 0 and res["wait_mean"] == 0


def test_baselines():
    jobs = _jobs([(0, 100, 2), (0, 100, 2), (10, 50, 1), (20, 10, 3)])
    alone = burst.summarize(burst.fixed_cell(jobs, 1, 2))
    assert alone["left_out"] == 1 and alone["jobs"] == 3
    assert alone["wait_mean"] == pytest.approx((0 + 100 + 190) / 3.0)
    static = burst.fixed_cell(jobs, 1, 2, extra=2, kind="static_extension")
    figs = burst.summarize(static)
    assert figs["max_cloud_nodes"] == 2
    assert static.lives == [(0.0, 100.0), (0.0, 100.0)]   # first submit to last job end
    assert figs["wait_mean"] == 0.0


@pytest.mark.parametrize("kwargs,message", [
    ({"home_nodes": 0}, "home_nodes: must be an integer >= 1"),
    ({"partner_cap": 0}, "partner_cap: must be an integer >= 1"),
    ({"route_config": {"wait": -1}}, "wait: must be a number of seconds >= 0"),
])
def test_bad_arguments_are_named(kwargs, message):
    args = dict({"home_nodes": 1, "partner_cap": 1}, **kwargs)
    with pytest.raises(ValueError, match=message):
        burst.simulate(_jobs([(0, 10, 1)]), **args)
