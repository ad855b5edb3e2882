# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The census of a snapshot for the elastic policy (policy/elastic.py): who is there, in what state.

What one poll sees before any rule runs: the hosts and the master, the jobs on each host, the nodes
booting, each node's record (first seen, joined, last busy), the size limits, the last change of the
cluster, and the shape of a new node (slots, memory, architectures, the balanced queues).  The
trace simulator may hand these per-host facts in as ``hints`` (:func:`policy.elastic._decide_validated`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from .elastic_common import _is_int, _is_mapping, _num, _plural, fmt_duration


class Census(object):
    """Part of :class:`policy.elastic._Decision`: reads the snapshot and the previous state."""

    # ---- census ---------------------------------------------------------------------------
    def _census(self):
        snap, cfg, now, prev = self.snap, self.cfg, self.now, self.prev
        hints = self.hints
        if hints is None:
            self.hosts = {str(name): host for name, host in snap["hosts"].items()}
        else:
            self.hosts = snap["hosts"]  # str names (the caller's promise); only read
        self.master = cfg["master"] if cfg["master"] is not None else snap.get("master")
        if self.master is not None and not isinstance(self.master, str):
            self.master = None
        if self.master is None:
            self.warnings.append("master not set: no execution host is protected as the master")

        # jobs per host, from the running list (parallel jobs count on every host they span)
        self.jobs_on = jobs_on = dict.fromkeys(self.hosts, 0) if hints is None else {}
        for job in snap["running"] if hints is None else ():
            spans = job.get("hosts")
            spans = set(map(str, spans)) if _is_mapping(spans) else set()
            if job.get("host") is not None:
                spans.add(str(job["host"]))
            for name in spans:
                if name in jobs_on:
                    jobs_on[name] += 1

        # Nodes: the execution hosts plus the master.  StarCluster counted the master as a node
        # (len(cluster.nodes)), so min_nodes=1 means "the master alone"; we do the same.
        # With hints that carry the set and its changes since the state was written ("names",
        # "came", "went"), nothing here is proportional to the cluster's size.
        prev_nodes = prev["nodes"]
        if hints is not None and "names" in hints and not prev["first_poll"]:
            self.node_names = hints["names"]  # (the caller's set: only read)
            self.came, self.went = hints["came"], hints["went"]
        else:
            self.node_names = set(self.hosts)
            if self.master is not None:
                self.node_names.add(self.master)
            before = set(prev_nodes)
            self.came, self.went = self.node_names - before, before - self.node_names
        self.current = len(self.node_names)

        # Nodes booting: requested by an earlier plan, not yet seen.  A host that appears for the
        # first time takes the oldest request (and that request's time as its join time).
        booting = list(prev["booting"])
        new_nodes = {}
        appeared = sorted(self.came) if not prev["first_poll"] else []
        for name in appeared:
            # A host that takes a request of an earlier plan is one the balancer launched: it may
            # remove it again. Hosts it did not launch are the site's (see _not_ours).
            if booting:
                new_nodes[name] = {"first_seen": now, "joined": booting.pop(0), "last_busy": None, "launched": True}
            else:
                new_nodes[name] = {"first_seen": now, "joined": now, "last_busy": None}
        self.launch_mark_known = prev["launch_failure_known"]
        self.launch_mark = prev["last_launch_failure"]
        self.launch_items = []
        if self.launches is not None:
            self._forget_failed_launches(booting)
        expired = [t for t in booting if now - t > cfg["boot_timeout"]]
        if expired:
            self.warnings.append(
                "%s requested %s ago never joined (boot_timeout %s); no longer counted as booting"
                % (_plural(len(expired), "node"), fmt_duration(now - expired[0]), fmt_duration(cfg["boot_timeout"])))
        self.booting_times = [t for t in booting if now - t <= cfg["boot_timeout"]]
        self.booting = len(self.booting_times)

        # per-node records
        hosts, host_status = self.hosts, self._host_status
        if hints is not None:
            self._records_from_hints(hints, new_nodes)
        else:
            self.nodes = {}
            self.status = {}
            for name in sorted(self.node_names):
                rec = dict(prev_nodes.get(name) or new_nodes.get(name) or
                           {"first_seen": now, "joined": None, "last_busy": None})
                if rec.get("first_seen") is None:
                    rec["first_seen"] = now
                st = host_status(name, hosts.get(name))
                self.status[name] = st
                # A host whose idleness cannot be observed restarts its idle clock: we must not
                # conclude "idle for 10 minutes" from minutes in which we could not see it.
                if st["busy"] or st["unknown"]:
                    rec["last_busy"] = now
                self.nodes[name] = rec

        self._unknown_clocks()

        # max_nodes unset: StarCluster used the CLUSTER_SIZE the cluster was created with; we use
        # the size at the first poll, remembered in the state.
        self.cluster_size = prev["cluster_size"] if prev["cluster_size"] is not None else self.current
        if cfg["max_nodes"] is None:
            self.max_nodes = max(self.cluster_size, cfg["min_nodes"], 1)
            self.warnings.append("max_nodes not set: using %d, the cluster size when balancing started"
                                 % self.max_nodes)
        else:
            self.max_nodes = cfg["max_nodes"]
        self.min_nodes = cfg["min_nodes"]
        if self.current > self.max_nodes:
            self.warnings.append("cluster has %d nodes, above max_nodes %d: no node is added; idle nodes "
                                 "are removed under the usual rules" % (self.current, self.max_nodes))

        # last change: the later of the last plan that added/removed and the last poll that saw
        # the set of hosts change (StarCluster set it after its add/remove had completed).
        self.last_change = prev["last_change"]
        self.last_change_reason = prev["last_change_reason"]
        if not prev["first_poll"]:
            if self.came or self.went:
                came = sorted(self.came)
                went = sorted(self.went)
                text = []
                if came:
                    text.append("joined: " + ", ".join(came))
                if went:
                    text.append("left: " + ", ".join(went))
                self.last_change = now
                self.last_change_reason = "hosts changed (%s)" % "; ".join(text)
        self.removed = {} if self.lean else self._left_recently()
        if prev["last_poll"] is not None:
            gap = now - prev["last_poll"]
            if gap < 0:
                self.warnings.append("now is %s before the previous poll: the qmaster clock went back"
                                     % fmt_duration(-gap))
            elif gap > 3 * cfg["interval"] and not self.lean:  # (a text for people: lean plans leave it out)
                self.warnings.append("previous poll was %s ago (interval %s): idle times and job history "
                                     "may have gaps" % (fmt_duration(gap), fmt_duration(cfg["interval"])))

    def _records_from_hints(self, hints, new_nodes):
        """The per-node loop of :meth:`_census` with the caller's host status (``hints``).

        The same records and status as that loop, but the previous state's ``nodes`` mapping
        and its records are reused and updated in place (the caller of the lean entry point
        drops the previous state), so only new, departed and busy nodes cost anything.  With
        ``hints["names"]``, ``hints["status"]`` holds every one of those names.
        """
        now, names = self.now, self.node_names
        self.nodes = nodes = self.prev["nodes"]
        for name in self.went:
            del nodes[name]
        for name in self.came:
            nodes[name] = dict(new_nodes.get(name) or {"first_seen": now, "joined": None, "last_busy": None})
        known = hints["status"]
        missing = () if "names" in hints else names - known.keys()
        if missing:
            self.status = status = dict(known)
            for name in missing:
                status[name] = self._host_status(name, self.hosts.get(name))
        else:
            self.status = known
        for name in hints["busy"]:
            nodes[name]["last_busy"] = now
        for name in hints["unknown"]:
            nodes[name]["last_busy"] = now

    def _host_status(self, name, host):
        if host is None:  # the master, not an execution host
            return {"busy": False, "unknown": False, "error": False, "jobs": 0, "used": 0, "reserved": 0,
                    "exec_host": False, "load": None, "states": ""}
        # (written for speed: the trace simulator calls this for every host of every poll)
        get = host.get
        states = get("states") or ""
        if not isinstance(states, str):
            states = ""
        reported = get("running_jobs")
        if not _is_int(reported):
            reported = 0
        jobs = self.jobs_on.get(name, 0)
        if reported > jobs:
            jobs = reported
        used = get("slots_used")
        if not _is_int(used):
            used = 0
        reserved = get("slots_reserved")
        if not _is_int(reserved):
            reserved = 0
        load = get("load_avg")
        load = _num(load)
        return {
            "busy": jobs > 0 or used > 0 or reserved > 0,
            "jobs": jobs,
            "used": used,
            "reserved": reserved,
            # load "-" (execd down) or queue state u: Grid Engine does not know what runs there
            "unknown": load is None or "u" in states,
            "error": "E" in states,
            "exec_host": True,
            "load": get("load_avg"),
            "states": states,
        }

    # ---- queues, slots and the shape of a new node -----------------------------------------
    def _queues_and_template(self):
        snap, cfg = self.snap, self.cfg
        hints = self.hints
        if hints is not None:
            self._template_from_hints(hints)
            return
        self.known_queues = set()
        host_slots = {}
        for qi in snap.get("queues") or []:
            if not isinstance(qi, Mapping):
                continue
            qname = qi.get("queue") or (str(qi.get("name") or "").partition("@")[0]) or None
            if qname:
                self.known_queues.add(str(qname))
            host = qi.get("host")
            if host is not None and self._balanced_queue(qname) and _is_int(qi.get("slots_total")):
                host_slots[str(host)] = host_slots.get(str(host), 0) + qi["slots_total"]
        known = self.known_queues
        for host in self.hosts.values():
            qnames = host.get("queues")
            if qnames:
                known.update(map(str, qnames))
        if cfg["queues"] and self.known_queues:
            missing = [q for q in cfg["queues"] if q not in self.known_queues]
            if missing:
                self.warnings.append("queues: %s has no queue instance in the snapshot" % ", ".join(missing))
        # Slots per host in the balanced queues (from the queue instances when the snapshot has
        # them, else the host's total).
        self.slots_of = slots_of = {}
        no_queues = not snap.get("queues")
        for name, host in self.hosts.items():
            if name in host_slots:
                slots_of[name] = host_slots[name]
            elif no_queues and _is_int(host.get("slots_total")):
                slots_of[name] = host["slots_total"]
            else:
                slots_of[name] = 0
        workers = [n for n in self.hosts if n != self.master] or list(self.hosts)
        self._set_slots_per_node(workers)
        hosts = self.hosts
        mems = [m for m in (_num(hosts[n].get("mem_total")) for n in workers) if m]
        self.node_mem = max(mems) if mems else None
        self.archs = {str(a) for a in (h.get("arch") for h in hosts.values()) if a}

    def _set_slots_per_node(self, workers=None):
        """``spn`` (the slots of a new node), ``spn_source`` and ``spn_text``: ``slots_per_node``
        when given, else the slots of most ``workers`` (default: every host but the master)."""
        if self.cfg["slots_per_node"] is not None:
            self.spn = self.cfg["slots_per_node"]
            self.spn_source = "slots_per_node=%d" % self.spn
        else:
            if workers is None:
                workers = [n for n in self.hosts if n != self.master] or list(self.hosts)
            # FIX(mixed slots): StarCluster's slots_per_host() raised an error when hosts differed;
            # a new node is assumed to look like most existing workers (ties: the larger).
            counts = {}
            for name in workers:
                if self.slots_of.get(name, 0) > 0:
                    counts[self.slots_of[name]] = counts.get(self.slots_of[name], 0) + 1
            self.spn = max(counts, key=lambda s: (counts[s], s)) if counts else 1
            self.spn_source = _plural(self.spn, "slot") + " per node"
        self.spn_text = _plural(self.spn, "slot") + " per node"

    def _template_from_hints(self, hints):
        """:meth:`_queues_and_template` from facts the caller kept up to date (``hints``)."""
        cfg = self.cfg
        self.known_queues = set(hints["known_queues"])
        if cfg["queues"] and self.known_queues:
            missing = [q for q in cfg["queues"] if q not in self.known_queues]
            if missing:
                self.warnings.append("queues: %s has no queue instance in the snapshot" % ", ".join(missing))
        self.slots_of = hints["slots_of"]
        self._set_slots_per_node()
        self.node_mem = hints["node_mem"]
        self.archs = set(hints["archs"])

    def _balanced_queue(self, qname):
        if not self.cfg["queues"]:
            return True
        return qname is not None and any(fnmatch.fnmatchcase(str(qname), q) for q in self.cfg["queues"])
