# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Elastic scaling policy: grow on a waiting queue, shrink when idle.

This is StarCluster's elastic load balancer (``starcluster loadbalance``) as a pure function::

    plan = decide(snapshot, state, config, now)

``snapshot`` is ``ansible_facts.sge`` as produced by ``gridengine.balancer.sge_queue_facts``
(docs/snapshot.md), ``state`` is what the previous call returned in ``plan["state"]`` (``{}`` on
the first poll), ``config`` holds the options below, ``now`` is the qmaster's clock (normally
``snapshot["taken_at"]``).  No clock, no I/O, no Ansible import: the same function runs in the
playbook (action plugin ``elastic_plan``), in unit tests and in the trace simulator.

Three profiles:

``starcluster``
    The criteria of StarCluster's documentation, exactly as written, weaknesses included.  Useful
    as a baseline for comparisons.
``default``
    The same idea with StarCluster's known weaknesses fixed.  Every fix is marked ``FIX(n)`` in the
    parts below and listed in docs/elastic.md.
``parallelcluster``
    AWS ParallelCluster v2's jobwatcher/nodewatcher rules for Grid Engine, as a second baseline for
    the trace simulator (docs/simulator.md): every poll grow to ``busy nodes + ceil(waiting slots /
    slots per node)``; remove a node idle for ``idle_time`` while nothing that fits waits.

Every plan item carries a reason a person can read.

This module holds the options, the entry points and the assembly of the plan; each concept lives
in a module beside it (docs/architecture.md):

``elastic_census.py``
    the census of the snapshot: hosts, nodes and their records, jobs per host, booting nodes,
    limits, the last change, the shape of a new node;
``elastic_rules_default.py``, ``elastic_rules_starcluster.py``, ``elastic_rules_parallelcluster.py``
    each profile's waiting jobs, growth and removal checks;
