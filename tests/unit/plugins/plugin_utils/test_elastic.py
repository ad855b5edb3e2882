# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Table-driven tests of the elastic policy (plugins/plugin_utils/policy/elastic.py).

Snapshots are built by hand in the shape of docs/snapshot.md; every criterion of StarCluster's
documentation (seed 000) is a case, then the default profile's fixes, then a multi-poll run.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

T0 = 1700000000.0  # 2023-11-14T22:13:20Z
GIB = 1024 ** 3


# ------------------------------------------------------------------------------------------
# builders
# ------------------------------------------------------------------------------------------

def host(slots=2, used=0, jobs=0, reserved=0, load=0.05, states="", queues=("all.q",), mem=2 * GIB,
         arch="lx-amd64"):
    return {"arch": arch, "num_proc": slots, "load_avg": load, "mem_total": mem, "mem_used": 0,
            "slots_total": slots * len(queues), "slots_used": used, "slots_reserved": reserved,
            "states": states, "queues": list(queues), "running_jobs": jobs}


def qw(job_id, age, slots=1, tasks=1, state="qw", queues=(), requests=None, submit=None):
    return {"id": job_id, "name": "j%s" % job_id, "owner": "tester", "project": None, "state": state,
            "priority": 0.5, "submit_time": T0 - age if submit is None else submit,
            "tasks": None if tasks == 1 else "1-%d:1" % tasks, "task_count": tasks, "slots": slots,
            "pe": None, "pe_range": None, "hard_requests": dict(requests or {}),
            "hard_queues": list(queues), "held": "h" in state, "error": "E" in state}


def run(job_id, on, slots=1, task=None, started=600, queue="all.q"):
    return {"id": job_id, "task": task, "name": "r%s" % job_id, "owner": "tester", "project": None,
            "state": "r", "queue": queue, "host": on, "hosts": {on: slots}, "slots": slots,
            "start_time": T0 - started}


def snap(hosts, pending=(), running=(), now=T0, accounting=None):
    queues = []
    for name, h in sorted(hosts.items()):
        per_queue = h["slots_total"] // max(1, len(h["queues"]))
        for q in h["queues"]:
            queues.append({"name": "%s@%s" % (q, name), "queue": q, "host": name, "qtype": "BIP",
                           "slots_total": per_queue, "slots_used": h["slots_used"],
                           "slots_reserved": h["slots_reserved"], "load_avg": h["load_avg"],
                           "states": h["states"]})
    out = {"schema": 1, "taken_at": now, "flavour": "SoGE 8.1", "cell": "default", "hosts": hosts,
           "queues": queues, "pending": list(pending), "running": list(running)}
    if accounting is not None:
        out["accounting"] = accounting
    return out


def state_for(snapshot, up=7200, idle=None, last_change=None, booting=(), **node_overrides):
    """A previous state that knows every host of ``snapshot`` (so nothing 'joined' this poll).

    ``up``: seconds since every node joined; ``idle``: {host: seconds since last busy};
    ``node_overrides``: {host: dict} merged into that node's record.  Every host but the master
    is one the balancer launched (``launched``); ``node_overrides`` can say otherwise.
    """
    now = snapshot["taken_at"]
    nodes = {}
    for name in snapshot["hosts"]:
        nodes[name] = {"first_seen": now - up, "joined": now - up, "last_busy": None}
        if name != "master":
            nodes[name]["launched"] = True
        if idle and name in idle:
            nodes[name]["last_busy"] = now - idle[name]
        nodes[name].update(node_overrides.get(name, {}))
    return {"schema": 1, "last_poll": now - 60, "last_change": last_change, "cluster_size": len(nodes),
            "nodes": nodes, "booting": [{"requested_at": t} for t in booting], "jobs": {}}


#: StarCluster's numbers (the seed's defaults), which these tables were written with.  The default
#: profile's own defaults are the simulator's measured policy (test_shipped_defaults_* below); the
#: rules are the same, so the tables set the seed's numbers explicitly.
SEED_NUMBERS = {"add_nodes_per_iter": 1, "interval": 60, "job_wait_time": 900, "stabilization_time": 300,
                "idle_time": 600, "kill_after": 45}


def cfg(**kw):
    # node001, node002, ... are the balancer's in these tables (also on a first poll, when the state
    # cannot know it yet); tests of host ownership set managed_hosts themselves.
    base = {"master": "master", "max_nodes": 10, "min_nodes": 1, "managed_hosts": ["node*"]}
    if kw.get("profile") in (None, "default"):
        base.update(SEED_NUMBERS)
    base.update(kw)
    return base


def sc(**kw):
    return cfg(profile="starcluster", **kw)


def workers(n, **kw):
    """master + node001..node00n, all idle 2-slot hosts."""
    hosts = {"master": host(**kw)}
    for i in range(1, n + 1):
        hosts["node%03d" % i] = host(**kw)
    return hosts


