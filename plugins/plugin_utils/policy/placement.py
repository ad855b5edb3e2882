# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Weighted job placement: CloverDX's cluster load balancer as pure functions.

Two steps, as in the seed (CloverDX "Jobs Load Balancing Properties", seed 001):

1. :func:`distribution` turns the load of every node (free memory of its maximum, CPU usage)
   into a *target job distribution*: the share of the next jobs each node should get::

       placement = distribution({"node01": {"mem_free": 1000, "mem_max": 4000, "cpu_usage": 0.1},
                                 "node02": {"mem_free": 3000, "mem_max": 4000, "cpu_usage": 0.1}})
       placement["distribution"]  # {"node01": 0.1518, "node02": 0.8482}

   - nodes whose memory usage (``1 - mem_free / mem_max``) is above ``memory_limit`` or whose
     CPU usage is above ``cpu_limit`` are left out, unless every node is above that limit;
   - the free memory and the free CPU (``1 - cpu_usage``) of each node are divided by those of the
     least loaded node (the most free), giving ratios in [0, 1];
   - the ratios are raised to ``memory_exponent`` / ``cpu_exponent``;
   - each node's *weighted resources* are ``memory_weight * mem / sum(mem) + cpu_weight * cpu /
     sum(cpu)`` (the seed's 0.604 and 3.396);
   - they are rescaled to sum up to 1: the target distribution (15.1 % / 84.9 %).

2. :class:`Dispatcher` sends jobs one by one so that, within one target-distribution interval,
   the number of jobs each node got never differs from its target share by more than one job, at
   every point of the sequence.  It is a deterministic smooth weighted round robin: among the
   nodes that are not ahead of their share, the one whose share would fall more than one job
   behind soonest goes first (earliest deadline first).  The classic nginx variant (largest lag
   first, :func:`nginx_swrr`) usually does the same but can fall slightly more than one job behind
   with many nodes (measured by benchmarks/placement_dispatch.py); the earliest-deadline rule
   cannot (Tijdeman's chairman assignment theorem guarantees a sequence within the bound exists,
   and earliest deadline first finds one whenever one exists).

Every decision is logged in the seed's format (CloverDX's ``LoadBalancerLogger``): at level
TRACE (:data:`TRACE`, 5) the nodes considered, at DEBUG the choice with every node's probability::

    Selecting one node for execution, excluded nodes are: [], viable nodes are: [node2, node3, node1]
    NodeId {node3} selected for execution, from nodes:
    NodeProbability#node2 { execProbability: 0.340, freeMemRatio: 0.795, freeCpuRatio: 0.999 } Jobs#node2 { running: 24, recent: 10 }
    NodeProbability#node3 { execProbability: 0.253, freeMemRatio: 0.527, freeCpuRatio: 0.999 } Jobs#node3 { running: 15, recent: 8 } *
    NodeProbability#node1 { execProbability: 0.406, freeMemRatio: 1.000, freeCpuRatio: 1.000 } Jobs#node1 { running: 26, recent: 12 }

The records go to the Python logger ``gridengine.balancer.placement`` when that level is enabled
on it, and to ``Dispatcher.log_lines`` (one string per line, each record's first line prefixed by
its level, ``TRACE`` or ``DEBUG``) when the dispatcher is built with ``log_level`` ``"debug"`` or
``"trace"``: that list is what the filter ``placement_decisions`` hands back to a play.

No clock, no I/O besides that logger, no Ansible import.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from fractions import Fraction

LOGGER_NAME = "gridengine.balancer.placement"
log = logging.getLogger(LOGGER_NAME)
# log4j's TRACE, below Python's DEBUG (10); the seed's "Selecting one node ..." records
TRACE = 5
logging.addLevelName(TRACE, "TRACE")
# log_level of a Dispatcher -> the lowest level it collects into log_lines (None: none)
LOG_LEVELS = {"none": None, "debug": logging.DEBUG, "trace": TRACE}

