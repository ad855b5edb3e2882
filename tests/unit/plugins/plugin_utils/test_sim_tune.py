# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tune sweep (plugins/plugin_utils/sim/tune.py) and its command (benchmarks/tune.py).

Workloads here are small made-up job lists (a few dozen jobs), so every replay takes milliseconds.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine, swf, tune

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 4)))


def cli(name):
    spec = importlib.util.spec_from_file_location("bench_" + name, os.path.join(REPO, "benchmarks", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def jobs(count=40, gap=300.0, run=900.0, procs=2):
    """Bursts of jobs: 4 at once every ``gap`` s for a while, then a quiet hour, repeated."""
    out = []
    for i in range(count):
        burst, k = divmod(i, 8)
        out.append(swf.Job(i + 1, burst * 7200.0 + (k // 4) * gap, run, procs, i + 1, 1))
    return out


def swf_text(job_list, header=("; MaxNodes: 4", "; MaxProcs: 16")):
    lines = list(header)
    for j in job_list:
        lines.append("%d %d -1 %d %d -1 -1 %d -1 -1 1 1 1 -1 -1 -1 -1 -1" % (j.id, j.submit, j.run, j.procs, j.procs))
    return "\n".join(lines) + "\n"


def test_grid_is_every_combination_with_cap_and_profile():
    cands = tune.grid(["idle_time=120,540", "add_nodes_per_iter=1,cap", "interval=30"], cap=8)
    assert cands == [
        {"idle_time": 120, "add_nodes_per_iter": 1, "interval": 30, "profile": "default"},
        {"idle_time": 120, "add_nodes_per_iter": 8, "interval": 30, "profile": "default"},
        {"idle_time": 540, "add_nodes_per_iter": 1, "interval": 30, "profile": "default"},
        {"idle_time": 540, "add_nodes_per_iter": 8, "interval": 30, "profile": "default"}]
    assert tune.grid(["profile=starcluster,parallelcluster", "job_wait_time=0.5"], cap=2) == [
        {"profile": "starcluster", "job_wait_time": 0.5}, {"profile": "parallelcluster", "job_wait_time": 0.5}]
    assert tune.label({"profile": "default", "interval": 30, "idle_time": 120}) == "default idle_time=120 interval=30"


@pytest.mark.parametrize("spec, message", [
    (["idle_time"], "is not name=value"),
    (["colour=red"], "'colour' is not an option tune varies"),
    (["idle_time=soon"], "idle_time: 'soon' is not a number"),
    (["profile=slurm"], "profile: 'slurm' is not one of"),
    (["interval=30", "interval=60"], "interval is given twice"),
])
def test_bad_grid_is_an_error_naming_it(spec, message):
    with pytest.raises(ValueError, match=message):
        tune.grid(spec, cap=4)


def row(label, cost, p95, mean=0.0, baseline=False):
    cand = {"profile": "default", "baseline": baseline}
    return {"label": label, "cost": cost, "node_hours": cost, "wait_p95": p95, "wait_mean": mean, "candidate": cand}


def test_recommend_cheapest_meeting_the_target_else_closest():
    rows = [row("a", 100, 900), row("b", 90, 400), row("c", 80, 700), row("base", 10, 0, baseline=True)]
    assert tune.recommend(rows, "p95", 600) == (rows[1], True)         # c is cheaper but misses; base never
    assert tune.recommend(rows, "p95", 300) == (rows[1], False)        # none meets: the lowest p95
    assert tune.recommend([row("a", 5, 0, mean=50), row("b", 4, 0, mean=70)], "mean", 60)[0]["label"] == "a"
    with pytest.raises(ValueError, match="target: must be one of"):
        tune.wait_of(rows[0], "max")


def test_sweep_replays_each_candidate_with_the_engine():
    work = jobs()
    cands = tune.grid(["idle_time=60,1800", "job_wait_time=0"], cap=4)
    rows = tune.sweep(work, cands, cap=4, slots_per_node=4)
    assert [r["label"] for r in rows] == ["default idle_time=60 job_wait_time=0",
                                          "default idle_time=1800 job_wait_time=0"]
    config = engine.policy_config("default", 4, 4, overrides={"idle_time": 60, "job_wait_time": 0})
    direct = engine.summarize(engine.simulate(work, "default", 4, 4, config=config))
    assert rows[0]["node_hours"] == direct["node_hours"] and rows[0]["wait_p95"] == direct["wait_p95"]
    assert rows[0]["cost"] == rows[0]["cost_per_second"]
    # idle for 30 minutes between bursts: a short idle_time removes the nodes and costs less
    assert rows[0]["node_hours"] < rows[1]["node_hours"]


def test_tune_command_prints_the_table_recommends_and_plots(tmp_path, capsys):
    trace = tmp_path / "site.swf"
    trace.write_text(swf_text(jobs()))
    png = tmp_path / "tune.png"
    rc = cli("tune").main(["--trace", str(trace), "--slots-per-node", "4", "--p95-wait", "100000",
                           "--grid", "idle_time=60,1800", "--grid", "job_wait_time=0", "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "machine: 4 nodes x 4 slots (header MaxProcs: 16 processors, 4 slot(s) per node)" in out
    assert "recommended: default idle_time=60 job_wait_time=0:" in out
    # only the options whose value differs from the shipped default are printed (those may change)
    assert "playbook options: -e profile=default -e idle_time=60" in out
    assert "parallelcluster (as simulated)" in out and "starcluster (as simulated)" in out
    assert png.stat().st_size > 1000


def test_tune_command_says_when_no_candidate_meets_the_target(tmp_path, capsys):
    trace = tmp_path / "site.swf"
    trace.write_text(swf_text(jobs()))
    rc = cli("tune").main(["--trace", str(trace), "--slots-per-node", "4", "--mean-wait", "0", "--no-baselines",
                           "--grid", "job_wait_time=600,1200"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "no candidate meets mean wait <= 0 s; the closest: default job_wait_time=600:" in out


def test_tune_command_needs_the_machine_size(tmp_path, capsys):
    trace = tmp_path / "bare.swf"
    trace.write_text(swf_text(jobs(8), header=()))
    with pytest.raises(SystemExit) as err:
        cli("tune").main(["--trace", str(trace), "--p95-wait", "60"])
    assert "bare.swf: machine size unknown" in str(err.value) and "--nodes" in str(err.value)
    rc = cli("tune").main(["--trace", str(trace), "--nodes", "2", "--slots-per-node", "4", "--p95-wait", "100000",
                           "--no-baselines", "--grid", "idle_time=60"])
    assert rc == 0 and "machine: 2 nodes x 4 slots (--nodes 2 --slots-per-node 4)" in capsys.readouterr().out


def test_tune_command_on_accounting_needs_nodes(tmp_path, capsys):
    from .test_sim_accounting import raw_record
    acct = tmp_path / "accounting"
    acct.write_text("\n".join(raw_record(job=j, submit=1000 + 60 * j, start=1000 + 60 * j, end=1600 + 60 * j, slots=2)
                              for j in range(1, 13)) + "\nbroken:line\n")
    with pytest.raises(SystemExit):
        cli("tune").main(["--accounting", str(acct), "--p95-wait", "600", "--skip-bad"])
    assert "the accounting does not record the cluster's size" in capsys.readouterr().err
    rc = cli("tune").main(["--accounting", str(acct), "--skip-bad", "--nodes", "3", "--slots-per-node", "2",
                           "--p95-wait", "100000", "--no-baselines", "--grid", "idle_time=60,600"])
    out = capsys.readouterr().out
    assert rc == 0 and "accounting: 12 jobs" in out and "skipped 1 malformed records" in out


def test_converter_command_writes_swf(tmp_path, capsys):
    from .test_sim_accounting import raw_record
    acct = tmp_path / "accounting"
    acct.write_text("\n".join([raw_record(job=1), raw_record(job=2, start=0, end=0, failed=26)]) + "\n")
    out_swf = tmp_path / "site.swf"
    assert cli("accounting_to_swf").main([str(acct), "-o", str(out_swf), "--nodes", "2", "--slots-per-node", "8"]) == 0
    printed = capsys.readouterr().out
    assert "1 SWF jobs written" in printed and "left out 1 records: never started (failed 26)" in printed
    assert swf.load(str(out_swf)).machine_size() == (16, "header MaxProcs")


def test_tune_command_reads_extended_swf_with_its_machines_file(tmp_path, capsys):
    lines = ["%d %d 0 600 4 -1 -1 4 900 -1 1 1 1 -1 0 -1 -1 -1 0 600 all" % (i, 60 * i) for i in range(1, 13)]
    trace = tmp_path / "meta.mwf"
    trace.write_text("\n".join(lines) + "\n")
    machines = tmp_path / "meta.mwf.machines"
    machines.write_text("0 cl_a 2 4 1 256 a 0\n1 cl_b 1 8 1 256 b 0\n")
    with pytest.raises(SystemExit) as err:
        cli("tune").main(["--trace", str(trace), "--p95-wait", "100000", "--no-baselines", "--grid", "idle_time=60"])
    assert "clusters with different CPUs per node (4, 8)" in str(err.value)
    machines.write_text("0 cl_a 3 4 1 256 a 0\n")
    assert cli("tune").main(["--trace", str(trace), "--p95-wait", "100000", "--no-baselines",
                             "--grid", "idle_time=60"]) == 0
    assert "machine: 3 nodes x 4 slots (%s (1 clusters): 12 processors" % machines in capsys.readouterr().out
