# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/sge_xml.py against the real Grid Engine outputs in tests/unit/fixtures/sge
(copied from ../shared/data/sge, or captured from the local cluster by tests/capture/capture_shapes.py
under captured/; see PROVENANCE.md there).

Hand-built XML is left only for broken or hostile input and for shapes the local cluster (SoGE
8.1.9) cannot produce; each such test says why. Every other shape is read from a capture."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import calendar
import gc
import os
import re
import time
import tracemalloc
from xml.sax.saxutils import escape

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_xml
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import (
    SgeParseError,
    accounting_summary,
    build_snapshot,
    parse_memory,
    parse_qacct,
    parse_qhost,
    parse_qstat,
    parse_qstat_gc,
    parse_qstat_j,
    parse_time,
    task_count,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "sge")

SOGE_XSD = "http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd"
AWS_F = "aws-parallelcluster-node/test_get_compute_nodes_info__qstat_output_mix.xml"
AWS_GDT = "aws-parallelcluster-node/test_get_jobs_info__qstat_output_mix.xml"
H166 = "ip-10-0-0-166.eu-west-1.compute.internal"
H52 = "ip-10-0-0-52.eu-west-1.compute.internal"
H116 = "ip-10-0-0-116.eu-west-1.compute.internal"
# captured by tests/capture/capture_shapes.py (see test_captured_shapes.py for the states)
PE_F = "captured/pe_and_arrays/qstat_u_f_r.xml"
PE_QHOST = "captured/pe_and_arrays/qhost_q.xml"
MIXED_F = "captured/mixed/qstat_u_f_r.xml"
MIXED_QHOST = "captured/mixed/qhost_q.xml"


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


def utc(*fields):
    return float(calendar.timegm(fields))


