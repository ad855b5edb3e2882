# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every job shape of issue 19, captured from the real local cluster by
``tests/capture/capture_shapes.py`` (``tests/unit/fixtures/sge/captured/<state>/``, provenance in
``tests/unit/fixtures/sge/PROVENANCE.md``), read by ``sge_xml`` and decided on by the three
profiles of ``policy/elastic.py``.

The states (see the capture program's docstring for how each is made):

* ``pe_and_arrays``: a ``$pe_slots`` job bound to ``all.q@vm``; a ``$fill_up`` job running 2+2 on
  node001 and node002; a ``$round_robin`` job running 1+1 in ``cap_three.q``; an array ``-t 1-10``
  bound to ``cap_three.q`` with tasks 1-4 running and ``5,6,8-10:1`` waiting (task 7 deleted: a
  comma list); an array ``-t 2-10:2`` and a PE job ``cap_fill 2-4`` waiting; ``qacct -j`` of a finished
  ``$fill_up`` job that ran on node001 and node002.
* ``mixed``: a job in error state; an array whose tasks are Eqw, qw and hqw; a suspended job; a
  job bound to a host, one to a queue; a ``-R y`` job (its resource reservation is not shown by
  qstat) and an advance reservation of one slot on ``all.q@vm`` (shown: ``slots_resv``); a held
  job; a job asking for ``mem_free=999G``; a PE job wider than the cluster waiting while node002 is
  idle; ``qacct -j`` of the job that failed to start.

Both states have two cluster queues with different slot counts (``all.q`` 2, ``cap_three.q`` 3),
a disabled instance (``cap_three.q@node002``, ``d``) and an unknown one (``cap_three.q@cap-ghost``,
a host that never reported, ``u``).

The tests find jobs by name (``cap_*``), never by number, so a new capture (the program run again)
passes unchanged as long as it holds the same shapes. The plans are written by hand from the
seed's rules (../shared/seeds/000_*.txt: StarCluster's load balancer) and docs/elastic.md.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import time

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import (
    accounting_summary,
    build_snapshot,
    parse_qacct,
    parse_qhost,
    parse_qstat,
    parse_qstat_gc,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

HERE = os.path.dirname(os.path.abspath(__file__))
SGE = os.path.join(HERE, "..", "..", "fixtures", "sge")
CAPTURED = os.path.join(SGE, "captured")
STATES = ("pe_and_arrays", "mixed")
QSTAT_FILES = ("qstat_u_f_r.xml", "qstat_u.xml", "qstat_u_g_dt_r.xml", "qstat_u_g_dt.xml")
FILES = QSTAT_FILES + ("qhost_q.xml", "qstat_g_c.xml", "meta.json")
MASTER, N1, N2, GHOST = "vm", "node001", "node002", "cap-ghost"
# the nodes the tests pretend the balancer launched (the local provider's <cluster>_nodes)
LAUNCHED = [N1, N2]


def read(state, name):
    with open(os.path.join(CAPTURED, state, name), "rb") as handle:
        return handle.read()


def meta(state):
    return json.loads(read(state, "meta.json").decode("utf-8"))


@pytest.fixture(autouse=True)
def capture_zone(monkeypatch):
    """qstat prints the qmaster's local time without a zone: parse in the zone of the capture."""
    offsets = set(meta(state)["utc_offset"] for state in STATES)
    assert offsets == {"+0000"}, "captures taken outside UTC: set TZ to their zone here"
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def snapshot(state, listing="qstat_u_f_r.xml"):
    return build_snapshot(read(state, listing), read(state, "qhost_q.xml"), meta(state)["taken_at"], "default")


def named(entries, name):
    return [e for e in entries if e["name"] == name]


def one(entries, name):
    found = named(entries, name)
    assert len(found) == 1, "%s: %d entries" % (name, len(found))
    return found[0]


def queue(snap, name):
    (found,) = [q for q in snap["queues"] if q["name"] == name]
    return found


# ---------------------------------------------------------------------------------------------
# the captures themselves
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("state", STATES)
def test_every_file_is_there_with_its_provenance_line(state):
    with open(os.path.join(SGE, "PROVENANCE.md")) as handle:
        provenance = handle.read()
    names = sorted(os.listdir(os.path.join(CAPTURED, state)))
    expected = sorted(FILES + (("qacct_j_pe.txt",) if state == "pe_and_arrays" else ("qacct_j_error.txt",)))
    assert names == expected
    info = meta(state)
    assert info["program"] == "tests/capture/capture_shapes.py" and info["state"] == state
    for name in names:
        if name == "meta.json":
            continue
        lines = [line for line in provenance.splitlines() if line.startswith("- `captured/%s/%s`:" % (state, name))]
        assert len(lines) == 1, name
        assert "captured %s by `python3 tests/capture/capture_shapes.py" % info["taken_utc"] in lines[0]
        assert "gridengine-master %s" % info["gridengine_master"] in lines[0]


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("name", QSTAT_FILES)
def test_qstat_listings_parse(state, name):
    result = parse_qstat(read(state, name))
    assert result["flavour"] == "SoGE 8.1"
    ids = set(meta(state)["jobs"].values())
    listed = set(j["id"] for j in result["pending"] + result["running"])
    assert listed <= ids


@pytest.mark.parametrize("state", STATES)
def test_qhost_and_cluster_queue_summary_parse(state):
    hosts = parse_qhost(read(state, "qhost_q.xml"))
    assert hosts["flavour"] == "SoGE 8.1"
    assert sorted(hosts["hosts"]) == sorted([MASTER, N1, N2, GHOST])
    for name in (MASTER, N1, N2):
        assert hosts["hosts"][name]["queues"]["all.q"]["slots_total"] == 2
        assert hosts["hosts"][name]["queues"]["cap_three.q"]["slots_total"] == 3
        assert hosts["hosts"][name]["load_avg"] is not None
    ghost = hosts["hosts"][GHOST]
    assert (ghost["arch"], ghost["num_proc"], ghost["load_avg"], ghost["mem_total"]) == (None, None, None, None)
    assert list(ghost["queues"]) == ["cap_three.q"] and "u" in ghost["queues"]["cap_three.q"]["states"]
    assert hosts["hosts"][N2]["queues"]["cap_three.q"]["states"] == "d"
    summary = dict((q["name"], q) for q in parse_qstat_gc(read(state, "qstat_g_c.xml"))["cluster_queues"])
    assert sorted(summary) == ["all.q", "cap_three.q"]
    assert summary["all.q"]["total"] == 6
    assert summary["cap_three.q"]["total"] == 12


@pytest.mark.parametrize("state", STATES)
def test_two_queues_a_disabled_and_an_unknown_instance(state):
    snap = snapshot(state)
    assert sorted(q["name"] for q in snap["queues"]) == sorted(
        ["all.q@" + h for h in (MASTER, N1, N2)] + ["cap_three.q@" + h for h in (MASTER, N1, N2, GHOST)])
    for q in snap["queues"]:
        assert q["slots_total"] == (2 if q["queue"] == "all.q" else 3), q["name"]
    assert queue(snap, "cap_three.q@node002")["states"] == "d"
    assert "u" in queue(snap, "cap_three.q@cap-ghost")["states"]
    assert queue(snap, "cap_three.q@cap-ghost")["load_avg"] is None
    assert snap["hosts"][N2]["states"] == "d" and snap["hosts"][N2]["slots_total"] == 5
    ghost = snap["hosts"][GHOST]
    assert "u" in ghost["states"] and ghost["load_avg"] is None and ghost["slots_total"] == 3
    assert ghost["queues"] == ["cap_three.q"]
    for name in (MASTER, N1):
        assert snap["hosts"][name]["queues"] == ["all.q", "cap_three.q"]
        assert snap["hosts"][name]["states"] == ""


# ---------------------------------------------------------------------------------------------
# pe_and_arrays
# ---------------------------------------------------------------------------------------------

def test_pe_and_arrays_jobs():
    snap = snapshot("pe_and_arrays")
    names = sorted(set(j["name"] for j in snap["pending"] + snap["running"]))
    assert names == ["cap_array_range", "cap_array_step", "cap_fill_up", "cap_pe_slots", "cap_pe_waiting",
                     "cap_round_robin"]
    running = snap["running"]
    pe_slots = one(running, "cap_pe_slots")
    assert (pe_slots["queue"], pe_slots["host"], pe_slots["hosts"], pe_slots["slots"]) == ("all.q", MASTER, {MASTER: 2}, 2)
    fill = one(running, "cap_fill_up")
    assert fill["hosts"] == {N1: 2, N2: 2} and fill["slots"] == 4 and fill["queue"] == "all.q"
    assert fill["host"] in (N1, N2) and fill["state"] == "r"
    rr = one(running, "cap_round_robin")
    # job_is_first_task FALSE: -f lists one slot on each host, <granted_pe> the job's 2
    assert rr["queue"] == "cap_three.q" and rr["hosts"] == {MASTER: 1, N1: 1} and rr["slots"] == 2


def test_pe_and_arrays_array_tasks_ranges_steps_and_a_comma_list():
    snap = snapshot("pe_and_arrays")
    tasks = named(snap["running"], "cap_array_range")
    assert sorted(t["task"] for t in tasks) == ["1", "2", "3", "4"]
    assert all(t["queue"] == "cap_three.q" and t["slots"] == 1 and t["state"] == "r" for t in tasks)
    assert sorted(h for t in tasks for h in t["hosts"]) == sorted([MASTER, MASTER, N1, N1])
    waiting = one(snap["pending"], "cap_array_range")
    # Grid Engine prints the waiting tasks after "qdel <job>.7" as 5,6,8-10:1
    assert (waiting["state"], waiting["tasks"], waiting["task_count"]) == ("qw", "5,6,8-10:1", 5)
    assert waiting["hard_queues"] == ["cap_three.q"]
    step = one(snap["pending"], "cap_array_step")
    assert (step["tasks"], step["task_count"], step["slots"], step["hard_queues"]) == ("2-10:2", 5, 1, [])


def test_pe_and_arrays_waiting_pe_job():
    job = one(snapshot("pe_and_arrays")["pending"], "cap_pe_waiting")
    assert (job["pe"], job["pe_range"], job["slots"], job["state"]) == ("cap_fill", "2-4", 2, "qw")
    assert (job["held"], job["error"], job["task_count"]) == (False, False, 1)


def test_pe_and_arrays_hosts_and_queue_slots():
    snap = snapshot("pe_and_arrays")
    hosts = snap["hosts"]
    # every usable slot is taken: all.q by the three PE jobs, cap_three.q by round robin + 4 tasks
    assert (hosts[MASTER]["slots_used"], hosts[N1]["slots_used"], hosts[N2]["slots_used"]) == (5, 5, 2)
    assert hosts[MASTER]["running_jobs"] == 4  # pe_slots, round robin, two array tasks
    assert hosts[N1]["running_jobs"] == 4      # fill_up, round robin, two array tasks
    assert hosts[N2]["running_jobs"] == 1      # fill_up (as a slave host too)
    for name in ("all.q@vm", "all.q@node001", "all.q@node002", "cap_three.q@vm", "cap_three.q@node001"):
        assert queue(snap, name)["slots_used"] == queue(snap, name)["slots_total"], name


def test_pe_and_arrays_plain_listing_without_f_and_r():
    """qstat without -f and -r: no PE names, no requests, one row per running task with the job's
    total slots on its master queue; queue instances come from qhost."""
    plain = snapshot("pe_and_arrays", "qstat_u.xml")
    full = snapshot("pe_and_arrays")
    assert sorted((j["id"], j["task"]) for j in plain["running"]) == sorted((j["id"], j["task"]) for j in full["running"])
    assert sorted(j["id"] for j in plain["pending"]) == sorted(j["id"] for j in full["pending"])
    fill = one(plain["running"], "cap_fill_up")
    assert fill["slots"] == 4 and list(fill["hosts"].values()) == [4] and fill["host"] in (N1, N2)
    waiting = one(plain["pending"], "cap_pe_waiting")
    # a waiting job with two slots and no PE element is still a parallel job (docs/snapshot.md)
    assert (waiting["pe"], waiting["pe_range"], waiting["slots"]) == (None, None, 2)
    arr = one(plain["pending"], "cap_array_range")
    assert (arr["tasks"], arr["task_count"], arr["hard_queues"]) == ("5,6,8-10:1", 5, [])
    assert sorted(q["name"] for q in plain["queues"]) == sorted(q["name"] for q in full["queues"])


def test_pe_and_arrays_per_task_listing_g_dt():
    """qstat -g dt -r: one row per PE slot (MASTER/SLAVE) and per array task; the sums are the same.
    cap_round_robin's PE has job_is_first_task FALSE: Grid Engine prints a MASTER row that holds no
    slot beside the two SLAVE rows, and <granted_pe> (2) says how many slots the job really has."""
    rows = re.findall(rb"<JB_name>cap_round_robin</JB_name>.*?<queue_name>([^<]*)</queue_name>\s*<master>(\w+)</master>",
                      read("pe_and_arrays", "qstat_u_g_dt_r.xml"), re.S)
    assert sorted(master for _q, master in rows) == [b"MASTER", b"SLAVE", b"SLAVE"]
    rr = one(parse_qstat(read("pe_and_arrays", "qstat_u_g_dt_r.xml"))["running"], "cap_round_robin")
    assert (rr["slots"], rr["hosts"]) == (2, {MASTER: 1, N1: 1})
    per_task = parse_qstat(read("pe_and_arrays", "qstat_u_g_dt_r.xml"))
    full = parse_qstat(read("pe_and_arrays", "qstat_u_f_r.xml"))
    by_key = dict(((j["id"], j["task"]), j) for j in full["running"])
    for job in per_task["running"]:
        other = by_key[(job["id"], job["task"])]
        assert (job["slots"], job["hosts"]) == (other["slots"], other["hosts"]), job["name"]
        # -f prints no <master>: the first queue instance listed stands for the master's
        assert other["host"] in job["hosts"]
        if len(job["hosts"]) == 1:
            assert job["host"] == other["host"]
    pending = one(per_task["pending"], "cap_array_range")
    assert pending["task_count"] == 5
    # without -r: no <granted_pe>, so the slot-less MASTER row counts as a slot (3, not 2)
    plain = one(parse_qstat(read("pe_and_arrays", "qstat_u_g_dt.xml"))["running"], "cap_round_robin")
    assert plain["slots"] == 3 and sum(plain["hosts"].values()) == 3


@pytest.mark.xfail(strict=True, reason="docs/snapshot.md: a running job's host is 'the master task's host'; "
                   "qstat -f -r (what sge_queue_facts reads) prints no <master>, and sge_xml takes the first "
                   "queue instance listed (host name order), so a PE job whose master task is on a later host "
                   "gets a slave host as its master")
def test_master_host_of_a_pe_job_in_the_full_listing():
    per_task = dict((j["name"], j) for j in parse_qstat(read("pe_and_arrays", "qstat_u_g_dt_r.xml"))["running"]
                    if len(j["hosts"]) > 1)
    full = dict((j["name"], j) for j in snapshot("pe_and_arrays")["running"] if len(j["hosts"]) > 1)
    differs = [name for name in per_task if per_task[name]["host"] != sorted(per_task[name]["hosts"])[0]]
    if not differs:
        pytest.skip("in this capture every PE job's master task is on its first-listed host")
    for name in differs:
        assert full[name]["host"] == per_task[name]["host"], name


def test_qacct_of_the_finished_fill_up_job():
    info = meta("pe_and_arrays")
    records = [r for r in parse_qacct(read("pe_and_arrays", "qacct_j_pe.txt")) if r["jobnumber"] == info["qacct_job"]]
    assert sorted(r["hostname"] for r in records) == [N1, N2]
    assert info["qacct_hosts"] == [N1, N2]
    for rec in records:
        assert (rec["jobname"], rec["owner"], rec["granted_pe"], rec["failed"], rec["exit_status"]) == (
            "cap_pe_done", "tester", "cap_fill", 0, 0)
        assert rec["taskid"] is None and rec["qname"] == "all.q"
        assert rec["start_time"] >= rec["qsub_time"] and rec["end_time"] >= rec["start_time"]
    # control_slaves TRUE, accounting_summary FALSE: a record per host, each with the job's 4 slots
    assert [r["slots"] for r in records] == [4, 4]
    # the records of one job count once, from its first start to its last end
    end = max(r["end_time"] for r in records)
    summary = accounting_summary(records, end + 1, 3600)
    assert summary["jobs"] == 1
    assert summary["avg_duration"] == end - min(r["start_time"] for r in records)


# ---------------------------------------------------------------------------------------------
# mixed
# ---------------------------------------------------------------------------------------------

def test_mixed_jobs():
    snap = snapshot("mixed")
    names = sorted(set(j["name"] for j in snap["pending"] + snap["running"]))
    assert names == ["cap_array_states", "cap_error", "cap_held", "cap_host_bound", "cap_no_such_memory",
                     "cap_pe_too_wide", "cap_queue_bound", "cap_reserve", "cap_suspended"]


def test_mixed_error_held_and_task_states():
    pending = snapshot("mixed")["pending"]
    err = one(pending, "cap_error")
    assert (err["state"], err["error"], err["held"], err["hard_queues"]) == ("Eqw", True, False, ["all.q@node001"])
    held = one(pending, "cap_held")
    assert (held["state"], held["held"], held["error"]) == ("hqw", True, False)
    rows = named(pending, "cap_array_states")
    # one entry per state, each with the tasks in it
    assert sorted((r["state"], r["task_count"], r["held"], r["error"]) for r in rows) == [
        ("Eqw", 2, False, True), ("hqw", 2, True, False), ("qw", 2, False, False)]
    assert sorted(r["tasks"] for r in rows) == ["1,2", "3,4", "5,6"]


def test_mixed_suspended_host_and_queue_bound_jobs():
    snap = snapshot("mixed")
    suspended = one(snap["running"], "cap_suspended")
    assert (suspended["state"], suspended["hosts"], suspended["queue"]) == ("s", {N1: 1}, "all.q")
    host_bound = one(snap["running"], "cap_host_bound")
    assert (host_bound["state"], host_bound["hosts"], host_bound["queue"]) == ("r", {N1: 1}, "all.q")
    queue_bound = one(snap["running"], "cap_queue_bound")
    assert queue_bound["queue"] == "cap_three.q" and queue_bound["host"] in (MASTER, N1)
    assert snap["hosts"][N1]["running_jobs"] == 2


def test_mixed_requests_and_the_reservation():
    snap = snapshot("mixed")
    pending = snap["pending"]
    reserve = one(pending, "cap_reserve")
    assert (reserve["pe"], reserve["pe_range"], reserve["slots"], reserve["hard_queues"]) == (
        "smp", "2", 2, ["all.q@node001"])
    memory = one(pending, "cap_no_such_memory")
    assert memory["hard_requests"] == {"mem_free": "999G"} and memory["slots"] == 1
    wide = one(pending, "cap_pe_too_wide")
    assert (wide["pe"], wide["pe_range"], wide["slots"], wide["state"]) == ("cap_fill", "8", 8, "qw")
    # qstat's slots_resv counts slots of advance reservations, not resource reservations (-R y,
    # man qstat): cap_reserve's reservation is not listed; the advance reservation of one slot
    # on all.q@vm is
    assert list(meta("mixed")["advance_reservations"]) == ["cap_ar"]
    assert queue(snap, "all.q@vm")["slots_reserved"] == 1 and queue(snap, "all.q@vm")["slots_used"] == 0
    assert snap["hosts"][MASTER]["slots_reserved"] == 1
    assert sum(q["slots_reserved"] for q in snap["queues"]) == 1
    assert parse_qhost(read("mixed", "qhost_q.xml"))["hosts"][MASTER]["queues"]["all.q"]["slots_reserved"] == 1
    summary = dict((q["name"], q) for q in parse_qstat_gc(read("mixed", "qstat_g_c.xml"))["cluster_queues"])
    assert summary["all.q"]["resv"] == 1


def test_mixed_node002_is_idle():
    host = snapshot("mixed")["hosts"][N2]
    assert (host["slots_used"], host["slots_reserved"], host["running_jobs"]) == (0, 0, 0)
    assert host["load_avg"] is not None


def test_mixed_qacct_of_the_job_that_failed_to_start():
    info = meta("mixed")
    (rec,) = parse_qacct(read("mixed", "qacct_j_error.txt"))
    assert rec["jobnumber"] == info["qacct_job"] == info["jobs"]["cap_error"]
    assert (rec["jobname"], rec["failed"], rec["exit_status"], rec["hostname"]) == ("cap_error", 26, 0, N1)
    # it never started: no start and no end time, and no finished job for the averages
    assert (rec["start_time"], rec["end_time"], rec["granted_pe"]) == (None, None, None)
    assert accounting_summary([rec], info["taken_at"], 3600)["jobs"] == 0


def test_mixed_plain_listing_knows_no_requests():
    """Without -r the listing names no queue, host or memory request and no PE: the balancer's
    module reads qstat -f -r for that reason."""
    plain = snapshot("mixed", "qstat_u.xml")
    for job in plain["pending"]:
        assert job["hard_requests"] == {} and job["hard_queues"] == [] and job["pe"] is None
    assert one(plain["pending"], "cap_pe_too_wide")["slots"] == 8
    assert one(plain["pending"], "cap_reserve")["slots"] == 2
    assert sorted((r["state"], r["task_count"]) for r in named(plain["pending"], "cap_array_states")) == [
        ("Eqw", 2), ("hqw", 2), ("qw", 2)]
    assert one(plain["running"], "cap_suspended")["state"] == "s"


# ---------------------------------------------------------------------------------------------
# the three profiles over the captures, against plans written by hand
# ---------------------------------------------------------------------------------------------

# StarCluster's options where the seed gives them, the cluster's own shape for the rest: vm is the
# master (it runs an execd, as StarCluster's master did); node001 and node002 were launched by the
# balancer; cap-ghost is a host the site added (never removed: not launched by the balancer).
CONFIG = {"master": MASTER, "max_nodes": 8, "min_nodes": 1, "interval": 60, "launched_hosts": LAUNCHED}
# every job of a capture was submitted within two minutes before it was taken: 20 minutes later
# each has waited more than job_wait_time (15 minutes)
LATER = 1200.0


def decide(state, profile, listing="qstat_u_f_r.xml", drop=(), polls=(0.0,), **options):
    """decide() once per poll (seconds after the capture + LATER), the state carried over."""
    snap = snapshot(state, listing)
    snap["pending"] = [j for j in snap["pending"] if j["name"] not in drop]
    config = dict(CONFIG, profile=profile, **options)
    saved, plan = {}, None
    for offset in polls:
        now = snap["taken_at"] + LATER + offset
        plan = elastic.decide(snap, saved, config, now)
        saved = plan["state"]
    return plan


def reasons(plan):
    return "\n".join(item["reason"] for item in plan["items"])


def ignored(plan, snap_state):
    names = dict((j["id"], j["name"]) for j in snapshot(snap_state)["pending"])
    return sorted((names[i["id"]], i["reason"]) for i in plan["ignored_jobs"])


def test_default_pe_and_arrays_adds_three_nodes():
    # waiting: 5 tasks of cap_array_range (cap_three.q, a queue the cluster has), 5 of
    # cap_array_step, the 2 slots of cap_pe_waiting: 12 slots. A new node looks like most workers:
    # node001 and node002 have 2 + 3 slots (cap-ghost 3): 5. ceil(12 / 5) = 3, no idle node (node001
    # and node002 run jobs, cap-ghost is unknown), 3 of the 4 nodes max_nodes leaves room for.
    plan = decide("pe_and_arrays", "default", add_nodes_per_iter=5)
    assert plan["add"] == 3 and plan["remove"] == []
    assert plan["ignored_jobs"] == []
    assert plan["items"][0]["reason"].startswith("add 3 nodes: 12 slots waiting (oldest job ")
    assert "5 slots per node" in plan["items"][0]["reason"]
    text = reasons(plan)
    assert "keep vm: master (never removed)" in text
    assert "keep node001: running 4 jobs" in text and "keep node002: running 1 job" in text
    assert "keep cap-ghost: static host, not launched by the balancer" in text


def test_default_pe_and_arrays_adds_what_the_waiting_slots_need():
    # profile default ships no per-poll limit (add_nodes_per_iter 0): 12 waiting slots, 5 per node
    plan = decide("pe_and_arrays", "default")
    assert plan["add"] == 3
    assert plan["items"][0]["reason"].startswith("add 3 nodes: 12 slots waiting (oldest job 296 waited 20m07s")
    # StarCluster's one node per poll, when asked for
    plan = decide("pe_and_arrays", "default", add_nodes_per_iter=1)
    assert plan["add"] == 1 and "capped by add_nodes_per_iter=1" in plan["items"][0]["reason"]


def test_parallelcluster_pe_and_arrays_adds_two_nodes():
    # ParallelCluster: wanted = busy workers (node001, node002) + ceil(12 / 5) = 5; up: node001,
    # node002 and cap-ghost (3 workers): 2 more.
    plan = decide("pe_and_arrays", "parallelcluster")
    assert plan["add"] == 2 and plan["remove"] == []
    assert plan["items"][0]["reason"].startswith("add 2 nodes: 12 slots waiting, 5 slots per node: 2 busy + 3 needed = 5 wanted")


def test_starcluster_pe_and_arrays_adds_one_node():
    # the seed: jobs in qw for all.q (cap_array_range asks for cap_three.q: not counted), the first
    # listed waited more than job_wait_time, fewer nodes than max_nodes: add add_nodes_per_iter (1)
    plan = decide("pe_and_arrays", "starcluster")
    assert plan["add"] == 1 and plan["remove"] == []
    assert "2 jobs in qw" in plan["items"][0]["reason"]


MIXED_IGNORED = [
    ("cap_array_states", "held (state hqw)"),
    ("cap_array_states", "in error state (Eqw)"),
    ("cap_array_states", "requests specific host(s) all.q@node001: a new node cannot run it"),
    ("cap_error", "in error state (Eqw)"),
    ("cap_held", "held (state hqw)"),
    ("cap_no_such_memory", None),  # the reason names the largest node's memory (below)
    ("cap_reserve", "requests specific host(s) all.q@node001: a new node cannot run it"),
]


@pytest.mark.parametrize("profile", ["default", "parallelcluster"])
def test_mixed_ignored_jobs_and_why(profile):
    plan = decide("mixed", profile)
    got = ignored(plan, "mixed")
    assert [name for name, _why in got] == [name for name, _why in MIXED_IGNORED]
    for (name, why), (_n, expected) in zip(got, MIXED_IGNORED):
        if expected is None:
            assert re.match(r"^requests mem_free=999G, more than a node has \(\d+(\.\d+)?[KMGT]?i?B?\)$", why) or \
                why.startswith("requests mem_free=999G, more than a node has"), why
        else:
            assert why == expected, name


def test_default_mixed_adds_one_node_for_the_wide_pe_job():
    # only cap_pe_too_wide counts: 8 slots, 5 per node -> 2 nodes, node002 is idle and counts
    # towards them -> 1 more
    plan = decide("mixed", "default", add_nodes_per_iter=5)
    assert plan["add"] == 1 and plan["remove"] == []
    assert plan["items"][0]["reason"].startswith("add 1 node: 8 slots waiting (oldest job ")
    assert ", 1 idle" in plan["items"][0]["reason"]


def test_parallelcluster_mixed_adds_nothing():
    # wanted = 1 busy worker (node001) + ceil(8 / 5) = 3; up: node001, node002, cap-ghost
    plan = decide("mixed", "parallelcluster")
    assert plan["add"] == 0 and plan["remove"] == []


def test_starcluster_mixed_adds_one_node():
    # qw jobs for all.q: cap_array_states' waiting tasks and cap_reserve (-q all.q@node001 is
    # all.q), cap_no_such_memory, cap_pe_too_wide; hqw and Eqw do not count
    plan = decide("mixed", "starcluster")
    assert plan["add"] == 1 and plan["remove"] == []
    assert "4 jobs in qw" in plan["items"][0]["reason"]


@pytest.mark.parametrize("profile", ["default", "parallelcluster", "starcluster"])
def test_no_idle_node_is_removed_while_the_pe_job_waits(profile):
    """node002 idles through two polls 700 s apart (idle_time 600 s) while cap_pe_too_wide waits:
    it stays (docs/elastic.md, "no idle node is removed while a job a new node could help waits").
    Without that job (every other waiting job is one a new node cannot run) the default and
    parallelcluster profiles remove it; starcluster waits for its 45 minutes past the hour."""
    options = {"stabilization_time": 0} if profile != "parallelcluster" else {}
    if profile == "default":
        options["idle_time"] = 600  # the figures below; the shipped default is 540 s
    plan = decide("mixed", profile, polls=(0.0, 700.0), **options)
    assert plan["remove"] == []
    if profile == "starcluster":
        assert "keep node002: not running an SGE job, up 11m past the hour < kill_after 45m" in reasons(plan)
    else:
        assert "keep node002: idle 11m40s > idle_time 10m, but 1 job waiting" in reasons(plan)
    without = decide("mixed", profile, polls=(0.0, 700.0), drop=("cap_pe_too_wide",), **options)
    if profile == "starcluster":
        assert without["remove"] == []  # qw jobs remain (the seed's rule 1), and the hour rule
    else:
        assert without["remove"] == [N2]
        assert "remove node002: idle 11m40s > idle_time 10m" in reasons(without)


ALL_WAITING = ("cap_array_states", "cap_error", "cap_held", "cap_no_such_memory", "cap_pe_too_wide", "cap_reserve")


@pytest.mark.parametrize("profile", ["default", "parallelcluster", "starcluster"])
def test_the_host_the_balancer_did_not_launch_stays(profile):
    """cap-ghost (added by hand with qconf -ae, never reporting) is kept by every profile."""
    options = {"stabilization_time": 0, "interval": 300} if profile != "parallelcluster" else {"interval": 300}
    plan = decide("mixed", profile, polls=(0.0, 300.0, 600.0, 900.0, 1200.0), drop=ALL_WAITING, **options)
    assert GHOST not in plan["remove"]
    assert "keep cap-ghost: static host, not launched by the balancer (managed_hosts lets it remove such a host)" \
        in reasons(plan)


def test_unknown_managed_host_goes_after_unknown_timeout():
    """With managed_hosts naming it, the unknown cap-ghost (nothing listed on it) is removed once
    unknown for unknown_timeout (15 minutes), node002 once idle for idle_time."""
    plan = decide("mixed", "default", polls=(0.0, 300.0, 600.0, 900.0, 1200.0), drop=ALL_WAITING,
                  stabilization_time=0, interval=300, idle_time=600, managed_hosts=["cap-*"])
    assert plan["remove"] == [GHOST, N2]
    text = reasons(plan)
    assert "remove cap-ghost: state unknown for 20m >= unknown_timeout 15m (load -, states 'u'), no job listed on it" in text
    assert "remove node002: idle 20m > idle_time 10m" in text
    assert "keep node001: running 2 jobs" in text
