# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The master's host-files lock of node_join and node_leave (roles/node_join/tasks/locked.yml).

Two clusters on one master (a home and its burst partner, docs/burst.md) join and leave nodes at
the same time, and each join or leave rewrites the master's /etc/hosts and exports file (read,
change, rename). Without a lock across clusters one writer silently drops the other's line. The
plays here run the roles' own locked.yml for real on localhost, around an edit that pauses between
its read and its write: two writers at once must keep every line; a lock whose holder died is
taken over after its ttl; the master-side edits of node_join, node_leave and sge_cell go through
locked.yml only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from ansible.parsing.dataloader import DataLoader

from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_lock
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import check_cluster_name

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def _start(role, writer, lines, lock, target, ttl=60):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_NOCOLOR="1")
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    extra = {"role": role, "writer": writer, "lines": lines, "lock": lock, "target": target, "ttl": ttl}
    return subprocess.Popen([tool, os.path.join(HERE, "host_files_lock_play.yml"), "-e", json.dumps(extra)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc):
    out, dummy = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-4000:]
    return out


def _lines(target):
    with open(target, encoding="utf-8") as handle:
        return [line.split() for line in handle.read().splitlines()]


def test_a_join_and_a_leave_of_two_clusters_at_once_keep_every_line(tmp_path):
    lock = str(tmp_path / "locks" / "host-files.lock.json")
    target = str(tmp_path / "hosts")
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("")
    home = _start("node_join", "mycluster", ["node%03d" % k for k in range(1, 4)], lock, target)
    partner = _start("node_leave", "burst", ["burst%03d" % k for k in range(1, 4)], lock, target)
    _finish(home)
    _finish(partner)
    written = _lines(target)
    # every line is there: each edit read the file after the previous one wrote it
    assert sorted(name for name, dummy in written) == sorted(
        ["node001", "node002", "node003", "burst001", "burst002", "burst003"])
    stamps = [float(stamp) for dummy, stamp in written]
    assert stamps == sorted(stamps)
    # and the lock was given back after the last edit
    assert not os.path.exists(lock)


def test_the_lock_of_a_holder_that_died_is_taken_over_after_its_ttl(tmp_path):
    lock = str(tmp_path / "locks" / "host-files.lock.json")
    target = str(tmp_path / "hosts")
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("")
    # a join that died holding the lock: nobody gives it back
    balancer_lock.acquire(lock, "node_join cluster=burst node=burst009 (died)", ttl=4)
    taken = time.time()
    _finish(_start("node_join", "mycluster", ["node001"], lock, target, ttl=4))
    (name, stamp), = _lines(target)
    assert name == "node001" and float(stamp) >= taken + 4
    assert not os.path.exists(lock)


def _tasks(path):
    return DataLoader().load_from_file(os.path.join(REPO, path)) or []


def _walk(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _walk(task.get(key) or [])


@pytest.mark.parametrize("role, edits", [("node_join", {"master_hosts.yml", "exports.yml"}),
                                         ("node_leave", {"master_hosts.yml", "unexport.yml"}),
                                         ("sge_cell", {"hosts_add.yml", "hosts_remove.yml"})])
def test_the_master_side_edits_run_only_under_the_lock(role, edits):
    tasks_dir = os.path.join(REPO, "roles", role, "tasks")
    included = {}
    for name in sorted(os.listdir(tasks_dir)):
        for task in _walk(_tasks(os.path.join("roles", role, "tasks", name))):
            # the master's own files: nfs_export, or /etc/hosts not delegated to a node
            edits_master = "gridengine.balancer.nfs_export" in task or (
                "ansible.builtin.lineinfile" in task and "delegate_to" not in task)
            if edits_master:
                assert name in edits, (role, name, task.get("name"))
            for key in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks"):
                if key in task:
                    target = task[key]["file"] if isinstance(task[key], dict) else task[key]
                    included.setdefault(target, []).append(task.get("vars") or {})
    # each edit file is reached only through locked.yml, which includes what it is given
    for name in edits:
        assert name not in included, (role, name)
    given = sorted(v["%s_locked_tasks" % role] for v in included["locked.yml"])
    assert sorted(set(given)) == sorted(edits)
    locked = _tasks(os.path.join("roles", role, "tasks", "locked.yml"))
    assert locked[0]["gridengine.balancer.balancer_lock"]["path"] == "{{ %s_host_files_lock }}" % role
    assert locked[0]["until"] == "%s_host_files is succeeded" % role
    assert locked[1]["always"][0]["gridengine.balancer.balancer_lock"]["state"] == "absent"


def test_one_lock_path_for_every_role_that_no_cluster_can_take():
    paths = set()
    for role in ("node_join", "node_leave", "sge_cell"):
        defaults = _tasks(os.path.join("roles", role, "defaults", "main.yml"))
        paths.add(defaults["%s_host_files_lock" % role])
        if role != "sge_cell":
            assert int(defaults["%s_host_files_lock_ttl" % role]) < int(defaults["%s_host_files_lock_wait" % role])
    path, = paths
    directory = path.split("default('")[1].split("')")[0].split("/")[4]
    with pytest.raises(ValueError):
        check_cluster_name(directory)  # not a cluster's directory of /var/lib/gridengine-balancer
