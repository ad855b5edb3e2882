# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/sge_usage.py: measured slot usage from real qacct -j output
(tests/unit/fixtures/sge/PROVENANCE.md) and snapshot running jobs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import json
import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_usage

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sge")


def _read(*parts):
    with open(os.path.join(FIX, *parts)) as handle:
        return handle.read()


def _utc(y, mo, d, hh, mm, ss):
    return float(calendar.timegm((y, mo, d, hh, mm, ss, 0, 0, 0)))


def test_captured_pe_job_two_records_in_utc():
    # captured on the local cluster whose clock is UTC (meta.json utc_offset +0000)
    meta = json.loads(_read("captured", "pe_and_arrays", "meta.json"))
    assert meta["utc_offset"] == "+0000"
    recs = sge_usage.parse_qacct_utc(_read("captured", "pe_and_arrays", "qacct_j_pe.txt"))
    assert [(r["jobnumber"], r["hostname"], r["slots"], r["project"], r["taskid"]) for r in recs] \
        == [(292, "node002", 4, None, None), (292, "node001", 4, None, None)]
    assert recs[1]["start_time"] == _utc(2026, 11, 27, 11, 18, 13)
    assert recs[1]["end_time"] == _utc(2026, 11, 27, 11, 18, 18)
    assert recs[1]["end_time"] < meta["taken_at"]


def test_uge_record_with_a_project_and_millisecond_times():
    recs = sge_usage.parse_qacct_utc(_read("misc", "riboviz_eddie_uge_qacct_j.txt"))
    assert recs[0]["project"] == "uoe_baseline"
    assert recs[0]["start_time"] == pytest.approx(_utc(2020, 6, 11, 13, 22, 37) + 0.680)
    start, end = recs[0]["start_time"], recs[0]["end_time"]
    usage = sge_usage.usage_per_project(recs[:1], [], start - 100.0, end + 100.0)
    host = recs[0]["hostname"]
    assert usage == {"uoe_baseline": {host: pytest.approx((end - start) / (end - start + 200.0))}}


@pytest.mark.parametrize("path", [("local_soge819", "qacct_j_killed.txt"), ("ood_core", "qacct.txt"),
                                  ("misc", "willem4_sge_tools_qacct_output.txt"),
                                  ("captured", "mixed", "qacct_j_error.txt")])
def test_other_real_outputs_parse(path):
    recs = sge_usage.parse_qacct_utc(_read(*path))
    assert recs and all(isinstance(r["jobnumber"], int) for r in recs)


def test_parallel_job_slots_shared_by_its_records_and_window_clipped():
    recs = sge_usage.parse_qacct_utc(_read("captured", "pe_and_arrays", "qacct_j_pe.txt"))
    for rec in recs:
        rec["project"] = "alpha"       # the capture ran without a project
    start = _utc(2026, 11, 27, 11, 18, 13)
    # window [start + 1, start + 11): node002 ran 13..16 (2 s inside), node001 13..18 (4 s)
    usage = sge_usage.usage_per_project(recs, [], start + 1, start + 11)
    assert usage == {"alpha": {"node002": pytest.approx(2 * 2 / 10.0),
                               "node001": pytest.approx(2 * 4 / 10.0)}}


def test_running_jobs_count_from_their_start_and_once():
    recs = sge_usage.parse_qacct_utc(_read("captured", "pe_and_arrays", "qacct_j_pe.txt"))
    for rec in recs:
        rec["project"] = "alpha"
    start = _utc(2026, 11, 27, 11, 18, 13)
    running = [dict(id=292, task=None, project="alpha", hosts={"node001": 2, "node002": 2},
                    start_time=start),
               dict(id=300, task="3", project="beta", hosts={"vm": 1}, start_time=start - 50),
               dict(id=301, task=None, project=None, hosts={"vm": 1}, start_time=start)]
    usage = sge_usage.usage_per_project(recs, running, start - 10, start + 10)
    # job 292 is still in the snapshot: its accounting records are not added again
    assert usage == {"alpha": {"node001": pytest.approx(1.0), "node002": pytest.approx(1.0)},
                     "beta": {"vm": pytest.approx(1.0)}}


def test_no_jobs_and_bad_input():
    assert sge_usage.parse_qacct_utc("") == []
    assert sge_usage.usage_per_project([], [], 0, 10) == {}
    with pytest.raises(sge_usage.UsageError, match="now"):
        sge_usage.usage_per_project([], [], 10, 10)
    with pytest.raises(sge_usage.UsageError, match="unreadable time"):
        sge_usage.utc_time("yesterday at noon")


def test_qacct_begin_utc():
    assert sge_usage.qacct_begin_utc(_utc(2026, 11, 26, 11, 18, 37)) == "2611261118"
