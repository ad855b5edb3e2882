# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pending Grid Engine work pinned to a task's host, and how to re-point it (stdlib only, pure).

Work on a task is a Grid Engine job named ``<prefix><job>.<task>`` (``task.logs.3``,
plugin_utils/task_snapshot.py). A pending one is *pinned* to a host by a hard queue request
naming the host (``-q all.q@node001``) or a hard resource request of the host name
(``-l hostname=node001``, ``-l h=node001``: qstat prints ``hostname``). When the task's live copy
moves from ``source`` to ``target`` (a move finished, or resumed after a crash), each such job is
re-pointed to ``target`` with ``qalter``:

* ``-q``: the whole hard queue list again, each ``<queue>@<source>`` as ``<queue>@<target>``, the
  other entries unchanged (``qalter -q`` replaces the list);
* ``-l``: the whole hard resource list again, the host name request set to ``target``, every other
  request unchanged (``qalter -l`` replaces the hard list; soft requests are not touched).

Only jobs named for that task, pending, with no task running (an array job with running tasks
is left, and reported), and owned by one of ``owners`` (when given) are re-pointed; jobs of other
tasks are never looked at. The source is compared with the request as a whole (case-insensitive):
an expression (``node00*``, ``node001|node002``) or another spelling of the host (a domain name)
is not a pin to it. The input is ``ansible_facts.sge`` of sge_queue_facts (``pending``,
``running``: module_utils/sge_xml.py ``build_snapshot``); nothing here runs a command.
"""

from __future__ import annotations

DEFAULT_PREFIX = "task."
HOST_REQUESTS = ("hostname", "h")


def _same_host(value, host):
    return isinstance(value, str) and value.strip().lower() == host.lower()


def _queue_host(entry):
    """``node001`` for ``all.q@node001``; None for a queue without host or with a host group."""
    queue, sep, host = (entry or "").partition("@")
    if not sep or not host or host.startswith("@"):
        return None
    return host


def _repoint_queue(entry, source, target):
    queue, _sep, host = entry.partition("@")
    return "%s@%s" % (queue, target) if _queue_host(entry) and _same_host(host, source) else entry


def request_list(requests):
    """``qalter -l`` value: ``name=value,...`` in the order qstat printed them."""
    return ",".join("%s=%s" % (name, value) for name, value in requests.items())


def plan_repoint(sge, job, task, source, target, prefix=DEFAULT_PREFIX, owners=None):
    """``(changes, skipped)`` for the pending jobs of ``job/task`` pinned to ``source``.

    Each change: ``{"id", "name", "owner", "before": {"hard_queues", "hard_requests"},
    "after": {...}, "args": [qalter options]}``; run ``qalter <args> <id>``. Each skipped:
    ``{"id", "name", "owner", "reason"}``. Empty lists when nothing is pinned to ``source``
    (also after the jobs were re-pointed: the plan is idempotent).
    """
    if source == target:
        return [], []
    name = "%s%s.%s" % (prefix, job, task)
    running = set(e.get("id") for e in (sge or {}).get("running", ()) or ())
    changes, skipped, seen = [], [], set()
    for entry in (sge or {}).get("pending", ()) or ():
        jid = entry.get("id")
        if entry.get("name") != name or jid in seen:
            continue
        seen.add(jid)
        queues = list(entry.get("hard_queues") or [])
        requests = dict(entry.get("hard_requests") or {})
        pinned_q = [q for q in queues if _same_host(_queue_host(q), source)]
        pinned_l = [k for k, v in requests.items() if k in HOST_REQUESTS and _same_host(v, source)]
        if not pinned_q and not pinned_l:
            continue
        who = {"id": jid, "name": name, "owner": entry.get("owner")}
        if owners and entry.get("owner") not in owners:
            skipped.append(dict(who, reason="job %s belongs to %s, not to %s: not re-pointed" % (
                jid, entry.get("owner"), ", ".join(owners))))
            continue
        if jid in running:
            skipped.append(dict(who, reason="job %s has running tasks: qalter would change the whole job; "
                                            "its pending tasks stay pinned to %s" % (jid, source)))
            continue
        new_q = [_repoint_queue(q, source, target) for q in queues]
        new_r = dict((k, target if k in pinned_l else v) for k, v in requests.items())
        args = []
        if pinned_q:
            args += ["-q", ",".join(new_q)]
        if pinned_l:
            args += ["-l", request_list(new_r)]
        changes.append(dict(who, before={"hard_queues": queues, "hard_requests": requests},
                            after={"hard_queues": new_q, "hard_requests": new_r}, args=args))
    return changes, skipped


def describe(change):
    """One line: ``304 (task.logs.3): -q all.q@node001 -> all.q@node002``."""
    parts = []
    before, after = change["before"], change["after"]
    if before["hard_queues"] != after["hard_queues"]:
        parts.append("-q %s -> %s" % (",".join(before["hard_queues"]), ",".join(after["hard_queues"])))
    if before["hard_requests"] != after["hard_requests"]:
        parts.append("-l %s -> %s" % (request_list(before["hard_requests"]), request_list(after["hard_requests"])))
    return "%s (%s): %s" % (change["id"], change["name"], "; ".join(parts))
