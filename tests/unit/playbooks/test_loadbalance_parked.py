# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node operation that keeps failing is parked, and the polls go on (issue 20, finding 6).

playbooks/loadbalance.yml, the real playbook through ``ansible-playbook``, one poll per run, on the
fake qmaster of test_loadbalance_faults.py (this machine over a local connection, a fake
``SGE_ROOT`` whose programs are also first in ``PATH``, lock, journal and state in a temporary
directory). The snapshot shows three idle hosts: vm (the master), node002 and node005, both
managed by the balancer (``managed_hosts``), so every poll that gets to its plan removes both.

- node005's leave always fails at the drain's ``qselect`` (the fake refuses it): before the
  drain changes anything, as a hosts line that cannot be parsed once failed after it.
- node002's leave always ends well without changing anything: the drain finds a job on it
  (``qstat -g t``) and keeps the node (``removed: false``), so its record leaves the journal.

No stage that writes ``/etc/hosts``, exports or Grid Engine objects can run: node005 stops at
``qselect``, node002 before it; the fake ``qconf`` answers only ``-sel``, every other Grid Engine
program that changes something refuses and logs its call.

Before the change, every poll after the first failure replayed node005's leave into the same
failure and stopped there: the plan was never made again and node002 never acted on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from ansible_collections.gridengine.balancer.tests.unit.playbooks.test_loadbalance_faults import (
    OTHER_PROGRAMS, balancer_plays, make_qmaster, playbook_env)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PLAYBOOK = os.path.join(REPO, "playbooks", "loadbalance.yml")
CLUSTER = "faketest"
WARN_TASK = "Warn about parked node operations (a person must look)"

QUEUE = ("    <Queue-List>\n      <name>all.q@{0}</name>\n      <qtype>BIP</qtype>\n"
         "      <slots_used>0</slots_used>\n      <slots_resv>0</slots_resv>\n      <slots_total>2</slots_total>\n"
         "      <load_avg>0.01</load_avg>\n      <arch>lx-amd64</arch>\n    </Queue-List>\n")
SNAPSHOT = ("<?xml version='1.0'?>\n<job_info>\n  <queue_info>\n%s  </queue_info>\n  <job_info>\n  </job_info>\n"
            "</job_info>\n" % "".join(QUEUE.format(h) for h in ("node002", "node005", "vm")))
HOST = (" <host name='{0}'>\n   <hostvalue name='arch_string'>lx-amd64</hostvalue>\n"
        "   <hostvalue name='num_proc'>2</hostvalue>\n   <hostvalue name='load_avg'>0.01</hostvalue>\n"
        "   <hostvalue name='mem_total'>2.0G</hostvalue>\n   <hostvalue name='mem_used'>100.0M</hostvalue>\n"
        "   <hostvalue name='swap_total'>0.0</hostvalue>\n   <hostvalue name='swap_used'>0.0</hostvalue>\n"
        " <queue name='all.q'>\n   <queuevalue qname='all.q' name='qtype_string'>BIP</queuevalue>\n"
        "   <queuevalue qname='all.q' name='slots_used'>0</queuevalue>\n"
        "   <queuevalue qname='all.q' name='slots'>2</queuevalue>\n"
        "   <queuevalue qname='all.q' name='slots_resv'>0</queuevalue>\n"
        "   <queuevalue qname='all.q' name='state_string'></queuevalue>\n </queue>\n </host>\n")
QHOST = ("<?xml version='1.0'?>\n<qhost>\n <host name='global'>\n   <hostvalue name='arch_string'>-</hostvalue>\n"
         " </host>\n%s</qhost>\n" % "".join(HOST.format(h) for h in ("node002", "node005", "vm")))
# qstat -u '*' -s rs -g t -xml, as node_leave's drain asks it: job 42 runs on node002
JOBS = ("<?xml version='1.0'?>\n<job_info>\n  <queue_info>\n    <job_list state=\"running\">\n"
        "      <JB_job_number>42</JB_job_number>\n      <state>r</state>\n"
        "      <queue_name>all.q@node002</queue_name>\n      <slots>1</slots>\n    </job_list>\n"
        "  </queue_info>\n  <job_info>\n  </job_info>\n</job_info>\n")