``elastic_removal.py``
    the removal loop the profiles share (master, ownership, running jobs, the billing's idle rule);
``elastic_state.py``
    the state: reading it, the clocks it keeps, the job history, the statistics, the new state;
``elastic_common.py``
    constants and small helpers.

Every name other code imports from here (``decide``, ``validate_config``, ``PENDING_RECORDS_LIMIT``,
...) is still importable from this module.

The state also remembers the hosts that left the cluster less than ``name_reuse_time`` seconds ago
(``removed``); the plan lists them as ``recently_removed``, and the poll does not give those names to
new nodes (filter ``next_node_names``, ``avoid``): the qmaster caches failed lookups of a removed
name, and a node joined under it again waits for one more registration round (docs/node-join-leave.md).

A worker node whose state Grid Engine does not know (load ``-`` or queue state ``u``: its execd
died, its machine vanished, or the network between them broke) is kept while it is unknown, since
its idleness cannot be seen.  Once it has been unknown for ``unknown_timeout`` seconds over polls
without a gap, and Grid Engine lists no job, used slot or reservation on it, the plan removes it
(it gives no capacity and, in a cloud, still costs money); growth then replaces it as usual.  The
state keeps when each unknown node was first seen so (``unknown``).  When more than half of the
worker nodes (and more than one) are unknown at once, none is removed for it: that is a qmaster or
network fault, not dead nodes.

``decide(..., launches=...)`` (optional) is what the cloud provider's reconciliation knows about
launches (``reconcile_plan``'s ``backoff`` and ``failures``): while launches back off, growth is
held with the back-off as its reason, and a request whose launch failed no longer counts as booting
(:meth:`StateHistory._forget_failed_launches`, ``elastic_state.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from .elastic_census import Census
# the constants are re-exported: callers read them from policy.elastic
from .elastic_common import (  # pylint: disable=unused-import
    BILLING, MAX_INTERVAL, MIN_STABILIZATION_TIME, PROFILES, REASON_LIST_LIMIT, SCHEMA, STARCLUSTER_QUEUE,
    _is_int, _is_mapping, _is_number, _job_label, _list_limited, _plural, fmt_duration)
from .elastic_removal import Removal
from .elastic_rules_default import DefaultRules
from .elastic_rules_parallelcluster import ParallelclusterRules
from .elastic_rules_starcluster import StarclusterRules
from .elastic_state import HISTORY_LIMIT, PENDING_RECORDS_LIMIT, StateHistory, _read_state  # pylint: disable=unused-import
from .options import option_check, with_given

# Option name -> default (profile "default").  The StarCluster flag is in the comment.  The numbers
# of the default profile are the policy the trace simulator measures as ``default``
# (docs/simulator.md); StarCluster's own numbers are those of profile ``starcluster`` (_STARCLUSTER).
# An option whose default depends on the billing mode is listed in _BY_BILLING instead.
_DEFAULTS = {
    "profile": "default",
    "max_nodes": None,            # -m  (unset: the cluster size when balancing started)
    "min_nodes": 1,               # -n
    "add_nodes_per_iter": 0,      # -a  0: no per-poll limit (growth bounded by the need and max_nodes)
    "interval": 30,               # -i  seconds, maximum 300 (StarCluster: 60)
    "job_wait_time": 0,           # -w  seconds (StarCluster: 900)
    "kill_after": 45,             # -k  minutes past the hour
    "stabilization_time": None,   # -s  seconds: by billing, _BY_BILLING (StarCluster: 300, its minimum)
    "lookback_window": 3,         # -l  minutes
    "plot_stats": False,          # -p
    "plot_output_dir": None,      # -P
    "dump_stats": False,          # -d
    "stats_file": None,           # -D
    "kill_cluster": False,        # -K
    "billing": "per_second",      # starcluster profile: hourly
    "idle_time": 540,             # seconds (per-second billing)
    "master": None,               # host name never removed (unless kill_cluster)
    "slots_per_node": None,       # unset: the most common slot count of existing nodes, else 1
    "queues": [],                 # [] = every queue (starcluster profile: all.q only)
    "boot_timeout": 1200,         # seconds a requested node may take to join before it is forgotten
    "name_reuse_time": 600,       # seconds after a node left during which its name is not reused
    "unknown_timeout": 900,       # seconds a node may stay unknown (no job on it) before it is removed; 0: never
    "launched_hosts": None,       # host names the provider launched (None: hosts that filled a node a plan asked for)
    "managed_hosts": [],          # host name patterns the balancer may remove although it did not launch them
    "protected_hosts": [],        # host name patterns never removed, whatever the other options say
}

#: Profile ``default``: the defaults that depend on ``billing`` (resolved once the billing of the
#: config is known; an option set explicitly always wins).  Per-second billing: no cool-down
#: (growth counts booting and idle nodes, so it cannot overshoot; removal waits ``idle_time``).
#: Hourly billing: StarCluster's 300 s cool-down (an idle node is kept to the end of its paid hour
#: anyway, ``kill_after``).  docs/elastic.md, "Defaults that depend on billing".
_BY_BILLING = {
    "per_second": {"stabilization_time": 0},
    "hourly": {"stabilization_time": 300},
}

#: Profile ``starcluster``: the seed's numbers (StarCluster's documented defaults).
_STARCLUSTER = {
    "add_nodes_per_iter": 1,
    "interval": 60,
    "job_wait_time": 900,
    "stabilization_time": 300,
    "kill_after": 45,
    "billing": "hourly",
    "idle_time": 600,             # not used (hourly billing only)
}

#: Profile ``parallelcluster``: jobwatcher (every 60 s, no wait threshold, no cool-down) and
#: nodewatcher (scaledown_idletime 10 min); ``add_nodes_per_iter`` does not apply.
_PARALLELCLUSTER = {
    "add_nodes_per_iter": 1,
    "interval": 60,
    "job_wait_time": 0,
    "stabilization_time": 0,
    "idle_time": 600,
}

#: Options holding lists of host names or host name patterns.
HOST_LISTS = ("launched_hosts", "managed_hosts", "protected_hosts")

OPTIONS = tuple(_DEFAULTS)


# --------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------

def default_config(profile="default", billing=None):
    """Return a new dict with every option at its default for ``profile`` and ``billing``.

    ``billing`` None: the profile's default billing.  Profile ``default`` takes the options of
    ``_BY_BILLING`` from the billing mode (docs/elastic.md, "Defaults that depend on billing").
    """
    if profile not in PROFILES:
        raise ValueError("profile: must be one of %s, got %r" % (", ".join(PROFILES), profile))
    if billing is not None and billing not in BILLING:
        raise ValueError("billing: must be one of %s, got %r" % (", ".join(BILLING), billing))
    cfg = dict(_DEFAULTS)
    cfg["queues"] = []
    cfg["managed_hosts"] = []
    cfg["protected_hosts"] = []
    cfg["profile"] = profile
    if profile == "starcluster":
        cfg.update(_STARCLUSTER)
        cfg["queues"] = [STARCLUSTER_QUEUE]
    elif profile == "parallelcluster":
        cfg.update(_PARALLELCLUSTER)
    else:
        cfg.update(_BY_BILLING[billing or cfg["billing"]])
    if billing is not None:
        cfg["billing"] = billing
    return cfg


def validate_config(config):
    """Fill in defaults and check every option.

    ``None`` means "not set" (the option takes its profile's default).  Returns a new dict;
    raises ``ValueError`` whose message starts with the name of the bad option.
    """
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ValueError("config: must be a mapping of options, got %s" % type(config).__name__)
    unknown = sorted(str(k) for k in config if k not in _DEFAULTS)
    if unknown:
        raise ValueError("%s: unknown option (known: %s)" % (", ".join(unknown), ", ".join(OPTIONS)))
    profile = config.get("profile")
    billing = config.get("billing")
    # The billing is an option too: the defaults that depend on it follow the config's billing
    # (an unknown one is reported below, naming the option); an option set explicitly wins.
    cfg = with_given(default_config("default" if profile is None else profile,
                                    billing if isinstance(billing, str) and billing in BILLING else None), config)
    need = option_check(cfg)

    need(cfg["max_nodes"] is None or (_is_int(cfg["max_nodes"]) and cfg["max_nodes"] >= 1),
         "max_nodes", "must be an integer >= 1")
    need(_is_int(cfg["min_nodes"]) and cfg["min_nodes"] >= 0, "min_nodes", "must be an integer >= 0")
    if cfg["max_nodes"] is not None and cfg["min_nodes"] > cfg["max_nodes"]:
        raise ValueError("min_nodes: %s is above max_nodes %s" % (cfg["min_nodes"], cfg["max_nodes"]))
    need(_is_int(cfg["add_nodes_per_iter"]) and cfg["add_nodes_per_iter"] >= 0,
         "add_nodes_per_iter", "must be an integer >= 0 (0: no per-poll limit, only max_nodes)")
    need(_is_number(cfg["interval"]) and 0 < cfg["interval"] <= MAX_INTERVAL,
         "interval", "must be a number of seconds > 0 and <= %d (StarCluster's maximum)" % MAX_INTERVAL)
    need(_is_number(cfg["job_wait_time"]) and cfg["job_wait_time"] >= 0,
         "job_wait_time", "must be a number of seconds >= 0")
    need(_is_number(cfg["kill_after"]) and 0 <= cfg["kill_after"] < 60,
         "kill_after", "must be a number of minutes past the hour, 0 to 59")
    need(_is_number(cfg["stabilization_time"]) and cfg["stabilization_time"] >= 0,
         "stabilization_time", "must be a number of seconds >= 0")
    need(_is_number(cfg["lookback_window"]) and cfg["lookback_window"] > 0,
         "lookback_window", "must be a number of minutes > 0")
    for name in ("plot_stats", "dump_stats", "kill_cluster"):
        need(isinstance(cfg[name], bool), name, "must be a boolean")
    for name in ("plot_output_dir", "stats_file", "master"):
        need(cfg[name] is None or (isinstance(cfg[name], str) and cfg[name] != ""),
             name, "must be a non-empty string")
    need(cfg["billing"] in BILLING, "billing", "must be one of %s" % ", ".join(BILLING))
    need(_is_number(cfg["idle_time"]) and cfg["idle_time"] >= 0, "idle_time", "must be a number of seconds >= 0")
    need(cfg["slots_per_node"] is None or (_is_int(cfg["slots_per_node"]) and cfg["slots_per_node"] >= 1),
         "slots_per_node", "must be an integer >= 1")
    need(_is_number(cfg["boot_timeout"]) and cfg["boot_timeout"] > 0,
         "boot_timeout", "must be a number of seconds > 0")
    need(_is_number(cfg["name_reuse_time"]) and cfg["name_reuse_time"] >= 0,
         "name_reuse_time", "must be a number of seconds >= 0")
    need(_is_number(cfg["unknown_timeout"]) and cfg["unknown_timeout"] >= 0,
         "unknown_timeout", "must be a number of seconds >= 0 (0: never remove a node for being unknown)")
    need(isinstance(cfg["queues"], (list, tuple)) and all(isinstance(q, str) and q for q in cfg["queues"]),
         "queues", "must be a list of queue names")
    cfg["queues"] = list(cfg["queues"])
    for name in HOST_LISTS:
        if cfg[name] is None and name == "launched_hosts":
            continue
        need(isinstance(cfg[name], (list, tuple)) and all(isinstance(h, str) and h.strip() for h in cfg[name]),
             name, "must be a list of host names%s" % ("" if name == "launched_hosts" else " or patterns"))
        cfg[name] = [h.strip() for h in cfg[name]]
    if cfg["profile"] == "starcluster":
        # StarCluster only knew all.q and only hourly billing; refuse rather than ignore.
        if cfg["billing"] != "hourly":
            raise ValueError("billing: profile starcluster always bills hourly, got %r" % cfg["billing"])
        if cfg["add_nodes_per_iter"] < 1:
            raise ValueError("add_nodes_per_iter: profile starcluster adds this many nodes per poll, "
                             "must be >= 1, got %r" % cfg["add_nodes_per_iter"])
        if cfg["queues"] not in ([], [STARCLUSTER_QUEUE]):
            raise ValueError("queues: profile starcluster balances all.q only, got %r" % cfg["queues"])
        cfg["queues"] = [STARCLUSTER_QUEUE]
    return cfg


# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# snapshot and state readers (defensive: a bad field is an error naming it, not a crash)
# --------------------------------------------------------------------------------------------

def check_snapshot(snapshot):
    """Raise ``ValueError`` unless ``snapshot`` looks like docs/snapshot.md schema 1."""
    if not isinstance(snapshot, Mapping):
        raise ValueError("snapshot: must be a mapping (ansible_facts.sge), got %s" % type(snapshot).__name__)
    if snapshot.get("schema") != 1:
        raise ValueError("snapshot: schema must be 1, got %r" % (snapshot.get("schema"),))
    if not isinstance(snapshot.get("hosts"), Mapping):
        raise ValueError("snapshot: 'hosts' must be a mapping of host name to host")
    for key in ("pending", "running"):
        if not isinstance(snapshot.get(key), list):
            raise ValueError("snapshot: %r must be a list" % key)
    for name, host in snapshot["hosts"].items():
        if not _is_mapping(host):
            raise ValueError("snapshot: hosts[%r] must be a mapping" % (name,))
    for key in ("pending", "running"):
        for index, job in enumerate(snapshot[key]):
            if (type(job) is not dict and not _is_mapping(job)) or "id" not in job:  # pylint: disable=unidiomatic-typecheck
                raise ValueError("snapshot: %s[%d] must be a mapping with an 'id'" % (key, index))
    if "queues" in snapshot and not isinstance(snapshot["queues"], list):
        raise ValueError("snapshot: 'queues' must be a list")
    if "taken_at" in snapshot and snapshot["taken_at"] is not None and not _is_number(snapshot["taken_at"]):
        raise ValueError("snapshot: 'taken_at' must be seconds since the epoch")


# --------------------------------------------------------------------------------------------
# the decision
# --------------------------------------------------------------------------------------------

def check_launches(launches):
    """``launches`` as :func:`decide` reads it: ``None``, or ``{"backoff": reason or None, "failures": [...]}``.

    ``launches`` is ``{"backoff": ..., "failures": [...]}`` from ``reconcile_plan``: ``backoff`` its
    back-off status (``active``, ``reason``), ``failures`` its failure history (mappings with
    ``time``, ``node``, ``kind``; ``time`` on the reconciliation's clock).  Raises ``ValueError``
    naming the bad part.
    """
    if launches is None:
        return None
    if not isinstance(launches, Mapping):
        raise ValueError("launches: must be a mapping with 'backoff' and 'failures', got %s" % type(launches).__name__)
    backoff = launches.get("backoff")
    if backoff is None:
        backoff = {}
    if not isinstance(backoff, Mapping):
        raise ValueError("launches: 'backoff' must be a mapping (reconcile_plan's backoff), got %s"
                         % type(backoff).__name__)
    failures = launches.get("failures")
    if failures is None:
        failures = []
    if not isinstance(failures, (list, tuple)):
        raise ValueError("launches: 'failures' must be a list (reconcile_plan's failures), got %s"
                         % type(failures).__name__)
    out = []
    for index, failure in enumerate(failures):
        if not isinstance(failure, Mapping) or not _is_number(failure.get("time")):
            raise ValueError("launches: failures[%d] must be a mapping with a 'time' in seconds, got %r"
                             % (index, failure))
        out.append({"time": float(failure["time"]), "node": str(failure.get("node") or ""),
                    "kind": str(failure.get("kind") or "error"), "code": str(failure.get("code") or "")})
    reason = None
    if backoff.get("active") is True:
        reason = backoff.get("reason") if isinstance(backoff.get("reason"), str) and backoff["reason"] else \
            "launches back off"
    return {"backoff": reason, "failures": out}


def decide(snapshot, state, config, now, launches=None):
    """Decide how to resize the cluster.  Pure: returns a new plan dict, mutates nothing.

    ``launches`` (optional, see :func:`check_launches`): the provider's launch back-off and failures.
    """
    cfg = validate_config(config)
    check_snapshot(snapshot)
    if not _is_number(now):
        raise ValueError("now: must be seconds since the epoch, got %r" % (now,))
    now = float(now)
    return _Decision(snapshot, state, cfg, now, launches=check_launches(launches)).run()


def _decide_validated(snapshot, state, cfg, now, lean=False, hints=None):
    """``decide`` for a caller that already checked its inputs: the trace simulator.

    ``cfg`` must be a :func:`validate_config` result, ``snapshot`` pass :func:`check_snapshot`,
    ``now`` be a float, and ``state`` be ``{}`` or the ``state`` of the previous plan of this
    entry point (possibly with ``nodes.*.last_busy`` moved on).  The plan's ``add``, ``remove``,
    ``kill_cluster`` and the ``state`` fields a later decision reads are the same as
    :func:`decide`'s.  ``lean=True`` leaves out what only people read, to save time on large
    clusters: no ``keep`` items, no ``ignored for growth`` item, no warning that the previous
    poll was long ago (the simulator skips the polls that cannot change anything), ``stats`` is
    ``None`` and the state's job history is empty (it only feeds the statistics, since every simulated job
    carries its ``submit_time``), and no host that left is remembered (``removed``,
    ``recently_removed``: only the naming of new nodes reads them, and the simulator names none).
    tests/unit/plugins/plugin_utils/test_sim_engine.py checks both.

    ``hints`` (optional): per-host facts the caller keeps up to date between calls instead of
    having every call derive them from ``snapshot["hosts"]`` again: ``status`` (host name ->
    what ``_Decision._host_status`` returns for it; read, never changed), ``slots_of`` (host name
    -> its slots in the balanced queues), ``known_queues``, ``archs`` and ``node_mem`` (as
    ``_queues_and_template`` computes them), and the sets ``busy``, ``unknown`` and ``running``
    (the hosts whose status has ``busy``, ``unknown``, ``jobs`` > 0).  ``status`` may also hold
    the master's entry.  Optional too: ``names`` (the hosts and the master: the call's node
    names; then ``status`` holds all of them), ``came`` and ``went`` (the names that joined and
    left since ``state`` was made) and ``idle`` (the hosts neither busy nor running a job), so
    that a call with nothing changed costs nothing per host.  They must equal what this call
    would compute; the simulator's tests check every hinted call against an unhinted one.
    """
    return _Decision(snapshot, state, cfg, now, lean=lean, hints=hints).run()


class _Decision(Census, StarclusterRules, DefaultRules, ParallelclusterRules, Removal, StateHistory):
    """One call of decide(); attributes are the working data of that call.

    Each concept has its own module; this class joins them and assembles the plan (:meth:`run`):

    - :class:`Census` (``elastic_census.py``): the snapshot's hosts, nodes, jobs per host, booting
      nodes, limits, last change, and the shape of a new node;
    - :class:`StarclusterRules`, :class:`DefaultRules`, :class:`ParallelclusterRules`
      (``elastic_rules_*.py``): each profile's waiting jobs, growth, and removal checks;
    - :class:`Removal` (``elastic_removal.py``): the removal loop the profiles share (ownership,
      running jobs, the billing's idle rule);
    - :class:`StateHistory` (``elastic_state.py``): the state read and written, its clocks, the job
      history and the statistics.
    """

    def __init__(self, snapshot, state, cfg, now, lean=False, hints=None, launches=None):
        self.lean = lean
        self.launches = launches
        self.hints = hints
        self.snap = snapshot
        self.cfg = cfg
        self.now = now
        self.warnings = []
        self.items = []
        self.ignored = []
        self.wanted_hosts = {}  # host -> id of a waiting job that asks for that very host
        self.request_verdicts = {}  # id of a hard_requests mapping -> DefaultRules._requests_unfit of it
        self.prev = _read_state(state, self.warnings, trusted=lean)
        self.starcluster = cfg["profile"] == "starcluster"
        self.pc = cfg["profile"] == "parallelcluster"
        self.billing = "hourly" if self.starcluster else cfg["billing"]
        hosts = cfg.get("launched_hosts")
        self.launched = None if hosts is None else frozenset(h.lower() for h in hosts)
        # the profile's removal checks and order of the removal candidates
        if self.starcluster:
            self._profile_keeps, self._order_candidates = self._starcluster_keeps, self._starcluster_order
        else:
            self._profile_keeps, self._order_candidates = self._default_keeps, self._default_order

    def _stable(self):
        if self.last_change is None:
            return True, None
        ago = self.now - self.last_change
        if ago >= self.cfg["stabilization_time"]:
            return True, None
        return False, "cluster changed %s ago < stabilization_time %s" % (
            fmt_duration(ago), fmt_duration(self.cfg["stabilization_time"]))

    def _room(self):
        return max(0, self.max_nodes - self.current - self.booting)

    def _grow(self):
        """(count, reason) wanted for the waiting jobs, and (floor, floor_reason) for min_nodes."""
        if self.pc:
            count, reason = self._grow_parallelcluster()
            return count, reason, 0, None
        if self.starcluster:
            # The seed's criteria only: it does not grow a cluster back to min_nodes.
            count, reason = self._grow_starcluster()
            return count, reason, 0, None
        floor, floor_reason = self._default_floor()
        count, reason = self._grow_default()
        return count, reason, floor, floor_reason

    # ---- main --------------------------------------------------------------------------------
    def run(self):
        cfg, now = self.cfg, self.now
        self._census()
        self._queues_and_template()
        # StarCluster's rules need its cool-down (they do not count booting nodes); profile default
        # ships 0 under per-second billing, measured (docs/simulator.md), so it is not warned about
        if cfg["stabilization_time"] < MIN_STABILIZATION_TIME and self.starcluster:
            self.warnings.append("stabilization_time %s is below StarCluster's minimum of %s: fine for "
                                 "tests and demos, risky in production" % (
                                     fmt_duration(cfg["stabilization_time"]), fmt_duration(MIN_STABILIZATION_TIME)))
        self.waiting = self._starcluster_waiting() if self.starcluster else self._default_waiting()
        stable, hold_reason = self._stable()

        add = 0
        count, reason, floor, floor_reason = self._grow()
        backoff = self.launches["backoff"] if self.launches is not None else None
        if backoff and (count > 0 or floor > 0):
            # the launches would be refused: hold, and record no request that would not be launched
            want, why = (count, reason) if count >= floor else (floor, floor_reason)
            self.items.append({"action": "hold", "count": 0, "reason": "hold: %s (would add %s: %s)" % (
                backoff, _plural(want, "node"), why)})
        elif count > 0 and stable and count >= floor:
            add = count
            self.items.append({"action": "add", "count": add,
                               "reason": "add %s: %s" % (_plural(add, "node"), reason)})
        elif floor > 0:
            add = floor
            self.items.append({"action": "add", "count": add,
                               "reason": "add %s: %s" % (_plural(add, "node"), floor_reason)})
            if count > floor:
                self.items.append({"action": "hold", "count": 0, "reason": "hold: %s (would add %s more: %s)" % (
                    hold_reason, _plural(count - floor, "node"), reason)})
        elif count > 0:
            self.items.append({"action": "hold", "count": 0, "reason": "hold: %s (would add %s: %s)" % (
                hold_reason, _plural(count, "node"), reason)})
        else:
            self.items.append({"action": "none", "reason": "no node added: %s" % reason})
        self.items.extend(self.launch_items)

        # Removal: only when nothing waits (StarCluster: no qw job), and never while adding.
        remove = []
        cands, keep, dead = self._removal_candidates()
        node_items = {}
        # Nodes unknown for unknown_timeout with no job go whatever waits, grows, min_nodes or the
        # stabilization time say: they run nothing and take nothing (the floor and growth replace them).
        for name, unknown_for, why in dead:
            remove.append(name)
            node_items[name] = {"action": "remove", "host": name, "reason": "remove %s: %s" % (name, why)}
        if self.waiting:
            block = "%s waiting" % _plural(len(self.waiting), "job")
            for name, idle_for, why in cands:
                keep[name] = "%s, but %s" % (why, block)
            cands = []
        elif add:
            for name, idle_for, why in cands:
                keep[name] = "%s, but nodes are being added" % why
            cands = []
        # Never below min_nodes (the master counts as a node, as in StarCluster).
        max_remove = max(0, self.current - len(dead) - self.min_nodes)
        chosen = cands[:max_remove]
        for name, idle_for, why in cands[max_remove:]:
            keep[name] = "%s, but min_nodes=%d (the master counts as a node)" % (why, self.min_nodes)
        if chosen and not stable:
            for name, idle_for, why in chosen:
                keep[name] = "%s, but on hold (%s)" % (why, hold_reason)
            self.items.append({"action": "hold", "count": 0, "reason": "hold: %s (would remove %s)" % (
                hold_reason, ", ".join(c[0] for c in chosen))})
            chosen = []
        for name, idle_for, why in chosen:
            remove.append(name)
            node_items[name] = {"action": "remove", "host": name, "reason": "remove %s: %s" % (name, why)}

        # kill_cluster (-K): once only the master is left and nothing is queued or running.
        kill = False
        if (cfg["kill_cluster"] and self.master is not None and self.current == 1 and self.node_names == {self.master}
                and not self.booting and not self.snap["pending"] and not self.snap["running"] and not add):
            if stable:
                kill = True
                remove.append(self.master)
                keep.pop(self.master, None)
                node_items[self.master] = {
                    "action": "remove", "host": self.master,
                    "reason": "remove %s: kill_cluster, only the master is left and no job is queued or running"
                              % self.master}
            else:
                keep[self.master] = "master, kill_cluster on hold (%s)" % hold_reason
        # removals in removal order (longest idle first), then every kept node by name
        for name in remove:
            self.items.append(node_items[name])
        for name in () if self.lean else sorted(self.node_names - set(remove)):
            self.items.append({"action": "keep", "host": name, "reason": "keep %s: %s" % (name, keep.get(name, "kept"))})
        if self.ignored and not self.lean:
            self.items.append({"action": "none", "reason": "ignored for growth: " + _list_limited(
                "%s %s" % (_job_label(j), j["reason"]) for j in self.ignored)})

        if self.lean:
            self.jobs_state = {"pending": {}, "running_since": {}, "started": [], "finished": []}
            stats = None
        else:
            self._history()
            stats = self._stats()

        new_state = self._new_state(add, remove)

        parts = []
        if add:
            parts.append("add %s" % _plural(add, "node"))
        if remove:
            parts.append("remove %s: %s" % (_plural(len(remove), "node"), ", ".join(remove)))
        if kill:
            parts.append("kill the cluster")
        holds = [i for i in self.items if i["action"] == "hold"]
        if not parts and holds:
            parts.append(holds[0]["reason"].split(" (would")[0])
        if not parts:
            parts.append("no change")
        summary = "%s (%d up, %d booting, min %d, max %d)" % (
            "; ".join(parts), self.current, self.booting, self.min_nodes, self.max_nodes)

        return {
            "profile": cfg["profile"],
            "now": now,
            "interval": cfg["interval"],
            "config": dict(cfg, max_nodes=self.max_nodes),
            "nodes": {"current": self.current, "min": self.min_nodes, "max": self.max_nodes, "booting": self.booting},
            "add": add,
            "remove": remove,
            "kill_cluster": kill,
            "recently_removed": sorted(self.removed),
            "items": self.items,
            "ignored_jobs": self.ignored,
            "summary": summary,
            "warnings": self.warnings,
            "stats": stats,
            "state": new_state,
        }
