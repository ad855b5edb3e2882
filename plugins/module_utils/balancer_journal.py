# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The balancer's journal of node operations in flight, on the qmaster host.

Target side: standard library only, Python 3.8 compatible.

Before a node starts joining or leaving the cluster, the operation is recorded; when it is
done, the record is removed. A controller killed in between leaves the record, and the next
poll finishes (or undoes) what it names. The file is
``{"schema": 1, "operations": [{"node", "operation", "started", "detail"}, ...]}``, in the
order the operations started; a node has at most one operation in flight.

Writes reuse the state file's atomic write (temp file, fsync, rename). Read-modify-write runs
under the guard ``flock`` of :mod:`balancer_lock`, so plays recording many nodes at once (many
forks of node_join) cannot lose each other's records. A missing file is an empty journal.

Anything else that is not a journal of this schema (empty, truncated, not JSON, a wrong shape,
another schema version, unreadable, a directory) is an error naming the path, and the file is
never overwritten, moved or reset. Unlike the balancer's state, which may restart empty, a
journal that cannot be read may hide a node half joined (launched, maybe already billed, not
yet in Grid Engine, so no later snapshot shows it) or half removed: the balancer must not act
until a person has looked. loadbalance.yml reads the journal before anything else, so such a
poll stops there (docs/reliability/state-faults.md).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os
import re
import time

from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_lock import LockError, guard, is_time
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    DEFAULT_ROOT,
    StateFileCorrupt,
    StateFileError,
    check_cluster_name,
    dumps,
    read_state,
    write_atomic,
)

JOURNAL_FILE_NAME = "journal.json"
SCHEMA = 1
OPERATIONS = ("join", "leave")

_NODE_RE = re.compile(r"\A[^\s\x00-\x1f\x7f]{1,255}\Z")

# patched by the unit tests
_now = time.time


REFUSAL = ("the balancer does not act while it cannot tell which node operations a controller "
           "left half done; the file is left as it is: look at it, finish or undo what it names "
           "(playbooks/node_add.yml, node_remove.yml), then fix or remove it")


def refusal(problem):
    """The message of a journal that cannot be used: what is wrong, then what to do."""
    return "%s; %s" % (problem, REFUSAL)


class JournalError(Exception):
    """The journal cannot be read or changed as asked; the message names the file."""

    def __init__(self, msg, record=None):
        super(JournalError, self).__init__(msg)
        self.record = record


class JournalConflict(JournalError):
    """The node already has another operation in flight (``record``)."""


def default_path(cluster):
    """``/var/lib/gridengine-balancer/<cluster>/journal.json``."""
    return os.path.join(DEFAULT_ROOT, check_cluster_name(cluster), JOURNAL_FILE_NAME)


def check_node(node):
    if not isinstance(node, str) or not _NODE_RE.match(node):
        raise ValueError("node: %r is not a node name (1 to 255 characters, no blanks or control "
                         "characters)" % (node,))
    return node


def check_operation(operation):
    if operation not in OPERATIONS:
        raise ValueError("operation: %r is not one of %s" % (operation, ", ".join(OPERATIONS)))
    return operation


def _invalid_entry(entry):
    if not isinstance(entry, dict):
        return "an entry is a JSON %s, not an object" % type(entry).__name__
    if not isinstance(entry.get("node"), str) or not _NODE_RE.match(entry["node"]):
        return "an entry has no valid node"
    if entry.get("operation") not in OPERATIONS:
        return "the entry of %s has operation %r, not one of %s" % (
            entry["node"], entry.get("operation"), ", ".join(OPERATIONS))
    started = entry.get("started")
    if isinstance(started, bool) or not isinstance(started, (int, float)) or not is_time(started):
        return "the entry of %s has no numeric started" % entry["node"]
    if not isinstance(entry.get("detail", {}), dict):
        return "the detail of %s is not an object" % entry["node"]
    attempts = entry.get("attempts", 0)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
        return "the entry of %s has attempts %r, not a whole number >= 0" % (entry["node"], attempts)
    if not isinstance(entry.get("parked", False), bool):
        return "the entry of %s has parked %r, not true or false" % (entry["node"], entry.get("parked"))
    if not isinstance(entry.get("last_error", ""), str):
        return "the entry of %s has a last_error that is not text" % entry["node"]
    parked_at = entry.get("parked_at", 0)
    if isinstance(parked_at, bool) or not isinstance(parked_at, (int, float)):
        return "the entry of %s has no numeric parked_at" % entry["node"]
    return None


