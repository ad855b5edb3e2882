# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Weighted placement filters (plugins/filter/placement.py) on snapshots shaped as docs/snapshot.md."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gridengine.balancer.plugins.filter.placement import (
    FilterModule,
    placement_distribution,
    placement_next_hosts,
)

MIB = 1024 ** 2


def host(mem_total=4000 * MIB, mem_used=0, load=0.0, num_proc=2, states="", queues=("all.q",), jobs=0):
    return {"arch": "lx-amd64", "num_proc": num_proc, "load_avg": load, "mem_total": mem_total,
            "mem_used": mem_used, "slots_total": 2, "slots_used": 0, "slots_reserved": 0,
            "states": states, "queues": list(queues), "running_jobs": jobs}


def snapshot(hosts, instance_states=None):
    queues = []
    for name, h in hosts.items():
        for q in h["queues"]:
            queues.append({"name": "%s@%s" % (q, name), "queue": q, "host": name, "qtype": "BIP",
                           "slots_total": 2, "slots_used": 0, "slots_reserved": 0,
                           "load_avg": h["load_avg"],
                           "states": (instance_states or {}).get("%s@%s" % (q, name), h["states"])})
    return {"schema": 1, "taken_at": 1700000000.0, "flavour": "SoGE 8.1", "cell": "default",
            "hosts": hosts, "queues": queues, "pending": [], "running": []}


def seed_snapshot():
    # the seed's example as Grid Engine hosts: 4,000 MB, 1,000 / 3,000 MB free, CPU 10 % (load 0.2 of 2)
    return snapshot({"node01": host(mem_used=3000 * MIB, load=0.2, jobs=3),
                     "node02": host(mem_used=1000 * MIB, load=0.2, jobs=1)})


def test_filters_registered():
    assert set(FilterModule().filters()) == {"placement_distribution", "placement_next_hosts",
                                             "placement_decisions"}


def test_seed_example_from_a_snapshot():
    result = placement_distribution(seed_snapshot(), queue="all.q", ratio_digits=2)
    assert round(result["nodes"]["node01"]["weighted"], 3) == 0.604
    assert round(result["nodes"]["node02"]["weighted"], 3) == 3.396
    assert round(result["distribution"]["node01"], 3) == 0.151
    assert round(result["distribution"]["node02"], 3) == 0.849
    assert result["nodes"]["node01"]["running"] == 3
    assert result["nodes"]["node01"]["cpu_usage"] == pytest.approx(0.1)
    assert result["skipped"] == {} and result["queue"] == "all.q"


def test_next_hosts_from_the_distribution():
    result = placement_distribution(seed_snapshot(), ratio_digits=2)
    hosts = placement_next_hosts(result, 100)
    assert hosts.count("node01") == 15 and hosts.count("node02") == 85
    assert placement_next_hosts(result, 3, offset=97) == hosts[97:]
    assert placement_next_hosts(result, 0) == []


def test_unusable_hosts_are_skipped_with_a_reason():
    snap = snapshot({
        "ok": host(),
        "down": dict(host(), load_avg=None),
        "nomem": dict(host(), mem_total=None),
        "disabled": host(states="d"),
        "other": host(queues=("gpu.q",)),
        "alarm": host(),
    }, instance_states={"all.q@alarm": "a"})
    result = placement_distribution(snap, queue="all.q")
    assert result["distribution"] == {"ok": 1.0}
    assert result["skipped"]["down"].startswith("CPU load unknown")
    assert result["skipped"]["nomem"].startswith("memory unknown")
    assert result["skipped"]["disabled"] == "queue state d"
    assert result["skipped"]["alarm"] == "queue state a"
    assert result["skipped"]["other"] == "no instance of queue all.q"


def test_load_above_processors_is_full_cpu():
    result = placement_distribution(snapshot({"hot": host(load=5.0), "cool": host(load=0.0)}))
    assert result["nodes"]["hot"]["cpu_usage"] == 1.0
    assert "cpu limit" in result["excluded"]["hot"]
    assert result["distribution"] == {"cool": 1.0}


def test_plain_mapping_input():
    result = placement_distribution({"a": {"mem_free": 1, "mem_max": 2, "cpu_usage": 0.2}})
    assert result["distribution"] == {"a": 1.0}


@pytest.mark.parametrize("data, kwargs, message", [
    ("sge", {}, "the input must be the cluster snapshot"),
    (snapshot({"x": host(states="E")}), {}, "no usable host"),
    (snapshot({"x": host()}), {"queue": "none.q"}, "no usable host for queue none.q"),
    (snapshot({"x": host()}), {"memory_limit": 2}, "memory_limit: must be a number between 0 and 1"),
    ({"a": {"mem_free": 1, "mem_max": 2, "cpu_usage": 0.2}}, {"queue": "all.q"}, "queue applies"),
    ({"a": {"mem_free": 1}}, {}, "nodes.a.mem_max: missing"),
])
def test_distribution_errors(data, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        placement_distribution(data, **kwargs)


@pytest.mark.parametrize("data, count, message", [
    ({}, 1, "no node"),
    ({"a": 1}, -1, "count:"),
    ({"a": 1}, "3", "count:"),
])
def test_next_hosts_errors(data, count, message):
    with pytest.raises(AnsibleFilterError, match="placement_next_hosts: .*" + message):
        placement_next_hosts(data, count)
