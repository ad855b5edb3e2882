# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/loadbalance.yml, the real playbook through ansible-playbook, without a cluster.

The qmaster is this machine over a local connection, in a temporary directory: a fake
``SGE_ROOT`` (``cluster_sge_root``) whose ``bin/lx-amd64`` holds the Grid Engine programs the
modules look for there first (``sge_cmd.find_command``: ``$SGE_ROOT/bin/<arch>``, then PATH).
``qstat`` and ``qhost`` are scripts that fail (or print a recorded output), ``qacct`` finds no
accounting file (a new cluster); every other
Grid Engine program there refuses and logs its call, and ``settings.sh`` names port 1, so that
nothing can reach the machine's real qmaster. The lock, the journal and the state are files
under the temporary directory (``lock_path``, ``journal_path``, ``state_path``), and
``cluster_provider`` names no provider role, so a node operation could not launch anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures", "sge", "local_soge819")
PLAYBOOK = os.path.join(REPO, "playbooks", "loadbalance.yml")
ACTING = ("Record the operation as in flight", "Join ", "Drain and remove ", "Mark the operation done",
          "Add nodes", "Drain and remove idle nodes")
OTHER_PROGRAMS = ("qconf", "qmod", "qsub", "qdel", "qalter", "qrsh", "qping")

DEAD_QMASTER = ("echo 'error: commlib error: got select error (Connection refused)' >&2\n"
                "echo 'error: unable to send message to qmaster using port 1 on host \"vm\": got send error' >&2\n"
                "exit 1\n")


def make_qmaster(tmp_path, qstat, qhost=None):
    """The fake SGE_ROOT; returns its path. ``qstat``/``qhost``: shell script bodies."""
    root = tmp_path / "sge"
    (root / "default" / "common").mkdir(parents=True)
    (root / "default" / "common" / "settings.sh").write_text(
        "SGE_ROOT=%s; export SGE_ROOT\nSGE_CELL=default; export SGE_CELL\n"
        "SGE_ARCH=lx-amd64; export SGE_ARCH\nSGE_QMASTER_PORT=1; export SGE_QMASTER_PORT\n" % root)
    bin_dir = root / "bin" / "lx-amd64"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "calls.log"
    scripts = {"qstat": qstat, "qhost": qhost or "cat %s\n" % os.path.join(FIXTURES, "qhost_q.xml"),
               # a cluster without an accounting file yet (no finished job): not an error
               "qacct": "echo \"$SGE_ROOT/default/common/accounting: No such file or directory\" >&2\nexit 1\n"}
    for name in OTHER_PROGRAMS:
        scripts[name] = "echo 'fake %s: not allowed in this test' >&2\nexit 97\n" % name
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text('#!/bin/sh\necho "%s $*" >> %s\n%s' % (name, calls, body))
        path.chmod(0o755)
    return root


