# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The poll's naming of new nodes (playbooks/tasks/loadbalance_poll.yml) passes over the names of
nodes removed recently (``plan.recently_removed``), and check mode says so.

Nothing runs but Ansible's Templar: the task's own expressions, read from the task file, are
rendered with the collection's filters in a separate Python process (the collection loader it
needs is global to a process), with a plan made by the real ``elastic.decide``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
POLL_TASKS = os.path.join(REPO, "playbooks", "tasks", "loadbalance_poll.yml")
T0 = 1700000000.0

RENDER = r"""
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
request = json.loads(sys.stdin.read())
templar = Templar(loader=DataLoader(), variables=request["variables"])
print(json.dumps([templar.template(trust_as_template(e)) for e in request["expressions"]]))
"""


def _task(name_start):
    with open(POLL_TASKS) as handle:
        tasks = yaml.safe_load(handle)
    (task,) = [t for t in tasks if t.get("name", "").startswith(name_start)]
    return task


def _render(expressions, variables):
    collections = os.path.join(REPO, ".collections")
    proc = subprocess.run([sys.executable, "-c", RENDER, collections], input=json.dumps(
        {"expressions": expressions, "variables": variables}), capture_output=True, text=True, timeout=120,
        check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _host(jobs):
    return {"arch": "lx-amd64", "num_proc": 2, "load_avg": 0.05, "mem_total": 2 << 30, "mem_used": 0,
            "slots_total": 2, "slots_used": 2 * jobs, "slots_reserved": 0, "states": "", "queues": ["all.q"],
            "running_jobs": jobs}


def _snap(names, now, waiting=0):
    hosts = {name: _host(1) for name in ["master"] + names}
    running = [{"id": 100 + i, "task": None, "state": "r", "queue": "all.q", "host": n, "hosts": {n: 2},
                "slots": 2, "start_time": now - 300} for i, n in enumerate(sorted(hosts))]
    pending = [{"id": 500 + i, "state": "qw", "submit_time": now - 30, "task_count": 1, "slots": 1,
                "hard_requests": {}, "hard_queues": [], "held": False, "error": False} for i in range(waiting)]
    return {"schema": 1, "taken_at": now, "hosts": hosts, "queues": [], "pending": pending, "running": running}


def _plans(**config):
    """node003 (the highest) left before the poll at T0; a minute later a job waits."""
    # one node per poll (StarCluster's add_nodes_per_iter): these tests are about its name
    cfg = dict({"master": "master", "max_nodes": 6, "job_wait_time": 0, "stabilization_time": 0,
                "add_nodes_per_iter": 1}, **config)
    nodes = {n: {"first_seen": T0 - 7200, "joined": T0 - 7200, "last_busy": T0 - 60}
             for n in ("master", "node001", "node002", "node003")}
    state = {"schema": 1, "last_poll": T0 - 60, "cluster_size": 4, "nodes": nodes, "booting": [], "jobs": {}}
    gone = elastic.decide(_snap(["node001", "node002"], T0), state, cfg, T0)
    snapshot = _snap(["node001", "node002"], T0 + 60, waiting=3)
    plan = elastic.decide(snapshot, gone["state"], cfg, T0 + 60)
    plan.pop("state")
    return snapshot, json.loads(json.dumps(plan))


def _variables(snapshot, plan, check_mode):
    return {"cluster": "mycluster", "ansible_facts": {"sge": snapshot},
            "groups": {"mycluster_nodes": ["node001", "node002"]},
            "balancer_journal": {"operations": []}, "balancer_plan": {"plan": plan},
            "ansible_check_mode": check_mode}


def _name_and_show(snapshot, plan):
    naming = _task("Name the nodes to add")["ansible.builtin.set_fact"]["balancer_new_nodes"]
    (names,) = _render([naming], _variables(snapshot, plan, True))
    show = _task("Show what check mode would do")["ansible.builtin.debug"]["msg"]
    (msg,) = _render([show], dict(_variables(snapshot, plan, True), balancer_new_nodes=names))
    return names, msg


def test_the_poll_does_not_reuse_a_name_removed_a_minute_ago():
    snapshot, plan = _plans()
    assert plan["add"] == 1 and plan["recently_removed"] == ["node003"]
    names, msg = _name_and_show(snapshot, plan)
    assert names == ["node004"]
    assert msg == ["check mode: would add node004 (names removed less than name_reuse_time ago not reused: node003)",
                   "check mode: would drain and remove no node"], msg


def test_the_poll_names_as_before_with_name_reuse_time_0():
    snapshot, plan = _plans(name_reuse_time=0)
    names, msg = _name_and_show(snapshot, plan)
    assert names == ["node003"]
    assert msg == ["check mode: would add node003", "check mode: would drain and remove no node"], msg


def test_a_plan_without_recently_removed_still_names():
    """A plan from a balancer without the key (e.g. a mixed upgrade): the old naming."""
    snapshot, plan = _plans()
    del plan["recently_removed"]
    assert _name_and_show(snapshot, plan)[0] == ["node003"]
