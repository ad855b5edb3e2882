# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two share commands' own logic, without their long runs: what benchmarks/shares_bench.py
prints from per-run medians (min / median / max, the ratio against the baseline of the same
run, the machine's load), and how benchmarks/shares_experiments.py derives Fig. 8's stop from
the paper's 1.5 s (docs/shares.md)."""

from __future__ import annotations

import argparse
import importlib.util
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def cli(name):
    spec = importlib.util.spec_from_file_location("bench_" + name,
                                                  os.path.join(REPO, "benchmarks", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return cli("shares_bench")


@pytest.fixture(scope="module")
def experiments():
    return cli("shares_experiments")


def test_bench_ratio_is_taken_per_run_against_that_runs_baseline(bench):
    # run 2 is twice as slow for everything (load from elsewhere): milliseconds spread, the
    # ratio does not; min / median / max are over the per-run medians
    names = ["baseline", bench.TARGET_CASE, "small"]
    medians = {"baseline": [0.003, 0.006, 0.0033],
               bench.TARGET_CASE: [0.054, 0.108, 0.0594],
               "small": [0.0002, 0.0004, 0.00022]}
    rows = bench.rows(names, medians)
    assert [r[0] for r in rows] == names
    assert rows[0][1:] == pytest.approx((0.003, 0.0033, 0.006, 1.0))
    assert rows[1][1:] == pytest.approx((0.054, 0.0594, 0.108, 18.0))
    assert rows[2][4] == pytest.approx(0.2 / 3)


def test_bench_report_names_the_machine_load_and_sampling(bench):
    names = ["baseline", bench.TARGET_CASE]
    medians = {"baseline": [0.003, 0.004], bench.TARGET_CASE: [0.045, 0.052]}
    args = argparse.Namespace(runs=2, rounds=15, reserves_rounds=3)
    lines = bench.report(names, medians, (1.5, 1.0, 0.5), (2.25, 1.25, 0.75), 2, args, 12.3)
    assert lines[0].startswith("machine: ") and "CPUs %d (usable by this process 2)" \
        % os.cpu_count() in lines[0]
    assert lines[1] == ("load average (1/5/15 min): before 1.50 1.00 0.50, "
                        "after 2.25 1.25 0.75")
    assert "2 runs per case" in lines[2] and "median of 15 rounds" in lines[2]
    header = lines[4].split()
    assert header[-5:] == ["min", "median", "max", "x", "base"]
    fields = lines[6].split()
    assert fields[-4:] == ["45.0", "48.5", "52.0", "14.00"]     # median of 15 and 13
    assert lines[-1].endswith("met (48.5 ms)") and "NOT" not in lines[-1]


def test_stop_derives_from_the_papers_seconds(experiments):
    assert experiments.stop_cycles(1.5, 0.3) == 5           # the paper: 1.5 s, 0.3 s reports
    assert experiments.stop_cycles(6.0, 0.3) == 20          # the earlier runs' stop
    assert experiments.two_stops(200, 5) == [(0, 60, 65), (0, 120, 125)]
    assert experiments.two_stops(200, 20) == [(0, 60, 80), (0, 120, 140)]
    with pytest.raises(ValueError, match="does not fit"):
        experiments.two_stops(100, 40)
    with pytest.raises(ValueError, match="must be > 0"):
        experiments.stop_cycles(1.5, 0)
    fig8 = dict((k, kw) for k, _t, kw, _g in experiments.scenarios(False, True, 5))
    assert fig8["fig8"]["stops"] == [(0, 60, 65), (0, 120, 125)]
    assert fig8["big8"]["stops"] == [(0, 45, 50), (0, 90, 95)]


@pytest.mark.parametrize("argv,needle", [
    (["--only", "fig9"], "unknown experiment"),
    (["--stop-cycles", "80"], "does not fit"),
    (["--cycle-seconds", "0"], "must be > 0"),
])
def test_experiments_bad_options_are_refused_before_running(experiments, argv, needle, capsys):
    with pytest.raises(SystemExit):
        experiments.main(argv)
    assert needle in capsys.readouterr().err
