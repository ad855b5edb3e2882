# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Standard Workload Format (Parallel Workloads Archive) reader.

One job per line, 18 whitespace-separated numeric fields, ``;`` starts a header comment::

    1 job id  2 submit (s)  3 wait (s)  4 run time (s)  5 allocated processors  6 avg cpu
    7 used memory  8 requested processors  9 requested time  10 requested memory  11 status
    12 user  13 group  14 application  15 queue  16 partition  17 preceding job  18 think time

``-1`` means unknown.  A line with fewer than 18 fields, or whose first 18 are not numbers, is an
error naming its line number; a well-formed job the simulator cannot replay (unknown run time or
processor count) is *skipped* and counted, never guessed.

**Extended SWF** (the MetaCentrum traces and the workloads of the Alea simulator): lines with more
than 18 fields are read too; the first 18 keep their SWF meaning, the rest (GPUs, a soft walltime,
a cluster property such as ``all`` or ``normal``...) may be any text and are counted, not used.
Such a trace names its machine in a separate ``.machines`` file (``<trace>.machines``, e.g.
``metacentrum.mwf.machines``), one cluster per line, ``;`` comments::

    cluster-id  name  nodes  CPUs-per-node  [speed  RAM  properties  GPUs ...]

**Machine size.**  :meth:`Trace.machine_size` takes the header's ``MaxProcs`` (else
``MaxNodes``), else the ``.machines`` file (the sum of nodes x CPUs).  When none is there the size
is *unknown* and :class:`MachineSizeUnknown` says so: the caller must be told the machine's size
(nodes and slots per node); the widest job is not a machine size.

Pure: :func:`parse` and :func:`parse_machines` take lines, :func:`load` reads files.
"""

from __future__ import annotations

import collections
import math
import os

FIELDS = ("job", "submit", "wait", "run", "procs", "cpu", "mem", "req_procs", "req_time", "req_mem",
          "status", "user", "group", "app", "queue", "partition", "prev_job", "think")

#: A job as the simulator replays it.  ``procs``: allocated processors, else requested ones.
Job = collections.namedtuple("Job", "id submit run procs line user")
#: One cluster of a ``.machines`` file.
Cluster = collections.namedtuple("Cluster", "id name nodes cpus line")


class SwfError(ValueError):
    """A malformed SWF file; the message names the file and the line."""


class MachineSizeUnknown(SwfError):
    """The trace does not say how big its machine was (no header, no ``.machines`` file)."""


class Trace(object):
    """Jobs in submit order (ties: file order), the header's ``key: value`` pairs and skip counts."""

    def __init__(self, name, jobs, header, skipped, lines, notes=None, machines=None, machines_name=None):
        self.name = name
        self.jobs = jobs
        self.header = header
        self.skipped = skipped      # {reason: count} of jobs not replayed
        self.lines = lines          # job lines read
        self.notes = notes or {}    # {remark: count}, jobs replayed anyway
        self.machines = machines or []      # [Cluster] of the .machines file, if one was read
        self.machines_name = machines_name  # where they came from

    def machine_size(self):
        """``(processors, where from)``; raises :class:`MachineSizeUnknown` when nothing says.

        Header ``MaxProcs``, else ``MaxNodes`` (the Parallel Workloads Archive's traces with one
        processor per node give both), else the ``.machines`` file's sum of nodes x CPUs.
        """
        for key in ("MaxProcs", "MaxNodes"):
            value = self.header.get(key, "").split()
            if value:
                try:
                    number = int(float(value[0]))
                except ValueError:
                    continue
                if number > 0:
                    return number, "header %s" % key
        if self.machines:
            return sum(c.nodes * c.cpus for c in self.machines), "%s (%d clusters)" % (
                self.machines_name or ".machines", len(self.machines))
        widest = max((j.procs for j in self.jobs), default=0)
        raise MachineSizeUnknown(
            "%s: machine size unknown: no MaxProcs or MaxNodes header line and no .machines file "
            "(the widest job asks for %d processors, which is not the machine's size); "
            "give the machine's size (benchmarks.tune: --nodes N --slots-per-node S) or a .machines file"
            % (self.name, widest))

    def machine_procs(self):
        """The machine's processors (see :meth:`machine_size`); raises :class:`MachineSizeUnknown`."""
        return self.machine_size()[0]

    def cpus_per_node(self):
        """CPUs per node when every cluster of the ``.machines`` file has the same, else ``None``."""
        sizes = set(c.cpus for c in self.machines)
        return sizes.pop() if len(sizes) == 1 else None


