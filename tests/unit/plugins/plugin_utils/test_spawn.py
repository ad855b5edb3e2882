# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spawn balancing (plugins/plugin_utils/policy/spawn.py): each rule of seed 004 and each
eligibility condition on hand-checkable clusters, the 50-on-9 fair share, limits, repairs first,
plan_join and plan_drain."""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import spawn

T0 = 1700000000.0
GB = 1000 ** 3
CAP = 1000 * GB


def task(job, tid, host, size=50 * GB, role="live", active=False, **kw):
    out = {"job": job, "task": tid, "host": host, "bytes": size, "role": role,
           "last_active": T0 - (60 if active else 30 * 86400), "complete": True, "running": False}
    out.update(kw)
    return out


def snap(hosts, tasks, jobs, used=None):
    """Hosts of 1000 GB; disk_used is the sum of their copies unless ``used`` gives it."""
    sums = {h: 0 for h in hosts}
    for t in tasks:
        sums[t["host"]] += t["bytes"]
    used = used or sums
    return {"taken_at": T0, "jobs": jobs, "tasks": tasks,
            "hosts": {h: {"disk_used": used[h], "disk_free": CAP - used[h], "up": True, "readonly": False}
                      for h in hosts}}


def job(replicas=0, max_per_host=None, no_autobalance=False):
    return {"replicas": replicas, "max_per_host": max_per_host, "no_autobalance": no_autobalance}


def counts(plan_snapshot, job_id):
    out = {}
    for t in plan_snapshot["tasks"]:
        if t["job"] == job_id:
            out[t["host"]] = out.get(t["host"], 0) + 1
    return out


# ------------------------------------------------------------------------------------------
# configuration
# ------------------------------------------------------------------------------------------

def test_defaults_and_hydra_profile():
    cfg = spawn.validate_config({})
    assert cfg["tasks_moved_full_rebalance"] == 40 and cfg["fair_share_wiggle"] == 2
    assert cfg["disk_target_band"] == 0.07 and cfg["active_extra_copies"] is False
    hydra = spawn.default_config("hydra")
    assert hydra["disk_target_band"] == 0 and hydra["active_extra_copies"] is True
    assert hydra["tasks_moved_full_rebalance"] == 10
    assert hydra["bytes_moved_full_rebalance"] == 300 * GB
    assert hydra["min_task_size_bytes"] == 50 * 1000 ** 2
    assert hydra["extreme_host_ratio"] == 1.1
    assert [row[0] for row in spawn.option_table()] == list(spawn.OPTIONS[1:])


@pytest.mark.parametrize("config, name", [
    ({"nope": 1}, "nope"),
    ({"extreme_host_ratio": 0.9}, "extreme_host_ratio"),
    ({"tasks_moved_full_rebalance": -1}, "tasks_moved_full_rebalance"),
    ({"host_disk_factor": 0}, "host_disk_factor"),
    ({"profile": "other"}, "profile"),
    ({"disk_target_band": 1}, "disk_target_band"),
    ({"disk_target_band": -0.1}, "disk_target_band"),
    ({"disk_target_band": "5%"}, "disk_target_band"),
    ({"active_extra_copies": "yes"}, "active_extra_copies"),
])
def test_bad_config_names_the_option(config, name):
    with pytest.raises(ValueError, match="^%s:" % name):
        spawn.validate_config(config)


def test_bad_snapshot_names_the_field():
    bad = snap(["a"], [task("j", 0, "a")], {"j": job()})
    bad["tasks"][0]["bytes"] = -1
    with pytest.raises(ValueError, match=r"tasks\[0\]\.bytes"):
        spawn.plan_round(bad)
    with pytest.raises(ValueError, match="host"):
        spawn.rebalance_host(snap(["a"], [], {}), "zz")


# ------------------------------------------------------------------------------------------
# active task balancing: the 50-on-9 fair share
# ------------------------------------------------------------------------------------------

NINE = ["h%d" % i for i in range(9)]
SPREAD = {"h0": 12, "h1": 0, "h2": 5, "h3": 5, "h4": 5, "h5": 5, "h6": 6, "h7": 6, "h8": 6}
STRICT = {"fair_share_wiggle": 0, "extreme_host_ratio": 2.0, "min_task_size_bytes": 0}


def fifty_on_nine():
    tasks, tid = [], 0
    for host, n in SPREAD.items():
        for _i in range(n):
            tasks.append(task("a", tid, host, size=GB, active=True))
            tid += 1
    # equal disk use on every host, so host rebalancing takes the active-task branch
    return snap(NINE, tasks, {"a": job()}, used={h: 400 * GB for h in NINE})


def test_fair_share_of_50_on_9_is_5_or_6():
    model = spawn.Model(fifty_on_nine(), spawn.validate_config(STRICT))
    assert model.fair_share("a") == (5, 6)
    assert sum(SPREAD.values()) == 50


def test_host_with_12_pushes_down_to_6_first_to_the_empty_host():
    s = fifty_on_nine()
    plan = spawn.rebalance_host(s, "h0", STRICT)
    assert "active task balancing" in plan["decision"]
    assert len(plan["moves"]) == 6
    assert all(m["source"] == "h0" and m["rule"] == "active" for m in plan["moves"])
    assert plan["moves"][0]["target"] == "h1"
    after = counts(spawn.apply_plan(s, plan), "a")
    assert after["h0"] == 6
    assert "too many (12)" in plan["moves"][0]["reason"] and "5-6" in plan["moves"][0]["reason"]


def test_host_with_0_pulls_up_to_5_from_the_fullest():
    plan = spawn.rebalance_host(fifty_on_nine(), "h1", STRICT)
    assert len(plan["moves"]) == 5
    assert {m["source"] for m in plan["moves"]} == {"h0"}
    assert all(m["target"] == "h1" for m in plan["moves"])


@pytest.mark.parametrize("host", ["h2", "h6"])
def test_5_or_6_is_fair_no_move(host):
    assert spawn.rebalance_host(fifty_on_nine(), host, STRICT)["moves"] == []


def test_wiggle_one_tolerates_7_but_not_12():
    s = fifty_on_nine()
    plan = spawn.rebalance_host(s, "h0", dict(STRICT, fair_share_wiggle=1))
    assert counts(spawn.apply_plan(s, plan), "a")["h0"] == 7


def test_inactive_job_is_not_balanced_by_active_task_balancing():
    s = fifty_on_nine()
    for t in s["tasks"]:
        t["last_active"] = T0 - 2 * 86400  # older than the 1-day cutoff
    assert spawn.rebalance_host(s, "h0", STRICT)["moves"] == []
    assert spawn.rebalance_host(s, "h0", dict(STRICT, active_task_cutoff=3 * 86400))["moves"]


def test_generally_light_host_takes_one_additional_task():
    # h1 holds 5 (fair) but no active copies of other jobs: it is light on active tasks
    s = fifty_on_nine()
    for t in s["tasks"]:
        if t["host"] == "h0" and t["task"] < 5:
            t["host"] = "h1"   # h0 7, h1 5
    for i, host in enumerate(NINE):
        if host != "h1":
            for k in range(10):
                s["tasks"].append(task("busy", 100 * i + k, host, size=GB, active=True))
    s["jobs"]["busy"] = job(no_autobalance=True)
    # the seed's extra copy is the hydra profile's behaviour; the default profile leaves a job
    # within its fair share where it is (it would move data only to even out active copies)
    plan = spawn.rebalance_host(s, "h1", dict(STRICT, extreme_host_ratio=1.1, active_extra_copies=True))
    assert len(plan["moves"]) == 1
    assert "lightly loaded" in plan["moves"][0]["reason"] and plan["moves"][0]["target"] == "h1"
    assert spawn.rebalance_host(s, "h1", dict(STRICT, extreme_host_ratio=1.1))["moves"] == []
    assert spawn.rebalance_host(s, "h1", {"profile": "hydra", "extreme_host_ratio": 1.1,
                                          "min_task_size_bytes": 0})["moves"]


# ------------------------------------------------------------------------------------------
# disk space balancing
# ------------------------------------------------------------------------------------------

def heavy_cluster(big_jobs=None):
    """h0 holds 8 x 50 GB of job big (40%), h1-h3 hold one 200 GB filler each (20%).
    Mean 25%, reference (median) 20%: h0 is heavy."""
    tasks = [task("big", i, "h0") for i in range(8)]
    tasks += [task("f%d" % i, 0, "h%d" % i, size=200 * GB) for i in (1, 2, 3)]
    jobs = {"big": job(), "f1": job(), "f2": job(), "f3": job()}
    jobs.update(big_jobs or {})
    return snap(["h0", "h1", "h2", "h3"], tasks, jobs)


ALL_PARTNERS = {"alleviate_host_percentage": 1.0}


def test_heavy_host_pushes_to_lightest_without_crossing_the_mean():
    plan = spawn.rebalance_host(heavy_cluster(), "h0", ALL_PARTNERS)
    assert "disk space balancing (heavy)" in plan["decision"]
    # room per partner: min(h0 - mean, mean - partner) = 50 GB, so one task each
    assert [(m["source"], m["target"], m["bytes"]) for m in plan["moves"]] == [
        ("h0", "h1", 50 * GB), ("h0", "h2", 50 * GB), ("h0", "h3", 50 * GB)]
    assert plan["bytes"] == 150 * GB  # exactly the excess of the hosts above the mean
    assert "disk balancing: h0 is heavy" in plan["moves"][0]["reason"]


def test_alleviate_percentage_picks_a_few_partners():
    plan = spawn.rebalance_host(heavy_cluster(), "h0")  # 20% of 3 hosts -> 1 partner
    assert [m["target"] for m in plan["moves"]] == ["h1"]


def test_light_host_pulls_from_the_heaviest():
    s = heavy_cluster()
    s["hosts"]["h4"] = {"disk_used": 0, "disk_free": CAP, "up": True, "readonly": False}
    plan = spawn.rebalance_host(s, "h4", ALL_PARTNERS)
    assert "disk space balancing (light)" in plan["decision"]
    assert plan["moves"] and all(m["target"] == "h4" for m in plan["moves"])
    assert plan["moves"][0]["source"] == "h0"


@pytest.mark.parametrize("change, reason", [
    (lambda s: s["jobs"].pop("big"), "does not exist"),
    (lambda s: s["jobs"]["big"].update(max_per_host=0), "per-host maximum"),
    (lambda s: [t.update(bytes=10 * 1000 ** 2) for t in s["tasks"] if t["job"] == "big"], "min_task_size_bytes"),
    (lambda s: s["jobs"]["big"].update(no_autobalance=True), "forbids autobalancing"),
    (lambda s: [t.update(running=True) for t in s["tasks"] if t["job"] == "big"], "running"),
])
def test_each_eligibility_condition_blocks_the_move(change, reason):
    s = heavy_cluster()
    change(s)
    model = spawn.Model(s, spawn.validate_config(ALL_PARTNERS))
    assert reason in model.ineligible(("big", 0), "h0", "h1")
    plan = spawn.rebalance_host(s, "h0", ALL_PARTNERS)
    assert not [m for m in plan["moves"] if m["job"] == "big"]
    assert any(reason in text for text in plan["skipped"])


def test_target_already_holding_a_copy_is_not_eligible():
    s = heavy_cluster()
    s["jobs"]["big"]["replicas"] = 1
    s["tasks"].append(task("big", 0, "h1", size=50 * GB, role="replica"))
    model = spawn.Model(s, spawn.validate_config(ALL_PARTNERS))
    assert "already holds a copy" in model.ineligible(("big", 0), "h0", "h1")
    assert model.ineligible(("big", 1), "h0", "h1") is None


# ------------------------------------------------------------------------------------------
# limits
# ------------------------------------------------------------------------------------------

def big_gap():
    """h0 90% (18 x 50 GB), h1 and h2 empty: room for many moves."""
    tasks = [task("big", i, "h0") for i in range(18)]
    return snap(["h0", "h1", "h2"], tasks, {"big": job()})


def test_tasks_limit():
    plan = spawn.rebalance_host(big_gap(), "h0", dict(ALL_PARTNERS, tasks_moved_full_rebalance=2,
                                                      host_disk_factor=1.0))
    assert len(plan["moves"]) == 2


def test_bytes_limit():
    plan = spawn.rebalance_host(big_gap(), "h0", dict(ALL_PARTNERS, bytes_moved_full_rebalance=120 * GB,
                                                      host_disk_factor=1.0))
    assert plan["bytes"] == 100 * GB


def test_partner_limit():
    plan = spawn.rebalance_host(big_gap(), "h0", dict(ALL_PARTNERS, tasks_moved_per_unspecified_host=1,
                                                      host_disk_factor=1.0))
    assert sorted(m["target"] for m in plan["moves"]) == ["h1", "h2"]


def test_host_disk_factor_limits_bytes_off_a_source():
    plan = spawn.rebalance_host(big_gap(), "h0", dict(ALL_PARTNERS, host_disk_factor=0.1))
    assert plan["bytes"] <= 0.1 * 900 * GB
    assert any("host_disk_factor" in text for text in plan["skipped"])


def test_plan_round_converges_and_keeps_replicas():
    s = heavy_cluster()
    s["hosts"]["h4"] = {"disk_used": 0, "disk_free": CAP, "up": True, "readonly": False}
    for _i in range(20):
        plan = spawn.plan_round(s, {"tasks_moved_full_rebalance": 3})
        if not plan["moves"]:
            break
        s = spawn.apply_plan(s, plan)
    assert plan["moves"] == [] and plan["summary"] == "rebalance round: no change"
    assert spawn.replica_violations(s) == []
    model = spawn.Model(s, spawn.validate_config())
    assert all(model.disk_extreme(h) is None for h in ("h0", "h4"))


# ------------------------------------------------------------------------------------------
# job rebalancing
# ------------------------------------------------------------------------------------------

def job_cluster():
    """Job r (1 replica): 6 tasks, all 12 copies piled on h0 and h1; h2, h3 empty."""
    tasks = []
    for i in range(6):
        tasks.append(task("r", i, "h0", size=GB))
        tasks.append(task("r", i, "h1", size=GB, role="replica"))
    return snap(["h0", "h1", "h2", "h3"], tasks, {"r": job(replicas=1)}, used={h: 300 * GB for h in "h0 h1 h2 h3".split()})


def test_job_rebalance_spreads_copies():
    s = job_cluster()
    plan = spawn.rebalance_job(s, "r", {"fair_share_wiggle": 0})
    assert plan["repairs"] == []
    after = counts(spawn.apply_plan(s, plan), "r")
    assert sorted(after.values()) == [3, 3, 3, 3]  # 12 copies on 4 hosts
    assert spawn.replica_violations(spawn.apply_plan(s, plan)) == []


def test_missing_replica_is_repaired_first_and_nothing_moves():
    s = job_cluster()
    s["tasks"] = [t for t in s["tasks"] if not (t["task"] == 0 and t["role"] == "replica")]
    plan = spawn.rebalance_job(s, "r", {"fair_share_wiggle": 0})
    assert plan["moves"] == []
    assert [(r["action"], r["task"], r["source"]) for r in plan["repairs"]] == [("replicate", 0, "h0")]
    assert plan["repairs"][0]["target"] in ("h2", "h3")
    assert "1 of 2 copies" in plan["repairs"][0]["reason"]


def test_incomplete_replica_is_resynced_first():
    s = job_cluster()
    s["tasks"][1]["complete"] = False
    plan = spawn.rebalance_job(s, "r")
    assert plan["moves"] == []
    assert [(r["action"], r["target"]) for r in plan["repairs"]] == [("resync", "h1")]


def test_job_rebalance_respects_no_autobalance():
    s = job_cluster()
    s["jobs"]["r"]["no_autobalance"] = True
    plan = spawn.rebalance_job(s, "r")
    assert plan["moves"] == [] and "forbids" in plan["skipped"][0]


# ------------------------------------------------------------------------------------------
# elastic tie-in
# ------------------------------------------------------------------------------------------

def test_plan_join_pushes_the_fair_share_onto_the_new_host():
    s = heavy_cluster()
    s["hosts"]["new"] = {"disk_used": 0, "disk_free": CAP, "up": True, "readonly": False}
    plan = spawn.plan_join(s, "new")
    assert plan["moves"] and all(m["target"] == "new" and m["rule"] == "join" for m in plan["moves"])
    after = spawn.apply_plan(s, plan)
    mean = sum(h["disk_used"] for h in after["hosts"].values()) / 5
    # mean is 200 GB; the new host gets whole tasks up to it, never past it
    assert 150 * GB <= after["hosts"]["new"]["disk_used"] <= mean
    assert spawn.replica_violations(after) == []


def test_plan_drain_moves_every_copy_and_keeps_replica_counts():
    s = job_cluster()
    s["jobs"]["r"]["no_autobalance"] = True          # drain ignores it: the copy would be lost
    s["tasks"][0]["bytes"] = 1000                     # and the minimum size
    plan = spawn.plan_drain(s, "h0")
    assert plan["complete"] and len(plan["moves"]) == 6
    after = spawn.apply_plan(s, plan)
    assert not [t for t in after["tasks"] if t["host"] == "h0"]
    assert spawn.replica_violations(after) == []
    assert all(m["target"] in ("h2", "h3") for m in plan["moves"])  # h1 holds the other copy


def test_plan_drain_reports_a_running_task_as_blocked():
    s = job_cluster()
    s["tasks"][0]["running"] = True
    plan = spawn.plan_drain(s, "h0")
    assert not plan["complete"] and len(plan["moves"]) == 5
    assert "running" in plan["blocked"][0]


# ------------------------------------------------------------------------------------------
# disk_target_band (default profile): aim at the band around the cluster mean
# ------------------------------------------------------------------------------------------

BAND5 = {"disk_target_band": 0.05}


def overshoot_cluster():
    """a 60% (copies of 10, 80, 95 and 415 GB), b and c 50%, d 40%: mean 50%, band 47.5-52.5%.
    a needs to shed 75 GB and d to take 75 GB."""
    tasks = [task("a%d" % size, 0, "a", size=size * GB) for size in (10, 80, 95, 415)]
    tasks += [task("b", 0, "b", size=500 * GB), task("c", 0, "c", size=500 * GB),
              task("d", 0, "d", size=400 * GB)]
    jobs = {t["job"]: job() for t in tasks}
    return snap(["a", "b", "c", "d"], tasks, jobs)


def test_band_is_around_the_capacity_weighted_mean():
    s = overshoot_cluster()
    model = spawn.Model(s, spawn.validate_config(BAND5))
    assert model.disk_mean() == pytest.approx(0.5)
    assert model.band() == (pytest.approx(0.475), pytest.approx(0.525))
    assert [model.disk_extreme(h) for h in "abcd"] == ["heavy", None, None, "light"]
    # unequal disks: 500 of 1000 GB and 900 of 3000 GB -> 1400 / 4000 = 35%, not (50 + 30) / 2
    s = snap(["x", "y"], [task("x", 0, "x", size=500 * GB), task("y", 0, "y", size=900 * GB)], {"x": job(), "y": job()})
    s["hosts"]["y"]["disk_free"] = 2100 * GB
    assert spawn.Model(s, spawn.validate_config(BAND5)).disk_mean() == pytest.approx(0.35)


def test_band_moves_the_copy_that_overshoots_least_and_stops_inside():
    s = overshoot_cluster()
    plan = spawn.plan_round(s, BAND5)
    # the smallest copy of at least 75 GB; the seed's rule takes the largest that fits (95 GB)
    assert [(m["source"], m["target"], m["bytes"]) for m in plan["moves"]] == [("a", "d", 80 * GB)]
    assert "outside the band 47.5%-52.5% around the mean 50.0%" in plan["moves"][0]["reason"]
    after = spawn.apply_plan(s, plan)
    assert spawn.plan_round(after, BAND5)["moves"] == []
    model = spawn.Model(after, spawn.validate_config(BAND5))
    assert all(model.disk_extreme(h) is None for h in "abcd")
    hydra = spawn.plan_round(s, {"profile": "hydra", "alleviate_host_percentage": 1.0})
    assert hydra["moves"][0]["bytes"] == 95 * GB


def test_in_band_hosts_are_left_alone():
    # 52% and 48% are inside 50% +- 5%: the seed's rule (ratio to the median) would move data
    tasks = [task("p", i, "a", size=20 * GB) for i in range(26)] + [task("q", i, "b", size=48 * GB) for i in range(10)]
    tasks += [task("r", 0, "c", size=500 * GB), task("s", 0, "d", size=500 * GB)]
    s = snap(["a", "b", "c", "d"], tasks, {"p": job(), "q": job(), "r": job(), "s": job()})
    assert spawn.plan_round(s, BAND5)["moves"] == []
    assert spawn.plan_round(s, dict(BAND5, disk_target_band=0.01))["moves"]


def fresh_and_overloaded():
    """Eight hosts at 50% of 1000 GB in 25 GB copies of 4 jobs, one at 80%, one empty."""
    hosts = ["h%d" % i for i in range(8)] + ["over", "new"]
    tasks, tid = [], 0
    for i in range(8):
        for k in range(20):
            tasks.append(task("j%d" % (k % 4), tid, "h%d" % i, size=25 * GB))
            tid += 1
    for k in range(32):
        tasks.append(task("j%d" % (k % 4), tid, "over", size=25 * GB))
        tid += 1
    return snap(hosts, tasks, {"j%d" % i: job() for i in range(4)})


def band_lower_bound(s, band):
    used = {h: v["disk_used"] for h, v in s["hosts"].items()}
    mean = sum(used.values()) / len(used)
    over = sum(max(0, u - (1 + band) * mean) for u in used.values())
    under = sum(max(0, (1 - band) * mean - u) for u in used.values())
    return max(over, under)


def test_overloaded_excess_goes_to_the_empty_host_not_to_hosts_in_band():
    s = fresh_and_overloaded()
    cfg = dict(BAND5, tasks_moved_per_unspecified_host=1)  # protects in-band hosts only
    moved = 0
    for _i in range(10):
        plan = spawn.plan_round(s, cfg)
        if not plan["moves"]:
            break
        moved += plan["bytes"]
        assert all(m["rule"] == "disk" for m in plan["moves"])
        s = spawn.apply_plan(s, plan)
    model = spawn.Model(s, spawn.validate_config(cfg))
    assert all(model.disk_extreme(h) is None for h in s["hosts"])
    assert spawn.replica_violations(s) == []
    # mean 48%: "new" needs 456 GB to reach 45.6%, "over" sheds 296 GB; 25 GB copies
    start = fresh_and_overloaded()
    assert moved <= band_lower_bound(start, 0.05) + 25 * GB
    assert s["hosts"]["over"]["disk_used"] < start["hosts"]["over"]["disk_used"]


def test_disk_moves_prefer_copies_that_give_an_active_job_its_fair_share():
    # the empty host pulls from h0, which holds 6 copies of the active job "act" (fair 1-2 on 4
    # hosts) and large idle copies: it takes "act" copies first although they are smaller
    tasks = [task("act", i, "h0", size=20 * GB, active=True) for i in range(6)]
    tasks += [task("idle", i, "h0", size=60 * GB) for i in range(6)]
    tasks += [task("f%d" % i, 0, "h%d" % i, size=400 * GB) for i in (1, 2)]
    s = snap(["h0", "h1", "h2", "new"], tasks, {"act": job(), "idle": job(), "f1": job(), "f2": job()})
    plan = spawn.rebalance_host(s, "new", BAND5)
    assert "disk space balancing (light)" in plan["decision"]
    assert [m["job"] for m in plan["moves"][:2]] == ["act", "act"]


def test_active_balancing_in_band_fixes_only_a_job_out_of_its_fair_share():
    s = fifty_on_nine()  # equal disks: every host is inside the band
    plan = spawn.rebalance_host(s, "h0", {"fair_share_wiggle": 1, "min_task_size_bytes": 0})
    assert "active task balancing" in plan["decision"]
    assert counts(spawn.apply_plan(s, plan), "a")["h0"] == 7
    assert spawn.rebalance_host(s, "h2", {"min_task_size_bytes": 0})["moves"] == []


def test_hydra_profile_keeps_the_reference_rule():
    # h0 40%, h1-h3 20%: with the seed's rule the reference is the median (20%) and the heavy
    # host moves until it is below 1.1 x 20% = 22%; the band stops at 26.25% (mean 25% + 5%)
    hydra = spawn.plan_round(heavy_cluster(), {"profile": "hydra", "alleviate_host_percentage": 1.0})
    band = spawn.plan_round(heavy_cluster(), dict(BAND5, alleviate_host_percentage=1.0))
    assert "reference 20.0%" in hydra["moves"][0]["reason"]
    assert band["bytes"] <= hydra["bytes"]