@pytest.fixture(autouse=True)
def utc_zone(monkeypatch):
    """Grid Engine 6.2 stamps are local time of the parsing machine: pin it to UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def envelope(queue_info=b"", job_info=b""):
    """A SoGE qstat document around fragments (aws-parallelcluster-node ships fragments)."""
    return (b"<?xml version='1.0'?>\n<job_info  xmlns:xsd=\"" + SOGE_XSD.encode() + b"\">\n"
            b"  <queue_info>\n" + queue_info + b"  </queue_info>\n  <job_info>\n" + job_info
            + b"  </job_info>\n</job_info>\n")


def by_id(entries):
    return dict((e["id"], e) for e in entries)


def by_name(entries, name):
    """Entries of the captured job ``name`` (captured jobs are found by name, never by number)."""
    return [e for e in entries if e["name"] == name]


# ---------------------------------------------------------------------------------------------
# every qstat file in every flavour parses
# ---------------------------------------------------------------------------------------------

QSTAT_FILES = [
    # file, flavour, queue instances, pending entries, running entries
    ("aws-parallelcluster-node/test_get_compute_nodes_info__qstat_output_empty_xml.xml",
     "SoGE 8.1", 0, 0, 0),
    (AWS_F, "SoGE 8.1", 3, 2, 2),
    ("aws-parallelcluster-node/test_get_jobs_info__qstat_output_empty_xml.xml", "SoGE 8.1", 0, 0, 0),
    (AWS_GDT, "SoGE 8.1", 0, 2, 6),
    ("ood_core/qstat.xml", "SGE 6.2", 1, 3, 1),
    ("ood_core/qstat_r.xml", "SGE 6.2", 1, 3, 1),
    ("qstat_pypi_relleums/qstat_empty_queue.xml", "SGE 6.2", 0, 0, 0),
    ("qstat_pypi_relleums/qstat_example.xml", "SGE 6.2", 0, 27, 24),
    ("qstat_pypi_relleums/qstat_length_one.xml", "SoGE 8.1", 0, 1, 0),
    ("xenon/jobs.xml", "SGE 6.2", 0, 1, 8),
    ("xenon/jobs-no-schema.xml", "unknown", 0, 0, 6),
    ("xenon/queues-no-queues.xml", "SGE 6.2", 0, 0, 0),
    ("local_soge819/qstat_u_f_r.xml", "SoGE 8.1", 2, 0, 0),
    (PE_F, "SoGE 8.1", 7, 3, 7),
    ("captured/pe_and_arrays/qstat_u.xml", "SoGE 8.1", 0, 3, 7),
    ("captured/pe_and_arrays/qstat_u_g_dt_r.xml", "SoGE 8.1", 0, 3, 7),
    ("captured/pe_and_arrays/qstat_u_g_dt.xml", "SoGE 8.1", 0, 3, 7),
    (MIXED_F, "SoGE 8.1", 7, 8, 3),
    ("captured/mixed/qstat_u.xml", "SoGE 8.1", 0, 8, 3),
    ("captured/mixed/qstat_u_g_dt_r.xml", "SoGE 8.1", 0, 8, 3),
    ("captured/mixed/qstat_u_g_dt.xml", "SoGE 8.1", 0, 8, 3),
]


@pytest.mark.parametrize("name,flavour,n_queues,n_pending,n_running", QSTAT_FILES,
                         ids=[f[0] for f in QSTAT_FILES])
def test_qstat_files_parse(name, flavour, n_queues, n_pending, n_running):
    result = parse_qstat(fixture(name))
    assert result["flavour"] == flavour
    assert len(result["queues"]) == n_queues
    assert len(result["pending"]) == n_pending
    assert len(result["running"]) == n_running
    for job in result["pending"]:
        assert job["task_count"] >= 1 and job["slots"] >= 1
        assert isinstance(job["submit_time"], float)
    for job in result["running"]:
        assert job["slots"] == sum(job["hosts"].values()) or not job["hosts"]


FRAGMENTS = [
    # fragment, where it goes, pending, running
    ("aws-parallelcluster-node/test_sge_host_parsing__host.xml", "queue", 0, 3),
    ("aws-parallelcluster-node/test_sge_host_parsing__host_no_jobs.xml", "queue", 0, 0),
    ("aws-parallelcluster-node/test_sge_job_parsing__array_job.xml", "job", 1, 0),
    ("aws-parallelcluster-node/test_sge_job_parsing__parallel_job.xml", "queue", 0, 1),
    ("aws-parallelcluster-node/test_sge_job_parsing__running_job.xml", "queue", 0, 1),
]


@pytest.mark.parametrize("name,where,n_pending,n_running", FRAGMENTS, ids=[f[0] for f in FRAGMENTS])
def test_aws_fragments_parse_in_an_envelope(name, where, n_pending, n_running):
    frag = fixture(name)
    doc = envelope(queue_info=frag) if where == "queue" else envelope(job_info=frag)
    result = parse_qstat(doc)
    assert (len(result["pending"]), len(result["running"])) == (n_pending, n_running)


QSTAT_J_FILES = [
    ("ood_core/qstat_jr.xml", "UGE 8.0-8.5", 4147342),
    ("ood_core/qstat_jr_multislot.xml", "OGS 2011.11", 942195),
    ("ood_core/uge_qstat_jr.xml", "UGE 8.6", 748172),
    ("xenon/detailed-job.xml", "SGE 6.2", 583111),
]


@pytest.mark.parametrize("name,flavour,jid", QSTAT_J_FILES, ids=[f[0] for f in QSTAT_J_FILES])
def test_qstat_j_files_parse(name, flavour, jid):
    result = parse_qstat_j(fixture(name))
    assert result["flavour"] == flavour
    assert [j["id"] for j in result["jobs"]] == [jid]


QSTAT_GC_FILES = [
    ("diamond/queue_stats.xml", "UGE 8.0-8.5", ["hadoop", "primary.q", "secondary.q"]),
    ("xenon/queues.xml", "SGE 6.2", ["all.q", "das3.q", "disabled.q", "fat.q", "gpu.q"]),
    ("captured/pe_and_arrays/qstat_g_c.xml", "SoGE 8.1", ["all.q", "cap_three.q"]),
    ("captured/mixed/qstat_g_c.xml", "SoGE 8.1", ["all.q", "cap_three.q"]),
]


@pytest.mark.parametrize("name,flavour,names", QSTAT_GC_FILES, ids=[f[0] for f in QSTAT_GC_FILES])
def test_qstat_gc_files_parse(name, flavour, names):
    result = parse_qstat_gc(fixture(name))
    assert result["flavour"] == flavour
    assert [q["name"] for q in result["cluster_queues"]] == names


QHOST_FILES = [
    (PE_QHOST, "SoGE 8.1", 4, True),
    (MIXED_QHOST, "SoGE 8.1", 4, True),
    # GE 6.2: hand-written (the local cluster runs SoGE 8.1.9 only)
    ("handmade/qhost_q_sge62.xml", "SGE 6.2", 1, True),
    ("local_soge819/qhost_q.xml", "SoGE 8.1", 2, True),
    ("local_soge819/qhost.xml", "SoGE 8.1", 2, False),
]


@pytest.mark.parametrize("name,flavour,n_hosts,with_queues", QHOST_FILES,
                         ids=[f[0] for f in QHOST_FILES])
def test_qhost_files_parse(name, flavour, n_hosts, with_queues):
    result = parse_qhost(fixture(name))
    assert result["flavour"] == flavour
    assert len(result["hosts"]) == n_hosts
    assert "global" not in result["hosts"]
    assert all(bool(h["queues"]) == with_queues for h in result["hosts"].values())


# ---------------------------------------------------------------------------------------------
# concrete values
# ---------------------------------------------------------------------------------------------

def test_full_listing_master_slave_merge_and_queues():
    result = parse_qstat(fixture(AWS_F))
    running = by_id(result["running"])
    # job 89: a MASTER and a SLAVE row in all.q@166, one slot each -> one entry, 2 slots
    assert running[89]["slots"] == 2
    assert running[89]["hosts"] == {H166: 2}
    assert running[89]["host"] == H166 and running[89]["queue"] == "all.q"
    assert running[89]["start_time"] == utc(2019, 5, 15, 13, 16, 51)
    assert running[91]["task"] == "3" and running[91]["slots"] == 1
    queues = dict((q["name"], q) for q in result["queues"])
    q166 = queues["all.q@" + H166]
    assert (q166["slots_total"], q166["slots_used"], q166["slots_reserved"]) == (4, 3, 0)
    # the rows of the queue instance add up to its used slots
    assert sum(j["hosts"].get(H166, 0) for j in result["running"]) == q166["slots_used"]
    assert queues["all.q@" + H52]["states"] == "d"
    assert queues["all.q@" + H116]["states"] == "au"
    assert q166["load_avg"] == 0.01 and q166["qtype"] == "BIP"
    pending = by_id(result["pending"])
    # -g d prints tasks 1, 2 and 3 of job 92 as three rows: one entry, three tasks
    assert pending[92]["tasks"] == "1,2,3" and pending[92]["task_count"] == 3
    assert pending[92]["submit_time"] == utc(2019, 5, 15, 13, 17, 12)
    assert pending[72]["state"] == "hqw" and pending[72]["held"] is True
    assert pending[72]["error"] is False and pending[72]["slots"] == 8


def test_per_slot_listing_sums_master_and_slave_rows():
    result = parse_qstat(fixture(AWS_GDT))
    running = dict(((j["id"], j["task"]), j) for j in result["running"])
    # job 96: MASTER + 2 SLAVE rows of one slot each on host 166
    assert running[(96, None)]["slots"] == 3
    assert running[(96, None)]["hosts"] == {H166: 3}
    # array job 95: tasks on two hosts are separate entries
    assert running[(95, "3")]["host"] == H166
    assert running[(95, "1")]["host"] == H52 and running[(95, "2")]["host"] == H52
    assert running[(95, "1")]["state"] == "hr"
    assert running[(73, None)]["state"] == "s"
    assert by_id(result["pending"])[97]["slots"] == 3


def test_ge62_requests_projects_and_task_ranges():
    result = parse_qstat(fixture("ood_core/qstat_r.xml"))
    pending = by_id(result["pending"])
    assert pending[1046]["tasks"] == "1-10:2" and pending[1046]["task_count"] == 5
    assert pending[1045]["project"] == "project_b"
    assert pending[1045]["hard_requests"] == {"h_rt": "360"}
    assert pending[1045]["hard_queues"] == ["general.q"]
    # submit time in the GE 6.2 form: local time of the parsing host (UTC here)
    assert pending[1045]["submit_time"] == utc(2018, 10, 9, 18, 47, 5)
    assert pending[44]["held"] is True
    job = result["running"][0]
    assert (job["id"], job["project"], job["host"], job["queue"]) == (
        88, "project_a", "worker", "general.q")
    queue = result["queues"][0]
    # no <load_avg> element in this output: the load_avg resource (-F) is used
    assert queue["name"] == "general.q@worker" and queue["load_avg"] == 0.01


def test_local_time_conversion_follows_the_time_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Amsterdam")
    time.tzset()
    job = by_id(parse_qstat(fixture("ood_core/qstat_r.xml"))["pending"])[1045]
    assert job["submit_time"] == utc(2018, 10, 9, 18, 47, 5) - 7200  # CEST = UTC+2


def test_plain_listing_counts_rows():
    result = parse_qstat(fixture("xenon/jobs.xml"))
    running = by_id(result["running"])
    assert running[583246]["slots"] == 16
    assert running[583246]["hosts"] == {"node013.cm.cluster": 16}
    assert running[583296]["queue"] == "gpu.q"
    assert by_id(result["pending"])[583302]["slots"] == 512
    example = parse_qstat(fixture("qstat_pypi_relleums/qstat_example.xml"))
    assert sorted(j["state"] for j in example["running"]).count("dt") == 3


def test_submit_times_in_seconds_and_milliseconds():
    jr = parse_qstat_j(fixture("ood_core/qstat_jr.xml"))["jobs"][0]
    assert jr["submit_time"] == 1541444183.0
    assert jr["ja_tasks"][0]["start_time"] == 1541444223.0
    assert jr["hard_requests"] == {"h_data": "16G", "h_rt": "86400", "h_vmem": "16G"}
    assert (jr["pe"], jr["pe_range"]) == ("single", "1")
    uge = parse_qstat_j(fixture("ood_core/uge_qstat_jr.xml"))["jobs"][0]
    assert uge["submit_time"] == pytest.approx(1592928409.331)
    assert uge["ja_tasks"][0]["start_time"] == pytest.approx(1592928425.042)
    assert uge["ja_tasks"][0]["queues"] == {"ondemand@compute-19-11.localdomain": 11}
    assert (uge["pe"], uge["pe_range"], uge["hard_queues"]) == ("sm", "11", ["ondemand"])
    assert uge["hard_requests"] == {"h_rt": "14400"}
    multi = parse_qstat_j(fixture("ood_core/qstat_jr_multislot.xml"))["jobs"][0]
    assert (multi["pe"], multi["pe_range"], multi["hard_queues"]) == ("slots", "16", ["all.q"])
    assert multi["tasks"] == "1-1:1" and multi["task_count"] == 1


def test_cluster_queue_summary_values():
    queues = dict((q["name"], q) for q in parse_qstat_gc(fixture("xenon/queues.xml"))["cluster_queues"])
    assert queues["all.q"]["total"] == 336 and queues["all.q"]["used"] == 48
    assert queues["das3.q"]["load"] is None
    assert queues["disabled.q"]["manual_intervention"] == 40
    # SoGE 8.1.9: all.q full (6 of 6), cap_three.q with one instance disabled and one unknown
    cap = dict((q["name"], q) for q in parse_qstat_gc(fixture("captured/pe_and_arrays/qstat_g_c.xml"))["cluster_queues"])
    assert (cap["all.q"]["used"], cap["all.q"]["total"], cap["all.q"]["available"]) == (6, 6, 0)
    assert cap["cap_three.q"]["total"] == 12 and cap["cap_three.q"]["used"] == 6
    # node002 (d) and cap-ghost (u), 3 slots each, count as "manual intervention" in SoGE 8.1.9
    assert (cap["cap_three.q"]["temp_disabled"], cap["cap_three.q"]["manual_intervention"]) == (0, 6)


def _hostvalue(data, host, name):
    """The raw text of a qhost hostvalue, read with a regular expression (not the parser)."""
    block = data.split(b"<host name='%s'>" % host.encode(), 1)[1].split(b"</host>", 1)[0]
    return block.split(b"<hostvalue name='%s'>" % name.encode(), 1)[1].split(b"<", 1)[0].decode()


def test_qhost_values_and_sizes():
    data = fixture(MIXED_QHOST)
    hosts = parse_qhost(data)["hosts"]
    h = hosts["vm"]
    assert (h["arch"], h["num_proc"]) == ("lx-amd64", 2)
    assert h["load_avg"] == float(_hostvalue(data, "vm", "load_avg"))
    for key in ("mem_total", "mem_used", "swap_total", "swap_used"):
        text = _hostvalue(data, "vm", key)  # e.g. 23.5G, 937.8M, 0.0
        assert h[key] == parse_memory(text) and isinstance(h[key], int), key
    assert h["mem_total"] == int(round(float(_hostvalue(data, "vm", "mem_total")[:-1]) * 1024 ** 3))
    # the advance reservation of the mixed state holds one slot of all.q@vm
    assert h["queues"]["all.q"] == {"qtype": "BIP", "slots_total": 2, "slots_used": 0,
                                    "slots_reserved": 1, "states": ""}
    assert hosts["node002"]["queues"]["cap_three.q"]["states"] == "d"
    down = hosts["cap-ghost"]  # an execution host that never reported: every value "-"
    assert (down["arch"], down["num_proc"], down["load_avg"]) == (None, None, None)
    assert down["mem_total"] is None and down["mem_used"] is None and down["swap_total"] is None
    assert down["queues"] == {"cap_three.q": {"qtype": "BIP", "slots_total": 3, "slots_used": 0,
                                              "slots_reserved": 0, "states": "u"}}
    worker = parse_qhost(fixture("handmade/qhost_q_sge62.xml"))["hosts"]["worker"]
    assert worker["mem_total"] == int(round(489.8 * 1024 ** 2))


@pytest.mark.parametrize("text,expected", [
    ("489.848M", int(round(489.848 * 1024 ** 2))),
    ("1.9G", int(round(1.9 * 1024 ** 3))),
    ("512K", 512 * 1024),
    ("2T", 2 * 1024 ** 4),
    ("100k", 100000),
    ("0.0", 0),
    ("1234", 1234),
    ("-", None),
    ("", None),
    (None, None),
    ("garbage", None),
])
def test_parse_memory(text, expected):
    assert parse_memory(text) == expected


@pytest.mark.parametrize("spec,count", [
    ("2-10:1", 9), ("1-10:2", 5), ("8,9", 2), ("1-3,7", 4), ("3", 1), ("1-1000000:1", 1000000),
    ("1-1000000:3", 333334), ("1-3:1,5-9:2", 6),
])
def test_task_count_is_arithmetic(spec, count):
    assert task_count(spec) == count


@pytest.mark.parametrize("spec", ["a-b", "5-2", "1-10:0", "", "1-", ","])
def test_task_count_rejects_bad_ranges(spec):
    with pytest.raises(ValueError):
        task_count(spec)


@pytest.mark.parametrize("text,expected", [
    ("2019-05-15T13:16:51", utc(2019, 5, 15, 13, 16, 51)),
    ("2019-05-15T13:16:51.250", utc(2019, 5, 15, 13, 16, 51) + 0.25),
    ("1541444183", 1541444183.0),
    ("1592928409331", 1592928409.331),
    ("Wed Oct 24 20:22:31 2018", utc(2018, 10, 24, 20, 22, 31)),
    ("Mon Mar  1 04:05:06 2011", utc(2011, 3, 1, 4, 5, 6)),
    ("06/11/2020 13:22:28.652", utc(2020, 6, 11, 13, 22, 28) + 0.652),
    ("-/-", None),
    ("", None),
    ("0", None),
])
def test_parse_time_forms(text, expected):
    if expected is None:
        assert parse_time(text) is None
    else:
        assert parse_time(text) == pytest.approx(expected)


def test_unreadable_time_names_the_job():
    doc = envelope(job_info=b"<job_list state=\"pending\"><JB_job_number>5</JB_job_number>"
                   b"<state>qw</state><JB_submission_time>yesterday</JB_submission_time>"
                   b"</job_list>")
    with pytest.raises(SgeParseError, match=r"qstat -xml: job 5 has an unreadable time 'yesterday'"):
        parse_qstat(doc)


def test_unreadable_task_range_names_the_job():
    doc = envelope(job_info=b"<job_list state=\"pending\"><JB_job_number>6</JB_job_number>"
                   b"<state>qw</state><tasks>1-x</tasks></job_list>")
    with pytest.raises(SgeParseError, match=r"job 6 has an unreadable task range '1-x'"):
        parse_qstat(doc)


# ---------------------------------------------------------------------------------------------
# parallel jobs (-g t, job_is_first_task FALSE) and PE requests
# ---------------------------------------------------------------------------------------------

def _queue(name, rows, used):
    return (b"<Queue-List><name>" + name.encode() + b"</name><qtype>BIP</qtype><slots_used>"
            + str(used).encode() + b"</slots_used><slots_resv>0</slots_resv><slots_total>8"
            b"</slots_total><arch>lx-amd64</arch>" + b"".join(rows) + b"</Queue-List>\n")


# SGE 6.2 and later (SoGE 8.1.9 here, OGS, UGE) write <requested_pe>/<granted_pe>, as the installed
# qstat.xsd spells them; SGE 6.0 wrote them in upper case.  Both are read.  The lower-case spelling
# is read from the captures (test_per_slot_rows_with_extra_master_from_the_real_cluster,
# test_pending_pe_requests_from_the_real_cluster); SGE 6.0's upper case exists in no capture here,
# so those tests build it by hand.
PE_SPELLINGS = [b"PE"]


def _row(jid, master, granted=None, spelling=b"pe"):
    granted_xml = (b"<granted_%s name=\"mpi\">%d</granted_%s>" % (spelling, granted, spelling)) if granted else b""
    return (b"<job_list state=\"running\"><JB_job_number>%d</JB_job_number><JB_name>p</JB_name>"
            b"<JB_owner>u</JB_owner><state>r</state><JAT_start_time>2020-01-01T00:00:00"
            b"</JAT_start_time><master>%s</master><slots>1</slots>%s</job_list>\n"
            % (jid, master, granted_xml))


def test_per_slot_rows_with_extra_master_from_the_real_cluster():
    # cap_round_robin: PE cap_rr ($round_robin, job_is_first_task FALSE), 2 slots on two hosts.
    # qstat -g dt prints a MASTER row that holds no slot beside two SLAVE rows
    data = fixture("captured/pe_and_arrays/qstat_u_g_dt_r.xml")
    rows = re.findall(rb"<JB_name>cap_round_robin</JB_name>.*?<queue_name>([^<]*)</queue_name>\s*"
                      rb"<master>(\w+)</master>\s*<slots>(\d+)</slots>", data, re.S)
    assert sorted(master for _q, master, _s in rows) == [b"MASTER", b"SLAVE", b"SLAVE"]
    assert len(set(q for q, _m, _s in rows)) == 2
    (master_queue,) = [q.decode() for q, m, _s in rows if m == b"MASTER"]
    (job,) = by_name(parse_qstat(data)["running"], "cap_round_robin")
    # <granted_pe name="cap_rr">2</granted_pe>: the extra row is taken off the master's host
    assert job["slots"] == 2 and sorted(job["hosts"].values()) == [1, 1]
    assert job["host"] == master_queue.partition("@")[2]
    # without -r nothing tells the extra row apart: every row counts
    (plain,) = by_name(parse_qstat(fixture("captured/pe_and_arrays/qstat_u_g_dt.xml"))["running"], "cap_round_robin")
    assert plain["slots"] == 3
    # $fill_up with job_is_first_task TRUE: MASTER + 3 SLAVE rows are its 4 slots, 2 per host
    (fill,) = by_name(parse_qstat(data)["running"], "cap_fill_up")
    assert fill["slots"] == 4 and fill["hosts"] == {"node001": 2, "node002": 2}


@pytest.mark.parametrize("spelling", PE_SPELLINGS)
def test_per_slot_rows_with_extra_master_use_granted_pe_total(spelling):
    # SGE 6.0's upper-case <granted_PE>: hand-built (no SGE 6.0 capture exists here; the same
    # shape in SoGE 8.1.9's spelling is the test above)
    # -g t, PE with job_is_first_task FALSE and 4 granted slots (2 on a, 2 on b): Grid Engine
    # prints MASTER + 2 SLAVE rows on a (one extra line for the slot-less master) and 2 SLAVE on b
    rows_a = [_row(7, b"MASTER", 4, spelling), _row(7, b"SLAVE", 4, spelling), _row(7, b"SLAVE", 4, spelling)]
    rows_b = [_row(7, b"SLAVE", 4, spelling), _row(7, b"SLAVE", 4, spelling)]
    doc = envelope(queue_info=_queue("all.q@a", rows_a, 2) + _queue("all.q@b", rows_b, 2))
    job = parse_qstat(doc)["running"][0]
    assert job["slots"] == 4
    assert job["hosts"] == {"a": 2, "b": 2}
    assert job["host"] == "a"
    # without -r nothing tells the extra line apart: every row counts
    doc = envelope(queue_info=_queue("all.q@a", [_row(7, b"MASTER"), _row(7, b"SLAVE")], 2))
    assert parse_qstat(doc)["running"][0]["slots"] == 2


def test_master_row_decides_master_host_even_when_listed_later():
    # hand-built: in the captures Grid Engine put every master task on the first host listed (a
    # MASTER row after a SLAVE row of another host is legal -g t output but not captured here)
    doc = envelope(queue_info=_queue("all.q@a", [_row(8, b"SLAVE")], 1)
                   + _queue("all.q@b", [_row(8, b"MASTER")], 1))
    job = parse_qstat(doc)["running"][0]
    assert (job["host"], job["slots"], job["hosts"]) == ("b", 2, {"a": 1, "b": 1})


@pytest.mark.parametrize("name,pe,shown,slots", [
    ("cap_pe_waiting", "cap_fill", "2-4", 2),      # qsub -pe cap_fill 2-4
    ("cap_pe_too_wide", "cap_fill", "8", 8),       # qsub -pe cap_fill 8
    ("cap_reserve", "smp", "2", 2),                # qsub -R y -pe smp 2
])
def test_pending_pe_requests_from_the_real_cluster(name, pe, shown, slots):
    state = "pe_and_arrays" if name == "cap_pe_waiting" else "mixed"
    (job,) = by_name(parse_qstat(fixture("captured/%s/qstat_u_f_r.xml" % state))["pending"], name)
    assert (job["pe"], job["pe_range"], job["slots"]) == (pe, shown, slots)
    # without -r Grid Engine prints only <slots>: still a parallel job by its slot count
    (plain,) = by_name(parse_qstat(fixture("captured/%s/qstat_u.xml" % state))["pending"], name)
    assert (plain["pe"], plain["pe_range"], plain["slots"]) == (None, None, slots)


@pytest.mark.parametrize("spelling", PE_SPELLINGS)
@pytest.mark.parametrize("pe_range,slots,shown", [("2-8", 2, "2-8"), ("4-4", 4, "4"), ("16", 16, "16")])
def test_pending_pe_request(pe_range, slots, shown, spelling):
    # hand-built: SGE 6.0's <requested_PE> (no capture), and a range written "4-4", which SoGE 8.1.9
    # prints as "4" (the captured cases are in the test above)
    doc = envelope(job_info=b"<job_list state=\"pending\"><JB_job_number>9</JB_job_number>"
                   b"<state>qw</state><slots>" + str(slots).encode() + b"</slots>"
                   b"<requested_" + spelling + b" name=\"mpi\">" + pe_range.encode() + b"</requested_"
                   + spelling + b"></job_list>")
    job = parse_qstat(doc)["pending"][0]
    assert (job["pe"], job["pe_range"], job["slots"]) == ("mpi", shown, slots)


@pytest.mark.parametrize("listing", ["qstat_u_f_r.xml", "qstat_u_g_dt_r.xml", "qstat_u.xml"])
def test_pending_rows_of_one_job_split_by_state(listing):
    # cap_array_states (-t 1-6): tasks 1-2 failed once dispatched (Eqw), 3-4 wait for a slot (qw),
    # 5-6 are held (hqw). -g d prints one row per task: rows of one job and state are merged
    pending = by_name(parse_qstat(fixture("captured/mixed/" + listing))["pending"], "cap_array_states")
    assert sorted((j["state"], j["task_count"], j["held"], j["error"]) for j in pending) == [
        ("Eqw", 2, False, True), ("hqw", 2, True, False), ("qw", 2, False, False)]
    assert sorted(j["tasks"] for j in pending) == ["1,2", "3,4", "5,6"]
    # a comma list with a range: cap_array_range (-t 1-10, tasks 1-4 running, 7 deleted)
    (arr,) = by_name(parse_qstat(fixture("captured/pe_and_arrays/" + listing))["pending"], "cap_array_range")
    assert arr["task_count"] == 5 and arr["tasks"] in ("5,6,8-10:1", "5,6,8,9,10")


def test_million_task_range_is_counted_not_expanded():
    # hand-built: 200 jobs of a million tasks each is a scale, not a shape, the local cluster can
    # hold (its array jobs are in the captures)
    row = (b"<job_list state=\"pending\"><JB_job_number>%d</JB_job_number><state>qw</state>"
           b"<JB_submission_time>2020-01-01T00:00:00</JB_submission_time><slots>1</slots>"
           b"<tasks>1-1000000:1</tasks></job_list>\n")
    doc = envelope(job_info=b"".join(row % i for i in range(1, 201)))
    tracemalloc.start()
    start = time.perf_counter()
    pending = parse_qstat(doc)["pending"]
    elapsed = time.perf_counter() - start
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert sum(j["task_count"] for j in pending) == 200 * 1000000
    assert elapsed < 1.0
    assert peak < 5 * 1000 * 1000  # 200 million tasks, a few hundred kB


# ---------------------------------------------------------------------------------------------
# hostile values are data
# ---------------------------------------------------------------------------------------------

HOSTILE = [
    u"a<b&c \"quoted\" 'single' ]]>",
    u"line one\nline two",
    u"$(rm -rf /); `reboot` | tee /etc/passwd > /dev/null",
    u"\u00dcbung \u30b8\u30e7\u30d6 \u4f5c\u696d \U0001f680",
    u"-q all.q -l h_rt=99999 --",
    u"<!DOCTYPE x [<!ENTITY y \"z\">]>",
]


def test_hostile_job_names_are_data():
    rows = []
    for i, name in enumerate(HOSTILE):
        text = escape(name, {'"': "&quot;", "'": "&apos;"}).encode("utf-8")
        rows.append(b"<job_list state=\"pending\"><JB_job_number>%d</JB_job_number><JB_name>%s"
                    b"</JB_name><JB_owner>%s</JB_owner><state>qw</state></job_list>"
                    % (i + 1, text, text))
    pending = parse_qstat(envelope(job_info=b"".join(rows)))["pending"]
    assert [j["name"] for j in pending] == HOSTILE
    assert [j["owner"] for j in pending] == HOSTILE


def test_raw_latin1_and_control_bytes_do_not_hide_the_cluster():
    # Grid Engine prints job names raw: a Latin-1 name or a control character makes the
    # document not well-formed. Those bytes become U+FFFD; every other job is still read.
    rows = (b"<job_list state=\"pending\"><JB_job_number>1</JB_job_number><JB_name>caf\xe9"
            b"</JB_name><state>qw</state></job_list>"
            b"<job_list state=\"pending\"><JB_job_number>2</JB_job_number><JB_name>bell\x07"
            b"</JB_name><state>qw</state></job_list>"
            b"<job_list state=\"pending\"><JB_job_number>3</JB_job_number><JB_name>fine"
            b"</JB_name><state>qw</state></job_list>")
    pending = parse_qstat(envelope(job_info=rows))["pending"]
    assert [j["name"] for j in pending] == [u"caf\ufffd", u"bell\ufffd", u"fine"]


# ---------------------------------------------------------------------------------------------
# broken input -> SgeParseError with a clear message
# ---------------------------------------------------------------------------------------------

BROKEN_QSTAT = [
    ("xenon/jobs-empty.xml", r"^qstat -xml: document is empty$"),
    ("aws-parallelcluster-node/test_get_jobs_info__qstat_output_empty.xml",
     r"^qstat -xml: document is empty$"),
    ("xenon/jobs-no-document-element.xml", r"^qstat -xml: no document element \(line 2, column 0\)$"),
    ("xenon/jobs-empty-schema.xml", r"^qstat -xml: no document element \(line 2, column 0\)$"),
    ("xenon/jobs-wrong-schema.xml",
     r"^qstat -xml: unrecognised schema 'this-schema-value-is-wrong' on <job_info>"),
    ("xenon/jobs-without-jobnumber.xml", r"^qstat -xml: job_list without JB_job_number$"),
    ("xenon/jobs-empty-jobnumber.xml", r"^qstat -xml: job_list with empty JB_job_number$"),
    ("diamond/707.xml", r"^qstat -xml: XML or text declaration not at start of entity "
                        r"\(line 2, column 0\)$"),
    ("ood_core/qstat_jr_missing.xml",
     r"^qstat -xml: root element is <unknown_jobs>, expected <job_info>$"),
    ("ood_core/qstat_jr.xml", r"^qstat -xml: root element is <detailed_job_info>, expected <job_info>$"),
    ("xenon/queues.xml", r"^qstat -xml: found <cluster_queue_summary>: this is 'qstat -g c' output"),
    (MIXED_QHOST, r"^qstat -xml: root element is <qhost>, expected <job_info>$"),
]


@pytest.mark.parametrize("name,message", BROKEN_QSTAT, ids=[b[0] for b in BROKEN_QSTAT])
def test_broken_qstat_files_raise(name, message):
    with pytest.raises(SgeParseError, match=message):
        parse_qstat(fixture(name))
    assert gc.isenabled()


def test_wrong_schema_can_be_accepted_as_unknown():
    result = parse_qstat(fixture("xenon/jobs-wrong-schema.xml"), strict_schema=False)
    assert result["flavour"] == "unknown" and len(result["running"]) == 6


def test_missing_job_for_qstat_j():
    with pytest.raises(SgeParseError, match=r"^qstat -j -xml: Grid Engine does not know the job"):
        parse_qstat_j(fixture("ood_core/qstat_jr_missing.xml"))
    # and its <> element is not well-formed XML in the first place
    data = fixture("ood_core/qstat_jr_missing.xml").replace(b"unknown_jobs", b"detailed_job_info")
    with pytest.raises(SgeParseError, match=r"^qstat -j -xml: not well-formed \(invalid token\) "
                                            r"\(line 3, column 3\)$"):
        parse_qstat_j(data)


@pytest.mark.parametrize("name,message", [
    ("xenon/queues-queue-without-name.xml", r"^qstat -g c -xml: cluster_queue_summary without name$"),
    ("xenon/queues-queue-empty-name.xml", r"^qstat -g c -xml: cluster_queue_summary with empty name$"),
])
def test_broken_cluster_queue_summaries_raise(name, message):
    with pytest.raises(SgeParseError, match=message):
        parse_qstat_gc(fixture(name))


@pytest.mark.parametrize("data,message", [
    (b"", r"^qhost -xml: document is empty$"),
    (b"  \n\n", r"^qhost -xml: document is empty$"),
    (b"error: commlib error: got select error (Connection refused)\n",
     r"^qhost -xml: syntax error \(line 1, column 0\)$"),
    (b"<?xml version='1.0'?>\n<qhost><host name='x'></qhost>",
     r"^qhost -xml: mismatched tag \(line 2, column 24\)$"),
    (b"<?xml version='1.0'?>\n<qhost><host name='a'>",
     r"^qhost -xml: document ends before its root element is closed \(line 2, column 22\)$"),
    (b"<?xml version='1.0'?>\n<qhost><host></host></qhost>", r"^qhost -xml: host without name$"),
])
def test_broken_qhost_raises(data, message):
    with pytest.raises(SgeParseError, match=message):
        parse_qhost(data)


def test_truncated_qstat_raises():
    data = fixture(AWS_F)
    with pytest.raises(SgeParseError, match=r"^qstat -xml: unclosed token \(line 52, column 6\)$"):
        parse_qstat(data[:len(data) // 2])
    cut = data.index(b"</job_list>") + len(b"</job_list>")
    with pytest.raises(SgeParseError, match=r"^qstat -xml: document ends before its root element "
                                            r"is closed \(line 21, column 17\)$"):
        parse_qstat(data[:cut])


def test_non_bytes_input_is_rejected():
    with pytest.raises(SgeParseError, match=r"^qstat -xml: expected bytes, got str$"):
        parse_qstat(u"<job_info/>")


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE job_info [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
]>
<job_info><queue_info/><job_info><job_list state="pending"><JB_job_number>1</JB_job_number>
<JB_name>&lol2;</JB_name><state>qw</state></job_list></job_info></job_info>
"""

