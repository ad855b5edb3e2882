# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nodes in unknown state (``unknown_timeout``, docs/elastic.md#unknown-nodes).

A worker whose execd the qmaster no longer hears from (load ``-``, queue state ``u``) is kept while
anything is listed on it, and removed once it has been unknown for ``unknown_timeout`` with nothing
on it, unless most workers are unknown at once. The host records follow ``qhost -xml`` /
``qstat -f`` as ``sge_queue_facts`` returns them (an unknown host has ``load_avg`` None and ``u``
in its queue states, as ip-10-0-0-116 in AWS ParallelCluster's capture used by the last test).
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import build_snapshot
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "sge")

T0 = 1700000000.0
CFG = {"master": "master", "min_nodes": 1, "max_nodes": 6, "job_wait_time": 0, "stabilization_time": 300,
       "idle_time": 600, "interval": 60, "add_nodes_per_iter": 1, "managed_hosts": ["node*"]}


def host(jobs=0, unknown=False):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": None if unknown else 0.05, "mem_total": 2 << 30,
            "mem_used": 0, "slots_total": 2, "slots_used": 2 * bool(jobs), "slots_reserved": 0,
            "states": "au" if unknown else "", "queues": ["all.q"], "running_jobs": jobs}


def snap(now, busy=(), unknown=(), idle=(), waiting=0):
    """Worker hosts: ``busy`` run a job, ``unknown`` are unknown (a name in both: unknown with a job),
    ``idle`` run nothing; the master runs nothing."""
    hosts = {"master": host()}
    for name in idle:
        hosts[name] = host()
    for name in busy:
        hosts[name] = host(1, unknown=name in unknown)
    for name in unknown:
        hosts.setdefault(name, host(0, unknown=True))
    running = [{"id": 100 + i, "task": None, "name": "r", "owner": "tester", "project": None, "state": "r",
                "queue": "all.q", "host": name, "hosts": {name: 2}, "slots": 2, "start_time": now - 300}
               for i, name in enumerate(sorted(busy))]
    pending = [{"id": 500 + i, "name": "w", "owner": "tester", "project": None, "state": "qw", "priority": 0.5,
                "submit_time": now - 30, "tasks": None, "task_count": 1, "slots": 1, "pe": None,
                "pe_range": None, "hard_requests": {}, "hard_queues": [], "held": False, "error": False}
               for i in range(waiting)]
    return {"schema": 1, "taken_at": now, "flavour": "SoGE 8.1", "cell": "default", "hosts": hosts,
            "queues": [], "pending": pending, "running": running}


def polls(steps, **config):
    """Run ``decide`` over ``steps`` = [(seconds after T0, snapshot keyword arguments)]; return the plans."""
    cfg = dict(CFG, **config)
    state, plans = {}, []
    for offset, kwargs in steps:
        now = T0 + offset
        plan = elastic.decide(snap(now, **kwargs), state, cfg, now)
        state = plan["state"]
        plans.append(plan)
    return plans


def reason(plan, name):
    return [i["reason"] for i in plan["items"] if i.get("host") == name][0]


def every_minute(minutes, **kwargs):
    return [(60 * m, kwargs) for m in range(minutes + 1)]


def test_an_idle_unknown_node_is_removed_after_unknown_timeout():
    plans = polls(every_minute(15, busy=["node001"], unknown=["node002"]))
    for plan in plans[:-1]:
        assert plan["remove"] == [], plan["items"]
        assert "removed once unknown for unknown_timeout 15m" in reason(plan, "node002")
    last = plans[-1]
    assert last["remove"] == ["node002"]
    assert reason(last, "node002") == ("remove node002: state unknown for 15m >= unknown_timeout 15m (load -, "
                                       "states 'au'), no job listed on it")
    assert any(w.startswith("node002: state unknown for 15m") and "the plan removes it" in w for w in last["warnings"])
    assert last["state"]["unknown"] == {"node002": T0}


def test_the_default_is_15_minutes_and_0_never_removes():
    assert elastic.default_config()["unknown_timeout"] == 900
    plans = polls(every_minute(40, unknown=["node002"], idle=["node001"]), unknown_timeout=0, idle_time=7200)
    assert all(p["remove"] == [] for p in plans)
    assert reason(plans[-1], "node002") == "keep node002: state unknown (load -, states 'au'): its idleness cannot be known"


