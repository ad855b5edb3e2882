# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine accounting to SWF (plugins/plugin_utils/sim/accounting.py).

Two kinds of input:

* ``qacct -j`` output captured on the local test cluster (SoGE 8.1.9) and published by others,
  from tests/unit/fixtures/sge/ (PROVENANCE.md there says where each came from): a parallel job
  with its sub-task record, a job that failed before it started, a killed job, a Univa record
  with millisecond dates, an SGE 6 two-record file;
* raw accounting-file lines.  **No accounting file captured from a cluster is in the repository
  yet**: the raw records here are *generated* by :func:`raw_record` below from the documented
  format (``man 5 sge_accounting``, SoGE 8.1.9: 45 colon-separated fields), not taken from a
  cluster.  :func:`test_every_accounting_fixture_converts` also converts every file named
  ``accounting*`` under tests/unit/fixtures/sge/, so a captured file dropped there is tested
  without a new line of code.
"""

from __future__ import annotations

import glob
import os

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import accounting, swf

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "fixtures", "sge")


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


def raw_record(job=1, submit=1000, start=1010, end=1070, slots=1, task=0, failed=0, exit_status=0,
               owner="alice", group="users", queue="all.q", host="node001", project="NONE", pe="NONE",
               pe_taskid="NONE", category="-q all.q", name="job"):
    """One line of the raw accounting file, fields in ``man 5 sge_accounting`` order (45 of them)."""
    fields = [queue, host, group, owner, name, str(job), "sge", "0", str(submit), str(start), str(end),
              str(failed), str(exit_status), str(max(0, end - start) if start else 0)]
    fields += ["0"] * 17                                     # 15-31: ru_utime ... ru_nivcsw
    fields += [project, "defaultdepartment", pe, str(slots), str(task), "0.5", "0.0", "0.0", category,
               "0.0", pe_taskid, "0", "0", "0"]              # 32-45
    assert len(fields) == 45
    return ":".join(fields)


HEAD = ["# Version: 8.1.9", "# ", "# DO NOT MODIFY THIS FILE MANUALLY!", "# "]


def swf_fields(conv):
    return [[int(x) for x in ln.split()] for ln in conv.lines if not ln.startswith(";")]


def test_raw_job_maps_to_swf_fields():
    conv = accounting.convert(HEAD + [raw_record(job=7, submit=1000, start=1010, end=1070, slots=4, project="p1"),
                                      raw_record(job=8, submit=1030, start=1030, end=1040, exit_status=1,
                                                 owner="bob", queue="long.q")], name="acct")
    assert swf_fields(conv) == [
        # id submit wait run procs cpu mem req_procs req_time req_mem status user group app queue part prev think
        [1, 0, 10, 60, 4, -1, -1, 4, -1, -1, 1, 1, 1, 1, 1, 1, -1, -1],
        [2, 30, 0, 10, 1, -1, -1, 1, -1, -1, 0, 2, 1, 1, 2, 2, -1, -1]]
    assert "; UnixStartTime: 1000" in conv.lines
    assert "; Queue: 2 long.q" in conv.lines and "; Partition: 1 p1 (project)" in conv.lines
    assert not any("alice" in ln or "bob" in ln for ln in conv.lines)        # no user names written
    assert conv.jobs == 2 and not conv.left_out


def test_array_tasks_are_one_job_each():
    lines = [raw_record(job=5, task=t, start=1000 + t, end=1100 + t) for t in (1, 2, 3)]
    conv = accounting.convert(lines)
    assert [f[3] for f in swf_fields(conv)] == [100, 100, 100] and conv.jobs == 3


def test_jobs_that_never_started_are_left_out_and_counted():
    lines = [raw_record(job=1), raw_record(job=2, start=0, end=0, failed=26),
             raw_record(job=3, start=0, end=0, failed=26), raw_record(job=4, start=0, end=0, failed=1)]
    conv = accounting.convert(lines)
    assert conv.jobs == 1
    assert conv.left_out == {"never started (failed 26)": 2, "never started (failed 1)": 1}
    assert "; Note: left out: 2 records: never started (failed 26)" in conv.lines


def test_parallel_sub_task_records_merge_into_their_job():
    lines = [raw_record(job=9, submit=1000, start=1010, end=1100, slots=8, pe="mpi", host="node001"),
             raw_record(job=9, submit=1010, start=1012, end=1090, slots=8, pe="mpi", host="node002",
                        pe_taskid="1.node002"),
             raw_record(job=9, submit=1010, start=1012, end=1095, slots=8, pe="mpi", host="node003",
                        pe_taskid="2.node003")]
    conv = accounting.convert(lines)
    assert swf_fields(conv) == [[1, 0, 10, 90, 8, -1, -1, 8, -1, -1, 1, 1, 1, 1, 1, 1, -1, -1]]
    assert conv.merged == 2 and len(conv.hosts) == 3


def test_a_rescheduled_job_gives_one_job_per_attempt():
    lines = [raw_record(job=3, submit=1000, start=1010, end=1050, failed=21),
             raw_record(job=3, submit=1000, start=1200, end=1300)]
    fields = swf_fields(accounting.convert(lines))
    assert [(f[1], f[2], f[3], f[10]) for f in fields] == [(0, 10, 40, 0), (0, 200, 100, 1)]


def test_milliseconds_of_univa_are_read_as_such():
    conv = accounting.convert([raw_record(submit=1600000000000, start=1600000009500, end=1600000069500)])
    assert swf_fields(conv)[0][1:4] == [0, 10, 60] and "; UnixStartTime: 1600000000" in conv.lines


def test_a_category_holding_colons_keeps_pe_taskid():
    lines = [raw_record(job=2, slots=2, category="-l h_rt=1:00:00 -pe mpi 2"),
             raw_record(job=2, slots=2, start=1011, end=1060, category="-l h_rt=1:00:00 -pe mpi 2",
                        pe_taskid="1.node002")]
    assert len(lines[0].split(":")) == 47
    conv = accounting.convert(lines)
    assert conv.jobs == 1 and conv.merged == 1


@pytest.mark.parametrize("bad, message", [
    ("all.q:node001:users", "line 3: 3 fields separated by ':', an accounting record has at least 36"),
    (raw_record().replace(":1010:", ":soon:", 1), "line 3: start_time is not a number: 'soon'"),
    (raw_record().replace("alice:job:1:", "alice:job:x:"),
     "line 3: job_number, slots or task_number is not a whole number"),
])
def test_a_broken_line_is_an_error_naming_its_number(bad, message):
    with pytest.raises(accounting.AccountingError) as err:
        accounting.convert([raw_record(job=1), "", bad, raw_record(job=2)], name="acct", fmt="raw")
    assert str(err.value).startswith("acct: ") and message in str(err.value)


def test_skip_bad_skips_and_counts_broken_lines():
    conv = accounting.convert([raw_record(job=1), "all.q:node001:users", raw_record(job=2),
                               raw_record().replace(":1010:", ":soon:", 1)], skip_bad=True)
    assert conv.jobs == 2 and sum(conv.bad.values()) == 2 and conv.bad_lines == [2, 4]
    assert any(ln.startswith("; Note: skipped 1 malformed records") for ln in conv.lines)


def test_nothing_to_convert_is_an_error():
    with pytest.raises(accounting.AccountingError, match="neither a raw accounting file nor qacct"):
        accounting.convert(HEAD + ["not accounting at all"], name="x")
    with pytest.raises(accounting.AccountingError, match="no accounting record left after skipping 1"):
        accounting.convert(["a:b:" + ":".join(["x"] * 40)], name="x", skip_bad=True)


def test_converted_history_replays_with_the_size_given():
    conv = accounting.convert([raw_record(job=j, submit=1000 + 10 * j, start=1000 + 10 * j, end=1100 + 10 * j)
                               for j in range(1, 6)], nodes=3, slots_per_node=4)
    trace = swf.parse(conv.lines, name="site")
    assert len(trace.jobs) == 5 and trace.machine_size() == (12, "header MaxProcs")
    bare = swf.parse(accounting.convert([raw_record()]).lines, name="bare")
    with pytest.raises(swf.MachineSizeUnknown):
        bare.machine_procs()


# --- qacct -j output captured from clusters (see tests/unit/fixtures/sge/PROVENANCE.md) ----------

def test_qacct_parallel_job_of_the_local_cluster_is_one_job():
    """captured/pe_and_arrays/qacct_j_pe.txt: job 292, PE $fill_up 4 slots, 2 records (master, sub-task)."""
    conv = accounting.load(fixture("captured", "pe_and_arrays", "qacct_j_pe.txt"))
    assert swf_fields(conv) == [[1, 0, 1, 5, 4, -1, -1, 4, -1, -1, 1, 1, 1, 1, 1, 1, -1, -1]]
    assert conv.merged == 1 and conv.hosts == {"node001", "node002"}


def test_qacct_job_that_failed_before_starting_is_left_out():
    """captured/mixed/qacct_j_error.txt: failed 26 (opening input/output file), start_time -/-."""
    conv = accounting.load(fixture("captured", "mixed", "qacct_j_error.txt"))
    assert conv.jobs == 0 and conv.left_out == {"never started (failed 26)": 1}


def test_qacct_killed_job_is_failed_status():
    """local_soge819/qacct_j_killed.txt: exit 137 (Killed), failed 100; qsub 04:04:57, 04:05:19-04:05:39."""
    conv = accounting.load(fixture("local_soge819", "qacct_j_killed.txt"))
    assert swf_fields(conv)[0][1:5] == [0, 22, 20, 1] and swf_fields(conv)[0][10] == 0


def test_qacct_univa_dates_with_milliseconds():
    """misc/riboviz_eddie_uge_qacct_j.txt: 13:22:28.652, 13:22:37.680, 13:27:51.952 (UGE 8.6 style)."""
    conv = accounting.load(fixture("misc", "riboviz_eddie_uge_qacct_j.txt"))
    assert swf_fields(conv)[0][1:5] == [0, 9, 314, 1]
    assert "; Partition: 1 uoe_baseline (project)" in conv.lines


def test_qacct_sge6_two_records_are_two_jobs():
    conv = accounting.load(fixture("misc", "willem4_sge_tools_qacct_output.txt"))
    assert [f[1:5] for f in swf_fields(conv)] == [[0, 320, 20, 1], [0, 320, 20, 1]]


def test_qacct_broken_record_names_its_line():
    lines = open(fixture("ood_core", "qacct.txt")).read().splitlines()
    broken = [ln.replace("Thu Oct 25 13:16:29 2018", "Thu Oct 99 13:16:29 2018") for ln in lines]
    at = [i for i, ln in enumerate(lines, 1) if ln.startswith("start_time")][0]
    with pytest.raises(accounting.AccountingError) as err:
        accounting.convert(broken, name="q.txt")
    assert str(err.value) == "q.txt: line %d: not a date qacct prints: 'Thu Oct 99 13:16:29 2018'" % at
    conv = accounting.convert(lines + ["=" * 62] + broken, name="q.txt", skip_bad=True)
    assert conv.jobs == 1 and conv.bad_lines == [len(lines) + 1 + at] and conv.bad == {"not a date qacct prints": 1}


def _accounting_fixtures():
    found = set(glob.glob(os.path.join(FIXTURES, "**", "qacct*.txt"), recursive=True))
    found |= set(glob.glob(os.path.join(FIXTURES, "**", "*_qacct_*.txt"), recursive=True))
    found |= set(glob.glob(os.path.join(FIXTURES, "**", "accounting*"), recursive=True))
    return sorted(os.path.relpath(p, FIXTURES) for p in found if os.path.isfile(p))


CAPTURED = os.path.join(FIXTURES, "captured", "accounting")


def test_the_local_clusters_accounting_file_and_its_qacct_output_give_the_same_trace():
    """Real records of the local cluster (tests/capture/capture_accounting.py): a job exiting 0,
    one exiting 3, a 3-task array, a 2-slot smp job and a job that failed before it started, read
    once from the raw accounting file and once from qacct -j's output."""
    raw = accounting.load(os.path.join(CAPTURED, "accounting"))
    text = accounting.load(os.path.join(CAPTURED, "qacct_j.txt"))

    def records(conv):  # the header comments name the source file
        return [line for line in conv.lines if not line.startswith(";")]
    assert records(raw) == records(text) and len(records(raw)) == 6
    assert raw.jobs == 6 and raw.merged == 0 and dict(raw.left_out) == {"never started (failed 28)": 1}
    jobs = swf.parse(raw.lines, name="captured").jobs
    assert sorted(j.procs for j in jobs) == [1, 1, 1, 1, 1, 2]  # the array's tasks one job each
    # capacct_exit3: SWF field 11 (status) 0, failed; the others 1
    assert sorted(int(line.split()[10]) for line in records(raw)) == [0, 1, 1, 1, 1, 1]


@pytest.mark.parametrize("rel", _accounting_fixtures())
def test_every_accounting_fixture_converts(rel):
    """Any qacct -j capture or accounting file under tests/unit/fixtures/sge/ converts to valid SWF:
    every record is a job, merged, an extra attempt or left out with its reason."""
    conv = accounting.load(os.path.join(FIXTURES, rel))
    records = (accounting.parse_raw if accounting.detect(open(os.path.join(FIXTURES, rel))) == "raw"
               else accounting.parse_qacct)(open(os.path.join(FIXTURES, rel)))
    assert conv.jobs + conv.merged + sum(conv.left_out.values()) == len(records)
    if conv.jobs:
        trace = swf.parse(conv.lines, name=rel)
        assert len(trace.jobs) + sum(trace.skipped.values()) == conv.jobs
        assert all(j.run >= 0 and j.procs >= 1 for j in trace.jobs)
