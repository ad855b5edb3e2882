# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bank.plan_slots on the real path's options (issue 23 item 2): temporal compensation with
kept accounts, cluster reserves as the allocation step, host-group managers under a top
manager with fail-over. A fake cluster fills every project up to its limits where it has
work; the snapshots have the shape of sge_queue_facts' (docs/snapshot.md)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import numpy as np
import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank

HOSTS = ("n1", "n2", "n3", "n4")
HG = {"@a": ["n1", "n2"], "@b": ["n3", "n4"]}
D3 = {"alpha": 60.0, "beta": 30.0, "gamma": 10.0}


def snapshot(running, pending, hosts=HOSTS, slots=10, states=None):
    """``running``: {(host, project): slots}; ``pending``: [(project, [-q requests])]."""
    states = states or {}
    return dict(
        taken_at=1000.0,
        hosts=dict((h, dict(slots_total=slots, states=states.get(h, ""), queues=["all.q"]))
                   for h in hosts),
        running=[dict(project=p, hosts={h: n}) for (h, p), n in sorted(running.items()) if n],
        pending=[dict(project=p, hard_queues=q, held=False, error=False) for p, q in pending],
    )


def fill(limits, allowed):
    """The cluster runs every project up to its limit wherever ``allowed(host, project)``."""
    return dict(((r["host"], r["project"]), r["slots"]) for r in limits or []
                if r["slots"] and allowed(r["host"], r["project"]))


def totals(limits, allowed=lambda h, p: True):
    out = {}
    for r in limits:
        if allowed(r["host"], r["project"]):
            out[r["project"]] = out.get(r["project"], 0) + r["slots"]
    return out


def gamma_in_a(host, project):
    return project != "gamma" or host in HG["@a"]


PENDING3 = [("alpha", []), ("beta", []), ("gamma", ["all.q@@a"])]


def run_rounds(n, prev=None, hosts=HOSTS, states=None, **kw):
    plan = None
    for _round in range(n):
        live = [h for h in hosts if not (states or {}).get(h)]
        snap = snapshot(fill(prev, gamma_in_a), PENDING3, hosts=live, states=None)
        plan = bank.plan_slots(snap, D3, prev, **kw)
        prev = plan["limits"]
    return plan


# ---------------------------------------------------------------------------------------------
# hierarchy
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["default", "paper"])
def test_hostgroup_managers_place_a_class_where_its_work_is(profile):
    # the paper's Figure 3 on host groups: gamma's jobs may run only in @a (-q all.q@@a); the
    # top gives @a more gamma, @a's manager puts it on its hosts, gamma gets its 10 % of 40 slots
    plan = run_rounds(12, hostgroups=HG, profile=profile)
    run = totals(plan["limits"], gamma_in_a)
    assert run["gamma"] == 4
    assert sum(run.values()) == 40
    assert plan["groups"]["@a"]["percent"]["gamma"] > 15.0
    assert plan["groups"]["@b"]["limits"]["gamma"] == 0
    assert plan["failed_groups"] == []
    assert set(plan["group_accounts"]) == {"@a", "@b"}


def test_hostgroup_failover_and_return():
    plan = run_rounds(8, hostgroups=HG)
    prev = plan["limits"]
    # every host of @b vanished (execd gone: state u, left out of the round)
    gone = dict((h, "u") for h in HG["@b"])
    snap = snapshot(fill(prev, gamma_in_a), PENDING3)
    for h in HG["@b"]:
        snap["hosts"][h]["states"] = "au"
    plan = bank.plan_slots(snap, D3, prev, hostgroups=HG)
    assert plan["failed_groups"] == ["@b"]
    assert set(plan["groups"]) == {"@a"}
    assert set(r["host"] for r in plan["limits"]) == set(HG["@a"])
    # the top gave @b's share to @a: @a now holds the whole cluster's 60/30/10
    assert plan["groups"]["@a"]["percent"] == pytest.approx(D3, abs=1e-6) or \
        sum(plan["groups"]["@a"]["limits"].values()) == 20
    plan = run_rounds(6, plan["limits"], hosts=HG["@a"], hostgroups=HG)
    assert totals(plan["limits"]) == {"alpha": 12, "beta": 6, "gamma": 2}
    assert gone
    # @b returns: the top divides the cluster among both groups again
    plan = run_rounds(10, plan["limits"], hostgroups=HG)
    assert plan["failed_groups"] == []
    assert set(plan["groups"]) == {"@a", "@b"}
    run = totals(plan["limits"], gamma_in_a)
    assert run["gamma"] == 4 and sum(run.values()) == 40