def test_a_node_with_a_job_listed_is_never_removed_for_being_unknown():
    plans = polls(every_minute(60, busy=["node002"], unknown=["node002"]), unknown_timeout=60)
    assert all(p["remove"] == [] for p in plans)
    assert reason(plans[-1], "node002") == "keep node002: running 1 job"
    assert any("with 1 job listed on it; kept, never removed" in w for w in plans[-1]["warnings"])
    # the admin's qdel -f ends the listing; the node has been unknown for an hour: removed at once
    after = polls(every_minute(60, busy=["node002"], unknown=["node002"]) + [(3660, {"unknown": ["node002"]})],
                  unknown_timeout=60)
    assert after[-1]["remove"] == ["node002"]


def test_used_or_reserved_slots_keep_an_unknown_node():
    state = {}
    for minute in range(30):
        now = T0 + 60 * minute
        s = snap(now, unknown=["node002"])
        s["hosts"]["node002"]["slots_reserved"] = 1
        plan = elastic.decide(s, state, dict(CFG, unknown_timeout=60), now)
        state = plan["state"]
        assert plan["remove"] == []
    assert reason(plan, "node002") == "keep node002: 1 slot reserved"


def test_the_clock_restarts_when_the_node_is_known_again():
    steps = every_minute(10, unknown=["node002"], busy=["node001"])
    steps += [(660, {"busy": ["node001", "node002"]})]                      # known (and busy) again
    steps += [(720 + 60 * m, {"unknown": ["node002"], "busy": ["node001"]}) for m in range(15)]
    plans = polls(steps)
    assert all(p["remove"] == [] for p in plans)
    assert "(14m so far)" in reason(plans[-1], "node002")
    assert plans[-1]["state"]["unknown"] == {"node002": T0 + 720}
    assert "unknown" not in plans[10 + 1]["state"]  # no host unknown: the key is left out


def test_a_gap_between_polls_restarts_the_clock():
    # two polls 20 minutes apart (interval 60 s): the node may have been back in between
    plans = polls([(0, {"unknown": ["node002"]}), (1200, {"unknown": ["node002"]}),
                   (1260, {"unknown": ["node002"]})])
    assert all(p["remove"] == [] for p in plans)
    assert plans[-1]["state"]["unknown"] == {"node002": T0 + 1200}
    assert "(1m so far)" in reason(plans[-1], "node002")


def test_a_clock_from_the_future_counts_as_now():
    state = polls([(0, {"unknown": ["node002"]})])[0]["state"]
    state["unknown"]["node002"] = T0 + 86400
    plan = elastic.decide(snap(T0 + 60, unknown=["node002"]), state, CFG, T0 + 60)
    assert plan["remove"] == [] and plan["state"]["unknown"] == {"node002": T0 + 60}


@pytest.mark.parametrize("unknown, workers, removed", [
    (["node001"], ["node001"], ["node001"]),                                 # 1 of 1: one dead node
    (["node001"], ["node001", "node002"], ["node001"]),                      # 1 of 2
    (["node001", "node002"], ["node001", "node002", "node003", "node004"], ["node001", "node002"]),  # 2 of 4
    (["node001", "node002"], ["node001", "node002", "node003"], []),         # 2 of 3: the qmaster's fault
    (["node001", "node002"], ["node001", "node002"], []),                    # 2 of 2
])
def test_most_nodes_unknown_at_once_removes_none(unknown, workers, removed):
    idle = [w for w in workers if w not in unknown]
    plans = polls(every_minute(16, unknown=unknown, busy=idle))
    assert plans[-1]["remove"] == removed, plans[-1]["items"]
    if not removed:
        assert any("worker nodes unknown at once: a qmaster or network fault" in w for w in plans[-1]["warnings"])
        assert all("but %d of %d worker nodes unknown at once" % (len(unknown), len(workers)) in reason(plans[-1], n)
                   for n in unknown)


def test_the_removal_is_not_held_by_waiting_jobs_min_nodes_or_stabilization():
    # 4 nodes up = min_nodes; jobs wait and a node is being added: an idle node would be kept
    steps = every_minute(14, unknown=["node002"], busy=["node001"], idle=["node003"])
    steps.append((900, {"unknown": ["node002"], "busy": ["node001"], "idle": ["node003"], "waiting": 3}))
    cfg = {"min_nodes": 4, "idle_time": 0}
    last = polls(steps, **cfg)[-1]
    assert last["remove"] == ["node002"] and last["add"] == 1, last["items"]
    assert reason(last, "node003") == "keep node003: idle 15m > idle_time 0s, but 3 jobs waiting"
    # the cluster just changed (stabilization 5 min): an idle node is held, the unknown one is not
    steps = every_minute(14, unknown=["node002"], idle=["node003"])
    steps[-1] = (840, {"unknown": ["node002"], "idle": ["node003", "node004"]})  # node004 joined now
    steps.append((900, {"unknown": ["node002"], "idle": ["node003", "node004"]}))
    last = polls(steps, idle_time=0)[-1]
    assert last["remove"] == ["node002"], last["items"]
    assert "but on hold (cluster changed 1m ago" in reason(last, "node003")


