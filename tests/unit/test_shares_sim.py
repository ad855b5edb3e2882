# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The share simulator (tests/unit/shares_sim.py): container, hierarchy,
fault tolerance, measurements; small runs of the paper's scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from ansible_collections.gridengine.balancer.tests.unit import shares_sim as sim


def test_container_is_work_conserving_and_honours_allocations():
    alloc = np.array([[60.0, 30.0, 10.0], [60.0, 30.0, 10.0], [60.0, 30.0, 10.0]])
    demand = np.array([[1e6, 1e6, 0.0], [20.0, 5.0, 1e6], [10.0, 10.0, 10.0]])
    use = sim.container_usage(alloc, demand)
    assert use[0] == pytest.approx([200 / 3, 100 / 3, 0.0])
    assert use[1] == pytest.approx([20.0, 5.0, 75.0])
    assert use[2] == pytest.approx([10.0, 10.0, 10.0])      # too little demand: capacity idles
    assert np.all(use <= demand + 1e-9)


def test_assignments():
    blocks = sim.Hierarchy(100, 10, "blocks")
    rr = sim.Hierarchy(100, 10, "round_robin")
    assert blocks.children(3).tolist() == list(range(30, 40))
    assert rr.children(3).tolist() == list(range(3, 100, 10))
    assert blocks.capacity().tolist() == [1000.0] * 10


def test_level1_manager_failure_is_replaced_by_its_lowest_node():
    h = sim.Hierarchy(100, 10, "blocks")
    h.kill(4, cycle=7)
    with pytest.raises(sim.SimError, match="no live path"):
        h.path_to_top(42)
    h.elect(4, cycle=9)
    assert h.l1_host[4] == 40
    assert h.path_to_top(42) == (("l1", 4), ("top", -1))
    # the new manager fails too: the next node takes over
    h.kill(4, cycle=11)
    h.elect(4, cycle=13)
    assert h.l1_host[4] == 41


def test_top_failure_peers_elect_one_which_designates_its_first_node():
    h = sim.Hierarchy(90, 30, "round_robin")
    h.kill(0, cycle=1)          # level-1 manager 0 is down too: it cannot be elected
    h.kill("top", cycle=2)
    assert h.elect("top", cycle=4) == ("top", 1)
    assert h.top_host == 1
    assert h.l1_host[1] == 1     # round robin: manager 1's first node is node 1
    assert ("designated level-1", (1, 1)) in [(e[1], e[2]) for e in h.events]


def test_recovery_cycles():
    desired = np.array([60.0, 30.0, 10.0])
    shares = np.tile(desired, (14, 1))
    shares[5:8] = [40.0, 45.0, 15.0]
    assert sim.recovery_cycles(shares, desired, 5) == 3
    shares[9] = [58.0, 32.0, 10.0]
    assert sim.recovery_cycles(shares, desired, 5) == 5
    assert sim.recovery_cycles(np.tile([0.0, 50.0, 50.0], (5, 1)), desired, 0) is None


@pytest.mark.parametrize("assignment", sim.ASSIGNMENTS)
def test_hundred_nodes_default_meets_the_goal(assignment):
    res = sim.simulate(sim.Scenario(nodes=100, fanout=10, class3_nodes=30, cycles=120,
                                    warmup=40, assignment=assignment))
    mean, std = res.stats()
    assert abs(mean - 10.0) <= 0.3 and std <= 0.3, (mean, std)
    # 100 node reports and 10 manager reports per cycle, 33 bytes each, and one byte of
    # "a node was needy" flags per manager report (default profile)
    assert res.message_bytes == 33
    assert res.bytes_per_cycle == pytest.approx(33 * 110 + 10)


@pytest.mark.parametrize("assignment", sim.ASSIGNMENTS)
def test_tight_demand_std_within_the_noise_floor(assignment):
    # the class-3 share no longer drifts: its std stays near what the workload imposes
    scn = dict(nodes=100, fanout=10, class3_nodes=30, demand="tight", assignment=assignment)
    res = sim.simulate(sim.Scenario(cycles=160, warmup=40, **scn))
    floor = sim.noise_floor(sim.Scenario(**scn), cycles=150)[0]
    assert res.stats()[1] <= 1.2 * floor, (res.stats(), floor)


def test_managers_reporting_five_times_less_often_send_fewer_bytes():
    res = sim.simulate(sim.Scenario(nodes=100, fanout=10, class3_nodes=30, cycles=100,
                                    warmup=40, manager_period=5))
    assert res.bytes_per_cycle == pytest.approx(33 * (100 + 10 / 5) + 10 / 5)
    assert abs(res.stats()[0] - 10.0) <= 0.5


