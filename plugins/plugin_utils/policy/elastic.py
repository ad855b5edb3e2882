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

Two profiles:

``starcluster``
    The criteria of StarCluster's documentation, exactly as written, weaknesses included.  Useful
    as a baseline for comparisons.
``default``
    The same idea with StarCluster's known weaknesses fixed.  Every fix is marked ``FIX(n)`` below
    and listed in docs/elastic.md.
``parallelcluster``
    AWS ParallelCluster v2's jobwatcher/nodewatcher rules for Grid Engine, as a second baseline for
    the trace simulator (docs/simulator.md): every poll grow to ``busy nodes + ceil(waiting slots /
    slots per node)``; remove a node idle for ``idle_time`` while nothing that fits waits.

Every plan item carries a reason a person can read.

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
(:meth:`_Decision._forget_failed_launches`).
"""

from __future__ import annotations

import fnmatch
import heapq
import math
import re
from collections.abc import Mapping

SCHEMA = 1
PROFILES = ("default", "starcluster", "parallelcluster")
BILLING = ("per_second", "hourly")
STARCLUSTER_QUEUE = "all.q"
#: StarCluster documents a minimum stabilization time of 300 s; lower values only warn.
MIN_STABILIZATION_TIME = 300
#: StarCluster's documented maximum polling interval.
MAX_INTERVAL = 300
#: Bounds on the job history kept in the state (per list), whatever the lookback window.
HISTORY_LIMIT = 5000
#: Per-job records of pending jobs kept in the state (issue 20: one record per pending job made the
#: state 17 MB at 200,000 pending jobs, rewritten every poll). The records kept are the oldest by
#: first_seen, jobs without a submit time first (their wait is known only from their record); see
#: :meth:`_Decision._history` and docs/elastic.md, "The state file".
PENDING_RECORDS_LIMIT = 2000
#: How many ignored jobs a reason names before it says "and N more".
REASON_LIST_LIMIT = 5

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

_MEMORY_REQUESTS = ("mem_free", "mf", "virtual_free", "vf", "mem_total", "mt")
_HOST_REQUESTS = ("hostname", "h")
_ARCH_REQUESTS = ("arch", "a")
_WILDCARDS = re.compile(r"[*?\[]")
_MEMORY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([kKmMgGtT]?)\s*$")
_MEMORY_FACTORS = {"": 1, "k": 1000, "K": 1024, "m": 1000 ** 2, "M": 1024 ** 2,
                   "g": 1000 ** 3, "G": 1024 ** 3, "t": 1000 ** 4, "T": 1024 ** 4}


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


def _is_number(value):
    kind = type(value)  # fast paths: the trace simulator calls this millions of times
    if kind is float:
        return math.isfinite(value)
    if kind is int:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


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
    cfg = default_config("default" if profile is None else profile,
                         billing if isinstance(billing, str) and billing in BILLING else None)
    for key, value in config.items():
        if value is not None:
            cfg[key] = value

    def need(cond, name, text):
        if not cond:
            raise ValueError("%s: %s, got %r" % (name, text, cfg[name]))

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
# small helpers
# --------------------------------------------------------------------------------------------

def fmt_duration(seconds):
    """``965`` -> ``16m05s``, ``900`` -> ``15m``, ``45`` -> ``45s``, ``3720`` -> ``1h02m``."""
    if seconds is None:
        return "?"
    total = int(max(0, seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm" % (hours, minutes) + ("%02ds" % secs if secs else "")
    if minutes:
        return "%dm" % minutes + ("%02ds" % secs if secs else "")
    return "%ds" % secs


def _plural(count, word, plural=None):
    return "%s %s" % (count, word if count == 1 else (plural or word + "s"))


def _cmp(value, limit):
    return ">" if value > limit else (">=" if value >= limit else "<")


def _num(value, default=None):
    kind = type(value)  # fast paths (see _is_number)
    if kind is float:
        return value if math.isfinite(value) else default
    if kind is int:
        return value
    if value is None:
        return default
    return value if _is_number(value) else default


def _is_mapping(value):
    return isinstance(value, Mapping)


def _parse_memory(value):
    """Grid Engine memory specifier (``2G``, ``512M``, ``1.5g``, bytes) -> bytes, or None."""
    if _is_number(value):
        return float(value)
    if not isinstance(value, str):
        return None
    match = _MEMORY_RE.match(value)
    if not match:
        return None
    return float(match.group(1)) * _MEMORY_FACTORS[match.group(2)]


def _fmt_bytes(value):
    return "%.1f GiB" % (value / 1024.0 ** 3)


def _job_label(job):
    return "job %s" % job.get("id")


def _list_limited(texts):
    texts = list(texts)
    if len(texts) <= REASON_LIST_LIMIT:
        return "; ".join(texts)
    return "; ".join(texts[:REASON_LIST_LIMIT]) + "; and %d more" % (len(texts) - REASON_LIST_LIMIT)


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
            if not _is_mapping(job) or "id" not in job:
                raise ValueError("snapshot: %s[%d] must be a mapping with an 'id'" % (key, index))
    if "queues" in snapshot and not isinstance(snapshot["queues"], list):
        raise ValueError("snapshot: 'queues' must be a list")
    if "taken_at" in snapshot and snapshot["taken_at"] is not None and not _is_number(snapshot["taken_at"]):
        raise ValueError("snapshot: 'taken_at' must be seconds since the epoch")


def _read_state(state, warnings, trusted=False):
    """Known keys of a state of any schema; unknown keys are ignored, bad values dropped.

    ``trusted``: ``state`` comes from :func:`_decide_validated` (node records are read as they are).
    """
    if not isinstance(state, Mapping):
        if state is not None:
            warnings.append("state: not a mapping (%s); starting with an empty state" % type(state).__name__)
        state = {}
    schema = state.get("schema")
    if _is_int(schema) and schema > SCHEMA:
        warnings.append("state: schema %d is newer than %d; reading the keys this version knows" % (schema, SCHEMA))

    def typed(key, kind, default):
        value = state.get(key, default)
        if value is not default and not isinstance(value, kind):
            warnings.append("state: %r has an unexpected type; ignored" % key)
            return default
        return value

    out = {
        "first_poll": "nodes" not in state or not isinstance(state.get("nodes"), Mapping),
        "last_poll": _num(state.get("last_poll")),
        "last_change": _num(state.get("last_change")),
        "last_change_reason": state.get("last_change_reason") if isinstance(state.get("last_change_reason"), str) else None,
        "cluster_size": state.get("cluster_size") if _is_int(state.get("cluster_size")) else None,
        "nodes": {},
        "booting": [],
        "pending": {},
        "running": {},
        "started": [],
        "finished": [],
        # the newest launch failure (``launches``) already taken into account; the key is absent
        # from states written before launches were known (then every failure so far counts as seen)
        "launch_failure_known": "last_launch_failure" in state,
        "last_launch_failure": _num(state.get("last_launch_failure")),
        # hosts that left -> when a poll first missed them; absent from states written before the
        # key existed (then nothing is known to have left) and from lean states
        "removed": {},
        # unknown hosts -> when the first poll of their current unknown spell saw them; absent from
        # states written before the key existed (then every unknown host's clock starts now)
        "unknown": {},
    }
    if out["last_launch_failure"] is None and state.get("last_launch_failure") is not None:
        warnings.append("state: 'last_launch_failure' is not a time; ignored (the launch failures known now count as seen)")
        out["launch_failure_known"] = False
    if trusted and "nodes" in state:
        out["nodes"] = state["nodes"]
    nodes = out["nodes"]
    for name, node in () if trusted else typed("nodes", Mapping, {}).items():
        if _is_mapping(node):
            get = node.get
            record = {"first_seen": _num(get("first_seen")), "joined": _num(get("joined")),
                      "last_busy": _num(get("last_busy"))}
            damaged = [k for k, v in record.items() if v is None and get(k) is not None]
            if get("launched") is True:
                record["launched"] = True
            if damaged:
                # a clock that cannot be read must not make the node look idle since first_seen:
                # forget the node's record, so it is seen as new (its idle clock starts now)
                warnings.append("state: node %s has unreadable %s; its idle clock starts again"
                                % (name, ", ".join(sorted(damaged))))
                continue
            nodes[str(name)] = record
    for name, left in () if trusted else typed("removed", Mapping, {}).items():
        left_at = _num(left)
        if left_at is None:
            warnings.append("state: removed node %s has no readable time; its name may be reused" % name)
            continue
        out["removed"][str(name)] = float(left_at)
    for name, since in typed("unknown", Mapping, {}).items():
        since_at = _num(since)
        if since_at is None:
            warnings.append("state: unknown node %s has no readable time; its unknown clock starts again" % name)
            continue
        out["unknown"][str(name)] = float(since_at)
    for entry in typed("booting", list, []):
        requested = _num(entry.get("requested_at")) if isinstance(entry, Mapping) else _num(entry)
        if requested is not None:
            out["booting"].append(requested)
    out["booting"].sort()
    jobs = typed("jobs", Mapping, {})
    if isinstance(jobs.get("pending"), Mapping):
        for key, rec in jobs["pending"].items():
            if isinstance(rec, Mapping):
                out["pending"][str(key)] = {"submit_time": _num(rec.get("submit_time")),
                                            "first_seen": _num(rec.get("first_seen"))}
    if isinstance(jobs.get("running"), Mapping):
        for key, start in jobs["running"].items():
            out["running"][str(key)] = _num(start)
    for name in ("started", "finished"):
        if isinstance(jobs.get(name), list):
            for row in jobs[name]:
                if isinstance(row, (list, tuple)) and len(row) == 3 and _is_number(row[1]) and _is_number(row[2]):
                    out[name].append([str(row[0]), float(row[1]), float(row[2])])
    return out


def _record_order(item):
    """Sort key of a pending job's record ``(key, {submit_time, first_seen})``: jobs without a
    submit time first, then the oldest first_seen, then the oldest submit time, then the lowest
    job number (Grid Engine numbers jobs in submit order)."""
    key, rec = item
    try:
        number = int(key)
    except ValueError:
        number = math.inf
    submit = rec["submit_time"]
    return (submit is not None, rec["first_seen"], submit if submit is not None else 0.0, number, key)


def _oldest_records(pending, limit):
    """The ``limit`` records of ``pending`` (job key -> record) that the state keeps, in their order.

    The policy reads a pending job's record in two places: ``_waited`` takes the wait of a job
    without a submit time from its ``first_seen``, and ``_history`` takes the wait of a job that
    has just started from its record (the ``started`` rows, the stats' ``avg_wait`` when qacct has
    none). Kept first: every job without a submit time (the only records that decide anything),
    oldest first_seen first; then the jobs with one, oldest first. A kept record is carried
    unchanged, so nothing decided about its job changes. A job left out has no record at the next
    poll: with a submit time its wait is still exact; without one it waits 0 s for the policy until
    it is among the ``limit`` kept (it is younger, by first_seen, than every kept job without a
    submit time), and from then on its wait counts from the poll that first kept it. A job that
    starts without a record is not in ``started`` (as one never seen waiting).
    """
    keep = set(key for key, dummy in heapq.nsmallest(limit, pending.items(), key=_record_order))
    return dict((key, rec) for key, rec in pending.items() if key in keep)


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
    clusters: no ``keep`` items, no ``ignored for growth`` item, ``stats`` is ``None`` and the
    state's job history is empty (it only feeds the statistics, since every simulated job
    carries its ``submit_time``), and no host that left is remembered (``removed``,
    ``recently_removed``: only the naming of new nodes reads them, and the simulator names none).
    tests/unit/plugins/plugin_utils/test_sim_engine.py checks both.

    ``hints`` (optional): per-host facts the caller keeps up to date between calls instead of
    having every call derive them from ``snapshot["hosts"]`` again: ``status`` (host name ->
    what ``_Decision._host_status`` returns for it; read, never changed), ``slots_of`` (host name
    -> its slots in the balanced queues), ``known_queues``, ``archs`` and ``node_mem`` (as
    ``_queues_and_template`` computes them), and the sets ``busy``, ``unknown`` and ``running``
    (the hosts whose status has ``busy``, ``unknown``, ``jobs`` > 0).  ``status`` may also hold
    the master's entry.  They must equal what this call would compute;
    the simulator's tests check every hinted call against an unhinted one.
    """
    return _Decision(snapshot, state, cfg, now, lean=lean, hints=hints).run()


