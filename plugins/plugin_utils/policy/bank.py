# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bank algorithm of Li & Parker ("Cluster Resource Management: A Scalable Approach").

Pure policy: numpy arrays in, numpy arrays out; no I/O, no clock, no Ansible.

A manager owns ``N`` children (nodes, or lower managers seen as one big node) and ``S``
service classes. Each child ``i`` has ``capacity[i]`` tickets (100 for a node, as in the paper;
``100 x nodes`` for a manager). Given the previous allocation ``alloc`` (N x S tickets), the
usage reported for it ``usage`` (N x S tickets, which may exceed the allocation: the local
resource container hands unused tickets of one class to the others), the desired cluster-wide
percentages ``desired`` (S, summing to 100) and the bank ``accounts`` (S tickets), one round
computes the new allocation in the paper's six steps:

1. deposit unused tickets (``alloc - usage`` where positive) into each class's account;
2. initial values ``usage + c`` where the class fully used its allocation ("needy"), else
   ``usage - c`` (never below ``floor``);
3. bring each class's total toward ``desired x capacity``: take from the over-allocated
   (proportionally above the floor), add to the needy entries of the under-allocated;
4. withdraw from the account what is still over-allocated, deposit what is still under;
5. reward positive accounts to the class's needy entries;
6. normalise every child to its capacity; clear the accounts (``temporal="none"``), keep them
   (``"all"``) or keep a fraction (a float in [0, 1]).

Profiles
--------
``paper``
    The steps above taken literally.
``default``
    Two measured extensions (docs/shares.md gives the numbers):

    * *idle floors do not count*: in steps 3-5 a class's total counts only the entries where it
      used something (``usage > 0``). The paper keeps a floor for every class on every node "in
      preparation for requests"; counting those idle floors toward the class's total takes them
      from the nodes where the class works, and the bank pays them back once per level.
    * *compensation capped at the entitlement*: step 1 deposits at most the class's entitlement
      on that entry (``desired x capacity``), and step 5 rewards at most what brings the class's
      total to its target. Tickets a class never was entitled to (a class that grew while another
      was idle) are not paid back, which otherwise overshoots and slows recovery.

    Callers may pass ``wants`` (N x S bool): children that wanted more than they got although
    their aggregate usage stayed below their allocation (a manager one of whose nodes was
    needy). They count as needy. Under demand that barely exceeds a class's entitlement, a
    manager's class is needy on some nodes and under-using on others, so by the aggregate rule
    the top never sees it needy and step 3 cannot give it its deficit (docs/shares.md).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import threading

try:
    import numpy as np
except ImportError as exc:  # numpy is a controller requirement (requirements.txt)
    np = None
    NUMPY_IMPORT_ERROR = exc
else:
    NUMPY_IMPORT_ERROR = None

PROFILES = ("paper", "default")
DEFAULT_PASSES = 3
MESSAGE_HEADER_BYTES = 9
MESSAGE_BYTES_PER_CLASS = 8


class BankError(ValueError):
    """Bad input to the bank algorithm; the message names the input."""


def require_numpy():
    """Raise BankError when numpy, which the controller needs, is missing."""
    if NUMPY_IMPORT_ERROR is not None:
        raise BankError("numpy is required on the controller (pip install numpy): %s"
                        % NUMPY_IMPORT_ERROR)


def message_size(classes):
    """Bytes of one report (the paper: 9 + 8 x number of service classes)."""
    return MESSAGE_HEADER_BYTES + MESSAGE_BYTES_PER_CLASS * int(classes)


def _temporal_keep(temporal):
    if temporal == "none":
        return 0.0
    if temporal == "all":
        return 1.0
    if isinstance(temporal, (int, float)) and not isinstance(temporal, bool) \
            and 0.0 <= float(temporal) <= 1.0:
        return float(temporal)
    raise BankError("temporal: expected 'none', 'all' or a fraction in [0, 1], got %r"
                    % (temporal,))