def test_the_floor_replaces_a_removed_unknown_node():
    steps = every_minute(15, unknown=["node002"], busy=["node001"])
    last = polls(steps, min_nodes=3)[-1]
    assert last["remove"] == ["node002"] and last["add"] == 0
    after = elastic.decide(snap(T0 + 960, busy=["node001"]), last["state"], dict(CFG, min_nodes=3), T0 + 960)
    assert after["add"] == 1, after["items"]
    assert "unknown" not in after["state"]


def test_the_master_is_never_removed_for_being_unknown():
    state = {}
    for minute in range(20):
        now = T0 + 60 * minute
        s = snap(now, idle=["node001"])
        s["hosts"]["master"] = host(unknown=True)
        plan = elastic.decide(s, state, dict(CFG, idle_time=7200), now)
        state = plan["state"]
    assert plan["remove"] == []
    assert reason(plan, "master").startswith("keep master: master")


def test_profile_starcluster_treats_unknown_as_idle_as_before():
    plans = polls(every_minute(2, unknown=["node002"]), profile="starcluster", kill_after=0, billing=None,
                  stabilization_time=0)
    assert plans[-1]["remove"] == ["node002"]
    assert any("profile starcluster treats it as idle" in w for w in plans[-1]["warnings"])


def test_an_old_state_without_the_key_starts_every_clock_now():
    state = polls(every_minute(20, unknown=["node002"]))[-2]["state"]
    del state["unknown"]
    plan = elastic.decide(snap(T0 + 1260, unknown=["node002"]), state, CFG, T0 + 1260)
    assert plan["remove"] == [] and plan["state"]["unknown"] == {"node002": T0 + 1260}


def test_an_unreadable_time_warns_and_restarts_the_clock():
    state = polls(every_minute(20, unknown=["node002"]))[-2]["state"]
    state["unknown"]["node002"] = "yesterday"
    plan = elastic.decide(snap(T0 + 1260, unknown=["node002"]), state, CFG, T0 + 1260)
    assert plan["remove"] == []
    assert "state: unknown node node002 has no readable time; its unknown clock starts again" in plan["warnings"]


@pytest.mark.parametrize("bad", [-1, "15m", True, float("nan")])
def test_unknown_timeout_must_be_seconds(bad):
    with pytest.raises(ValueError) as err:
        elastic.validate_config({"unknown_timeout": bad})
    assert str(err.value).startswith("unknown_timeout: must be a number of seconds >= 0")


def test_a_real_capture_with_an_unknown_host():
    """AWS ParallelCluster's capture of a SoGE 8.1 cluster (tests/unit/fixtures/sge/PROVENANCE.md):
    ip-10-0-0-116 is in state au with load -, ip-10-0-0-52 disabled and idle, ip-10-0-0-166 busy,
    jobs waiting. Polled every minute, the unknown host goes after 15 minutes although a job waits;
    the idle, disabled one stays because it waits."""
    def read(name):
        with open(os.path.join(FIXTURES, name), "rb") as handle:
            return handle.read()

    qstat = read("aws-parallelcluster-node/test_get_compute_nodes_info__qstat_output_mix.xml")
    qhost = read("handmade/qhost_q_soge819.xml")
    h116, h52 = "ip-10-0-0-116.eu-west-1.compute.internal", "ip-10-0-0-52.eu-west-1.compute.internal"
    # the compute nodes ParallelCluster launched (its provider's list)
    cfg = {"master": "master", "max_nodes": 4, "idle_time": 0, "job_wait_time": 10 ** 9,
           "launched_hosts": [h116, h52, "ip-10-0-0-166.eu-west-1.compute.internal"]}
    state = {}
    for minute in range(16):
        now = T0 + 60 * minute
        plan = elastic.decide(build_snapshot(qstat, qhost, now, "default"), state, cfg, now)
        state = plan["state"]
        assert plan["remove"] == ([h116] if minute == 15 else []), (minute, plan["items"])
    assert reason(plan, h52).endswith("but 1 job waiting")
    assert reason(plan, h116).startswith("remove %s: state unknown for 15m >= unknown_timeout 15m (load -, states 'au')"
                                         % h116)