class _Decision(object):
    """One call of decide(); attributes are the working data of that call."""

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
        self.prev = _read_state(state, self.warnings, trusted=lean)
        self.starcluster = cfg["profile"] == "starcluster"
        self.pc = cfg["profile"] == "parallelcluster"
        self.billing = "hourly" if self.starcluster else cfg["billing"]
        hosts = cfg.get("launched_hosts")
        self.launched = None if hosts is None else frozenset(h.lower() for h in hosts)

    # ---- census ---------------------------------------------------------------------------
    def _census(self):
        snap, cfg, now, prev = self.snap, self.cfg, self.now, self.prev
        hints = self.hints
        if hints is None:
            self.hosts = {str(name): host for name, host in snap["hosts"].items()}
        else:
            self.hosts = snap["hosts"]  # str names (the caller's promise); only read
        self.master = cfg["master"] if cfg["master"] is not None else snap.get("master")
        if self.master is not None and not isinstance(self.master, str):
            self.master = None
        if self.master is None:
            self.warnings.append("master not set: no execution host is protected as the master")

        # jobs per host, from the running list (parallel jobs count on every host they span)
        self.jobs_on = jobs_on = dict.fromkeys(self.hosts, 0) if hints is None else {}
        for job in snap["running"] if hints is None else ():
            spans = job.get("hosts")
            spans = set(map(str, spans)) if _is_mapping(spans) else set()
            if job.get("host") is not None:
                spans.add(str(job["host"]))
            for name in spans:
                if name in jobs_on:
                    jobs_on[name] += 1

        # Nodes: the execution hosts plus the master.  StarCluster counted the master as a node
        # (len(cluster.nodes)), so min_nodes=1 means "the master alone"; we do the same.
        self.node_names = set(self.hosts)
        if self.master is not None:
            self.node_names.add(self.master)
        self.current = len(self.node_names)

        # Nodes booting: requested by an earlier plan, not yet seen.  A host that appears for the
        # first time takes the oldest request (and that request's time as its join time).
        booting = list(prev["booting"])
        new_nodes = {}
        appeared = sorted(self.node_names - set(prev["nodes"])) if not prev["first_poll"] else []
        for name in appeared:
            # A host that takes a request of an earlier plan is one the balancer launched: it may
            # remove it again. Hosts it did not launch are the site's (see _not_ours).
            if booting:
                new_nodes[name] = {"first_seen": now, "joined": booting.pop(0), "last_busy": None, "launched": True}
            else:
                new_nodes[name] = {"first_seen": now, "joined": now, "last_busy": None}
        self.launch_mark_known = prev["launch_failure_known"]
        self.launch_mark = prev["last_launch_failure"]
        self.launch_items = []
        if self.launches is not None:
            self._forget_failed_launches(booting)
        expired = [t for t in booting if now - t > cfg["boot_timeout"]]
        if expired:
            self.warnings.append(
                "%s requested %s ago never joined (boot_timeout %s); no longer counted as booting"
                % (_plural(len(expired), "node"), fmt_duration(now - expired[0]), fmt_duration(cfg["boot_timeout"])))
        self.booting_times = [t for t in booting if now - t <= cfg["boot_timeout"]]
        self.booting = len(self.booting_times)

        # per-node records
        prev_nodes, hosts, host_status = prev["nodes"], self.hosts, self._host_status
        self.before = set(prev_nodes)
        if hints is not None:
            self._records_from_hints(hints, new_nodes)
        else:
            self.nodes = {}
            self.status = {}
            for name in sorted(self.node_names):
                rec = dict(prev_nodes.get(name) or new_nodes.get(name) or
                           {"first_seen": now, "joined": None, "last_busy": None})
                if rec.get("first_seen") is None:
                    rec["first_seen"] = now
                st = host_status(name, hosts.get(name))
                self.status[name] = st
                # A host whose idleness cannot be observed restarts its idle clock: we must not
                # conclude "idle for 10 minutes" from minutes in which we could not see it.
                if st["busy"] or st["unknown"]:
                    rec["last_busy"] = now
                self.nodes[name] = rec

        self._unknown_clocks()

        # max_nodes unset: StarCluster used the CLUSTER_SIZE the cluster was created with; we use
        # the size at the first poll, remembered in the state.
        self.cluster_size = prev["cluster_size"] if prev["cluster_size"] is not None else self.current
        if cfg["max_nodes"] is None:
            self.max_nodes = max(self.cluster_size, cfg["min_nodes"], 1)
            self.warnings.append("max_nodes not set: using %d, the cluster size when balancing started"
                                 % self.max_nodes)
        else:
            self.max_nodes = cfg["max_nodes"]
        self.min_nodes = cfg["min_nodes"]
        if self.current > self.max_nodes:
            self.warnings.append("cluster has %d nodes, above max_nodes %d: no node is added; idle nodes "
                                 "are removed under the usual rules" % (self.current, self.max_nodes))

        # last change: the later of the last plan that added/removed and the last poll that saw
        # the set of hosts change (StarCluster set it after its add/remove had completed).
        self.last_change = prev["last_change"]
        self.last_change_reason = prev["last_change_reason"]
        if not prev["first_poll"]:
            before = self.before
            if before != self.node_names:
                came = sorted(self.node_names - before)
                went = sorted(before - self.node_names)
                text = []
                if came:
                    text.append("joined: " + ", ".join(came))
                if went:
                    text.append("left: " + ", ".join(went))
                self.last_change = now
                self.last_change_reason = "hosts changed (%s)" % "; ".join(text)
        self.removed = {} if self.lean else self._left_recently()
        if prev["last_poll"] is not None:
            gap = now - prev["last_poll"]
            if gap < 0:
                self.warnings.append("now is %s before the previous poll: the qmaster clock went back"
                                     % fmt_duration(-gap))
            elif gap > 3 * cfg["interval"]:
                self.warnings.append("previous poll was %s ago (interval %s): idle times and job history "
                                     "may have gaps" % (fmt_duration(gap), fmt_duration(cfg["interval"])))

    def _unknown_clocks(self):
        """``self.unknown_since``: unknown host -> when this spell of unknown state began.

        A spell goes on from the previous poll's record only if that poll was at most three
        intervals ago (the same gap that warns): after a gap nobody knows whether the host was
        known again in between, so its clock starts now. A clock in the future (the qmaster's clock
        went back) counts as ``now``. A host known again is forgotten.
        """
        if self.hints is not None:
            unknown = self.hints["unknown"]
        else:
            unknown = [name for name, st in self.status.items() if st["unknown"]]
        prev = self.prev
        carry = prev["unknown"] if (prev["last_poll"] is not None
                                    and 0 <= self.now - prev["last_poll"] <= 3 * self.cfg["interval"]) else {}
        now = self.now
        self.unknown_since = {name: min(carry.get(name, now), now) for name in sorted(unknown)}

    def _left_recently(self):
        """Hosts that left the cluster less than ``name_reuse_time`` ago -> when a poll first missed them.

        A host the previous poll saw and this one does not is recorded at this poll's time: at most
        one interval after it really left, so the window errs on the long side. A host seen again is
        forgotten, so is one that left ``name_reuse_time`` or more ago (a time after ``now``, from a
        clock that went back, counts as ``now``). ``name_reuse_time`` 0 records nothing. Only the
        naming of new nodes reads it (``plan["recently_removed"]``).
        """
        window = self.cfg["name_reuse_time"]
        if not window:
            return {}
        now, present = self.now, self.node_names
        left = dict(self.prev["removed"])
        if not self.prev["first_poll"]:
            for name in self.before - present:
                left[name] = now
        return {name: min(at, now) for name, at in sorted(left.items())
                if name not in present and now - min(at, now) < window}

    def _forget_failed_launches(self, booting):
        """Drop from ``booting`` (sorted, oldest first) the requests whose launch failed.

        A failure of ``launches`` is new when it is later than the newest one this state has seen
        (both on the reconciliation's clock, never compared with ``now``); a state that has not
        seen failures yet (written before launches were known, or the first poll) takes the ones
        listed now as seen.  A new failure of kind ``timeout`` is an instance that launched and
        was terminated later: its request stays until ``boot_timeout``, as before.  Any other kind
        is a launch that failed: the poll launches a plan's nodes one after the other and stops at
        the first failure, so the newest plan's requests still booting (those of its nodes that
        joined were taken by the new hosts) failed or were never launched, and are dropped.
        """
        failures = self.launches["failures"]
        newest = max((f["time"] for f in failures), default=None)
        mark = self.launch_mark
        fresh = [f for f in failures if mark is None or f["time"] > mark] if self.launch_mark_known else []
        if newest is not None:
            self.launch_mark = newest if mark is None else max(mark, newest)
        self.launch_mark_known = True
        failed = [f for f in fresh if f["kind"] != "timeout"]
        if not failed or not booting:
            return
        newest_request = booting[-1]
        dropped = 0
        while booting and booting[-1] == newest_request:
            booting.pop()
            dropped += 1
        last = failed[-1]
        self.launch_items.append({"action": "none", "reason": "no longer booting: %s requested %s ago, whose launch "
                                  "failed (%s on %s%s)" % (
                                      _plural(dropped, "node"), fmt_duration(self.now - newest_request), last["kind"],
                                      last["node"] or "?", (": %s" % last["code"]) if last["code"] else "")})

    def _records_from_hints(self, hints, new_nodes):
        """The per-node loop of :meth:`_census` with the caller's host status (``hints``).

        The same records and status as that loop, but the previous state's ``nodes`` mapping
        and its records are reused and updated in place (the caller of the lean entry point
        drops the previous state), so only new, departed and busy nodes cost anything.
        """
        now, names = self.now, self.node_names
        self.nodes = nodes = self.prev["nodes"]
        before = self.before
        for name in before - names:
            del nodes[name]
        for name in names - before:
            nodes[name] = dict(new_nodes.get(name) or {"first_seen": now, "joined": None, "last_busy": None})
        known = hints["status"]
        missing = names - known.keys()
        if missing:
            self.status = status = dict(known)
            for name in missing:
                status[name] = self._host_status(name, self.hosts.get(name))
        else:
            self.status = known
        for name in hints["busy"]:
            nodes[name]["last_busy"] = now
        for name in hints["unknown"]:
            nodes[name]["last_busy"] = now

    def _host_status(self, name, host):
        if host is None:  # the master, not an execution host
            return {"busy": False, "unknown": False, "error": False, "jobs": 0, "used": 0, "reserved": 0,
                    "exec_host": False, "load": None, "states": ""}
        # (written for speed: the trace simulator calls this for every host of every poll)
        get = host.get
        states = get("states") or ""
        if not isinstance(states, str):
            states = ""
        reported = get("running_jobs")
        if not _is_int(reported):
            reported = 0
        jobs = self.jobs_on.get(name, 0)
        if reported > jobs:
            jobs = reported
        used = get("slots_used")
        if not _is_int(used):
            used = 0
        reserved = get("slots_reserved")
        if not _is_int(reserved):
            reserved = 0
        load = get("load_avg")
        load = _num(load)
        return {
            "busy": jobs > 0 or used > 0 or reserved > 0,
            "jobs": jobs,
            "used": used,
            "reserved": reserved,
            # load "-" (execd down) or queue state u: Grid Engine does not know what runs there
            "unknown": load is None or "u" in states,
            "error": "E" in states,
            "exec_host": True,
            "load": get("load_avg"),
            "states": states,
        }

    # ---- queues, slots and the shape of a new node -----------------------------------------
    def _queues_and_template(self):
        snap, cfg = self.snap, self.cfg
        hints = self.hints
        if hints is not None:
            self._template_from_hints(hints)
            return
        self.known_queues = set()
        host_slots = {}
        for qi in snap.get("queues") or []:
            if not isinstance(qi, Mapping):
                continue
            qname = qi.get("queue") or (str(qi.get("name") or "").partition("@")[0]) or None
            if qname:
                self.known_queues.add(str(qname))
            host = qi.get("host")
            if host is not None and self._balanced_queue(qname) and _is_int(qi.get("slots_total")):
                host_slots[str(host)] = host_slots.get(str(host), 0) + qi["slots_total"]
        known = self.known_queues
        for host in self.hosts.values():
            qnames = host.get("queues")
            if qnames:
                known.update(map(str, qnames))
        if cfg["queues"] and self.known_queues:
            missing = [q for q in cfg["queues"] if q not in self.known_queues]
            if missing:
                self.warnings.append("queues: %s has no queue instance in the snapshot" % ", ".join(missing))
        # Slots per host in the balanced queues (from the queue instances when the snapshot has
        # them, else the host's total).
        self.slots_of = slots_of = {}
        no_queues = not snap.get("queues")
        for name, host in self.hosts.items():
            if name in host_slots:
                slots_of[name] = host_slots[name]
            elif no_queues and _is_int(host.get("slots_total")):
                slots_of[name] = host["slots_total"]
            else:
                slots_of[name] = 0
        workers = [n for n in self.hosts if n != self.master] or list(self.hosts)
        # FIX(mixed slots): StarCluster's slots_per_host() raised an error when hosts differed;
        # a new node is assumed to look like most existing workers (ties: the larger).
        if cfg["slots_per_node"] is not None:
            self.spn = cfg["slots_per_node"]
            self.spn_source = "slots_per_node=%d" % self.spn
        else:
            counts = {}
            for name in workers:
                if self.slots_of.get(name, 0) > 0:
                    counts[self.slots_of[name]] = counts.get(self.slots_of[name], 0) + 1
            self.spn = max(counts, key=lambda s: (counts[s], s)) if counts else 1
            self.spn_source = _plural(self.spn, "slot") + " per node"
        self.spn_text = _plural(self.spn, "slot") + " per node"
        hosts = self.hosts
        mems = [m for m in (_num(hosts[n].get("mem_total")) for n in workers) if m]
        self.node_mem = max(mems) if mems else None
        self.archs = {str(a) for a in (h.get("arch") for h in hosts.values()) if a}

    def _template_from_hints(self, hints):
        """:meth:`_queues_and_template` from facts the caller kept up to date (``hints``)."""
        cfg = self.cfg
        self.known_queues = set(hints["known_queues"])
        if cfg["queues"] and self.known_queues:
            missing = [q for q in cfg["queues"] if q not in self.known_queues]
            if missing:
                self.warnings.append("queues: %s has no queue instance in the snapshot" % ", ".join(missing))
        self.slots_of = hints["slots_of"]
        if cfg["slots_per_node"] is not None:
            self.spn = cfg["slots_per_node"]
            self.spn_source = "slots_per_node=%d" % self.spn
        else:
            workers = [n for n in self.hosts if n != self.master] or list(self.hosts)
            counts = {}
            for name in workers:
                if self.slots_of.get(name, 0) > 0:
                    counts[self.slots_of[name]] = counts.get(self.slots_of[name], 0) + 1
            self.spn = max(counts, key=lambda s: (counts[s], s)) if counts else 1
            self.spn_source = _plural(self.spn, "slot") + " per node"
        self.spn_text = _plural(self.spn, "slot") + " per node"
        self.node_mem = hints["node_mem"]
        self.archs = set(hints["archs"])

    def _balanced_queue(self, qname):
        if not self.cfg["queues"]:
            return True
        return qname is not None and any(fnmatch.fnmatchcase(str(qname), q) for q in self.cfg["queues"])

    # ---- waiting jobs ----------------------------------------------------------------------
    def _waited(self, job):
        submit = _num(job.get("submit_time"))
        if submit is None:
            rec = self.prev["pending"].get(str(job.get("id")))
            submit = rec["first_seen"] if rec and rec["first_seen"] is not None else self.now
        return max(0.0, self.now - submit)

    def _starcluster_waiting(self):
        """StarCluster's queued jobs: state exactly 'qw' (so hqw and Eqw are left out), all.q."""
        out = []
        for job in self.snap["pending"]:
            if job.get("state") != "qw":
                continue
            queues = job.get("hard_queues") or []
            if queues and not any(fnmatch.fnmatchcase(STARCLUSTER_QUEUE, str(q).partition("@")[0]) for q in queues):
                continue
            out.append(job)
        return out

    def _why_not_runnable(self, job):
        """None if a new node could run ``job``, else the reason it is ignored for growth."""
        # FIX(held/error): StarCluster only looked at 'qw', but our broader view must still skip
        # jobs that more nodes cannot help.
        if job.get("held") or "h" in str(job.get("state") or ""):
            return "held (state %s)" % job.get("state")
        if job.get("error") or "E" in str(job.get("state") or ""):
            return "in error state (%s)" % job.get("state")
        queues = [str(q) for q in job.get("hard_queues") or []]
        if queues:
            usable, host_bound, missing, unbalanced = [], [], [], []
            for spec in queues:
                qpat, at, hostpart = spec.partition("@")
                if at and not hostpart.startswith("@") and not _WILDCARDS.search(hostpart):
                    host_bound.append(spec)
                elif self.known_queues and not any(fnmatch.fnmatchcase(k, qpat) for k in self.known_queues):
                    missing.append(spec)
                elif self.cfg["queues"] and not any(fnmatch.fnmatchcase(b, qpat) for b in self.cfg["queues"]):
                    unbalanced.append(spec)
                else:
                    usable.append(spec)
            if not usable:
                if missing:
                    return "requests queue %s, which the cluster does not have" % ", ".join(missing)
                if unbalanced:
                    return "requests queue %s, not balanced (queues: %s)" % (
                        ", ".join(unbalanced), ", ".join(self.cfg["queues"]))
                for spec in host_bound:
                    self.wanted_hosts.setdefault(spec.partition("@")[2], job.get("id"))
                return "requests specific host(s) %s: a new node cannot run it" % ", ".join(host_bound)
        slots = job.get("slots") if _is_int(job.get("slots")) else 1
        if slots > self.spn:
            # FIX(parallel jobs): Grid Engine gives a job more than one slot only through a
            # parallel environment, and a PE job may spread over hosts ($fill_up, $round_robin), so
            # several new nodes can run it, whether or not the listing names its PE (qstat without
            # -r does not).  (A $pe_slots PE wider than a node is counted too: the snapshot does
            # not carry the allocation rule.)
            if slots > self.spn * self.max_nodes:
                return "needs %d slots > %d nodes x %s (max_nodes)" % (slots, self.max_nodes, self.spn_text)
        requests = job.get("hard_requests") if isinstance(job.get("hard_requests"), Mapping) else {}
        for key in _HOST_REQUESTS:
            value = requests.get(key)
            if value is not None and not _WILDCARDS.search(str(value)):
                for name in str(value).split("|"):
                    self.wanted_hosts.setdefault(name.strip(), job.get("id"))
                return "requests host %s=%s: a new node cannot run it" % (key, value)
        for key in _ARCH_REQUESTS:
            value = requests.get(key)
            if value is not None and self.archs:
                pats = [p.strip() for p in str(value).split("|") if p.strip()]
                if pats and not any(fnmatch.fnmatchcase(a, p) for a in self.archs for p in pats):
                    return "requests %s=%s, which no node has (%s)" % (key, value, ", ".join(sorted(self.archs)))
        if self.node_mem:
            for key in _MEMORY_REQUESTS:
                wanted = _parse_memory(requests.get(key))
                if wanted is not None and wanted > self.node_mem:
                    return "requests %s=%s, more than a node has (%s)" % (key, requests[key], _fmt_bytes(self.node_mem))
        return None

    def _default_waiting(self):
        eligible = []
        for job in self.snap["pending"]:
            why = self._why_not_runnable(job)
            if why is None:
                eligible.append(job)
            else:
                self.ignored.append({"id": job.get("id"), "reason": why})
        return eligible

    # ---- growth ----------------------------------------------------------------------------
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

    def _grow_starcluster(self):
        cfg = self.cfg
        waiting = self.waiting
        if not waiting:
            return 0, "no jobs in qw state"
        # StarCluster compared the *first* queued job it saw (list order), not the oldest.
        first = waiting[0]
        waited = self._waited(first)
        head = "%s in qw, the first listed (%s) waited %s" % (
            _plural(len(waiting), "job"), _job_label(first), fmt_duration(waited))
        if not waited > cfg["job_wait_time"]:
            return 0, "%s <= job_wait_time %s" % (head, fmt_duration(cfg["job_wait_time"]))
        if self.current + self.booting >= self.max_nodes:
            return 0, "%s, but %s (%d booting) >= max_nodes %d" % (
                head, _plural(self.current + self.booting, "node"), self.booting, self.max_nodes)
        count = min(cfg["add_nodes_per_iter"], self._room())
        reason = "%s > job_wait_time %s, %s < max_nodes %d" % (
            head, fmt_duration(cfg["job_wait_time"]), _plural(self.current + self.booting, "node"), self.max_nodes)
        if count < cfg["add_nodes_per_iter"]:
            reason += ", capped by max_nodes=%d" % self.max_nodes
        else:
            reason += ", add_nodes_per_iter=%d" % cfg["add_nodes_per_iter"]
        return count, reason

    def _grow_default(self):
        cfg = self.cfg
        waiting = self.waiting
        if not waiting:
            return 0, "no job waiting that a new node could run"
        # FIX(oldest): the truly oldest job by submit_time, not the first one listed.
        oldest = waiting[0]
        for job in waiting[1:]:
            if self._waited(job) > self._waited(oldest):
                oldest = job
        waited = self._waited(oldest)
        # FIX(slot-aware): pending slots (array tasks x slots per task), not one node per poll.
        slots = pe_slots = 0
        for job in waiting:
            per_task = job.get("slots") if _is_int(job.get("slots")) else 1
            tasks = job.get("task_count") if _is_int(job.get("task_count")) and job["task_count"] > 0 else 1
            slots += per_task * tasks
            if job.get("pe"):
                pe_slots += per_task * tasks
        head = "%s waiting (oldest %s waited %s" % (
            _plural(slots, "slot"), _job_label(oldest), fmt_duration(waited))
        if not waited > cfg["job_wait_time"]:
            return 0, "%s <= job_wait_time %s)" % (head, fmt_duration(cfg["job_wait_time"]))
        head += " > job_wait_time %s), %s" % (fmt_duration(cfg["job_wait_time"]), self.spn_text)
        needed = int(math.ceil(slots / float(self.spn)))
        # FIX(idle capacity): a parallel job waiting next to idle hosts waits for more hosts, not
        # for as many as it needs: those idle hosts count against its need, like booting ones.
        idle = min(self._idle_workers(), int(math.ceil(pe_slots / float(self.spn))))
        need_now = needed - self.booting - idle
        if need_now <= 0:
            return 0, "%s: %s needed, %d already booting%s" % (
                head, _plural(needed, "node"), self.booting, (", %d idle" % idle) if idle else "")
        room = self._room()
        if room <= 0:
            return 0, "%s, but %s (%d booting) >= max_nodes %d" % (
                head, _plural(self.current + self.booting, "node"), self.booting, self.max_nodes)
        per_iter = cfg["add_nodes_per_iter"] or need_now  # 0: no per-poll limit
        count = min(need_now, per_iter, room)
        reason = head
        if self.booting:
            reason += ", %d already booting" % self.booting
        if idle:
            reason += ", %d idle" % idle
        caps = []
        if count < need_now and count == cfg["add_nodes_per_iter"]:  # (never when 0)
            caps.append("add_nodes_per_iter=%d" % cfg["add_nodes_per_iter"])
        if count < need_now and count == room:
            caps.append("max_nodes=%d (%d up, %d booting)" % (self.max_nodes, self.current, self.booting))
        if caps:
            reason += ", capped by " + " and ".join(caps)
        return count, reason

    def _idle_workers(self):
        """Execution hosts (not the master) with every slot free and a known, error-free state."""
        master, slots_of = self.master, self.slots_of
        status = self.status
        names = status.keys() - self.hints["busy"] if self.hints is not None else status
        return sum(1 for name, st in ((n, status[n]) for n in names)
                   if st["exec_host"] and name != master and not st["busy"]
                   and not st["unknown"] and not st["error"] and slots_of.get(name, 0) > 0)

    def _grow_parallelcluster(self):
        """ParallelCluster v2 jobwatcher: desired = busy nodes + ceil(pending slots / slots per node)."""
        waiting = self.waiting
        if not waiting:
            return 0, "no job waiting that fits"
        slots = 0
        for job in waiting:
            per_task = job.get("slots") if _is_int(job.get("slots")) else 1
            tasks = job.get("task_count") if _is_int(job.get("task_count")) and job["task_count"] > 0 else 1
            slots += per_task * tasks
        status = self.status
        names = self.hints["busy"] if self.hints is not None else status
        busy = sum(1 for name in names if status[name]["exec_host"] and name != self.master and status[name]["busy"])
        workers = self.current - (1 if self.master in self.node_names else 0)
        wanted = busy + int(math.ceil(slots / float(self.spn)))
        head = "%s waiting, %s: %d busy + %d needed = %d wanted, %d up + %d booting" % (
            _plural(slots, "slot"), self.spn_text, busy, wanted - busy, wanted, workers, self.booting)
        need_now = wanted - workers - self.booting
        if need_now <= 0:
            return 0, head
        room = self._room()
        if room <= 0:
            return 0, "%s, but %s (%d booting) >= max_nodes %d" % (
                head, _plural(self.current + self.booting, "node"), self.booting, self.max_nodes)
        count = min(need_now, room)
        return count, head + (", capped by max_nodes=%d" % self.max_nodes if count < need_now else "")

    def _grow(self):
        """(count, reason) wanted for the waiting jobs, and (floor, floor_reason) for min_nodes."""
        if self.pc:
            count, reason = self._grow_parallelcluster()
            return count, reason, 0, None
        if self.starcluster:
            # The seed's criteria only: it does not grow a cluster back to min_nodes.
            count, reason = self._grow_starcluster()
            return count, reason, 0, None
        # FIX(min floor): below min_nodes we grow back to it at once (and regardless of
        # stabilization: the floor is a guarantee, not a reaction to load).
        floor = min(max(0, self.min_nodes - self.current - self.booting), self._room())
        floor_reason = None
        if floor:
            floor_reason = "%d up + %d booting < min_nodes %d (the master counts as a node)" % (
                self.current, self.booting, self.min_nodes)
        count, reason = self._grow_default()
        return count, reason, floor, floor_reason

    # ---- shrinking ---------------------------------------------------------------------------
    def _removal_candidates(self):
        """[(host, idle_for, reason)] eligible now, {host: keep reason} for the others, and
        [(host, unknown_for, reason)] for the nodes unknown for ``unknown_timeout`` (see
        :meth:`_unknown_to_remove`)."""
        cfg, now, lean = self.cfg, self.now, self.lean
        cands, keep, dead = [], {}, []
        names = self.node_names
        if lean:
            # a node running a job is only a "keep" text, which lean plans leave out
            if self.hints is not None:
                names = names - self.hints["running"]
                if self.master in self.node_names:
                    names.add(self.master)
            else:
                status = self.status
                names = [n for n in names if not status[n]["jobs"] or n == self.master]
        for name in sorted(names):
            st = self.status[name]
            rec = self.nodes[name]
            if name == self.master:
                keep[name] = "master (never removed%s)" % (", unless kill_cluster" if cfg["kill_cluster"] else "")
                continue
            not_ours = self._not_ours(name, rec)
            if not_ours is not None:
                keep[name] = not_ours
                continue
            if st["jobs"]:
                if not self.lean:
                    keep[name] = "running %s" % _plural(st["jobs"], "job")
                    if st["unknown"] and not self.starcluster:
                        self.warnings.append(
                            "%s: state unknown (load %s, states %r) with %s listed on it; kept, never removed "
                            "while Grid Engine lists a job there: check its execd (if the node is gone, qdel -f "
                            "its jobs and the next polls remove it)" % (
                                name, "-" if st["load"] is None else st["load"], st["states"],
                                _plural(st["jobs"], "job")))
                continue
            if self.starcluster:
                if st["used"]:
                    keep[name] = "%s in use" % _plural(st["used"], "slot")
                    continue
                if st["unknown"]:
                    # StarCluster would remove it: it runs no job that Grid Engine knows of.
                    self.warnings.append("%s: state unknown (load %r, states %r); profile starcluster "
                                         "treats it as idle" % (name, st["load"], st["states"]))
            else:
                if st["used"] or st["reserved"]:
                    keep[name] = "%s%s" % (
                        ("%s in use" % _plural(st["used"], "slot")) if st["used"] else "",
                        ("%s%s reserved" % (", " if st["used"] else "", _plural(st["reserved"], "slot")))
                        if st["reserved"] else "")
                    continue
                # FIX(unknown): a host that reports load "-" or state u cannot be seen idle; one
                # that stays so for unknown_timeout with nothing on it is dead weight and goes.
                if st["unknown"]:
                    load = "-" if st["load"] is None else st["load"]
                    unknown_for = max(0.0, now - self.unknown_since.get(name, now))
                    timeout = cfg["unknown_timeout"]
                    if timeout and unknown_for >= timeout:
                        why = "state unknown for %s >= unknown_timeout %s (load %s, states %r), no job listed on it" % (
                            fmt_duration(unknown_for), fmt_duration(timeout), load, st["states"])
                        dead.append((name, unknown_for, why))
                        continue
                    keep[name] = "state unknown (load %s, states %r): its idleness cannot be known%s" % (
                        load, st["states"], (", removed once unknown for unknown_timeout %s (%s so far)" % (
                            fmt_duration(timeout), fmt_duration(unknown_for))) if timeout else "")
                    self.warnings.append("%s: state unknown (load %s, states %r); kept, check its execd"
                                         % (name, load, st["states"]))
                    continue
                if st["error"]:
                    keep[name] = "queue in error state %r: idleness not trusted" % st["states"]
                    self.warnings.append("%s: queue error state %r; kept, clear it with qmod -c" % (name, st["states"]))
                    continue
                # A waiting job that asks for this very host: removing it would strand the job.
                if name in self.wanted_hosts:
                    keep[name] = "job %s waits for this host" % self.wanted_hosts[name]
                    continue
            last_busy = rec.get("last_busy")
            idle_since = last_busy if last_busy is not None else (rec.get("joined") or rec["first_seen"])
            idle_for = max(0.0, now - idle_since)
            if self.billing == "hourly":
                started = rec.get("joined") or rec["first_seen"]
                mins = int(max(0.0, now - started) // 60) % 60
                if lean and mins < cfg["kill_after"]:
                    continue  # only a "keep" text
                text = "up %dm past the hour" % mins
                if self.starcluster:
                    text = "not running an SGE job, " + text
                else:
                    text = "idle %s, %s" % (fmt_duration(idle_for), text)
                if mins >= cfg["kill_after"]:
                    cands.append((name, idle_for, "%s >= kill_after %dm" % (text, cfg["kill_after"])))
                else:
                    keep[name] = "%s < kill_after %dm" % (text, cfg["kill_after"])
            else:
                # FIX(per-second billing): idle long enough, measured from the last poll that
                # saw the node busy.
                if idle_for >= cfg["idle_time"]:
                    cands.append((name, idle_for, "idle %s %s idle_time %s" % (
                        fmt_duration(idle_for), _cmp(idle_for, cfg["idle_time"]), fmt_duration(cfg["idle_time"]))))
                elif not lean:
                    keep[name] = "idle %s < idle_time %s" % (fmt_duration(idle_for), fmt_duration(cfg["idle_time"]))
        if self.starcluster:
            # StarCluster walked the nodes in cluster order; ours is host-name order.
            cands.sort(key=lambda c: c[0])
        else:
            # Longest idle first, so the floor keeps the most recently useful nodes.
            cands.sort(key=lambda c: (-c[1], c[0]))
        return cands, keep, self._unknown_to_remove(dead, keep)

    def _not_ours(self, name, rec):
        """None if the balancer may remove host ``name``, else the reason it never does.

        FIX(ownership): StarCluster removed any idle node but the master; on a cluster someone
        else built that takes the site's own hosts (on-premises nodes, a login node running an
        execd, GPU boxes).  The balancer removes only the hosts it launched: those the provider
        lists (``launched_hosts``, which the playbook fills from the provider), or, when no list
        is given (the simulator, a plan made by hand), the hosts that filled a node a plan asked
        for (``launched`` in the state).  ``managed_hosts`` adds hosts by pattern (``["*"]``:
        every node, as StarCluster did); ``protected_hosts`` wins over everything.
        """
        cfg = self.cfg
        lname = name.lower()
        for pat in cfg["protected_hosts"]:
            if fnmatch.fnmatchcase(lname, pat.lower()):
                return "protected host (protected_hosts: %s)" % pat
        launched = self.launched
        if (rec.get("launched") is True) if launched is None else (lname in launched):
            return None
        for pat in cfg["managed_hosts"]:
            if fnmatch.fnmatchcase(lname, pat.lower()):
                return None
        return "static host, not launched by the balancer (managed_hosts lets it remove such a host)"

    def _unknown_to_remove(self, dead, keep):
        """The nodes of ``dead`` to remove now; the others get a keep reason.

        When more than half of the worker nodes, and more than one, are unknown at the same time,
        the fault is most likely the qmaster's or the network's, not the nodes': none is removed
        for being unknown (as Kubernetes' cluster autoscaler stops when too many nodes are unready).
        """
        if not dead:
            return []
        workers = sum(1 for name, st in self.status.items() if st["exec_host"] and name != self.master)
        unknown = sum(1 for name in self.unknown_since if name != self.master)
        if unknown > 1 and 2 * unknown > workers:
            why = "%d of %d worker nodes unknown at once: a qmaster or network fault, not dead nodes" % (unknown, workers)
            self.warnings.append("%s; none removed for being unknown" % why)
            for name, unknown_for, reason in dead:
                keep[name] = "%s, but %s" % (reason, why)
            return []
        dead.sort(key=lambda c: (-c[1], c[0]))
        for name, unknown_for, reason in dead:
            self.warnings.append("%s: %s; the plan removes it (growth or min_nodes replaces it if needed)"
                                 % (name, reason))
        return dead

    # ---- job history and stats -----------------------------------------------------------------
    def _history(self):
        prev, now, snap = self.prev, self.now, self.snap
        window = self.cfg["lookback_window"] * 60.0
        pending = {}
        for job in snap["pending"]:
            key = str(job.get("id"))
            old = prev["pending"].get(key) or {}
            pending[key] = {"submit_time": _num(job.get("submit_time"), old.get("submit_time")),
                            "first_seen": old.get("first_seen") if old.get("first_seen") is not None else now}
        if len(pending) > PENDING_RECORDS_LIMIT:
            pending = _oldest_records(pending, PENDING_RECORDS_LIMIT)
        running = {}
        started = [r for r in prev["started"] if r[1] >= now - window]
        finished = [r for r in prev["finished"] if r[1] >= now - window]
        for job in snap["running"]:
            key = str(job.get("id")) if job.get("task") in (None, "") else "%s.%s" % (job.get("id"), job.get("task"))
            start = _num(job.get("start_time"))
            running[key] = start if start is not None else prev["running"].get(key, now)
            if key in prev["running"] or prev["first_poll"]:
                continue
            rec = prev["pending"].get(str(job.get("id")))
            if rec is None:
                continue  # never seen waiting: its wait is unknown
            submit = rec["submit_time"] if rec["submit_time"] is not None else rec["first_seen"]
            begin = running[key]
            if submit is not None and begin is not None and begin >= now - window:
                started.append([key, begin, max(0.0, begin - submit)])
        if prev["last_poll"] is not None:
            # ended between the last poll and this one: take the midpoint as its end
            end = (prev["last_poll"] + now) / 2.0
            for key, start in prev["running"].items():
                if key not in running and start is not None and end >= now - window:
                    finished.append([key, end, max(0.0, end - start)])
        self.jobs_state = {
            "pending": pending,
            "running": running,
            "started": started[-HISTORY_LIMIT:],
            "finished": finished[-HISTORY_LIMIT:],
        }

    def _stats(self):
        snap = self.snap
        acct = snap.get("accounting") if isinstance(snap.get("accounting"), Mapping) else {}

        def mean(rows):
            return sum(r[2] for r in rows) / len(rows) if rows else None

        # qacct (when the snapshot has it) is authoritative; else our own observations.
        avg_duration = _num(acct.get("avg_duration"))
        if avg_duration is None:
            avg_duration = mean(self.jobs_state["finished"])
        avg_wait = _num(acct.get("avg_wait"))
        if avg_wait is None:
            avg_wait = mean(self.jobs_state["started"])
        loads = [_num(h.get("load_avg")) for h in self.hosts.values()]
        loads = [v for v in loads if v is not None]
        slots = sum(h.get("slots_total") for h in self.hosts.values() if _is_int(h.get("slots_total")))
        queued = 0
        for job in snap["pending"]:
            queued += job["task_count"] if _is_int(job.get("task_count")) and job["task_count"] > 0 else 1
        return {
            "time": self.now,
            "hosts": len(self.hosts),
            "running_jobs": len(snap["running"]),
            "queued_jobs": queued,
            "slots": slots,
            "avg_duration": avg_duration,
            "avg_wait": avg_wait,
            "avg_load": (sum(loads) / len(loads)) if loads else 0.0,
        }

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
            self.jobs_state = {"pending": {}, "running": {}, "started": [], "finished": []}
            stats = None
        else:
            self._history()
            stats = self._stats()

        # new state
        # Removed nodes stay recorded until a poll no longer sees them.
        if self.lean:  # self.nodes holds fresh copies no one else sees
            nodes_state = self.nodes
        else:
            nodes_state = {name: dict(self.nodes[name]) for name in sorted(self.nodes)}
        booting = list(self.booting_times) + [now] * add
        last_change, last_change_reason = self.last_change, self.last_change_reason
        if add or remove:
            last_change = now
            last_change_reason = "plan: " + "; ".join(
                (["add %d" % add] if add else []) + (["remove " + ", ".join(remove)] if remove else []))
        new_state = {
            "schema": SCHEMA,
            "profile": cfg["profile"],
            "last_poll": now,
            "last_change": last_change,
            "last_change_reason": last_change_reason,
            "cluster_size": self.cluster_size,
            "nodes": nodes_state,
            "booting": [{"requested_at": t} for t in booting],
            "jobs": self.jobs_state,
        }
        if self.launch_mark_known:
            new_state["last_launch_failure"] = self.launch_mark
        if self.removed:  # (without the key when empty: name_reuse_time 0 writes the state as before)
            new_state["removed"] = dict(self.removed)
        if self.unknown_since:  # (without the key when no host is unknown: the state as before)
            new_state["unknown"] = dict(self.unknown_since)

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