def check_plan(plan):
    """Invariants every plan must hold."""
    json.dumps(plan)  # JSON-serialisable
    assert plan["items"], "a plan always has items"
    for item in plan["items"]:
        assert item["action"] in ("add", "remove", "keep", "hold", "none")
        assert isinstance(item["reason"], str) and item["reason"].strip(), item
    assert plan["add"] == sum(i["count"] for i in plan["items"] if i["action"] == "add")
    assert plan["remove"] == [i["host"] for i in plan["items"] if i["action"] == "remove"]
    nodes = plan["nodes"]
    assert nodes["current"] + nodes["booting"] + plan["add"] <= max(nodes["max"], nodes["current"] + nodes["booting"])
    if not plan.get("kill_cluster"):
        assert nodes["current"] - len(plan["remove"]) >= min(nodes["min"], nodes["current"])
    assert plan["state"]["schema"] == elastic.SCHEMA
    for key in ("time", "hosts", "running_jobs", "queued_jobs", "slots", "avg_duration", "avg_wait", "avg_load"):
        assert key in plan["stats"]


def decide(snapshot, state, config, now=None):
    before = copy.deepcopy((snapshot, state, config))
    plan = elastic.decide(snapshot, state, config, snapshot["taken_at"] if now is None else now)
    assert (snapshot, state, config) == before, "decide must not mutate its inputs"
    check_plan(plan)
    return plan


def reasons(plan, action=None):
    return [i["reason"] for i in plan["items"] if action is None or i["action"] == action]


# ------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------
# (id, snapshot, state, config, expected add, expected remove, substrings expected in reasons)

