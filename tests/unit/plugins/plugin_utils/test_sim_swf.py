# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SWF reader of the trace simulator (plugins/plugin_utils/sim/swf.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import swf

HEAD = ["; Version: 2.2", "; MaxNodes: 8", "; MaxProcs: 16", ";", "; Note: a comment: with colons"]


def line(job, submit, run, procs, req=-1, user=1):
    return "%d %d -1 %d %d -1 -1 %d -1 -1 1 %d 1 -1 -1 -1 -1 -1" % (job, submit, run, procs, req, user)


def test_parse_jobs_header_and_skips():
    text = HEAD + [line(1, 100, 50, 4), "", line(2, 90, 10, -1, req=2), line(3, 120, -1, 1),
                   line(4, 130, 5, -1, req=-1), "   5 140 0 0 1 -1 -1 1 -1 -1 1 2 1 -1 -1 -1 -1 -1"]
    trace = swf.parse(text, name="t.swf")
    assert [(j.id, j.submit, j.run, j.procs) for j in trace.jobs] == [
        (2, 90.0, 10.0, 2), (1, 100.0, 50.0, 4), (5, 140.0, 0.0, 1)]   # submit order, requested procs used
    assert trace.skipped == {"run time unknown (-1)": 1, "processor count unknown (-1)": 1}
    assert trace.notes == {"submit time before the previous job's (replayed in submit order)": 1}
    assert trace.lines == 5
    assert trace.header["MaxProcs"] == "16" and trace.machine_procs() == 16
    assert trace.jobs[1].line == 6


def test_machine_size_unknown_is_an_error_not_the_widest_job():
    """Issue 21 item 4: no header and no .machines file: say so (it used to be the widest job, 7)."""
    trace = swf.parse([line(1, 0, 5, 3), line(2, 1, 5, 7)], name="bare.swf")
    with pytest.raises(swf.MachineSizeUnknown) as err:
        trace.machine_procs()
    assert str(err.value).startswith("bare.swf: machine size unknown")
    assert "widest job asks for 7 processors" in str(err.value) and "--nodes" in str(err.value)


@pytest.mark.parametrize("bad, message", [
    ("1 2 3", "line 3: 3 fields, SWF has 18"),
    ("1 2 -1 10 x -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1", "line 3: field 5 (procs) is not a number: 'x'"),
    ("1 2 -1 10 nan -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1", "line 3: field 5 (procs) is not finite"),
    ("1 -5 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1", "line 3: field 2 (submit) is negative"),
    ("1 5 -1 10 1.5 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1", "line 3: processor count 1.5 is not a whole number"),
    ("1 2 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1", "line 3: 17 fields, SWF has 18"),
    ("1 2 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 x -1 19", "line 3: field 17 (prev_job) is not a number"),
])
def test_malformed_line_names_file_and_line(bad, message):
    with pytest.raises(swf.SwfError) as err:
        swf.parse(["; c", line(1, 0, 5, 1), bad, line(9, 9, 9, 1)], name="x.swf")
    assert str(err.value).startswith("x.swf: ")
    assert message in str(err.value)


def test_no_job_lines_is_an_error():
    with pytest.raises(swf.SwfError, match="no job lines"):
        swf.parse(["; only a header", ""], name="empty.swf")


def test_load_reads_a_file(tmp_path):
    path = tmp_path / "new.swf"
    path.write_text("\n".join(HEAD + [line(1, 0, 5, 2)]) + "\n")
    trace = swf.load(str(path))
    assert trace.name == str(path) and len(trace.jobs) == 1
