# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The load balancer's TRACE and DEBUG records in CloverDX's format (seed 001, "Cluster Load
Balancer Debugging"), off by default, collected with ``log_level`` and sent to the logger."""

from __future__ import annotations

import logging
import re

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import placement
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy.placement import (
    TRACE,
    Dispatcher,
    PlacementError,
    decide,
    dispatch,
    distribution,
)

# The seed's node.log example, without log4j's "date time[thread] rJobLoadBalancer " prefix and
# with a decimal point for its locale's comma.
SEED_TRACE = ("Selecting one node for execution, excluded nodes are: [], "
              "viable nodes are: [node2, node3, node1]")
SEED_DEBUG = [
    "NodeId {node3} selected for execution, from nodes:",
    "NodeProbability#node2 { execProbability: 0.340, freeMemRatio: 0.795, freeCpuRatio: 0.999 } "
    "Jobs#node2 { running: 24, recent: 10 }",
    "NodeProbability#node3 { execProbability: 0.253, freeMemRatio: 0.527, freeCpuRatio: 0.999 } "
    "Jobs#node3 { running: 15, recent: 8 } *",
    "NodeProbability#node1 { execProbability: 0.406, freeMemRatio: 1.000, freeCpuRatio: 1.000 } "
    "Jobs#node1 { running: 26, recent: 12 }",
]

NODE_LINE = re.compile(r"^NodeProbability#(\S+) \{ execProbability: \d\.\d{3}, freeMemRatio: (\d\.\d{3}|-), "
                       r"freeCpuRatio: (\d\.\d{3}|-) \} Jobs#\1 \{ running: (\d+|-), recent: \d+ \}( \*)?$")


def seed_placement():
    """The seed's three nodes with its ratios, probabilities and running jobs."""
    details = {
        "node2": {"probability": 0.340, "free_mem_ratio": 0.795, "free_cpu_ratio": 0.999, "running": 24},
        "node3": {"probability": 0.253, "free_mem_ratio": 0.527, "free_cpu_ratio": 0.999, "running": 15},
        "node1": {"probability": 0.406, "free_mem_ratio": 1.000, "free_cpu_ratio": 1.000, "running": 26},
    }
    return {"distribution": {n: d["probability"] for n, d in details.items()}, "nodes": details}


def test_lines_reproduce_the_seeds_example():
    disp = Dispatcher(seed_placement())
    assert disp.selecting_line() == SEED_TRACE
    assert disp.decision_lines("node3", {"node2": 10, "node3": 8, "node1": 12}) == SEED_DEBUG
    assert disp.decision_line("node3", {"node2": 10, "node3": 8, "node1": 12}) == "\n".join(SEED_DEBUG)


def test_off_by_default():
    assert decide(seed_placement(), 5)["log"] == []
    assert decide(seed_placement(), 5, log_level="none")["log"] == []
    disp = Dispatcher(seed_placement())
    disp.take(5)
    assert disp.log_lines == []


def test_trace_gives_both_records_per_decision_in_order():
    out = decide(seed_placement(), 3, log_level="trace")
    assert len(out["hosts"]) == 3
    log = out["log"]
    assert len(log) == 3 * (1 + 1 + 3)
    for i, host in enumerate(out["hosts"]):
        record = log[5 * i:5 * (i + 1)]
        assert record[0] == "TRACE " + SEED_TRACE
        assert record[1] == "DEBUG NodeId {%s} selected for execution, from nodes:" % host
        assert all(NODE_LINE.match(line) for line in record[2:])
        starred = [line for line in record[2:] if line.endswith(" *")]
        assert len(starred) == 1 and starred[0].startswith("NodeProbability#%s " % host)
    # recent = jobs sent in this interval before the decision
    first = out["hosts"][0]
    assert "Jobs#%s { running: " % first in log[7 + ["node2", "node3", "node1"].index(first)]
    assert log[7 + ["node2", "node3", "node1"].index(first)].split("recent: ")[1].startswith("1 }")


def test_debug_gives_only_the_debug_records():
    out = decide(seed_placement(), 2, log_level="debug")
    assert [line for line in out["log"] if line.startswith("TRACE")] == []
    assert [line for line in out["log"] if line.startswith("DEBUG")] == [
        "DEBUG NodeId {%s} selected for execution, from nodes:" % h for h in out["hosts"]]
    assert len(out["log"]) == 2 * 4


def test_hosts_do_not_depend_on_the_log():
    dist = distribution({"a": {"mem_free": 1000, "mem_max": 4000, "cpu_usage": 0.1},
                         "b": {"mem_free": 3000, "mem_max": 4000, "cpu_usage": 0.3}})
    plain = dispatch(dist, 40, offset=7)
    assert decide(dist, 40, offset=7, log_level="trace")["hosts"] == plain
    # the offset replay is silent: only the decisions asked for are logged
    assert len(decide(dist, 4, offset=7, log_level="trace")["log"]) == 4 * (1 + 1 + 2)


def test_excluded_nodes_limits_skipped_and_zero_shares():
    nodes = {"full": {"mem_free": 100, "mem_max": 4000, "cpu_usage": 0.1},
             "a": {"mem_free": 3000, "mem_max": 4000, "cpu_usage": 0.1},
             "b": {"mem_free": 2000, "mem_max": 4000, "cpu_usage": 0.2}}
    dist = distribution(nodes)
    assert dist["excluded"] == {"full": "memory usage 0.975 above the memory limit 0.900"}
    dist["skipped"] = {"down": "memory unknown (mem_total None, mem_used None)"}
    line = Dispatcher(dist).selecting_line()
    assert line == ("Selecting one node for execution, excluded nodes are: [full, down], "
                    "viable nodes are: [a, b]")
    # DEBUG lists the nodes of the distribution only (the excluded ones cannot be chosen)
    log = decide(dist, 1, log_level="debug")["log"]
    assert [line.split(" ")[0] for line in log[1:]] == ["NodeProbability#a", "NodeProbability#b"]
    assert Dispatcher({"x": 0, "y": 1}).selecting_line() == (
        "Selecting one node for execution, excluded nodes are: [x], viable nodes are: [y]")


def test_logger_gets_trace_and_debug_when_enabled(caplog):
    caplog.set_level(TRACE, logger=placement.LOGGER_NAME)
    hosts = dispatch(seed_placement(), 2)
    records = [r for r in caplog.records if r.name == placement.LOGGER_NAME]
    assert [r.levelname for r in records] == ["TRACE", "DEBUG", "TRACE", "DEBUG"]
    assert records[0].getMessage() == SEED_TRACE
    assert records[1].getMessage().split("\n")[0] == "NodeId {%s} selected for execution, from nodes:" % hosts[0]


def test_logger_at_debug_gets_no_trace(caplog):
    caplog.set_level(logging.DEBUG, logger=placement.LOGGER_NAME)
    dispatch(seed_placement(), 2)
    assert [r.levelname for r in caplog.records if r.name == placement.LOGGER_NAME] == ["DEBUG", "DEBUG"]


@pytest.mark.parametrize("level", ["info", "TRACE", 5, "", ["trace"]])
def test_bad_log_level(level):
    with pytest.raises(PlacementError, match="^log_level: must be one of none, debug, trace"):
        decide(seed_placement(), 1, log_level=level)