XXE = b"""<?xml version="1.0"?><!-- a comment first -->
<!DOCTYPE job_info [<!ENTITY x SYSTEM "file:///etc/passwd">]><job_info>&x;</job_info>"""


@pytest.mark.parametrize("data", [BILLION_LAUGHS, XXE, b"<!ENTITY x 'y'><job_info/>"],
                         ids=["billion-laughs", "external-entity", "bare-entity"])
def test_doctype_and_entities_are_rejected(data):
    with pytest.raises(SgeParseError, match=r"^qstat -xml: document type/entity declarations are "
                                            r"not accepted"):
        parse_qstat(data)
    with pytest.raises(SgeParseError, match=r"document type/entity declarations"):
        parse_qhost(data.replace(b"job_info", b"qhost"))


# ---------------------------------------------------------------------------------------------
# snapshot
# ---------------------------------------------------------------------------------------------

def test_build_snapshot_combines_qstat_and_qhost():
    snap = build_snapshot(fixture(PE_F), fixture(PE_QHOST), 1700000000, "default")
    assert (snap["schema"], snap["taken_at"], snap["cell"], snap["flavour"]) == (
        1, 1700000000.0, "default", "SoGE 8.1")
    assert "accounting" not in snap
    assert sorted(snap["hosts"]) == ["cap-ghost", "node001", "node002", "vm"]
    qhost = parse_qhost(fixture(PE_QHOST))["hosts"]["node001"]
    h = snap["hosts"]["node001"]
    assert h == {
        "arch": "lx-amd64", "num_proc": 2, "load_avg": qhost["load_avg"],
        "mem_total": qhost["mem_total"], "mem_used": qhost["mem_used"],
        # all.q (2, cap_fill_up) + cap_three.q (3: cap_round_robin or two array tasks and one more)
        "slots_total": 5, "slots_used": 5, "slots_reserved": 0, "states": "",
        "queues": ["all.q", "cap_three.q"], "running_jobs": 4,
    }
    assert snap["hosts"]["node002"]["states"] == "d" and snap["hosts"]["node002"]["slots_total"] == 5
    assert snap["hosts"]["cap-ghost"]["load_avg"] is None and snap["hosts"]["cap-ghost"]["states"] == "u"
    assert len(snap["queues"]) == 7 and set(snap["queues"][0]) == {
        "name", "queue", "host", "qtype", "slots_total", "slots_used", "slots_reserved",
        "load_avg", "states"}
    assert len(snap["pending"]) == 3 and len(snap["running"]) == 7


