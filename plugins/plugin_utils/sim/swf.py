# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Standard Workload Format (Parallel Workloads Archive) reader.

One job per line, 18 whitespace-separated numeric fields, ``;`` starts a header comment::

    1 job id  2 submit (s)  3 wait (s)  4 run time (s)  5 allocated processors  6 avg cpu
    7 used memory  8 requested processors  9 requested time  10 requested memory  11 status
    12 user  13 group  14 application  15 queue  16 partition  17 preceding job  18 think time

``-1`` means unknown.  A line that is not 18 numbers is an error naming its line number; a
well-formed job the simulator cannot replay (unknown run time or processor count) is *skipped* and
counted, never guessed.  Pure: :func:`parse` takes lines, :func:`load` reads a file.
"""

from __future__ import annotations

import collections
import math

FIELDS = ("job", "submit", "wait", "run", "procs", "cpu", "mem", "req_procs", "req_time", "req_mem",
          "status", "user", "group", "app", "queue", "partition", "prev_job", "think")

#: A job as the simulator replays it.  ``procs``: allocated processors, else requested ones.
Job = collections.namedtuple("Job", "id submit run procs line user")


class SwfError(ValueError):
    """A malformed SWF file; the message names the file and the line."""


class Trace(object):
    """Jobs in submit order (ties: file order), the header's ``key: value`` pairs and skip counts."""

    def __init__(self, name, jobs, header, skipped, lines, notes=None):
        self.name = name
        self.jobs = jobs
        self.header = header
        self.skipped = skipped      # {reason: count} of jobs not replayed
        self.lines = lines          # job lines read
        self.notes = notes or {}    # {remark: count}, jobs replayed anyway

    def machine_procs(self):
        """MaxProcs (else MaxNodes) from the header, else the widest job, as an int."""
        for key in ("MaxProcs", "MaxNodes"):
            value = self.header.get(key, "").split()
            if value:
                try:
                    number = int(float(value[0]))
                except ValueError:
                    continue
                if number > 0:
                    return number
        return max((j.procs for j in self.jobs), default=1)


def _number(text, lineno, index, name):
    try:
        value = float(text)
    except ValueError:
        raise SwfError("line %d: field %d (%s) is not a number: %r" % (lineno, index + 1, FIELDS[index], text))
    if not math.isfinite(value):
        raise SwfError("line %d: field %d (%s) is not finite: %r" % (lineno, index + 1, FIELDS[index], text))
    return value


def parse(lines, name="<swf>"):
    """Parse SWF text lines (an iterable of str).  Raises :class:`SwfError` on a malformed line."""
    header = {}
    jobs = []
    skipped = collections.Counter()
    notes = collections.Counter()
    count = 0
    last_submit = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            key, sep, value = line[1:].partition(":")
            if sep and key.strip() and " " not in key.strip():
                header.setdefault(key.strip(), value.strip())
            continue
        parts = line.split()
        if len(parts) != len(FIELDS):
            raise SwfError("%s: line %d: %d fields, SWF has %d: %r" % (
                name, lineno, len(parts), len(FIELDS), line[:80]))
        try:
            vals = [_number(p, lineno, i, FIELDS[i]) for i, p in enumerate(parts)]
        except SwfError as err:
            raise SwfError("%s: %s" % (name, err))
        count += 1
        job_id, submit, run, procs, req_procs = vals[0], vals[1], vals[3], vals[4], vals[7]
        if submit < 0:
            raise SwfError("%s: line %d: field 2 (submit) is negative: %r" % (name, lineno, parts[1]))
        if last_submit is not None and submit < last_submit:
            notes["submit time before the previous job's (replayed in submit order)"] += 1
        last_submit = submit if last_submit is None else max(last_submit, submit)
        if procs <= 0:
            procs = req_procs
        if run < 0:
            skipped["run time unknown (-1)"] += 1
            continue
        if procs <= 0:
            skipped["processor count unknown (-1)"] += 1
            continue
        if procs != int(procs):
            raise SwfError("%s: line %d: processor count %r is not a whole number" % (name, lineno, procs))
        jobs.append(Job(int(job_id), submit, run, int(procs), lineno, int(vals[11])))
    if not count:
        raise SwfError("%s: no job lines (is it an SWF file?)" % name)
    jobs.sort(key=lambda j: (j.submit, j.line))
    return Trace(name, jobs, header, dict(skipped), count, dict(notes))


def load(path):
    """Read an SWF file (any, also one never seen before) and parse it."""
    with open(path, "r", encoding="utf-8", errors="replace") as handle:
        return parse(handle, name=str(path))