def _cases():
    cases = []

    # ---- profile starcluster: the seed's criteria ----------------------------------------
    s = snap(workers(2), pending=[])
    cases.append(("sc-no-qw-no-add", s, state_for(s), sc(), 0, [], ["no node added: no jobs in qw state"]))

    s = snap(workers(2, used=2, jobs=1), pending=[qw(1, age=300)],
             running=[run(10, "master"), run(11, "node001"), run(12, "node002")])
    cases.append(("sc-qw-younger-than-wait", s, state_for(s), sc(), 0, [],
                  ["waited 5m <= job_wait_time 15m"]))

    s = snap(workers(2, used=2, jobs=1), pending=[qw(1, age=1000)],
             running=[run(10, "master"), run(11, "node001"), run(12, "node002")])
    cases.append(("sc-qw-old-adds-one", s, state_for(s), sc(), 1, [],
                  ["add 1 node: 1 job in qw, the first listed (job 1) waited 16m40s > job_wait_time 15m",
                   "add_nodes_per_iter=1"]))
    cases.append(("sc-at-max-no-add", s, state_for(s), sc(max_nodes=3), 0, [], [">= max_nodes 3"]))
    cases.append(("sc-add-nodes-per-iter", s, state_for(s), sc(add_nodes_per_iter=3), 3, [],
                  ["add 3 nodes", "add_nodes_per_iter=3"]))
    cases.append(("sc-add-capped-by-max", s, state_for(s), sc(add_nodes_per_iter=3, max_nodes=5), 2, [],
                  ["add 2 nodes", "capped by max_nodes=5"]))
    cases.append(("sc-booting-count-toward-max", s, state_for(s, booting=[T0 - 400, T0 - 400]),
                  sc(add_nodes_per_iter=3, max_nodes=5), 0, [], ["5 nodes (2 booting) >= max_nodes 5"]))

    # StarCluster compares the FIRST listed qw job, not the oldest (a known weakness kept here)
    s = snap(workers(1, used=2, jobs=1), pending=[qw(2, age=60), qw(1, age=3000)],
             running=[run(10, "master"), run(11, "node001")])
    cases.append(("sc-first-listed-not-oldest", s, state_for(s), sc(), 0, [],
                  ["the first listed (job 2) waited 1m <= job_wait_time 15m"]))

    # StarCluster counts only state 'qw' in all.q: hqw, Eqw and other queues do not count
    s = snap(workers(1), pending=[qw(1, age=3000, state="hqw"), qw(2, age=3000, state="Eqw"),
                                  qw(3, age=3000, queues=["long.q"])])
    cases.append(("sc-only-qw-in-allq", s, state_for(s, up=47 * 60), sc(), 0, ["node001"],
                  ["no jobs in qw state", "remove node001"]))

    # removal: idle, not master, >= kill_after minutes past the hour, no qw
    hosts = workers(4)
    hosts["node001"] = host(used=1, jobs=1)
    s = snap(hosts, running=[run(10, "node001")])
    st = state_for(s, node002={"joined": T0 - 47 * 60}, node003={"joined": T0 - 30 * 60},
                   node004={"joined": T0 - (60 + 50) * 60}, master={"joined": T0 - 50 * 60})
    cases.append(("sc-remove-idle-past-kill-after", s, st, sc(), 0, ["node002", "node004"],
                  ["remove node002: not running an SGE job, up 47m past the hour >= kill_after 45m",
                   "remove node004: not running an SGE job, up 50m past the hour >= kill_after 45m",
                   "keep node003: not running an SGE job, up 30m past the hour < kill_after 45m",
                   "keep node001: running 1 job", "keep master: master"]))
    cases.append(("sc-kill-after-option", s, st, sc(kill_after=25), 0, ["node002", "node003", "node004"],
                  ["up 30m past the hour >= kill_after 25m"]))

    s2 = snap(hosts, pending=[qw(5, age=10)], running=[run(10, "node001")])
    st2 = state_for(s2, node002={"joined": T0 - 47 * 60}, node004={"joined": T0 - 50 * 60})
    cases.append(("sc-qw-blocks-removal", s2, st2, sc(), 0, [], ["but 1 job waiting"]))

    cases.append(("sc-min-nodes-floor", s, st, sc(min_nodes=4), 0, ["node002"],
                  ["but min_nodes=4 (the master counts as a node)"]))

    cases.append(("sc-stabilization-hold-remove", s, dict(st, last_change=T0 - 120), sc(), 0, [],
                  ["hold: cluster changed 2m ago < stabilization_time 5m (would remove node002, node004)"]))
    s3 = snap(workers(2, used=2, jobs=1), pending=[qw(1, age=1000)],
              running=[run(10, "master"), run(11, "node001"), run(12, "node002")])
    cases.append(("sc-stabilization-hold-add", s3, state_for(s3, last_change=T0 - 120), sc(), 0, [],
                  ["hold: cluster changed 2m ago < stabilization_time 5m (would add 1 node"]))
    cases.append(("sc-stabilized-after-time", s3, state_for(s3, last_change=T0 - 301), sc(), 1, [], ["add 1 node"]))

    # ---- profile default --------------------------------------------------------------------
    busy = workers(2, used=2, jobs=1)
    busy_run = [run(10, "master"), run(11, "node001"), run(12, "node002")]
    s = snap(busy, pending=[qw(42, age=965, tasks=7)], running=busy_run)
    cases.append(("def-slot-aware", s, state_for(s), cfg(add_nodes_per_iter=10), 4, [],
                  ["add 4 nodes: 7 slots waiting (oldest job 42 waited 16m05s > job_wait_time 15m), 2 slots per node"]))
    cases.append(("def-slot-aware-capped", s, state_for(s), cfg(add_nodes_per_iter=2), 2, [],
                  ["add 2 nodes: 7 slots waiting (oldest job 42 waited 16m05s > job_wait_time 15m), "
                   "2 slots per node, capped by add_nodes_per_iter=2"]))
    cases.append(("def-slot-aware-max", s, state_for(s), cfg(add_nodes_per_iter=10, max_nodes=5), 2, [],
                  ["capped by max_nodes=5 (3 up, 0 booting)"]))
    cases.append(("def-booting-counted", s, state_for(s, booting=[T0 - 100, T0 - 90]), cfg(add_nodes_per_iter=10), 2, [],
                  ["2 already booting"]))
    cases.append(("def-booting-covers", s, state_for(s, booting=[T0 - 400] * 4, last_change=T0 - 400),
                  cfg(add_nodes_per_iter=10), 0, [], ["4 nodes needed, 4 already booting"]))
    cases.append(("def-booting-expired", s, state_for(s, booting=[T0 - 5000] * 4), cfg(add_nodes_per_iter=10), 4, [],
                  ["add 4 nodes"]))
    cases.append(("def-slots-per-node-option", s, state_for(s), cfg(add_nodes_per_iter=10, slots_per_node=4), 2, [],
                  ["4 slots per node"]))
    cases.append(("def-young-jobs-no-add", snap(busy, pending=[qw(42, age=100, tasks=7)], running=busy_run),
                  None, cfg(), 0, [], ["waited 1m40s <= job_wait_time 15m"]))

    # the truly oldest job by submit_time, whatever the list order
    s = snap(busy, pending=[qw(2, age=60), qw(1, age=3000)], running=busy_run)
    cases.append(("def-oldest-by-submit-time", s, state_for(s), cfg(), 1, [],
                  ["oldest job 1 waited 50m > job_wait_time 15m"]))

    # held, error and never-runnable jobs are ignored for growth, each with its reason
    never = [qw(1, age=3000, state="hqw"), qw(2, age=3000, state="Eqw"),
             qw(3, age=3000, queues=["gpu.q"]), qw(4, age=3000, slots=400),
             qw(5, age=3000, queues=["all.q@node001"]), qw(6, age=3000, requests={"hostname": "node001"}),
             qw(7, age=3000, requests={"mem_free": "64G"}), qw(8, age=3000, requests={"arch": "lx-arm64"})]
    s = snap(busy, pending=never, running=busy_run)
    cases.append(("def-unrunnable-ignored", s, state_for(s), cfg(add_nodes_per_iter=10), 0, [],
                  ["no node added: no job waiting that a new node could run",
                   "job 1 held (state hqw)", "job 2 in error state (Eqw)",
                   "job 3 requests queue gpu.q, which the cluster does not have",
                   "job 4 needs 400 slots > ",
                   "job 5 requests specific host(s) all.q@node001", "and 3 more"]))
    s = snap(busy, pending=never + [qw(9, age=1000, tasks=3)], running=busy_run)
    cases.append(("def-unrunnable-ignored-rest-counted", s, state_for(s), cfg(add_nodes_per_iter=10), 2, [],
                  ["3 slots waiting (oldest job 9 waited 16m40s"]))
    # ... and they do not block removing idle nodes
    s = snap(workers(2), pending=never)
    cases.append(("def-unrunnable-do-not-block-removal", s, state_for(s, idle={"node001": 700, "node002": 700}),
                  cfg(), 0, ["node002"], ["remove node002: idle 11m40s > idle_time 10m",
                                          "keep node001: job 5 waits for this host"]))
    # ... except the hosts such jobs ask for by name
    s = snap(workers(3), pending=[qw(5, age=3000, queues=["all.q@node001"]), qw(6, age=3000, requests={"h": "node002"}),
                                  qw(7, age=3000, state="hqw", queues=["all.q@node003"])])
    cases.append(("def-host-wanted-by-a-job-is-kept", s, state_for(s, idle={"node001": 900, "node002": 900, "node003": 900}),
                  cfg(), 0, ["node003"], ["keep node001: job 5 waits for this host", "keep node002: job 6 waits for this host"]))
    # wildcard host and host group requests can be met by a new node
    s = snap(busy, pending=[qw(1, age=1000, queues=["all.q@node*"]), qw(2, age=1000, queues=["all.q@@allhosts"]),
                            qw(3, age=1000, requests={"hostname": "node*"})], running=busy_run)
    cases.append(("def-wildcard-requests-count", s, state_for(s), cfg(add_nodes_per_iter=10), 2, [], ["3 slots waiting"]))

    # any queue, not only all.q; and the queues option
    multi = {"master": host(used=2, jobs=1, queues=("all.q", "long.q")), "node001": host(used=2, jobs=1, queues=("long.q",))}
    s = snap(multi, pending=[qw(1, age=1000, queues=["long.q"])], running=[run(10, "master"), run(11, "node001", queue="long.q")])
    cases.append(("def-any-queue", s, state_for(s), cfg(), 1, [], ["1 slot waiting"]))
    cases.append(("def-queues-option", s, state_for(s), cfg(queues=["all.q"]), 0, [],
                  ["requests queue long.q, not balanced (queues: all.q)"]))
    cases.append(("sc-long-q-not-counted", s, state_for(s), sc(), 0, [], ["no jobs in qw state"]))

    # mixed slots per host: a new node looks like most workers
    mixed = {"master": host(slots=8, used=8, jobs=1), "node001": host(slots=4, used=4, jobs=1),
             "node002": host(slots=2, used=2, jobs=1), "node003": host(slots=2, used=2, jobs=1)}
    s = snap(mixed, pending=[qw(1, age=1000, tasks=5)], running=[run(10, h) for h in mixed])
    cases.append(("def-mixed-slots", s, state_for(s), cfg(add_nodes_per_iter=10), 3, [],
                  ["5 slots waiting", "2 slots per node"]))

    # per-second billing: remove after idle_time, longest idle first, never below min_nodes
    hosts = workers(4)
    hosts["node004"] = host(used=1, jobs=1)
    s = snap(hosts, running=[run(10, "node004")])
    st = state_for(s, idle={"node001": 660, "node002": 180, "node003": 1500, "master": 5000})
    cases.append(("def-idle-time", s, st, cfg(), 0, ["node003", "node001"],
                  ["remove node001: idle 11m > idle_time 10m", "remove node003: idle 25m > idle_time 10m",
                   "keep node002: idle 3m < idle_time 10m", "keep node004: running 1 job",
                   "keep master: master (never removed)"]))
    cases.append(("def-idle-time-option", s, st, cfg(idle_time=120), 0, ["node003", "node001", "node002"],
                  ["remove node002: idle 3m > idle_time 2m"]))
    cases.append(("def-min-floor-longest-idle-first", s, st, cfg(min_nodes=4), 0, ["node003"],
                  ["keep node001: idle 11m > idle_time 10m, but min_nodes=4 (the master counts as a node)"]))
    cases.append(("def-stabilization-hold", s, dict(st, last_change=T0 - 120), cfg(), 0, [],
                  ["hold: cluster changed 2m ago < stabilization_time 5m (would remove node003, node001)"]))
    hourly = state_for(s, idle={"node001": 660}, node001={"joined": T0 - 50 * 60}, node002={"joined": T0 - 20 * 60})
    cases.append(("def-hourly-option", s, hourly, cfg(billing="hourly"), 0, ["node001"],
                  ["remove node001: idle 11m, up 50m past the hour >= kill_after 45m",
                   "keep node002: idle 20m, up 20m past the hour < kill_after 45m"]))

    # never remove: running jobs (also parallel slave hosts), reserved slots, unknown or error state
    hosts = {"master": host(), "node001": host(), "node002": host(reserved=2),
             "node003": host(load=None, states="au"), "node004": host(states="u"), "node005": host(states="E"),
             "node006": host(used=1)}
    pe_job = run(10, "node006")
    pe_job["hosts"] = {"node006": 1, "node001": 1}
    s = snap(hosts, running=[pe_job])
    st = state_for(s, idle={h: 5000 for h in hosts if h != "node006" and h != "node001"})
    cases.append(("def-never-remove-busy-reserved-unknown-error", s, st, cfg(), 0, [],
                  ["keep node001: running 1 job", "keep node002: 2 slots reserved",
                   "keep node003: state unknown (load -, states 'au')", "keep node004: state unknown",
                   "keep node005: queue in error state 'E'", "keep node006: running 1 job"]))
    cases.append(("sc-unknown-host-is-idle-to-starcluster", s, st, sc(kill_after=0), 0, ["node002", "node003", "node004", "node005"],
                  ["remove node003: not running an SGE job"]))

    # min_nodes: the default profile grows back to it, even while the cluster stabilizes
    s = snap({"master": host()})
    cases.append(("def-grow-to-min", s, state_for(s, last_change=T0 - 10), cfg(min_nodes=3), 2, [],
                  ["add 2 nodes: 1 up + 0 booting < min_nodes 3 (the master counts as a node)"]))
    cases.append(("sc-does-not-grow-to-min", s, state_for(s), sc(min_nodes=3), 0, [], ["no jobs in qw state"]))

    # kill_cluster: only the master left, nothing queued or running
    s = snap({"master": host()})
    cases.append(("def-kill-cluster", s, state_for(s), cfg(kill_cluster=True), 0, ["master"],
                  ["remove master: kill_cluster"]))
    s = snap({"master": host()}, pending=[qw(1, age=5, state="hqw")])
    cases.append(("def-kill-cluster-waits-for-jobs", s, state_for(s), cfg(kill_cluster=True), 0, [],
                  ["keep master: master (never removed, unless kill_cluster)"]))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case_id, snapshot, state, config, add, remove, expect",
                         CASES, ids=[c[0] for c in CASES])