def test_build_snapshot_from_a_real_soge_819_cluster():
    snap = build_snapshot(fixture("local_soge819/qstat_u_f_r.xml"),
                          fixture("local_soge819/qhost_q.xml"), 1700000000.5, "default")
    vm = snap["hosts"]["vm"]
    assert (vm["arch"], vm["num_proc"], vm["load_avg"]) == ("lx-amd64", 2, 1.22)
    assert vm["mem_total"] == int(round(23.5 * 1024 ** 3))
    assert (vm["slots_total"], vm["slots_used"], vm["states"], vm["running_jobs"]) == (2, 0, "", 0)
    node = snap["hosts"]["node002"]
    assert (node["arch"], node["load_avg"], node["mem_total"], node["states"]) == (
        None, None, None, "au")
    assert node["slots_total"] == 2
    queues = dict((q["name"], q) for q in snap["queues"])
    assert queues["all.q@vm"]["load_avg"] == 1.39746
    assert queues["all.q@node002"]["load_avg"] is None
    assert snap["pending"] == [] and snap["running"] == []


def test_build_snapshot_sums_queue_instances_and_unions_states():
    # two cluster queues on every host: all.q (2 slots) and cap_three.q (3); cap_three.q@node002
    # is disabled, cap_three.q@cap-ghost unknown; an advance reservation holds one slot of all.q@vm
    snap = build_snapshot(fixture(MIXED_F), fixture(MIXED_QHOST), 0, "c")
    vm = snap["hosts"]["vm"]
    assert (vm["slots_total"], vm["slots_reserved"], vm["queues"]) == (5, 1, ["all.q", "cap_three.q"])
    assert vm["slots_used"] == sum(q["slots_used"] for q in snap["queues"] if q["host"] == "vm")
    assert vm["num_proc"] == 2  # from qhost
    n2 = snap["hosts"]["node002"]
    assert (n2["slots_total"], n2["slots_used"], n2["states"]) == (5, 0, "d")
    assert snap["hosts"]["cap-ghost"]["states"] == "u" and snap["hosts"]["cap-ghost"]["queues"] == ["cap_three.q"]
    only = build_snapshot(fixture(MIXED_F), fixture(MIXED_QHOST), 0, "c", queues=["cap_three.q"])
    assert sorted(only["hosts"]) == ["cap-ghost", "node001", "node002", "vm"]
    assert all(h["slots_total"] == 3 for h in only["hosts"].values())
    assert only["hosts"]["vm"]["slots_reserved"] == 0 and only["hosts"]["vm"]["states"] == ""
    assert sorted(q["name"] for q in only["queues"]) == [
        "cap_three.q@cap-ghost", "cap_three.q@node001", "cap_three.q@node002", "cap_three.q@vm"]
    # running jobs by their master queue; waiting jobs unless every -q names another queue
    assert [j["name"] for j in only["running"]] == ["cap_queue_bound"]
    assert sorted(set(j["name"] for j in only["pending"])) == [
        "cap_held", "cap_no_such_memory", "cap_pe_too_wide"]


