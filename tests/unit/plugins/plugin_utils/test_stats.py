# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Statistics CSV and plots (plugins/plugin_utils/stats.py)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils import stats

T0 = 1700000000.0
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def row(i, **kw):
    out = {"time": T0 + 60 * i, "hosts": 1 + i, "running_jobs": 2 * i, "queued_jobs": 10 - i, "slots": 2 + 2 * i,
           "avg_duration": 12.5 + i, "avg_wait": None if i == 0 else 3.25, "avg_load": 0.5}
    out.update(kw)
    return out


def test_header_written_once_and_rows_appended(tmp_path):
    path = tmp_path / "deep" / "dir" / "sge-stats.csv"
    for i in range(3):
        stats.append_row(str(path), row(i))
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(stats.COLUMNS)
    assert lines[0] == "time,hosts,running_jobs,queued_jobs,slots,avg_duration,avg_wait,avg_load"
    assert len(lines) == 4
    assert sum(1 for line in lines if line.startswith("time,")) == 1
    assert lines[1] == "2023-11-14T22:13:20Z,1,0,10,2,12.5,,0.5"
    assert lines[3].startswith("2023-11-14T22:15:20Z,3,4,8,6,14.5,3.25,")
    assert oct(os.stat(path.parent).st_mode & 0o777) == oct(0o700)


def test_append_to_existing_empty_file_writes_header(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("")
    stats.append_row(str(path), row(0))
    assert path.read_text().splitlines()[0].startswith("time,")


def test_missing_column_is_an_error_and_writes_nothing(tmp_path):
    path = tmp_path / "s.csv"
    bad = row(0)
    del bad["slots"]
    with pytest.raises(ValueError, match="slots"):
        stats.append_row(str(path), bad)
    assert not path.exists()


def test_read_rows_round_trip_and_starcluster_files(tmp_path):
    path = tmp_path / "s.csv"
    for i in range(2):
        stats.append_row(str(path), row(i))
    # a headerless StarCluster line, and garbage, appended by hand
    with open(path, "a") as handle:
        handle.write("2011-03-03 21:05:37.123456,4,1,0,8,None,None,0.25\n")
        handle.write("not,a,row\n")
    rows = stats.read_rows(str(path))
    assert len(rows) == 3
    assert rows[0]["hosts"] == 1.0 and rows[0]["avg_wait"] is None
    assert rows[1]["time"].timestamp() == T0 + 60
    assert rows[2]["time"].year == 2011 and rows[2]["avg_duration"] is None and rows[2]["avg_load"] == 0.25


def test_plots_written_one_png_per_statistic(tmp_path):
    path = tmp_path / "s.csv"
    for i in range(5):
        stats.append_row(str(path), row(i))
    out = tmp_path / "plots"
    written = stats.write_plots(str(path), str(out), cluster="mycluster")
    names = sorted(os.path.basename(p) for p in written)
    assert names == sorted(c + ".png" for c in stats.PLOTTED)
    assert "hosts.png" in names and "running_jobs.png" in names
    for p in written:
        data = open(p, "rb").read()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
    # no temporary files left behind
    assert sorted(os.listdir(out)) == names
    # a second call replaces the files in place
    stats.append_row(str(path), row(5))
    assert sorted(stats.write_plots(str(path), str(out))) == sorted(written)
    assert sorted(os.listdir(out)) == names


def test_plots_of_a_single_row_and_of_empty_columns(tmp_path):
    path = tmp_path / "s.csv"
    stats.append_row(str(path), row(0, avg_duration=None))
    written = stats.write_plots(str(path), str(tmp_path / "p"))
    assert all(os.path.getsize(p) > 0 for p in written)


def test_default_dir(tmp_path):
    assert stats.default_dir("mycluster", home=str(tmp_path)) == str(tmp_path / ".gridengine-balancer" / "mycluster")
    assert stats.default_dir("c1").endswith(os.path.join(".gridengine-balancer", "c1"))
    with pytest.raises(ValueError):
        stats.default_dir("../etc")