def test_table(case_id, snapshot, state, config, add, remove, expect):
    plan = decide(snapshot, state if state is not None else state_for(snapshot), config)
    text = "\n".join(reasons(plan))
    assert plan["add"] == add, text
    assert plan["remove"] == remove, text
    for fragment in expect:
        assert fragment in text, "%r not in:\n%s" % (fragment, text)
    # one item per node, plus the growth decision
    hosts = {i["host"] for i in plan["items"] if "host" in i}
    assert hosts == set(snapshot["hosts"]) | {"master"}


# ------------------------------------------------------------------------------------------
# individual behaviours
# ------------------------------------------------------------------------------------------

def test_first_poll_empty_state():
    s = snap(workers(2), pending=[qw(1, age=2000, tasks=3)])
    plan = decide(s, {}, cfg(add_nodes_per_iter=5))
    assert plan["add"] == 2
    assert plan["state"]["cluster_size"] == 3
    assert set(plan["state"]["nodes"]) == {"master", "node001", "node002"}
    assert plan["state"]["last_change"] == T0
    assert plan["state"]["booting"] == [{"requested_at": T0}, {"requested_at": T0}]
    # nothing is idle on the first poll: the idle clock starts now
    s = snap(workers(2))
    plan = decide(s, {}, cfg(idle_time=0.0 + 1))
    assert plan["remove"] == []
    assert "idle 0s < idle_time 1s" in "\n".join(reasons(plan))