def _number(text, lineno, index, name):
    try:
        value = float(text)
    except ValueError:
        raise SwfError("line %d: field %d (%s) is not a number: %r" % (lineno, index + 1, FIELDS[index], text))
    if not math.isfinite(value):
        raise SwfError("line %d: field %d (%s) is not finite: %r" % (lineno, index + 1, FIELDS[index], text))
    return value


def parse(lines, name="<swf>", machines=None, machines_name=None):
    """Parse SWF text lines (an iterable of str).  Raises :class:`SwfError` on a malformed line.

    ``machines``: the clusters of the trace's ``.machines`` file (:func:`parse_machines`), if any.
    """
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
        if len(parts) < len(FIELDS):
            raise SwfError("%s: line %d: %d fields, SWF has %d: %r" % (
                name, lineno, len(parts), len(FIELDS), line[:80]))
        if len(parts) > len(FIELDS):
            notes["extended SWF: fields after the 18th not used"] += 1
        try:
            vals = [_number(p, lineno, i, FIELDS[i]) for i, p in enumerate(parts[:len(FIELDS)])]
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
    return Trace(name, jobs, header, dict(skipped), count, dict(notes), machines, machines_name)


def _whole(text, lineno, what, name):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value != int(value) or value < 1:
        raise SwfError("%s: line %d: %s must be a whole number >= 1, got %r" % (name, lineno, what, text))
    return int(value)


def parse_machines(lines, name="<machines>"):
    """Parse a ``.machines`` file (Alea/MetaCentrum): ``id name nodes CPUs [...]`` per cluster.

    Raises :class:`SwfError` naming the line when a cluster line has fewer than four fields or
    its nodes or CPUs are not whole numbers >= 1, and when there is no cluster line at all.
    """
    clusters = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith(";") or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) < 4:
            raise SwfError("%s: line %d: %d fields, a cluster line has at least 4 "
                           "(id name nodes CPUs-per-node): %r" % (name, lineno, len(parts), line[:80]))
        clusters.append(Cluster(parts[0], parts[1], _whole(parts[2], lineno, "nodes (field 3)", name),
                                _whole(parts[3], lineno, "CPUs per node (field 4)", name), lineno))
    if not clusters:
        raise SwfError("%s: no cluster lines (is it a .machines file?)" % name)
    return clusters


def machines_path(path):
    """The ``.machines`` file next to an SWF file, or ``None``: ``<path>.machines``, else ``<stem>.machines``."""
    path = str(path)
    stem = os.path.splitext(path)[0]
    for candidate in (path + ".machines", stem + ".machines"):
        if os.path.isfile(candidate):
            return candidate
    return None


def load(path, machines=None):
    """Read an SWF file (any, also one never seen before) and parse it.

    ``machines``: a ``.machines`` file to read with it; ``None`` looks for one next to the trace
    (:func:`machines_path`); ``False`` reads none.
    """
    if machines is None:
        machines = machines_path(path)
    clusters = None
    if machines:
        with open(machines, "r", encoding="utf-8", errors="replace") as handle:
            clusters = parse_machines(handle, name=str(machines))
    with open(path, "r", encoding="utf-8", errors="replace") as handle:
        return parse(handle, name=str(path), machines=clusters, machines_name=str(machines) if machines else None)
