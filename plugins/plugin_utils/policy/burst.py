# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cost-aware burst routing: which waiting jobs of the home cell go to an elastic partner (pure).

Issue 26 ("Burst into the cloud"): a home cell with static hosts, a transfer queue to a partner
cell whose qmaster runs with zero execution nodes, and the elastic balancer on the partner. The
partner has to boot a node for a job, so sending a job there pays only when the job would wait
at home longer than that boot. :func:`route` decides per waiting job of the home cell, in queue
order:

1. a job that is held or in error is not routed;
2. a job **pinned to home** stays: a hard queue request naming no transfer queue (``-q``), a hard
   host request (``-l hostname=...``), a hard request of a complex only home has
   (``home_only_complexes``), ``-l remote=false`` (seed 002's way of keeping a job local), or,
   with ``parallel_jobs`` false, a parallel environment (a transfer queue has no ``pe_list``);
3. a job wider than the partner's cap (``max_nodes`` x ``slots_per_node`` slots) stays;
4. a job that has waited less than ``wait`` (the user's setting) stays;
5. **cost-aware**: a job whose expected home wait is at most ``boot_delay + margin`` stays (a
   node bought for it would join about when home starts it anyway);
6. a job the partner has no room for (its committed slots, running plus waiting, plus this job's
   would pass ``max_nodes`` x ``slots_per_node``: a partner at its node cap) stays;
7. otherwise the job goes to the partner.

**Expected home wait** (a shadow schedule, first come first served): the home cell's free slots
now; each running job frees its slots after its *expected remaining* run time, from the run-time
history (qacct's ``ru_wallclock`` of finished jobs): the mean of ``r - a`` over the history's
run times ``r`` longer than the job's elapsed ``a``; when no history run is that long, ``a``
again (a job that ran long is expected to run as long again); capped by a hard ``h_rt``. Each
waiting job ahead, in queue order, starts when enough slots are free, never before the job
ahead of it (Grid Engine without reservation may let a narrow job overtake: for such a job this
estimate is high), and runs for the history's mean run time (or its ``h_rt``, if shorter; with no
history, its ``h_rt`` or nothing: an empty history underestimates the wait). A job
routed to the partner takes no home slots in the shadow. Array tasks are placed one by one up
to ``horizon_tasks`` in one call; a job past that horizon has an unknown (infinite) expected wait.

Inputs are plain data: the home ``snapshot`` (``sge_queue_facts``: ``taken_at``, ``hosts``,
``running``, ``pending``), the ``history`` of run times in seconds, and the partner's
``{"max_nodes", "slots_per_node", "committed_slots"}`` (:func:`partner_demand` reads the last one
from the partner's own facts). No clock, no I/O, no Ansible import.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Mapping

DEFAULTS = {
    "wait": 300.0,                # s a job waits at home before it may leave (the user's setting)
    "boot_delay": 120.0,          # s from asking the partner for a node to the node running jobs
    "margin": 120.0,              # s more the home wait must exceed the boot delay by
    "cost_aware": True,           # False: rule 5 off (every job that waited ``wait`` may leave)
    "home_only_complexes": [],    # complexes only home has: a hard request of one pins the job
    "transfer_queues": ["transfer.q"],   # queues a hard -q request may name and still leave
    "horizon_tasks": 100000,      # tasks placed in the shadow schedule in one call
    "parallel_jobs": True,        # False: a job with a parallel environment (pe) stays at home
}

HOST_REQUESTS = ("hostname", "h")
HOME = "home"
PARTNER = "partner"


class BurstError(ValueError):
    pass


def validate_config(config=None):
    """The config with defaults filled in; :class:`BurstError` names a bad option."""
    if config is not None and not isinstance(config, Mapping):
        raise BurstError("config: must be a mapping, got %r" % (config,))
    cfg = dict(DEFAULTS)
    for key, value in (config or {}).items():
        if key not in DEFAULTS:
            raise BurstError("config: unknown option %r (known: %s)" % (key, ", ".join(sorted(DEFAULTS))))
        cfg[key] = value
    for key in ("wait", "boot_delay", "margin"):
        if not _is_number(cfg[key]) or cfg[key] < 0:
            raise BurstError("%s: must be a number of seconds >= 0, got %r" % (key, cfg[key]))
    for key in ("cost_aware", "parallel_jobs"):
        if not isinstance(cfg[key], bool):
            raise BurstError("%s: must be true or false, got %r" % (key, cfg[key]))
    for key in ("home_only_complexes", "transfer_queues"):
        if isinstance(cfg[key], str) or not all(isinstance(x, str) for x in cfg[key] or ()):
            raise BurstError("%s: must be a list of names, got %r" % (key, cfg[key]))
        cfg[key] = list(cfg[key] or ())
    if not (isinstance(cfg["horizon_tasks"], int) and cfg["horizon_tasks"] >= 1):
        raise BurstError("horizon_tasks: must be an integer >= 1, got %r" % (cfg["horizon_tasks"],))
    return cfg


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def parse_seconds(text):
    """Seconds of a Grid Engine time value (``3600``, ``1:00:00``, ``0:30``); None if not one."""
    if _is_number(text):
        return float(text)
    if not isinstance(text, str) or not text.strip():
        return None
    parts = text.strip().split(":")
    if len(parts) > 3:
        return None
    total = 0.0
    for part in parts:
        try:
            value = float(part) if part else 0.0
        except ValueError:
            return None
        if value < 0 or math.isnan(value):
            return None
        total = total * 60 + value
    return total


class RunTimes(object):
    """The run-time distribution of the history: its mean and expected remaining times."""

    def __init__(self, history):
        runs = list(history or ())
        if not all(type(v) in (int, float) for v in runs):   # pylint: disable=unidiomatic-typecheck
            bad = next(v for v in runs if not _is_number(v))
            raise BurstError("history: run times must be numbers of seconds >= 0, got %r" % (bad,))
        runs = sorted(float(v) for v in runs)
        if runs and (runs[0] < 0 or math.isnan(sum(runs))):
            bad = next(v for v in runs if math.isnan(v) or v < 0)
            raise BurstError("history: run times must be numbers of seconds >= 0, got %r" % (bad,))
        self.runs = runs
        suffix = list(itertools.accumulate(reversed(runs)))
        suffix.reverse()
        suffix.append(0.0)
        self.suffix = suffix
        self.mean = suffix[0] / len(runs) if runs else None

    def __len__(self):
        return len(self.runs)

    def remaining(self, elapsed):
        """E[r - elapsed | r > elapsed] over the history; ``elapsed`` when no run is that long."""
        i = bisect.bisect_right(self.runs, elapsed)
        longer = len(self.runs) - i
        if not longer:
            return max(float(elapsed), 0.0)
        return self.suffix[i] / longer - elapsed


def pinned(job, cfg):
    """Why ``job`` must stay at home (a text), or None."""
    queues = job.get("hard_queues") or []
    if queues and not any(q.split("@", 1)[0] in cfg["transfer_queues"] for q in queues):
        return "pinned: hard queue request -q %s" % ",".join(queues)
    if not cfg["parallel_jobs"] and job.get("pe"):
        return "pinned: parallel job (-pe %s), which the transfer queue does not take" % job["pe"]
    requests = job.get("hard_requests") or {}
    for name in HOST_REQUESTS:
        if name in requests:
            return "pinned: hard host request -l %s=%s" % (name, requests[name])
    for name in cfg["home_only_complexes"]:
        if name in requests:
            return "pinned: hard request -l %s=%s of a complex only home has" % (name, requests[name])
    remote = requests.get("remote")
    if isinstance(remote, str) and remote.strip().lower() in ("false", "0", "no"):
        return "pinned: -l remote=%s" % remote
    return None


def partner_demand(sge):
    """Slots the partner has committed: running plus waiting jobs (held or error jobs do not count)."""
    if not isinstance(sge, Mapping):
        raise BurstError("partner facts must be ansible_facts.sge")
    used = sum(int(j.get("slots") or 1) for j in sge.get("running") or ())
    waiting = sum(int(j.get("slots") or 1) * int(j.get("task_count") or 1) for j in sge.get("pending") or ()
                  if not j.get("held") and not j.get("error"))
    return used + waiting


def _check_partner(partner):
    if not isinstance(partner, Mapping):
        raise BurstError("partner: a mapping with max_nodes, slots_per_node, committed_slots is required")
    out = {}
    for key in ("max_nodes", "slots_per_node", "committed_slots"):
        value = partner.get(key)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise BurstError("partner.%s: must be an integer >= 0, got %r" % (key, value))
        out[key] = value
    return out


def _fmt(seconds):
    if seconds == math.inf:
        return "unknown (past the horizon)"
    return "%.0f s" % seconds


def route(snapshot, history, partner, config=None):
    """Per-job decisions for the waiting jobs of the home cell.

    Returns ``{"decisions": [{"id", "task_count", "slots", "to": "partner"|"home",
    "expected_wait": seconds or None, "reason"}], "partner_room": slots left, "home_free": free
    slots now, "mean_run": the history's mean run time or None, "reason": a summary}``; one
    decision per pending job that is not held or in error, in the snapshot's order.
    """
    cfg = validate_config(config)
    part = _check_partner(partner)
    if not isinstance(snapshot, Mapping) or not _is_number(snapshot.get("taken_at")):
        raise BurstError("snapshot: ansible_facts.sge with taken_at is required")
    hosts = snapshot.get("hosts")
    if not isinstance(hosts, Mapping):
        raise BurstError("snapshot.hosts: must be a mapping")
    now = float(snapshot["taken_at"])
    model = history if isinstance(history, RunTimes) else RunTimes(history)
    free = 0
    for host in hosts.values():
        if set(host.get("states") or "") & set("uEdD"):
            continue
        free += max(0, int(host.get("slots_total") or 0) - int(host.get("slots_used") or 0))
    home_free = free
    mean_run = model.mean

    # the shadow schedule: (time slots come free, slots)
    releases = []
    for job in snapshot.get("running") or ():
        start = job.get("start_time")
        elapsed = max(0.0, now - float(start)) if _is_number(start) else 0.0
        left = model.remaining(elapsed)
        limit = parse_seconds((job.get("hard_requests") or {}).get("h_rt"))
        if limit is not None:
            left = min(left, max(0.0, limit - elapsed))
        releases.append((now + left, int(job.get("slots") or 1)))
    heapq.heapify(releases)
    clock = now
    placed = 0
    capacity = sum(int(h.get("slots_total") or 0) for h in hosts.values()
                   if not set(h.get("states") or "") & set("uEdD"))

    def shadow_start(slots, count, run):
        """Start of the first of ``count`` tasks of ``slots`` slots; places them all."""
        nonlocal clock, free, placed
        first = None
        for _i in range(count):
            if placed >= cfg["horizon_tasks"] or slots > capacity:
                return first if first is not None else math.inf
            while free < slots:
                if not releases:
                    return first if first is not None else math.inf
                when, back = heapq.heappop(releases)
                clock = max(clock, when)
                free += back
            free -= slots
            placed += 1
            heapq.heappush(releases, (clock + run, slots))
            if first is None:
                first = clock
        return first

    room = part["max_nodes"] * part["slots_per_node"] - part["committed_slots"]
    width = part["max_nodes"] * part["slots_per_node"]
    threshold = cfg["boot_delay"] + cfg["margin"]
    decisions = []
    sent = 0
    for job in snapshot.get("pending") or ():
        if job.get("held") or job.get("error"):
            continue
        slots = int(job.get("slots") or 1)
        count = int(job.get("task_count") or 1)
        need = slots * count
        submit = job.get("submit_time")
        waited = now - float(submit) if _is_number(submit) else 0.0
        run = mean_run if mean_run is not None else 0.0
        limit = parse_seconds((job.get("hard_requests") or {}).get("h_rt"))
        if limit is not None:
            run = min(run, limit) if mean_run is not None else limit
        entry = {"id": job.get("id"), "task_count": count, "slots": slots, "to": HOME, "expected_wait": None}
        decisions.append(entry)
        why = pinned(job, cfg)
        if why is None and slots > width:
            why = "wider than the partner: %d slots > %d nodes x %d" % (
                slots, part["max_nodes"], part["slots_per_node"])
        if why is None and waited < cfg["wait"]:
            why = "waited %.0f s < wait %.0f s" % (waited, cfg["wait"])
        if room <= 0 and why is None:
            # the partner is full and stays full for the rest of this call: no later job can
            # leave, so no estimate is needed (the shadow schedule stops here)
            entry["reason"] = "partner at its node cap: %d of %d slots committed" % (width - room, width)
            continue
        if why is not None:
            entry["reason"] = why
            start = shadow_start(slots, count, run)
            entry["expected_wait"] = max(0.0, start - now) if start != math.inf else None
            continue
        start = _peek(releases, free, clock, slots, capacity, placed, cfg["horizon_tasks"])
        expected = max(0.0, start - now) if start != math.inf else math.inf
        entry["expected_wait"] = expected if expected != math.inf else None
        if cfg["cost_aware"] and expected <= threshold:
            entry["reason"] = "expected home wait %s <= boot delay %.0f s + margin %.0f s" % (
                _fmt(expected), cfg["boot_delay"], cfg["margin"])
        elif room < need:
            entry["reason"] = "partner at its node cap: %d of %d slots committed, the job needs %d" % (
                width - room, width, need)
        else:
            room -= need
            sent += 1
            entry["to"] = PARTNER
            entry["reason"] = ("expected home wait %s > boot delay %.0f s + margin %.0f s" % (
                _fmt(expected), cfg["boot_delay"], cfg["margin"]) if cfg["cost_aware"]
                else "waited %.0f s >= wait %.0f s" % (waited, cfg["wait"]))
            continue
        shadow_start(slots, count, run)
    return {"decisions": decisions, "partner_room": room, "home_free": home_free, "mean_run": mean_run,
            "reason": "%d of %d waiting job(s) to the partner; %d partner slot(s) left" % (
                sent, len(decisions), room)}


def _peek(releases, free, clock, slots, capacity, placed, horizon):
    """When a task of ``slots`` slots would start in the shadow, without placing it."""
    if placed >= horizon or slots > capacity:
        return math.inf
    if free >= slots:
        return clock
    taken = []
    try:
        while free < slots:
            if not releases:
                return math.inf
            item = heapq.heappop(releases)
            taken.append(item)
            clock = max(clock, item[0])
            free += item[1]
        return clock
    finally:
        for item in taken:
            heapq.heappush(releases, item)
