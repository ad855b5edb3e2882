# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bank algorithm (plugins/plugin_utils/policy/bank.py): the paper's 4-node example, each
step on hand-computed cases, the grouped (hierarchical) call, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank
from ansible_collections.gridengine.balancer.tests.unit.shares_sim import (
    container_usage,
)

D = np.array([60.0, 30.0, 10.0])


def four_node_run(profile, rounds=40):
    """The paper's Figure 3: 4 nodes, classes 1 and 2 everywhere, class 3 only on node 4,
    every class always wants more. Returns (usage shares per round, last allocation)."""
    alloc = bank.initial_allocation(D, np.full(4, 100.0))
    demand = np.full((4, 3), 1e6)
    demand[:3, 2] = 0.0
    shares = []
    outer = bank.OuterCorrection(D) if profile == "default" else None
    for _round in range(rounds):
        usage = container_usage(alloc, demand)
        shares.append(100.0 * usage.sum(axis=0) / usage.sum())
        target = outer.targets() if outer else D
        alloc, _acc, needy = bank.bank_round(alloc, usage, target, profile=profile)
        if outer:
            outer.update(usage.sum(axis=0), 400.0, needy.any(axis=0))
    return np.array(shares), alloc


def test_static_allocation_gives_class3_only_2_5_percent():
    alloc = bank.initial_allocation(D, np.full(4, 100.0))
    demand = np.full((4, 3), 1e6)
    demand[:3, 2] = 0.0
    usage = container_usage(alloc, demand)
    share = 100.0 * usage.sum(axis=0) / usage.sum()
    assert share[2] == pytest.approx(2.5)
    assert usage[0] == pytest.approx([100 * 60 / 90, 100 * 30 / 90, 0.0])


@pytest.mark.parametrize("profile,low,high", [("paper", 9.5, 10.5), ("default", 9.9, 10.1)])
def test_four_node_example(profile, low, high):
    shares, alloc = four_node_run(profile)
    mean = shares[10:, 2].mean()
    assert low <= mean <= high, mean
    # the ideal of Figure 3: class 3 holds about 40 tickets on node 4 and little elsewhere
    assert alloc[3, 2] > 35.0
    assert np.all(alloc[:3, 2] <= 1.0 + 1e-9)
    assert np.allclose(alloc.sum(axis=1), 100.0)


def test_step2_plus_minus_c_and_accounts():
    # 1 node, 2 classes, D 50/50. Class 1 used all its 50 (needy): 50 + 2 = 52, step 3 takes
    # the 2 over 50 back. Class 2 used 40 of 50: 40 - 2 = 38; it is 12 short but not needy,
    # so step 3 cannot add; step 4 deposits the 12 on top of step 1's 10 unused: account 22.
    # Step 5 finds no needy entry of class 2; step 6 scales (50, 38) to 100.
    new, acc, needy = bank.bank_round([[50.0, 50.0]], [[50.0, 40.0]], [50.0, 50.0],
                                      temporal="all", profile="paper")
    assert needy.tolist() == [[True, False]]
    assert new[0] == pytest.approx([100 * 50 / 88, 100 * 38 / 88])
    assert acc == pytest.approx([0.0, 22.0])


@pytest.mark.parametrize("temporal,kept", [("none", 0.0), ("all", 22.0), (0.25, 5.5)])
def test_temporal_compensation_keeps_none_all_or_a_fraction(temporal, kept):
    _new, acc, _n = bank.bank_round([[50.0, 50.0]], [[50.0, 40.0]], [50.0, 50.0],
                                    temporal=temporal, profile="paper")
    assert acc[1] == pytest.approx(kept)


def test_step5_rewards_positive_account_to_needy_nodes():
    # class 2 unused 20 tickets on node 1 (deposit 20) and is needy on node 2: the bank pays
    # the deposit there (spatial compensation)
    alloc = [[50.0, 50.0], [50.0, 50.0]]
    usage = [[70.0, 30.0], [50.0, 50.0]]
    new, acc, _n = bank.bank_round(alloc, usage, [50.0, 50.0], profile="paper")
    assert new[1, 1] > 50.0
    assert acc == pytest.approx([0.0, 0.0])


def test_default_profile_caps_compensation_at_entitlement():
    # class 3 held 90 tickets on node 1 while entitled to 10 there, and used none. The paper
    # deposits all 90 and pays them out on node 2 (55 of its 100 tickets); the default
    # deposits at most the entitlement (10) and rewards at most up to the class's target
    # (20 tickets over 2 nodes), keeping the rest in the account
    alloc = [[5.0, 5.0, 90.0], [60.0, 30.0, 10.0]]
    usage = [[50.0, 50.0, 0.0], [60.0, 30.0, 10.0]]
    new_p, acc_p, _n = bank.bank_round(alloc, usage, D, temporal="all", profile="paper")
    new_d, acc_d, _n = bank.bank_round(alloc, usage, D, temporal="all", profile="default")
    assert new_p[1, 2] > 50.0
    assert new_d[1, 2] == pytest.approx(20.0, abs=1.0)
    assert acc_p[2] == pytest.approx(0.0)
    assert acc_d[2] == pytest.approx(10.0)