def check_inputs(alloc, usage, desired, capacity=None):
    """Arrays as float64, validated; raise BankError naming the bad input."""
    require_numpy()
    alloc = np.asarray(alloc, dtype=np.float64)
    usage = np.asarray(usage, dtype=np.float64)
    desired = np.asarray(desired, dtype=np.float64)
    if alloc.ndim != 2:
        raise BankError("alloc: expected an N x S matrix, got shape %s" % (alloc.shape,))
    if usage.shape != alloc.shape:
        raise BankError("usage: shape %s differs from alloc %s" % (usage.shape, alloc.shape))
    if desired.shape != (alloc.shape[1],):
        raise BankError("desired: expected %d values (one per class), got shape %s"
                        % (alloc.shape[1], desired.shape))
    for name, arr in (("alloc", alloc), ("usage", usage), ("desired", desired)):
        # min/max propagate NaN, so two reductions check finite and >= 0 without temporaries
        if arr.size and not (arr.min() >= 0 and np.isfinite(arr.max())):
            raise BankError("%s: values must be finite and >= 0" % name)
    if abs(desired.sum() - 100.0) > 1e-6:
        raise BankError("desired: percentages must sum to 100, got %g" % desired.sum())
    if capacity is None:
        capacity = np.full(alloc.shape[0], 100.0)
    else:
        capacity = np.asarray(capacity, dtype=np.float64)
        if capacity.shape != (alloc.shape[0],) or np.any(capacity <= 0) \
                or not np.all(np.isfinite(capacity)):
            raise BankError("capacity: expected %d positive values, got %r"
                            % (alloc.shape[0], capacity))
    return alloc, usage, desired, capacity


class _Groups(object):
    """Children of several managers at once: ``group[i]`` is the manager of child ``i``.

    The round works on the transposed layout (classes x children, C order), where per-class
    sums are contiguous row reductions and per-child values broadcast along rows. Children are
    reordered by manager (``perm``) so that each manager's children are one contiguous slice:
    per-manager sums are ``np.add.reduceat`` and broadcasting back is ``np.repeat``.
    """

    def __init__(self, group, n):
        self.perm = None
        if group is None:
            self.count = 1
        else:
            index = np.asarray(group, dtype=np.intp)
            if index.shape != (n,) or (n and index.min() < 0):
                raise BankError("group: expected %d manager indices >= 0" % n)
            self.count = int(index.max()) + 1 if n else 0
            if n and np.any(index[1:] < index[:-1]):
                self.perm = np.argsort(index, kind="stable")
                index = index[self.perm]
            self.counts = np.bincount(index, minlength=self.count)
            starts = np.zeros(self.count, dtype=np.intp)
            np.cumsum(self.counts[:-1], out=starts[1:])
            self.nonempty = self.counts > 0
            self.dense = bool(self.nonempty.all())
            self.starts = starts if self.dense else starts[self.nonempty]
        self.single = self.count == 1

    def sum(self, x):
        """Per-manager row sums of ``x`` (S x N) -> (S x G)."""
        if self.single:
            return x.sum(axis=1, keepdims=True)
        out = np.add.reduceat(x, self.starts, axis=1)
        if self.dense:
            return out
        full = np.zeros((x.shape[0], self.count))
        full[:, self.nonempty] = out
        return full

    def back(self, g):
        """Per-manager values (S x G) broadcast to the children (S x N, or S x 1)."""
        if self.single:
            return g
        return np.repeat(g, self.counts, axis=1)

    def to_children(self, x, out):
        """(N x S) input in the caller's order -> ``out`` (S x N), managers contiguous."""
        if self.perm is not None:
            x = x[self.perm]
        np.copyto(out, x.T)             # always a copy: the round writes to it
        return out

    def from_children(self, xt):
        """(S x N) -> (N x S) in the caller's order (a transposed view when no reordering
        was needed: no copy)."""
        if self.perm is None:
            return xt.T
        out = np.empty(xt.shape[::-1], dtype=xt.dtype)
        out[self.perm] = xt.T
        return out


_SCRATCH = threading.local()


def _scratch(k, s, n):
    """``k`` reusable S x N float64 work arrays (per thread). Fresh arrays of this size cost
    more in page faults than the arithmetic done on them; reusing them between rounds of the
    same shape avoids that. Never returned to the caller."""
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.shape != (k, s, n):
        buf = np.empty((k, s, n))
        _SCRATCH.buf = buf
    return buf