# The seed's property -> our option name and default (Table 42.4).
#   cluster.lb.memory.weight 3, .memory.exponent 3, .memory.limit 0.9,
#   cluster.lb.cpu.weight 1, .cpu.exponent 1, .cpu.limit 0.9
_DEFAULTS = {
    "memory_weight": 3.0,
    "memory_exponent": 3.0,
    "memory_limit": 0.9,
    "cpu_weight": 1.0,
    "cpu_exponent": 1.0,
    "cpu_limit": 0.9,
    # Not a CloverDX property: decimal digits the ratios are rounded to before exponentiation.
    # None (default) keeps them exact.  The seed's worked example rounds 1000/3000 to 0.33 by
    # hand (0.33 ** 3 = 0.035937); ratio_digits=2 reproduces its figures to the last digit.
    "ratio_digits": None,
}
OPTIONS = tuple(_DEFAULTS)


class PlacementError(ValueError):
    """Bad input; the message starts with the name of the option or node that is wrong."""


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def default_config():
    """A new dict with every option at its default (the seed's defaults)."""
    return dict(_DEFAULTS)


def validate_config(config=None):
    """Fill in defaults and check every option; ``None`` values mean "the default".

    Weights and exponents must be numbers >= 0 (the two weights not both 0), limits numbers in
    [0, 1], ``ratio_digits`` None or an integer 0..15.  Returns a new dict.
    """
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise PlacementError("config: must be a mapping of options, got %s" % type(config).__name__)
    unknown = sorted(str(k) for k in config if k not in _DEFAULTS)
    if unknown:
        raise PlacementError("%s: unknown option (known: %s)" % (", ".join(unknown), ", ".join(OPTIONS)))
    cfg = default_config()
    for key, value in config.items():
        if value is not None:
            cfg[key] = value
    for key in ("memory_weight", "cpu_weight", "memory_exponent", "cpu_exponent"):
        if not _is_number(cfg[key]) or cfg[key] < 0:
            raise PlacementError("%s: must be a number >= 0, got %r" % (key, cfg[key]))
        cfg[key] = float(cfg[key])
    if cfg["memory_weight"] + cfg["cpu_weight"] <= 0:
        raise PlacementError("memory_weight, cpu_weight: at least one must be above 0, got %r and %r"
                             % (cfg["memory_weight"], cfg["cpu_weight"]))
    for key in ("memory_limit", "cpu_limit"):
        if not _is_number(cfg[key]) or not 0 <= cfg[key] <= 1:
            raise PlacementError("%s: must be a number between 0 and 1, got %r" % (key, cfg[key]))
        cfg[key] = float(cfg[key])
    digits = cfg["ratio_digits"]
    if digits is not None and (not isinstance(digits, int) or isinstance(digits, bool)
                               or not 0 <= digits <= 15):
        raise PlacementError("ratio_digits: must be null or an integer between 0 and 15, got %r" % (digits,))
    return cfg


def _node_load(name, load):
    """Check one node's load; return (mem_free, mem_max, cpu_usage, running)."""
    if not isinstance(name, str) or not name:
        raise PlacementError("nodes: node names must be non-empty strings, got %r" % (name,))
    if not isinstance(load, Mapping):
        raise PlacementError("nodes.%s: must be a mapping with mem_free, mem_max and cpu_usage, got %s"
                             % (name, type(load).__name__))
    for key in ("mem_free", "mem_max", "cpu_usage"):
        if key not in load:
            raise PlacementError("nodes.%s.%s: missing" % (name, key))
        if not _is_number(load[key]):
            raise PlacementError("nodes.%s.%s: must be a number, got %r" % (name, key, load[key]))
    mem_free, mem_max, cpu = load["mem_free"], load["mem_max"], load["cpu_usage"]
    if mem_max <= 0:
        raise PlacementError("nodes.%s.mem_max: must be above 0, got %r" % (name, mem_max))
    if not 0 <= mem_free <= mem_max:
        raise PlacementError("nodes.%s.mem_free: must be between 0 and mem_max (%r), got %r"
                             % (name, mem_max, mem_free))
    if not 0 <= cpu <= 1:
        raise PlacementError("nodes.%s.cpu_usage: must be a fraction between 0 and 1, got %r" % (name, cpu))
    running = load.get("running")
    if running is not None and (not isinstance(running, int) or isinstance(running, bool) or running < 0):
        raise PlacementError("nodes.%s.running: must be null or an integer >= 0, got %r" % (name, running))
    return float(mem_free), float(mem_max), float(cpu), running


def _ratios(values, digits):
    """Each value divided by the largest (the least loaded node's); all 1 when the largest is 0."""
    top = max(values.values())
    out = {}
    for name, value in values.items():
        ratio = value / top if top > 0 else 1.0
        out[name] = round(ratio, digits) if digits is not None else ratio
    return out