def test_old_or_foreign_state_is_tolerated():
    s = snap(workers(1))
    old = {"schema": 0, "whatever": [1, 2], "nodes": {"node001": {"first_seen": T0 - 5000, "colour": "red"},
                                                      "master": "garbage"},
           "booting": ["x", {"requested_at": "y"}], "jobs": {"pending": [], "started": [["a", 1]]}}
    plan = decide(s, old, cfg())
    assert plan["state"]["nodes"]["node001"]["first_seen"] == T0 - 5000
    newer = dict(state_for(s), schema=99)
    plan = decide(s, newer, cfg())
    assert any("schema 99 is newer" in w for w in plan["warnings"])
    plan = decide(s, "not a dict", cfg())
    assert any("not a mapping" in w for w in plan["warnings"])


def test_max_nodes_unset_uses_size_at_first_poll():
    s = snap(workers(3, used=2, jobs=1), pending=[qw(1, age=2000)],
             running=[run(10, h) for h in ("master", "node001", "node002", "node003")])
    plan = decide(s, state_for(s), {"master": "master"})
    assert plan["nodes"]["max"] == 4 and plan["add"] == 0
    assert any("max_nodes not set: using 4" in w for w in plan["warnings"])
    st = state_for(s)
    st["cluster_size"] = 6
    plan = decide(s, st, {"master": "master"})
    assert plan["nodes"]["max"] == 6 and plan["add"] == 1


def test_new_host_consumes_booting_and_counts_as_change():
    s = snap(workers(1))
    st = state_for(s, booting=[T0 - 200, T0 - 100])
    s2 = snap(workers(2))
    plan = decide(s2, st, cfg(stabilization_time=60))
    assert plan["nodes"]["booting"] == 1
    assert plan["state"]["nodes"]["node002"]["joined"] == T0 - 200
    assert plan["state"]["last_change"] == T0
    assert "joined: node002" in plan["state"]["last_change_reason"]


def test_booting_expires_with_warning():
    s = snap(workers(1))
    plan = decide(s, state_for(s, booting=[T0 - 3000]), cfg(boot_timeout=1200))
    assert plan["nodes"]["booting"] == 0
    assert any("never joined" in w for w in plan["warnings"])


def test_unknown_host_restarts_idle_clock_and_warns():
    hosts = workers(1)
    hosts["node001"] = host(load=None, states="au")
    s = snap(hosts)
    plan = decide(s, state_for(s, idle={"node001": 5000}), cfg())
    assert plan["state"]["nodes"]["node001"]["last_busy"] == T0
    assert any(w.startswith("node001: state unknown") for w in plan["warnings"])


