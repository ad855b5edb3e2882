# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task and data rebalancing across nodes: Hydra's SpawnBalancer (seed 004) as pure functions.

A *task* is a unit of work with data on a node (a directory under a data root), belonging to a
job; it has one live copy and ``replicas`` replica copies on other hosts.  As in the seed, live
and replica copies are equivalent for balancing: both are "tasks" that take disk and can move.

Entry points (all pure: no I/O, no clock, no Ansible import; ``now`` is ``snapshot["taken_at"]``)::

    rebalance_host(snapshot, host, config)  # the seed's Host Rebalancing for one host
    rebalance_job(snapshot, job, config)    # the seed's Job Rebalancing: repairs first, then spread
    plan_round(snapshot, config)            # one cluster rebalance: host rebalancing of the most
                                            # out-of-line hosts in turn, sharing one set of limits
    plan_join(snapshot, host, config)       # a node joined: push its fair share onto it
    plan_drain(snapshot, host, config)      # a node will leave: move every copy off it

Each returns a plan ``{"moves": [...], "repairs": [...], "skipped": [...], "warnings": [...],
"summary": str}``; a move is ``{"job", "task", "source", "target", "bytes", "role", "rule",
"last_active", "reason"}``.  Every decision carries a reason a person can read.

Snapshot (docs/rebalance.md)::

    {"taken_at": 1700000000.0,
     "hosts": {"n1": {"disk_used": 400e9, "disk_free": 600e9, "active_tasks": 3,
                      "up": True, "readonly": False}, ...},
     "jobs": {"j1": {"replicas": 1, "max_per_host": None, "no_autobalance": False}, ...},
     "tasks": [{"job": "j1", "task": 0, "host": "n1", "bytes": 20e9, "role": "live",
                "last_active": 1699990000.0, "complete": True, "running": False}, ...]}

