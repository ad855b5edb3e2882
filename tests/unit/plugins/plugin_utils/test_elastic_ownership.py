# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts the balancer owns and hosts it must never touch (docs/elastic.md#hosts-the-balancer-owns).

On a cluster someone else built, execution hosts the balancer did not launch (on-premises nodes,
a login node that runs an execd, GPU boxes) are never removed, in any profile, unless the site
names them in ``managed_hosts``; ``protected_hosts`` wins over everything.
"""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

T0 = 1700000000.0


def host(jobs=0, unknown=False):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": None if unknown else 0.05, "mem_total": 2 << 30,
            "mem_used": 0, "slots_total": 2, "slots_used": 2 if jobs else 0, "slots_reserved": 0,
            "states": "au" if unknown else "", "queues": ["all.q"], "running_jobs": jobs}


def snap(names, now, pending=(), unknown=()):
    hosts = {name: host(unknown=name in unknown) for name in names}
    queues = [{"name": "all.q@" + n, "queue": "all.q", "host": n, "qtype": "BIP", "slots_total": 2,
               "slots_used": h["slots_used"], "slots_reserved": 0, "load_avg": h["load_avg"],
               "states": h["states"]} for n, h in sorted(hosts.items())]
    return {"schema": 1, "taken_at": now, "flavour": "SoGE 8.1", "cell": "default", "hosts": hosts,
            "queues": queues, "pending": list(pending), "running": []}


def qw(job_id, age, now, slots=1):
    return {"id": job_id, "name": "j", "owner": "u", "project": None, "state": "qw", "priority": 0.5,
            "submit_time": now - age, "tasks": None, "task_count": 1, "slots": slots, "pe": None,
            "pe_range": None, "hard_requests": {}, "hard_queues": [], "held": False, "error": False}


def reasons(plan):
    return "\n".join(item["reason"] for item in plan["items"])


BASE = {"master": "master", "max_nodes": 6, "min_nodes": 1, "job_wait_time": 0, "stabilization_time": 0,
        "idle_time": 600, "interval": 60}


def run_polls(first_names, polls, config, grow_as=()):
    """Poll every minute for ``polls`` minutes; hosts named in ``grow_as`` appear (one per poll) once a
    plan asked for nodes. Returns the last plan and every host ever removed."""
    names = list(first_names)
    state, removed, plan = {}, [], None
    to_launch = list(grow_as)
    requested = 0
    for minute in range(polls):
        now = T0 + 60 * minute
        if requested and to_launch:
            names.append(to_launch.pop(0))
            requested -= 1
        pending = [qw(1, 120, now)] if minute < 3 else []
        plan = elastic.decide(snap(names, now, pending=pending), state, dict(BASE, **config), now)
        state = plan["state"]
        requested += plan["add"]
        for name in plan["remove"]:
            removed.append(name)
            names.remove(name)
    return plan, removed


@pytest.mark.parametrize("profile", ["default", "parallelcluster", "starcluster"])
def test_hosts_present_at_the_first_poll_are_the_sites(profile):
    config = {"profile": profile}
    if profile == "starcluster":
        config.update(job_wait_time=0, stabilization_time=300, kill_after=0)
    plan, removed = run_polls(["master", "gpu01", "login01"], 60, config)
    assert removed == []
    text = reasons(plan)
    assert "keep gpu01: static host, not launched by the balancer" in text
    assert "keep login01: static host, not launched by the balancer" in text


def test_a_host_that_fills_a_requested_node_is_the_balancers_and_goes_when_idle():
    plan, removed = run_polls(["master", "gpu01"], 40, {}, grow_as=["node001"])
    assert removed == ["node001"]
    assert "keep gpu01: static host, not launched by the balancer" in reasons(plan)


def test_the_providers_list_decides_when_given():
    # node001 appeared while a node was requested, but the provider does not list it: not ours
    plan, removed = run_polls(["master", "gpu01"], 40, {"launched_hosts": []}, grow_as=["node001"])
    assert removed == []
    # the provider lists gpu01 (a node it launched before the state was lost): it goes when idle
    plan, removed = run_polls(["master", "gpu01"], 40, {"launched_hosts": ["GPU01"]})
    assert removed == ["gpu01"]


def test_managed_hosts_patterns_bring_the_seeds_behaviour_back():
    plan, removed = run_polls(["master", "gpu01", "cn-7"], 40, {"managed_hosts": ["cn-*"]})
    assert removed == ["cn-7"]
    plan, removed = run_polls(["master", "gpu01", "cn-7"], 40,
                              {"profile": "starcluster", "managed_hosts": ["*"], "stabilization_time": 300,
                               "kill_after": 0})
    assert sorted(removed) == ["cn-7", "gpu01"]


def test_protected_hosts_win_over_everything():
    config = {"managed_hosts": ["*"], "protected_hosts": ["gpu*"], "launched_hosts": ["gpu01", "node001"],
              "unknown_timeout": 60}
    plan, removed = run_polls(["master", "gpu01", "node001"], 40, config)
    assert removed == ["node001"]
    assert "keep gpu01: protected host (protected_hosts: gpu*)" in reasons(plan)
    # nor is a protected host removed for being unknown
    state = {}
    for minute in range(5):
        now = T0 + 60 * minute
        plan = elastic.decide(snap(["master", "gpu01", "node001"], now, unknown=["gpu01"]), state,
                              dict(BASE, **config), now)
        state = plan["state"]
        assert "gpu01" not in plan["remove"]


def test_kill_cluster_waits_for_the_sites_hosts():
    # StarCluster's -K kills the cluster once only the master is left: a static host keeps it alive
    plan, removed = run_polls(["master", "gpu01"], 40, {"kill_cluster": True})
    assert plan["kill_cluster"] is False and removed == []


def test_static_hosts_count_as_nodes_for_the_limits():
    now = T0
    plan = elastic.decide(snap(["master", "gpu01", "gpu02"], now, pending=[qw(1, 600, now, slots=1)] * 8),
                          {}, dict(BASE, max_nodes=4, add_nodes_per_iter=5), now)
    assert plan["add"] == 1  # 3 up (master + 2 static) of max_nodes 4


def test_old_states_without_the_flag_load_and_a_bad_list_is_refused():
    record = {"first_seen": T0 - 7200, "joined": T0 - 7200, "last_busy": T0 - 7000, "launched": "yes"}
    state = {"schema": 1, "last_poll": T0 - 60, "nodes": {"node001": record}}
    plan = elastic.decide(snap(["master", "node001"], T0), state, BASE, T0)
    assert plan["remove"] == []  # "yes" is not True: not taken as launched
    plan = elastic.decide(snap(["master", "node001"], T0), state, dict(BASE, launched_hosts=["node001"]), T0)
    assert plan["remove"] == ["node001"]
    for bad in ("node*", [""], [3], {"a": 1}):
        with pytest.raises(ValueError, match="^managed_hosts: must be a list of host names or patterns"):
            elastic.validate_config({"managed_hosts": bad})
    with pytest.raises(ValueError, match="^launched_hosts: must be a list of host names"):
        elastic.validate_config({"launched_hosts": "node001"})


# ------------------------------------------------------------------------------------------
# Rule: no profile removes an idle node while a job that a new node could help waits
# ------------------------------------------------------------------------------------------

def _pe_job(now, pe):
    job = qw(42, 2000, now, slots=16)
    job["pe"], job["pe_range"] = (pe, "16") if pe else (None, None)
    return job


@pytest.mark.parametrize("pe", ["orte", None], ids=["pe-named", "pe-not-listed"])
@pytest.mark.parametrize("profile", ["default", "parallelcluster", "starcluster"])
def test_idle_nodes_stay_while_a_parallel_job_waits(profile, pe):
    """Issue 19's reproduction: two idle 4-slot nodes, one pending 16-slot job (its PE named, as
    qstat -r lists it, or not, as plain qstat does: a job with several slots is a PE job), polled
    twice 700 s apart. Before the fix the default and parallelcluster profiles removed both."""
    config = dict(BASE, profile=profile, launched_hosts=["node001", "node002"], slots_per_node=4)
    if profile == "starcluster":
        config.update(stabilization_time=300, kill_after=0)
    state = {}
    for now in (T0, T0 + 700):
        s = snap(["master", "node001", "node002"], now, pending=[_pe_job(now, pe)])
        for name in ("node001", "node002"):
            s["hosts"][name].update(slots_total=4, num_proc=4)
        plan = elastic.decide(s, state, config, now)
        state = plan["state"]
        assert plan["remove"] == [], reasons(plan)
        assert "ignored for growth" not in reasons(plan)