class _Round(object):
    """Working set of one round (transposed: S x N), with a scratch buffer reused by every
    step so that a round allocates a handful of arrays instead of dozens of temporaries."""

    def __init__(self, new, counted, floors, cap, target, groups, weights, work):
        self.new = new
        self.counted = counted            # None: every entry counts (paper profile)
        self.floors = floors              # 1 x N
        self.cap = cap                    # 1 x N
        self.target = target              # S x G
        self.groups = groups
        self.weights = weights            # needy & counted, times capacity (S x N)
        self.wsum = groups.sum(weights)   # S x G
        self.wok = self.wsum > 0
        self.work = work

    def counted_total(self):
        if self.counted is None:
            return self.groups.sum(self.new)
        if self.groups.single:
            return np.einsum("ij,ij->i", self.new, self.counted)[:, None]
        np.multiply(self.new, self.counted, out=self.work)
        return self.groups.sum(self.work)

    def spread(self, amount):
        """Add ``amount`` (S x G) to each manager's needy entries in proportion to the
        weights; returns the amount actually spread (managers without weight spread none)."""
        scale = np.divide(amount, self.wsum, out=np.zeros_like(amount), where=self.wok)
        np.multiply(self.weights, self.groups.back(scale), out=self.work)
        self.new += self.work
        return np.where(self.wok, amount, 0.0)

    def balance(self):
        """Step 3: take the excess from over-allocated classes (proportionally above the
        floor), add the deficit to the needy entries of under-allocated ones (by capacity)."""
        new, work = self.new, self.work
        excess = self.counted_total() - self.target
        over = np.maximum(excess, 0.0)
        under = np.maximum(-excess, 0.0)
        np.subtract(new, self.floors, out=work)
        np.maximum(work, 0.0, out=work)
        if self.counted is not None:
            work *= self.counted
        red_sum = self.groups.sum(work)
        frac = np.divide(over, red_sum, out=np.zeros_like(over), where=red_sum > 0)
        np.minimum(frac, 1.0, out=frac)
        work *= self.groups.back(frac)
        new -= work
        taken = red_sum * frac
        given = self.spread(under)
        return taken, given, over, under

    def normalise(self):
        """Step 6: scale every child to its capacity (an empty child gets an even split)."""
        new = self.new
        rows = new.sum(axis=0, keepdims=True)                # 1 x N
        pos = rows > 0
        scale = np.divide(self.cap, rows, out=np.zeros_like(rows), where=pos)
        new *= scale
        if not pos.all():
            empty = ~pos[0]
            new[:, empty] = (self.cap / new.shape[0])[:, empty]


def _check_rows(rows):
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise BankError("desired: values must be finite and >= 0")
    sums = rows.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 100.0) > 1e-6)
    if len(bad):
        raise BankError("desired: percentages must sum to 100, got %g (row %d)"
                        % (sums[bad[0]], bad[0]))