def read_journal(path):
    """Return ``(operations, exists)``; ``([], False)`` when the file does not exist.

    Raises JournalError naming the path when the file cannot be read or is not a journal.
    """
    try:
        content, text = read_state(path, what="journal")
    except StateFileCorrupt as exc:
        raise JournalError(refusal(exc.problem))
    except StateFileError as exc:
        raise JournalError("%s; %s" % (exc, REFUSAL))
    if text is None:
        return [], False
    if content == {}:
        return [], True
    operations = content.get("operations")
    why = None
    schema = content.get("schema", SCHEMA)
    if schema != SCHEMA or isinstance(schema, bool):
        why = "has schema %r, not %d (another version of the balancer wrote it)" % (schema, SCHEMA)
    elif not isinstance(operations, list):
        why = "has no list of operations"
    else:
        seen = set()
        for entry in operations:
            why = _invalid_entry(entry)
            if why:
                break
            if entry["node"] in seen:
                why = "names node %s twice" % entry["node"]
                break
            seen.add(entry["node"])
    if why:
        raise JournalError(refusal("journal %s %s" % (path, why)))
    result = []
    for entry in operations:
        entry = dict(entry)
        entry.setdefault("detail", {})
        result.append(entry)
    return result, True


def render(operations):
    """The canonical text of a journal."""
    return dumps({"schema": SCHEMA, "operations": operations})


def find(operations, node):
    for entry in operations:
        if entry["node"] == node:
            return entry
    return None


def describe(entry, path):
    return ("node %s has a %s in flight since %s (recorded in %s)"
            % (entry["node"], entry["operation"],
               time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(entry["started"])), path))


def record(operations, node, operation, detail=None, now=None, path="the journal"):
    """Pure: ``(new_operations, changed, entry)`` with ``node``'s ``operation`` recorded.

    The same node and operation already there: unchanged, except that a given ``detail``
    different from the recorded one replaces it (``started`` is kept). ``detail=None`` keeps
    the recorded detail. Another operation of the node in flight raises JournalConflict.
    """
    check_node(node)
    check_operation(operation)
    current = find(operations, node)
    if current is not None:
        if current["operation"] != operation:
            raise JournalConflict("cannot record %s of node %s: %s; finish it or remove its record "
                                  "first" % (operation, node, describe(current, path)), current)
        if detail is None or detail == current.get("detail", {}):
            return operations, False, current
        entry = dict(current)
        entry["detail"] = copy.deepcopy(detail)
        return [entry if e is current else e for e in operations], True, entry
    entry = {
        "node": node,
        "operation": operation,
        "started": _now() if now is None else now,
        "detail": copy.deepcopy(detail) if detail is not None else {},
    }
    return list(operations) + [entry], True, entry


def attempt(operations, node, max_attempts, error=None, now=None):
    """Pure: ``(new_operations, changed, entry)`` with one more attempt of ``node``'s operation.

    Each poll that replays a record counts an attempt before it starts (so a controller killed in
    the middle counts too). When the record already has ``max_attempts`` attempts, it is parked
    instead (``parked``, ``parked_at``, ``last_error``): kept in the journal, so the node stays out
    of the plan and the next polls say so, but never replayed again (:func:`replayable`) until a
    person finishes or undoes the operation and removes the record (issue 20). A parked record is
    left as it is; no record of ``node``: nothing changes, ``entry`` is None.
    """
    check_node(node)
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 0:
        raise ValueError("max_attempts: %r is not a whole number >= 0" % (max_attempts,))
    current = find(operations, node)
    if current is None or current.get("parked"):
        return operations, False, current
    entry = dict(current)
    if current.get("attempts", 0) >= max_attempts:
        entry["parked"] = True
        entry["parked_at"] = _now() if now is None else now
    else:
        entry["attempts"] = current.get("attempts", 0) + 1
    if error is not None:
        entry["last_error"] = str(error)[:2000]
    return [entry if e is current else e for e in operations], True, entry


def replayable(operations):
    """The records a poll replays: every one that is not parked."""
    return [e for e in operations if not e.get("parked")]


def parked(operations):
    """The parked records (a person must look at them)."""
    return [e for e in operations if e.get("parked")]


def remove(operations, node, operation=None):
    """Pure: ``(new_operations, changed, removed_entry)`` without ``node``'s record.

    With ``operation``, only a record of that operation is removed (another one stays, and
    nothing changes).
    """
    check_node(node)
    if operation is not None:
        check_operation(operation)
    current = find(operations, node)
    if current is None or (operation is not None and current["operation"] != operation):
        return operations, False, None
    return [e for e in operations if e is not current], True, current


def update(path, change, check_mode=False):
    """Apply ``change(operations) -> (new_operations, changed, entry)`` to the journal at
    ``path``, under the guard, and write it atomically when it changed (not in check mode).

    Returns ``(before, after, changed, entry, exists)``. A corrupt journal raises JournalError
    before anything is written.
    """
    if check_mode:
        return _update(path, change, True)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        # no journal yet: create its directory (and guard) only for a change
        probe = _update(path, change, True)
        if not probe[2]:
            return probe
    try:
        with guard(path):
            return _update(path, change, False)
    except LockError as exc:
        raise JournalError("journal: %s" % exc)


def _update(path, change, check_mode):
    before, exists = read_journal(path)
    after, changed, entry = change(before)
    if changed and not check_mode:
        try:
            write_atomic(path, render(after))
        except StateFileError as exc:
            raise JournalError("journal: %s" % exc)
    return before, after, changed, entry, exists
