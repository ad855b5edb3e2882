# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Executing spawn moves safely: "snapshot, then validate", and a crash-safe move state machine.

The balancer (``policy/spawn.py``) plans from a snapshot.  Just before acting, the executor
takes the current state (same shape as the snapshot) and calls :func:`validate_move`; a move
whose task moved, started or was deleted, or whose target is full or gone, is rejected with a
reason, as the seed prescribes.

A move is four steps over the copies of one task::

    copy    the target gets the data (a crash here leaves a partial target copy)
    verify  the target's checksum is compared with the source's; only then it counts as complete
    switch  the live pointer moves to the target (one atomic write; replica moves skip it)
    remove  the source copy is deleted (a crash here leaves a partial source copy)

The model of one task is ``{"copies": {host: {"state": "partial"|"unverified"|"complete",
"checksum": str|None}}, "live": host|None, "checksum": str}``.  :func:`next_step` reads the
model and names the step to run, so a controller that died anywhere resumes by calling it
again; :func:`apply_step` refuses any step whose precondition does not hold, so at every point
at least one complete copy exists and the live copy is complete.  Pure functions, no I/O.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Mapping

STEPS = ("copy", "verify", "switch", "remove")


# --------------------------------------------------------------------------------------------
# snapshot, then validate
# --------------------------------------------------------------------------------------------

def _copies_of(state, job, task):
    return [t for t in state.get("tasks", ()) if str(t.get("job")) == str(job) and t.get("task") == task]


def validate_move(move, current_state):
    """None if ``move`` (from a plan) is still valid in ``current_state``, else why not.

    ``current_state`` has the snapshot's shape (``hosts``, ``jobs``, ``tasks``).
    """
    if not isinstance(move, Mapping) or not isinstance(current_state, Mapping):
        return "move and current_state must be mappings"
    job, task = str(move.get("job")), move.get("task")
    source, target = move.get("source"), move.get("target")
    label = "%s/%s" % (job, task)
    jobs = current_state.get("jobs") or {}
    if job not in {str(k) for k in jobs}:
        return "rejected %s: job %s was deleted" % (label, job)
    copies = _copies_of(current_state, job, task)
    if not copies:
        return "rejected %s: the task was deleted" % label
    here = [c for c in copies if c.get("host") == source]
    if not here:
        return "rejected %s: the task moved (no copy on %s any more; on %s)" % (
            label, source, ", ".join(sorted(str(c.get("host")) for c in copies)))
    if any(c.get("host") == target for c in copies):
        return "rejected %s: the task moved (%s already holds a copy)" % (label, target)
    src = here[0]
    if src.get("running"):
        return "rejected %s: the task started (running on %s)" % (label, source)
    last = move.get("last_active")
    now = src.get("last_active")
    if now is not None and (last is None or now > last):
        return "rejected %s: the task started since the snapshot (last active %s, was %s)" % (label, now, last)
    if not src.get("complete", True):
        return "rejected %s: the copy on %s is incomplete" % (label, source)
    hosts = current_state.get("hosts") or {}
    host = hosts.get(target)
    if host is None:
        return "rejected %s: target %s is gone" % (label, target)
    if not host.get("up", True):
        return "rejected %s: target %s is down" % (label, target)
    if host.get("readonly"):
        return "rejected %s: target %s is read-only" % (label, target)
    size = max(src.get("bytes", 0), move.get("bytes", 0))
    if host.get("disk_free", 0) < size:
        return "rejected %s: target %s is full (%d bytes free, %d needed)" % (
            label, target, host.get("disk_free", 0), size)
    limit = (jobs.get(job) or jobs.get(move.get("job")) or {}).get("max_per_host")
    if limit is not None:
        held = sum(1 for t in current_state.get("tasks", ()) if str(t.get("job")) == job and t.get("host") == target)
        if held >= limit:
            return "rejected %s: target %s already holds %d copies of job %s (maximum %d)" % (
                label, target, held, job, limit)
    return None


def validate_plan(plan, current_state):
    """``(accepted, rejected)``: the moves still valid, and ``[(move, reason)]`` for the others.

    Accepted moves are applied to a working copy of the state as they are accepted, so two moves
    that together overfill a target are not both accepted.
    """
    state = {"hosts": {n: dict(h) for n, h in (current_state.get("hosts") or {}).items()},
             "jobs": current_state.get("jobs") or {},
             "tasks": [dict(t) for t in current_state.get("tasks", ())]}
    accepted, rejected = [], []
    for move in plan.get("moves", ()):
        why = validate_move(move, state)
        if why:
            rejected.append((move, why))
            continue
        accepted.append(move)
        for t in state["tasks"]:
            if str(t.get("job")) == str(move["job"]) and t.get("task") == move["task"] and t.get("host") == move["source"]:
                t["host"] = move["target"]
                size = t.get("bytes", 0)
                state["hosts"][move["target"]]["disk_free"] = state["hosts"][move["target"]].get("disk_free", 0) - size
                break
    return accepted, rejected


