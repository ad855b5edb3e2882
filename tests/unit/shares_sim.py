# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cycle simulator of Li & Parker's hierarchical share management (their Figures 4-8).

Pure: numpy in, numpy out, randomness only from the seeded generator it is given; no clock,
no I/O, no Ansible. Test apparatus, not product: it lives under tests/unit (run by
test_shares_sim.py, test_bank.py and benchmarks/shares_experiments.py) and is not in the built
collection; the product's share policies are plugins/plugin_utils/policy/bank.py and reserves.py.

Model
-----
* Time advances in *cycles*; one cycle is one node reporting period (0.3 s in the paper).
* Every node has 100 tickets. Each cycle every class asks for some tickets on every node it is
  dispatched to (the *demand process*, below). The node's resource container is ideal (the
  paper assumes so): each class gets ``min(demand, allocation)`` first, then the tickets left
  over go to the classes still wanting more in proportion to their allocations, repeatedly
  (work conserving). That is the class's *usage*.
* Nodes report (usage, allocation) to their level-1 manager every cycle; with ``skew`` a node
  whose reporting phase (uniform in [0, 1) of a cycle) comes after the manager's computation
  (phase 0.5) delivers the previous cycle's report. Level-1 managers run the bank algorithm on
  their nodes whenever reports arrive; the top manager runs it on the level-1 managers (each a
  child of ``100 x nodes`` tickets) every ``manager_period`` cycles and sends each manager its
  class percentages. With one manager (``fanout >= nodes``) the top manages the nodes directly.
