# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rebalance.yml keeps its lock for as long as it moves (issue 20, finding 7).

Before, the playbook took the balancer's lock with the default ttl (900 s) and never renewed it:
a run of more than about 60 moves outlasted it and a poll of loadbalance.yml could take the
cluster over in the middle of a move. Now the ttl is an option (``rebalance_lock_ttl``) and the
role renews the lock with its token before every move, so a lost lock stops the run before the
next move instead of two balancers acting at once.
"""

from __future__ import annotations

import os

from ansible.parsing.dataloader import DataLoader

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def _load(*parts):
    return DataLoader().load_from_file(os.path.join(REPO, *parts))


def _walk(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _walk(task.get(key) or [])


def test_rebalance_takes_the_lock_with_its_ttl_and_hands_the_token_to_the_role():
    # the first play with tasks (the first entry imports the cluster group check)
    (play, *_rest) = [p for p in _load("playbooks", "rebalance.yml") if "tasks" in p]
    tasks = list(_walk(play["tasks"]))
    take = [t for t in tasks if t.get("name", "").startswith("Take the balancer's lock")][0]
    assert "rebalance_lock_ttl" in str(take["gridengine.balancer.balancer_lock"]["ttl"])
    role = [t for t in tasks if "ansible.builtin.include_role" in t][0]
    assert "rebalance_lock.token" in str(role["vars"]["task_rebalance_lock_token"])
    assert "rebalance_lock_ttl" in str(role["vars"]["task_rebalance_lock_ttl"])


def test_every_move_renews_the_lock_before_it_changes_anything():
    move = _load("roles", "task_rebalance", "tasks", "move.yml")
    names = [t.get("name") for t in _walk(move)]
    renew = [t for t in _walk(move) if "gridengine.balancer.balancer_lock" in t]
    assert len(renew) == 1, names
    spec = renew[0]["gridengine.balancer.balancer_lock"]
    assert spec["token"] == "{{ task_rebalance_lock_token }}" and spec["state"] == "present"
    assert "task_rebalance_lock_ttl" in str(spec["ttl"])
    assert names.index(renew[0]["name"]) < names.index("Record the move in the registry")
    defaults = _load("roles", "task_rebalance", "defaults", "main.yml")
    assert defaults["task_rebalance_lock_token"] == ""