def test_restart_recovers_within_two_cycles():
    res = sim.simulate(sim.Scenario(nodes=100, fanout=10, demand="steady", cycles=90,
                                    warmup=10, stops=[(0, 30, 35), (0, 60, 65)]))
    assert res.restarts == [35, 65]
    rec = res.recoveries()
    assert all(r is not None and r <= 2 for r in rec), rec
    # while class 1 is stopped the others take its capacity
    assert res.usage_share[33, 0] < 5.0


def test_manager_kills_are_survived():
    res = sim.simulate(sim.Scenario(nodes=100, fanout=10, class3_nodes=30, cycles=140,
                                    warmup=20, kill=[(50, 0), (90, "top")]))
    kinds = [e[1] for e in res.events]
    assert kinds == ["killed", "elected level-1", "killed", "elected top",
                     "designated level-1"]
    assert np.all(np.abs(res.usage_share[120:, 2] - 10.0) <= 1.0)


def test_skewed_reports_still_meet_the_share():
    res = sim.simulate(sim.Scenario(nodes=100, fanout=10, class3_nodes=30, cycles=120,
                                    warmup=40, skew=True))
    assert abs(res.stats()[0] - 10.0) <= 0.5


def test_paper_profile_four_nodes_reaches_about_ten_percent():
    res = sim.simulate(sim.Scenario(nodes=4, fanout=4, class3_nodes=1, cycles=60, warmup=20,
                                    profile="paper"))
    mean, _std = res.stats()
    assert 9.0 <= mean <= 11.0


def test_reserves_in_the_simulator_single_manager_only():
    res = sim.simulate(sim.Scenario(nodes=4, fanout=4, class3_nodes=1, cycles=20, warmup=5,
                                    algorithm="reserves", profile="paper"))
    assert 8.0 <= res.stats()[0] <= 11.0
    with pytest.raises(sim.SimError, match="single manager"):
        sim.Scenario(nodes=100, fanout=10, algorithm="reserves")


def test_noise_floor_shrinks_with_more_nodes():
    small = sim.noise_floor(sim.Scenario(nodes=100, class3_nodes=30, demand="tight"),
                            cycles=120)
    large = sim.noise_floor(sim.Scenario(nodes=400, fanout=20, class3_nodes=120,
                                         demand="tight"), cycles=120)
    assert small[1] == pytest.approx(10.0, abs=0.05)
    assert 0.0 < large[0] < small[0]


@pytest.mark.parametrize("field,value,needle", [
    ("demand", "bursty", "demand"), ("assignment", "random", "assignment"),
    ("algorithm", "lottery", "algorithm"), ("warmup", 500, "warmup"), ("nodes", 0, "nodes"),
    ("top_units", "bytes", "top_units"),
])
def test_bad_scenario(field, value, needle):
    with pytest.raises(sim.SimError, match=needle):
        sim.Scenario(**{field: value})
    with pytest.raises(sim.SimError, match="unknown"):
        sim.Scenario(colour="red")


def _paper_class3(**kw):
    scn = dict(nodes=100, fanout=10, class3_nodes=30, demand="steady", profile="paper",
               cycles=200, warmup=40)
    scn.update(kw)
    return sim.simulate(sim.Scenario(**scn)).stats()[0]


def test_paper_profile_readings_of_the_hierarchy():
    """docs/shares.md, "Two readings of the hierarchy" (figures of
    ``benchmarks/shares_experiments.py --readings``): a manager that the top sees in the same
    unit as its nodes (a node of 100 tickets) makes the contiguous hierarchy the flat manager after the warm-up
    (9.88 %, the independent literal model's steady figure); the project's reading (a child of
    100 x n tickets, floor and c in tickets) gives 10.54 % / 6.26 %, and it is the top's floor of
    1 ticket (its nodes keep 10) that lifts blocks, the top's c that sinks round-robin."""
    flat = _paper_class3(fanout=100)
    assert flat == pytest.approx(9.88, abs=0.01)
    assert _paper_class3(top_units="percent") == pytest.approx(flat, abs=0.01)
    assert _paper_class3() == pytest.approx(10.54, abs=0.01)
    assert _paper_class3(assignment="round_robin") == pytest.approx(6.26, abs=0.01)
    assert _paper_class3(top_floor=10.0) == pytest.approx(9.99, abs=0.01)
    assert _paper_class3(top_units="percent", assignment="round_robin") < 2.0
    # tickets with c and floor scaled to the manager's nodes is the percent reading
    assert _paper_class3(top_c=20.0, top_floor=10.0) == pytest.approx(
        _paper_class3(top_units="percent"), abs=1e-9)
