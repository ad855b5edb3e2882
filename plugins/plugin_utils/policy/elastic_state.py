# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State and history of the elastic policy (policy/elastic.py): what survives between polls.

Reading a saved state of any schema (:func:`_read_state`), the bound on the pending jobs' records
(:data:`PENDING_RECORDS_LIMIT`, :func:`_oldest_records`), the clocks kept per host (unknown since,
left at), the launch failures already seen, a waiting job's wait, the job history (pending, running,
started, finished) and the statistics row built from it.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Mapping

from .elastic_common import SCHEMA, _is_int, _is_mapping, _is_number, _num, _plural, fmt_duration

#: Bounds on the job history kept in the state (per list), whatever the lookback window.
HISTORY_LIMIT = 5000
#: Per-job records of pending jobs kept in the state (issue 20: one record per pending job made the
#: state 17 MB at 200,000 pending jobs, rewritten every poll). The records kept are the oldest by
#: first_seen, jobs without a submit time first (their wait is known only from their record); see
#: :meth:`StateHistory._history` and docs/elastic.md, "The state file".
PENDING_RECORDS_LIMIT = 2000
#: With more than this many node records or running tasks, those are written in their compact forms
#: (``nodes_grouped``, ``jobs.running_tasks``: issue 21, "the poll at scale"); a smaller state is
#: written as before, one record per node and one line per start time. Both forms are read.
COMPACT_FROM = 1000


_LEAN_JOBS = {"pending": {}, "running_since": {}, "started": [], "finished": []}


def _read_lean_state(state):
    """:func:`_read_state` of a state written by the lean entry point (``trusted``): the same
    result, the types taken as that entry point writes them; None for any other state."""
    nodes = state.get("nodes")
    if type(nodes) is not dict or "removed" in state or state.get("jobs") != _LEAN_JOBS:  # pylint: disable=unidiomatic-typecheck
        return None
    schema = state.get("schema")
    unknown = state.get("unknown", {})
    booting = state.get("booting")
    if schema != SCHEMA or type(unknown) is not dict or type(booting) is not list or "nodes_grouped" in state:  # pylint: disable=unidiomatic-typecheck
        return None
    reason = state.get("last_change_reason")
    size = state.get("cluster_size")
    return {
        "first_poll": False,
        "last_poll": _num(state.get("last_poll")),
        "last_change": _num(state.get("last_change")),
        "last_change_reason": reason if isinstance(reason, str) else None,
        "cluster_size": size if _is_int(size) else None,
        "nodes": nodes,
        "booting": sorted(t for t in (_num(b.get("requested_at")) if isinstance(b, Mapping) else _num(b)
                                      for b in booting) if t is not None),
        "pending": {}, "running": {}, "started": [], "finished": [],
        "launch_failure_known": "last_launch_failure" in state,
        "last_launch_failure": _num(state.get("last_launch_failure")),
        "removed": {},
        "unknown": {str(name): float(since) for name, since in unknown.items() if _num(since) is not None},
    }


def _read_state(state, warnings, trusted=False):
    """Known keys of a state of any schema; unknown keys are ignored, bad values dropped.

    ``trusted``: ``state`` comes from :func:`_decide_validated` (node records are read as they are).
    """
    if trusted and type(state) is dict:  # pylint: disable=unidiomatic-typecheck
        out = _read_lean_state(state)
        # (an unreadable last_launch_failure, or an unknown time that is none, warns: the long way)
        if out is not None and (out["last_launch_failure"] is not None or state.get("last_launch_failure") is None) \
                and len(out["unknown"]) == len(state.get("unknown", ())):
            return out
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
    if "nodes_grouped" in state:
        if trusted:  # (a copy: the grouped records are added to it)
            out["nodes"] = nodes = dict(nodes)
        _read_nodes_grouped(typed("nodes_grouped", Mapping, {}), nodes, warnings)
        out["first_poll"] = False
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
    if isinstance(jobs.get("running"), Mapping):  # one record per task (states written before running_since)
        for key, start in jobs["running"].items():
            out["running"][str(key)] = _num(start)
    if isinstance(jobs.get("running_since"), Mapping):  # start time -> the keys of the tasks started then
        for start, keys in jobs["running_since"].items():
            if isinstance(keys, str):
                start = _time_of(start)
                for key in keys.split():
                    out["running"][key] = start
    if "running_tasks" in jobs:
        _read_running_tasks(jobs["running_tasks"], out["running"], warnings)
    for name in ("started", "finished"):
        if isinstance(jobs.get(name), list):
            for row in jobs[name]:
                if isinstance(row, (list, tuple)) and len(row) == 3 and _is_number(row[1]) and _is_number(row[2]):
                    out[name].append([str(row[0]), float(row[1]), float(row[2])])
    return out


