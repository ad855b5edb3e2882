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


# ---- node-hours and cost (instance_hour_price) ----------------------------------------------

def test_without_a_price_the_file_keeps_starclusters_columns(tmp_path):
    path = tmp_path / "s.csv"
    for i in range(2):
        assert "cost" not in stats.write_row(str(path), row(i))
    assert path.read_text().splitlines()[0] == ",".join(stats.COLUMNS)
    assert all(r["node_hours"] is None and r["total_cost"] is None for r in stats.read_rows(str(path)))


def test_cost_per_poll_and_running_totals(tmp_path):
    path = tmp_path / "s.csv"
    written = [stats.write_row(str(path), row(i), instance_hour_price=0.5) for i in range(4)]
    lines = path.read_text().splitlines()
    assert lines[0] == "time,hosts,running_jobs,queued_jobs,slots,avg_duration,avg_wait,avg_load," \
                       "node_hours,cost,total_node_hours,total_cost"
    # hosts 1, 2, 3, 4 one minute apart: each interval is billed at the hosts of its start
    assert [w["node_hours"] for w in written] == pytest.approx([0.0, 1 / 60, 2 / 60, 3 / 60])
    assert [w["cost"] for w in written] == pytest.approx([0.0, 0.5 / 60, 1 / 60, 1.5 / 60])
    assert written[-1]["total_node_hours"] == pytest.approx(6 / 60)
    assert written[-1]["total_cost"] == pytest.approx(3 / 60)
    assert lines[2].endswith(",0.016667,0.008333,0.016667,0.008333")
    rows = stats.read_rows(str(path))
    assert rows[-1]["total_node_hours"] == pytest.approx(0.1, abs=1e-6)
    assert rows[-1]["total_cost"] == pytest.approx(0.05, abs=1e-6)


def test_running_totals_do_not_drift_over_a_long_file(tmp_path):
    """Totals are read back from the file each poll; six decimals keep a day of polls exact to 1e-3."""
    path = tmp_path / "s.csv"
    for i in range(1440):
        stats.write_row(str(path), row(i, hosts=3), instance_hour_price=0.0416)
    last = stats.read_rows(str(path))[-1]
    assert last["total_node_hours"] == pytest.approx(3 * 1439 / 60, abs=1e-3)
    assert last["total_cost"] == pytest.approx(0.0416 * 3 * 1439 / 60, abs=1e-3)


def test_a_price_upgrades_an_old_file_once_and_keeps_its_rows(tmp_path):
    path = tmp_path / "s.csv"
    for i in range(2):
        stats.write_row(str(path), row(i))
    old = path.read_text().splitlines()
    first = stats.write_row(str(path), row(2), instance_hour_price=1.0)
    # the interval since the last old row is billed (its hosts: 2), the totals start there
    assert first["node_hours"] == pytest.approx(2 / 60) and first["total_cost"] == pytest.approx(2 / 60)
    lines = path.read_text().splitlines()
    assert lines[0].endswith(",avg_load,node_hours,cost,total_node_hours,total_cost")
    assert lines[1:3] == [line + ",,,," for line in old[1:]]
    assert len(lines) == 4 and sum(1 for line in lines if line.startswith("time,")) == 1
    stats.write_row(str(path), row(3), instance_hour_price=1.0)
    rows = stats.read_rows(str(path))
    assert [r["total_node_hours"] for r in rows[:2]] == [None, None]
    assert [r["total_node_hours"] for r in rows[2:]] == pytest.approx([2 / 60, 5 / 60], abs=1e-6)
    assert sorted(os.listdir(tmp_path)) == ["s.csv"]  # no temporary file left


def test_a_starcluster_headerless_file_gets_a_header_with_the_cost_columns(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("2023-11-14 22:12:20.000000,4,1,0,8,None,None,0.25\n")
    res = stats.write_row(str(path), row(0), instance_hour_price=2.0)
    assert res["node_hours"] == pytest.approx(4 / 60) and res["cost"] == pytest.approx(8 / 60)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("time,hosts,") and lines[0].endswith(",total_cost")
    assert lines[1] == "2023-11-14 22:12:20.000000,4,1,0,8,None,None,0.25,,,,"
    assert [r["hosts"] for r in stats.read_rows(str(path))] == [4.0, 1.0]


def test_dropping_the_price_keeps_counting_node_hours(tmp_path):
    path = tmp_path / "s.csv"
    stats.write_row(str(path), row(0, hosts=2), instance_hour_price=1.0)
    stats.write_row(str(path), row(1, hosts=2), instance_hour_price=1.0)
    res = stats.write_row(str(path), row(2, hosts=2))
    assert res["cost"] is None and res["node_hours"] == pytest.approx(2 / 60)
    # totals continue from the file, which keeps six decimals
    assert res["total_cost"] == pytest.approx(2 / 60, abs=1e-6)
    assert res["total_node_hours"] == pytest.approx(4 / 60, abs=1e-6)
    stats.write_row(str(path), row(3, hosts=2), instance_hour_price=1.0)
    rows = stats.read_rows(str(path))
    assert rows[2]["cost"] is None
    assert [rows[i]["cost"] for i in (0, 1, 3)] == pytest.approx([0.0, 2 / 60, 2 / 60], abs=1e-6)
    assert rows[-1]["total_cost"] == pytest.approx(4 / 60, abs=1e-6)
    assert rows[-1]["total_node_hours"] == pytest.approx(6 / 60, abs=1e-5)


def test_a_clock_that_goes_back_or_a_garbage_last_line_adds_nothing(tmp_path):
    path = tmp_path / "s.csv"
    stats.write_row(str(path), row(5), instance_hour_price=1.0)
    res = stats.write_row(str(path), row(4), instance_hour_price=1.0)
    assert res["node_hours"] == 0.0
    with open(path, "a") as handle:
        handle.write("not,a,row\n")
    res = stats.write_row(str(path), row(6), instance_hour_price=1.0)  # previous readable row: row(4)
    assert res["node_hours"] == pytest.approx(5 * 2 / 60)


@pytest.mark.parametrize("price", [-1, "abc", float("nan"), float("inf"), True])
def test_a_bad_price_is_an_error_naming_it_and_writes_nothing(tmp_path, price):
    path = tmp_path / "s.csv"
    with pytest.raises(ValueError, match="instance_hour_price"):
        stats.write_row(str(path), row(0), instance_hour_price=price)
    assert not path.exists()


def test_account_is_pure():
    prev = {"time": T0, "hosts": 6.0, "total_node_hours": 10.0, "total_cost": 4.0}
    assert stats.account(prev, {"time": T0 + 1800}, 0.2) == pytest.approx(
        {"node_hours": 3.0, "cost": 0.6, "total_node_hours": 13.0, "total_cost": 4.6})
    assert stats.account(None, {"time": T0}, 0) == {"node_hours": 0.0, "cost": 0.0, "total_node_hours": 0.0,
                                                    "total_cost": 0.0}


def test_cost_plots(tmp_path):
    path = tmp_path / "s.csv"
    for i in range(5):
        stats.write_row(str(path), row(i), instance_hour_price=0.1)
    written = stats.write_plots(str(path), str(tmp_path / "p"), cluster="mycluster")
    names = sorted(os.path.basename(p) for p in written)
    assert names == sorted([c + ".png" for c in stats.PLOTTED] + ["node_hours.png", "cost.png"])
    for p in written:
        assert open(p, "rb").read().startswith(PNG_MAGIC)
