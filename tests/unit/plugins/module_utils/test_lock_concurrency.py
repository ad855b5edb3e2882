# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two balancers on one cluster, with real OS processes and the balancer_lock module's own code.

Every process (fork) calls ``gridengine.balancer.balancer_lock``'s ``main()`` with the arguments
loadbalance.yml gives it (only the transport to the qmaster is left out) and records its
critical section in one file opened with ``O_APPEND``. No thread, no mock of the lock.
Larger runs and figures: ``benchmarks/lock_contention.py`` (docs/reliability/concurrency.md).
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import random
import time
import traceback

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import balancer_lock as lock_module

CTX = multiprocessing.get_context("fork")
LOSER = 2


def call(args):
    """balancer_lock's main() in this process; its result (a traceback is a result too)."""
    out = io.StringIO()
    with patch_module_args(dict(args, _ansible_no_log=True)), contextlib.redirect_stdout(out):
        try:
            lock_module.main()
        except SystemExit:
            pass
        except Exception:  # pragma: no cover - reported as a test failure
            return {"failed": True, "crash": traceback.format_exc()}
    return json.loads(out.getvalue())


def take(path, owner, ttl=1800):
    return call({"cluster": "mycluster", "path": str(path), "owner": owner, "ttl": ttl})


def give_back(path, token):
    return call({"cluster": "mycluster", "path": str(path), "state": "absent", "token": token})


def renew(path, token, ttl=1800):
    return call({"cluster": "mycluster", "path": str(path), "token": token, "ttl": ttl})


def record(log, **rec):
    rec.update(pid=os.getpid(), t=time.time())
    fd = os.open(str(log), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(rec) + "\n").encode())
    finally:
        os.close(fd)


def read_log(log):
    if not os.path.exists(str(log)):
        return []
    with open(str(log)) as handle:
        return [json.loads(line) for line in handle]


def leave(code, results=None):
    """End this process now; what was put on ``results`` is flushed first (os._exit would drop it)."""
    if results is not None:
        results.close()
        results.join_thread()
    os._exit(code)


def poll(name, path, log, work, barrier=None, ttl=1800, results=None, all_tried=None):
    """One balancer poll: take the lock, act for ``work`` s, give it back. Exit 2 when held.

    ``all_tried``: a barrier every racer passes after its attempt, before a winner acts and
    gives the lock back and before a loser leaves, so that all of them contend for the same lock
    (on a loaded machine a racer scheduled late could otherwise find the winner's lock already
    given back and take it, a second winner in sequence, not a race)."""
    owner = "%s pid %d" % (name, os.getpid())
    if barrier is not None:
        barrier.wait()
    res = take(path, owner, ttl)
    if res.get("failed"):
        record(log, ev="lost", who=name, owner=owner, msg=res.get("msg"), crash=res.get("crash"),
               holder=(res.get("locked_by") or {}).get("owner"),
               holder_acquired=(res.get("locked_by") or {}).get("acquired"))
        if results is not None:
            results.put((name, "lost", res))
        if all_tried is not None:
            all_tried.wait()
        leave(LOSER, results)
    record(log, ev="enter", who=name, owner=owner, token=res["token"], action=res["action"],
           acquired=res["lock"]["acquired"], taken_over_from=(res.get("taken_over_from") or {}).get("owner"))
    if results is not None:
        results.put((name, "won", res))
    if all_tried is not None:
        all_tried.wait()
    time.sleep(work)
    record(log, ev="exit", who=name, token=res["token"])
    rel = give_back(path, res["token"])
    record(log, ev="released", who=name, token=res["token"], ok=rel.get("action") == "released")
    leave(0, results)


def continuous(path, log, stop, polls=3, work=0.005, pause=0.01):
    """loadbalance.yml -e continuous=true: take, renew before every later poll, release; again."""
    owner = "continuous pid %d" % os.getpid()
    rng = random.Random(os.getpid())
    while not os.path.exists(str(stop)):
        res = take(path, owner)
        if res.get("failed"):
            record(log, ev="lost", who="continuous", owner=owner, msg=res.get("msg"), crash=res.get("crash"),
                   holder=(res.get("locked_by") or {}).get("owner"),
                   holder_acquired=(res.get("locked_by") or {}).get("acquired"))
            time.sleep(0.02)
            continue
        token = res["token"]
        record(log, ev="enter", who="continuous", owner=owner, token=token, action=res["action"],
               acquired=res["lock"]["acquired"], taken_over_from=None)
        for index in range(polls):
            if index:
                ren = renew(path, token)
                record(log, ev="renew", who="continuous", ok=not ren.get("failed"), msg=ren.get("msg"))
            time.sleep(work + pause)
        record(log, ev="exit", who="continuous", token=token)
        rel = give_back(path, token)
        record(log, ev="released", who="continuous", token=token, ok=rel.get("action") == "released")
        time.sleep(0.05 * rng.random())
    os._exit(0)