def bank_round(alloc, usage, desired, accounts=None, capacity=None, c=2.0, floor=1.0,
               temporal="none", profile="default", passes=None, group=None, wants=None,
               cap_reward=True, waiting=None):
    """One allocation round; returns ``(new_alloc N x S, accounts, needy N x S bool)``.

    ``desired`` is in percent of the total capacity (S values, or G x S with ``group``: one
    row per manager); ``accounts`` (S, or G x S) defaults to zeros. With ``group`` (N manager
    indices) the children of G managers are allocated in one vectorised call, each manager
    on its own children only. ``wants`` (N x S bool, optional): children that count as needy
    whatever their usage (see the module docstring). ``cap_reward`` (default profile): step 5
    rewards at most what brings a class to its target. False pays the account out above the
    target (temporal compensation: ``t + s`` tickets in a later round), and the repeated step 3
    of the default profile then aims at the target plus what was paid. ``waiting`` (N x S bool,
    default profile): entries where the class has work waiting; they count and are needy even
    where the class used nothing yet (a class that has just come back: without this its
    shortfall and its account would have no entry to go to, and step 6 would take back what
    step 5 paid).
    """
    require_numpy()
    if profile not in PROFILES:
        raise BankError("profile: expected one of %s, got %r" % (", ".join(PROFILES), profile))
    keep = _temporal_keep(temporal)
    if c < 0 or floor < 0:
        raise BankError("c and floor must be >= 0, got c=%r floor=%r" % (c, floor))
    desired_arr = np.asarray(desired, dtype=np.float64)
    grouped = group is not None
    if grouped and desired_arr.ndim != 2:
        raise BankError("desired: with group, expected one row of percentages per manager")
    rows = desired_arr if grouped else desired_arr[None, :] if desired_arr.ndim == 1 \
        else desired_arr
    if rows.ndim != 2 or rows.shape[0] < 1:
        raise BankError("desired: expected S percentages, got shape %s" % (desired_arr.shape,))
    alloc, usage, _d, capacity = check_inputs(alloc, usage, rows[0], capacity)
    _check_rows(rows)
    n, s = alloc.shape
    groups = _Groups(group, n)
    if grouped and rows.shape != (groups.count, s):
        raise BankError("desired: expected %d x %d (managers x classes), got %s"
                        % (groups.count, s, rows.shape))
    if accounts is None:
        bank = np.zeros((groups.count, s))
    else:
        bank = np.array(accounts, dtype=np.float64)
        if not grouped and bank.shape == (s,):
            bank = bank[None, :]
        if bank.shape != (groups.count, s) or not np.all(np.isfinite(bank)):
            raise BankError("accounts: expected %d x %d finite values, got %r"
                            % (groups.count, s, accounts))

    def out_bank(b):
        b = b * keep
        return b if grouped else b[0]

    if n == 0:
        return alloc.copy(), out_bank(bank), np.zeros((0, s), dtype=bool)

    # transposed working layout: S x N (see _Groups)
    scratch = _scratch(5, s, n)
    alloc_t = groups.to_children(alloc, scratch[0])
    usage_t = groups.to_children(usage, scratch[1])
    cap = capacity if groups.perm is None else capacity[groups.perm]
    cap = cap[None, :]                                      # 1 x N
    bank = bank.T                                           # S x G
    share = rows.T / 100.0                                  # S x G
    target = share * groups.sum(cap)                        # S x G
    floors = np.minimum(floor, cap / s)  # never more floor than a child can hold
    # needy: fully used the previous allocation (usage may exceed it: the container gives
    # unused tickets of other classes away)
    new = np.multiply(alloc_t, 1.0 - 1e-9)
    new -= 1e-9
    needy = usage_t >= new
    if wants is not None:
        wants = np.asarray(wants, dtype=bool)
        if wants.shape != (n, s):
            raise BankError("wants: expected %d x %d booleans, got shape %s"
                            % (n, s, wants.shape))
        needy |= (wants if groups.perm is None else wants[groups.perm]).T
    literal = profile == "paper"
    waiting_t = None
    if waiting is not None and not literal:
        waiting = np.asarray(waiting, dtype=bool)
        if waiting.shape != (n, s):
            raise BankError("waiting: expected %d x %d booleans, got shape %s"
                            % (n, s, waiting.shape))
        waiting_t = (waiting if groups.perm is None else waiting[groups.perm]).T
        needy |= waiting_t
    if literal:
        counted = None
        weights = np.multiply(needy, cap, out=scratch[3])
    else:
        counted_b = usage_t > 0
        if waiting_t is not None:
            counted_b |= waiting_t          # work waiting: not an idle floor
        counted = scratch[2]
        np.copyto(counted, counted_b)
        counted_b &= needy
        weights = np.multiply(counted_b, cap, out=scratch[3])
    if passes is None:
        passes = 0 if literal else DEFAULT_PASSES

    # step 1: deposit unused tickets (``new`` is a scratch buffer here)
    unused = np.subtract(alloc_t, usage_t, out=alloc_t)
    np.maximum(unused, 0.0, out=unused)
    if not literal:
        np.multiply(groups.back(share), cap, out=new)
        np.minimum(unused, new, out=unused)
    bank = bank + groups.sum(unused)

    # step 2: initial values u +/- c, never below the floor
    np.multiply(needy, 2.0 * c, out=new)
    new -= c                                                # +c where needy, -c elsewhere
    new += usage_t
    np.maximum(new, floors, out=new)
    np.minimum(new, cap, out=new)

    work = _Round(new, counted, floors, cap, target, groups, weights, scratch[4])
    # step 3: bring totals toward the desired level
    taken, given, over, under = work.balance()

    # step 4: withdraw what is still over-allocated, deposit what is still under
    bank = bank - (over - taken) + (under - given)

    # step 5: reward positive accounts to needy entries
    reward = np.maximum(bank, 0.0)
    if not literal and cap_reward:
        room = np.maximum(target - work.counted_total(), 0.0)
        reward = np.minimum(reward, room)
    paid = work.spread(reward)
    bank = bank - paid
    if not literal and not cap_reward:
        # the later passes aim at the target plus what was paid back (scaled to the capacity)
        total = target.sum(axis=0, keepdims=True)
        work.target = (target + paid) * (total / (total + paid.sum(axis=0, keepdims=True)))

    # step 6: normalise each child to its capacity; clear or keep the accounts
    work.normalise()
    for _pass in range(passes):
        # default profile: step 3 again on the normalised matrix, then step 6, so that
        # normalisation does not undo step 3 (measured in docs/shares.md)
        work.balance()
        work.normalise()
    return groups.from_children(new), out_bank(bank.T), groups.from_children(needy)


