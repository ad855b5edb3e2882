# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measured slot usage per project and host over a time window (standard library only).

The fair-share round's temporal compensation (docs/shares.md) needs what each project *used*
since the last round, not what it runs at the moment of the snapshot:

* finished jobs from ``qacct -j -b YYMMDDhhmm`` (plain text), read with ``TZ=UTC`` so that its
  time stamps are UTC whatever the qmaster's and the controller's time zones
  (:func:`parse_qacct_utc`);
* running jobs from the snapshot of ``sge_queue_facts`` (``running``: ``start_time`` and
  ``hosts``).

:func:`usage_per_project` turns both into the average running slots per project and host over
``[since, now]``: slot-seconds inside the window divided by its length. A parallel job's
accounting records (one per host it ran on, each with the job's total ``slots``) share the
job's slots evenly (qacct does not say how many ran where). A job both still in the snapshot
and already in the accounting file (it ended between the two reads) counts once, from the
snapshot.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import math
import time

_MONTHS = dict((m, i + 1) for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")))


class UsageError(ValueError):
    """Unreadable accounting text or window; the message names it."""


def utc_time(text):
    """Epoch seconds of a qacct time stamp printed under ``TZ=UTC``, or None for ``-/-``.

    Accepted: SGE/SoGE ``Fri Nov 27 11:18:13 2026`` and UGE ``06/11/2020 13:22:28.652``.
    """
    s = (text or "").strip()
    if not s or s in ("-", "-/-"):
        return None
    try:
        parts = s.split()
        if len(parts) == 5 and parts[1] in _MONTHS:
            y, mo, d = int(parts[4]), _MONTHS[parts[1]], int(parts[2])
            clock = parts[3]
        elif len(parts) == 2 and s[2] == "/" and s[5] == "/":
            mo, d, y = int(s[0:2]), int(s[3:5]), int(s[6:10])
            clock = parts[1]
        else:
            raise ValueError(s)
        hms = clock.split(":")
        sec = float(hms[2])
        return float(calendar.timegm((y, mo, d, int(hms[0]), int(hms[1]), 0, 0, 0, 0))) + sec
    except (ValueError, IndexError):
        raise UsageError("qacct -j: unreadable time %r" % text)


def parse_qacct_utc(text):
    """``qacct -j`` text (run with ``TZ=UTC``) -> records ``{jobnumber, taskid, hostname,
    project, slots, start_time, end_time}`` (times in epoch seconds, UTC)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", "replace")
    records = []
    cur = {}

    def close():
        if "jobnumber" in cur:
            records.append(_record(cur))

    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("====="):
            close()
            cur = {}
            continue
        parts = line.split(None, 1)
        key, value = parts[0], (parts[1].strip() if len(parts) > 1 else "")
        if key == "qname" and "jobnumber" in cur:
            close()
            cur = {}
        cur[key] = value
    close()
    return records


def _record(fields):
    try:
        job = int(fields["jobnumber"].split()[0])
        slots = int((fields.get("slots") or "1").split()[0])
    except (ValueError, IndexError):
        raise UsageError("qacct -j: unreadable jobnumber/slots in %r"
                         % dict((k, fields.get(k)) for k in ("jobnumber", "slots")))
    task = fields.get("taskid", "")
    project = fields.get("project")
    return dict(
        jobnumber=job,
        taskid=int(task) if task.isdigit() else None,
        hostname=fields.get("hostname"),
        project=None if project in (None, "", "NONE") else project,
        slots=slots,
        start_time=utc_time(fields.get("start_time")),
        end_time=utc_time(fields.get("end_time")),
    )


def _task_key(job, task):
    return (int(job), None if task in (None, "", "undefined") else int(task))


def usage_per_project(records, running, since, now):
    """Average running slots ``{project: {host: slots}}`` over ``[since, now]``.

    ``records``: :func:`parse_qacct_utc` output; ``running``: the snapshot's running jobs.
    Jobs without a project are left out.
    """
    try:
        since, now = float(since), float(now)
    except (TypeError, ValueError):
        raise UsageError("usage window: since and now must be numbers, got %r, %r" % (since, now))
    if now <= since or math.isnan(now) or math.isnan(since):
        raise UsageError("usage window: now (%r) must be after since (%r)" % (now, since))
    length = now - since
    seconds = {}

    def add(project, host, amount):
        if project and host and amount > 0:
            mine = seconds.setdefault(project, {})
            mine[host] = mine.get(host, 0.0) + amount

    live = set()
    for job in running or []:
        try:
            live.add(_task_key(job.get("id"), job.get("task")))
        except (TypeError, ValueError):
            pass
        start = job.get("start_time")
        begin = since if start is None else max(since, float(start))
        span = max(0.0, now - begin)
        for host, n in (job.get("hosts") or {job.get("host"): job.get("slots") or 1}).items():
            add(job.get("project"), host, float(n) * span)
    parts = {}
    for rec in records:
        parts[(rec["jobnumber"], rec["taskid"])] = parts.get((rec["jobnumber"], rec["taskid"]), 0) + 1
    for rec in records:
        key = (rec["jobnumber"], rec["taskid"])
        if key in live or rec["start_time"] is None or rec["end_time"] is None:
            continue
        span = min(now, rec["end_time"]) - max(since, rec["start_time"])
        if span > 0:
            add(rec["project"], rec["hostname"], rec["slots"] / float(parts[key]) * span)
    return dict((p, dict((h, v / length) for h, v in hosts.items()))
                for p, hosts in seconds.items())


def qacct_begin_utc(epoch):
    """``qacct -b`` argument ``YYMMDDhhmm`` for ``epoch`` when qacct runs with ``TZ=UTC``
    (rounded down to the minute)."""
    return time.strftime("%y%m%d%H%M", time.gmtime(float(epoch)))
