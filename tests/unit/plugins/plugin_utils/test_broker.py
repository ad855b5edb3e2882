# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""policy.broker: which partner cluster gets the next transferred job."""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import broker

GB = 1024 ** 3


def _facts(hosts, pending=()):
    return {"hosts": {name: {"slots_total": s, "slots_used": u, "states": st, "mem_total": 8 * GB,
                             "mem_used": m * GB} for name, (s, u, st, m) in hosts.items()},
            "pending": [{"task_count": n, "held": h, "error": False} for n, h in pending]}


def test_partner_load_counts_usable_hosts_and_waiting_tasks():
    load = broker.partner_load(_facts({"a": (4, 1, "", 2), "b": (4, 4, "d", 8)}, [(3, False), (5, True)]))
    assert load == {"slots_total": 4, "slots_used": 1, "pending": 3, "mem_free": 6 * GB, "mem_max": 8 * GB}


def test_busy_and_full_partners_are_left_out_and_the_idle_one_is_chosen():
    partners = {"idle": {"slots_total": 40, "slots_used": 10, "pending": 0, "mem_free": 6.0, "mem_max": 8.0},
                "busy": {"slots_total": 40, "slots_used": 10, "pending": 9, "mem_free": 6.0, "mem_max": 8.0},
                "full": {"slots_total": 8, "slots_used": 8, "pending": 0, "mem_free": 6.0, "mem_max": 8.0}}
    out = broker.route(partners)
    assert out["choice"] == "idle" and set(out["excluded"]) == {"busy", "full"}
    assert "busy: 9 jobs waiting > 4" in out["excluded"]["busy"]


def test_shares_follow_free_resources_and_dispatch_is_deterministic():
    partners = {"big": {"slots_total": 100, "slots_used": 10, "pending": 0, "mem_free": 7.0, "mem_max": 8.0},
                "small": {"slots_total": 100, "slots_used": 80, "pending": 0, "mem_free": 2.0, "mem_max": 8.0}}
    out = broker.route(partners)
    assert out["distribution"]["big"] > 0.8 > out["distribution"]["small"] > 0
    picks = [broker.route(partners, offset=k)["choice"] for k in range(10)]
    assert picks.count("big") >= 8 and picks == [broker.route(partners, offset=k)["choice"] for k in range(10)]


def test_no_partner_can_take_work():
    out = broker.route({"x": {"slots_total": 0}})
    assert out["choice"] is None and "no partner can take a job" in out["reason"]
    with pytest.raises(broker.BrokerError):
        broker.route({})
    with pytest.raises(broker.BrokerError):
        broker.partner_load({"nohosts": 1})
