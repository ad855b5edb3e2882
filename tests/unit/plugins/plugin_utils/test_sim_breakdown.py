# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a simulated run's node-hours went (engine.breakdown), and benchmarks/simulate.py's
``--override`` and ``--breakdown`` (issue 21 item 2: what bounds each lever)."""

from __future__ import annotations

import importlib.util
import os
import random

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine, swf

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))


def jobs(*rows):
    """(submit, run, procs) rows -> swf.Job list in submit order."""
    out = [swf.Job(i + 1, float(s), float(r), p, i + 1, 1) for i, (s, r, p) in enumerate(rows)]
    return sorted(out, key=lambda j: (j.submit, j.line))


def _random_trace(seed, n=70):
    rng = random.Random(seed)
    t, rows = 0.0, []
    for _i in range(n):
        t += rng.expovariate(1 / 90.0)
        rows.append((t, rng.choice([20, 60, 300, 900, 2400]), rng.choice([1, 1, 1, 2, 3, 4])))
    return jobs(*rows)


def test_breakdown_of_one_node_hand_checked():
    # parallelcluster, 2 slots per node: one 1-slot job of 1,000 s submitted at 0.  A node is
    # asked for at the first poll (0), joins at 120, runs the job to 1,120; the last poll that
    # saw it busy was at 1,080 (polls every 60 s), so it goes at 1,080 + 600 (idle_time): idle
    # from 1,120 to 1,680.
    res = engine.simulate(jobs((0, 1000, 1)), "parallelcluster", cap=2, slots_per_node=2)
    b = engine.breakdown(res)
    assert res.lives == [(engine.EPOCH, engine.EPOCH + 1680.0)]
    assert b["boot"] == pytest.approx(120 / 3600.0)
    assert b["idle"] == pytest.approx(560 / 3600.0)
    assert b["used"] == pytest.approx(1000 / 2 / 3600.0)             # 1 of 2 slots for 1,000 s
    assert b["partly_free"] == pytest.approx(1000 / 2 / 3600.0)      # the other slot, free while busy
    assert (b["launches"], b["unused_launches"], b["unused_hours"]) == (1, 0, 0.0)


def test_a_node_that_never_ran_a_job_is_counted():
    # default (poll every 30 s, grow once a job waited > 0 s), 1-slot nodes: job 1 (5 s) at 0,
    # job 2 (50 s) at 40.  Poll 30: job 1 waits, one node asked for (joins 150).  Poll 60: two
    # jobs wait, one node booting, a second asked for (joins 180).  Node 1 runs job 1 from 150
    # to 155, then job 2 from 155: node 2 joins at 180 with nothing left to run.
    trace = jobs((0, 5, 1), (40, 50, 1))
    res = engine.simulate(trace, "default", cap=4, slots_per_node=1)
    b = engine.breakdown(res)
    assert res.launches == 2
    assert sorted(res.waits) == [115.0, 150.0]
    assert b["unused_launches"] == 1
    (_a, end2), = [life for life in res.lives if life[0] == engine.EPOCH + 60.0]
    assert b["unused_hours"] == pytest.approx((end2 - engine.EPOCH - 60.0) / 3600.0)


@pytest.mark.parametrize("policy, billing", [("default", "per_second"), ("default", "hourly"),
                                             ("starcluster", "hourly"), ("parallelcluster", "per_second"),
                                             ("static", "per_second")])
@pytest.mark.parametrize("spn", [1, 3])
def test_breakdown_adds_up_and_one_slot_nodes_have_no_partly_free_time(policy, billing, spn):
    trace = _random_trace(7)
    res = engine.simulate(trace, policy, cap=6, slots_per_node=spn, billing=billing)
    b = engine.breakdown(res)
    assert b["boot"] + b["idle"] + b["used"] + b["partly_free"] == pytest.approx(b["node_hours"])
    opt = engine.summarize(engine.simulate(trace, "optimum", cap=6, slots_per_node=spn))["node_hours"]
    assert b["used"] == pytest.approx(opt)
    assert min(b["boot"], b["idle"], b["partly_free"] + 1e-9) >= 0.0
    if spn == 1:
        assert b["partly_free"] == pytest.approx(0.0, abs=1e-9)
    if policy == "static":
        assert b["boot"] == 0.0


def test_breakdown_is_none_for_the_optimum():
    assert engine.breakdown(engine.simulate(jobs((0, 10, 1)), "optimum", cap=1)) is None


@pytest.fixture(scope="module")
def cli():
    spec = importlib.util.spec_from_file_location("bench_simulate", os.path.join(REPO, "benchmarks", "simulate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_override_parses_json_values_and_refuses_bad_items(cli):
    assert cli.parse_overrides(["idle_time=120", "queues=[\"a.q\"]", "kill_cluster=false", "billing=hourly"]) == {
        "idle_time": 120, "queues": ["a.q"], "kill_cluster": False, "billing": "hourly"}
    with pytest.raises(ValueError, match="OPTION=VALUE"):
        cli.parse_overrides(["idle_time"])


def test_override_changes_only_the_default_policy(cli):
    trace = _random_trace(5)
    plain = cli.run_case(trace, ["default", "parallelcluster"], 6, 2, "per_second", 120.0)
    short = cli.run_case(trace, ["default", "parallelcluster"], 6, 2, "per_second", 120.0, {"idle_time": 60})
    assert short["parallelcluster"][1] == plain["parallelcluster"][1]
    assert short["default"][1]["node_hours"] < plain["default"][1]["node_hours"]
    cfg = engine.policy_config("default", 6, 2, "per_second", overrides={"idle_time": 60})
    again = engine.simulate(trace, "default", 6, 2, config=cfg)
    assert again.lives == short["default"][0].lives


def test_unknown_override_is_an_error_naming_it(cli, capsys):
    with pytest.raises(SystemExit):
        cli.main(["--trace", "nonexistent.swf", "--override", "idle_tyme=120"])
    assert "idle_tyme" in capsys.readouterr().err
