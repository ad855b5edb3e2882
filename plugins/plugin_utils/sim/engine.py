# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discrete-event simulator: a workload through Grid Engine's default scheduler and a balancer.

The balancer is the real :func:`policy.elastic.decide`, polled every ``interval`` seconds with
snapshots in the docs/snapshot.md schema and the state it returned last time.  Pure: no clock, no
I/O, no Ansible import.  The model (docs/simulator.md has the long version):

* **Nodes** have ``slots_per_node`` slots.  A node asked for at ``t`` is billed from ``t`` and
  joins the scheduler at ``t + boot_delay``; a removed node is billed until the poll that removed
  it.  The master (``"master"``) counts as a node for ``min_nodes``/``max_nodes`` (as in
  StarCluster) but runs no jobs and is not billed: it is the same for every policy.
* **Scheduler**: Grid Engine's default behaviour, run at every event (submit, job end, node
  join): pending jobs in submit order, every job that fits starts, no reservation (a wide job
  can be overtaken for ever by narrow ones).  A job needs all its slots at once.  A job wider
  than one node is a parallel job with allocation rule ``$fill_up`` over the nodes in join order
  (oldest first): it fits when the free slots of all nodes together are enough.  Narrow jobs are
  packed the same way, so the newest nodes are the first to drain.
* **Polls** at ``t0 + k * interval``; events at the same instant are applied first.  A poll is
  *skipped* only when it provably cannot change anything (see :meth:`_Sim._wake`); the state
  fields a skipped poll would have refreshed that later decisions read (``nodes.*.last_busy``)
  are brought up to date by the engine exactly as that poll would have.  ``skip=False`` calls
  ``decide`` at every tick; the unit tests check both give identical results.  A poll that
  provably adds and removes nothing is *emulated* (it only records what changed:
  :meth:`_Sim._emulate_quiet_poll`): the poll right after the set of hosts changed when
  ``stabilization_time > 0``, and any poll at which nothing waits and no idle host is due for
  removal, or jobs wait and the profile's growth rule wants no node (or is on hold).  The lean
  ``decide`` gets each host's status from the engine (``hints``) instead of deriving it again;
  both are unit-tested the same way.

