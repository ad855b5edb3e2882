# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine accounting to Standard Workload Format (SWF), for replaying a site's own history.

Two inputs, told apart by their first record:

* the **raw accounting file** ``$SGE_ROOT/<cell>/common/accounting`` (``man 5 accounting`` /
  ``sge_accounting``): one finished job (or array task, or parallel sub-task) per line, fields
  separated by ``:``, ``#`` lines are comments.  Fields used (1-based): 1 qname, 2 hostname,
  3 group, 4 owner, 5 job_name, 6 job_number, 9 submission_time, 10 start_time, 11 end_time,
  12 failed, 13 exit_status, 32 project, 33 department, 34 granted_pe, 35 slots, 36 task_number,
  42 pe_taskid (when the line has it).  Times are seconds since the epoch (Univa Grid Engine 8.2 and
  later write milliseconds: a time above 10^11 is read as milliseconds);
* the output of **qacct -j** (``key value`` lines, records separated by a line of ``=``).  Its
  dates (``Fri Nov 27 11:18:13 2026``, or ``06/11/2020 13:22:28.652`` from Univa) are local time
  without a zone and are read as given: a job running across a daylight-saving change is off by
  an hour.  The raw file has no such problem.

What becomes of each record (:func:`to_swf`):

* one SWF job per (job number, array task): array tasks are one job each;
* the records of a parallel job (a ``pe_taskid`` other than ``NONE``, or, in ``qacct -j`` output
  that does not print it, records of the same job and task whose run times overlap) are one job:
  the master's record (the earliest submit time) with the latest end time;
* records of the same job and task whose run times do not overlap are separate attempts (a job
  rescheduled after a failure): one SWF job each, all with the original submit time;
* a job that never started (start time 0, or ``-/-`` in qacct) used no slot: it is left out and
  counted by its ``failed`` code (a job deleted while it waited writes no record at all);
* SWF fields: 1 a counter from 1 in submit order, 2 submit (s since the first submit; the header's
  ``UnixStartTime`` is that submit), 3 wait = start - submit, 4 run = end - start, 5 allocated
  processors = slots, 8 requested processors = slots (the record keeps only the granted number),
  11 status: 1 done (failed 0, exit 0), 5 cancelled (``deleted_by`` other than NONE, Univa only),
  0 otherwise; 12 user, 13 group, 14 job name, 15 queue, 16 partition = project: numbers from 1 in
  order of first appearance (the ``;`` header lists which queue and project each number is;
  user, group and job names are not written).  Fields 6, 7, 9, 10, 17, 18 are -1.