class OuterCorrection(object):
    """Default profile, top manager only: integral correction of the targets from measured
    usage shares.

    ``offset += gain x (desired - measured)`` after each report, within +-``limit`` points. It
    is frozen while capacity idles (total usage below the capacity), while a class is more
    than ``tolerance`` points below its share without wanting more anywhere (no demand: no
    allocation can help, and integrating would wind up and overshoot at its return), while a
    class below its share uses less than its allocation (``alloc_total`` given; *demand-limited*:
    more than ``slack`` of what it holds goes unused, so a higher target only adds tickets it
    leaves idle: integrating would chase its demand's noise and wind up; docs/shares.md), and
    while any class is more than ``band`` points off (a transient the bank steps handle).
    """

    def __init__(self, desired, gain=0.5, limit=5.0, tolerance=1.0, band=2.0, slack=0.1):
        require_numpy()
        self.desired = np.asarray(desired, dtype=np.float64)
        self.offset = np.zeros_like(self.desired)
        self.gain = float(gain)
        self.limit = float(limit)
        self.tolerance = float(tolerance)
        self.band = float(band)
        self.slack = float(slack)

    def targets(self):
        """Corrected desired percentages (>= 0, summing to 100)."""
        t = np.maximum(self.desired + self.offset, 0.0)
        return t * (100.0 / t.sum())

    def update(self, usage_total, capacity_total, wants_more, alloc_total=None):
        """``usage_total`` (S tickets used cluster-wide), ``wants_more`` (S bool: needy
        somewhere), ``alloc_total`` (S tickets allocated when that usage was measured;
        None: the demand-limited rule is off). Returns True when the integrator moved."""
        usage_total = np.asarray(usage_total, dtype=np.float64)
        used = usage_total.sum()
        if used <= 0 or used < capacity_total * (1.0 - 1e-6):
            return False
        measured = 100.0 * usage_total / used
        short = measured < self.desired - self.tolerance
        if np.any(short & ~np.asarray(wants_more, dtype=bool)):
            return False
        if alloc_total is not None:
            held = np.asarray(alloc_total, dtype=np.float64)
            limited = usage_total < held * (1.0 - self.slack)
            if np.any(limited & (measured < self.desired)):
                return False
        if np.any(np.abs(measured - self.desired) > self.band):
            # a transient (a class just came back): the bank itself moves fast; integrating
            # it would wind up and overshoot afterwards
            return False
        self.offset = np.clip(self.offset + self.gain * (self.desired - measured),
                              -self.limit, self.limit)
        return True

    def reset(self):
        self.offset = np.zeros_like(self.desired)


