# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Weighted placement (plugins/plugin_utils/policy/placement.py), after CloverDX (seed 001)."""

from __future__ import annotations

import logging
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import placement
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy.placement import (
    Dispatcher,
    PlacementError,
    dispatch,
    distribution,
    max_deviation,
    nginx_swrr,
)

# the seed's 2-node example: 4,000 MB maximum heap each, 1,000 / 3,000 MB free, 10 % CPU each
SEED_NODES = {
    "node01": {"mem_free": 1000, "mem_max": 4000, "cpu_usage": 0.1},
    "node02": {"mem_free": 3000, "mem_max": 4000, "cpu_usage": 0.1},
}


def node(free=1000, cap=4000, cpu=0.1, running=None):
    out = {"mem_free": free, "mem_max": cap, "cpu_usage": cpu}
    if running is not None:
        out["running"] = running
    return out


# ------------------------------------------------------------------------------ distribution

def test_defaults_are_the_seeds():
    assert placement.default_config() == {
        "memory_weight": 3.0, "memory_exponent": 3.0, "memory_limit": 0.9,
        "cpu_weight": 1.0, "cpu_exponent": 1.0, "cpu_limit": 0.9, "ratio_digits": None}


def test_seed_example_as_written():
    # the seed rounds the memory ratio 1000/3000 to 0.33 before cubing it (0.035937)
    result = distribution(SEED_NODES, {"ratio_digits": 2})
    nodes = result["nodes"]
    assert nodes["node01"]["free_mem_ratio"] == 0.33
    assert nodes["node02"]["free_mem_ratio"] == 1.0
    assert nodes["node01"]["free_cpu_ratio"] == nodes["node02"]["free_cpu_ratio"] == 1.0
    # weighted resources 0.604 / 3.396
    assert round(nodes["node01"]["weighted"], 3) == 0.604
    assert round(nodes["node02"]["weighted"], 3) == 3.396
    assert nodes["node01"]["weighted"] == pytest.approx(3 * (0.035937 / 1.035937) + 1 * (1 / 2))
    assert nodes["node02"]["weighted"] == pytest.approx(3 * (1 / 1.035937) + 1 * (1 / 2))
    # distribution 15.1 % / 84.9 %
    assert round(result["distribution"]["node01"] * 100, 1) == 15.1
    assert round(result["distribution"]["node02"] * 100, 1) == 84.9
    assert result["distribution"]["node01"] == pytest.approx(nodes["node01"]["weighted"] / 4)
    assert sum(result["distribution"].values()) == pytest.approx(1)
    assert result["excluded"] == {}


def test_seed_example_exact_ratios():
    # with the exact ratio 1/3 the same formula gives 0.607 / 3.393 (15.2 % / 84.8 %)
    result = distribution(SEED_NODES)
    nodes = result["nodes"]
    assert nodes["node01"]["weighted"] == pytest.approx(3 * (1 / 27) / (1 + 1 / 27) + 0.5)
    assert round(nodes["node01"]["weighted"], 3) == 0.607
    assert round(nodes["node02"]["weighted"], 3) == 3.393
    assert round(result["distribution"]["node01"], 4) == 0.1518


def test_memory_limit_excludes_unless_all_over():
    nodes = {"full": node(free=200, cap=4000), "ok": node(free=2000), "ok2": node(free=1000)}
    result = distribution(nodes)
    assert set(result["distribution"]) == {"ok", "ok2"}
    assert "memory usage 0.950 above the memory limit 0.900" in result["excluded"]["full"]
    assert result["nodes"]["full"]["probability"] == 0.0
    assert result["nodes"]["full"]["free_mem_ratio"] is None
    # every node over the limit: all are used
    result = distribution({"a": node(free=100), "b": node(free=300)})
    assert set(result["distribution"]) == {"a", "b"}
    assert result["excluded"] == {}


def test_cpu_limit_excludes_unless_all_over():
    result = distribution({"busy": node(cpu=0.95), "idle": node(cpu=0.2)})
    assert result["distribution"] == {"idle": 1.0}
    assert "CPU usage 0.950 above the cpu limit 0.900" in result["excluded"]["busy"]
    result = distribution({"busy": node(cpu=0.95), "busier": node(cpu=0.99)})
    assert set(result["distribution"]) == {"busy", "busier"}


def test_limit_is_exceeding_not_reaching():
    result = distribution({"edge": node(free=400, cap=4000, cpu=0.9), "idle": node(free=4000, cpu=0)})
    assert set(result["distribution"]) == {"edge", "idle"}


def test_over_different_limits_uses_all():
    # one over memory, the other over CPU: no node passes both, so all are used
    result = distribution({"a": node(free=100, cpu=0.1), "b": node(free=3000, cpu=0.99)})
    assert set(result["distribution"]) == {"a", "b"}