def test_build_snapshot_queue_filter_on_pending_jobs():
    qstat = fixture("ood_core/qstat_r.xml")
    qhost = fixture("handmade/qhost_q_sge62.xml")
    assert len(build_snapshot(qstat, qhost, 0, "default", queues=["general.q"])["pending"]) == 3
    other = build_snapshot(qstat, qhost, 0, "default", queues=["other.q"])
    assert other["pending"] == [] and other["running"] == [] and other["hosts"] == {}
    worker = build_snapshot(qstat, qhost, 0, "default")["hosts"]["worker"]
    assert (worker["slots_used"], worker["running_jobs"], worker["arch"]) == (1, 1, "lx26-amd64")


@pytest.mark.parametrize("listing", ["qstat_u.xml", "qstat_u_g_dt_r.xml"])
def test_build_snapshot_takes_queue_instances_from_qhost_without_full_listing(listing):
    full = build_snapshot(fixture(PE_F), fixture(PE_QHOST), 0, "default")
    snap = build_snapshot(fixture("captured/pe_and_arrays/" + listing), fixture(PE_QHOST), 0, "default")
    assert sorted(q["name"] for q in snap["queues"]) == sorted(q["name"] for q in full["queues"])
    for name, host in snap["hosts"].items():
        for key in ("slots_total", "slots_used", "states", "queues"):
            assert host[key] == full["hosts"][name][key], (name, key)
    if listing == "qstat_u.xml":
        # one row per job (task), on its master queue with all its slots: a PE job counts on one
        # host only (the used slots come from qhost all the same)
        assert sum(h["running_jobs"] for h in snap["hosts"].values()) == len(snap["running"]) == 7
    else:
        # -g t lists every slave host: vm runs cap_pe_slots, cap_round_robin and two array tasks,
        # node001 cap_fill_up, cap_round_robin and two array tasks, node002 cap_fill_up
        for name, host in snap["hosts"].items():
            assert host["running_jobs"] == full["hosts"][name]["running_jobs"], name
        assert [snap["hosts"][h]["running_jobs"] for h in ("vm", "node001", "node002")] == [4, 4, 1]