def test_temporal_all_accumulates_over_rounds():
    alloc = np.array([[50.0, 50.0]])
    usage = np.array([[50.0, 40.0]])
    acc = None
    balances = []
    for _round in range(3):
        _new, acc, _n = bank.bank_round(alloc, usage, [50.0, 50.0], acc, temporal="all",
                                        profile="paper")
        balances.append(acc[1])
    assert balances[0] < balances[1] < balances[2]


def test_grouped_call_equals_separate_managers():
    rng = np.random.default_rng(3)
    alloc = rng.uniform(1, 60, (6, 3))
    alloc = 100 * alloc / alloc.sum(axis=1, keepdims=True)
    usage = alloc * rng.uniform(0.5, 1.3, (6, 3))
    group = np.array([0, 1, 0, 1, 1, 0])
    desired = np.array([[60.0, 30.0, 10.0], [20.0, 30.0, 50.0]])
    acc = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    for profile in bank.PROFILES:
        new, acc_out, _n = bank.bank_round(alloc, usage, desired, acc, group=group,
                                           temporal="all", profile=profile)
        for g in (0, 1):
            rows = group == g
            alone, acc_alone, _n = bank.bank_round(alloc[rows], usage[rows], desired[g],
                                                   acc[g], temporal="all", profile=profile)
            assert np.allclose(new[rows], alone)
            assert np.allclose(acc_out[g], acc_alone)


def test_capacity_of_a_manager_child():
    # a top manager with two level-1 managers of 10 and 30 nodes (1000 and 3000 tickets)
    cap = np.array([1000.0, 3000.0])
    alloc = bank.initial_allocation(D, cap)
    usage = alloc.copy()
    new, _acc, _n = bank.bank_round(alloc, usage, D, capacity=cap)
    assert np.allclose(new.sum(axis=1), cap)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.integers(min_value=2, max_value=5),
       st.integers(min_value=0, max_value=2 ** 31 - 1),
       st.sampled_from(["paper", "default"]))
def test_rows_always_sum_to_capacity_and_stay_non_negative(n, s, seed, profile):
    rng = np.random.default_rng(seed)
    alloc = rng.uniform(0, 1, (n, s))
    alloc = 100 * alloc / alloc.sum(axis=1, keepdims=True)
    usage = alloc * rng.uniform(0, 2, (n, s)) * (rng.random((n, s)) > 0.3)
    desired = rng.uniform(0.1, 1, s)
    desired = 100 * desired / desired.sum()
    new, acc, needy = bank.bank_round(alloc, usage, desired, profile=profile)
    assert new.shape == (n, s) and needy.shape == (n, s)
    assert np.all(new >= -1e-9)
    assert np.allclose(new.sum(axis=1), 100.0)
    assert np.allclose(acc, 0.0)


def test_message_size_is_the_papers():
    assert bank.message_size(3) == 33
    assert bank.message_size(8) == 73


@pytest.mark.parametrize("kwargs,needle", [
    (dict(desired=[50.0, 40.0]), "desired: percentages must sum to 100"),
    (dict(desired=[100.0]), "desired: expected 2 values"),
    (dict(usage=[[1.0, 2.0, 3.0]]), "usage: shape"),
    (dict(alloc=[1.0, 2.0], usage=[1.0, 2.0]), "alloc: expected an N x S matrix"),
    (dict(usage=[[-1.0, 2.0]]), "usage: values must be finite and >= 0"),
    (dict(temporal="some"), "temporal:"),
    (dict(temporal=1.5), "temporal:"),
    (dict(profile="fast"), "profile:"),
    (dict(capacity=[0.0]), "capacity:"),
    (dict(accounts=[1.0]), "accounts:"),
])
def test_bad_input_names_the_input(kwargs, needle):
    args = dict(alloc=[[50.0, 50.0]], usage=[[50.0, 50.0]], desired=[50.0, 50.0])
    args.update(kwargs)
    with pytest.raises(bank.BankError, match=needle.replace("(", r"\(")):
        bank.bank_round(**args)


