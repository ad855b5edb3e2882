# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A drain that moves task data during a loadbalance poll renews the poll's lock (issue 20, finding 7).

node_leave's drain includes task_rebalance (mode drain) when ``node_leave_move_tasks`` is on. The
role renews the lock whose token it is given before every move (test_task_rebalance_lock.py);
before, node_leave gave it none, so a drain with many moves during a poll could outlast the
poll's lock. The token is the one loadbalance.yml registers (``balancer_lock``), the ttl the
poll's (``balancer_lock_ttl``); without a poll (node_remove.yml) the token is empty: no lock.
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


def test_the_drain_hands_the_polls_lock_to_task_rebalance():
    drain = list(_walk(_load("roles", "node_leave", "tasks", "drain.yml")))
    (include,) = [t for t in drain if (t.get("ansible.builtin.include_role") or {}).get("name")
                  == "gridengine.balancer.task_rebalance"]
    given = include["vars"]
    assert given["task_rebalance_lock_token"] == "{{ balancer_lock.token | default('') }}"
    assert given["task_rebalance_lock_ttl"] == "{{ balancer_lock_ttl | default(900) }}"
    # the names are the role's own options
    options = _load("roles", "task_rebalance", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert {"task_rebalance_lock_token", "task_rebalance_lock_ttl"} <= set(given) & set(options)
    # and the poll's: loadbalance.yml registers the lock as balancer_lock, its vars give the ttl
    # the first play with tasks (the first entry imports the cluster group check)
    (play, *_rest) = [p for p in _load("playbooks", "loadbalance.yml") if "tasks" in p]
    take = [t for t in play["tasks"] if "gridengine.balancer.balancer_lock" in t][0]
    assert take["register"] == "balancer_lock"
    assert "balancer_lock_ttl" in _load("playbooks", "vars", "loadbalance_run.yml")


def test_without_a_poll_no_lock_is_renewed():
    """node_remove.yml takes no lock: the token renders empty, and the role renews nothing."""
    from ansible.template import Templar, trust_as_template  # pylint: disable=import-outside-toplevel

    drain = list(_walk(_load("roles", "node_leave", "tasks", "drain.yml")))
    (include,) = [t for t in drain if "ansible.builtin.include_role" in t]
    token, ttl = include["vars"]["task_rebalance_lock_token"], include["vars"]["task_rebalance_lock_ttl"]
    templar = Templar(loader=DataLoader(), variables={})
    assert templar.template(trust_as_template(token)) == ""
    assert int(templar.template(trust_as_template(ttl))) == 900
    templar = Templar(loader=DataLoader(), variables={"balancer_lock": {"token": "t0k"}, "balancer_lock_ttl": "1800"})
    assert templar.template(trust_as_template(token)) == "t0k"
    assert int(templar.template(trust_as_template(ttl))) == 1800
