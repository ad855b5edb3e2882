# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/loadbalance.yml in continuous mode, through ansible-playbook, without a cluster.

Continuous mode runs its polls in segments, one play each (playbooks/continuous/), because
Ansible frees the tasks a play included only when the play ends (docs/reliability/soak.md).
These tests run it with two polls per segment (segment_polls=2) against the fake qmaster of
test_loadbalance_faults.py: every poll happens once, in order; the lock is taken once, renewed
by every later poll and released once at the very end, or as soon as a poll fails.
"""

from __future__ import annotations

import os

from ansible_collections.gridengine.balancer.tests.unit.playbooks.test_loadbalance_faults import (
    FIXTURES, balancer_plays, make_qmaster, run_playbook)


def run_continuous(tmp_path, polls):
    proc, out = run_playbook(tmp_path, max_nodes=1, interval=1, continuous=True, max_polls=polls, segment_polls=2)
    # (play index, task name, result on vm) for every task that ran on the master
    ran = [(index, task["task"]["name"], task["hosts"]["vm"]) for index, play in enumerate(balancer_plays(out))
           for task in play["tasks"] if "vm" in task["hosts"]]
    return proc, ran


def _did(ran, name):
    return [(index, res) for index, task, res in ran if task == name and not res.get("skipped")]


def test_every_poll_once_in_segments_with_one_lock(tmp_path):
    make_qmaster(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml"))
    proc, ran = run_continuous(tmp_path, 5)
    assert proc.returncode == 0, proc.stderr[-3000:]
    decisions = _did(ran, "Decide what to add and remove")
    assert [index for index, _res in decisions] == [0, 0, 1, 1, 2]  # 5 polls: segments of 2, 2, 1
    assert len(_did(ran, "Take the cluster's lock (one balancer at a time)")) == 1
    renewed = _did(ran, "Renew the cluster's lock")
    assert len(renewed) == 4 and all(not res.get("failed") for _i, res in renewed)
    released = _did(ran, "Release the cluster's lock")
    assert [index for index, _res in released] == [2] and released[0][1]["changed"] is True
    assert not (tmp_path / "qmaster" / "lock.json").exists()
    assert len(_did(ran, "Wait for the next poll")) == 4  # between polls, also across segments


def test_a_failing_poll_ends_the_run_and_releases_the_lock(tmp_path):
    # qstat answers the first three polls, then the qmaster is gone
    counter = tmp_path / "qstat-count"
    make_qmaster(tmp_path, "n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s\n"
                           "[ $n -le 3 ] || { echo 'error: commlib error: got select error (Connection refused)' >&2; exit 1; }\n"
                           "cat %s\n" % (counter, counter, os.path.join(FIXTURES, "qstat_u_f_r.xml")))
    proc, ran = run_continuous(tmp_path, 8)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert [index for index, _res in _did(ran, "Decide what to add and remove")] == [0, 0, 1]
    failed = [(index, res) for index, task, res in ran if task == "Read the queue and the hosts from the qmaster"
              and res.get("failed")]
    assert [index for index, _res in failed] == [1]
    released = _did(ran, "Release the cluster's lock")
    assert [index for index, _res in released] == [1] and released[0][1]["changed"] is True
    assert not (tmp_path / "qmaster" / "lock.json").exists()
    assert max(index for index, _task, _res in ran) == 1  # no later segment ran