def setup(tmp_path):
    """The fake qmaster: the snapshot above, node_leave's reads answered, the rest refused."""
    root = make_qmaster(tmp_path, "")
    (root / "default" / "common" / "act_qmaster").write_text("vm\n")
    bin_dir = root / "bin" / "lx-amd64"
    (tmp_path / "snapshot.xml").write_text(SNAPSHOT)
    (tmp_path / "jobs.xml").write_text(JOBS)
    (tmp_path / "qhost.xml").write_text(QHOST)
    calls = tmp_path / "calls.log"
    bodies = {
        "qstat": 'case "$*" in *"-g t"*) cat %s;; *) cat %s;; esac\n' % (
            tmp_path / "jobs.xml", tmp_path / "snapshot.xml"),
        "qhost": "cat %s\n" % (tmp_path / "qhost.xml"),
        "qconf": ("[ \"$*\" = -sel ] && { printf 'node002\\nnode005\\nvm\\n'; exit 0; }\n"
                  "echo 'fake qconf: not allowed in this test' >&2\nexit 97\n"),
        "qselect": "echo 'fake qselect: not allowed in this test' >&2\nexit 97\n",
    }
    for name, body in bodies.items():
        path = bin_dir / name
        path.write_text('#!/bin/sh\necho "%s $*" >> %s\n%s' % (name, calls, body))
        path.chmod(0o755)
    (tmp_path / "qmaster").mkdir(mode=0o700)
    now = time.time()
    # the balancer has known the nodes for two hours, idle for one
    nodes = {n: {"first_seen": now - 7200, "joined": now - 7200, "last_busy": now - 3600}
             for n in ("vm", "node002", "node005")}
    (tmp_path / "qmaster" / "state.json").write_text(json.dumps({
        "schema": 1, "last_poll": now - 60, "cluster_size": 3, "nodes": nodes, "booting": [], "jobs": {}}))