def test_last_busy_recorded_and_idle_measured_from_it():
    hosts = workers(1)
    hosts["node001"] = host(used=1, jobs=1)
    s1 = snap(hosts, running=[run(1, "node001")])
    p1 = decide(s1, state_for(s1), cfg())
    assert p1["state"]["nodes"]["node001"]["last_busy"] == T0
    s2 = snap(workers(1), now=T0 + 660)
    p2 = decide(s2, p1["state"], cfg())
    assert p2["remove"] == ["node001"]
    assert "remove node001: idle 11m > idle_time 10m" in reasons(p2)


def test_stabilization_warning_below_300_only_for_starclusters_rules():
    s = snap(workers(1))
    star = {"profile": "starcluster", "queues": []}
    assert any("below StarCluster's minimum" in w for w in decide(s, {}, cfg(stabilization_time=30, **star))["warnings"])
    assert not any("below StarCluster" in w for w in decide(s, {}, cfg(**star))["warnings"])
    # profile default counts booting nodes and ships 0 under per-second billing: no warning every poll
    shipped = {"master": "master", "max_nodes": 10, "managed_hosts": ["node*"]}
    assert elastic.validate_config(shipped)["stabilization_time"] == 0
    assert not any("below StarCluster" in w for w in decide(s, {}, shipped)["warnings"])
    assert not any("below StarCluster" in w for w in decide(s, {}, cfg(stabilization_time=30))["warnings"])


def test_stats_and_wait_history():
    s1 = snap(workers(1, used=0), pending=[qw(7, age=100), qw(8, age=50, tasks=4)])
    p1 = decide(s1, {}, cfg())
    assert p1["stats"]["queued_jobs"] == 5
    assert p1["stats"]["avg_wait"] is None
    # job 7 starts 30 s after the first poll; it had waited 130 s
    hosts = workers(1)
    hosts["node001"] = host(used=1, jobs=1, load=1.0)
    r = run(7, "node001", started=-30)
    s2 = snap(hosts, pending=[qw(8, age=50, tasks=4)], running=[r], now=T0 + 60)
    p2 = decide(s2, p1["state"], cfg())
    assert p2["stats"]["avg_wait"] == pytest.approx(130.0)
    assert p2["stats"]["running_jobs"] == 1 and p2["stats"]["hosts"] == 2 and p2["stats"]["slots"] == 4
    assert p2["stats"]["avg_load"] == pytest.approx((0.05 + 1.0) / 2)
    assert "7" in p2["state"]["jobs"]["pending"] or p2["state"]["jobs"]["started"]
    # job 7 ends between polls: duration estimated at the midpoint
    s3 = snap(workers(1), pending=[qw(8, age=50, tasks=4)], now=T0 + 120)
    p3 = decide(s3, p2["state"], cfg())
    assert p3["stats"]["avg_duration"] == pytest.approx((T0 + 90) - (T0 + 30))
    # outside the lookback window (3 minutes) the history is forgotten
    s4 = snap(workers(1), now=T0 + 600)
    p4 = decide(s4, p3["state"], cfg())
    assert p4["stats"]["avg_wait"] is None and p4["stats"]["avg_duration"] is None
    # qacct figures in the snapshot win
    s5 = snap(workers(1), now=T0 + 660, accounting={"window": 180, "jobs": 2, "avg_duration": 12.5, "avg_wait": 3.0})
    p5 = decide(s5, p4["state"], cfg())
    assert (p5["stats"]["avg_duration"], p5["stats"]["avg_wait"]) == (12.5, 3.0)


def test_hold_reason_text():
    s = snap(workers(2, used=2, jobs=1), pending=[qw(1, age=2000)],
             running=[run(10, h) for h in ("master", "node001", "node002")])
    plan = decide(s, state_for(s, last_change=T0 - 120), cfg())
    assert plan["add"] == 0
    assert plan["summary"].startswith("hold: cluster changed 2m ago < stabilization_time 5m")


@pytest.mark.parametrize("bad, name", [
    ({"interval": 301}, "interval"),
    ({"interval": 0}, "interval"),
    ({"min_nodes": 5, "max_nodes": 3}, "min_nodes"),
    ({"max_nodes": 0}, "max_nodes"),
    ({"add_nodes_per_iter": -1}, "add_nodes_per_iter"),
    ({"profile": "starcluster", "add_nodes_per_iter": 0}, "add_nodes_per_iter"),
    ({"kill_after": 60}, "kill_after"),
    ({"job_wait_time": -1}, "job_wait_time"),
    ({"stabilization_time": "5m"}, "stabilization_time"),
    ({"lookback_window": 0}, "lookback_window"),
    ({"billing": "monthly"}, "billing"),
    ({"profile": "aws"}, "profile"),
    ({"profile": "starcluster", "billing": "per_second"}, "billing"),
    ({"profile": "starcluster", "queues": ["long.q"]}, "queues"),
    ({"queues": "all.q"}, "queues"),
    ({"slots_per_node": 0}, "slots_per_node"),
    ({"plot_stats": "yes"}, "plot_stats"),
    ({"master": ""}, "master"),
    ({"max_node": 3}, "max_node"),
])
def test_validate_config_names_the_bad_option(bad, name):
    with pytest.raises(ValueError) as err:
        elastic.validate_config(bad)
    assert str(err.value).startswith(name + ":")