def test_hosts_outside_the_groups_form_one_more_manager():
    plan = run_rounds(3, hostgroups={"@a": ["n1", "n2"]})
    assert set(plan["groups"]) == {"@a", bank.OTHER_GROUP}
    assert plan["groups"][bank.OTHER_GROUP]["hosts"] == ["n3", "n4"]


def test_hostgroups_must_not_overlap_and_all_failed_is_an_error():
    with pytest.raises(bank.BankError, match="n2"):
        bank.plan_slots(snapshot({}, PENDING3), D3, hostgroups={"@a": ["n1", "n2"], "@b": ["n2"]})
    with pytest.raises(bank.BankError, match="every manager failed"):
        bank.plan_slots(snapshot({}, PENDING3, hosts=()), D3, hostgroups=HG)


def test_pending_job_counts_only_where_its_queue_request_allows():
    snap = snapshot({}, [("alpha", ["all.q@n1"]), ("beta", ["other.q"])])
    plan = bank.plan_slots(snap, {"alpha": 50.0, "beta": 50.0})
    assert plan["waiting"] == ["alpha"]
    # alpha waits only on n1: the idle beta slots go to alpha there, nowhere else
    per = dict(((r["host"], r["project"]), r["slots"]) for r in plan["limits"])
    assert per[("n1", "alpha")] == 10 and per[("n2", "alpha")] == 5


# ---------------------------------------------------------------------------------------------
# temporal compensation
# ---------------------------------------------------------------------------------------------

def _absence(temporal, retain=1.0):
    """beta has no work in rounds 3-7 and comes back; returns beta's slots per round."""
    d = {"alpha": 50.0, "beta": 50.0}
    prev, acc, out = None, None, []
    for r in range(14):
        beta = r < 3 or r >= 8
        snap = snapshot(fill(prev, lambda h, p: p == "alpha" or beta),
                        [("alpha", [])] + ([("beta", [])] if beta else []), hosts=("n1", "n2"))
        plan = bank.plan_slots(snap, d, prev, accounts=acc, temporal=temporal, retain=retain)
        prev, acc = plan["limits"], plan["accounts"]
        out.append((totals(prev).get("beta", 0), acc[1]))
    return out


def test_temporal_compensation_pays_back_after_an_absence():
    none = _absence("none")
    comp = _absence("compensate")
    assert all(a == 0.0 for _s, a in none)
    assert max(s for s, _a in none[8:]) == 10            # never above its share
    # the account filled while beta left its share to alpha (capped at one round's
    # entitlement: 50 % of 2 hosts x 100 tickets), then paid beta above its share
    assert comp[7][1] == pytest.approx(100.0)
    assert max(s for s, _a in comp[8:]) > 10
    assert comp[-1] == (10, pytest.approx(0.0, abs=1e-6))


def test_temporal_retain_forgets_geometrically():
    part = _absence("compensate", retain=0.25)
    full = _absence("compensate", retain=1.0)
    # both deposit alike; a quarter of it is kept, and the balance stays below the cap
    assert 0 < part[3][1] < full[3][1]
    assert 0 < part[7][1] < full[7][1]


def test_measured_usage_replaces_the_snapshot():
    snap = snapshot({("n1", "alpha"): 10}, [], hosts=("n1",))
    plan = bank.plan_slots(snap, {"alpha": 50.0, "beta": 50.0}, usage={"beta": {"n1": 4.0}})
    assert plan["usage"] == {"alpha": 0.0, "beta": 4.0}