* ``top_units``: what a level-1 manager is to the top. ``tickets`` (default, the project's
  reading and the real path's): a child of ``100 x nodes`` tickets, its report the sums of its
  nodes', ``c`` and ``floor`` in tickets. ``percent``: a node of 100 tickets, its report in
  percent of the manager, ``c`` and ``floor`` in those percent (the same message as a node's).
  ``top_c`` / ``top_floor`` (default: ``c`` / ``floor``) set the top's two in its own units
  (docs/shares.md, "Two readings of the hierarchy").
* A report is ``9 + 8 x classes`` bytes (``bank.message_size``); the simulator counts them.
  In the ``default`` profile a level-1 manager's report adds one bit per class (rounded up to
  whole bytes): whether one of its nodes was needy for the class. The top's bank round counts
  such a manager as needy for the class (``bank_round(wants=...)``) even when the manager's
  aggregate usage stayed below its aggregate allocation.
* Manager failure (``kill``): the failed manager stops; its children keep their last
  allocation; after ``detect_cycles`` without its messages the peers elect a replacement as the
  paper describes: for a level-1 manager, its nodes elect the lowest-numbered node among them;
  for the top, the level-1 managers elect the lowest-numbered of themselves, which starts
  managing its peers and designates its first node as the new level-1 manager of its nodes.
  A replacement starts with empty bank accounts (and, for the top, a fresh outer correction).

Demand processes (``demand``)
-----------------------------
``steady``  every dispatched class always wants more than the node holds;
``heavy``   Poisson requests of 5 tickets, mean 100 tickets per node per cycle per dispatched
            class (``5 x Poisson(20)``);
``tight``   as heavy, but class 3 averages 40 tickets on its nodes (``5 x Poisson(8)``).

Node-to-manager ``assignment``: ``blocks`` (manager k has nodes ``k F .. k F + F - 1``) or
``round_robin`` (node i goes to manager ``i mod M``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

try:
    import numpy as np
except ImportError:  # numpy is a controller requirement; bank.require_numpy() names it
    np = None

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank as bankmod
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reserves

DEMANDS = ("steady", "heavy", "tight")
ASSIGNMENTS = ("blocks", "round_robin")
ALGORITHMS = ("bank", "reserves")
TOP_UNITS = ("tickets", "percent")
NODE_TICKETS = 100.0
REQUEST_TICKETS = 5
HEAVY_MEAN = 100.0
TIGHT_CLASS3_MEAN = 40.0
STEADY_DEMAND = 1e6


class SimError(ValueError):
    """Bad scenario; the message names the field."""


class Scenario(object):
    """One experiment. ``class3_nodes``: class 3 (index 2) is dispatched only to the first that
    many nodes (None: every node). ``stops``: ``[(class index, first cycle, last cycle + 1)]``
    during which that class's dispatcher is stopped. ``kill``: ``[(cycle, "top" | level-1
    manager index)]``."""

    FIELDS = dict(
        name="scenario", nodes=100, fanout=10, desired=(60.0, 30.0, 10.0), demand="steady",
        assignment="blocks", class3_nodes=None, cycles=200, warmup=40, manager_period=1,
        skew=False, stops=(), kill=(), detect_cycles=2, algorithm="bank", profile="default",
        temporal="none", c=2.0, floor=1.0, seed=1, gain=0.5, top_units="tickets",
        top_c=None, top_floor=None,
    )

    def __init__(self, **kwargs):
        bankmod.require_numpy()
        unknown = set(kwargs) - set(self.FIELDS)
        if unknown:
            raise SimError("unknown scenario field(s): %s" % ", ".join(sorted(unknown)))
        for key, default in self.FIELDS.items():
            setattr(self, key, kwargs.get(key, default))
        if self.demand not in DEMANDS:
            raise SimError("demand: expected one of %s, got %r" % (DEMANDS, self.demand))
        if self.assignment not in ASSIGNMENTS:
            raise SimError("assignment: expected one of %s, got %r"
                           % (ASSIGNMENTS, self.assignment))
        if self.top_units not in TOP_UNITS:
            raise SimError("top_units: expected one of %s, got %r" % (TOP_UNITS, self.top_units))
        if self.algorithm not in ALGORITHMS:
            raise SimError("algorithm: expected one of %s, got %r"
                           % (ALGORITHMS, self.algorithm))
        if int(self.nodes) < 1 or int(self.fanout) < 1 or int(self.manager_period) < 1:
            raise SimError("nodes, fanout and manager_period must be >= 1")
        if self.warmup >= self.cycles:
            raise SimError("warmup (%s) must be below cycles (%s)" % (self.warmup, self.cycles))
        self.desired = np.asarray(self.desired, dtype=np.float64)
        if self.algorithm == "reserves" and self.managers > 1:
            raise SimError("algorithm reserves: only a single manager (fanout >= nodes)")

    @property
    def managers(self):
        return max(1, -(-int(self.nodes) // int(self.fanout)))

    def label(self):
        return "%s: %d nodes, %s demand, %s, %s/%s" % (
            self.name, self.nodes, self.demand, self.assignment.replace("_", "-"),
            self.algorithm, self.profile)


# ---------------------------------------------------------------------------------------------
# nodes: demand and the ideal local resource container
# ---------------------------------------------------------------------------------------------

def container_usage(alloc, demand, capacity=NODE_TICKETS):
    """Usage (N x S) of an ideal, work-conserving container: ``min(demand, alloc)`` first,
    then the left-over tickets to the classes still wanting more, by allocation."""
    alloc = np.asarray(alloc, dtype=np.float64)
    demand = np.asarray(demand, dtype=np.float64)
    use = np.minimum(alloc, demand)
    left = capacity - use.sum(axis=1)
    rest = demand - use
    for _step in range(alloc.shape[1]):
        if not np.any((left > 1e-9) & (rest.sum(axis=1) > 1e-9)):
            break
        w = np.where(rest > 1e-12, np.maximum(alloc, 1e-6), 0.0)
        wsum = w.sum(axis=1)
        share = np.divide(left, wsum, out=np.zeros_like(left), where=wsum > 0)
        give = np.minimum(w * share[:, None], rest)
        use += give
        rest -= give
        left = left - give.sum(axis=1)
    return use


def dispatched_mask(scn, cycle):
    """(N x S) bool: which class is dispatched to which node in ``cycle``."""
    n, s = int(scn.nodes), len(scn.desired)
    mask = np.ones((n, s), dtype=bool)
    if scn.class3_nodes is not None and s >= 3:
        mask[int(scn.class3_nodes):, 2] = False
    for cls, start, stop in scn.stops:
        if start <= cycle < stop:
            mask[:, cls] = False
    return mask


def class_means(scn):
    """Mean tickets asked per node per cycle per dispatched class."""
    means = np.full(len(scn.desired), HEAVY_MEAN)
    if scn.demand == "tight" and len(means) >= 3:
        means[2] = TIGHT_CLASS3_MEAN
    return means


def draw_demand(rng, scn, mask):
    if scn.demand == "steady":
        return np.where(mask, STEADY_DEMAND, 0.0)
    lam = class_means(scn) / REQUEST_TICKETS
    return REQUEST_TICKETS * rng.poisson(lam[None, :], size=mask.shape) * mask


# ---------------------------------------------------------------------------------------------
# the hierarchy
# ---------------------------------------------------------------------------------------------

class Hierarchy(object):
    """Who manages whom. ``manager_of[i]``: level-1 manager of node i. ``l1_host[m]``: the
    node running level-1 manager m's role (-1: a dedicated manager machine). ``top_host``: the
    level-1 manager that also runs the top role (-1: a dedicated machine). ``alive_l1[m]`` /
    ``top_alive``: whether the role currently runs."""

    def __init__(self, nodes, fanout, assignment):
        self.nodes = int(nodes)
        self.count = max(1, -(-self.nodes // int(fanout)))
        idx = np.arange(self.nodes)
        if assignment == "blocks":
            self.manager_of = np.minimum(idx // int(fanout), self.count - 1)
        else:
            self.manager_of = idx % self.count
        self.l1_host = np.full(self.count, -1)
        self.alive_l1 = np.ones(self.count, dtype=bool)
        self.top_host = -1
        self.top_alive = True
        self.events = []

    def children(self, m):
        return np.flatnonzero(self.manager_of == m)

    def capacity(self):
        return NODE_TICKETS * np.bincount(self.manager_of, minlength=self.count)

    def kill(self, who, cycle):
        if who == "top":
            self.top_alive = False
        else:
            self.alive_l1[int(who)] = False
        self.events.append((cycle, "killed", who))

    def elect(self, who, cycle):
        """Replace a failed manager by the paper's strategy; returns what changed."""
        if who == "top":
            peers = np.flatnonzero(self.alive_l1)
            if self.top_host >= 0:
                peers = peers[peers != self.top_host]
            if not len(peers):
                raise SimError("no level-1 manager left to elect a top manager")
            new_top = int(peers[0])
            self.top_host = new_top
            self.top_alive = True
            kids = self.children(new_top)
            # the new top designates its first node as the new level-1 manager of its nodes
            self.l1_host[new_top] = int(kids[0])
            self.events.append((cycle, "elected top", new_top))
            self.events.append((cycle, "designated level-1", (new_top, int(kids[0]))))
            return ("top", new_top)
        m = int(who)
        kids = self.children(m)
        kids = kids[kids != self.l1_host[m]]
        if not len(kids):
            raise SimError("level-1 manager %d has no node left to elect" % m)
        self.l1_host[m] = int(kids[0])
        self.alive_l1[m] = True
        self.events.append((cycle, "elected level-1", (m, int(kids[0]))))
        return ("l1", m)

    def path_to_top(self, node):
        """Managers a node's report passes through; raises when the chain is broken."""
        m = int(self.manager_of[node])
        if not self.alive_l1[m] or not self.top_alive:
            raise SimError("node %d has no live path to the top" % node)
        return ("l1", m), ("top", self.top_host)


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------

class SimResult(object):
    """``usage_share`` and ``alloc_share`` (cycles x S, percent), ``bytes_per_cycle``,
    ``message_bytes`` (size of one report), ``events`` and ``restarts`` (cycles)."""

    def __init__(self, scn, usage_share, alloc_share, bytes_total, events, restarts,
                 seconds_per_round=None):
        self.scenario = scn
        self.usage_share = usage_share
        self.alloc_share = alloc_share
        self.bytes_per_cycle = bytes_total / float(scn.cycles)
        self.message_bytes = bankmod.message_size(len(scn.desired))
        self.events = events
        self.restarts = restarts
        self.seconds_per_round = seconds_per_round

    def stats(self, cls=2):
        """(mean, std) of the class's usage share after warm-up, percent."""
        tail = self.usage_share[self.scenario.warmup:, cls]
        return float(tail.mean()), float(tail.std())

    def recoveries(self, tolerance=1.0, hold=3):
        return [recovery_cycles(self.usage_share, self.scenario.desired, r, tolerance, hold)
                for r in self.restarts]


def recovery_cycles(shares, desired, restart, tolerance=1.0, hold=3):
    """Cycles from ``restart`` until every class is within ``tolerance`` points of its desired
    share and stays there ``hold`` cycles; None if that never happens."""
    ok = np.all(np.abs(shares - desired[None, :]) <= tolerance, axis=1)
    for t in range(restart, len(shares) - hold + 1):
        if ok[t:t + hold].all():
            return t - restart
    return None


def _per_manager(hier, x):
    out = np.zeros((hier.count, x.shape[1]))
    for j in range(x.shape[1]):
        out[:, j] = np.bincount(hier.manager_of, weights=x[:, j], minlength=hier.count)
    return out


def simulate(scn, timer=None):
    """Run ``scn``; returns a SimResult. ``timer`` (optional, a no-argument callable returning
    seconds) times the allocation rounds; the simulation itself never reads a clock."""
    rng = np.random.default_rng(scn.seed)
    n, s = int(scn.nodes), len(scn.desired)
    hier = Hierarchy(n, scn.fanout, scn.assignment)
    flat = hier.count == 1
    top_c = scn.c if scn.top_c is None else scn.top_c
    top_floor = scn.floor if scn.top_floor is None else scn.top_floor
    cap_m = hier.capacity()
    alloc = bankmod.initial_allocation(scn.desired, np.full(n, NODE_TICKETS))
    d_l1 = np.tile(scn.desired, (hier.count, 1))
    acc_l1 = np.zeros((hier.count, s))
    acc_top = np.zeros(s)
    outer = bankmod.OuterCorrection(scn.desired, gain=scn.gain) \
        if scn.profile == "default" else None
    phase = rng.random(n) if scn.skew else np.zeros(n)
    stale = phase > 0.5
    prev_usage = None
    prev_alloc = None
    last_u_m = None
    pending = {}          # who -> cycle at which the failure is detected
    kills = dict((int(c), w) for c, w in scn.kill)
    restarts = sorted(stop for _cls, _start, stop in scn.stops)
    usage_share = np.zeros((scn.cycles, s))
    alloc_share = np.zeros((scn.cycles, s))
    msg = bankmod.message_size(s)
    # default profile: a level-1 manager's report also carries one "a node of mine was needy"
    # bit per class (``wants`` of the top's bank round)
    flag_bytes = -(-s // 8) if outer is not None else 0
    bytes_total = 0.0
    times = []

    def tick():
        return timer() if timer else 0.0

    for t in range(scn.cycles):
        if t in kills:
            who = kills[t]
            hier.kill(who, t)
            pending[who] = t + int(scn.detect_cycles)
        for who, when in list(pending.items()):
            if t >= when:
                hier.elect(who, t)
                del pending[who]
                if who == "top":
                    acc_top = np.zeros(s)
                    if outer is not None:
                        outer.reset()
                else:
                    acc_l1[int(who)] = 0.0

        mask = dispatched_mask(scn, t)
        demand = draw_demand(rng, scn, mask)
        usage = container_usage(alloc, demand)
        total = usage.sum()
        usage_share[t] = 100.0 * usage.sum(axis=0) / total if total > 0 else 0.0
        alloc_share[t] = 100.0 * alloc.sum(axis=0) / alloc.sum()

        # reports of this cycle (skewed nodes deliver last cycle's)
        if prev_usage is not None and scn.skew:
            rep_u = np.where(stale[:, None], prev_usage, usage)
            rep_a = np.where(stale[:, None], prev_alloc, alloc)
        else:
            rep_u, rep_a = usage, alloc
        prev_usage, prev_alloc = usage, alloc
        live_nodes = hier.alive_l1[hier.manager_of]
        bytes_total += msg * int(live_nodes.sum())

        t0 = tick()
        if flat:
            if hier.top_alive:
                target = outer.targets() if outer is not None else scn.desired
                if scn.algorithm == "reserves":
                    alloc, _v = reserves.cluster_reserves(rep_a, rep_u, target)
                else:
                    alloc, acc_top, needy = bankmod.bank_round(
                        rep_a, rep_u, target, acc_top, c=scn.c, floor=scn.floor,
                        temporal=scn.temporal, profile=scn.profile)
                    if outer is not None and t % scn.manager_period == 0:
                        outer.update(rep_u.sum(axis=0), NODE_TICKETS * n, needy.any(axis=0),
                                     rep_a.sum(axis=0))
        else:
            new, acc_new, needy_n = bankmod.bank_round(
                rep_a, rep_u, d_l1, acc_l1, c=scn.c, floor=scn.floor, temporal=scn.temporal,
                profile=scn.profile, group=hier.manager_of)
            alloc = np.where(live_nodes[:, None], new, alloc)
            acc_l1 = np.where(hier.alive_l1[:, None], acc_new, acc_l1)
            # level-1 managers report upward every manager_period cycles
            if t % scn.manager_period == 0:
                # a report carries usage and the allocation in force when it was measured
                u_m = _per_manager(hier, rep_u)
                a_m = _per_manager(hier, rep_a)
                if last_u_m is not None:
                    # a dead manager sends nothing: the top keeps its last report
                    u_m = np.where(hier.alive_l1[:, None], u_m, last_u_m[0])
                    a_m = np.where(hier.alive_l1[:, None], a_m, last_u_m[1])
                last_u_m = (u_m, a_m)
                bytes_total += (msg + flag_bytes) * int(hier.alive_l1.sum())
                if hier.top_alive:
                    target = outer.targets() if outer is not None else scn.desired
                    wants_m = _per_manager(hier, needy_n.astype(float)) > 0 \
                        if outer is not None else None
                    if scn.top_units == "percent":
                        # a manager is a node of 100 tickets: its report in percent of it
                        k = cap_m[:, None] / NODE_TICKETS
                        r_m, acc_top, needy_m = bankmod.bank_round(
                            a_m / k, u_m / k, target, acc_top, c=top_c, floor=top_floor,
                            temporal=scn.temporal, profile=scn.profile, wants=wants_m)
                        r_m = r_m * k
                    else:
                        r_m, acc_top, needy_m = bankmod.bank_round(
                            a_m, u_m, target, acc_top, capacity=cap_m, c=top_c,
                            floor=top_floor, temporal=scn.temporal, profile=scn.profile,
                            wants=wants_m)
                    d_l1 = 100.0 * r_m / cap_m[:, None]
                    if outer is not None:
                        outer.update(u_m.sum(axis=0), NODE_TICKETS * n, needy_m.any(axis=0),
                                     a_m.sum(axis=0))
        times.append(tick() - t0)

    per_round = float(np.mean(times)) if timer else None
    return SimResult(scn, usage_share, alloc_share, bytes_total, list(hier.events), restarts,
                     per_round)


# ---------------------------------------------------------------------------------------------
# the workload's own noise floor (tight demand)
# ---------------------------------------------------------------------------------------------

def noise_floor(scn, cycles=400, seed=12345, cls=2):
    """Standard deviation (points) of class ``cls``'s usage share under a static allocation
    that knows the demand distribution but not this cycle's draw.

    An allocator acting on last cycle's reports cannot know this cycle's demand (the draws are
    independent), so its allocation is, for this cycle, as good as fixed. The oracle gives the
    class the same allocation ``a`` on every node it is dispatched to (``a`` found by
    bisection so that its mean share is the desired one, or the largest possible when the
    demand cannot reach it) and splits the rest by the other classes' desired ratio. Returns
    ``(std, mean, a)``.
    """
    rng = np.random.default_rng(seed)
    n, s = int(scn.nodes), len(scn.desired)
    mask = dispatched_mask(scn, -1)
    draws = [draw_demand(rng, scn, mask) for _cycle in range(cycles)]
    others = np.array([j for j in range(s) if j != cls])

    def shares(a):
        alloc = np.zeros((n, s))
        alloc[:, cls] = np.where(mask[:, cls], a, 0.0)
        rest = NODE_TICKETS - alloc[:, cls]
        w = scn.desired[others] / scn.desired[others].sum()
        alloc[:, others] = rest[:, None] * w[None, :]
        out = []
        for d in draws:
            u = container_usage(alloc, d)
            out.append(100.0 * u[:, cls].sum() / u.sum())
        return np.asarray(out)

    lo, hi = 0.0, NODE_TICKETS
    want = scn.desired[cls]
    if shares(hi).mean() < want:
        sh = shares(hi)
        return float(sh.std()), float(sh.mean()), hi
    for _bisect in range(30):
        mid = 0.5 * (lo + hi)
        if shares(mid).mean() < want:
            lo = mid
        else:
            hi = mid
    sh = shares(hi)
    return float(sh.std()), float(sh.mean()), hi