def initial_allocation(desired, capacity):
    """Static allocation: every child split by ``desired`` (the starting point)."""
    desired = np.asarray(desired, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    return capacity[:, None] * (desired / 100.0)[None, :]


# ---------------------------------------------------------------------------------------------
# one round on Grid Engine: projects are the classes, hosts the nodes, slots the tickets
# ---------------------------------------------------------------------------------------------

ALLOCATIONS = ("bank", "reserves")
TEMPORAL_MODES = ("none", "compensate")
OTHER_GROUP = "(other hosts)"


def _largest_remainder(values, total):
    values = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    if values.sum() <= 0 or total <= 0:
        return np.zeros(len(values), dtype=int)
    quota = values * (total / values.sum())
    out = np.floor(quota).astype(int)
    order = sorted(range(len(values)), key=lambda i: (-(quota[i] - out[i]), i))
    for i in order[:int(total) - int(out.sum())]:
        out[i] += 1
    return out


def _integer_limits(share, slots, used, wait, d):
    """Integer slots per host and project for one manager's hosts (``share``: float slots,
    H x S; ``wait``: H x S, work waiting that may run there). Each project's total over these
    hosts is the largest-remainder rounding of its share; per host the slots go where the
    fractions are largest; then what a project without waiting work will not use goes to those
    with (work conserving)."""
    totals = _largest_remainder(share.sum(axis=0), int(slots.sum()))
    limit = np.zeros_like(share, dtype=int)
    for i in range(len(slots)):
        limit[i] = _largest_remainder(share[i], int(slots[i]))
    # fix the column totals by moving single slots where the fractions say so
    for _move in range(int(slots.sum()) * share.shape[1]):
        col = limit.sum(axis=0)
        over = np.flatnonzero(col > totals)
        under = np.flatnonzero(col < totals)
        if not len(over) or not len(under):
            break
        p, q = over[0], under[0]
        cand = np.flatnonzero(limit[:, p] > 0)
        i = cand[np.argmax((share[cand, q] - limit[cand, q]) - (share[cand, p] - limit[cand, p]))]
        limit[i, p] -= 1
        limit[i, q] += 1
    for i in range(len(slots)):
        here = wait[i]
        if not here.any():
            continue
        spare = 0
        for j in range(share.shape[1]):
            if not here[j] and limit[i, j] > used[i, j]:
                spare += limit[i, j] - int(np.ceil(used[i, j] - 1e-9))
                limit[i, j] = int(np.ceil(used[i, j] - 1e-9))
        if spare > 0:
            limit[i] += np.where(here, _largest_remainder(np.where(here, d, 0.0), spare), 0)
    return limit


def _account_rows(accounts, names, projects):
    """``accounts``: None, a list (one value per project, a single manager) or a mapping
    manager name -> {project: tickets}; returns len(names) x S."""
    out = np.zeros((len(names), len(projects)))
    if accounts is None:
        return out
    if isinstance(accounts, (list, tuple)) or (np is not None and isinstance(accounts, np.ndarray)):
        row = np.asarray(accounts, dtype=np.float64)
        if row.shape != (len(projects),) or not np.all(np.isfinite(row)):
            raise BankError("accounts: expected %d finite values, got %r" % (len(projects), accounts))
        out[:] = row
        return out
    if not isinstance(accounts, dict):
        raise BankError("accounts: expected a list or a mapping, got %r" % (accounts,))
    for g, name in enumerate(names):
        mine = accounts.get(name) or {}
        if not isinstance(mine, dict):
            raise BankError("accounts[%r]: expected a mapping project -> tickets" % name)
        for j, project in enumerate(projects):
            try:
                value = float(mine.get(project, 0.0))
            except (TypeError, ValueError):
                raise BankError("accounts[%r][%r]: not a number: %r"
                                % (name, project, mine.get(project)))
            if not np.isfinite(value):
                raise BankError("accounts[%r][%r]: not finite" % (name, project))
            out[g, j] = value
    return out


def _where_pending(job, hosts, snapshot, hostgroups):
    """Bool per host: where a pending job may run by its ``-q`` requests (``queue``,
    ``queue@host``, ``queue@@hostgroup``, wildcards); no request: everywhere."""
    wanted = job.get("hard_queues") or []
    if not wanted:
        return np.ones(len(hosts), dtype=bool)
    out = np.zeros(len(hosts), dtype=bool)
    for spec in wanted:
        queue, _at, place = str(spec).partition("@")
        for i, host in enumerate(hosts):
            queues = (snapshot["hosts"][host].get("queues") or [])
            if queues and not any(fnmatch.fnmatchcase(q, queue or "*") for q in queues):
                continue
            if not place:
                out[i] = True
            elif place.startswith("@"):
                members = (hostgroups or {}).get(place)
                out[i] = out[i] or members is None or host in members
            elif fnmatch.fnmatchcase(host, place):
                out[i] = True
    return out


def _host_groups(hostgroups, hosts):
    """Live hosts -> manager index; returns (names, index per host, failed group names)."""
    where = {}
    for name in sorted(hostgroups):
        members = hostgroups[name]
        if not isinstance(members, (list, tuple)):
            raise BankError("hostgroups[%r]: expected a list of host names" % name)
        for host in members:
            if host in where and where[host] != name:
                raise BankError("hostgroups: host %r is in both %r and %r; give host groups "
                                "that do not overlap" % (host, where[host], name))
            where[host] = name
    live = sorted(set(where[h] for h in hosts if h in where))
    if any(h not in where for h in hosts):
        live.append(OTHER_GROUP)
    failed = sorted(name for name in hostgroups if name not in live)
    idx = dict((name, g) for g, name in enumerate(live))
    return live, np.array([idx[where.get(h, OTHER_GROUP)] for h in hosts], dtype=np.intp), failed


def _allocate(prev, use, rows, acc, profile, temporal, allocation, group=None, wants=None,
              waiting=None):
    """One manager level: bank (grouped) or cluster reserves (one LP pair per manager)."""
    if allocation == "bank":
        return bank_round(prev, use, rows if group is not None else rows[0],
                          acc if group is not None else acc[0], temporal=temporal,
                          profile=profile, group=group, wants=wants,
                          cap_reward=temporal == "none", waiting=waiting)[:2]
    from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reserves
    new = np.zeros_like(prev)
    index = np.zeros(prev.shape[0], dtype=np.intp) if group is None else group
    for g in range(rows.shape[0]):
        mine = np.flatnonzero(index == g)
        if len(mine):
            try:
                new[mine] = reserves.cluster_reserves(prev[mine], use[mine], rows[g])[0]
            except reserves.ReservesError as exc:
                raise BankError("allocation=reserves: %s" % exc)
    return new, np.zeros_like(acc) if group is not None else np.zeros(acc.shape[1])


def plan_slots(snapshot, desired, previous=None, accounts=None, profile="default",
               temporal="none", retain=1.0, allocation="bank", usage=None, hostgroups=None):
    """One fair-share round from a ``sge_queue_facts`` snapshot (docs/snapshot.md).

    ``desired``: ``{project: percent}`` (sum 100). ``previous``: ``[{project, host, slots}]``
    (the rules now in force; missing pairs count as the static split). ``usage``: measured
    average running slots ``{project: {host: slots}}`` over the last round (from qacct and the
    running jobs, ``module_utils/sge_usage.py``); None: the running slots of the snapshot.

    ``temporal``: ``none`` clears the bank accounts after the round (the paper's basic
    version); ``compensate`` keeps ``retain`` (0..1) of them, so a project that left its share
    unused gets it back in later rounds (temporal compensation). ``accounts``: the accounts
    kept from the last round, a list (one manager) or ``{manager: {project: tickets}}`` (one
    manager: ``"cluster"``; with host groups: ``"top"`` and one entry per host group).
    Accounts are kept within plus or minus one round's entitlement of the project at that
    manager.

    ``allocation``: ``bank`` (Li & Parker) or ``reserves`` (cluster reserves, Aron et al.: only
    spatial compensation, so ``temporal`` must be ``none``).

    ``hostgroups``: ``{name: [hosts]}``: one manager per host group and a top manager that
    divides the cluster among the host groups that have a live host (a host group without one
    has failed: its share goes to the others and comes back when a host returns); live hosts
    in no listed group form one more group. None: one flat manager.

    Returns ``{"limits": [{project, host, slots}], "accounts": [...] (top manager),
    "group_accounts": {group: {project: tickets}}, "percent": {host: {project: R}},
    "usage": {project: slots}, "waiting": [...], "groups": {group: {hosts, slots, percent}},
    "failed_groups": [...]}``.
    """
    require_numpy()
    if allocation not in ALLOCATIONS:
        raise BankError("allocation: expected one of %s, got %r" % (", ".join(ALLOCATIONS), allocation))
    if temporal not in TEMPORAL_MODES:
        raise BankError("temporal: expected one of %s, got %r" % (", ".join(TEMPORAL_MODES), temporal))
    if isinstance(retain, bool) or not isinstance(retain, (int, float)) or not 0.0 <= retain <= 1.0:
        raise BankError("retain: expected a fraction in [0, 1], got %r" % (retain,))
    if allocation == "reserves" and temporal != "none":
        raise BankError("temporal=compensate needs allocation=bank: cluster reserves does only "
                        "spatial compensation (Li & Parker)")
    keep = float(retain) if temporal == "compensate" else "none"
    projects = list(desired)
    if not projects:
        raise BankError("desired: no projects")
    d = np.array([float(desired[p]) for p in projects])
    hosts = sorted(h for h, v in (snapshot.get("hosts") or {}).items()
                   if (v.get("slots_total") or 0) > 0
                   and not set(v.get("states") or "") & set("uEdD"))
    if not hosts and not hostgroups:
        raise BankError("snapshot: no execution host with slots")
    slots = np.array([float(snapshot["hosts"][h]["slots_total"]) for h in hosts])
    hidx = dict((h, i) for i, h in enumerate(hosts))
    pidx = dict((p, j) for j, p in enumerate(projects))
    used = np.zeros((len(hosts), len(projects)))
    if usage is None:
        for job in snapshot.get("running") or []:
            j = pidx.get(job.get("project"))
            if j is None:
                continue
            for host, n in (job.get("hosts") or {job.get("host"): job.get("slots") or 1}).items():
                if host in hidx:
                    used[hidx[host], j] += float(n)
    else:
        for project, per_host in usage.items():
            j = pidx.get(project)
            if j is None:
                continue
            for host, n in per_host.items():
                if host in hidx:
                    used[hidx[host], j] += float(n)
    used = np.minimum(used, slots[:, None])
    # where each project has work waiting (a pending job counts on the hosts its -q allows)
    wait_h = np.zeros((len(hosts), len(projects)), dtype=bool)
    waiting = set()
    for job in snapshot.get("pending") or []:
        j = pidx.get(job.get("project"))
        if j is None or job.get("held") or job.get("error"):
            continue
        where = _where_pending(job, hosts, snapshot, hostgroups)
        if where.any():
            waiting.add(job.get("project"))
            wait_h[:, j] |= where
    if hostgroups:
        names, group, failed = _host_groups(hostgroups, hosts)
        if not hosts:
            raise BankError("snapshot: no execution host with slots in any host group "
                            "(every manager failed)")
    else:
        names, group, failed = [""], np.zeros(len(hosts), dtype=np.intp), []
    prev = initial_allocation(d, slots)
    for rule in previous or []:
        if rule.get("host") in hidx and rule.get("project") in pidx:
            prev[hidx[rule["host"]], pidx[rule["project"]]] = float(rule["slots"])
    pct = 100.0 / slots[:, None]
    # a project with work waiting would use all it is given: it counts as using its limit
    # (needy in the bank's sense) even where its jobs have not started yet
    demand = np.where(wait_h, np.maximum(used, prev), used)
    prev_p = prev * pct
    use_p = np.minimum(demand * pct, 100.0)
    gcount = len(names)
    entitlement = d / 100.0 * np.bincount(group, minlength=gcount)[:, None] * 100.0   # G x S
    if hostgroups:
        acc_in = _account_rows(accounts, ["top"], projects)[0]
        acc_groups = _account_rows(accounts, names, projects)
        # top manager: one child per live host group, 100 tickets per host
        cap_g = 100.0 * np.bincount(group, minlength=gcount)
        prev_g = np.zeros((gcount, len(projects)))
        use_g = np.zeros_like(prev_g)
        np.add.at(prev_g, group, prev_p)
        np.add.at(use_g, group, use_p)
        needy_h = use_p >= prev_p * (1.0 - 1e-9) - 1e-9
        wants_g = np.zeros(prev_g.shape, dtype=bool)
        np.logical_or.at(wants_g, group, needy_h)
        if allocation == "bank":
            limit_top = d * cap_g.sum() / 100.0
            r_g, acc_top, _n = bank_round(prev_g, use_g, d, np.clip(acc_in, -limit_top, limit_top),
                                          capacity=cap_g, temporal=keep, profile=profile,
                                          wants=None if profile == "paper" else wants_g,
                                          cap_reward=keep == "none")
        else:
            # cluster reserves is formulated for nodes of equal size (100 percent each); the
            # top manager's children (host groups) differ in size, so the top runs the bank
            r_g, acc_top, _n = bank_round(prev_g, use_g, d, None, capacity=cap_g,
                                          profile=profile,
                                          wants=None if profile == "paper" else wants_g)
        rows = 100.0 * r_g / cap_g[:, None]
        rows *= 100.0 / rows.sum(axis=1, keepdims=True)
        ent = rows / 100.0 * cap_g[:, None]
        new, acc_g = _allocate(prev_p, use_p, rows, np.clip(acc_groups, -ent, ent), profile, keep,
                               allocation, group=group, waiting=wait_h)
        acc_g = np.clip(acc_g, -ent, ent)
        acc_top = np.clip(acc_top, -d * cap_g.sum() / 100.0, d * cap_g.sum() / 100.0)
    else:
        acc_in = _account_rows(accounts, ["cluster"], projects)
        ent = entitlement
        new, acc_top = _allocate(prev_p, use_p, d[None, :], np.clip(acc_in, -ent, ent), profile,
                                 keep, allocation, waiting=wait_h)
        acc_top = np.clip(acc_top, -ent[0], ent[0])
        acc_g = acc_top[None, :]
        rows = d[None, :]
    share = new / pct                                    # float slots per host and project
    limit = np.zeros_like(share, dtype=int)
    for g in range(gcount):
        mine = np.flatnonzero(group == g)
        limit[mine] = _integer_limits(share[mine], slots[mine], used[mine], wait_h[mine], d)
    result = dict(
        limits=[dict(project=p, host=h, slots=int(limit[i, j]))
                for i, h in enumerate(hosts) for j, p in enumerate(projects)],
        accounts=[float(a) for a in acc_top],
        percent=dict((h, dict((p, float(new[i, j])) for j, p in enumerate(projects)))
                     for i, h in enumerate(hosts)),
        usage=dict((p, float(used[:, j].sum())) for j, p in enumerate(projects)),
        waiting=sorted(p for p in projects if p in waiting),
        failed_groups=failed,
    )
    if hostgroups:
        result["group_accounts"] = dict(
            (name, dict((p, float(acc_g[g, j])) for j, p in enumerate(projects)))
            for g, name in enumerate(names))
        result["groups"] = dict(
            (name, dict(hosts=[hosts[i] for i in np.flatnonzero(group == g)],
                        slots=int(slots[group == g].sum()),
                        percent=dict((p, float(rows[g, j])) for j, p in enumerate(projects)),
                        limits=dict((p, int(limit[group == g, j].sum()))
                                    for j, p in enumerate(projects))))
            for g, name in enumerate(names))
    return result
