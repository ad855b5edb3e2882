# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The task rebalancer's stage directory on the controller (issue 20, finding 2).

Before, every run used ``$TMPDIR/gridengine-balancer-moves``: a directory another user created
first was chmod-ed and kept that user's ownership, and ``fetch`` wrote through a link planted in
it. Now each run makes a fresh private directory (``ansible.builtin.tempfile``, mkdtemp: a new
name, mode 0700, the controller's user), checks it, writes the archives only there and removes it.
The play runs the role's ``stage.yml`` for real on localhost, with such a planted directory in
the parent.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from ansible.parsing.dataloader import DataLoader

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
ROLE = os.path.join(REPO, "roles", "task_rebalance")


def _play(parent):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1")
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    proc = subprocess.run([tool, os.path.join(HERE, "task_rebalance_stage_play.yml"),
                           "-e", json.dumps({"task_rebalance_stage_dir": parent})],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    tasks = {t["task"]["name"].split(" : ")[-1]: t["hosts"].get("localhost", {}) for t in out["plays"][0]["tasks"]}
    return tasks["Show the stage directory"]["task_rebalance_stage.path"]


def test_each_run_gets_a_fresh_private_stage_directory(tmp_path):
    parent = tmp_path / "tmp"
    parent.mkdir()
    os.chmod(str(parent), 0o1777)
    # what another user leaves there first: the old fixed name, with a link to a root-owned file
    planted = parent / "gridengine-balancer-moves"
    planted.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("root's file")
    os.symlink(str(victim), str(planted / "mycluster.logs.3.tar"))
    if os.geteuid() == 0:
        os.chown(str(planted), 65534, 65534)
    first, second = _play(str(parent)), _play(str(parent))
    assert first != second
    for path in (first, second):
        assert os.path.dirname(path) == str(parent)
        assert os.path.basename(path).startswith("gridengine-balancer-moves.")
        st = os.lstat(path)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
        assert st.st_uid == os.geteuid()
        assert os.listdir(path) == []
    assert victim.read_text() == "root's file"
    assert stat.S_IMODE(os.lstat(str(planted)).st_mode) == 0o755     # left as it was


def _tasks(name):
    return DataLoader().load_from_file(os.path.join(ROLE, "tasks", name))


def test_archives_are_staged_only_in_the_private_directory():
    defaults = DataLoader().load_from_file(os.path.join(ROLE, "defaults", "main.yml"))
    assert "gridengine-balancer-moves" not in defaults["task_rebalance_stage_dir"]
    names = [t.get("name") for t in _tasks("move.yml")]
    assert "Create the stage directory on the controller" not in names
    move = _tasks("move.yml")
    stage_var = [t for t in move if t.get("name") == "Name the move"][0]["ansible.builtin.set_fact"]["task_rebalance_m_stage"]
    assert stage_var.strip().startswith("{{ task_rebalance_stage.path }}/"), stage_var
    main = json.dumps(_tasks("main.yml"))
    assert "stage.yml" in main and "Remove this run's stage directory" in main