def test_ratios_against_least_loaded_and_exponents():
    nodes = {"a": node(free=1000, cpu=0.5), "b": node(free=2000, cpu=0.0)}
    cfg = {"memory_weight": 1, "memory_exponent": 2, "cpu_weight": 1, "cpu_exponent": 1}
    result = distribution(nodes, cfg)
    a, b = result["nodes"]["a"], result["nodes"]["b"]
    assert a["free_mem_ratio"] == 0.5 and b["free_mem_ratio"] == 1.0
    assert a["free_cpu_ratio"] == 0.5 and b["free_cpu_ratio"] == 1.0
    # memory: 0.25 / 1.25, CPU: 0.5 / 1.5
    assert a["weighted"] == pytest.approx(0.25 / 1.25 + 0.5 / 1.5)
    assert result["distribution"]["a"] == pytest.approx((0.2 + 1 / 3) / 2)


def test_zero_weight_and_no_free_memory():
    # memory weight 0: only CPU counts
    result = distribution({"a": node(free=1000), "b": node(free=4000, cpu=0.55)}, {"memory_weight": 0})
    assert result["distribution"]["a"] == pytest.approx(0.9 / (0.9 + 0.45))
    # no free memory anywhere: equal memory ratios
    result = distribution({"a": node(free=0, cpu=0), "b": node(free=0, cpu=0)})
    assert result["distribution"] == {"a": 0.5, "b": 0.5}


def test_single_node_gets_everything():
    assert distribution({"only": node()})["distribution"] == {"only": 1.0}


@pytest.mark.parametrize("config, message", [
    ({"memory_weight": -1}, "memory_weight: must be a number >= 0"),
    ({"cpu_exponent": "x"}, "cpu_exponent: must be a number >= 0"),
    ({"memory_limit": 1.5}, "memory_limit: must be a number between 0 and 1"),
    ({"cpu_limit": float("nan")}, "cpu_limit: must be a number between 0 and 1"),
    ({"memory_weight": 0, "cpu_weight": 0}, "at least one must be above 0"),
    ({"ratio_digits": 2.5}, "ratio_digits:"),
    ({"weight": 1}, "weight: unknown option"),
    ([1], "config: must be a mapping"),
])
def test_bad_config(config, message):
    with pytest.raises(PlacementError, match=message.replace("(", r"\(")):
        distribution(SEED_NODES, config)


@pytest.mark.parametrize("nodes, message", [
    ({}, "nodes: no node"),
    ([], "nodes: must be a mapping"),
    ({"a": {"mem_free": 1, "mem_max": 2}}, "nodes.a.cpu_usage: missing"),
    ({"a": node(free=5000)}, "nodes.a.mem_free: must be between 0 and mem_max"),
    ({"a": node(cap=0, free=0)}, "nodes.a.mem_max: must be above 0"),
    ({"a": node(cpu=1.2)}, "nodes.a.cpu_usage: must be a fraction"),
    ({"a": node(cpu=True)}, "nodes.a.cpu_usage: must be a number"),
    ({"a": node(running=-1)}, "nodes.a.running:"),
    ({"": node()}, "node names must be non-empty"),
    ({"a": 3}, "nodes.a: must be a mapping"),
])
def test_bad_nodes(nodes, message):
    with pytest.raises(PlacementError, match=message):
        distribution(nodes)


# ------------------------------------------------------------------------------ dispatch

def test_seed_distribution_dispatch_100_jobs():
    # "out of 100 jobs ... approximately 15 would be sent to node01 and 85 to node02"
    result = distribution(SEED_NODES, {"ratio_digits": 2})
    hosts = dispatch(result, 100)
    assert hosts.count("node01") == 15 and hosts.count("node02") == 85
    assert max_deviation(result, hosts) <= 1


def test_dispatch_is_deterministic_and_offset_continues():
    shares = {"a": 0.5, "b": 0.3, "c": 0.2}
    full = dispatch(shares, 50)
    assert full == dispatch(shares, 50)
    assert dispatch(shares, 20) + dispatch(shares, 30, offset=20) == full
    assert dispatch(shares, 10) == ["a", "b", "c", "a", "a", "b", "a", "c", "b", "a"]


def test_zero_share_never_chosen():
    hosts = dispatch({"a": 0.0, "b": 1.0, "c": 0}, 20)
    assert hosts == ["b"] * 20


@pytest.mark.parametrize("shares, message", [
    ({}, "no node"),
    ({"a": 0}, "every share is 0"),
    ({"a": -0.1, "b": 1}, "distribution.a: must be a number >= 0"),
    ({"a": "x"}, "distribution.a"),
    ("a", "must be a mapping"),
])
def test_bad_distribution(shares, message):
    with pytest.raises(PlacementError, match=message):
        dispatch(shares, 1)


@pytest.mark.parametrize("count", [-1, 1.5, True])
def test_bad_count(count):
    with pytest.raises(PlacementError, match="count:"):
        dispatch({"a": 1}, count)


