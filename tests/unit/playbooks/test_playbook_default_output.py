# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan, the warnings and the outcomes read one line per item under Ansible's default callback
with Ansible's default settings, as an installed user and AWX's job output see them (issue 22).

The repository's ansible.cfg sets ``callback_result_format = yaml``, which prints a multi-line
string as lines; with the default (JSON) result format the same string is one line full of
``\\n``. So every such message is a list of lines. The poll runs for real through
ansible-playbook, by its collection name, with an empty ansible.cfg, no stdout callback set, on
the fake qmaster of test_loadbalance_faults.py (check mode; a journal holding a parked leave). The
messages of the other playbooks (reconciliation, rebalance, fair share, a node's outcome), which
need a cloud or a real cluster to run, are rendered from the task files by Ansible's Templar.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

from ansible_collections.gridengine.balancer.tests.unit.playbooks.test_loadbalance_faults import (
    FIXTURES, make_qmaster)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
T0 = 1700000000.0


def run_poll(tmp_path):
    make_qmaster(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"))
    qmaster = tmp_path / "qmaster"
    qmaster.mkdir(mode=0o700)
    (qmaster / "journal.json").write_text(json.dumps({"schema": 1, "operations": [
        {"node": "node005", "operation": "leave", "started": T0, "detail": {}, "attempts": 2, "parked": True,
         "parked_at": T0 + 600, "last_error": "List the node's queue instances: non-zero return code"}]}))
    (tmp_path / "ansible.cfg").write_text("")
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"children": {"faketest": {"children": {"faketest_master": {
        "hosts": {"vm": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}}}))
    variables = {"cluster": "faketest", "cluster_sge_root": str(tmp_path / "sge"), "cluster_provider": "nonexistent",
                 "lock_path": str(qmaster / "lock.json"), "journal_path": str(qmaster / "journal.json"),
                 "state_path": str(qmaster / "state.json"), "max_nodes": 3, "min_nodes": 1, "interval": 60,
                 "idle_time": 600, "stabilization_time": 300}
    # no ANSIBLE_* from the caller (no stdout callback, no result format): Ansible's defaults
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
               ANSIBLE_NOCOLOR="1")
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    argv = [tool, "-i", str(inventory), "gridengine.balancer.loadbalance", "-e", json.dumps(variables), "--check"]
    proc = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def task_output(stdout, name):
    """The text the default callback printed for the task (up to the next task or play)."""
    match = re.search(r"^TASK \[%s\] \**\n(.*?)(?=^TASK \[|^PLAY )" % re.escape(name), stdout, re.MULTILINE | re.DOTALL)
    assert match, "task %r not in the output:\n%s" % (name, stdout[-3000:])
    return match.group(1)


def results(text):
    """The JSON results in a task's output: ``ok: [vm] => {...}`` or ``ok: [vm] => (item=...) => {...}``."""
    return [json.loads(block) for block in re.findall(r"=> (\{\n.*?\n\})\n", text, re.DOTALL)]


def test_the_plan_prints_one_line_per_item_under_the_default_callback(tmp_path):
    stdout = run_poll(tmp_path)

    text = task_output(stdout, "Show the plan and the reason for each item")
    assert "\\n" not in text, text  # no line break escaped inside a string
    (result,) = results(text)
    lines = result["msg"]
    assert isinstance(lines, list), text
    # the summary, then one "- reason" per plan item (here: nothing added, two hosts kept)
    assert lines[0].startswith("faketest: ") and "(2 up, 0 booting, min 1, max 3)" in lines[0], lines
    assert len(lines) >= 3 and all(line.startswith("- ") for line in lines[1:]), lines
    assert any(line.startswith("- keep vm: master") for line in lines), lines
    # each line printed on a line of its own
    for line in lines:
        assert re.search(r"^\s+%s,?$" % re.escape(json.dumps(line)), text, re.MULTILINE), (line, text)

    text = task_output(stdout, "Warn about parked node operations (a person must look)")
    assert "\\n" not in text, text
    (warning,) = results(text)
    assert warning["msg"][0].startswith("WARNING: the leave of node005 is parked after 2 failed replays"), warning
    # the command to run comes on a line of its own, whole
    assert warning["msg"][-1] == ("ansible faketest_master -m gridengine.balancer.balancer_journal -a 'cluster=faketest "
                                  "node=node005 state=absent path=%s'" % (tmp_path / "qmaster" / "journal.json")), warning

    text = task_output(stdout, "Show what check mode would do")
    (result,) = results(text)
    assert result["msg"] == ["check mode: would add no node", "check mode: would drain and remove no node",
                             "check mode: leaves alone node005 (parked)"], text


# --- the messages of runs that need a cloud or a real cluster, rendered from the task files ----

RENDER = r"""
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
request = json.loads(sys.stdin.read())
out = []
for expression, variables in request:
    out.append(Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression)))
print(json.dumps(out))
"""


def _render(requests):
    """Render each (template, variables) with Ansible's Templar in a separate process (the
    collection loader it needs is global to a process)."""
    proc = subprocess.run([sys.executable, "-c", RENDER, os.path.join(REPO, ".collections")],
                          input=json.dumps(requests), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        keys = ("tasks", "block", "rescue", "always")
        if any(k in node for k in keys):
            for key in keys:
                yield from _tasks(node.get(key) or [])
        else:
            yield node


def _debug_msg(path, name):
    with open(os.path.join(REPO, "playbooks", path)) as handle:
        (task,) = [t for t in _tasks(yaml.safe_load(handle)) if t.get("name", "").startswith(name)]
    return task["ansible.builtin.debug"]["msg"]


def test_the_other_messages_are_lists_of_lines():
    reconcile = _debug_msg("tasks/reconcile.yml", "Show the reconciliation")
    rebalance = _debug_msg("rebalance.yml", "Show the outcome")
    fairshare = _debug_msg("fairshare.yml", "Show the allocation")
    outcome = _debug_msg("tasks/node_operation.yml", "Show the outcome for")
    rebalance_result = {"plans": [{"summary": "round 1: 2 moves (3.0 MB)"}, {"summary": "round 2: no change"}],
                        "moved": [{}, {}], "rejected": [{"job": "logs", "task": 3, "source": "node001",
                                                         "target": "node002", "rejected": "the task started"}]}
    fair_plan = {"limits": [{"project": "alpha", "host": "node001", "slots": 2},
                            {"project": "alpha", "host": "node002", "slots": 1},
                            {"project": "beta", "host": "node001", "slots": 1}],
                 "usage": {"alpha": 3.0, "beta": 0.0}, "waiting": ["beta"]}
    rendered = _render([
        [reconcile, {"balancer_reconcile": {"msg": "mycluster reconcile: 1 to terminate\n- terminate node003: never "
                                                   "joined\n- keep node001: joined"}}],
        [rebalance, {"task_rebalance_result": rebalance_result, "ansible_check_mode": False}],
        [fairshare, {"cluster": "mycluster", "fairshare_profile": "default", "fairshare_rqs_name": "fairshare",
                     "fairshare_desired": {"alpha": 60, "beta": 40}, "fairshare_plan": fair_plan}],
        [outcome, {"balancer_op": {"node": "node004", "operation": "join"},
                   "node_join_result": {"name": "node004", "address": "10.77.0.14"}}],
        [outcome, {"balancer_op": {"node": "node003", "operation": "leave"},
                   "node_leave_result": {"name": "node003", "removed": False, "reason": "job 42 runs on node003"}}],
        [outcome, {"balancer_op": {"node": "node003", "operation": "leave"},
                   "node_leave_result": {"name": "node003", "removed": True}}],
    ])
    assert rendered[0] == ["mycluster reconcile: 1 to terminate", "- terminate node003: never joined",
                           "- keep node001: joined"]
    assert rendered[1] == ["round 1: 2 moves (3.0 MB)", "round 2: no change", "moved 2, rejected 1",
                           "rejected logs/3 node001 -> node002: the task started"]
    assert rendered[2] == ["fair share of mycluster (profile default): slot limits per host in the resource quota "
                           "set fairshare",
                           "alpha: 60 % wanted, 3 slots running; limits: node001=2, node002=1",
                           "beta: 40 % wanted, 0 slots running, work waiting; limits: node001=1"]
    # one item, one line: words, not a Python dict
    assert rendered[3:] == ["join node004: joined at 10.77.0.14", "leave node003: kept (job 42 runs on node003)",
                            "leave node003: removed"]