def test_accounts_by_manager_name():
    snap = snapshot({}, [("alpha", []), ("beta", [])], hosts=("n1",))
    plan = bank.plan_slots(snap, {"alpha": 50.0, "beta": 50.0},
                           accounts={"cluster": {"beta": 30.0}}, temporal="compensate")
    assert plan["percent"]["n1"]["beta"] > 50.0
    with pytest.raises(bank.BankError, match="accounts"):
        bank.plan_slots(snap, {"alpha": 50.0, "beta": 50.0},
                        accounts={"cluster": {"beta": "lots"}}, temporal="compensate")


# ---------------------------------------------------------------------------------------------
# cluster reserves as the allocation step
# ---------------------------------------------------------------------------------------------

def test_reserves_allocation_fills_every_slot_near_the_shares():
    prev = None
    d = {"alpha": 50.0, "beta": 30.0, "gamma": 20.0}
    pending = [("alpha", []), ("beta", []), ("gamma", [])]
    for _round in range(4):
        plan = bank.plan_slots(snapshot(fill(prev, lambda h, p: True), pending, hosts=("n1", "n2")),
                               d, prev, allocation="reserves")
        prev = plan["limits"]
    got = totals(prev)
    assert sum(got.values()) == 20
    for p, pct in d.items():
        assert abs(got[p] - 20 * pct / 100.0) <= 1.0, got
    assert plan["accounts"] == [0.0, 0.0, 0.0]


def test_reserves_with_hostgroups_and_its_limits():
    plan = run_rounds(6, hostgroups=HG, allocation="reserves")
    run = totals(plan["limits"], gamma_in_a)
    assert sum(run.values()) == 40
    assert run["gamma"] >= 3
    with pytest.raises(bank.BankError, match="temporal=compensate needs allocation=bank"):
        bank.plan_slots(snapshot({}, PENDING3), D3, allocation="reserves", temporal="compensate")
    with pytest.raises(bank.BankError, match="allocation"):
        bank.plan_slots(snapshot({}, PENDING3), D3, allocation="lottery")
    with pytest.raises(bank.BankError, match="retain"):
        bank.plan_slots(snapshot({}, PENDING3), D3, temporal="compensate", retain=2)


# ---------------------------------------------------------------------------------------------
# the paper profile: which reading of the hierarchy (docs/shares.md, "Two readings")
# ---------------------------------------------------------------------------------------------

class _ManagerAsPercentNode(object):
    """The other reading: at the top, a level-1 manager is a node of 100 tickets (its
    allocation and usage in percent of the manager; ``c`` and the floor in those percent)."""

    def __getattr__(self, name):
        return getattr(bank, name)

    @staticmethod
    def bank_round(alloc, usage, desired, accounts=None, capacity=None, **kw):
        if capacity is None or kw.get("group") is not None:
            return bank.bank_round(alloc, usage, desired, accounts, capacity=capacity, **kw)
        k = np.asarray(capacity, dtype=float)[:, None] / 100.0
        new, acc, needy = bank.bank_round(np.asarray(alloc) / k, np.asarray(usage) / k, desired,
                                          accounts, **kw)
        return new * k, acc, needy


def _class3(fanout, monkeypatch=None, reading=None):
    from ansible_collections.gridengine.balancer.tests.unit import shares_sim as sim
    if reading is not None:
        monkeypatch.setattr(sim, "bankmod", reading)
    scn = sim.Scenario(nodes=100, fanout=fanout, class3_nodes=30, demand="steady",
                       assignment="blocks", profile="paper", cycles=200, warmup=40)
    return float(sim.simulate(scn).usage_share[40:, 2].mean())


def test_paper_profile_two_readings_of_the_hierarchy(monkeypatch):
    # one manager: 9.88 %; the project's hierarchy (a manager is one node of 100 x n tickets,
    # both levels compensate): 10.54 %; a manager as a node of 100 tickets: 9.88 %, the
    # independent literal model's figure with contiguous managers
    assert _class3(100) == pytest.approx(9.88, abs=0.01)
    assert _class3(10) == pytest.approx(10.54, abs=0.01)
    assert _class3(10, monkeypatch, _ManagerAsPercentNode()) == pytest.approx(9.88, abs=0.01)