def test_build_snapshot_accounting_is_added_when_given():
    summary = {"window": 60, "jobs": 0, "avg_duration": None, "avg_wait": None}
    snap = build_snapshot(fixture(PE_F), fixture(PE_QHOST), 0, "default", accounting=summary)
    assert snap["accounting"] == summary


def test_build_snapshot_fails_on_broken_qhost():
    with pytest.raises(SgeParseError, match=r"^qhost -xml: document is empty$"):
        build_snapshot(fixture(AWS_F), b"", 0, "default")


# ---------------------------------------------------------------------------------------------
# qacct -j
# ---------------------------------------------------------------------------------------------

def test_qacct_sge6_single_record():
    (rec,) = parse_qacct(fixture("ood_core/qacct.txt").decode())
    assert (rec["jobnumber"], rec["taskid"], rec["failed"], rec["exit_status"]) == (1072, None, 100, 137)
    assert (rec["hostname"], rec["slots"], rec["qname"], rec["project"]) == ("worker", 1, "general.q", None)
    assert rec["qsub_time"] == utc(2018, 10, 24, 20, 22, 31)
    assert rec["start_time"] == utc(2018, 10, 25, 13, 16, 29)
    assert rec["end_time"] == utc(2018, 10, 25, 13, 22, 30)


def test_qacct_sge6_two_records_and_summary():
    records = parse_qacct(fixture("misc/willem4_sge_tools_qacct_output.txt"))
    assert [r["jobnumber"] for r in records] == [9599700, 9599701]
    end = records[0]["end_time"]
    assert end == utc(2011, 3, 21, 14, 54, 6)
    summary = accounting_summary(records, end + 60, 3600)
    assert summary == {"window": 3600, "jobs": 2, "avg_duration": 20.0, "avg_wait": 320.0}
    assert accounting_summary(records, end + 7200, 3600) == {
        "window": 3600, "jobs": 0, "avg_duration": None, "avg_wait": None}


