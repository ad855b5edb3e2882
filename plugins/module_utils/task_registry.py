# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The task registry on the qmaster host: which jobs exist, where each task's live copy is, and
which task moves are in flight (stdlib only).

``/var/lib/gridengine-balancer/<cluster>/tasks.json``::

    {"version": 1,
     "jobs": {"logs": {"replicas": 1, "max_per_host": null, "no_autobalance": false,
                       "tasks": {"0": {"live": "node001"}, "1": {"live": "node002"}}}},
     "moves": {"logs/0": {"job": "logs", "task": "0", "source": "node001", "target": "node003",
                          "role": "live", "started": 1700000000.0}}}

The live pointer is the one place that says which copy is live: switching it is one atomic write
(temporary file, fsync, rename) under the guard ``flock`` of :mod:`balancer_lock`.  A move is
recorded before its first step and dropped after its last one, so the next run finishes or undoes
what a dead controller left.
"""

from __future__ import annotations

import copy
import os
import re
import time

from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_lock import LockError, guard
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    DEFAULT_ROOT, StateFileError, check_cluster_name, dumps, read_state, write_atomic)
from ansible_collections.gridengine.balancer.plugins.module_utils.task_data import NAME_RE

FILE_NAME = "tasks.json"
VERSION = 1

# Live copies, sources and targets are hosts the playbooks delegate to: RFC 1123 host names, as
# sge_admin.HOSTNAME_RE (not imported: it would bring the XML parsers into this module).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_RE = re.compile(r"\A%s(?:\.%s)*\Z" % (_LABEL, _LABEL))
# balancer_state's own check, with \Z ("$" also matches before a trailing newline)
_CLUSTER_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z")


class RegistryError(Exception):
    pass


def default_path(cluster):
    if not isinstance(cluster, str) or not _CLUSTER_RE.match(cluster):
        raise ValueError("cluster: %r is not a valid cluster name (letters, digits, '_', '.', '-'; "
                         "starting with a letter or digit)" % (cluster,))
    return os.path.join(DEFAULT_ROOT, check_cluster_name(cluster), FILE_NAME)


def _name(kind, value):
    value = str(value)
    if not NAME_RE.match(value):
        raise RegistryError("%s name %r is not allowed: 1-64 letters, digits, '_' or '-'" % (kind, value))
    return value


def _host(value, what):
    value = str(value or "")
    if len(value) > 253 or not HOST_RE.match(value):
        raise RegistryError("%s %r is not a host name (RFC 1123: letters, digits and inner hyphens, "
                            "dot-separated)" % (what, value))
    return value


def empty():
    return {"version": VERSION, "jobs": {}, "moves": {}}


def check(content, path="registry"):
    """The registry, completed with empty parts; RegistryError naming what is wrong."""
    if not content:
        return empty()
    if content.get("version") != VERSION:
        raise RegistryError("%s: version %r is not %d; fix or remove it" % (path, content.get("version"), VERSION))
    jobs, moves = content.get("jobs", {}), content.get("moves", {})
    if not isinstance(jobs, dict) or not isinstance(moves, dict):
        raise RegistryError("%s: 'jobs' and 'moves' must be objects" % path)
    for job, spec in jobs.items():
        _name("job", job)
        if not isinstance(spec, dict) or not isinstance(spec.get("tasks", {}), dict):
            raise RegistryError("%s: job %s must be an object with an object 'tasks'" % (path, job))
        for task, tspec in spec.get("tasks", {}).items():
            _name("task", task)
            if not isinstance(tspec, dict):
                raise RegistryError("%s: task %s/%s must be an object" % (path, job, task))
            if tspec.get("live") is not None:
                _host(tspec["live"], "%s: live host of task %s/%s" % (path, job, task))
    for key, move in moves.items():
        if not isinstance(move, dict) or "%s/%s" % (move.get("job"), move.get("task")) != key:
            raise RegistryError("%s: move %s is not a move of that task" % (path, key))
        for end in ("source", "target"):
            if move.get(end) is not None:
                _host(move[end], "%s: %s of move %s" % (path, end, key))
    return {"version": VERSION, "jobs": jobs, "moves": moves}


def read(path):
    """The registry at ``path`` (empty when there is none); RegistryError when it cannot be read."""
    try:
        content, dummy_text = read_state(path)
    except StateFileError as exc:
        raise RegistryError(str(exc))
    except RecursionError:
        # JSON nested too deeply, should read_state let json's RecursionError through (it did when
        # the parser fuzzing found it; docs/reliability/fuzzing.md)
        raise RegistryError("state file %s is not valid JSON (nested too deeply); fix or remove it" % path)
    return check(content, path)


def define_job(reg, job, replicas=None, max_per_host=None, no_autobalance=None, tasks=None):
    """Create or update a job; ``tasks`` maps task -> live host (added or re-pointed)."""
    job = _name("job", job)
    spec = reg["jobs"].setdefault(job, {"replicas": 0, "max_per_host": None, "no_autobalance": False, "tasks": {}})
    spec.setdefault("tasks", {})
    if replicas is not None:
        if int(replicas) < 0:
            raise RegistryError("job %s: replicas must be >= 0" % job)
        spec["replicas"] = int(replicas)
    if max_per_host is not None:
        if int(max_per_host) < 1:
            raise RegistryError("job %s: max_per_host must be >= 1" % job)
        spec["max_per_host"] = int(max_per_host)
    if no_autobalance is not None:
        spec["no_autobalance"] = bool(no_autobalance)
    for task, host in (tasks or {}).items():
        spec["tasks"][_name("task", task)] = {"live": _host(host, "tasks.%s (live host of %s/%s)" % (task, job, task))}
    return reg


def remove_job(reg, job):
    reg["jobs"].pop(_name("job", job), None)
    for key in [k for k, m in reg["moves"].items() if m.get("job") == job]:
        del reg["moves"][key]
    return reg


def switch(reg, job, task, host, expect=None):
    """Point the live copy of job/task at ``host`` (only if it is at ``expect``, when given)."""
    job, task = _name("job", job), _name("task", task)
    host = _host(host, "switch.host (live host)")
    spec = reg["jobs"].get(job)
    if spec is None or task not in spec.get("tasks", {}):
        raise RegistryError("no task %s/%s in the registry" % (job, task))
    current = spec["tasks"][task].get("live")
    if expect is not None and current not in (expect, host):
        raise RegistryError("live copy of %s/%s is on %s, not on %s: the task moved since the plan" % (
            job, task, current, expect))
    spec["tasks"][task]["live"] = host
    return reg


def begin_move(reg, job, task, source, target, role, now=None):
    job, task = _name("job", job), _name("task", task)
    key = "%s/%s" % (job, task)
    move = {"job": job, "task": task, "source": _host(source, "move.source"), "target": _host(target, "move.target"),
            "role": role if role in ("live", "replica", "copy") else "copy"}
    held = reg["moves"].get(key)
    if held and (held.get("source"), held.get("target")) != (move["source"], move["target"]):
        raise RegistryError("a move of %s from %s to %s is already in flight" % (key, held.get("source"), held.get("target")))
    if not held:
        move["started"] = time.time() if now is None else now
        reg["moves"][key] = move
    return reg


def end_move(reg, job, task):
    reg["moves"].pop("%s/%s" % (job, task), None)
    return reg


def update(path, change, check_mode=False):
    """Apply ``change(registry_copy)`` under the guard; write atomically when it changed.

    Returns ``(before, after, changed)``.
    """
    def _apply():
        before = read(path)
        after = change(copy.deepcopy(before))
        changed = dumps(after) != dumps(before)
        if changed and not check_mode:
            try:
                write_atomic(path, dumps(after))
            except StateFileError as exc:
                raise RegistryError(str(exc))
        return before, after, changed

    if check_mode or not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        before, after, changed = _apply_check(path, change)
        if check_mode or not changed:
            return before, after, changed
    try:
        with guard(path):
            return _apply()
    except LockError as exc:
        raise RegistryError("task registry: %s" % exc)


def _apply_check(path, change):
    before = read(path) if os.path.exists(path) else empty()
    after = change(copy.deepcopy(before))
    return before, after, dumps(after) != dumps(before)
