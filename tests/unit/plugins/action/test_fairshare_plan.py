# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin fairshare_plan: the state it returns for the next round (accounts, last round),
measured usage from real qacct output, and its input errors."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gridengine.balancer.plugins.action import fairshare_plan as action

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
D = {"alpha": 50, "beta": 50}


def _read(*parts):
    with open(os.path.join(FIX, *parts)) as handle:
        return handle.read()


def snapshot(taken_at, running=(), pending=("alpha", "beta")):
    return dict(taken_at=taken_at,
                hosts=dict((h, dict(slots_total=10, states="", queues=["all.q"])) for h in ("n1", "n2")),
                running=list(running),
                pending=[dict(project=p) for p in pending])


def test_first_round_keeps_time_and_accounts_in_the_state():
    out = action.plan(dict(snapshot=snapshot(1000.0), desired=D, temporal="compensate"))
    assert out["usage_source"] == "snapshot" and out["usage_window"] is None
    st = out["state"]
    assert st["schema"] == 1 and st["last_round"] == 1000.0
    assert st["temporal"] == "compensate" and st["allocation"] == "bank"
    assert set(st["accounts"]) == {"cluster"}
    assert set(st["accounts"]["cluster"]) == {"alpha", "beta"}


def test_accounts_carry_over_only_for_the_same_setting():
    state = dict(schema=1, last_round=900.0, temporal="compensate", allocation="bank",
                 hostgroups=[], accounts={"cluster": {"beta": 60.0}})
    out = action.plan(dict(snapshot=snapshot(1000.0), desired=D, temporal="compensate",
                           state=state))
    assert out["percent"]["n1"]["beta"] > 50.0
    assert "remarks" not in out
    out = action.plan(dict(snapshot=snapshot(1000.0), desired=D, temporal="compensate",
                           state=state, hostgroups={"@a": ["n1"], "@b": ["n2"]}))
    assert out["percent"]["n1"]["beta"] == pytest.approx(50.0)
    assert "start again from zero" in out["remarks"][0]
    assert set(out["state"]["accounts"]) == {"top", "@a", "@b"}
    assert out["state"]["hostgroups"] == ["@a", "@b"]


def test_measured_usage_from_real_qacct_output():
    # real UGE qacct -j output with a project (fixtures/sge/PROVENANCE.md); the window covers it
    text = _read("sge", "misc", "riboviz_eddie_uge_qacct_j.txt")
    start = float(calendar.timegm((2020, 6, 11, 13, 22, 37, 0, 0, 0)))
    desired = {"uoe_baseline": 50, "other": 50}
    snap = snapshot(start + 600.0, pending=())
    snap["hosts"] = {"node1c17.ecdf.ed.ac.uk": dict(slots_total=4, states="")}
    state = dict(last_round=start - 600.0, temporal="compensate", allocation="bank", hostgroups=[])
    out = action.plan(dict(snapshot=snap, desired=desired, temporal="compensate", state=state,
                           qacct=text))
    assert out["usage_source"] == "qacct"
    assert out["usage_window"] == [start - 600.0, start + 600.0]
    # one slot for 314 s of a 1200 s window
    assert out["usage"]["uoe_baseline"] == pytest.approx(314.272 / 1200.0, abs=0.01)
    assert out["state"]["last_round"] == start + 600.0


def test_captured_accounting_without_projects_counts_nothing():
    text = _read("sge", "captured", "pe_and_arrays", "qacct_j_pe.txt")
    state = dict(last_round=1795778200.0, temporal="compensate", allocation="bank", hostgroups=[])
    out = action.plan(dict(snapshot=snapshot(1795778317.57), desired=D, temporal="compensate",
                           state=state, qacct=text))
    assert out["usage"] == {"alpha": 0.0, "beta": 0.0}


def test_failed_group_keeps_its_accounts_for_its_return():
    state = dict(last_round=900.0, temporal="compensate", allocation="bank",
                 hostgroups=["@a", "@b"], accounts={"@b": {"alpha": 7.0}, "top": {}})
    snap = snapshot(1000.0)
    snap["hosts"]["n2"]["states"] = "au"
    out = action.plan(dict(snapshot=snap, desired=D, temporal="compensate", state=state,
                           hostgroups={"@a": ["n1"], "@b": ["n2"]}))
    assert out["failed_groups"] == ["@b"]
    assert out["state"]["accounts"]["@b"] == {"alpha": 7.0}
    assert out["state"]["failed_groups"] == ["@b"]


@pytest.mark.parametrize("args,match", [
    (dict(snapshot=[], desired=D), "snapshot and desired"),
    (dict(desired=D, hostgroups=["@a"]), "hostgroups"),
    (dict(desired=D, state="x"), "state must be a dict"),
    (dict(desired=D, temporal_retain="all"), "temporal_retain"),
    (dict(desired=D, current="{\n}\n"), "current"),
    (dict(desired=D, qacct="qname all.q\njobnumber 1\nstart_time sometime\n",
          state=dict(last_round=10.0)), "qacct"),
    (dict(desired=D, allocation="reserves", temporal="compensate"), "needs allocation=bank"),
])
def test_bad_input_names_it(args, match):
    args.setdefault("snapshot", snapshot(1000.0))
    with pytest.raises(AnsibleActionFail, match=match):
        action.plan(args)


def test_playbook_keeps_the_state_and_reads_qacct_in_utc():
    import yaml
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "playbooks", "fairshare.yml")
    with open(path) as handle:
        plays = yaml.safe_load(handle)
    tasks = dict((t["name"], t) for t in plays[1]["tasks"])
    qacct = tasks["Read the accounting since the last round (qacct)"]
    assert qacct["ansible.builtin.command"]["argv"][:3] == ["qacct", "-j", "-b"]
    assert "'TZ': 'UTC'" in qacct["environment"]
    assert qacct["changed_when"] is False and qacct["check_mode"] is False
    plan = tasks["Compute the allocation"]["gridengine.balancer.fairshare_plan"]
    for option in ("allocation", "temporal", "temporal_retain", "hostgroups", "state", "qacct"):
        assert option in plan
    save = tasks["Keep the accounts and the time of this round"]
    assert save["gridengine.balancer.balancer_state"]["content"] == "{{ fairshare_plan.state }}"
    assert save["gridengine.balancer.balancer_state"]["state"] == "present"
    assert list(tasks)[-1] == "Keep the accounts and the time of this round"