def distribution(nodes, config=None):
    """Target job distribution of ``nodes`` (see the module docstring).

    ``nodes`` maps a node name to ``{"mem_free": n, "mem_max": n, "cpu_usage": 0..1}`` (memory in
    any one unit; optional ``running``: jobs running there, for the log).  Returns::

        {"distribution": {node: share},       # viable nodes only; the shares sum up to 1
         "nodes": {node: {"probability", "weighted", "free_mem_ratio", "free_cpu_ratio",
                          "memory_usage", "cpu_usage", "running", "excluded"}},
         "excluded": {node: reason},           # nodes left out by a limit
         "config": {...}}                      # the options used

    ``free_mem_ratio`` / ``free_cpu_ratio`` are the ratios before exponentiation (as the seed's
    log shows them); excluded nodes have probability 0 and no ratios.
    """
    cfg = validate_config(config)
    if not isinstance(nodes, Mapping):
        raise PlacementError("nodes: must be a mapping of node name to load, got %s" % type(nodes).__name__)
    if not nodes:
        raise PlacementError("nodes: no node to place jobs on")
    loads = {name: _node_load(name, load) for name, load in nodes.items()}
    mem_usage = {n: 1.0 - l[0] / l[1] for n, l in loads.items()}
    cpu_usage = {n: l[2] for n, l in loads.items()}

    # limits: "Nodes exceeding this limit are omitted ... If there is no node with usage below
    # this limit, all nodes will be used in the selection."  One rule per resource.
    reasons = {}
    for label, usage, limit in (("memory", mem_usage, cfg["memory_limit"]),
                                ("CPU", cpu_usage, cfg["cpu_limit"])):
        over = {n for n, u in usage.items() if u > limit}
        if len(over) < len(usage):
            for name in sorted(over):
                reasons.setdefault(name, []).append(
                    "%s usage %.3f above the %s limit %.3f" % (label, usage[name], label.lower(), limit))
    viable = [n for n in nodes if n not in reasons]
    if not viable:
        # every node is over one limit or the other (never all over the same one): use them all,
        # as the seed does when no node is below a limit
        viable = list(nodes)
        reasons = {}

    digits = cfg["ratio_digits"]
    mem_ratio = _ratios({n: loads[n][0] for n in viable}, digits)
    cpu_ratio = _ratios({n: 1.0 - loads[n][2] for n in viable}, digits)
    mem_exp = {n: r ** cfg["memory_exponent"] for n, r in mem_ratio.items()}
    cpu_exp = {n: r ** cfg["cpu_exponent"] for n, r in cpu_ratio.items()}
    mem_sum = math.fsum(mem_exp.values())
    cpu_sum = math.fsum(cpu_exp.values())
    weighted = {}
    for name in viable:
        value = 0.0
        if mem_sum > 0:
            value += cfg["memory_weight"] * (mem_exp[name] / mem_sum)
        if cpu_sum > 0:
            value += cfg["cpu_weight"] * (cpu_exp[name] / cpu_sum)
        weighted[name] = value
    total = math.fsum(weighted.values())
    if total <= 0:
        # only when the weight of the resource that differs is 0 and the other sums to 0: equal shares
        weighted = {n: 1.0 for n in viable}
        total = float(len(viable))
    shares = {n: weighted[n] / total for n in viable}

    detail = {}
    for name in nodes:
        entry = {
            "probability": shares.get(name, 0.0),
            "weighted": weighted.get(name, 0.0),
            "free_mem_ratio": mem_ratio.get(name),
            "free_cpu_ratio": cpu_ratio.get(name),
            "memory_usage": mem_usage[name],
            "cpu_usage": cpu_usage[name],
            "running": loads[name][3],
            "excluded": "; ".join(reasons[name]) if name in reasons else None,
        }
        detail[name] = entry
    return {
        "distribution": shares,
        "nodes": detail,
        "excluded": {n: "; ".join(r) for n, r in reasons.items()},
        "config": cfg,
    }


# --------------------------------------------------------------------------------------------
# dispatch
# --------------------------------------------------------------------------------------------