def test_starcluster_profile_keeps_the_seed_defaults():
    s = elastic.default_config("starcluster")
    assert (s["min_nodes"], s["add_nodes_per_iter"], s["interval"], s["job_wait_time"], s["kill_after"],
            s["stabilization_time"], s["lookback_window"]) == (1, 1, 60, 900, 45, 300, 3)
    assert s["plot_stats"] is s["dump_stats"] is s["kill_cluster"] is False
    assert s["billing"] == "hourly" and s["queues"] == ["all.q"]
    # None means "unset"
    assert elastic.validate_config({"profile": "starcluster", "billing": None})["billing"] == "hourly"
    assert elastic.validate_config({"profile": "starcluster"})["stabilization_time"] == 300


def test_shipped_defaults_are_the_measured_policy():
    """The default profile's defaults are what docs/simulator.md measures as ``default``."""
    d = elastic.default_config()
    assert (d["min_nodes"], d["add_nodes_per_iter"], d["interval"], d["job_wait_time"], d["kill_after"],
            d["stabilization_time"], d["lookback_window"]) == (1, 0, 30, 0, 45, 0, 3)
    assert d["plot_stats"] is d["dump_stats"] is d["kill_cluster"] is False
    assert d["billing"] == "per_second" and d["idle_time"] == 540 and d["queues"] == []
    assert elastic.default_config(billing="hourly")["stabilization_time"] == 300
    p = elastic.default_config("parallelcluster")
    assert (p["interval"], p["job_wait_time"], p["stabilization_time"], p["idle_time"]) == (60, 0, 0, 600)


@pytest.mark.parametrize("config, expected", [
    ({}, 0),
    ({"billing": "per_second"}, 0),
    ({"billing": "hourly"}, 300),                                  # resolved after the billing is known
    ({"billing": "hourly", "stabilization_time": 0}, 0),           # an option set explicitly wins
    ({"billing": "per_second", "stabilization_time": 120}, 120),
    ({"billing": "hourly", "stabilization_time": None}, 300),      # None is unset
    ({"profile": "parallelcluster", "billing": "hourly"}, 0),      # only the default profile follows billing
])
def test_stabilization_default_follows_billing(config, expected):
    assert elastic.validate_config(config)["stabilization_time"] == expected


def test_add_nodes_per_iter_zero_means_no_per_poll_limit():
    busy = {"master": host(), "node001": host(used=2, jobs=1), "node002": host(used=2, jobs=1)}
    s = snap(busy, pending=[qw(42, age=10, tasks=7)], running=[])
    plan = decide(s, state_for(s), {"master": "master", "max_nodes": 10, "managed_hosts": ["node*"]})
    assert plan["config"]["add_nodes_per_iter"] == 0
    assert plan["add"] == 4  # ceil(7 slots / 2 per node), not capped per poll
    assert "add_nodes_per_iter" not in "\n".join(reasons(plan))
    plan = decide(s, state_for(s), {"master": "master", "max_nodes": 5, "managed_hosts": ["node*"]})
    assert plan["add"] == 2 and "capped by max_nodes=5" in "\n".join(reasons(plan))
    with pytest.raises(ValueError, match="^add_nodes_per_iter: must be an integer >= 0"):
        elastic.validate_config({"add_nodes_per_iter": -1})
    with pytest.raises(ValueError, match="^add_nodes_per_iter: profile starcluster"):
        elastic.validate_config({"profile": "starcluster", "add_nodes_per_iter": 0})


@pytest.mark.parametrize("bad", [None, [], {"schema": 2, "hosts": {}, "pending": [], "running": []},
                                 {"schema": 1, "hosts": [], "pending": [], "running": []},
                                 {"schema": 1, "hosts": {}, "pending": [{"no": "id"}], "running": []},
                                 {"schema": 1, "hosts": {}, "running": []}])
def test_malformed_snapshot(bad):
    with pytest.raises(ValueError, match="^snapshot:"):
        elastic.decide(bad, {}, cfg(), T0)


@pytest.mark.parametrize("seconds, text", [(965, "16m05s"), (900, "15m"), (45, "45s"), (3720, "1h02m"),
                                           (0, "0s"), (-5, "0s"), (3661, "1h01m01s")])
def test_fmt_duration(seconds, text):
    assert elastic.fmt_duration(seconds) == text


# ------------------------------------------------------------------------------------------
# several polls: a burst arrives, the cluster grows to max, the jobs finish, it shrinks to min
# ------------------------------------------------------------------------------------------

class Sim(object):
    """A toy cluster: hosts with 2 slots, FIFO dispatch, nodes join one poll after being asked for."""

    def __init__(self, jobs, duration):
        self.now = T0
        self.hosts = {"master": 2}
        self.pending = [qw(i, age=0) for i in range(1, jobs + 1)]
        self.running = {}  # job id -> (host, end)
        self.duration = duration
        self.joining = 0
        self.counter = 0

    def step(self):
        for job_id, (h, end) in list(self.running.items()):
            if end <= self.now:
                del self.running[job_id]
        for dummy in range(self.joining):
            self.counter += 1
            self.hosts["node%03d" % self.counter] = 2
        self.joining = 0
        for h, slots in sorted(self.hosts.items()):
            while self.pending and sum(1 for v in self.running.values() if v[0] == h) < slots:
                job = self.pending.pop(0)
                self.running[job["id"]] = (h, self.now + self.duration)

    def snapshot(self):
        hosts = {}
        for h, slots in self.hosts.items():
            n = sum(1 for v in self.running.values() if v[0] == h)
            hosts[h] = host(slots=slots, used=n, jobs=n, load=float(n))
        running = []
        for job_id, (h, end) in self.running.items():
            r = run(job_id, h)
            r["start_time"] = end - self.duration
            running.append(r)
        return snap(hosts, pending=[dict(j) for j in self.pending], running=running, now=self.now)

    def apply(self, plan):
        self.joining += plan["add"]
        for h in plan["remove"]:
            assert not any(v[0] == h for v in self.running.values()), "removed a busy node"
            del self.hosts[h]