def test_outer_correction_freezes_while_capacity_idles_or_a_class_lacks_demand():
    outer = bank.OuterCorrection(D)
    # capacity idles: 90 of 100 used
    assert not outer.update([54.0, 27.0, 9.0], 100.0, [True, True, True])
    # class 3 short and wants nothing more
    assert not outer.update([65.0, 30.0, 5.0], 100.0, [True, True, False])
    # a transient more than 2 points off
    assert not outer.update([50.0, 40.0, 10.0], 100.0, [True, True, True])
    assert np.allclose(outer.targets(), D)
    # a small steady bias is integrated: class 3 at 9.5 gets a higher target
    assert outer.update([60.25, 30.25, 9.5], 100.0, [True, True, True])
    assert outer.targets()[2] > 10.0
    assert outer.targets().sum() == pytest.approx(100.0)


def test_outer_correction_freezes_for_a_demand_limited_class():
    outer = bank.OuterCorrection(D)
    # class 3 at 9.5 %, needy somewhere, but it leaves 20 % of its allocation unused: a higher
    # target only adds tickets it cannot use, so the integrator stays put
    assert not outer.update([60.25, 30.25, 9.5], 100.0, [True, True, True],
                            [57.0, 31.0, 12.0])
    assert np.allclose(outer.targets(), D)
    # the same shares with class 3 using (almost) all it holds: integrated
    assert outer.update([60.25, 30.25, 9.5], 100.0, [True, True, True], [60.0, 30.3, 9.7])
    assert outer.targets()[2] > 10.0
    # a class above its share that leaves tickets unused does not freeze anything
    outer.reset()
    assert outer.update([59.5, 29.5, 11.0], 100.0, [True, True, True], [58.0, 29.0, 13.0])


def test_wants_marks_children_needy():
    # two managers (children of 100 tickets each); class 3 used less than it held on both, so
    # it is not needy by the aggregate rule and step 3 cannot give it its deficit ...
    alloc = np.array([[60.0, 30.0, 10.0], [60.0, 30.0, 10.0]])
    usage = np.array([[62.0, 31.0, 7.0], [62.0, 31.0, 7.0]])
    target = [55.0, 30.0, 15.0]
    plain, _acc, needy = bank.bank_round(alloc, usage, target)
    assert not needy[:, 2].any()
    # ... unless the level-1 managers say one of their nodes was needy for it
    wants = np.array([[False, False, True], [False, False, False]])
    new, _acc, needy = bank.bank_round(alloc, usage, target, wants=wants)
    assert needy[0, 2] and not needy[1, 2]
    assert new[0, 2] > plain[0, 2]
    assert np.allclose(new.sum(axis=1), 100.0)
    with pytest.raises(bank.BankError, match="wants"):
        bank.bank_round(alloc, usage, target, wants=[[True, False, True]])


def _snapshot(running, pending, hosts=("node001", "node002", "vm"), slots=2):
    return dict(
        hosts=dict((h, dict(slots_total=slots, states="")) for h in hosts),
        running=[dict(project=p, hosts={h: n}) for p, h, n in running],
        pending=[dict(project=p, held=False, error=False) for p in pending],
    )


def test_plan_slots_converges_to_the_share_with_every_slot_used():
    desired = {"alpha": 50.0, "beta": 30.0, "gamma": 20.0}
    # start: alpha holds everything, everyone has work waiting
    running = [("alpha", "node001", 2), ("alpha", "node002", 2), ("alpha", "vm", 2)]
    previous = None
    for _round in range(6):
        plan = bank.plan_slots(_snapshot(running, ["alpha", "beta", "gamma"]), desired,
                               previous)
        previous = plan["limits"]
        # the cluster fills every slot up to its limits (all projects have work waiting)
        running = [(r["project"], r["host"], r["slots"]) for r in previous if r["slots"]]
    totals = dict((p, sum(r["slots"] for r in previous if r["project"] == p)) for p in desired)
    assert sum(totals.values()) == 6
    for p, pct in desired.items():
        assert abs(totals[p] - 6 * pct / 100.0) <= 1.0, totals
    per_host = {}
    for r in previous:
        per_host[r["host"]] = per_host.get(r["host"], 0) + r["slots"]
    assert set(per_host.values()) == {2}


def test_plan_slots_gives_idle_projects_slots_to_waiting_ones():
    desired = {"alpha": 50.0, "beta": 30.0, "gamma": 20.0}
    plan = bank.plan_slots(_snapshot([("alpha", "vm", 1)], ["alpha"]), desired)
    totals = dict((p, sum(r["slots"] for r in plan["limits"] if r["project"] == p))
                  for p in desired)
    assert totals == {"alpha": 6, "beta": 0, "gamma": 0}
    assert plan["waiting"] == ["alpha"]


def test_plan_slots_bad_input():
    with pytest.raises(bank.BankError, match="no execution host"):
        bank.plan_slots(dict(hosts={}), {"a": 100.0})
    with pytest.raises(bank.BankError, match="desired"):
        bank.plan_slots(_snapshot([], []), {"a": 50.0, "b": 40.0})
