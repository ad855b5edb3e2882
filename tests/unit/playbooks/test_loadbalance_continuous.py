# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/loadbalance.yml in continuous mode, through ansible-playbook, without a cluster.

Continuous mode (gridengine.balancer.poll_loop) runs this command line again for every poll, with
continuous=false added last, each poll a new ansible-playbook process, so that no process lives
longer than a poll (docs/reliability/soak.md). These tests run it against the fake qmaster of
test_loadbalance_faults.py: every poll happens once, in order, in a process of its own, takes the
lock and gives it back; a failing poll ends the loop and the run fails naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.gridengine.balancer.tests.unit.playbooks.test_loadbalance_faults import (
    FIXTURES, PLAYBOOK, REPO, make_qmaster, run_ansible_playbook)


def json_documents(text):
    """Every JSON document the json callback printed: the polls' first (the loop shows their
    output), this run's own last."""
    decoder, docs, pos = json.JSONDecoder(), [], 0
    while True:
        start = text.find("{\n", pos)
        if start < 0:
            return docs
        try:
            doc, end = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        docs.append(doc)
        pos = end


def run_continuous(tmp_path, polls, **extra):
    proc = run_ansible_playbook(tmp_path, max_nodes=1, interval=1, continuous=True, max_polls=polls, **extra)
    docs = json_documents(proc.stdout)
    assert docs, "no JSON output (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    *polls_out, own = docs
    loop = [task["hosts"]["localhost"] for play in own["plays"] for task in play["tasks"]
            if task["task"]["name"] == "Poll every interval, each poll in a new process"]
    assert len(loop) == 1, own["plays"]
    calls = (tmp_path / "calls.log").read_text().splitlines() if (tmp_path / "calls.log").exists() else []
    return proc, polls_out, loop[0], calls


def poll_tasks(doc):
    """(task name, result on vm) of one poll's play on the qmaster (the one-poll play)."""
    plays = [play for play in doc["plays"] if play["play"]["name"] == "Load balance the Grid Engine cluster"]
    assert len(plays) == 1
    return [(task["task"]["name"], task["hosts"].get("vm", {})) for task in plays[0]["tasks"]]


def ran(tasks, name):
    return [res for task, res in tasks if task == name and not res.get("skipped")]


def test_every_poll_once_each_in_its_own_process_with_the_lock_given_back(tmp_path):
    make_qmaster(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"))
    proc, polls, loop, calls = run_continuous(tmp_path, 3)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the first play of this run (on the qmaster) ended at once: the polls are the loop's children
    assert loop["polls"] == 3 and not loop.get("failed")
    assert [item["poll"] for item in loop["recent"]] == [1, 2, 3]
    assert all(item["rc"] == 0 for item in loop["recent"])
    assert len({item["pid"] for item in loop["recent"]}) == 3  # a new process per poll
    assert all(item["peak_rss_kib"] > 10 * 1024 for item in loop["recent"])
    assert len(polls) == 3
    for doc in polls:
        tasks = poll_tasks(doc)
        assert len(ran(tasks, "Take the cluster's lock (one balancer at a time)")) == 1
        assert len(ran(tasks, "Decide what to add and remove")) == 1
        released = ran(tasks, "Release the cluster's lock")
        assert len(released) == 1 and released[0]["changed"] is True
    assert sum(1 for line in calls if line.startswith("qhost ")) == 3
    assert not (tmp_path / "qmaster" / "lock.json").exists()
    assert "poll_loop: poll 3 ended with exit status 0" in proc.stdout


def test_a_failing_poll_ends_the_loop_and_the_run_fails_naming_it(tmp_path):
    # qstat answers the first two polls, then the qmaster is gone
    counter = tmp_path / "qstat-count"
    make_qmaster(tmp_path, "n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s\n"
                           "[ $n -le 2 ] || { echo 'error: commlib error: got select error (Connection refused)' >&2; exit 1; }\n"
                           "cat %s\n" % (counter, counter, os.path.join(FIXTURES, "qstat_u_f_r.xml")))
    proc, polls, loop, calls = run_continuous(tmp_path, 6)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert loop["failed"] is True and loop["failed_poll"] == 3 and loop["rc"] == 2 and loop["polls"] == 3
    assert "poll 3 of 6 failed (exit status 2)" in loop["msg"]
    assert len(polls) == 3  # no poll after the failing one
    failed = ran(poll_tasks(polls[2]), "Read the queue and the hosts from the qmaster")
    assert failed and failed[0]["failed"] is True
    assert len(ran(poll_tasks(polls[2]), "Release the cluster's lock")) == 1
    assert not (tmp_path / "qmaster" / "lock.json").exists()
    assert sum(1 for line in calls if line.startswith("qhost ")) <= 3


def test_a_run_that_prompts_is_refused_before_any_poll(tmp_path):
    make_qmaster(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"))
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"children": {"faketest_master": {"hosts": {"vm": {
        "ansible_connection": "local"}}}}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    proc = subprocess.run([tool, "-i", str(inventory), PLAYBOOK, "--step", "-e", "cluster=faketest",
                           "-e", "continuous=true"], input="c\n" * 20, cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "nobody answers its prompts: run without --step" in proc.stdout
    assert not (tmp_path / "calls.log").exists()