def test_bad_offset():
    with pytest.raises(PlacementError, match="offset:"):
        Dispatcher({"a": 1}, offset=-2)


def _check_within_one(shares, jobs):
    disp = Dispatcher(shares)
    weights, total = disp.weights, disp.total
    counts = dict.fromkeys(weights, 0)
    for step in range(1, jobs + 1):
        counts[disp.next()] += 1
        for name, weight in weights.items():
            # |count - step * share| <= 1, exactly, in integers
            assert abs(counts[name] * total - step * weight) <= total, (shares, step, name)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1000, allow_nan=False, allow_infinity=False),
                min_size=1, max_size=40).filter(lambda w: sum(w) > 0),
       st.integers(min_value=1, max_value=300))
def test_property_within_one_job_at_every_point(weights, jobs):
    _check_within_one({"n%02d" % i: w for i, w in enumerate(weights)}, jobs)


def test_random_weights_within_one_job_many_shapes():
    rng = random.Random(20261124)
    for _i in range(300):
        k = rng.randint(2, 30)
        shape = rng.random()
        if shape < 0.3:
            weights = [rng.random() ** 8 for _j in range(k)]  # a few large, many tiny
        elif shape < 0.6:
            weights = [1.0] * (k - 1) + [rng.random() * k * 5]  # one dominant
        else:
            weights = [rng.random() for _j in range(k)]
        _check_within_one({"n%02d" % j: w for j, w in enumerate(weights)}, 200)


def test_nginx_swrr_can_fall_more_than_one_job_behind():
    # why the dispatcher is earliest-deadline-first: plain nginx SWRR (largest current weight
    # first) exceeds the bound on this 5-node distribution (found by a seeded search)
    weights = {"n00": 100, "n01": 3, "n02": 1, "n03": 100, "n04": 5}
    assert max_deviation(weights, nginx_swrr(weights, 120)) > 1
    assert max_deviation(weights, dispatch(weights, 120)) <= 1
    assert max_deviation(weights, dispatch(weights, 2090)) <= 1


def test_random_draw_is_not_within_one_job():
    # the random draw the benchmark compares with: far off on the seed's distribution
    rng = random.Random(7)
    shares = {"node01": 0.151, "node02": 0.849}
    draws = rng.choices(list(shares), weights=list(shares.values()), k=1000)
    assert max_deviation(shares, draws) > 1


# ------------------------------------------------------------------------------ debug log

def test_debug_log_line_per_decision_in_seed_format(caplog):
    nodes = {"node2": node(free=3180, cpu=0.001, running=24), "node3": node(free=2108, cpu=0.001, running=15),
             "node1": node(free=4000, cpu=0.0, running=26)}
    result = distribution(nodes)
    with caplog.at_level(logging.DEBUG, logger=placement.LOGGER_NAME):
        hosts = dispatch(result, 3)
    records = [r for r in caplog.records if r.name == placement.LOGGER_NAME]
    assert len(records) == 3 and all(r.levelno == logging.DEBUG for r in records)
    first = records[0].getMessage()
    lines = first.split("\n")
    # the seed's record: the choice, then one line per node in the distribution's order
    assert lines[0] == "NodeId {%s} selected for execution, from nodes:" % hosts[0]
    p2 = result["distribution"]["node2"]
    assert lines[1] == ("NodeProbability#node2 { execProbability: %.3f, freeMemRatio: 0.795, freeCpuRatio: 0.999 } "
                        "Jobs#node2 { running: 24, recent: 0 }" % p2)
    assert lines[3] == ("NodeProbability#node1 { execProbability: %.3f, freeMemRatio: 1.000, freeCpuRatio: 1.000 } "
                        "Jobs#node1 { running: 26, recent: 0 } *" % result["distribution"]["node1"])
    assert hosts[0] == "node1"
    # "recent" counts the jobs sent in this interval before the decision
    assert "Jobs#node1 { running: 26, recent: 1 }" in records[1].getMessage()


def test_no_log_work_when_debug_is_off(caplog):
    with caplog.at_level(logging.INFO, logger=placement.LOGGER_NAME):
        dispatch({"a": 1}, 5)
    assert not [r for r in caplog.records if r.name == placement.LOGGER_NAME]


def test_log_line_for_plain_shares():
    disp = Dispatcher({"a": 0.25, "b": 0.75})
    line = disp.decision_line("b", {"a": 0, "b": 0})
    assert line == ("NodeId {b} selected for execution, from nodes:\n"
                    "NodeProbability#a { execProbability: 0.250, freeMemRatio: -, freeCpuRatio: - } "
                    "Jobs#a { running: -, recent: 0 }\n"
                    "NodeProbability#b { execProbability: 0.750, freeMemRatio: -, freeCpuRatio: - } "
                    "Jobs#b { running: -, recent: 0 } *")