# --------------------------------------------------------------------------------------------
# the move state machine
# --------------------------------------------------------------------------------------------

def task_model(source, checksum="c0", live=True):
    """A task with one complete copy on ``source`` (live unless ``live`` is False)."""
    return {"copies": {source: {"state": "complete", "checksum": checksum}},
            "live": source if live else None, "checksum": checksum}


def complete_copies(model):
    return sorted(h for h, c in model["copies"].items()
                  if c["state"] == "complete" and c["checksum"] == model["checksum"])


def invariant(model):
    """None if at least one complete copy exists and the live copy (if any) is complete."""
    done = complete_copies(model)
    if not done:
        return "no complete copy"
    if model["live"] is not None and model["live"] not in done:
        return "live copy on %s is not complete" % model["live"]
    return None


def next_step(model, move):
    """The step to run next for ``move`` (``{"source", "target", "role"}``), or None when done.

    Read from the copies alone, so it is the same after a crash at any point.
    """
    source, target = move["source"], move["target"]
    tgt = model["copies"].get(target)
    live_move = move.get("role", "live") == "live"
    if tgt is None or tgt["state"] == "partial":
        if model["live"] == target:  # cannot happen through apply_step; say so rather than loop
            raise ValueError("model: live copy on %s has no data" % target)
        return "copy"
    if tgt["state"] == "unverified":
        return "verify"
    if live_move and model["live"] == source:
        return "switch"
    if source in model["copies"]:
        return "remove"
    return None


def apply_step(model, move, step, checksum_ok=True):
    """A new model after ``step``; ``ValueError`` when its precondition does not hold.

    ``checksum_ok=False`` models a copy that arrived damaged: verify then discards it.
    """
    source, target = move["source"], move["target"]
    out = _copy.deepcopy(model)
    copies = out["copies"]
    if step == "copy":
        src_ok = source in complete_copies(out)
        if not src_ok:
            raise ValueError("copy: the source copy on %s is not complete" % source)
        copies[target] = {"state": "unverified", "checksum": out["checksum"] if checksum_ok else "damaged"}
    elif step == "verify":
        tgt = copies.get(target)
        if tgt is None or tgt["state"] != "unverified":
            raise ValueError("verify: no unverified copy on %s" % target)
        if tgt["checksum"] == out["checksum"]:
            tgt["state"] = "complete"
        else:
            del copies[target]  # damaged: throw it away, next_step copies again
    elif step == "switch":
        if target not in complete_copies(out):
            raise ValueError("switch: the copy on %s is not verified complete" % target)
        out["live"] = target
    elif step == "remove":
        if target not in complete_copies(out):
            raise ValueError("remove: the copy on %s is not verified complete" % target)
        if out["live"] == source:
            raise ValueError("remove: %s still holds the live copy" % source)
        copies.pop(source, None)
    else:
        raise ValueError("step: must be one of %s, got %r" % (", ".join(STEPS), step))
    return out


def crash_during(model, move, step):
    """The model left by a crash in the middle of ``step`` (what a half-done step leaves)."""
    source, target = move["source"], move["target"]
    out = _copy.deepcopy(model)
    if step == "copy":
        out["copies"][target] = {"state": "partial", "checksum": None}
    elif step == "remove" and source in out["copies"]:
        out["copies"][source] = {"state": "partial", "checksum": None}
    # verify and switch are a checksum read and one atomic write: half of them is none of them
    return out


def run_move(model, move, limit=20):
    """Run ``move`` to the end from any model; returns ``(model, steps run)``.

    Checks the invariant after every step; ``ValueError`` if it ever breaks or the move does
    not converge within ``limit`` steps.
    """
    steps = []
    for _i in range(limit):
        step = next_step(model, move)
        if step is None:
            return model, steps
        if step == "copy" and model["copies"].get(move["target"], {}).get("state") == "partial":
            model = dict(model, copies={h: c for h, c in model["copies"].items() if h != move["target"]})
        model = apply_step(model, move, step)
        steps.append(step)
        broken = invariant(model)
        if broken:
            raise ValueError("invariant broken after %s: %s" % (step, broken))
    raise ValueError("move did not converge in %d steps: %s" % (limit, steps))