def test_qacct_uge_record_with_milliseconds():
    (rec,) = parse_qacct(fixture("misc/riboviz_eddie_uge_qacct_j.txt"))
    assert (rec["jobnumber"], rec["taskid"], rec["failed"], rec["exit_status"]) == (2701173, None, 0, 0)
    assert rec["hostname"] == "node1c17.ecdf.ed.ac.uk"
    assert rec["qsub_time"] == pytest.approx(utc(2020, 6, 11, 13, 22, 28) + 0.652)
    assert rec["end_time"] - rec["start_time"] == pytest.approx(314.272)


def test_qacct_parallel_task_records_count_once():
    # cap_pe_done (PE cap_fill $fill_up, control_slaves TRUE, 4 slots on node001 and node002): a
    # record per host; cap_error: failed to start (failed 26), no start and no end time
    records = parse_qacct(fixture("captured/pe_and_arrays/qacct_j_pe.txt"))
    failed = parse_qacct(fixture("captured/mixed/qacct_j_error.txt"))
    assert sorted(r["hostname"] for r in records) == ["node001", "node002"]
    assert len(set(r["jobnumber"] for r in records)) == 1 and all(r["taskid"] is None for r in records)
    assert [(r["failed"], r["start_time"], r["end_time"]) for r in failed] == [(26, None, None)]
    first_start = min(r["start_time"] for r in records)
    last_end = max(r["end_time"] for r in records)
    summary = accounting_summary(records + failed, last_end + 60, 3600)
    assert summary["jobs"] == 1
    assert summary["avg_duration"] == last_end - first_start
    assert summary["avg_wait"] == first_start - min(r["qsub_time"] for r in records)