Job-level fields (replica count, per-host maximum, no-autobalance flag) live once per job in
``jobs`` rather than on every copy; a copy whose job is missing from ``jobs`` belongs to no
existing job (the seed's first eligibility condition).

Profiles: ``hydra`` takes every threshold at the value of Hydra's own ``SpawnBalancerConfig``
(the seed names the thresholds but gives no numbers) and is the seed's rules literally;
``default`` changes the limits that make a join or an overloaded host take many rounds, aims disk
balancing at a band around the cluster mean (``disk_target_band``: only hosts outside it move
data, and only what brings them inside), tolerates a wiggle of 2 copies in a job's fair share,
and leaves out the seed's load-evening extra copies (``active_extra_copies``), as documented per
option in docs/rebalance.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .options import option_check, with_given

PROFILES = ("default", "hydra")

# option -> (default profile, hydra profile, meaning)
_OPTIONS = {
    "tasks_moved_full_rebalance": (
        40, 10, "most task copies moved by one rebalance"),
    "bytes_moved_full_rebalance": (
        2000 * 1000 ** 3, 300 * 1000 ** 3, "most bytes moved by one rebalance"),
    "single_task_bytes_factor": (
        0.8, 0.8, "one moved copy may be at most this fraction of bytes_moved_full_rebalance"),
    "host_disk_factor": (
        0.75, 0.75, "move at most this fraction of a source's used bytes per rebalance, and never "
                    "fill a target above this fraction of its disk"),
    "tasks_moved_per_unspecified_host": (
        8, 4, "most copies moved to or from a partner host (one not being rebalanced) per rebalance"),
    "min_task_size_bytes": (
        50 * 1000 ** 2, 50 * 1000 ** 2, "copies smaller than this are not moved for disk balance"),
    "extreme_host_ratio": (
        1.05, 1.1, "a host is heavy above ratio x the reference host, light below reference / ratio"),
    "extreme_host_percentile": (
        0.5, 0.5, "the reference host: this percentile of hosts by load (0.5: the median)"),
    "alleviate_host_percentage": (
        0.2, 0.2, "partners of an extreme host: this fraction of hosts at the other extreme"),
    "active_task_cutoff": (
        86400, 86400, "seconds: a job is active if one of its copies was active this recently"),
    "fair_share_wiggle": (
        2, 0, "copies a host may hold beyond [floor, ceil] of copies/hosts before it is out of share"),
    "disk_target_band": (
        0.07, 0.0, "disk balancing aims every host at the cluster mean disk use +- this fraction of "
                   "it: heavy above mean x (1 + band), light below mean x (1 - band), and moves only "
                   "what brings a host inside; 0: the seed's rule (extreme_host_ratio around the "
                   "extreme_host_percentile host)"),
    "active_extra_copies": (
        False, True, "the seed's load-evening moves: a generally light host (few active copies) "
                     "takes one more copy of an active job within its fair share, a generally heavy "
                     "one gives one, and job rebalancing pushes one copy off a generally heavy host "
                     "at its maximum fair portion; they move data only to even out active copies"),
}

OPTIONS = ("profile",) + tuple(_OPTIONS)
_INT_OPTIONS = ("tasks_moved_full_rebalance", "bytes_moved_full_rebalance",
                "tasks_moved_per_unspecified_host", "min_task_size_bytes", "fair_share_wiggle")


def default_config(profile="default"):
    """Every option at its default for ``profile`` (``default`` or ``hydra``)."""
    if profile not in PROFILES:
        raise ValueError("profile: must be one of %s, got %r" % (", ".join(PROFILES), profile))
    col = 0 if profile == "default" else 1
    cfg = {"profile": profile}
    for name, row in _OPTIONS.items():
        cfg[name] = row[col]
    return cfg


def option_table():
    """``[(name, default, hydra, meaning)]`` for documentation."""
    return [(name, row[0], row[1], row[2]) for name, row in _OPTIONS.items()]


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate_config(config=None):
    """Fill in defaults and check every option; ``ValueError`` names the bad option."""
    config = {} if config is None else config
    if not isinstance(config, Mapping):
        raise ValueError("config: must be a mapping of options, got %s" % type(config).__name__)
    unknown = sorted(str(k) for k in config if k not in OPTIONS)
    if unknown:
        raise ValueError("%s: unknown option (known: %s)" % (", ".join(unknown), ", ".join(OPTIONS)))
    cfg = with_given(default_config(config.get("profile") or "default"), config)
    need = option_check(cfg)

    for name in _INT_OPTIONS:
        need(isinstance(cfg[name], int) and not isinstance(cfg[name], bool) and cfg[name] >= 0,
             name, "must be an integer >= 0")
    for name in ("single_task_bytes_factor", "host_disk_factor", "alleviate_host_percentage"):
        need(_is_number(cfg[name]) and 0 < cfg[name] <= 1, name, "must be a number > 0 and <= 1")
    need(_is_number(cfg["extreme_host_percentile"]) and 0 <= cfg["extreme_host_percentile"] <= 1,
         "extreme_host_percentile", "must be a number from 0 to 1")
    need(_is_number(cfg["extreme_host_ratio"]) and cfg["extreme_host_ratio"] >= 1,
         "extreme_host_ratio", "must be a number >= 1")
    need(_is_number(cfg["active_task_cutoff"]) and cfg["active_task_cutoff"] >= 0,
         "active_task_cutoff", "must be a number of seconds >= 0")
    need(isinstance(cfg["active_extra_copies"], bool), "active_extra_copies", "must be true or false")
    need(_is_number(cfg["disk_target_band"]) and 0 <= cfg["disk_target_band"] < 1,
         "disk_target_band", "must be a number >= 0 and < 1 (0: the seed's reference-host rule)")
    return cfg


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------

def fmt_bytes(value):
    """``2.5e9`` -> ``2.5 GB`` (SI units, like Hydra's limits)."""
    value = float(value)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return "%.1f %s" % (value / size, unit)
    return "%d B" % value


def task_label(job, task):
    return "%s/%s" % (job, task)


# --------------------------------------------------------------------------------------------
# the model: a mutable working copy of the snapshot, updated as moves are planned
# --------------------------------------------------------------------------------------------

def check_snapshot(snapshot):
    """Raise ``ValueError`` naming the bad field unless ``snapshot`` has the documented shape."""
    if not isinstance(snapshot, Mapping):
        raise ValueError("snapshot: must be a mapping, got %s" % type(snapshot).__name__)
    for key in ("hosts", "jobs"):
        if not isinstance(snapshot.get(key), Mapping):
            raise ValueError("snapshot: %r must be a mapping" % key)
    if not isinstance(snapshot.get("tasks"), list):
        raise ValueError("snapshot: 'tasks' must be a list")
    for name, host in snapshot["hosts"].items():
        if not isinstance(host, Mapping):
            raise ValueError("snapshot: hosts[%r] must be a mapping" % (name,))
        for key in ("disk_used", "disk_free"):
            if not _is_number(host.get(key)) or host[key] < 0:
                raise ValueError("snapshot: hosts[%r].%s must be a number of bytes >= 0" % (name, key))
    for index, task in enumerate(snapshot["tasks"]):
        if not isinstance(task, Mapping):
            raise ValueError("snapshot: tasks[%d] must be a mapping" % index)
        for key in ("job", "task", "host"):
            if task.get(key) is None:
                raise ValueError("snapshot: tasks[%d].%s is missing" % (index, key))
        if not _is_number(task.get("bytes")) or task["bytes"] < 0:
            raise ValueError("snapshot: tasks[%d].bytes must be a number >= 0" % index)
        if task.get("role", "live") not in ("live", "replica"):
            raise ValueError("snapshot: tasks[%d].role must be live or replica" % index)
    if snapshot.get("taken_at") is not None and not _is_number(snapshot["taken_at"]):
        raise ValueError("snapshot: 'taken_at' must be seconds since the epoch")


class Model:
    """Hosts, jobs and copies of one snapshot, kept consistent while moves are planned."""

    def __init__(self, snapshot, cfg):
        check_snapshot(snapshot)
        self.cfg = cfg
        self.now = snapshot.get("taken_at")
        self.jobs = {str(k): dict(v) for k, v in snapshot["jobs"].items()}
        self.hosts = {}
        for name, h in snapshot["hosts"].items():
            self.hosts[name] = {
                "used": float(h["disk_used"]), "cap": float(h["disk_used"]) + float(h["disk_free"]),
                "up": bool(h.get("up", True)), "readonly": bool(h.get("readonly", False)),
                "active": h.get("active_tasks")}
        self.copies = {}     # (job, task) -> {host: copy}
        self.on_host = {name: set() for name in self.hosts}   # host -> {(job, task)}
        self.count = {}      # job -> {host: copies of the job on the host}
        self.host_job = {}   # (host, job) -> {(job, task)}
        self.warnings = []
        self.active_jobs = set()
        cutoff = None if self.now is None else self.now - cfg["active_task_cutoff"]
        computed_active = {name: 0 for name in self.hosts}
        for t in snapshot["tasks"]:
            key = (str(t["job"]), t["task"])
            host = t["host"]
            if host not in self.hosts:
                self.warnings.append("%s: copy on unknown host %s ignored" % (task_label(*key), host))
                continue
            last = t.get("last_active")
            active = cutoff is not None and _is_number(last) and last >= cutoff
            copy = {"role": t.get("role", "live"), "bytes": float(t["bytes"]), "last_active": last,
                    "complete": bool(t.get("complete", True)), "running": bool(t.get("running", False)),
                    "active": active}
            self.copies.setdefault(key, {})[host] = copy
            self.on_host[host].add(key)
            self.host_job.setdefault((host, key[0]), set()).add(key)
            self.count.setdefault(key[0], {}).setdefault(host, 0)
            self.count[key[0]][host] += 1
            if active:
                self.active_jobs.add(key[0])
                computed_active[host] += 1
        for name, h in self.hosts.items():
            if not _is_number(h["active"]):
                h["active"] = computed_active[name]
        self._cache = {}

    def changed(self):
        """Forget cached references (after a move or a host state change)."""
        self._cache = {}

    # ---- hosts --------------------------------------------------------------------------------
    def usable(self):
        """Hosts that may give or take copies: up and writable, sorted by name."""
        if "usable" not in self._cache:
            self._cache["usable"] = sorted(n for n, h in self.hosts.items() if h["up"] and not h["readonly"])
        return list(self._cache["usable"])

    def disk_load(self, name):
        h = self.hosts[name]
        return h["used"] / h["cap"] if h["cap"] > 0 else 1.0

    def _reference(self, values):
        values = sorted(values)
        if not values:
            return 0.0
        pos = self.cfg["extreme_host_percentile"] * (len(values) - 1)
        low = int(math.floor(pos))
        high = min(low + 1, len(values) - 1)
        return values[low] + (values[high] - values[low]) * (pos - low)

    def disk_reference(self):
        if "disk" not in self._cache:
            self._cache["disk"] = self._reference(self.disk_load(n) for n in self.usable())
        return self._cache["disk"]

    def load_reference(self):
        if "load" not in self._cache:
            self._cache["load"] = self._reference(self.hosts[n]["active"] for n in self.usable())
        return self._cache["load"]

    def extreme(self, value, ref):
        ratio = self.cfg["extreme_host_ratio"]
        if ref <= 0:  # most hosts empty: any load is far above them
            return "heavy" if value > 0 else None
        if value > ref * ratio:
            return "heavy"
        if value < ref / ratio:
            return "light"
        return None

    def disk_mean(self):
        """The cluster's disk use: bytes used over capacity of the usable hosts (the level every
        host can reach at once; moves between usable hosts do not change it)."""
        if "mean" not in self._cache:
            usable = self.usable()
            cap = sum(self.hosts[n]["cap"] for n in usable)
            self._cache["mean"] = sum(self.hosts[n]["used"] for n in usable) / cap if cap > 0 else 0.0
        return self._cache["mean"]

    def band(self):
        """``(low, high)`` disk use of the target band around the mean, or None without a band."""
        band = self.cfg["disk_target_band"]
        if not band:
            return None
        mean = self.disk_mean()
        return mean * (1 - band), mean * (1 + band)

    def disk_side(self, load, ref=None):
        """``heavy``, ``light`` or None for a disk use fraction: outside the target band around the
        mean when ``disk_target_band`` is set, else the seed's ratio to the reference host."""
        band = self.band()
        if band is None:
            return self.extreme(load, self.disk_reference() if ref is None else ref)
        if band[1] <= 0:  # an empty cluster: any load is above it
            return "heavy" if load > 0 else None
        if load > band[1]:
            return "heavy"
        if load < band[0]:
            return "light"
        return None

    def disk_extreme(self, name, ref=None):
        return self.disk_side(self.disk_load(name), ref)

    def load_extreme(self, name, ref=None):
        return self.extreme(self.hosts[name]["active"], self.load_reference() if ref is None else ref)

    def generally(self, name):
        """``heavy`` if disk or active tasks are heavy, ``light`` if active tasks are light and the
        disk is not heavy, else None."""
        disk, load = self.disk_extreme(name), self.load_extreme(name)
        if "heavy" in (disk, load):
            return "heavy"
        return "light" if load == "light" else None

    # ---- jobs ---------------------------------------------------------------------------------
    def job_count(self, job, host):
        return self.count.get(job, {}).get(host, 0)

    def fair_share(self, job, hosts=None):
        """(floor, ceil) of the job's copies per usable host: 50 on 9 hosts -> (5, 6)."""
        if hosts is None:
            hosts = self.usable()
            cache = self._cache.setdefault("total", {})
            if job not in cache:
                cache[job] = sum(self.job_count(job, h) for h in hosts)
            total = cache[job]
        else:
            total = sum(self.job_count(job, h) for h in hosts)
        if not hosts:
            return 0, 0
        return total // len(hosts), -(-total // len(hosts))

    def task_size(self, key):
        sizes = [c["bytes"] for c in self.copies.get(key, {}).values() if c["complete"]]
        return max(sizes) if sizes else 0.0

    # ---- eligibility --------------------------------------------------------------------------
    def ineligible(self, key, source, target, size_rule=True, autobalance_rule=True):
        """None if copy ``key`` on ``source`` may move to ``target``, else the reason why not.

        The seed's five conditions, in its order, then the sanity checks every move needs.
        """
        job = key[0]
        info = self.jobs.get(job)
        if info is None:
            return "job %s does not exist" % job
        limit = info.get("max_per_host")
        if limit is not None and self.job_count(job, target) >= limit:
            return "%s already holds %d copies of job %s, its per-host maximum" % (
                target, self.job_count(job, target), job)
        copy = self.copies.get(key, {}).get(source)
        if copy is None:
            return "no copy on %s" % source
        if size_rule and copy["bytes"] < self.cfg["min_task_size_bytes"]:
            return "%s is below min_task_size_bytes %s" % (
                fmt_bytes(copy["bytes"]), fmt_bytes(self.cfg["min_task_size_bytes"]))
        if target in self.copies.get(key, {}):
            return "%s already holds a copy" % target
        if autobalance_rule and info.get("no_autobalance"):
            return "job %s forbids autobalancing" % job
        if copy["running"]:
            return "the task is running"
        if not copy["complete"]:
            return "the copy on %s is incomplete" % source
        host = self.hosts.get(target)
        if host is None or not host["up"] or host["readonly"]:
            return "%s is not usable (down, read-only or unknown)" % target
        if host["used"] + copy["bytes"] > host["cap"]:
            return "%s has only %s free" % (target, fmt_bytes(host["cap"] - host["used"]))
        return None

    # ---- apply --------------------------------------------------------------------------------
    def apply(self, key, source, target):
        copy = self.copies[key].pop(source)
        self.copies[key][target] = copy
        self.on_host[source].discard(key)
        self.on_host[target].add(key)
        self.host_job[(source, key[0])].discard(key)
        self.host_job.setdefault((target, key[0]), set()).add(key)
        counts = self.count[key[0]]
        counts[source] -= 1
        counts[target] = counts.get(target, 0) + 1
        self.hosts[source]["used"] -= copy["bytes"]
        self.hosts[target]["used"] += copy["bytes"]
        if copy["active"]:
            self.hosts[source]["active"] -= 1
            self.hosts[target]["active"] += 1
        self._cache.pop("disk", None)
        self._cache.pop("load", None)
        self._cache.pop("mean", None)  # unchanged between usable hosts, not off a draining one
        return copy


class Budget:
    """The per-rebalance limits on copies and bytes moved, and on partner hosts."""

    def __init__(self, cfg, limited=True):
        self.cfg = cfg
        self.limited = limited
        self.tasks = 0
        self.bytes = 0.0
        self.partner = {}
        self.off = {}

    def exhausted(self):
        return self.limited and self.tasks >= self.cfg["tasks_moved_full_rebalance"]

    def refuse(self, size, source, target, specified, model):
        """None if the limits allow moving ``size`` bytes from ``source`` to ``target``."""
        if not self.limited:
            return None
        cfg = self.cfg
        if self.tasks >= cfg["tasks_moved_full_rebalance"]:
            return "tasks_moved_full_rebalance %d reached" % cfg["tasks_moved_full_rebalance"]
        if self.bytes + size > cfg["bytes_moved_full_rebalance"]:
            return "bytes_moved_full_rebalance %s would be exceeded" % fmt_bytes(cfg["bytes_moved_full_rebalance"])
        if size > cfg["single_task_bytes_factor"] * cfg["bytes_moved_full_rebalance"]:
            return "%s is above single_task_bytes_factor x bytes_moved_full_rebalance" % fmt_bytes(size)
        for host in (source, target):
            if host not in specified and self.partner.get(host, 0) >= cfg["tasks_moved_per_unspecified_host"]:
                return "%s already moved tasks_moved_per_unspecified_host %d copies" % (
                    host, cfg["tasks_moved_per_unspecified_host"])
        src = model.hosts[source]
        if self.off.get(source, 0.0) + size > cfg["host_disk_factor"] * (src["used"] + self.off.get(source, 0.0)):
            return "would move more than host_disk_factor of %s's bytes" % source
        tgt = model.hosts[target]
        if tgt["used"] + size > cfg["host_disk_factor"] * tgt["cap"]:
            return "would fill %s above host_disk_factor %.2f" % (target, cfg["host_disk_factor"])
        return None

    def take(self, size, source, target, specified):
        self.tasks += 1
        self.bytes += size
        self.off[source] = self.off.get(source, 0.0) + size
        for host in (source, target):
            if host not in specified:
                self.partner[host] = self.partner.get(host, 0) + 1


def _move(model, key, source, target, rule, reason):
    copy = model.apply(key, source, target)
    return {"job": key[0], "task": key[1], "source": source, "target": target,
            "bytes": int(copy["bytes"]), "role": copy["role"], "rule": rule,
            "last_active": copy["last_active"],
            "reason": "move %s (%s, %s) %s -> %s: %s" % (
                task_label(*key), copy["role"], fmt_bytes(copy["bytes"]), source, target, reason)}


def _plan(moves=(), repairs=(), skipped=(), warnings=(), what="rebalance"):
    moves, repairs = list(moves), list(repairs)
    total = sum(m["bytes"] for m in moves)
    if moves or repairs:
        summary = "%s: %d moves (%s)%s" % (what, len(moves), fmt_bytes(total),
                                           ", %d repairs" % len(repairs) if repairs else "")
    else:
        summary = "%s: no change" % what
    return {"moves": moves, "repairs": repairs, "skipped": list(skipped), "warnings": list(warnings),
            "bytes": int(total), "summary": summary}


# --------------------------------------------------------------------------------------------
# disk space balancing
# --------------------------------------------------------------------------------------------

def _partners(model, host, side):
    """The hosts at the other extreme: the ``alleviate_host_percentage`` lightest (side=light)
    or heaviest (side=heavy) usable hosts, at least one, never ``host`` itself."""
    others = [n for n in model.usable() if n != host]
    others.sort(key=lambda n: (model.disk_load(n), n), reverse=(side == "heavy"))
    keep = max(1, int(math.ceil(model.cfg["alleviate_host_percentage"] * len(others))))
    return others[:keep]


def _furthest_partner(model, host, side, partners):
    """``(source, target)`` of the next move of ``host`` (``side``: heavy or light) with the partner
    furthest on the other side: the lightest when ``host`` is heavy, the heaviest when it is
    light. Sorts ``partners`` in that order (the chosen partner first)."""
    if side == "heavy":
        partners.sort(key=lambda n: (model.disk_load(n), n))
        return host, partners[0]
    partners.sort(key=lambda n: (-model.disk_load(n), n))
    return partners[0], host


def _eligible(model, key, source, target, skipped):
    """True when the copy ``key`` may move from ``source`` to ``target``; otherwise the reason
    joins ``skipped`` (the first 50 reasons only) and the answer is False."""
    why = model.ineligible(key, source, target)
    if why and len(skipped) < 50:
        skipped.append("%s on %s not moved to %s: %s" % (task_label(*key), source, target, why))
    return not why


def _pick_for_disk(model, source, target, room, skipped):
    """The copy on ``source`` to move to ``target``: the largest eligible copy not above ``room``
    bytes, preferring one whose job the move spreads better (source holds 2+ more than target)."""
    best, best_key = None, None
    room = room * (1 + 1e-9) + 1  # fractions of a byte from the load ratios are not a reason
    for key in model.on_host[source]:
        copy = model.copies[key][source]
        if copy["bytes"] > room:
            continue
        if not _eligible(model, key, source, target, skipped):
            continue
        job = key[0]
        spreads = model.job_count(job, source) - model.job_count(job, target) >= 2
        rank = (spreads, copy["bytes"], str(key))
        if best is None or rank > best:
            best, best_key = rank, key
    return best_key


def _disk_balance(model, host, side, budget, specified, moves, skipped, rule="disk", stop_at_mean=False):
    """Move eligible copies between ``host`` (``side``: heavy or light) and hosts at the other
    extreme until ``host`` is no longer extreme (or, with ``stop_at_mean``, reaches the mean)."""
    ref = model.disk_reference()
    usable = model.usable()
    mean = sum(model.disk_load(n) for n in usable) / len(usable) if usable else 0.0
    partners = _partners(model, host, "light" if side == "heavy" else "heavy")
    ratio = model.cfg["extreme_host_ratio"]
    while partners and not budget.exhausted():
        if stop_at_mean:
            done = model.disk_load(host) >= mean if side == "light" else model.disk_load(host) <= mean
        else:
            done = model.disk_extreme(host, ref) != side
        if done:
            return
        # the partner furthest on the other side, then the amount that moves neither past the mean
        source, target = _furthest_partner(model, host, side, partners)
        s, t = model.hosts[source], model.hosts[target]
        room = min((model.disk_load(source) - mean) * s["cap"], (mean - model.disk_load(target)) * t["cap"])
        key = _pick_for_disk(model, source, target, room, skipped)
        why_not = None
        if key is not None:
            why_not = budget.refuse(model.copies[key][source]["bytes"], source, target, specified, model)
        if key is None or why_not:
            skipped.append("%s: no further move %s -> %s (%s)" % (
                host, source, target, why_not or "no eligible copy of at most %s" % fmt_bytes(max(room, 0))))
            partners.remove(source if side == "light" else target)
            continue
        size = model.copies[key][source]["bytes"]
        before_s, before_t = model.disk_load(source), model.disk_load(target)
        budget.take(size, source, target, specified)
        if rule == "join":
            why = "%s joined; disk %.1f%% -> %.1f%% (cluster mean %.1f%%), from the heaviest host %s" % (
                host, 100 * before_t, 100 * model.hosts[target]["used"] / t["cap"] if t["cap"] else 0,
                100 * mean, source)
        else:
            why = "disk balancing: %s is %s (%.1f%% used vs reference %.1f%%, ratio %.2f); %s %.1f%% -> %.1f%%, %s %.1f%% -> %.1f%%" % (
                host, side, 100 * (before_s if side == "heavy" else before_t), 100 * ref, ratio,
                source, 100 * before_s, 100 * (s["used"] - size) / s["cap"],
                target, 100 * before_t, 100 * (t["used"] + size) / t["cap"])
        moves.append(_move(model, key, source, target, rule, why))


def _share_fix(model, job, source, target):
    """True when moving a copy of ``job`` from ``source`` to ``target`` also brings an active job
    toward its fair share (the source above it or the target below it, and the move spreads the
    job): a disk move that saves active task balancing a move of its own."""
    if job not in model.active_jobs:
        return False
    floor, ceil = model.fair_share(job)
    n_src, n_tgt = model.job_count(job, source), model.job_count(job, target)
    return n_src - n_tgt >= 2 and (n_src > ceil or n_tgt < floor)


def _pick_for_band(model, source, target, room, need, skipped):
    """The copy on ``source`` to move to ``target`` (at most ``room`` bytes) when ``need`` bytes
    would get a host inside the band: the smallest copy of at least ``need`` (the least
    overshoot); if none is that large, the largest, preferring a copy that brings an active job
    toward its fair share, then an active copy from a host with more active copies than the
    target, then one whose job the move spreads better."""
    finish, other = None, None
    room = room * (1 + 1e-9) + 1
    for key in model.on_host[source]:
        copy = model.copies[key][source]
        size = copy["bytes"]
        if size > room:
            continue
        if not _eligible(model, key, source, target, skipped):
            continue
        job = key[0]
        if size >= need:
            rank = (size, not _share_fix(model, job, source, target), str(key))
            if finish is None or rank < finish[0]:
                finish = (rank, key)
        else:
            spreads = model.job_count(job, source) - model.job_count(job, target) >= 2
            evens = copy["active"] and model.hosts[source]["active"] - model.hosts[target]["active"] >= 2
            rank = (_share_fix(model, job, source, target), evens, spreads, size, str(key))
            if other is None or rank > other[0]:
                other = (rank, key)
    best = finish or other
    return None if best is None else best[1]


def _band_balance(model, host, side, budget, specified, moves, skipped):
    """Disk space balancing with ``disk_target_band``: move only what brings ``host`` inside
    [mean x (1 - band), mean x (1 + band)].  Partners are the ``alleviate_host_percentage`` of
    hosts at the other extreme; each move takes the partner furthest out, never moves ``host``
    past the mean nor the partner out of the band, and prefers the copy that brings a partner
    outside the band just inside it too, so every byte moved serves an out-of-band host (bytes
    moved approach the least possible: the larger of the bytes above the band and below it)."""
    mean = model.disk_mean()
    low, high = model.band()
    partners = _partners(model, host, "light" if side == "heavy" else "heavy")
    h = model.hosts[host]
    while partners and not budget.exhausted():
        load = model.disk_load(host)
        need = (load - high if side == "heavy" else low - load) * h["cap"]
        if need <= 0:
            return
        source, target = _furthest_partner(model, host, side, partners)
        s, t = model.hosts[source], model.hosts[target]
        # the host never passes the mean (that would be bytes beyond its need); the partner may,
        # as long as it stays inside the band
        if side == "heavy":
            room = min((load - mean) * h["cap"], (high - model.disk_load(target)) * t["cap"])
        else:
            room = min((mean - load) * h["cap"], (model.disk_load(source) - low) * s["cap"])
        if room <= 0:
            partners.remove(source if side == "light" else target)
            continue  # the partner is at the far edge of the band: nothing to exchange
        # a partner outside the band on the other side takes or gives only what brings it inside
        # too where a copy allows: its remaining excess (or shortfall) is left to other hosts
        partner = target if side == "heavy" else source
        p_load, p_cap = model.disk_load(partner), model.hosts[partner]["cap"]
        p_need = (low - p_load if side == "heavy" else p_load - high) * p_cap
        key = _pick_for_band(model, source, target, room, min(need, p_need) if p_need > 0 else need, skipped)
        why_not = None
        if key is not None:
            why_not = budget.refuse(model.copies[key][source]["bytes"], source, target, specified, model)
        if key is None or why_not:
            skipped.append("%s: no further move %s -> %s (%s)" % (
                host, source, target, why_not or "no eligible copy of at most %s" % fmt_bytes(room)))
            partners.remove(source if side == "light" else target)
            continue
        size = model.copies[key][source]["bytes"]
        before_s, before_t = model.disk_load(source), model.disk_load(target)
        budget.take(size, source, target, specified)
        why = ("disk balancing: %s is %s (%.1f%% used, outside the band %.1f%%-%.1f%% around the mean "
               "%.1f%%; %s to go); %s %.1f%% -> %.1f%%, %s %.1f%% -> %.1f%%" % (
                   host, side, 100 * load, 100 * low, 100 * high, 100 * mean, fmt_bytes(need),
                   source, 100 * before_s, 100 * (s["used"] - size) / s["cap"],
                   target, 100 * before_t, 100 * (t["used"] + size) / t["cap"]))
        moves.append(_move(model, key, source, target, "disk", why))


# --------------------------------------------------------------------------------------------
# active task balancing
# --------------------------------------------------------------------------------------------

def _pick_smallest(model, source, target, job, skipped):
    """The smallest eligible copy of ``job`` on ``source`` that may go to ``target``."""
    best = None
    for key in model.host_job.get((source, job), ()):
        if not _eligible(model, key, source, target, skipped):
            continue
        rank = (model.copies[key][source]["bytes"], str(key))
        if best is None or rank < best[0]:
            best = (rank, key)
    return None if best is None else best[1]


def _target_ok(model, target, size, disk_ref):
    """Active-task moves must not make a disk extreme ("no tasks onto a host with high load")."""
    h = model.hosts[target]
    return h["cap"] > 0 and model.disk_side((h["used"] + size) / h["cap"], disk_ref) != "heavy"


def _source_ok(model, source, size, disk_ref):
    h = model.hosts[source]
    return h["cap"] > 0 and model.disk_side((h["used"] - size) / h["cap"], disk_ref) != "light"


def _one_job_move(model, job, host, direction, budget, specified, skipped, disk_ref, why):
    """Move one copy of ``job`` off ``host`` (direction push) onto the usable host holding the
    fewest copies of the job, or onto ``host`` (pull) from the one holding the most."""
    others = [n for n in model.usable() if n != host]
    if direction == "push":
        others.sort(key=lambda n: (model.job_count(job, n), model.disk_load(n), n))
    else:
        others.sort(key=lambda n: (-model.job_count(job, n), -model.disk_load(n), n))
    for other in others:
        source, target = (host, other) if direction == "push" else (other, host)
        if direction == "push" and model.job_count(job, target) + 1 >= model.job_count(job, source):
            break  # no host would hold fewer copies of the job than the source after the move
        if direction == "pull" and model.job_count(job, source) - 1 <= model.job_count(job, target):
            break
        if model.generally(target) == "heavy":
            continue
        key = _pick_smallest(model, source, target, job, skipped)
        if key is None:
            continue
        size = model.copies[key][source]["bytes"]
        if not (_target_ok(model, target, size, disk_ref) and _source_ok(model, source, size, disk_ref)):
            skipped.append("%s: %s -> %s would make a disk extreme" % (task_label(*key), source, target))
            continue
        refused = budget.refuse(size, source, target, specified, model)
        if refused:
            skipped.append("%s: %s -> %s not moved: %s" % (task_label(*key), source, target, refused))
            continue
        budget.take(size, source, target, specified)
        return _move(model, key, source, target, "active", "%s; %s holds %d, %s holds %d copies of job %s" % (
            why, source, model.job_count(job, source), target, model.job_count(job, target), job))
    return None


def _active_balance(model, host, budget, specified, moves, skipped):
    """The seed's Active Task Balancing of ``host`` over every job active within the cutoff:
    a job out of its fair share is moved back into it; within it, the extra copy for a generally
    light or heavy host only with ``active_extra_copies``."""
    disk_ref = model.disk_reference()
    wiggle = model.cfg["fair_share_wiggle"]
    extra = model.cfg["active_extra_copies"]
    for job in sorted(model.active_jobs):
        info = model.jobs.get(job)
        if info is None or info.get("no_autobalance"):
            continue
        while not budget.exhausted():
            floor, ceil = model.fair_share(job)
            count = model.job_count(job, host)
            general = model.generally(host)
            fair = "fair share of job %s is %d-%d copies per host (wiggle %d)" % (job, floor, ceil, wiggle)
            if count > ceil + wiggle:
                move = _one_job_move(model, job, host, "push", budget, specified, skipped, disk_ref,
                                     "active tasks: %s has too many (%d); %s" % (host, count, fair))
            elif count < floor - wiggle:
                move = _one_job_move(model, job, host, "pull", budget, specified, skipped, disk_ref,
                                     "active tasks: %s has too few (%d); %s" % (host, count, fair))
            elif not extra:
                break
            elif general == "light" and count < ceil + wiggle and count <= floor:
                move = _one_job_move(model, job, host, "pull", budget, specified, skipped, disk_ref,
                                     "active tasks: %s is lightly loaded (%d active); %s" % (
                                         host, model.hosts[host]["active"], fair))
                if move:
                    moves.append(move)
                break  # one additional copy at most
            elif general == "heavy" and count > floor - wiggle and count >= ceil:
                move = _one_job_move(model, job, host, "push", budget, specified, skipped, disk_ref,
                                     "active tasks: %s is heavily loaded (%d active); %s" % (
                                         host, model.hosts[host]["active"], fair))
                if move:
                    moves.append(move)
                break
            else:
                break
            if move is None:
                break
            moves.append(move)


# --------------------------------------------------------------------------------------------
# host rebalancing
# --------------------------------------------------------------------------------------------

def _host_rebalance(model, host, budget, moves, skipped, specified):
    side = model.disk_extreme(host)
    if side and model.band() is not None:
        _band_balance(model, host, side, budget, specified, moves, skipped)
    elif side:
        _disk_balance(model, host, side, budget, specified, moves, skipped)
    else:
        _active_balance(model, host, budget, specified, moves, skipped)


def _check_host(model, host):
    if host not in model.hosts:
        raise ValueError("host: %r is not in the snapshot" % (host,))


def rebalance_host(snapshot, host, config=None):
    """The seed's Host Rebalancing for ``host``: disk space balancing when its disk use is far
    from the reference host's, else active task balancing."""
    cfg = validate_config(config)
    model = Model(snapshot, cfg)
    _check_host(model, host)
    moves, skipped = [], []
    budget = Budget(cfg)
    side = model.disk_extreme(host)
    band = model.band()
    if band is None:
        where = "reference %.1f%%" % (100 * model.disk_reference())
    else:
        where = "band %.1f%%-%.1f%% around the mean %.1f%%" % (100 * band[0], 100 * band[1], 100 * model.disk_mean())
    note = "%s: disk %.1f%% used, %s -> %s" % (
        host, 100 * model.disk_load(host), where,
        "disk space balancing (%s)" % side if side else "active task balancing")
    _host_rebalance(model, host, budget, moves, skipped, {host})
    plan = _plan(moves, skipped=skipped, warnings=model.warnings, what="rebalance host %s" % host)
    plan["decision"] = note
    return plan


def plan_round(snapshot, config=None):
    """One cluster-wide rebalance: host rebalancing of every usable host, the most out-of-line
    first (disk-extreme hosts by distance from the reference, or from the mean with
    ``disk_target_band``, then the others), sharing one set of per-rebalance limits.  Call again
    on the next snapshot until it plans no move."""
    cfg = validate_config(config)
    model = Model(snapshot, cfg)
    moves, skipped = [], []
    budget = Budget(cfg)
    ref = model.disk_reference() if model.band() is None else model.disk_mean()

    def order(name):
        load = model.disk_load(name)
        off = abs(math.log(load / ref)) if ref > 0 and load > 0 else float("inf")
        return (model.disk_extreme(name, ref) is None, -off, name)

    hosts = sorted(model.usable(), key=order)
    # with a target band every host outside it is being rebalanced in this round: the
    # tasks_moved_per_unspecified_host limit protects only the hosts inside the band
    outside = set() if model.band() is None else {n for n in hosts if model.disk_extreme(n)}
    for host in hosts:
        if budget.exhausted():
            break
        _host_rebalance(model, host, budget, moves, skipped, outside | {host})
    return _plan(moves, skipped=skipped, warnings=model.warnings, what="rebalance round")


# --------------------------------------------------------------------------------------------
# job rebalancing
# --------------------------------------------------------------------------------------------

def _repairs(model, job):
    """Missing or incomplete copies of each task of ``job`` (the seed's first phase)."""
    info = model.jobs[job]
    want = 1 + int(info.get("replicas", 0) or 0)
    repairs, warnings = [], []
    keys = sorted((k for k in model.copies if k[0] == job), key=lambda k: str(k[1]))
    for key in keys:
        copies = model.copies[key]
        complete = sorted(h for h, c in copies.items() if c["complete"])
        if not complete:
            warnings.append("%s has no complete copy; it cannot be repaired from this cluster" % task_label(*key))
            continue
        live = [h for h in complete if copies[h]["role"] == "live"]
        source = live[0] if live else complete[0]
        size = copies[source]["bytes"]
        for host in sorted(h for h, c in copies.items() if not c["complete"]):
            if model.hosts[host]["up"] and not model.hosts[host]["readonly"]:
                repairs.append({"action": "resync", "job": key[0], "task": key[1], "source": source,
                                "target": host, "bytes": int(size),
                                "reason": "resync %s on %s from %s: its %s copy is incomplete" % (
                                    task_label(*key), host, source, copies[host]["role"])})
        missing = want - len(copies)
        if not live:
            warnings.append("%s has no live copy; promote one of %s" % (task_label(*key), ", ".join(complete)))
        for _i in range(max(0, missing)):
            cands = []
            for host in model.usable():
                if host in copies:
                    continue
                limit = info.get("max_per_host")
                if limit is not None and model.job_count(job, host) >= limit:
                    continue
                h = model.hosts[host]
                if h["used"] + size > h["cap"]:
                    continue
                cands.append((model.job_count(job, host), model.disk_load(host), host))
            if not cands:
                warnings.append("%s lacks %d replica(s) and no host can take one" % (task_label(*key), missing))
                break
            target = min(cands)[2]
            repairs.append({"action": "replicate", "job": key[0], "task": key[1], "source": source,
                            "target": target, "bytes": int(size),
                            "reason": "replicate %s from %s to %s: %d of %d copies (1 live + %d replicas)" % (
                                task_label(*key), source, target, len(copies), want, want - 1)})
            # count the new replica so the next one goes elsewhere
            copies[target] = {"role": "replica", "bytes": size, "complete": True, "running": False,
                              "active": False, "last_active": None}
            model.on_host[target].add(key)
            model.host_job.setdefault((target, job), set()).add(key)
            model.count[job][target] = model.count[job].get(target, 0) + 1
            model.hosts[target]["used"] += size
            model.changed()
    return repairs, warnings


def rebalance_job(snapshot, job, config=None):
    """The seed's Job Rebalancing: repair replica counts and incomplete copies first; only when
    none is needed, even out the job's copies across hosts."""
    cfg = validate_config(config)
    model = Model(snapshot, cfg)
    job = str(job)
    if job not in model.jobs:
        raise ValueError("job: %r is not in the snapshot" % (job,))
    repairs, warnings = _repairs(model, job)
    if repairs:
        return _plan(repairs=repairs, warnings=model.warnings + warnings,
                     what="rebalance job %s (repairs first, spread not checked)" % job)
    moves, skipped = [], []
    budget = Budget(cfg)
    if model.jobs[job].get("no_autobalance"):
        skipped.append("job %s forbids autobalancing" % job)
        return _plan(skipped=skipped, warnings=model.warnings + warnings, what="rebalance job %s" % job)
    disk_ref = model.disk_reference()
    wiggle = cfg["fair_share_wiggle"]
    hosts = sorted(model.usable(), key=lambda n: (-model.job_count(job, n), n))
    for host in hosts:
        while not budget.exhausted():
            floor, ceil = model.fair_share(job)
            count = model.job_count(job, host)
            fair = "fair share of job %s is %d-%d copies per host (wiggle %d)" % (job, floor, ceil, wiggle)
            if count > ceil + wiggle:
                why = "job rebalancing: %s holds %d, above the fair share; %s" % (host, count, fair)
            elif (count == ceil and count > floor and cfg["active_extra_copies"]
                  and model.generally(host) == "heavy"):
                why = "job rebalancing: %s holds the maximum fair portion (%d) and is heavily loaded; %s" % (
                    host, count, fair)
            else:
                break
            move = _one_job_move(model, job, host, "push", budget, {host}, skipped, disk_ref, why)
            if move is None:
                break
            moves.append(move)
            if count <= ceil + wiggle:
                break  # the heavily-loaded rule pushes one copy
    return _plan(moves, skipped=skipped, warnings=model.warnings + warnings, what="rebalance job %s" % job)


# --------------------------------------------------------------------------------------------
# elastic tie-in
# --------------------------------------------------------------------------------------------

def plan_join(snapshot, host, config=None):
    """A node joined: plan its fair share of disk (up to the cluster's mean disk use), pulled from
    the heaviest hosts with the usual eligibility, spreading jobs.  The per-rebalance limits do not
    apply (the executor may run the plan in batches); ``host`` must be up and writable."""
    cfg = validate_config(config)
    model = Model(snapshot, cfg)
    _check_host(model, host)
    if host not in model.usable():
        raise ValueError("host: %r is down or read-only; it cannot take tasks" % (host,))
    moves, skipped = [], []
    budget = Budget(cfg, limited=False)
    _disk_balance(model, host, "light", budget, {host}, moves, skipped, rule="join", stop_at_mean=True)
    return _plan(moves, skipped=skipped, warnings=model.warnings, what="join %s" % host)


def plan_drain(snapshot, host, config=None):
    """A node will leave: move every copy off it so each task keeps its copy count.  Size and
    no-autobalance rules do not apply (the copy would be lost), nor do the per-rebalance limits;
    each copy goes to the usable host with the fewest copies of its job, then the lightest disk.
    ``complete`` is False when a copy cannot be placed or is running (node_leave must wait)."""
    cfg = validate_config(config)
    model = Model(snapshot, cfg)
    _check_host(model, host)
    moves, skipped, warnings = [], [], list(model.warnings)
    blocked = []
    model.hosts[host]["readonly"] = True  # nothing may land on the leaving host
    model.changed()
    keys = sorted(model.on_host[host], key=lambda k: (-model.copies[k][host]["bytes"], str(k)))
    for key in keys:
        job = key[0]
        copy = model.copies[key][host]
        targets = sorted(model.usable(), key=lambda n: (model.job_count(job, n), model.disk_load(n), n))
        chosen, reasons = None, []
        for target in targets:
            why = model.ineligible(key, host, target, size_rule=False, autobalance_rule=False)
            if why is None:
                chosen = target
                break
            reasons.append(why)
        if chosen is None:
            why = "no host can take it (%s)" % (reasons[0] if reasons else "no usable host")
            if copy["running"]:
                why = "the task is running; drain again when it stops"
            blocked.append("%s on %s: %s" % (task_label(*key), host, why))
            continue
        moves.append(_move(model, key, host, chosen, "drain", "%s will leave; %s to the host with fewest "
                           "copies of job %s (%d), disk %.1f%%" % (
                               host, copy["role"], job, model.job_count(job, chosen) - 1,
                               100 * model.disk_load(chosen))))
    plan = _plan(moves, skipped=skipped + blocked, warnings=warnings, what="drain %s" % host)
    plan["complete"] = not blocked
    plan["blocked"] = blocked
    return plan


# --------------------------------------------------------------------------------------------
# helpers for callers (benchmark, executor)
# --------------------------------------------------------------------------------------------

def apply_plan(snapshot, plan):
    """A new snapshot with ``plan``'s moves applied (pure; used by the benchmark and tests)."""
    tasks = [dict(t) for t in snapshot["tasks"]]
    hosts = {n: dict(h) for n, h in snapshot["hosts"].items()}
    where = {(str(t["job"]), t["task"], t["host"]): t for t in tasks}
    for m in plan["moves"]:
        t = where.pop((str(m["job"]), m["task"], m["source"]))
        t["host"] = m["target"]
        where[(str(m["job"]), m["task"], m["target"])] = t
        for name, sign in ((m["source"], -1), (m["target"], 1)):
            hosts[name]["disk_used"] += sign * t["bytes"]
            hosts[name]["disk_free"] -= sign * t["bytes"]
            hosts[name].pop("active_tasks", None)
    out = dict(snapshot)
    out["tasks"] = tasks
    out["hosts"] = hosts
    return out


def replica_violations(snapshot):
    """``[reason]`` for each task without 1 + replicas complete copies on distinct hosts, or with
    more copies on a host than the job's per-host maximum."""
    out = []
    per_task, per_job_host = {}, {}
    for t in snapshot["tasks"]:
        key = (str(t["job"]), t["task"])
        per_task.setdefault(key, []).append(t)
        jh = (key[0], t["host"])
        per_job_host[jh] = per_job_host.get(jh, 0) + 1
    for key, copies in sorted(per_task.items(), key=lambda kv: str(kv[0])):
        info = snapshot["jobs"].get(key[0], {})
        want = 1 + int(info.get("replicas", 0) or 0)
        hosts = {c["host"] for c in copies if c.get("complete", True)}
        if len(hosts) < want or len(hosts) < len(copies):
            out.append("%s: %d complete copies on distinct hosts, %d wanted" % (task_label(*key), len(hosts), want))
    for (job, host), n in sorted(per_job_host.items()):
        limit = snapshot["jobs"].get(job, {}).get("max_per_host")
        if limit is not None and n > limit:
            out.append("job %s: %d copies on %s, per-host maximum %d" % (job, n, host, limit))
    return out