def _time_of(text):
    """A time written as a mapping key (:func:`_time_key`) -> float, or None if it is not one."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _time_key(value):
    """A time as a mapping key: ``1699999900.0`` -> ``"1699999900"``, ``12.5`` -> ``"12.5"``."""
    return "%d" % value if value == int(value) else repr(value)


def _running_since(running):
    """``jobs.running_since`` of the state: start time (:func:`_time_key`) -> the keys of the
    running tasks that started then, sorted and separated by spaces.

    One entry per start time instead of one per task (``jobs.running`` before): tasks of an array
    job that the scheduler started in the same second share one line, and the time is written once.
    A task whose start is not known (``None``, only from a state of an older version) or whose key
    holds a blank is left out: it is then as a task never seen running before, which only matters
    for the statistics (it makes no ``finished`` row when it ends).
    """
    by_start = {}
    for key, start in running.items():
        if start is not None and key and key.isprintable() and " " not in key:  # (else not read back as one key)
            by_start.setdefault(start, []).append(key)
    return {_time_key(start): " ".join(sorted(keys)) for start, keys in by_start.items()}


# ---- compact forms (issue 21, "the poll at scale") -------------------------------------------------
#: A host name as prefix, number, suffix: the last run of digits is the number.
_NAME_PARTS = re.compile(r"^(.*\D)?(\d+)(\D*)$")
#: A run of names in ``nodes_grouped``: ``prefix[first-last]suffix``, both numbers of one width.
_NAME_RUN = re.compile(r"^([^\[\]]*)\[(\d+)-(\d+)\]([^\[\]]*)$")
#: A task in ``jobs.running_tasks``: job number step (none: 1), task number, seconds before the
#: base time in base 36.
_TASK_TOKEN = re.compile(r"^(\d*)(?:\.(\d+))?:([0-9a-z]+)$")
_DIGITS36 = "0123456789abcdefghijklmnopqrstuvwxyz"
#: A job or task number as the keys write it (no sign, no leading zero).
_NUMBER = re.compile(r"^(?:0|[1-9]\d*)$")
#: The most names one run of ``nodes_grouped`` may stand for (a damaged file must not fill memory).
_RUN_LIMIT = 1000000
_NODE_CLOCKS = ("first_seen", "joined", "last_busy")


def _is_time(value):
    return (type(value) is float or type(value) is int) and math.isfinite(value)  # pylint: disable=unidiomatic-typecheck


def _name_runs(names):
    """``names`` as the text of ``nodes_grouped``: sorted, separated by spaces, and every run of
    two or more names that differ only in a number counting up by one (``node001``, ``node002``,
    ...; the last run of digits in the name, of one width) written once as ``node[001-002]``."""
    groups = {}
    for name in names:
        match = _NAME_PARTS.match(name)
        if match is None:
            groups.setdefault((name, 0, ""), []).append(None)
        else:
            prefix, digits, suffix = match.groups()
            groups.setdefault((prefix or "", len(digits), suffix), []).append(int(digits))
    tokens = []
    for (prefix, width, suffix), numbers in groups.items():
        if numbers == [None]:
            tokens.append(prefix)
            continue
        numbers.sort()
        start = prev = numbers[0]
        for number in numbers[1:] + [None]:
            if number is not None and number == prev + 1:
                prev = number
                continue
            if prev == start:
                tokens.append("%s%0*d%s" % (prefix, width, start, suffix))
            else:
                tokens.append("%s[%0*d-%0*d]%s" % (prefix, width, start, width, prev, suffix))
            start = prev = number
    return " ".join(sorted(tokens))


def _names_of(text):
    """The names of a ``nodes_grouped`` text (:func:`_name_runs`); ValueError for a damaged run."""
    for token in text.split():
        if "[" not in token and "]" not in token:
            yield token
            continue
        match = _NAME_RUN.match(token)
        if match is None or len(match.group(2)) != len(match.group(3)):
            raise ValueError(token)
        prefix, first, last, suffix = match.groups()
        width, first, last = len(first), int(first), int(last)
        if first >= last or last - first >= _RUN_LIMIT:
            raise ValueError(token)
        for number in range(first, last + 1):
            yield "%s%0*d%s" % (prefix, width, number, suffix)


def _group_nodes(nodes):
    """Split the node records ``nodes`` (name -> record) into the records that stay in ``nodes``
    and ``nodes_grouped``: the records' clocks (:func:`_time_key`, ``-`` for none) -> the names
    of the nodes with those clocks (:func:`_name_runs`).

    Launched nodes stay in ``nodes`` (the inventory plugin reads ``launched`` there), so do
    records with other keys or values and names a run cannot hold (blank, brackets, unprintable).
    """
    kept, by_clocks = {}, {}
    for name, rec in nodes.items():
        first_seen, joined, last_busy = rec.get("first_seen"), rec.get("joined"), rec.get("last_busy")
        if (len(rec) == 3 and _is_time(first_seen) and (joined is None or _is_time(joined))
                and (last_busy is None or _is_time(last_busy)) and name and name.isprintable()
                and " " not in name and "[" not in name and "]" not in name):
            clocks = " ".join("-" if t is None else _time_key(t) for t in (first_seen, joined, last_busy))
            by_clocks.setdefault(clocks, []).append(name)
        else:
            kept[name] = rec
    return kept, {clocks: _name_runs(names) for clocks, names in by_clocks.items()}


def _read_nodes_grouped(grouped, nodes, warnings):
    """Add the records of ``nodes_grouped`` (:func:`_group_nodes`) to ``nodes``; a record in
    ``nodes`` wins. Clocks or names that cannot be read are dropped with a warning: those nodes
    are then seen as new (their idle clocks start again), as a damaged record of ``nodes`` is."""
    for clocks, text in grouped.items():
        times = str(clocks).split(" ")
        values = [None if t == "-" else _time_of(t) for t in times]
        if len(times) != 3 or values[0] is None or any(v is None and t != "-" for v, t in zip(values, times)) \
                or not isinstance(text, str):
            warnings.append("state: nodes_grouped entry %r cannot be read; the idle clocks of its nodes start again"
                            % (clocks,))
            continue
        try:
            names = list(_names_of(text))
        except ValueError as exc:
            warnings.append("state: nodes_grouped entry %r holds an unreadable run of names (%s); the idle clocks "
                            "of its nodes start again" % (clocks, exc))
            continue
        for name in names:
            if name not in nodes:
                nodes[name] = dict(zip(_NODE_CLOCKS, values))


def _running_tasks(running):
    """Split the running tasks ``running`` (key -> start time) into those written one line per start
    time (:func:`_running_since`) and the text of ``jobs.running_tasks``.

    The text is the base time (the latest start) and one token per task in the order of job and
    task number: ``STEP[.TASK]:AGE``, STEP the job number minus the previous token's (the first:
    the job number; left out when it is 1), TASK the task number of an array job's task, AGE the
    seconds the task started before the base time, in base 36 (digits ``0-9a-z``: ``2s`` is 100).
    Tasks with a key other than ``job`` or ``job.task`` (decimal numbers) or a start time that is
    not a whole second are left to ``running_since``.
    """
    rest, rows = {}, []
    append = rows.append
    for key, start in running.items():
        # (written for speed: 100,000 running tasks; int() also reads " 1", "+1", "1_0" and other
        # digits, so the number must read back as the text)
        kind = type(start)
        if kind is float or kind is int:
            job, dot, task = key.partition(".")
            try:
                whole, number = int(start), int(job)
                if whole == start and number >= 0 and str(number) == job:
                    if not dot:
                        append((number, -1, whole))
                        continue
                    sub = int(task)
                    if sub >= 0 and str(sub) == task:
                        append((number, sub, whole))
                        continue
            except (ValueError, OverflowError):
                pass
        rest[key] = start
    if not rows:
        return rest, None
    rows.sort()
    base = max(row[2] for row in rows)
    tokens = [str(base)]
    previous = 0
    ages = {}
    for job, task, start in rows:
        age = ages.get(start)
        if age is None:
            age = ages[start] = _base36(base - start)
        step = job - previous
        step = "" if step == 1 else str(step)
        tokens.append("%s:%s" % (step, age) if task < 0 else "%s.%d:%s" % (step, task, age))
        previous = job
    return rest, " ".join(tokens)


def _base36(number):
    """A whole number >= 0 in base 36 (:data:`_DIGITS36`)."""
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = _DIGITS36[digit] + text
        if not number:
            return text


def _read_running_tasks(text, running, warnings):
    """Add the tasks of ``jobs.running_tasks`` (:func:`_running_tasks`) to ``running`` (key ->
    start time). From a token that cannot be read on, the tasks are dropped with a warning (the
    job numbers are steps from the previous token's): as tasks never seen running, which only the
    statistics read."""
    tokens = text.split() if isinstance(text, str) else [None]
    try:
        base = int(tokens[0]) if tokens and tokens[0] is not None and _NUMBER.match(tokens[0]) else None
    except ValueError:
        base = None
    if base is None:
        warnings.append("state: jobs.running_tasks has no base time; its running tasks are read as not seen before")
        return
    job = 0
    for position, token in enumerate(tokens[1:]):
        match = _TASK_TOKEN.match(token)
        if match is None:
            warnings.append("state: jobs.running_tasks: token %d (%r) cannot be read; it and the %d after it are "
                            "read as not seen before" % (position + 1, token[:40], len(tokens) - position - 2))
            return
        step, task, age = match.groups()
        job += int(step) if step else 1
        running["%d.%s" % (job, task) if task is not None else str(job)] = float(base - int(age, 36))


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


def _row_order(item):
    """:func:`_record_order` of ``(key, (submit_time, first_seen))``."""
    key, (submit, first_seen) = item
    try:
        number = int(key)
    except ValueError:
        number = math.inf
    return (submit is not None, first_seen, submit if submit is not None else 0.0, number, key)


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


class StateHistory(object):
    """Part of :class:`policy.elastic._Decision`: clocks, job history and statistics."""

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
            for name in self.went:
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

    def _waited(self, job):
        submit = job.get("submit_time")
        if type(submit) is float and math.isfinite(submit):  # pylint: disable=unidiomatic-typecheck
            return max(0.0, self.now - submit)  # (the common case, first)
        submit = _num(submit)
        if submit is None:
            rec = self.prev["pending"].get(str(job.get("id")))
            submit = rec["first_seen"] if rec and rec["first_seen"] is not None else self.now
        return max(0.0, self.now - submit)

    # ---- job history and stats -----------------------------------------------------------------
    def _history(self):
        prev, now, snap = self.prev, self.now, self.snap
        window = self.cfg["lookback_window"] * 60.0
        # (submit_time, first_seen) per pending job: the records before the bound, as tuples (a poll
        # may list 200,000 waiting jobs; only the PENDING_RECORDS_LIMIT kept become mappings)
        rows = {}
        prev_pending = prev["pending"]
        isfinite = math.isfinite
        for job in snap["pending"]:
            key = str(job.get("id"))
            old = prev_pending.get(key)
            if old is None:
                submit = job.get("submit_time")
                if type(submit) is not float or not isfinite(submit):  # pylint: disable=unidiomatic-typecheck
                    submit = _num(submit)
                rows[key] = (submit, now)
            else:
                first_seen = old.get("first_seen")
                rows[key] = (_num(job.get("submit_time"), old.get("submit_time")),
                             first_seen if first_seen is not None else now)
        limit = PENDING_RECORDS_LIMIT
        if len(rows) > limit:
            keep = set(key for key, dummy in heapq.nsmallest(limit, rows.items(), key=_row_order))
            pending = {key: {"submit_time": row[0], "first_seen": row[1]} for key, row in rows.items() if key in keep}
        else:
            pending = {key: {"submit_time": row[0], "first_seen": row[1]} for key, row in rows.items()}
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
        running_tasks = None
        if len(running) > COMPACT_FROM:
            running, running_tasks = _running_tasks(running)
        self.jobs_state = {
            "pending": pending,
            "running_since": _running_since(running),
            "started": started[-HISTORY_LIMIT:],
            "finished": finished[-HISTORY_LIMIT:],
        }
        if running_tasks is not None:
            self.jobs_state["running_tasks"] = running_tasks

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
            tasks = job.get("task_count")
            queued += tasks if (type(tasks) is int or _is_int(tasks)) and tasks > 0 else 1  # pylint: disable=unidiomatic-typecheck
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

    def _new_state(self, add, remove):
        """The state this poll writes (``plan["state"]``), after adding ``add`` nodes and removing ``remove``."""
        cfg, now = self.cfg, self.now
        # Removed nodes stay recorded until a poll no longer sees them.
        if self.lean:  # self.nodes holds fresh copies no one else sees
            nodes_state = self.nodes
        else:
            nodes_state = {name: dict(self.nodes[name]) for name in sorted(self.nodes)}
        grouped = None
        if not self.lean and len(nodes_state) > COMPACT_FROM:
            nodes_state, grouped = _group_nodes(nodes_state)
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
        if grouped:
            new_state["nodes_grouped"] = grouped
        if self.launch_mark_known:
            new_state["last_launch_failure"] = self.launch_mark
        if self.removed:  # (without the key when empty: name_reuse_time 0 writes the state as before)
            new_state["removed"] = dict(self.removed)
        if self.unknown_since:  # (without the key when no host is unknown: the state as before)
            new_state["unknown"] = dict(self.unknown_since)
        return new_state