def test_qacct_soge_signal_annotation():
    # SoGE 8.1.9 prints the signal after the status: "exit_status  137                  (Killed)"
    (rec,) = parse_qacct(fixture("local_soge819/qacct_j_killed.txt"))
    assert (rec["jobnumber"], rec["failed"], rec["exit_status"]) == (13, 100, 137)
    assert (rec["hostname"], rec["jobname"], rec["owner"]) == ("node002", "demo8", "tester")
    assert rec["end_time"] - rec["start_time"] == 20


@pytest.mark.parametrize("text", ["", "no jobs running since startup\n", b"\n"])
def test_qacct_without_records(text):
    assert parse_qacct(text) == []


def test_qacct_bad_number_raises():
    with pytest.raises(SgeParseError, match=r"^qacct -j: exit_status 'x' is not a number$"):
        parse_qacct("jobnumber 1\nexit_status x\n")


def test_module_utils_stay_python38_compatible():
    # no PEP 604/585 annotations, no match statements, classic header
    path = sge_xml.__file__
    with open(path) as handle:
        source = handle.read()
    assert "from __future__ import (absolute_import, division, print_function)" in source
    assert "\nmatch " not in source and "__metaclass__ = type" in source
    ast.parse(source, path, feature_version=(3, 8))


def test_running_jobs_share_equal_hosts_mappings_and_never_change_another_job_s():
    # issue 21, "the poll at scale": the first row of a running job takes a mapping shared by
    # every job with that host and slots; a second row, or the granted total taken off the
    # master's host, works on the job's own copy
    serial = [b"<job_list state=\"running\"><JB_job_number>%d</JB_job_number><JB_name>s</JB_name>"
              b"<JB_owner>u</JB_owner><state>r</state><JAT_start_time>2020-01-01T00:00:00</JAT_start_time>"
              b"<slots>%d</slots></job_list>\n" % (jid, slots) for jid, slots in ((1, 1), (2, 1), (3, 2))]
    wide = (b"<job_list state=\"running\"><JB_job_number>10</JB_job_number><JB_name>w</JB_name>"
            b"<JB_owner>u</JB_owner><state>r</state><JAT_start_time>2020-01-01T00:00:00</JAT_start_time>"
            b"<slots>2</slots><granted_pe name=\"mpi\">1</granted_pe></job_list>\n")
    doc = envelope(queue_info=_queue("all.q@a", serial + [_row(7, b"MASTER", 2), wide], 6)
                   + _queue("all.q@b", [_row(7, b"SLAVE", 2)], 1))
    jobs = by_id(parse_qstat(doc)["running"])
    assert jobs[1]["hosts"] is jobs[2]["hosts"]
    assert [jobs[j]["hosts"] for j in (1, 2, 3, 7, 10)] == [{"a": 1}, {"a": 1}, {"a": 2}, {"a": 1, "b": 1}, {"a": 1}]
    assert jobs[10]["slots"] == 1 and jobs[3]["slots"] == 2
    # the entries are plain dicts (key-sharing ones), in the order and with the keys as before
    assert type(jobs[1]) is dict  # pylint: disable=unidiomatic-typecheck
    assert list(jobs[1]) == ["id", "task", "name", "owner", "project", "state", "queue", "host", "hosts", "slots",
                             "start_time"]