def sections_of(records):
    """Walk the log in file (= write) order: the critical sections, and how many overlapped."""
    holder, overlaps, sections = None, 0, {}
    for rec in records:
        if rec["ev"] == "enter":
            if holder is not None:
                overlaps += 1
            holder = rec["token"]
            sections[rec["token"]] = dict(rec, end=None)
        elif rec["ev"] in ("exit", "killed"):
            if holder == rec["token"]:
                holder = None
        elif rec["ev"] == "released":
            sections[rec["token"]]["end"] = rec["t"]
    return overlaps, sections


def start(target, *args):
    proc = CTX.Process(target=target, args=args, daemon=True)
    proc.start()
    return proc


# ---------------------------------------------------------------------------------------------
# a continuous balancer and AWX-style single polls
# ---------------------------------------------------------------------------------------------

def test_continuous_balancer_and_single_polls_never_overlap_and_losers_name_the_holder(tmp_path):
    path = tmp_path / "qmaster" / "lock.json"
    log = tmp_path / "sections.log"
    stop = tmp_path / "stop"
    cont = start(continuous, path, log, stop)
    codes = []
    rng = random.Random(7)
    for rnd in range(25):
        barrier = CTX.Barrier(3, timeout=60)
        procs = [start(poll, "awx-job-%d" % (3 * rnd + i), path, log, 0.005, barrier) for i in range(3)]
        for proc in procs:
            proc.join(60)
            codes.append(proc.exitcode)
        time.sleep(rng.uniform(0, 0.05))
    stop.write_text("")
    cont.join(60)
    assert cont.exitcode == 0
    records = read_log(log)
    overlaps, sections = sections_of(records)
    assert overlaps == 0
    assert set(codes) <= {0, LOSER}
    wins = [s for s in sections.values() if s["who"].startswith("awx-job")]
    losses = [r for r in records if r["ev"] == "lost"]
    assert len(wins) == codes.count(0) and codes.count(LOSER) == sum(1 for r in losses if r["who"] != "continuous")
    assert sum(1 for s in sections.values() if s["who"] == "continuous") >= 2
    assert wins and codes.count(LOSER)  # both happened
    assert all(s["action"] == "acquired" for s in sections.values())  # nobody died: no takeover
    assert all(r["ok"] for r in records if r["ev"] in ("released", "renew"))
    for rec in losses:
        # no traceback; the message names the holder, who held the lock at that time
        assert rec["crash"] is None and rec["holder"] and ("locked by %s since" % rec["holder"]) in rec["msg"]
        held = [s for s in sections.values() if (s["owner"], s["acquired"]) == (rec["holder"], rec["holder_acquired"])]
        assert len(held) == 1 and held[0]["acquired"] <= rec["t"] and (held[0]["end"] is None or rec["t"] - 1 <= held[0]["end"])


# ---------------------------------------------------------------------------------------------
# a holder killed in its critical section
# ---------------------------------------------------------------------------------------------

def _victim(path, log, ttl):
    owner = "victim pid %d" % os.getpid()
    res = take(path, owner, ttl)
    assert not res.get("failed"), res
    record(log, ev="enter", who="victim", owner=owner, token=res["token"], action=res["action"],
           acquired=res["lock"]["acquired"], expires=res["expires"], taken_over_from=None)
    time.sleep(3600)  # acting; never finishes


def _race(path, log, names, results):
    barrier = CTX.Barrier(len(names), timeout=60)
    all_tried = CTX.Barrier(len(names), timeout=60)
    procs = [start(poll, name, path, log, 0.01, barrier, 1800, results, all_tried) for name in names]
    got = [results.get(timeout=20) for _name in names]
    for proc in procs:
        proc.join(60)
    return got, [p.exitcode for p in procs]


def test_holder_sigkilled_in_its_critical_section_is_taken_over_by_exactly_one(tmp_path):
    path = tmp_path / "qmaster" / "lock.json"
    log = tmp_path / "sections.log"
    results = CTX.Queue()
    victim = start(_victim, path, log, 3)
    deadline = time.time() + 30
    while not read_log(log) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    victim.kill()  # SIGKILL in the middle of its critical section
    victim.join(30)
    entered = read_log(log)[0]
    record(log, ev="killed", who="victim", token=entered["token"])
    # before the lock expires: every balancer refuses, naming the dead holder
    got, codes = _race(path, log, ["early-%d" % i for i in range(4)], results)
    assert codes == [LOSER] * 4
    assert all(outcome == "lost" and res["locked_by"]["owner"] == entered["owner"] for _n, outcome, res in got)
    assert time.time() < entered["expires"]
    # once it has expired, of five balancers starting together exactly one takes it over
    time.sleep(max(0.0, entered["expires"] - time.time()) + 0.05)
    got, codes = _race(path, log, ["taker-%d" % i for i in range(5)], results)
    winners = [res for _n, outcome, res in got if outcome == "won"]
    assert len(winners) == 1 and sorted(codes) == [0, LOSER, LOSER, LOSER, LOSER]
    win = winners[0]
    assert win["action"] == "taken_over" and win["taken_over_from"]["owner"] == entered["owner"]
    assert win["lock"]["acquired"] >= entered["expires"]
    winner_owner = win["lock"]["owner"]
    assert all(res["locked_by"]["owner"] == winner_owner for _n, outcome, res in got if outcome == "lost")
    overlaps, sections = sections_of(read_log(log))
    assert overlaps == 0 and len(sections) == 2
    assert os.listdir(path.parent) == [".lock.json.guard"]  # the winner released: nothing left over
    # the dead holder's token is worth nothing now: its controller, come back, cannot renew or
    # release the lock of the next holder, and is told who that is
    nxt = take(path, "next-poll pid %d" % os.getpid())
    late = renew(path, entered["token"])
    assert late["failed"] and "was lost: cluster mycluster is locked by next-poll" in late["msg"]
    late = give_back(path, entered["token"])
    assert late["failed"] and "does not match, not released" in late["msg"]
    assert give_back(path, nxt["token"])["action"] == "released"