Policies: ``default``, ``starcluster``, ``parallelcluster`` (profiles of ``decide``), ``static``
(``cap`` nodes from the first submit to the last job end, no boot wait), and ``optimum`` (the
lower bound on cost: every slot-second of the trace packed on nodes with zero wait).
"""

from __future__ import annotations

import bisect
import gc
import heapq
import math
import random

from ..policy import elastic
from ..policy.elastic_removal import removal_due

POLICIES = ("default", "starcluster", "parallelcluster", "static", "optimum")
DECIDE_POLICIES = ("default", "starcluster", "parallelcluster")
BILLING = ("per_second", "hourly")
MASTER = "master"
_EPS = 1e-6
#: Trace times count from the trace's start (often 0); the engine adds this so that ``now`` looks
#: like a clock (seconds since the epoch, 2001-09-09) and no time is ever 0 or negative.
EPOCH = 1000000000.0


def policy_config(policy, cap, slots_per_node, billing="per_second", overrides=None):
    """The ``decide`` config of a simulated policy (``cap`` worker nodes, plus the master).

    Only the cluster's size and shape (and, for ``default``, the billing mode) are set: every
    other option is the profile's shipped default (``elastic.default_config``), so the policy
    measured as ``default`` is the one ``ansible-playbook gridengine.balancer.loadbalance`` runs.
    ``overrides`` (candidate options of a tuning run) win over everything.
    """
    if policy not in DECIDE_POLICIES:
        raise ValueError("policy: %r does not call decide (one of %s)" % (policy, ", ".join(DECIDE_POLICIES)))
    if billing not in BILLING:
        raise ValueError("billing: must be one of %s, got %r" % (", ".join(BILLING), billing))
    cfg = {"profile": policy, "master": MASTER, "max_nodes": cap + 1, "min_nodes": 1,
           "slots_per_node": slots_per_node}
    if policy == "default":
        cfg["billing"] = billing
    elif policy == "parallelcluster":
        cfg["billing"] = "per_second"
    cfg.update(overrides or {})
    return elastic.validate_config(cfg)


def shifted(jobs, seed, spread=60.0):
    """A copy of ``jobs`` with each submit time moved later by uniform(0, spread) s, re-sorted."""
    rng = random.Random(seed)
    out = [j._replace(submit=j.submit + rng.uniform(0.0, spread)) for j in jobs]
    out.sort(key=lambda j: (j.submit, j.line))
    return out


class Result(object):
    """What one simulated run produced; :func:`summarize` turns it into figures."""

    def __init__(self, policy, billing, cap, slots_per_node):
        self.policy = policy
        self.billing = billing            # the billing the policy's rules followed
        self.cap = cap
        self.slots_per_node = slots_per_node
        self.lives = []                   # [(billed from, billed until)] per node
        self.waits = []                   # start - submit, per job
        self.timeline = []                # [(time, billed nodes, pending jobs)] at each change
        self.max_nodes = 0
        self.launches = 0
        self.scale_events = 0             # polls whose plan added or removed nodes
        self.decide_calls = 0
        self.emulated = 0                 # polls that only recorded a change of hosts (no call)
        self.ticks = 0                    # polls in the run (called or skipped)
        self.start = 0.0
        self.end = 0.0
        self.unplaceable = 0              # jobs wider than cap x slots_per_node (never run)
        self.node_seconds = None          # optimum only: slot-seconds / slots_per_node
        # where the billed time went (policies that launch nodes; see :func:`breakdown`)
        self.boot_seconds = 0.0           # launched, not yet joined (boot delay)
        self.idle_seconds = 0.0           # joined, running no job
        self.slot_seconds = 0.0           # slots x run time of every job started
        self.unused_launches = 0          # nodes removed without ever running a job
        self.unused_seconds = 0.0         # their billed time (boot and idle)


def percentile(ordered, q):
    """The ``q`` quantile (0..1) of the sorted list ``ordered``, interpolated; 0.0 when empty."""
    n = len(ordered)
    if not n:
        return 0.0
    pos = (n - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def node_hours_and_costs(lives):
    """(node-hours, per-second cost, hourly cost) of nodes billed over ``lives`` [(from, until)].

    Per-second billing counts at least a minute per node; hourly billing every started hour.
    """
    spans = [max(0.0, b - a) for a, b in lives]
    return (sum(spans) / 3600.0, sum(max(60.0, x) for x in spans) / 3600.0,
            float(sum(max(1, int(math.ceil(x / 3600.0 - 1e-9))) for x in spans)))


def summarize(result, price=1.0):
    """Figures of a run: node-hours, cost under both billings, waits, peaks, churn."""
    waits = sorted(result.waits)
    n = len(waits)

    def pct(q):
        return percentile(waits, q)

    if result.node_seconds is not None:
        node_hours = result.node_seconds / 3600.0
        per_second = hourly = node_hours
    else:
        node_hours, per_second, hourly = node_hours_and_costs(result.lives)
    days = max(result.end - result.start, 1.0) / 86400.0
    return {
        "policy": result.policy,
        "billing": result.billing,
        "node_hours": node_hours,
        "cost_per_second": per_second * price,
        "cost_hourly": hourly * price,
        "wait_mean": (sum(waits) / n) if n else 0.0,
        "wait_median": pct(0.5),
        "wait_p95": pct(0.95),
        "max_nodes": result.max_nodes,
        "launches_per_day": result.launches / days,
        "scale_events": result.scale_events,
        "decide_calls": result.decide_calls,
        "ticks": result.ticks,
        "jobs": n,
        "unplaceable": result.unplaceable,
    }


def breakdown(result):
    """Where a run's billed node-hours went: ``boot`` (launched, not joined), ``idle`` (joined,
    running no job: the idle tail removal waits out), ``used`` (slot-seconds of the jobs / slots per
    node: what ``optimum`` bills), ``partly_free`` (the free slots of nodes running a job, the
    rest: only nodes with more than one slot have any), and ``unused_launches`` /
    ``unused_hours``: nodes removed without ever running a job, and their billed hours (boot
    and idle), all in node-hours.  None for ``optimum``."""
    if result.node_seconds is not None:
        return None
    node_hours = node_hours_and_costs(result.lives)[0]
    boot, idle = result.boot_seconds / 3600.0, result.idle_seconds / 3600.0
    used = result.slot_seconds / float(result.slots_per_node) / 3600.0
    return {"node_hours": node_hours, "boot": boot, "idle": idle, "used": used,
            "partly_free": node_hours - boot - idle - used, "unused_launches": result.unused_launches,
            "unused_hours": result.unused_seconds / 3600.0, "launches": result.launches}


def optimum(jobs, cap, slots_per_node):
    """The lower bound: total slot-seconds / slots per node, zero wait."""
    res = Result("optimum", "any", cap, slots_per_node)
    fit = [j for j in jobs if j.procs <= cap * slots_per_node]
    res.unplaceable = len(jobs) - len(fit)
    res.node_seconds = sum(j.procs * j.run for j in fit) / float(slots_per_node)
    res.waits = [0.0] * len(fit)
    if fit:
        res.start = fit[0].submit
        res.end = max(j.submit + j.run for j in fit)
        deltas = sorted([(j.submit, j.procs) for j in fit] + [(j.submit + j.run, -j.procs) for j in fit],
                        key=lambda d: (d[0], d[1]))
        used = peak = 0
        for when, delta in deltas:
            used += delta
            peak = max(peak, used)
        res.max_nodes = int(math.ceil(peak / float(slots_per_node)))
    return res


def simulate(jobs, policy, cap, slots_per_node=1, boot_delay=120.0, billing="per_second", config=None,
             skip=True, timeline=True, lean=True, hints=True):
    """Replay ``jobs`` (swf.Job, submit order) under ``policy``; return a :class:`Result`.

    ``cap``: the most worker nodes (``max_nodes`` is ``cap + 1``: the master counts).
    ``config``: the ``decide`` config (default :func:`policy_config`).  ``skip=False`` polls
    ``decide`` at every tick (slow; for checking that skipping changes nothing).  ``lean=True``
    calls ``elastic._decide_validated(..., lean=True)`` (the config validated once, no texts for
    people); ``lean=False`` the public ``decide``.  Both give the same run (unit-tested).
    ``hints=True`` (with ``lean``): the engine keeps each host's status (what ``decide`` derives
    from the snapshot's host entry) up to date as jobs start and end and hands it to the lean
    entry point, so a poll does not recompute it for every host (unit-tested to change nothing).
    """
    if policy not in POLICIES:
        raise ValueError("policy: must be one of %s, got %r" % (", ".join(POLICIES), policy))
    if not (isinstance(cap, int) and cap >= 1):
        raise ValueError("cap: must be an integer >= 1, got %r" % (cap,))
    if not (isinstance(slots_per_node, int) and slots_per_node >= 1):
        raise ValueError("slots_per_node: must be an integer >= 1, got %r" % (slots_per_node,))
    if math.isnan(boot_delay) or boot_delay < 0:
        raise ValueError("boot_delay: must be >= 0 seconds, got %r" % (boot_delay,))
    if policy == "optimum":
        return optimum(jobs, cap, slots_per_node)
    if policy in DECIDE_POLICIES and config is None:
        config = policy_config(policy, cap, slots_per_node, billing)
    if policy in DECIDE_POLICIES:
        config = elastic.validate_config(config)
    sim = _Sim(jobs, policy, cap, slots_per_node, float(boot_delay), billing, config, skip, timeline, lean,
               hints and lean)
    # The run allocates millions of short-lived dicts and no reference cycles: the cyclic
    # collector only costs time here (about a quarter of a KTH run), so it is paused.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return sim.run()
    finally:
        if was_enabled:
            gc.enable()


class _Node(object):
    __slots__ = ("name", "seq", "launched", "up", "free", "jobs", "busy_since", "host", "status", "boot_end", "order",
                 "idle_from", "ran")

    def __init__(self, name, seq, launched):
        self.name = name
        self.seq = seq
        self.launched = launched
        self.up = False
        self.free = 0
        self.jobs = 0
        self.busy_since = None
        self.host = None
        self.status = None
        self.boot_end = launched          # when it joins (the engine sets it at launch)
        self.idle_from = launched         # since when it runs no job (once joined)
        self.ran = False                  # ran a job at some time
        self.order = None                 # its place in the join order (_Sim: the key of ``open``)


_END, _BOOT = 0, 1


def host_entry(slots):
    """The snapshot host entry of a node that joined with ``slots`` slots (idle, ``all.q``)."""
    return {"arch": "lx-amd64", "num_proc": slots, "load_avg": 0.0, "mem_total": None, "mem_used": None,
            "slots_total": slots, "slots_used": 0, "slots_reserved": 0, "states": "", "queues": ["all.q"],
            "running_jobs": 0}


def pending_entry(job, submit_time):
    """The snapshot entry of ``job`` (swf.Job) waiting since ``submit_time``."""
    return {"id": job.id, "name": "j%d" % job.id, "owner": "u%d" % job.user, "project": None,
            "state": "qw", "priority": 0.0, "submit_time": submit_time, "tasks": None, "task_count": 1,
            "slots": job.procs, "pe": "mpi" if job.procs > 1 else None,
            "pe_range": str(job.procs) if job.procs > 1 else None, "hard_requests": {},
            "hard_queues": [], "held": False, "error": False}


def running_entry(job, alloc, now):
    """The snapshot entry of ``job`` started at ``now`` on ``alloc`` (:func:`fill_up`)."""
    return {"id": job.id, "task": None, "name": "j%d" % job.id, "owner": "u%d" % job.user,
            "project": None, "state": "r", "queue": "all.q", "host": alloc[0][0].name,
            "hosts": {n.name: s for n, s in alloc}, "slots": job.procs, "start_time": now}


def fill_up(up, need, now):
    """Place a job of ``need`` slots on the nodes ``up`` in join order (``$fill_up``).

    Takes the slots (each node's ``free``, ``jobs``, ``busy_since`` and host entry) and returns
    ``[(node, slots)]``; the caller made sure the free slots of ``up`` are enough.
    """
    alloc = []
    for node in up:
        if node.free:
            take = node.free if node.free < need else need
            node.free -= take
            if not node.jobs:
                node.busy_since = now
            node.jobs += 1
            host = node.host
            host["slots_used"] += take
            host["load_avg"] = float(host["slots_used"])
            host["running_jobs"] += 1
            alloc.append((node, take))
            need -= take
            if not need:
                break
    return alloc


def give_back(alloc):
    """The slots of a job that ended (``alloc`` from :func:`fill_up`) free again."""
    for node, take in alloc:
        node.free += take
        node.jobs -= 1
        host = node.host
        host["slots_used"] -= take
        host["load_avg"] = float(host["slots_used"])
        host["running_jobs"] -= 1


class _Clock(object):
    """The event queue and the poll grid of a simulated cell; ``burst._Burst`` shares them.

    Keeps ``events`` (a heap of ``(time, kind, seq, payload)``), ``t0`` (the first poll, set
    when the run starts), ``interval``, ``state`` (the last plan's state, or None),
    ``last_call`` (the time of the last ``decide`` call, or None), and the counts of nodes
    named (``counter``) and billed (``billed``).
    """

    def _start_clock(self, interval):
        self.interval = interval
        self.events = []
        self.seq = 0
        self.t0 = None
        self.state = None
        self.last_call = None
        self.counter = 0
        self.billed = 0

    def _push(self, when, kind, payload):
        self.seq += 1
        heapq.heappush(self.events, (when, kind, self.seq, payload))

    def _last_tick_before(self, when):
        k = int(math.ceil((when - self.t0) / self.interval - _EPS)) - 1
        return self.t0 + k * self.interval

    def _grid_ceil(self, when):
        k = int(math.ceil((when - self.t0) / self.interval - _EPS))
        return self.t0 + max(k, 0) * self.interval

    def _call_at(self, cursor, first, wake):
        """The poll (on the grid, not before ``cursor``) to run before the next event or submit at
        ``first``: the grid time at or after ``wake(cursor)``, the earliest time a poll could
        change anything; inf when the event comes first (it is applied before any poll)."""
        if first <= cursor:
            return math.inf
        when = wake(cursor)
        return self._grid_ceil(when) if when < math.inf else math.inf

    def _due(self, now):
        """The ``(kind, payload)`` of the events at ``now``, taken off the queue in order."""
        events = self.events
        while events and events[0][0] == now:
            _when, kind, _seq, payload = heapq.heappop(events)
            yield kind, payload

    def _loop(self, jobs, polls=True):
        """Run the events, submits and polls of ``jobs`` (submit order) to the end.

        The cell says what a poll does (``_poll_step``), what an event does (``_event``: True for
        a job's end), what a submit does (``_submit``) and what follows the events of an
        instant (``_settle``); events at the same instant come before the submits, both before
        a poll.  Returns (the last instant, the last job end).
        """
        events = self.events
        nxt = 0            # next job to submit
        cursor = self.t0   # next poll not yet considered
        now = last_end = self.t0
        while True:
            first = min(events[0][0] if events else math.inf, jobs[nxt].submit if nxt < len(jobs) else math.inf)
            if polls:
                call_at = self._call_at(cursor, first, self._wake)
                if call_at < first:
                    now = call_at
                    self._poll_step(now)
                    cursor = now + self.interval
                    continue
                if first == math.inf:
                    break
                cursor = max(cursor, self._grid_ceil(first))
            elif first == math.inf:
                break
            now = first
            for kind, payload in self._due(now):
                if self._event(kind, payload, now):
                    last_end = now
            while nxt < len(jobs) and jobs[nxt].submit == now:
                self._submit(nxt)
                nxt += 1
            self._settle(now)
        return now, last_end

    def _node_up(self, node):
        """``node`` joins: ``spn`` free slots, a host entry, last in the placement order."""
        node.up = True
        node.free = self.spn
        node.host = host_entry(self.spn)
        self.hosts[node.name] = node.host
        self._place(node)

    def _place(self, node):
        """``node`` takes the last place in the placement order (``up``, what :func:`fill_up` walks)."""
        self.up.append(node)

    def _unplace(self, node):
        """``node`` (running nothing) leaves the placement order."""
        self.up.remove(node)

    def _node_gone(self, name, now):
        """The plan removed ``name`` (launched, running nothing): billed until ``now``; the node."""
        node = self.nodes.pop(name)
        if node.jobs:
            raise RuntimeError("%s: the plan removed a node that runs %d job(s)" % (name, node.jobs))
        if node.up:
            self._unplace(node)
            del self.hosts[name]
        self.billed -= 1
        self.res.lives.append((node.launched, now))
        return node

    def _join_event(self, name):
        node = self.nodes.get(name)
        if node is not None:   # (not removed while it booted)
            self._join(node)

    def _went_idle(self, node, now):
        """A skipped poll that saw this node busy would have set its last_busy: do it here."""
        tick, records = self._skipped_tick(now)
        if records is not None:
            _seen_busy(records, node, tick)

    def _skipped_tick(self, now):
        """(the last poll tick before ``now``, the state's node records) when that tick came after
        the last ``decide`` call (a skipped poll), else (None, None): what :meth:`_went_idle`
        needs, worked out once for all the nodes a job leaves at ``now``."""
        if self.state is None:
            return None, None
        tick = self._last_tick_before(now)
        if self.last_call is None or tick > self.last_call:
            return tick, self.state.get("nodes", {})
        return None, None


def _seen_busy(records, node, tick):
    """The skipped poll at ``tick`` (see _Clock._skipped_tick) saw ``node`` busy if it was busy
    by then: its record's last_busy moves on to ``tick``."""
    if tick >= node.busy_since:
        rec = records.get(node.name)
        if rec is not None and (rec.get("last_busy") is None or rec["last_busy"] < tick):
            rec["last_busy"] = tick


class _Sim(_Clock):

    def __init__(self, jobs, policy, cap, spn, boot_delay, billing, config, skip, timeline, lean=True,
                 hints=False):
        self.policy = policy
        self.lean = lean
        # per-host facts for elastic._decide_validated(hints=...), kept up to date by the engine
        self.status = {}         # name -> what decide's _host_status gives for the host entry
        self.slots_of = {}       # name -> slots (no queue list in the snapshot: slots_total)
        self.busy = set()        # names of nodes running a job (status busy, jobs > 0)
        self.idle = set()        # names of nodes up and running no job
        self.names = {MASTER}    # the hosts and the master: decide's node names
        self.came = set()        # hosts that joined since the last poll's state was made
        self.went = set()        # hosts that left since then
        self.hints = {"status": self.status, "slots_of": self.slots_of, "known_queues": (),
                      "archs": (), "node_mem": None, "busy": self.busy, "running": self.busy,
                      "unknown": frozenset(), "idle": self.idle, "names": self.names,
                      "came": self.came, "went": self.went} if hints else None
        # the master is no execution host: decide's _host_status(master, None)
        self.status[MASTER] = {"busy": False, "unknown": False, "error": False, "jobs": 0, "used": 0,
                               "reserved": 0, "exec_host": False, "load": None, "states": ""}
        self.cap = cap
        self.spn = spn
        self.boot_delay = boot_delay
        self.cfg = config
        self.skip = skip
        self.keep_timeline = timeline
        self.jobs = [j._replace(submit=j.submit + EPOCH) for j in jobs if j.procs <= cap * spn]
        self.procs = [j.procs for j in self.jobs]  # (read by every scheduling pass)
        self.res = Result(policy, config["billing"] if config else billing, cap, spn)
        self.res.unplaceable = len(jobs) - len(self.jobs)
        self._start_clock(float(config["interval"]) if config else 60.0)
        self.nodes = {}          # name -> _Node (launched, not yet terminated)
        self.hosts = {}          # snapshot "hosts", kept up to date
        self.pending = {}        # job index -> snapshot entry (dict keeps submit order)
        self.running = {}        # job index -> (snapshot entry, [(node, slots)])
        self.running_entries = {}  # job index -> snapshot entry (the snapshot's "running", in start order)
        self.stale = set()       # nodes whose host entry and status wait for the next poll (_refresh_hosts)
        self.pending_slots = 0     # the slots the waiting jobs need (decide's growth counts them)
        self.pending_pe_slots = 0  # those of the parallel jobs among them
        # the placement order: the nodes with a free slot, in join order (those fill_up would take)
        self.open = []           # their places in the join order (node.order), sorted
        self.at = {}             # place in the join order -> node
        self.joins = 0
        self.total_free = 0
        self.booting = 0
        self.dirty = True
        self.host_changed = True

    # ---- bookkeeping ---------------------------------------------------------------------
    def _record(self, now):
        if self.billed > self.res.max_nodes:
            self.res.max_nodes = self.billed
        if self.keep_timeline:
            point = (now, self.billed, len(self.pending))
            tl = self.res.timeline
            if not tl or tl[-1][1:] != point[1:]:
                tl.append(point)

    def _launch(self, now, count, boot_delay):
        for _i in range(count):
            self.counter += 1
            node = _Node("node%05d" % self.counter, self.counter, now)
            node.boot_end = node.idle_from = now + boot_delay
            self.nodes[node.name] = node
            self.booting += 1
            self.billed += 1
            self.res.launches += 1
            self._push(now + boot_delay, _BOOT, node.name)

    def _join(self, node):
        self.booting -= 1
        self._node_up(node)
        # the same dict elastic._Decision._host_status builds from node.host
        node.status = {"busy": False, "jobs": 0, "used": 0, "reserved": 0, "unknown": False, "error": False,
                       "exec_host": True, "load": 0.0, "states": ""}
        self.status[node.name] = node.status
        self.slots_of[node.name] = self.spn
        if self.hints is not None:
            self.hints["known_queues"] = ("all.q",)
            self.hints["archs"] = ("lx-amd64",)
        self.total_free += self.spn
        self._hosts_changed(node.name, True)

    def _place(self, node):
        """``node`` joined: the last place in the join order, with free slots (``open``)."""
        node.order = self.joins   # (the last place: ``open`` stays sorted)
        self.joins += 1
        self.open.append(node.order)
        self.at[node.order] = node

    def _unplace(self, node):
        """``node`` leaves (it runs nothing: all its slots are free, so it is in ``open``)."""
        del self.open[bisect.bisect_left(self.open, node.order)]
        del self.at[node.order]

    def _hosts_changed(self, name, joined):
        """Host ``name`` joined (``joined``) or left: the node names and idle hosts of the hints, and
        the net change since the last poll (a host that left and came back cancels out)."""
        self.host_changed = True
        if joined:
            self.names.add(name)
            self.idle.add(name)
            new, undone = self.came, self.went
        else:
            self.names.discard(name)
            self.idle.discard(name)
            new, undone = self.went, self.came
        if name in undone:
            undone.discard(name)
        else:
            new.add(name)

    def _terminate(self, name, now):
        node = self._node_gone(name, now)
        res = self.res
        if node.up:
            res.boot_seconds += node.boot_end - node.launched
            res.idle_seconds += now - node.idle_from
        else:
            res.boot_seconds += now - node.launched
        if not node.ran:
            res.unused_launches += 1
            res.unused_seconds += now - node.launched
        if node.up:
            del self.status[name]
            del self.slots_of[name]
            if not self.hosts and self.hints is not None:
                self.hints["known_queues"] = self.hints["archs"] = ()
            self.total_free -= node.free
            self._hosts_changed(name, False)
        else:
            self.booting -= 1
            self.host_changed = True

    # ---- the scheduler ---------------------------------------------------------------------
    def _start(self, idx, now):
        """Start job ``idx`` at ``now``, its slots taken as :func:`fill_up` takes them.

        Only the node's own counters and the busy and idle sets change here; its host entry and
        status (what the next poll reads) are brought up to date at that poll
        (:meth:`_refresh_hosts`).  This per-node work is the scheduler's inner loop on wide jobs
        (a 40,000-job replay places millions of job-node pairs, between a few hundred polls).
        """
        job = self.jobs[idx]
        del self.pending[idx]
        need = job.procs
        idle, busy, res, stale, at = self.idle, self.busy, self.res, self.stale, self.at
        alloc = []
        for place in self.open:     # (the nodes with a free slot, in join order: those fill_up takes)
            node = at[place]
            free = node.free
            take = free if free < need else need
            node.free = free - take
            if node.jobs:
                node.jobs += 1
            else:  # it was idle
                node.jobs = 1
                node.busy_since = now
                idle.discard(node.name)
                busy.add(node.name)
                res.idle_seconds += now - node.idle_from
                node.ran = True
            stale.add(node)
            alloc.append((node, take))
            need -= take
            if not need:
                break
        # every node taken but the last gave all its free slots; the last one may have some left
        del self.open[:len(alloc) if not alloc[-1][0].free else len(alloc) - 1]
        self.total_free -= job.procs
        self.pending_slots -= job.procs
        if job.procs > 1:
            self.pending_pe_slots -= job.procs
        res.slot_seconds += job.procs * job.run
        entry = running_entry(job, alloc, now)
        self.running[idx] = (entry, alloc)
        self.running_entries[idx] = entry
        res.waits.append(now - job.submit)
        self._push(now + job.run, _END, idx)

    def _schedule(self, now):
        """Grid Engine's default scheduling pass: the waiting jobs in submit order, each one that
        fits the free slots starts.  The free slots only go down during a pass and a start only
        removes its own job, so the jobs to start are picked first and started after."""
        free = self.total_free
        if not self.pending or free <= 0:
            return
        procs = self.procs
        starts = []
        for idx in self.pending:
            need = procs[idx]
            if need <= free:
                starts.append(idx)
                free -= need
                if free <= 0:
                    break
        for idx in starts:
            self._start(idx, now)

    def _end(self, idx, now):
        """Job ``idx`` ends at ``now``: its slots free again (as :func:`give_back` frees them; the
        host entries wait for the next poll, see :meth:`_start`)."""
        _run, alloc = self.running.pop(idx)
        del self.running_entries[idx]
        idle, busy, nodes, stale = self.idle, self.busy, self.nodes, self.stale
        tick, records = self._skipped_tick(now)
        for node, take in alloc:
            if not node.free:
                bisect.insort(self.open, node.order)
            node.free += take
            node.jobs -= 1
            stale.add(node)
            if not node.jobs:
                busy.discard(node.name)
                idle.add(node.name)
                node.idle_from = now
                if records is not None:  # (_went_idle)
                    _seen_busy(records, node, tick)
            if node.name not in nodes:
                raise RuntimeError("job ended on a terminated node")
        self.total_free += self.procs[idx]

    def _refresh_hosts(self):
        """Bring the host entry and status of every node whose jobs changed since the last poll up
        to date (what :func:`fill_up` and :func:`give_back` write, and what ``decide``'s
        ``_host_status`` makes of the entry: the ``hints``); a node's used slots are its slots
        less its free ones, and they are 0 exactly when it runs no job."""
        spn = self.spn
        for node in self.stale:
            host, st = node.host, node.status
            used = spn - node.free
            host["slots_used"] = st["used"] = used
            host["load_avg"] = st["load"] = float(used)
            host["running_jobs"] = st["jobs"] = node.jobs
            st["busy"] = node.jobs > 0 or used > 0
        self.stale.clear()

    def _submit(self, idx):
        job = self.jobs[idx]
        self.pending[idx] = pending_entry(job, job.submit)
        self.pending_slots += job.procs
        if job.procs > 1:  # (a parallel job: pending_entry gives it a PE)
            self.pending_pe_slots += job.procs

    # ---- the balancer -----------------------------------------------------------------------
    def _wake(self, cursor):
        """Earliest time >= cursor at which a poll could change anything (inf: none before an event).

        ``decide`` reads the clock only through these comparisons: a waiting job's age against
        ``job_wait_time``; the time since the last change against ``stabilization_time``; a
        booting node's age against ``boot_timeout``; a node's idle time against ``idle_time``
        (per-second billing) or its minutes past the hour against ``kill_after`` (hourly); and
        texts.  Between two events the snapshot does not change, so a poll can act only when
        one of these comparisons turns true.  Whatever the profile, nothing is added while
        ``current + booting >= max_nodes`` and nothing is removed while a job waits or from a
        busy node; so with jobs waiting at the cap, or no job waiting and no idle node, no poll
        can act until the next event.  After a poll that did nothing (and no event since),
        only a comparison that turns true *later* can make the next one act.
        """
        if self.state is None or self.host_changed:
            return cursor
        wake = self._next_change(cursor)
        if not self.skip:
            # every tick, until nothing can ever change again (the end of the run)
            return cursor if (wake < math.inf or self.events or self.pending) else math.inf
        return wake

    def _next_change(self, cursor):
        cfg, st = self.cfg, self.state
        lower = cursor if self.dirty else self.last_call + _EPS
        last_change = st.get("last_change")
        stable_at = last_change + cfg["stabilization_time"] if last_change is not None else -math.inf
        times = []
        for rec in st.get("booting", []):
            times.append(rec["requested_at"] + cfg["boot_timeout"] + _EPS)
        if self.pending:
            if 1 + len(self.nodes) < cfg["max_nodes"]:
                if self.policy == "parallelcluster":
                    grow_at = -math.inf
                else:
                    oldest = self.jobs[next(iter(self.pending))].submit
                    grow_at = oldest + cfg["job_wait_time"] + _EPS
                times.append(max(grow_at, stable_at))
        else:
            hourly = self.policy == "starcluster" or cfg["billing"] == "hourly"
            for name in self.idle:        # (the nodes up and running nothing; the order does not matter)
                rec = st["nodes"].get(name)
                if rec is None:
                    return cursor
                if hourly:
                    # removable while up >= kill_after minutes past its hour (and stable): not
                    # monotonic, so the earliest time that is both, after the last poll that
                    # found it not so (or, after an event, from now on).
                    began = rec.get("joined") or rec["first_seen"]
                    opens = began + cfg["kill_after"] * 60.0
                    width = (60 - cfg["kill_after"]) * 60.0

                    def in_window_from(when):
                        start = opens + math.floor((when - opens) / 3600.0) * 3600.0
                        return when if when < start + width else start + 3600.0

                    if self.dirty:
                        at = in_window_from(max(cursor, stable_at))
                    else:
                        was = self.last_call
                        if was >= stable_at and in_window_from(was) == was:
                            at = in_window_from(opens + (math.floor((was - opens) / 3600.0) + 1) * 3600.0)
                        else:
                            at = in_window_from(max(was, stable_at))
                            if at <= was:
                                at = was + _EPS
                    times.append(at)
                    continue
                else:
                    since = rec.get("last_busy")
                    if since is None:
                        since = rec.get("joined") or rec["first_seen"]
                    at = since + cfg["idle_time"]
                times.append(max(at, stable_at))
        best = math.inf
        for when in times:
            if when >= lower and when < best:
                best = when
            elif when < lower and self.dirty:
                best = min(best, cursor)
        return max(best, cursor)

    def _snapshot(self, now):
        return {"schema": 1, "taken_at": now, "flavour": "simulated", "cell": "default",
                "master": MASTER, "hosts": self.hosts, "pending": list(self.pending.values()),
                "running": list(self.running_entries.values())}

    def _can_emulate(self):
        """True if the next poll may be one the engine can emulate (see _emulate_quiet_poll).

        Only with the hints (the lean call), skipping, a state written by a lean call, no
        ``min_nodes`` floor (never needed with ``min_nodes <= 1``: the master counts) and
        ``kill_cluster`` off; and only when the set of hosts changed or a job waits.
        """
        cfg, st = self.cfg, self.state
        return (self.hints is not None and self.skip and (self.host_changed or self.pending) and st is not None
                and cfg["min_nodes"] <= 1 and not cfg["kill_cluster"]
                and st.get("cluster_size") is not None and isinstance(st.get("nodes"), dict))

    def _quiet(self, now, nodes, came, booting, stable):
        """True if the poll at ``now`` provably adds and removes nothing.

        ``nodes`` are the node records of the state, ``came`` the records of the hosts that just
        joined, ``booting`` the requests still booting after this poll's census, ``stable``
        whether the cluster is stable at this poll.  With a job waiting, nothing is removed (no
        host is ever unknown here), and the profile's growth (:meth:`_grows`) must be nil or on
        hold; with none waiting, no profile grows, and no idle host may pass its billing's
        removal rule (elastic_removal.Removal._removal_candidates, which keeps more hosts than
        this for other reasons, never fewer).
        """
        if self.pending:
            return not (stable and self._grows(now, booting))
        cfg = self.cfg
        hourly = self.policy == "starcluster" or cfg["billing"] == "hourly"
        for name in self.idle:
            rec = came.get(name) or nodes.get(name)
            if rec is None or removal_due(rec, now, cfg, hourly):
                return False
        return True

    def _grows(self, now, booting):
        """Whether the profile's growth rule wants a node for the waiting jobs at ``now``, with
        ``booting`` requests still booting (elastic_rules_*: _grow_default, _grow_parallelcluster,
        _grow_starcluster, with the engine's own counts: every simulated job is runnable, each
        idle host is an idle worker, each busy host a busy one).  True when unsure."""
        cfg = self.cfg
        spn, max_nodes = cfg["slots_per_node"], cfg["max_nodes"]
        if spn != self.spn or max_nodes is None or max_nodes < self.cap + 1:
            return True  # (decide's shape or limit could differ from the engine's: ask it)
        current = len(self.names)
        room = max(0, max_nodes - current - len(booting))
        oldest = self.jobs[next(iter(self.pending))].submit  # (the first in submit order)
        waited = max(0.0, now - oldest)
        if self.policy == "starcluster":
            return waited > cfg["job_wait_time"] and current + len(booting) < max_nodes
        needed = int(math.ceil(self.pending_slots / float(spn)))
        if self.policy == "parallelcluster":
            need_now = len(self.busy) + needed - (current - 1) - len(booting)
        else:
            if not waited > cfg["job_wait_time"]:
                return False
            idle = min(len(self.idle), int(math.ceil(self.pending_pe_slots / float(spn))))
            need_now = needed - len(booting) - idle
        return need_now > 0 and room > 0

    def _emulate_quiet_poll(self, now):
        """The state the lean ``decide`` returns at a poll that adds and removes nothing.

        Such a poll only records what changed: the hosts that joined or left (then
        ``last_change = now``), the ``last_busy`` of busy hosts, the requests still booting.
        It is quiet when the set of hosts changed and ``stabilization_time > 0`` (the cluster is
        then not stable: growth and removal are on hold, StarCluster's rules and ours alike), or
        when :meth:`_quiet` proves it.  Written after elastic._Decision._census /
        _records_from_hints / run; the unit tests compare it with a real call at every emulated
        poll.  Returns False (nothing done) when the poll may not be quiet: ``decide`` is called.
        """
        st, cfg = self.state, self.cfg
        changed = bool(self.came or self.went)   # (the hosts that joined and left since the last call)
        nodes = st["nodes"]
        booting = sorted(rec["requested_at"] for rec in st["booting"])
        came = sorted(self.came)
        went = sorted(self.went)
        new = {}
        for name in came:
            if booting:  # a host that fills a requested node is one the balancer launched
                new[name] = {"first_seen": now, "joined": booting.pop(0), "last_busy": None, "launched": True}
            else:
                new[name] = {"first_seen": now, "joined": now, "last_busy": None}
        booting = [t for t in booting if now - t <= cfg["boot_timeout"]]
        last_change = now if changed else st["last_change"]
        stable = last_change is None or now - last_change >= cfg["stabilization_time"]
        if not (changed and not stable) and not self._quiet(now, nodes, new, booting, stable):
            return False
        for name in went:
            del nodes[name]
        nodes.update(new)
        for name in self.busy:            # (no host is ever "unknown" here)
            nodes[name]["last_busy"] = now
        self.came.clear()
        self.went.clear()
        if changed:
            text = []
            if came:
                text.append("joined: " + ", ".join(came))
            if went:
                text.append("left: " + ", ".join(went))
            reason = "hosts changed (%s)" % "; ".join(text)
        else:
            reason = st["last_change_reason"]
        self.state = {
            "schema": st["schema"], "profile": st["profile"], "last_poll": now, "last_change": last_change,
            "last_change_reason": reason, "cluster_size": st["cluster_size"], "nodes": nodes,
            "booting": [{"requested_at": t} for t in booting],
            "jobs": {"pending": {}, "running_since": {}, "started": [], "finished": []}}
        return True

    def _poll(self, now):
        self._refresh_hosts()
        if self._can_emulate() and self._emulate_quiet_poll(now):
            self.res.emulated += 1
            self.res.decide_calls += 1    # a poll whose decide result is known: counted as a call
            self.last_call = now
            self.host_changed = False
            self.dirty = False
            return
        snapshot = self._snapshot(now)
        state = self.state if self.state is not None else {}
        if self.lean:
            plan = elastic._decide_validated(snapshot, state, self.cfg, float(now), lean=True, hints=self.hints)
        else:
            plan = elastic.decide(snapshot, state, self.cfg, now)
        self.res.decide_calls += 1
        self.state = plan["state"]
        self.came.clear()
        self.went.clear()
        self.last_call = now
        self.host_changed = False
        self.dirty = False
        if plan["add"] or plan["remove"]:
            self.res.scale_events += 1
            self.dirty = True
        for name in plan["remove"]:
            if name == MASTER:
                continue
            self._terminate(name, now)
        if plan["add"]:
            self._launch(now, plan["add"], self.boot_delay)

    # ---- main loop -----------------------------------------------------------------------
    def _poll_step(self, now):
        self._poll(now)
        self._schedule(now)
        self._record(now)

    def _event(self, kind, payload, now):
        if kind == _END:
            self._end(payload, now)
            return True
        self._join_event(payload)
        return False

    def _settle(self, now):
        self._schedule(now)
        self.dirty = True
        self._record(now)

    def run(self):
        jobs = self.jobs
        res = self.res
        if not jobs:
            return res
        self.t0 = jobs[0].submit
        res.start = self.t0
        if self.policy == "static":
            self._launch(self.t0, self.cap, 0.0)
        decide = self.policy in DECIDE_POLICIES
        now, last_job_end = self._loop(jobs, polls=decide)
        end = max(now, last_job_end)
        for name in list(self.nodes):
            self._terminate(name, last_job_end if self.policy == "static" else end)
        res.ticks = int((end - self.t0) // self.interval) + 1 if decide else 0
        res.end = end
        self._record(end)
        return res