A malformed record is an error naming the input and its line number; with ``skip_bad=True`` it is
skipped and counted instead.  Pure: the parsers take lines; :func:`load` reads a file.
"""

from __future__ import annotations

import calendar
import collections
import math
import time

#: One accounting record (times in seconds since the epoch, ``start`` None when it never started).
Record = collections.namedtuple(
    "Record", "job task queue host group owner name project submit start end failed exit_status slots "
              "pe_taskid deleted_by line")

#: ``(reason, count)`` pairs are kept in :class:`Conversion`; these are the raw file's field indexes.
_RAW = {"qname": 0, "hostname": 1, "group": 2, "owner": 3, "job_name": 4, "job_number": 5,
        "submission_time": 8, "start_time": 9, "end_time": 10, "failed": 11, "exit_status": 12,
        "project": 31, "department": 32, "granted_pe": 33, "slots": 34, "task_number": 35, "pe_taskid": 41}
_RAW_MIN_FIELDS = 36
_MS_THRESHOLD = 1e11


class AccountingError(ValueError):
    """Malformed accounting input; the message names the input and the line."""


class Conversion(object):
    """The result of :func:`to_swf`: SWF lines and what was merged, split or left out."""

    def __init__(self):
        self.lines = []                          # SWF text lines, header first
        self.jobs = 0                            # SWF job lines written
        self.left_out = collections.Counter()    # {reason: records}
        self.merged = 0                          # parallel sub-task records merged into their job
        self.attempts = 0                        # extra attempts written as their own job
        self.bad = collections.Counter()         # {problem: records skipped} (skip_bad)
        self.bad_lines = []                      # their line numbers (the first 20)
        self.hosts = set()
        self.start = None                        # epoch of the first submit


def _ctime(text, lineno, name):
    text = " ".join(text.split())
    if text in ("-/-", "undefined", "NONE", ""):
        return None
    for fmt in ("%a %b %d %H:%M:%S %Y", "%m/%d/%Y %H:%M:%S"):
        try:
            frac = 0.0
            base = text
            if fmt.startswith("%m") and "." in text.rsplit(" ", 1)[-1]:
                base, dot, rest = text.rpartition(".")
                frac = float("0." + rest) if dot and rest.isdigit() else 0.0
            return calendar.timegm(time.strptime(base, fmt)) + frac
        except ValueError:
            continue
    raise AccountingError("%s: line %d: not a date qacct prints: %r" % (name, lineno, text))


def _int_head(text, lineno, field, name):
    """The integer at the start of ``text`` (``100 : assumedly after job``, ``137 (Killed)``)."""
    head = text.split(":", 1)[0].split()
    try:
        return int(head[0])
    except (IndexError, ValueError):
        raise AccountingError("%s: line %d: %s is not a whole number: %r" % (name, lineno, field, text))


def _epoch(text, lineno, field, name):
    try:
        value = float(text)
    except ValueError:
        raise AccountingError("%s: line %d: %s is not a number: %r" % (name, lineno, field, text))
    if not math.isfinite(value) or value < 0:
        raise AccountingError("%s: line %d: %s is not a time: %r" % (name, lineno, field, text))
    return value


def _task(text):
    text = text.strip()
    if text in ("", "undefined", "NONE"):
        return 0
    return int(text)


def parse_raw(lines, name="<accounting>", skip_bad=False, problems=None):
    """Records of a raw accounting file (an iterable of lines).

    ``skip_bad``: a malformed line is counted in ``problems`` (a :class:`Conversion`) and skipped
    instead of raising :class:`AccountingError`.
    """
    records = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if len(line.strip()) <= 1 or line.lstrip().startswith("#"):
            continue                          # as qacct does: empty and one-character lines
        parts = line.split(":")
        try:
            if len(parts) < _RAW_MIN_FIELDS:
                raise AccountingError("%s: line %d: %d fields separated by ':', an accounting record has at "
                                      "least %d (is it the accounting file?)" % (name, lineno, len(parts),
                                                                                 _RAW_MIN_FIELDS))
            times = [_epoch(parts[_RAW[k]], lineno, k, name) for k in ("submission_time", "start_time", "end_time")]
            if times[0] > _MS_THRESHOLD:      # Univa Grid Engine >= 8.2 writes milliseconds
                times = [t / 1000.0 for t in times]
            try:
                job = int(parts[_RAW["job_number"]])
                slots = int(parts[_RAW["slots"]])
                task = _task(parts[_RAW["task_number"]])
            except ValueError as err:
                raise AccountingError("%s: line %d: job_number, slots or task_number is not a whole number (%s)"
                                      % (name, lineno, err))
            failed = _int_head(parts[_RAW["failed"]], lineno, "failed", name)
            exit_status = _int_head(parts[_RAW["exit_status"]], lineno, "exit_status", name)
            if len(parts) > 45:               # a category holding ':': count pe_taskid from the end
                pe_taskid = parts[-4]
            else:
                pe_taskid = parts[_RAW["pe_taskid"]] if len(parts) > _RAW["pe_taskid"] else "NONE"
        except AccountingError as err:
            if not skip_bad:
                raise
            if problems is not None:
                problems.bad[str(err).split(": ", 2)[-1].split(" (")[0].split(": '")[0]] += 1
                if len(problems.bad_lines) < 20:
                    problems.bad_lines.append(lineno)
            continue
        start = times[1] if times[1] > 0 else None
        records.append(Record(job, task, parts[0], parts[1], parts[2], parts[3], parts[4], parts[31],
                              times[0], start, times[2] if start is not None else None, failed, exit_status,
                              slots, pe_taskid.strip() or "NONE", "NONE", lineno))
    return records


def _qacct_record(fields, lines_of, first, name):
    """One record of qacct -j output: ``fields`` {key: value}, ``lines_of`` {key: line number}."""
    def need(key):
        if key not in fields:
            raise AccountingError("%s: line %d: the qacct record starting here has no %r line" % (name, first, key))
        return fields[key]

    def whole(key, default=None):
        text = fields.get(key, default) if default is not None else need(key)
        head = text.split()
        try:
            return _task(head[0] if head else "") if key == "taskid" else int(head[0])
        except (ValueError, IndexError):
            raise AccountingError("%s: line %d: %s is not a whole number: %r" % (
                name, lines_of.get(key, first), key, text))

    def date(key):
        return _ctime(need(key), lines_of.get(key, first), name)

    def word(key):
        value = fields.get(key, "").split()
        return value[0] if value else ""

    job, slots, task = whole("jobnumber"), whole("slots"), whole("taskid", "undefined")
    submit = date("qsub_time")
    if submit is None:
        raise AccountingError("%s: line %d: qsub_time is not a date" % (name, lines_of["qsub_time"]))
    start = date("start_time")
    end = date("end_time") if start is not None else None
    if start is not None and end is None:
        raise AccountingError("%s: line %d: started but no end_time" % (name, lines_of["end_time"]))
    return Record(job, task, word("qname"), word("hostname"), word("group"), word("owner"), word("jobname"),
                  word("project") or "NONE", submit, start, end,
                  _int_head(need("failed"), lines_of.get("failed", first), "failed", name),
                  _int_head(need("exit_status"), lines_of.get("exit_status", first), "exit_status", name),
                  slots, word("pe_taskid") or "NONE", word("deleted_by") or "NONE", first)


def parse_qacct(lines, name="<qacct>", skip_bad=False, problems=None):
    """Records of ``qacct -j`` output (an iterable of lines); ``skip_bad`` as in :func:`parse_raw`."""
    records = []
    fields = {}
    lines_of = {}
    first = [None]

    def flush():
        if not fields:
            return
        try:
            records.append(_qacct_record(fields, lines_of, first[0], name))
        except AccountingError as err:
            if not skip_bad:
                raise
            if problems is not None:
                problems.bad[str(err).split(": ", 2)[-1].split(": '")[0]] += 1
                if len(problems.bad_lines) < 20:
                    problems.bad_lines.append(int(str(err).split("line ", 1)[1].split(":")[0]))

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        if set(line.strip()) == {"="}:
            flush()
            fields.clear()
            lines_of.clear()
            first[0] = None
            continue
        key, _sep, value = line.strip().partition(" ")
        if first[0] is None:
            first[0] = lineno
        if key not in fields:
            fields[key] = value.strip()
            lines_of[key] = lineno
    flush()
    return records


def detect(lines):
    """``"qacct"`` or ``"raw"`` from the first line that is not empty or a comment; ``None`` if none."""
    for raw in lines:
        line = raw.strip()
        if len(line) <= 1 or line.startswith("#"):
            continue
        if set(line) == {"="} or line.split(None, 1)[0] in ("qname", "hostname", "jobnumber"):
            return "qacct"
        return "raw" if line.count(":") >= _RAW_MIN_FIELDS - 1 else None
    return None


def _runs(records):
    """Group one job's (or array task's) records into runs (attempts).

    A record joins the run before it when it is a parallel sub-task (``pe_taskid`` not ``NONE``)
    or when its run time overlaps that run's (qacct -j does not print ``pe_taskid``); else it
    starts a new run: a later attempt of a rescheduled job.
    """
    runs = []
    run_end = None
    for rec in sorted(records, key=lambda r: (r.start, r.pe_taskid != "NONE", r.submit, r.line)):
        if runs and (rec.pe_taskid != "NONE" or rec.start < run_end):
            runs[-1].append(rec)
            run_end = max(run_end, rec.end)
        else:
            runs.append([rec])
            run_end = rec.end
    return runs


def _status(rec):
    if rec.deleted_by not in ("", "NONE"):
        return 5
    return 1 if rec.failed == 0 and rec.exit_status == 0 else 0


def to_swf(records, name="<accounting>", conversion=None, nodes=None, slots_per_node=None):
    """Turn records into SWF lines (see the module text); returns a :class:`Conversion`.

    ``nodes``/``slots_per_node``: the cluster's size, written as ``MaxNodes``/``MaxProcs`` header
    lines when given (the accounting does not record it; the simulator needs it).
    """
    conv = conversion or Conversion()
    groups = collections.OrderedDict()
    for rec in records:
        if rec.start is None:
            conv.left_out["never started (failed %d)" % rec.failed] += 1
            continue
        if rec.end < rec.start:
            conv.left_out["end_time before start_time"] += 1
            continue
        conv.hosts.add(rec.host)
        groups.setdefault((rec.job, rec.task), []).append(rec)
    jobs = []
    for recs in groups.values():
        runs = _runs(recs)
        conv.attempts += len(runs) - 1
        for run in runs:
            master = min(run, key=lambda r: (r.pe_taskid != "NONE", r.submit, -r.end, r.line))
            conv.merged += len(run) - 1
            jobs.append((master, master.submit, min(r.start for r in run), max(r.end for r in run),
                         max(r.slots for r in run)))
    jobs.sort(key=lambda j: (j[1], j[0].job, j[0].task, j[2]))
    numbers = {k: collections.OrderedDict() for k in ("owner", "group", "name", "queue", "project")}

    def number(kind, value):
        table = numbers[kind]
        if value not in table:
            table[value] = len(table) + 1
        return table[value]

    body = []
    t0 = jobs[0][1] if jobs else 0.0
    conv.start = t0 if jobs else None
    for counter, (rec, submit, start, end, slots) in enumerate(jobs, 1):
        body.append("%d %d %d %d %d -1 -1 %d -1 -1 %d %d %d %d %d %d -1 -1" % (
            counter, int(round(submit - t0)), int(round(start - submit)), int(round(end - start)), slots, slots,
            _status(rec), number("owner", rec.owner), number("group", rec.group), number("name", rec.name),
            number("queue", rec.queue), number("project", rec.project)))
    conv.jobs = len(body)
    head = ["; Version: 2.2",
            "; Computer: Grid Engine cluster",
            "; Conversion: gridengine.balancer sim/accounting.py from %s" % name,
            ("; UnixStartTime: %d" % int(t0)) if jobs else "; Note: no job in this history ran"]
    if nodes:
        head.append("; MaxNodes: %d" % nodes)
        head.append("; MaxProcs: %d" % (nodes * (slots_per_node or 1)))
    head.append("; Note: hosts that ran a job in this history: %d" % len(conv.hosts))
    for kind, label in (("queue", "Queue"), ("project", "Partition")):
        for value, num in numbers[kind].items():
            head.append("; %s: %d %s%s" % (label, num, value, " (project)" if kind == "project" else ""))
    for reason, count in sorted(conv.left_out.items()):
        head.append("; Note: left out: %d records: %s" % (count, reason))
    if conv.merged:
        head.append("; Note: %d parallel sub-task records merged into their job" % conv.merged)
    if conv.attempts:
        head.append("; Note: %d extra attempts of rescheduled jobs written as jobs of their own" % conv.attempts)
    for problem, count in sorted(conv.bad.items()):
        head.append("; Note: skipped %d malformed records: %s" % (count, problem))
    conv.lines = head + body
    return conv


def convert(lines, name="<accounting>", fmt="auto", skip_bad=False, nodes=None, slots_per_node=None):
    """Parse accounting lines (a list) of format ``raw``, ``qacct`` or ``auto``; return a :class:`Conversion`."""
    lines = list(lines)
    if fmt == "auto":
        fmt = detect(lines)
        if fmt is None:
            raise AccountingError("%s: neither a raw accounting file nor qacct -j output "
                                  "(no record found)" % name)
    if fmt not in ("raw", "qacct"):
        raise AccountingError("format: must be raw, qacct or auto, got %r" % (fmt,))
    conv = Conversion()
    parser = parse_raw if fmt == "raw" else parse_qacct
    records = parser(lines, name=name, skip_bad=skip_bad, problems=conv)
    if not records:
        raise AccountingError("%s: no accounting record%s" % (
            name, " left after skipping %d malformed ones" % sum(conv.bad.values()) if conv.bad else ""))
    return to_swf(records, name=name, conversion=conv, nodes=nodes, slots_per_node=slots_per_node)


def load(path, fmt="auto", skip_bad=False, nodes=None, slots_per_node=None):
    """Read an accounting file or saved ``qacct -j`` output and convert it (see :func:`convert`)."""
    with open(path, "r", encoding="utf-8", errors="replace") as handle:
        return convert(handle, name=str(path), fmt=fmt, skip_bad=skip_bad, nodes=nodes,
                       slots_per_node=slots_per_node)