def _hold_and_exit(path, owner, ttl, results):
    res = take(path, owner, ttl)
    results.put(res)
    leave(0, results)  # the controller dies without releasing: its pid is gone


def test_a_dead_pid_or_a_host_that_is_gone_changes_nothing(tmp_path):
    """The holder's process and host are gone: the lock still lasts exactly until it expires."""
    path = tmp_path / "qmaster" / "lock.json"
    results = CTX.Queue()
    proc = start(_hold_and_exit, path, "ctl-decommissioned.example pid 99999", 2, results)
    first = results.get(timeout=20)
    proc.join(30)
    assert not first.get("failed")
    with pytest.raises(OSError):
        os.kill(proc.pid, 0)  # that pid is dead
    res = take(path, "ctl2 pid %d" % os.getpid(), 2)
    assert res["failed"] and res["locked_by"]["owner"] == "ctl-decommissioned.example pid 99999"
    time.sleep(max(0.0, first["expires"] - time.time()) + 0.05)
    res = take(path, "ctl2 pid %d" % os.getpid(), 2)
    assert res["action"] == "taken_over" and res["lock"]["acquired"] >= first["expires"]


def test_a_pid_reused_by_a_live_process_does_not_keep_a_dead_lock_alive(tmp_path):
    """The owner text names a pid that a live process has now (here: this one); ignored."""
    path = tmp_path / "qmaster" / "lock.json"
    reused = "ctl1 pid %d" % os.getpid()
    first = take(path, reused, 1)
    assert not first.get("failed")
    res = take(path, "ctl2", 1)
    assert res["failed"] and res["locked_by"]["owner"] == reused  # not before it expires
    time.sleep(max(0.0, first["expires"] - time.time()) + 0.05)
    res = take(path, "ctl2", 1)
    assert res["action"] == "taken_over" and res["taken_over_from"]["owner"] == reused


# ---------------------------------------------------------------------------------------------
# a lock file that is not a lock
# ---------------------------------------------------------------------------------------------

CORRUPT = {
    "empty": "",
    "truncated": '{"schema": 1, "cluster": "mycluster", "owner": "ctl1 pid 1", "token": "0f6e',
    "garbage": "\x00\x13\xff not a lock",
    "wrong shape": '{"holder": "ctl1", "until": "tomorrow"}',
}


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_corrupt_lock_file_exactly_one_of_several_takers_wins_and_the_file_is_kept(tmp_path, kind):
    path = tmp_path / "qmaster" / "lock.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(CORRUPT[kind].encode("utf-8", "surrogateescape"))
    log = tmp_path / "sections.log"
    results = CTX.Queue()
    # written just now: a balancer may still act under it, so nobody takes it
    got, codes = _race(path, log, ["early-%d" % i for i in range(3)], results)
    assert codes == [LOSER] * 3
    for _name, outcome, res in got:
        assert str(path) in res["msg"] and "treated as held until" in res["msg"] and "crash" not in res
    # older than the ttl: exactly one of five takes it over, the file is kept aside
    os.utime(path, (time.time() - 1801, time.time() - 1801))
    got, codes = _race(path, log, ["taker-%d" % i for i in range(5)], results)
    winners = [res for _n, outcome, res in got if outcome == "won"]
    assert len(winners) == 1 and sorted(codes) == [0, LOSER, LOSER, LOSER, LOSER]
    moved = winners[0]["corrupt_lock"]["moved_to"]
    assert open(moved, "rb").read() == CORRUPT[kind].encode("utf-8", "surrogateescape")
    assert all(res["locked_by"]["owner"] == winners[0]["lock"]["owner"] for _n, outcome, res in got if outcome == "lost")
    assert sorted(os.listdir(path.parent)) == [".lock.json.guard", os.path.basename(moved)]