def _shares_of(placement):
    """``(shares, details)`` from a :func:`distribution` result or a plain ``{node: share}``."""
    if isinstance(placement, Mapping) and "distribution" in placement and isinstance(
            placement.get("distribution"), Mapping):
        shares = placement["distribution"]
        details = placement.get("nodes") or {}
    else:
        shares = placement
        details = {}
    if not isinstance(shares, Mapping):
        raise PlacementError("distribution: must be a mapping of node name to share (or the result of "
                             "distribution()), got %s" % type(shares).__name__)
    if not shares:
        raise PlacementError("distribution: no node to place jobs on")
    for name, share in shares.items():
        if not isinstance(name, str) or not name:
            raise PlacementError("distribution: node names must be non-empty strings, got %r" % (name,))
        if not _is_number(share) or share < 0:
            raise PlacementError("distribution.%s: must be a number >= 0, got %r" % (name, share))
    if not any(share > 0 for share in shares.values()):
        raise PlacementError("distribution: every share is 0, no node can take a job")
    return shares, details


def exact_weights(shares):
    """Integer weights with the exact proportions of the float ``shares``: ``(weights, total)``.

    Every float is a dyadic fraction, so bringing them to one power-of-two denominator gives
    integers whose ratios are exactly those of the shares (no rounding), and
    ``weights[n] / total`` sums to exactly 1.
    """
    fractions = {n: Fraction(float(s)) for n, s in shares.items()}
    denominator = 1
    for frac in fractions.values():
        denominator = max(denominator, frac.denominator)  # all powers of two
    weights = {n: frac.numerator * (denominator // frac.denominator) for n, frac in fractions.items()}
    return weights, sum(weights.values())


def _fmt(value):
    return "-" if value is None else "%.3f" % value


class Dispatcher(object):
    """Deterministic smooth weighted round robin over one target distribution.

    ``placement`` is a :func:`distribution` result or a mapping ``{node: share}`` (shares are
    rescaled to sum up to 1; nodes with share 0 never get a job).  ``offset`` jobs are replayed
    silently first: the sequence is a pure function of the distribution, so a caller that already
    sent ``offset`` jobs in this interval continues where it stopped.

    After ``n`` jobs, every node has ``count`` jobs with ``|count - n * share| <= 1``.
    """

    def __init__(self, placement, offset=0, logger=None, log_level=None):
        shares, details = _shares_of(placement)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise PlacementError("offset: must be an integer >= 0, got %r" % (offset,))
        if log_level is not None and (not isinstance(log_level, str) or log_level not in LOG_LEVELS):
            raise PlacementError("log_level: must be one of %s, got %r" % (", ".join(LOG_LEVELS), log_level))
        self.nodes = list(shares)
        self.weights, self.total = exact_weights(shares)
        self.details = details
        self.counts = dict.fromkeys(self.nodes, 0)
        self.sent = 0
        self.log = logger if logger is not None else log
        self.log_level = LOG_LEVELS.get(log_level) if log_level is not None else None
        self.log_lines = []
        self._candidates = [n for n in self.nodes if self.weights[n] > 0]
        self.viable = list(self._candidates)
        self.excluded = _excluded_nodes(placement, details, self.nodes, self._candidates)
        for _i in range(offset):
            self._pick()

    def share(self, node):
        """The exact target share of ``node`` as a Fraction."""
        return Fraction(self.weights[node], self.total)

    def _pick(self):
        step = self.sent + 1
        total = self.total
        best = None
        best_key = None
        for name in self._candidates:
            weight = self.weights[name]
            count = self.counts[name]
            # not ahead of its share: after this job count + 1 <= step * share + 1
            if count * total > step * weight:
                continue
            # the last step at which this node may still lack its next job; after it the node
            # would be more than one job behind its share
            deadline = ((count + 1) * total) // weight + 1
            lag = step * weight - count * total  # larger = further behind (tie-break)
            key = (deadline, -lag)
            if best_key is None or key < best_key:
                best, best_key = name, key
        self.counts[best] += 1
        self.sent = step
        return best

    def _wants(self, level):
        """``(to the logger, into log_lines)`` for a record at ``level``."""
        return (self.log.isEnabledFor(level),
                self.log_level is not None and level >= self.log_level)

    def _emit(self, level, lines):
        to_logger, to_lines = self._wants(level)
        if to_logger:
            self.log.log(level, "%s", "\n".join(lines))
        if to_lines:
            self.log_lines.append("%s %s" % (logging.getLevelName(level), lines[0]))
            self.log_lines.extend(lines[1:])

    def next(self):
        """The node for the next job (and the seed's TRACE and DEBUG records for the decision)."""
        if any(self._wants(TRACE)):
            self._emit(TRACE, [self.selecting_line()])
        before = dict(self.counts) if any(self._wants(logging.DEBUG)) else None
        chosen = self._pick()
        if before is not None:
            self._emit(logging.DEBUG, self.decision_lines(chosen, before))
        return chosen

    def take(self, count):
        """The nodes for the next ``count`` jobs, in order."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise PlacementError("count: must be an integer >= 0, got %r" % (count,))
        return [self.next() for _i in range(count)]

    def selecting_line(self):
        """The seed's TRACE line: the nodes left out and the nodes that may get the job."""
        return ("Selecting one node for execution, excluded nodes are: [%s], viable nodes are: [%s]"
                % (", ".join(self.excluded), ", ".join(self.viable)))

    def decision_lines(self, chosen, recent):
        """The seed's DEBUG record for a decision, as its lines; ``recent`` is the counts before it."""
        lines = ["NodeId {%s} selected for execution, from nodes:" % chosen]
        for name in self.nodes:
            info = self.details.get(name) or {}
            probability = info.get("probability")
            if probability is None:
                probability = float(self.share(name))
            lines.append(
                "NodeProbability#%s { execProbability: %s, freeMemRatio: %s, freeCpuRatio: %s } "
                "Jobs#%s { running: %s, recent: %d }%s"
                % (name, _fmt(probability), _fmt(info.get("free_mem_ratio")),
                   _fmt(info.get("free_cpu_ratio")), name,
                   "-" if info.get("running") is None else info["running"], recent[name],
                   " *" if name == chosen else ""))
        return lines

    def decision_line(self, chosen, recent):
        """The seed's DEBUG record as one string (its lines joined by newlines)."""
        return "\n".join(self.decision_lines(chosen, recent))


def _excluded_nodes(placement, details, nodes, candidates):
    """Nodes that cannot get a job, in input order: left out by a limit (in ``details``), skipped
    by the caller (a ``skipped`` mapping beside the distribution), or given a share of 0."""
    out = [n for n in details if n not in candidates]
    skipped = placement.get("skipped") if isinstance(placement, Mapping) and "distribution" in placement else None
    if isinstance(skipped, Mapping):
        out.extend(n for n in skipped if n not in out)
    out.extend(n for n in nodes if n not in candidates and n not in out)
    return [str(n) for n in out]


def decide(placement, count, offset=0, log_level=None, logger=None):
    """``{"hosts": [...], "log": [...]}``: the nodes for ``count`` jobs after ``offset`` already
    sent in this interval, and the seed's log lines of those decisions at ``log_level`` (``"none"``
    or None: no lines, ``"debug"``: the DEBUG records, ``"trace"``: TRACE and DEBUG)."""
    disp = Dispatcher(placement, offset=offset, logger=logger, log_level=log_level)
    hosts = disp.take(count)
    return {"hosts": hosts, "log": disp.log_lines}


def dispatch(placement, count, offset=0, logger=None):
    """The nodes for ``count`` jobs after ``offset`` already sent in this interval."""
    return Dispatcher(placement, offset=offset, logger=logger).take(count)


def nginx_swrr(shares, count):
    """The classic smooth weighted round robin (nginx: largest current weight first).

    For comparison only (benchmarks, tests): it can fall slightly more than one job behind a
    node's share when there are many nodes.
    """
    shares, _details = _shares_of(shares)
    weights, total = exact_weights(shares)
    current = dict.fromkeys(shares, 0)
    out = []
    for _i in range(count):
        for name in current:
            current[name] += weights[name]
        chosen = max(current, key=lambda n: current[n])
        current[chosen] -= total
        out.append(chosen)
    return out


def max_deviation(shares, sequence):
    """Largest ``|count - n * share|`` over every node and every prefix of ``sequence`` (jobs)."""
    shares, _details = _shares_of(shares)
    weights, total = exact_weights(shares)
    counts = dict.fromkeys(shares, 0)
    worst = 0
    for step, name in enumerate(sequence, 1):
        if name not in counts:
            raise PlacementError("sequence: %r is not a node of the distribution" % (name,))
        counts[name] += 1
        for node, weight in weights.items():
            dev = abs(counts[node] * total - step * weight)
            if dev > worst:
                worst = dev
    return Fraction(worst, total)