@pytest.mark.parametrize("config", [
    cfg(max_nodes=4, min_nodes=1, stabilization_time=120, job_wait_time=60, idle_time=300),
    sc(max_nodes=4, min_nodes=1, stabilization_time=120, job_wait_time=60, kill_after=0),
], ids=["default", "starcluster"])
def test_multi_poll_burst_grow_then_shrink(config):
    sim = Sim(jobs=16, duration=1800)
    state = {}
    sizes, adds, changes = [], [], []
    for dummy in range(120):  # two hours of 60 s polls
        sim.step()
        plan = elastic.decide(sim.snapshot(), state, config, sim.now)
        check_plan(plan)
        state = json.loads(json.dumps(plan["state"]))  # as stored on disk
        sizes.append(plan["nodes"]["current"])
        if plan["add"]:
            adds.append(sim.now)
        if plan["add"] or plan["remove"]:
            changes.append(sim.now)
        assert plan["nodes"]["current"] + plan["nodes"]["booting"] + plan["add"] <= 4
        assert plan["nodes"]["current"] - len(plan["remove"]) >= 1
        sim.apply(plan)
        sim.now += 60
    assert max(sizes) == 4, sizes                      # grew up to max_nodes
    assert sizes[-1] == 1, sizes                       # and shrank back to the master alone
    assert min(sizes) == 1
    assert not sim.pending and not sim.running         # every job ran
    # growth was gradual, honouring the stabilization time between changes
    assert len(adds) == 3
    for a, b in zip(changes, changes[1:]):
        assert b - a >= 120
    # the first node was asked for only once the oldest job had waited > job_wait_time
    assert adds[0] - T0 > 60
    # grows monotonically while jobs wait, then shrinks monotonically
    peak = sizes.index(4)
    assert sizes[:peak + 1] == sorted(sizes[:peak + 1])
    assert sizes[peak:] == sorted(sizes[peak:], reverse=True)


def test_multi_poll_default_is_faster_than_starcluster():
    """Slot-aware growth reaches the needed size in fewer polls than one node per change."""
    def polls_to_max(config):
        sim = Sim(jobs=16, duration=3600)
        state = {}
        for poll in range(60):
            sim.step()
            plan = elastic.decide(sim.snapshot(), state, config, sim.now)
            state = plan["state"]
            if plan["nodes"]["current"] == 8:
                return poll
            sim.apply(plan)
            sim.now += 60
        return math.inf
    fast = polls_to_max(cfg(max_nodes=8, stabilization_time=120, job_wait_time=60, add_nodes_per_iter=8))
    slow = polls_to_max(sc(max_nodes=8, stabilization_time=120, job_wait_time=60))
    assert fast < slow


def test_master_that_is_not_an_execution_host_still_counts():
    hosts = {"node001": host(), "node002": host()}
    s = snap(hosts)
    st = state_for(s, idle={"node001": 900, "node002": 900})
    st["nodes"]["master"] = {"first_seen": T0 - 7200, "joined": None, "last_busy": None}
    plan = decide(s, st, cfg(min_nodes=2))
    assert plan["nodes"]["current"] == 3
    assert plan["remove"] == ["node001"]  # 3 nodes (master counted) - 1 = min_nodes 2
    assert "keep master: master (never removed)" in reasons(plan)
    # kill_cluster with a master that runs no execd
    s = snap({})
    st = state_for(s)
    st["nodes"]["master"] = {"first_seen": T0 - 7200, "joined": None, "last_busy": None}
    plan = decide(s, st, cfg(kill_cluster=True))
    assert plan["remove"] == ["master"] and plan["kill_cluster"] is True


def test_no_master_configured_warns_and_protects_nothing():
    s = snap(workers(1))
    st = state_for(s, idle={"master": 900, "node001": 900})
    plan = decide(s, st, {"max_nodes": 3, "min_nodes": 0, "managed_hosts": ["*"]})
    assert plan["remove"] == ["master", "node001"]
    assert any(w.startswith("master not set") for w in plan["warnings"])
    # without managed_hosts only what the balancer launched goes: the master host is not one of them
    plan = decide(s, st, {"max_nodes": 3, "min_nodes": 0})
    assert plan["remove"] == ["node001"]
    assert "keep master: static host, not launched by the balancer" in "\n".join(reasons(plan))


def test_plan_reports_interval_and_effective_config():
    s = snap(workers(1))
    plan = decide(s, state_for(s), {"master": "master", "profile": "starcluster", "interval": 30})
    assert plan["interval"] == 30
    assert plan["config"]["billing"] == "hourly" and plan["config"]["max_nodes"] == 2
