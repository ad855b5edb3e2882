# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Balancers contending for one cluster's lock: real processes, the balancer_lock module's code.

Every lock call runs ``gridengine.balancer.balancer_lock``'s ``main()`` (argument parsing,
``run()``, module_utils) in the calling process, with the arguments loadbalance.yml gives it;
only the transport (ssh to the qmaster) is left out. Each process is a separate OS process
(fork), and each records its critical section -- from the moment the lock is its own to the
moment it gives it back -- in one shared file opened with ``O_APPEND`` (one ``write(2)`` per
record, so the file's order is the order in which the records were written).

Phase 1, contention (``--rounds``):
  * one *continuous* balancer, like ``loadbalance.yml -e continuous=true``: takes the lock,
    renews it before every poll after the first, "acts" for ``--work`` seconds per poll, pauses,
    releases after ``--polls`` polls, and starts again (a supervisor restarting it); when it
    finds the lock held it retries after ``--retry`` seconds;
  * every round, ``--singles`` *single poll* balancers (AWX jobs: take the lock, one poll,
    release) started at the same instant; one that finds the lock held exits with status 2
    and the holder's name, as loadbalance.yml's first task does.
Phase 2, stale takeover (``--kills`` trials per variant): a holder is SIGKILLed in its
critical section, ``--takers`` balancers then start at once and retry every ``--retry``
seconds: exactly one must take the lock over, not before it expired, and every other one must
stop naming the new holder. Variants: ``sigkill`` (the dead holder's lock stays as it was),
``truncated`` and ``empty`` (its lock file is then also cut short or emptied: a lock that
names no holder, taken over ``ttl`` after it was last written).

Checks (the program exits 1 when one fails): no two critical sections overlap; every balancer
that lost names a holder that really held the lock at that time; exactly one taker per trial.

    .venv/bin/python benchmarks/lock_contention.py --rounds 300 --kills 10 --markdown /tmp/lock_contention.md
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible.module_utils.testing import patch_module_args  # noqa: E402

from ansible_collections.gridengine.balancer.plugins.modules import balancer_lock as lock_module  # noqa: E402

CTX = multiprocessing.get_context("fork")
LOSER_EXIT = 2


# ---------------------------------------------------------------------------------------------
# the module, called as Ansible would call it on the qmaster
# ---------------------------------------------------------------------------------------------

def call_module(args):
    """Run balancer_lock's main() with ``args``; return its result dict."""
    args = dict(args, _ansible_no_log=True)  # no syslog line per call
    out = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            lock_module.main()
        except SystemExit:
            pass
        except Exception:  # a traceback in the module: Ansible would report MODULE FAILURE
            return {"failed": True, "crash": traceback.format_exc(), "msg": "MODULE FAILURE"}
    return json.loads(out.getvalue())


def acquire(path, owner, ttl):
    return call_module({"cluster": "bench", "path": path, "owner": owner, "ttl": ttl})


def renew(path, owner, ttl, token):
    return call_module({"cluster": "bench", "path": path, "owner": owner, "ttl": ttl, "token": token})


def release(path, token):
    return call_module({"cluster": "bench", "path": path, "state": "absent", "token": token})


class Log(object):
    """The shared append-only record of critical sections."""

    def __init__(self, path):
        self.path = path

    def write(self, **record):
        record.setdefault("pid", os.getpid())
        record.setdefault("t", time.monotonic())
        record.setdefault("wall", time.time())
        line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def read(self):
        try:
            with open(self.path) as handle:
                return [json.loads(line) for line in handle if line.strip()]
        except FileNotFoundError:  # nothing written yet
            return []


def _lost(log, name, owner, res, start):
    if res.get("crash"):
        log.write(ev="error", who=name, msg="the module crashed: %s" % res["crash"].strip().splitlines()[-1])
    holder = res.get("locked_by") or {}
    log.write(ev="lost", who=name, owner=owner, start=start, end=time.time(), msg=res.get("msg", ""),
              holder=holder.get("owner"), holder_acquired=holder.get("acquired"))
    return holder.get("owner")


# ---------------------------------------------------------------------------------------------
# the balancers (each runs in its own process)
# ---------------------------------------------------------------------------------------------

def single_poll(name, lock, log_path, ttl, work, start_at, retry=None, give_up_unless=None):
    """An AWX job: take the lock, one poll, release. Held: exit 2 naming the holder.

    With ``retry``, a taker: retries every ``retry`` s while the lock is held by
    ``give_up_unless`` (the dead holder) or names no holder (a corrupt file), and exits 2 as
    soon as another holder is named.
    """
    log = Log(log_path)
    owner = "%s pid %d" % (name, os.getpid())
    delay = start_at - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    while True:
        start = time.time()
        res = acquire(lock, owner, ttl)
        if not res.get("failed"):
            break
        holder = _lost(log, name, owner, res, start)
        if retry is None or (holder is not None and holder != give_up_unless):
            sys.exit(LOSER_EXIT)
        time.sleep(retry)
    token = res["token"]
    log.write(ev="enter", who=name, owner=owner, token=token, action=res["action"],
              acquired=res["lock"]["acquired"], expires=res["expires"], ttl=ttl,
              taken_over_from=(res.get("taken_over_from") or {}).get("owner"),
              corrupt=(res.get("corrupt_lock") or {}).get("moved_to"))
    time.sleep(work)
    log.write(ev="exit", who=name, token=token)
    res = release(lock, token)
    log.write(ev="released", who=name, token=token, ok=res.get("action") == "released", msg=res.get("msg"))
    sys.exit(0)


def continuous(name, lock, log_path, ttl, polls, work, pause, retry, restart_gap, stop_path):
    """loadbalance.yml -e continuous=true, restarted by a supervisor until ``stop_path`` exists."""
    log = Log(log_path)
    owner = "%s pid %d" % (name, os.getpid())
    rng = random.Random(os.getpid())
    while not os.path.exists(stop_path):
        start = time.time()
        res = acquire(lock, owner, ttl)
        if res.get("failed"):
            _lost(log, name, owner, res, start)
            time.sleep(retry)
            continue
        token = res["token"]
        log.write(ev="enter", who=name, owner=owner, token=token, action=res["action"],
                  acquired=res["lock"]["acquired"], expires=res["expires"], ttl=ttl,
                  taken_over_from=(res.get("taken_over_from") or {}).get("owner"), corrupt=None)
        for poll in range(polls):
            if poll:
                res = renew(lock, owner, ttl, token)
                if res.get("failed"):
                    log.write(ev="error", who=name, msg="renew failed: %s" % res.get("msg"))
                    break
                log.write(ev="renew", who=name, token=token)
            time.sleep(work)
            if poll + 1 < polls:
                time.sleep(pause)
        log.write(ev="exit", who=name, token=token)
        res = release(lock, token)
        log.write(ev="released", who=name, token=token, ok=res.get("action") == "released", msg=res.get("msg"))
        time.sleep(restart_gap * rng.random())
    sys.exit(0)


# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------

def check(records):
    """Walk the log in file order. Returns (overlaps, sections, lost, problems)."""
    holder = None
    overlaps = 0
    sections = {}
    order = []
    problems = []
    for rec in records:
        ev = rec["ev"]
        if ev == "enter":
            if holder is not None:
                overlaps += 1
                problems.append("overlap: %s entered while %s held the lock" % (rec["who"], holder[0]))
            holder = (rec["who"], rec["token"])
            sections[rec["token"]] = dict(rec, end=None)
            order.append(rec["token"])
        elif ev in ("exit", "killed"):
            if holder is not None and holder[1] == rec["token"]:
                holder = None
            elif ev == "exit":
                problems.append("%s left a section it was not in" % rec["who"])
            if rec["token"] in sections:
                sections[rec["token"]]["end_ev"] = ev
        elif ev == "released":
            if rec["token"] in sections:
                sections[rec["token"]]["end"] = rec["wall"]
            if not rec.get("ok"):
                problems.append("%s could not release its lock: %s" % (rec["who"], rec.get("msg")))
        elif ev == "error":
            problems.append("%s: %s" % (rec["who"], rec["msg"]))
    # a killed holder's lock lasted until the next acquisition
    for this, following in zip(order, order[1:] + [None]):
        if sections[this]["end"] is None:
            sections[this]["end"] = sections[following]["acquired"] if following else float("inf")
    lost = [rec for rec in records if rec["ev"] == "lost"]
    by_holder = {}
    for sec in sections.values():
        by_holder.setdefault((sec["owner"], sec["acquired"]), []).append(sec)
    for rec in lost:
        if rec["holder"] is None:
            if "treated as held until" not in rec["msg"]:
                problems.append("%s lost without a holder named: %s" % (rec["who"], rec["msg"]))
            continue
        if rec["holder"] not in rec["msg"]:
            problems.append("%s: the message does not name the holder: %s" % (rec["who"], rec["msg"]))
        match = by_holder.get((rec["holder"], rec["holder_acquired"]), [])
        if not any(sec["acquired"] <= rec["end"] and rec["start"] <= sec["end"] for sec in match):
            problems.append("%s named %s (acquired %s), who did not hold the lock then"
                            % (rec["who"], rec["holder"], rec["holder_acquired"]))
    return overlaps, sections, lost, problems


# ---------------------------------------------------------------------------------------------
# phases
# ---------------------------------------------------------------------------------------------

def start(target, *args):
    proc = CTX.Process(target=target, args=args, daemon=True)  # never outlives this program
    proc.start()
    return proc


def phase_contention(work_dir, opts, rng):
    lock = os.path.join(work_dir, "contention", "lock.json")
    log = Log(os.path.join(work_dir, "contention.log"))
    stop = os.path.join(work_dir, "stop")
    cont = start(continuous, "continuous", lock, log.path, opts.ttl, opts.polls, opts.work, opts.pause,
                 opts.retry, opts.restart_gap, stop)
    exits = {0: 0, LOSER_EXIT: 0}
    other_exits = []
    began = time.monotonic()
    for rnd in range(opts.rounds):
        start_at = time.monotonic() + 0.02
        procs = [start(single_poll, "awx-job-%d" % (rnd * opts.singles + i), lock, log.path, opts.ttl,
                       opts.work, start_at) for i in range(opts.singles)]
        for proc in procs:
            proc.join(120)
            if proc.exitcode in exits:
                exits[proc.exitcode] += 1
            else:
                other_exits.append(proc.exitcode)
        time.sleep(rng.uniform(0, opts.round_gap))
    with open(stop, "w"):
        pass
    cont.join(120)
    took = time.monotonic() - began
    if cont.exitcode != 0:
        other_exits.append(cont.exitcode)
    records = log.read()
    overlaps, sections, lost, problems = check(records)
    if other_exits:
        problems.append("processes ended with unexpected status %s" % other_exits)
    single_wins = sum(1 for s in sections.values() if s["who"].startswith("awx-job"))
    if single_wins != exits[0]:
        problems.append("%d single polls exited 0 but %d recorded a section" % (exits[0], single_wins))
    if exits[LOSER_EXIT] != sum(1 for r in lost if r["who"].startswith("awx-job")):
        problems.append("a single poll exited 2 without recording whom it lost to")
    return {
        "seconds": took,
        "sections": len(sections),
        "continuous_sessions": sum(1 for s in sections.values() if s["who"] == "continuous"),
        "renewals": sum(1 for r in records if r["ev"] == "renew"),
        "single_polls": opts.rounds * opts.singles,
        "single_wins": exits[0],
        "single_losses": exits[LOSER_EXIT],
        "continuous_retries": sum(1 for r in lost if r["who"] == "continuous"),
        "lost_named": sum(1 for r in lost if r["holder"]),
        "takeovers": sum(1 for s in sections.values() if s["action"] == "taken_over"),
        "overlaps": overlaps,
        "crashes": sum(1 for r in records if r["ev"] == "error" and "crashed" in r["msg"]),
        "problems": problems,
    }


def corrupt_file(path, variant):
    """After the kill: cut the dead holder's lock file short (a disk that lost part of it)."""
    if variant == "empty":
        with open(path, "w"):
            pass
    elif variant == "truncated":
        with open(path, "r+") as handle:
            text = handle.read()
            handle.seek(0)
            handle.truncate()
            handle.write(text[:len(text) // 2])


def phase_takeover(work_dir, opts, rng, variant):
    log = Log(os.path.join(work_dir, "takeover-%s.log" % variant))
    trials = []
    problems = []
    for trial in range(opts.kills):
        lock = os.path.join(work_dir, "takeover-%s-%d" % (variant, trial), "lock.json")
        victim_name = "victim-%d" % trial
        victim = start(single_poll, victim_name, lock, log.path, opts.kill_ttl, 3600.0, time.monotonic())
        deadline = time.monotonic() + 60
        enter = None
        while enter is None and time.monotonic() < deadline:
            time.sleep(0.01)
            enter = next((r for r in log.read() if r["ev"] == "enter" and r["who"] == victim_name), None)
        if enter is None:
            victim.kill()
            problems.append("%s never took the lock" % victim_name)
            continue
        time.sleep(rng.uniform(0.02, 0.2))  # in the middle of its critical section
        victim.kill()
        victim.join(30)
        killed_at = time.time()
        log.write(ev="killed", who=victim_name, token=enter["token"], signal="SIGKILL")
        basis = enter["expires"]
        if variant != "sigkill":
            corrupt_file(lock, variant)
            basis = os.stat(lock).st_mtime + opts.kill_ttl
        start_at = time.monotonic() + 0.01
        # the winner acts long enough for every other taker to see it at its next retry
        work = max(opts.work, 3 * opts.retry + 0.1)
        takers = [start(single_poll, "taker-%d-%d" % (trial, i), lock, log.path, opts.kill_ttl, work,
                        start_at, opts.retry, enter["owner"]) for i in range(opts.takers)]
        codes = []
        for proc in takers:
            proc.join(120)
            codes.append(proc.exitcode)
        records = [r for r in log.read() if r["who"].startswith("taker-%d-" % trial)]
        wins = [r for r in records if r["ev"] == "enter"]
        takeovers = [r for r in wins if r["action"] == "taken_over"]
        if len(takeovers) != 1 or len(wins) != 1 or sorted(codes) != [0] + [LOSER_EXIT] * (opts.takers - 1):
            problems.append("trial %d: %d takers took the lock over, %d won in all (exit statuses %s)"
                            % (trial, len(takeovers), len(wins), codes))
            continue
        win = wins[0]
        if win["action"] != "taken_over":
            problems.append("trial %d: the winner %s the lock instead of taking it over" % (trial, win["action"]))
        if variant == "sigkill" and win["taken_over_from"] != enter["owner"]:
            problems.append("trial %d: taken over from %r, not the dead holder" % (trial, win["taken_over_from"]))
        if variant != "sigkill" and not (win["corrupt"] and os.path.exists(win["corrupt"])):
            problems.append("trial %d: the corrupt lock file was not kept aside" % trial)
        if win["acquired"] < basis:
            problems.append("trial %d: taken over %.3fs before the lock expired" % (trial, basis - win["acquired"]))
        last = {}
        for rec in records:
            if rec["ev"] == "lost":
                last[rec["who"]] = rec
        for who, rec in last.items():
            if who != win["who"] and rec["holder"] != win["owner"]:
                problems.append("trial %d: %s stopped naming %r, not the winner" % (trial, who, rec["holder"]))
        trials.append({"after_kill": win["acquired"] - killed_at, "after_expiry": win["acquired"] - basis,
                       "attempts": sum(1 for r in records if r["ev"] == "lost") + 1})
    overlaps, sections, lost, more = check(log.read())
    problems.extend(more)
    return {
        "variant": variant,
        "trials": len(trials),
        "takeovers": sum(1 for s in sections.values() if s["action"] == "taken_over"),
        "overlaps": overlaps,
        "after_kill": [t["after_kill"] for t in trials],
        "after_expiry": [t["after_expiry"] for t in trials],
        "attempts": sum(t["attempts"] for t in trials),
        "problems": problems,
    }


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------

def _stats(values):
    if not values:
        return "-"
    ordered = sorted(values)
    return "%.3f / %.3f / %.3f" % (ordered[0], statistics.median(ordered), ordered[-1])


def report(opts, cont, takeovers, command):
    lines = ["# Lock contention between balancers (real processes)", "",
             "Command: `%s`" % command, "",
             "Machine: %d CPUs, Python %s. Every lock call runs `balancer_lock`'s `main()`." % (
                 os.cpu_count() or 0, sys.version.split()[0]), "",
             "## Phase 1: one continuous balancer and single polls", "",
             "| figure | value |", "|---|---|",
             "| rounds (x %d single polls started at the same instant) | %d |" % (opts.singles, opts.rounds),
             "| wall time | %.1f s |" % cont["seconds"],
             "| critical sections (lock held, from acquisition to release) | %d |" % cont["sections"],
             "| of which continuous sessions (%d polls each, renewed before each poll after the first) | %d |" % (
                 opts.polls, cont["continuous_sessions"]),
             "| renewals | %d |" % cont["renewals"],
             "| single polls that won / exited 2 naming the holder | %d / %d |" % (
                 cont["single_wins"], cont["single_losses"]),
             "| continuous retries after finding the lock held | %d |" % cont["continuous_retries"],
             "| losers whose message named a holder that held the lock at that time | %d of %d |" % (
                 cont["lost_named"], cont["single_losses"] + cont["continuous_retries"]),
             "| takeovers (no holder died: must be 0) | %d |" % cont["takeovers"],
             "| module calls that ended in a traceback | %d |" % cont["crashes"],
             "| **overlapping critical sections** | **%d** |" % cont["overlaps"],
             "", "## Phase 2: a holder SIGKILLed in its critical section", "",
             "ttl %d s; %d takers start right after the kill and retry every %.2f s while the dead holder "
             "(or no holder: a corrupt file) is named; the winner acts %.2f s, so every other taker sees it "
             "and stops naming it." % (opts.kill_ttl, opts.takers, opts.retry, max(opts.work, 3 * opts.retry + 0.1)),
             "",
             "| variant | trials | takeovers | overlaps | kill -> takeover (s, min / median / max) | "
             "expiry -> takeover (s) | attempts |",
             "|---|---|---|---|---|---|---|"]
    for t in takeovers:
        lines.append("| %s | %d | %d | %d | %s | %s | %d |" % (
            t["variant"], t["trials"], t["takeovers"], t["overlaps"], _stats(t["after_kill"]),
            _stats(t["after_expiry"]), t["attempts"]))
    lines += ["", "`sigkill`: the dead holder's lock stays as written; `truncated` / `empty`: its lock file is "
              "then cut to half / emptied (a lock naming no holder: held until its modification time + ttl, "
              "then moved aside and taken over). Expiry -> takeover is never negative: no lock was taken "
              "over before it expired.", ""]
    problems = cont["problems"] + [p for t in takeovers for p in t["problems"]]
    lines.append("Problems found: %s" % ("none" if not problems else ""))
    lines.extend("- %s" % p for p in problems[:50])
    return "\n".join(lines) + "\n", problems


def break_lock():
    """Replace the lock's two safeguards by nothing (for --break-lock): read, then write."""
    from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_lock as bl

    def plain_write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        time.sleep(0.002)  # the time a slower disk or a busier machine takes between read and write
        with open(path, "w") as handle:
            handle.write(text)
        return True

    bl.guard = lambda path: contextlib.nullcontext()
    bl._create_exclusive = plain_write


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="phase 1 rounds (default 200)")
    parser.add_argument("--singles", type=int, default=4, help="single polls started per round (4)")
    parser.add_argument("--polls", type=int, default=3, help="polls per continuous session (3)")
    parser.add_argument("--work", type=float, default=0.01, help="seconds of acting per poll (0.01)")
    parser.add_argument("--pause", type=float, default=0.02, help="continuous: pause between polls (0.02)")
    parser.add_argument("--retry", type=float, default=0.05, help="seconds between retries (0.05)")
    parser.add_argument("--restart-gap", type=float, default=0.1,
                        help="continuous: at most this long before it starts again (0.1)")
    parser.add_argument("--round-gap", type=float, default=0.1, help="at most this long between rounds (0.1)")
    parser.add_argument("--ttl", type=int, default=1800, help="lock ttl in phase 1 (1800, loadbalance.yml's)")
    parser.add_argument("--kills", type=int, default=10, help="phase 2 trials per variant (10)")
    parser.add_argument("--kill-ttl", type=int, default=1, help="lock ttl in phase 2 (1 s)")
    parser.add_argument("--takers", type=int, default=4, help="phase 2 takers per trial (4)")
    parser.add_argument("--variants", default="sigkill,truncated,empty")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", help="write the report there too")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, locks)")
    parser.add_argument("--break-lock", action="store_true",
                        help="check the checker: no guard and a plain (non-exclusive) write of the lock "
                             "file; overlaps must then be found")
    parser.add_argument("--ansible-path-info", action="store_true",
                        help="let AnsibleModule stat the result's path as before the fix (the race that "
                             "crashed losing balancers with a traceback)")
    opts = parser.parse_args(argv)
    if opts.break_lock:
        break_lock()
    if opts.ansible_path_info:
        lock_module.plain_path_result = lambda module: module
    rng = random.Random(opts.seed)
    work_dir = tempfile.mkdtemp(prefix="lock-contention-")
    try:
        cont = phase_contention(work_dir, opts, rng)
        takeovers = [phase_takeover(work_dir, opts, rng, v) for v in opts.variants.split(",") if v]
        command = "python benchmarks/lock_contention.py " + " ".join(argv if argv is not None else sys.argv[1:])
        text, problems = report(opts, cont, takeovers, command.strip())
    finally:
        if opts.keep:
            print("work directory: %s" % work_dir)
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
    print(text)
    if opts.markdown:
        directory = os.path.dirname(os.path.abspath(opts.markdown))
        os.makedirs(directory, exist_ok=True)
        with open(opts.markdown, "w") as handle:
            handle.write(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