def run_poll(tmp_path, **extra):
    """One poll; (rc, [(task name, result on vm)], Grid Engine calls of this poll, process)."""
    qmaster = tmp_path / "qmaster"
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"children": {CLUSTER: {"children": {CLUSTER + "_master": {
        "hosts": {"vm": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}}}))
    variables = {"cluster": CLUSTER, "cluster_sge_root": str(tmp_path / "sge"), "cluster_provider": "nonexistent",
                 "lock_path": str(qmaster / "lock.json"), "journal_path": str(qmaster / "journal.json"),
                 "state_path": str(qmaster / "state.json"), "min_nodes": 1, "max_nodes": 3, "interval": 60,
                 "idle_time": 0, "stabilization_time": 0, "managed_hosts": ["node002", "node005"],
                 "drain_settle_time": 0, "node_operation_max_attempts": 2}
    variables.update(extra)
    env = playbook_env()
    # node_leave runs qconf, qstat, qselect from PATH: the fakes come first, never this machine's Grid Engine
    env["PATH"] = "%s:%s" % (tmp_path / "sge" / "bin" / "lx-amd64", env.get("PATH", ""))
    calls_log = tmp_path / "calls.log"
    if calls_log.exists():
        calls_log.unlink()
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    proc = subprocess.run([tool, "-i", str(inventory), PLAYBOOK, "-e", json.dumps(variables)], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    try:
        out = json.loads(proc.stdout[proc.stdout.index("{\n"):])
    except ValueError:  # pragma: no cover - shown when the play itself broke
        raise AssertionError("ansible-playbook printed no JSON (rc %d):\n%s\n%s"
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    tasks = [(t["task"]["name"].split(" : ")[-1], t["hosts"].get("vm", {})) for t in balancer_plays(out)[0]["tasks"]]
    calls = calls_log.read_text().splitlines() if calls_log.exists() else []
    return proc.returncode, tasks, calls, proc


def journal(tmp_path):
    path = tmp_path / "qmaster" / "journal.json"
    return {e["node"]: e for e in json.loads(path.read_text())["operations"]} if path.exists() else {}


def ran(tasks, name_start):
    """Results of the tasks whose name starts so and that really ran (not skipped)."""
    return [res for name, res in tasks if name.startswith(name_start) and not res.get("skipped")]


def leaves(tasks):
    """The nodes whose node_leave role ran its first check in this poll, in order."""
    return [res["invocation"]["module_args"]["node"] for res in ran(tasks, "Record the operation as in flight")
            if res.get("record", {}).get("operation") == "leave"
            and not res.get("record", {}).get("parked")]


def drained(calls):
    """The nodes whose drain got to qselect (node005 fails there)."""
    return [c.split("@")[-1] for c in calls if c.startswith("qselect ")]


def test_a_leave_that_keeps_failing_is_parked_and_the_polls_go_on(tmp_path):
    setup(tmp_path)

    # poll 1: the plan removes node002 and node005; node005's leave fails (a first failure: the
    # poll fails, as before, so the run shows red) and its record keeps the error
    rc, tasks, calls, proc = run_poll(tmp_path)
    assert rc == 2, proc.stderr[-3000:]
    plan = ran(tasks, "Decide what to add and remove")[0]["plan"]
    assert sorted(plan["remove"]) == ["node002", "node005"], plan
    assert drained(calls) == ["node005"]
    record = journal(tmp_path)["node005"]
    assert record["operation"] == "leave" and not record.get("parked") and record.get("attempts", 0) == 0
    assert "qselect" in record["detail"]["last_error"], record
    # the run's failure is the failed task's, raised again after the rescue kept the error
    failed = [(name, res) for name, res in tasks if res.get("failed")]
    assert [name for name, res in failed] == ["List the node's queue instances"] * 2, failed
    assert not (tmp_path / "qmaster" / "lock.json").exists()  # released: the run ended at the failure
    assert failed[-1][1]["msg"].startswith("non-zero return code [leave node005 failed (first attempt): "
                                           "List the node's queue instances: non-zero return code "
                                           "(fake qselect: not allowed in this test). The journal keeps"), failed[-1]

    # polls 2 and 3: the journal replays the leave (attempts 1 and 2 of node_operation_max_attempts=2)
    # and it fails again; the poll stops there, before reading the cluster
    for attempt in (1, 2):
        rc, tasks, calls, proc = run_poll(tmp_path)
        assert rc == 2, proc.stderr[-3000:]
        assert not ran(tasks, "Decide what to add and remove")
        assert drained(calls) == ["node005"]
        record = journal(tmp_path)["node005"]
        assert record["attempts"] == attempt and not record.get("parked"), record
        assert "qselect" in record["last_error"]

    # poll 4: the third replay finds the limit reached: the record is parked (kept, with the last
    # error), the leave is not run, a warning says what to do, and the poll goes on: the plan is
    # made, node002 is acted on (its drain finds job 42 and keeps it), node005 is skipped
    rc, tasks, calls, proc = run_poll(tmp_path)
    assert rc == 0, proc.stderr[-3000:]
    record = journal(tmp_path)["node005"]
    assert record["parked"] is True and record["attempts"] == 2 and "qselect" in record["last_error"]
    assert "parked after 2 attempts" in json.dumps(ran(tasks, "Record the operation as in flight")[0])
    plan = ran(tasks, "Decide what to add and remove")[0]["plan"]
    assert sorted(plan["remove"]) == ["node002", "node005"], plan
    assert drained(calls) == []  # node005's drain did not run, node002's stopped at the job
    assert "qstat -u * -s rs -g t -xml" in calls  # node002's drain read its jobs
    outcome = [res["msg"] for res in ran(tasks, "Show the outcome for")]
    assert len(outcome) == 1 and "leave node002" in outcome[0] and "job 42 runs on node002" in outcome[0]
    assert set(journal(tmp_path)) == {"node005"}  # node002's leave ended: its record is gone
    warning = json.dumps(ran(tasks, WARN_TASK))
    assert "node005" in warning and "state=absent" in warning, warning
    assert not [c for c in calls if c.split()[0] in OTHER_PROGRAMS and c != "qconf -sel"], calls

    # poll 5: the parked record is not replayed; the warning is repeated; the poll goes on
    rc, tasks, calls, proc = run_poll(tmp_path)
    assert rc == 0, proc.stderr[-3000:]
    assert leaves(tasks) == ["node002"]  # node005's leave is neither replayed nor started again
    assert ran(tasks, "Decide what to add and remove")
    # one line per item of the message (a list: readable under the default callback)
    warning = " ".join(line for res in ran(tasks, WARN_TASK) for item in res["results"] for line in item["msg"])
    assert ("ansible faketest_master -m gridengine.balancer.balancer_journal -a 'cluster=faketest node=node005 "
            "state=absent path=%s'" % (tmp_path / "qmaster" / "journal.json")) in warning, warning
    assert "qselect" in warning  # the last error
    assert journal(tmp_path)["node005"]["parked"] is True  # still there until a person removes it
