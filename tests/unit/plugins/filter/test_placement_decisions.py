# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter placement_decisions: hosts plus CloverDX's log lines, switched by log_level."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gridengine.balancer.plugins.filter.placement import (
    FilterModule,
    placement_decisions,
    placement_distribution,
    placement_next_hosts,
)

MIB = 1024 ** 2


def host(mem_used, load, jobs, states=""):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": load, "mem_total": 4000 * MIB,
            "mem_used": mem_used, "slots_total": 2, "slots_used": 0, "slots_reserved": 0,
            "states": states, "queues": ["all.q"], "running_jobs": jobs}


def seed_snapshot():
    hosts = {"node01": host(3000 * MIB, 0.2, 3), "node02": host(1000 * MIB, 0.2, 1),
             "node03": host(1000 * MIB, 0.2, 0, states="d")}
    queues = [{"name": "all.q@%s" % n, "queue": "all.q", "host": n, "qtype": "BIP", "slots_total": 2,
               "slots_used": 0, "slots_reserved": 0, "load_avg": h["load_avg"], "states": h["states"]}
              for n, h in hosts.items()]
    return {"schema": 1, "taken_at": 1700000000.0, "flavour": "SoGE 8.1", "cell": "default",
            "hosts": hosts, "queues": queues, "pending": [], "running": []}


def test_registered():
    assert FilterModule().filters()["placement_decisions"] is placement_decisions


def test_off_by_default_same_hosts_as_next_hosts():
    dist = placement_distribution(seed_snapshot(), queue="all.q", ratio_digits=2)
    out = placement_decisions(dist, 10)
    assert out == {"hosts": placement_next_hosts(dist, 10), "log": []}
    assert placement_decisions(dist, 3, log_level=None)["log"] == []


def test_trace_lines_from_a_snapshot():
    dist = placement_distribution(seed_snapshot(), queue="all.q", ratio_digits=2)
    out = placement_decisions(dist, 1, log_level="trace")
    assert out["hosts"] == ["node02"]
    assert out["log"] == [
        "TRACE Selecting one node for execution, excluded nodes are: [node03], "
        "viable nodes are: [node01, node02]",
        "DEBUG NodeId {node02} selected for execution, from nodes:",
        "NodeProbability#node01 { execProbability: 0.151, freeMemRatio: 0.330, freeCpuRatio: 1.000 } "
        "Jobs#node01 { running: 3, recent: 0 }",
        "NodeProbability#node02 { execProbability: 0.849, freeMemRatio: 1.000, freeCpuRatio: 1.000 } "
        "Jobs#node02 { running: 1, recent: 0 } *",
    ]


def test_debug_lines_only():
    out = placement_decisions({"a": 0.25, "b": 0.75}, 2, offset=1, log_level="debug")
    assert out["hosts"] == placement_next_hosts({"a": 0.25, "b": 0.75}, 2, offset=1)
    assert len(out["log"]) == 2 * 3 and not any(line.startswith("TRACE") for line in out["log"])


def test_bad_log_level():
    with pytest.raises(AnsibleFilterError, match="^placement_decisions: log_level: must be one of"):
        placement_decisions({"a": 1}, 1, log_level="verbose")
