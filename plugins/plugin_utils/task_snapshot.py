# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From what the nodes and the master report to the snapshot ``policy/spawn.py`` plans from.

Pure: no I/O, no clock, no Ansible import.  Inputs:

* ``registry``: the task registry (module_utils/task_registry.py): jobs, live pointers, moves;
* ``scans``: ``{host: task_data_info result}`` (disk use and copies of each node);
* ``sge``: ``ansible_facts.sge`` from sge_queue_facts (running and pending jobs), optional.

Grid Engine work on a task is a job named ``<prefix><job>.<task>`` (prefix ``task.`` by default):
a running one makes the task *running* (it is never moved), a pending one whose hard queue request
names the host of the live copy (``-q all.q@node001``) is *pinned* there and must follow the live
copy when it moves (``qalter -q``).
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_PREFIX = "task."


def work_key(name, prefix=DEFAULT_PREFIX):
    """``("logs", "3")`` for a Grid Engine job named ``task.logs.3``; None for other names."""
    if not isinstance(name, str) or not name.startswith(prefix):
        return None
    job, sep, task = name[len(prefix):].rpartition(".")
    if not sep or not job or not task:
        return None
    return job, task


def build(registry, scans, sge=None, now=None, prefix=DEFAULT_PREFIX, down=()):
    """``(snapshot, extra)``: the spawn snapshot, and ``extra`` with ``pinned``
    ({"job/task": [{"id", "queues"}]}), ``live`` ({"job/task": host}) and ``warnings``."""
    if not isinstance(registry, Mapping) or not isinstance(scans, Mapping):
        raise ValueError("registry and scans must be mappings")
    jobs_reg = registry.get("jobs") or {}
    warnings = []
    running, pinned = set(), {}
    for entry in (sge or {}).get("running", ()) or ():
        key = work_key(entry.get("name"), prefix)
        if key:
            running.add(key)
    for entry in (sge or {}).get("pending", ()) or ():
        key = work_key(entry.get("name"), prefix)
        if key:
            pinned.setdefault("%s/%s" % key, []).append(
                {"id": entry.get("id"), "queues": list(entry.get("hard_queues") or [])})
    hosts, tasks, held, sums = {}, [], {}, {}
    for host, scan in sorted(scans.items()):
        if not isinstance(scan, Mapping) or "disk_used" not in scan:
            raise ValueError("scans[%r] is not a task_data_info result" % (host,))
        hosts[host] = {"disk_used": scan["disk_used"], "disk_free": scan["disk_free"],
                       "up": host not in down, "readonly": False}
        for c in scan.get("copies", ()):
            job, task = str(c["job"]), str(c["task"])
            live = ((jobs_reg.get(job) or {}).get("tasks") or {}).get(task, {}).get("live")
            tasks.append({"job": job, "task": task, "host": host, "bytes": c["bytes"],
                          "role": "live" if live == host else "replica",
                          "last_active": c.get("last_active"), "complete": True,
                          "running": (job, task) in running})
            held.setdefault((job, task), []).append(host)
            if c.get("checksum"):
                sums[(job, task, host)] = c["checksum"]
        if scan.get("leftovers"):
            warnings.append("%s: %d leftovers of interrupted moves (cleaned before moving)" % (
                host, len(scan["leftovers"])))
    # with checksums (job rebalancing reads them): a copy whose content differs from the live
    # copy's is not complete, and job rebalancing resyncs it from the live copy
    for t in tasks:
        key = (t["job"], t["task"])
        live = ((jobs_reg.get(t["job"]) or {}).get("tasks") or {}).get(t["task"], {}).get("live")
        want = sums.get(key + (live,))
        have = sums.get(key + (t["host"],))
        if want and have and have != want:
            t["complete"] = False
            warnings.append("%s/%s on %s differs from the live copy on %s (checksum)" % (t["job"], t["task"], t["host"], live))
    live_of = {}
    for job, spec in sorted(jobs_reg.items()):
        for task, tspec in sorted((spec.get("tasks") or {}).items()):
            live = tspec.get("live")
            live_of["%s/%s" % (job, task)] = live
            if live in scans and live not in held.get((job, task), ()):
                warnings.append("%s/%s: the registry has its live copy on %s, which holds no copy" % (job, task, live))
    for (job, task), where in sorted(held.items()):
        if job not in jobs_reg:
            warnings.append("%s/%s on %s: job %s is not in the registry (never moved)" % (
                job, task, ", ".join(where), job))
    snapshot = {"taken_at": now, "hosts": hosts, "tasks": tasks,
                "jobs": {job: {"replicas": int(spec.get("replicas", 0)),
                               "max_per_host": spec.get("max_per_host"),
                               "no_autobalance": bool(spec.get("no_autobalance", False))}
                         for job, spec in jobs_reg.items()}}
    return snapshot, {"pinned": pinned, "live": live_of, "warnings": warnings}


def pinned_to(extra, job, task, host):
    """Ids of the pending Grid Engine jobs of job/task whose hard queue request names ``host``."""
    out = []
    for entry in extra["pinned"].get("%s/%s" % (job, task), ()):
        if any(q.partition("@")[2] == host for q in entry["queues"]):
            out.append(entry["id"])
    return out
