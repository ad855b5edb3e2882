# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.sge_rqs, driven by test_sge_rqs.yaml; the pure helpers of
module_utils/sge_rqs.py (parsing, rendering, largest-remainder rounding) directly."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_rqs as rq
from ansible_collections.gridengine.balancer.plugins.modules import sge_rqs
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.sge_admin_table import (
    FIXTURES,
    load_cases,
    run_case,
)

CASES = load_cases(__file__)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sge_rqs(case, monkeypatch):
    run_case(sge_rqs, case, monkeypatch)


def test_parse_and_render_round_trip():
    with open(os.path.join(FIXTURES, "qconf_srqs_fairshare.txt")) as handle:
        text = handle.read()
    obj = rq.parse_rqs(text)
    assert obj["name"] == "fairshare"
    assert obj["enabled"] is True
    assert rq.parse_rule(obj["limits"][2]) == ("alpha", "node002", 2)
    assert rq.render_rqs(obj["name"], rq.normal_description(obj["description"]),
                         obj["enabled"], obj["limits"]) == text


def test_captured_set_round_trips():
    """`qconf -srqs fairshare` captured on the local cluster after playbooks/fairshare.yml."""
    with open(os.path.join(FIXTURES, "qconf_srqs_fairshare_captured.txt")) as handle:
        text = handle.read()
    obj = rq.parse_rqs(text)
    assert obj["name"] == "fairshare" and obj["enabled"] is True
    rules = [rq.parse_rule(rule) for rule in obj["limits"]]
    assert len(rules) == 9 and ("gebfsbeta", "node002", 1) in rules
    assert sum(slots for _project, _host, slots in rules) == 6
    assert rq.render_rqs(obj["name"], rq.normal_description(obj["description"]),
                         obj["enabled"], obj["limits"]) == text


def test_parse_refuses_text_without_a_set():
    with pytest.raises(rq.RqsError, match="no resource quota set"):
        rq.parse_rqs("No resource quota set found\n")


@pytest.mark.parametrize("percent,slots,expected", [
    ({"a": 60, "b": 30, "c": 10}, 4, {"a": 2, "b": 1, "c": 1}),       # 2.4 1.2 0.4
    ({"a": 60, "b": 30, "c": 10}, 10, {"a": 6, "b": 3, "c": 1}),
    ({"a": 50, "b": 50}, 3, {"a": 2, "b": 1}),                          # tie: the first
    ({"a": 33.4, "b": 33.3, "c": 33.3}, 2, {"a": 1, "b": 1, "c": 0}),
    ({"a": 0, "b": 0}, 4, {"a": 0, "b": 0}),
    ({"a": 70, "b": 20, "c": 10}, 0, {"a": 0, "b": 0, "c": 0}),
    ({"a": 1, "b": 1, "c": 98}, 8, {"a": 0, "b": 0, "c": 8}),
])
def test_largest_remainder(percent, slots, expected):
    got = rq.largest_remainder(percent, slots)
    assert got == expected
    if any(percent.values()):
        assert sum(got.values()) == slots


@pytest.mark.parametrize("percent,slots,needle", [
    ({"a": -1}, 2, "percent for 'a'"), ({"a": float("nan")}, 2, "percent for 'a'"),
    ({"a": 1}, -1, "slots must be >= 0"),
])
def test_largest_remainder_bad_input(percent, slots, needle):
    with pytest.raises(rq.RqsError, match=needle):
        rq.largest_remainder(percent, slots)