def run_playbook(tmp_path, check=False, **extra):
    """loadbalance.yml on the fake qmaster with the test's variables (``extra`` overrides them);
    (the process, the json callback's output)."""
    proc = run_ansible_playbook(tmp_path, check, **extra)
    try:
        # from the first "{" line: the pause module (between polls) prints its own lines first
        out = json.loads(proc.stdout[proc.stdout.index("{\n"):])
    except ValueError:  # pragma: no cover - shown when the play itself broke
        raise AssertionError("ansible-playbook printed no JSON (rc %d):\n%s\n%s"
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc, out


def run_ansible_playbook(tmp_path, check=False, **extra):
    """The ansible-playbook process of :func:`run_playbook` (json callback), its output unparsed."""
    qmaster = tmp_path / "qmaster"
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"children": {"faketest": {"children": {"faketest_master": {
        "hosts": {"vm": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}}}))
    variables = {"cluster": "faketest", "cluster_sge_root": str(tmp_path / "sge"), "cluster_provider": "nonexistent",
                 "lock_path": str(qmaster / "lock.json"), "journal_path": str(qmaster / "journal.json"),
                 "state_path": str(qmaster / "state.json"), "max_nodes": 2, "min_nodes": 1, "interval": 60,
                 "idle_time": 600, "stabilization_time": 300}
    variables.update(extra)
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    argv = [tool, "-i", str(inventory), PLAYBOOK, "-e", json.dumps(variables)] + (["--check"] if check else [])
    return subprocess.run(argv, cwd=str(tmp_path), env=playbook_env(), capture_output=True, text=True, timeout=300,
                          check=False)


def playbook_env():
    """The environment of these tests' ansible-playbook: this checkout's collections, the json
    callback, no ansible.cfg of ours, no warnings that are not the test's."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_HOST_KEY_CHECKING="0")
    env.pop("ANSIBLE_CONFIG", None)
    return env


def balancer_plays(out):
    """The plays on the qmaster: all but the first, the cluster group check on localhost
    (playbooks/common/cluster_group.yml)."""
    assert out["plays"][0]["play"]["name"] == "Check the cluster's inventory group", out["plays"][0]["play"]
    return out["plays"][1:]


def run_poll(tmp_path, check=False, **extra):
    proc, out = run_playbook(tmp_path, check, **extra)
    tasks = [(t["task"]["name"], t["hosts"].get("vm", {})) for t in balancer_plays(out)[0]["tasks"]]
    calls = (tmp_path / "calls.log").read_text().splitlines() if (tmp_path / "calls.log").exists() else []
    return proc.returncode, tasks, calls, proc


def names(tasks):
    return [name for name, _res in tasks]


def acted(tasks):
    """Tasks that join or remove a node and really ran (an include over no node is skipped)."""
    return [name for name, res in tasks if name.startswith(ACTING)
            and not (res.get("skipped") or res.get("results") == [])]


def result(tasks, name):
    found = [res for task, res in tasks if task == name]
    assert found, "task %r did not run: %s" % (name, names(tasks))
    return found[-1]


def assert_nothing_acted(tasks, calls, tmp_path):
    ran = names(tasks)
    assert not acted(tasks), ran
    assert "Decide what to add and remove" not in ran
    assert not (tmp_path / "qmaster" / "state.json").exists()  # no state written
    assert not (tmp_path / "qmaster" / "journal.json").exists()
    assert not [c for c in calls if c.split()[0] in OTHER_PROGRAMS]
    # the lock was released by the block's always: nothing is left behind
    # (the json callback shows the task's action under "action": the module's is in "lock")
    released = result(tasks, "Release the cluster's lock")
    assert released["changed"] is True and not released.get("failed") and released["lock"] is None
    assert not (tmp_path / "qmaster" / "lock.json").exists()


@pytest.mark.parametrize("qstat, qhost, words, programs", [
    (DEAD_QMASTER, None,
     "qstat -u '*' -f -r -xml failed (rc 1): error: commlib error: got select error (Connection refused); "
     "no snapshot returned", ["qstat"]),
    # qstat's listing is parsed as it arrives: nothing more is run after one that does not parse
    ("printf \"<?xml version='1.0'?>\\n<job_info><queue_info>\"\n", None, "qstat -xml: ", ["qstat"]),
    ("exit 0\n", None, "qstat -u '*' -f -r -xml exited 0 but printed nothing; no snapshot returned", ["qstat"]),
    ("cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"), DEAD_QMASTER,
     "qhost -q -xml failed (rc 1): error: commlib error: got select error (Connection refused); no snapshot returned",
     ["qstat", "qhost"]),
], ids=["dead-qmaster", "broken-xml", "empty-output", "qhost-fails"])
def test_poll_with_a_failing_qstat_stops_before_anything_acts(tmp_path, qstat, qhost, words, programs):
    make_qmaster(tmp_path, qstat, qhost)
    rc, tasks, calls, proc = run_poll(tmp_path)
    assert rc == 2, proc.stderr[-2000:]
    failed = result(tasks, "Read the queue and the hosts from the qmaster")
    assert failed["failed"] is True and words in failed["msg"]
    assert "ansible_facts" not in failed
    assert [c.split()[0] for c in calls] == programs
    assert_nothing_acted(tasks, calls, tmp_path)


def test_poll_with_a_hanging_qstat_stops_after_command_timeout(tmp_path):
    """command_timeout is a playbook variable handed to sge_queue_facts: a qmaster that does not
    answer (here a qstat that sleeps) fails the poll after it, not after the module's 120 s."""
    make_qmaster(tmp_path, "sleep 60\n")
    started = time.monotonic()
    rc, tasks, calls, proc = run_poll(tmp_path, command_timeout=2)
    elapsed = time.monotonic() - started
    assert rc == 2, proc.stderr[-2000:]
    failed = result(tasks, "Read the queue and the hosts from the qmaster")
    assert failed["failed"] is True
    assert "qstat -u '*' -f -r -xml did not finish within 2s and was killed" in failed["msg"], failed["msg"]
    assert [c.split()[0] for c in calls] == ["qstat"]
    assert_nothing_acted(tasks, calls, tmp_path)
    assert elapsed < 45, elapsed  # the sleep (60 s) was not waited for


def test_poll_with_a_corrupt_journal_stops_before_reading_the_cluster(tmp_path):
    make_qmaster(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"))
    (tmp_path / "qmaster").mkdir(mode=0o700)
    journal = tmp_path / "qmaster" / "journal.json"
    text = '{"schema": 1, "operations": [{"node": "node007", "operation": "jo'  # cut short
    journal.write_text(text)
    rc, tasks, calls, proc = run_poll(tmp_path)
    assert rc == 2, proc.stderr[-2000:]
    failed = result(tasks, "Read the journal of node operations in flight")
    assert failed["failed"] is True and "journal %s is not valid JSON" % journal in failed["msg"]
    assert "the balancer does not act while it cannot tell which node operations" in failed["msg"]
    assert calls == []  # the cluster was not even read
    assert journal.read_text() == text  # left as it is
    ran = names(tasks)
    assert not acted(tasks) and "Decide what to add and remove" not in ran
    assert not (tmp_path / "qmaster" / "lock.json").exists()


def _warnings(res):
    return " ".join(w["event"]["msg"] if isinstance(w, dict) and "event" in w else str(w)
                    for w in res.get("warnings", []))


def test_poll_with_a_corrupt_state_decides_from_an_empty_state_and_removes_nothing(tmp_path):
    make_qmaster(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"))
    (tmp_path / "qmaster").mkdir(mode=0o700)
    state = tmp_path / "qmaster" / "state.json"
    state.write_text('{"schema": 1, "last_poll": 1700000000.0, "nodes": {"node002": {"first_se')
    # check mode first: shows what would happen, moves and writes nothing
    rc, tasks, calls, proc = run_poll(tmp_path, check=True)
    assert rc == 0, proc.stderr[-2000:]
    plan = result(tasks, "Decide what to add and remove")
    assert "it would be moved aside" in _warnings(plan)
    assert plan["plan"]["add"] == 0 and plan["plan"]["remove"] == []
    assert sorted(os.listdir(tmp_path / "qmaster")) == ["state.json"]
    # for real
    rc, tasks, calls, proc = run_poll(tmp_path)
    assert rc == 0, proc.stderr[-2000:]
    plan = result(tasks, "Decide what to add and remove")
    moved = plan["state_corrupt"]["moved_to"]
    assert ("moved it aside to %s" % moved) in _warnings(plan) and os.path.exists(moved)
    assert plan["plan"]["add"] == 0 and plan["plan"]["remove"] == []
    assert not acted(tasks), [(n, r) for n, r in tasks if n.startswith(ACTING)]
    assert "Drain and remove idle nodes" in names(tasks)  # reached, over no node
    saved = json.loads(state.read_text())
    assert saved["schema"] == 1 and set(saved["nodes"]) == {"vm", "node002"}
    assert not [c for c in calls if c.split()[0] in OTHER_PROGRAMS]
    released = result(tasks, "Release the cluster's lock")
    assert released["changed"] is True and not released.get("failed")
    assert sorted(os.listdir(tmp_path / "qmaster")) == sorted(
        [".lock.json.guard", "state.json", os.path.basename(moved)])
