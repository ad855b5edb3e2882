# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Profile ``default`` of the elastic policy (policy/elastic.py): StarCluster's idea, its weaknesses fixed.

Waiting: every pending job a new node could run (held, error, host-bound, too wide, unknown queue,
architecture or memory it cannot have are ignored for growth, with a reason).  Growth: when the
oldest waiting job waited longer than ``job_wait_time``, enough nodes for the pending slots, less
those booting and idle ones a parallel job waits beside; back to ``min_nodes`` at once.  Removal:
used or reserved slots, an unknown state (removed after ``unknown_timeout``), an error state, or a
waiting job asking for the host keep a node; the longest idle go first.  Every fix is marked
``FIX(n)`` and listed in docs/elastic.md.  Profile ``parallelcluster`` shares these removal checks.
"""

from __future__ import annotations

import fnmatch
import itertools
import math
from collections.abc import Mapping

from .elastic_common import (
    _ARCH_REQUESTS, _HOST_REQUESTS, _MEMORY_REQUESTS, _WILDCARDS, _fmt_bytes, _is_int, _job_label, _parse_memory,
    _plural, fmt_duration)


class DefaultRules(object):
    """Part of :class:`policy.elastic._Decision`: profile ``default``."""

    def _why_not_runnable(self, job):
        """None if a new node could run ``job``, else the reason it is ignored for growth."""
        # FIX(held/error): StarCluster only looked at 'qw', but our broader view must still skip
        # jobs that more nodes cannot help.
        # (written for speed: a poll may list 200,000 waiting jobs, docs/benchmarks/parse_decide.md)
        get = job.get
        state = get("state")
        state_text = state if type(state) is str else str(state or "")  # pylint: disable=unidiomatic-typecheck
        if get("held") or "h" in state_text:
            return "held (state %s)" % state
        if get("error") or "E" in state_text:
            return "in error state (%s)" % state
        hard_queues = get("hard_queues")
        queues = [str(q) for q in hard_queues] if hard_queues else []
        if queues:
            usable, host_bound, missing, unbalanced = [], [], [], []
            for spec in queues:
                qpat, at, hostpart = spec.partition("@")
                if at and not hostpart.startswith("@") and not _WILDCARDS.search(hostpart):
                    host_bound.append(spec)
                elif self.known_queues and not any(fnmatch.fnmatchcase(k, qpat) for k in self.known_queues):
                    missing.append(spec)
                elif self.cfg["queues"] and not any(fnmatch.fnmatchcase(b, qpat) for b in self.cfg["queues"]):
                    unbalanced.append(spec)
                else:
                    usable.append(spec)
            if not usable:
                if missing:
                    return "requests queue %s, which the cluster does not have" % ", ".join(missing)
                if unbalanced:
                    return "requests queue %s, not balanced (queues: %s)" % (
                        ", ".join(unbalanced), ", ".join(self.cfg["queues"]))
                for spec in host_bound:
                    self.wanted_hosts.setdefault(spec.partition("@")[2], job.get("id"))
                return "requests specific host(s) %s: a new node cannot run it" % ", ".join(host_bound)
        slots = get("slots")
        if type(slots) is not int and not _is_int(slots):  # pylint: disable=unidiomatic-typecheck
            slots = 1
        if slots > self.spn:
            # FIX(parallel jobs): Grid Engine gives a job more than one slot only through a
            # parallel environment, and a PE job may spread over hosts ($fill_up, $round_robin), so
            # several new nodes can run it, whether or not the listing names its PE (qstat without
            # -r does not).  (A $pe_slots PE wider than a node is counted too: the snapshot does
            # not carry the allocation rule.)
            if slots > self.spn * self.max_nodes:
                return "needs %d slots > %d nodes x %s (max_nodes)" % (slots, self.max_nodes, self.spn_text)
        requests = get("hard_requests")
        if not requests or (type(requests) is not dict and not isinstance(requests, Mapping)):  # pylint: disable=unidiomatic-typecheck
            return None  # (no host, architecture or memory request)
        for key in _HOST_REQUESTS:
            value = requests.get(key)
            if value is not None and not _WILDCARDS.search(str(value)):
                for name in str(value).split("|"):
                    self.wanted_hosts.setdefault(name.strip(), job.get("id"))
                return "requests host %s=%s: a new node cannot run it" % (key, value)
        # The verdict on the architecture and memory requests depends on the requests only: the
        # snapshot shares one mapping between the jobs that request the same (sge_xml), and the
        # mappings live as long as this call, so it is computed once per mapping.
        verdicts = self.request_verdicts
        ident = id(requests)
        if ident not in verdicts:
            verdicts[ident] = self._requests_unfit(requests)
        return verdicts[ident]

    def _requests_unfit(self, requests):
        """None if a new node has what ``requests`` asks for (architecture, memory), else why not."""
        for key in _ARCH_REQUESTS:
            value = requests.get(key)
            if value is not None and self.archs:
                pats = [p.strip() for p in str(value).split("|") if p.strip()]
                if pats and not any(fnmatch.fnmatchcase(a, p) for a in self.archs for p in pats):
                    return "requests %s=%s, which no node has (%s)" % (key, value, ", ".join(sorted(self.archs)))
        if self.node_mem:
            for key in _MEMORY_REQUESTS:
                wanted = _parse_memory(requests.get(key))
                if wanted is not None and wanted > self.node_mem:
                    return "requests %s=%s, more than a node has (%s)" % (key, requests[key], _fmt_bytes(self.node_mem))
        return None

    def _default_waiting(self):
        # The verdict on a job depends on its state, held and error flags, queue requests, slots
        # and requests only (and on the configuration): jobs that share them (the snapshot shares
        # the request mappings and queue lists, sge_xml) share it, so it is computed once for them.
        # Its one side effect, the first job that asks for a host (wanted_hosts.setdefault), is
        # that of the first job with those values, which is still computed.
        eligible, ignored = [], self.ignored
        why_not = self._why_not_runnable
        verdicts = {}
        for job in self.snap["pending"]:
            get = job.get
            state = get("state")
            key = (state, type(state), get("held"), get("error"), id(get("hard_queues")), get("slots"),
                   id(get("hard_requests")))
            try:
                why = verdicts[key]
            except KeyError:
                why = verdicts[key] = why_not(job)
            except TypeError:  # (a value that cannot be a key: no sharing)
                why = why_not(job)
            if why is None:
                eligible.append(job)
            else:
                ignored.append({"id": get("id"), "reason": why})
        return eligible

    def _grow_default(self):
        cfg = self.cfg
        waiting = self.waiting
        if not waiting:
            return 0, "no job waiting that a new node could run"
        # FIX(oldest): the truly oldest job by submit_time, not the first one listed.
        waited_of = self._waited
        now, isfinite = self.now, math.isfinite
        oldest = waiting[0]
        waited = waited_of(oldest)
        for job in itertools.islice(waiting, 1, None):
            submit = job.get("submit_time")
            if type(submit) is float and isfinite(submit):  # pylint: disable=unidiomatic-typecheck
                wait = now - submit  # (StateHistory._waited's common case, inline: 200,000 jobs a poll)
                if wait < 0.0:
                    wait = 0.0
            else:
                wait = waited_of(job)
            if wait > waited:
                oldest, waited = job, wait
        # FIX(slot-aware): pending slots (array tasks x slots per task), not one node per poll.
        slots = pe_slots = 0
        for job in waiting:
            get = job.get
            per_task = get("slots")
            if type(per_task) is not int and not _is_int(per_task):  # pylint: disable=unidiomatic-typecheck
                per_task = 1
            tasks = get("task_count")
            if (type(tasks) is not int and not _is_int(tasks)) or tasks <= 0:  # pylint: disable=unidiomatic-typecheck
                tasks = 1
            slots += per_task * tasks
            if get("pe"):
                pe_slots += per_task * tasks
        head = "%s waiting (oldest %s waited %s" % (
            _plural(slots, "slot"), _job_label(oldest), fmt_duration(waited))
        if not waited > cfg["job_wait_time"]:
            return 0, "%s <= job_wait_time %s)" % (head, fmt_duration(cfg["job_wait_time"]))
        head += " > job_wait_time %s), %s" % (fmt_duration(cfg["job_wait_time"]), self.spn_text)
        needed = int(math.ceil(slots / float(self.spn)))
        # FIX(idle capacity): a parallel job waiting next to idle hosts waits for more hosts, not
        # for as many as it needs: those idle hosts count against its need, like booting ones.
        idle = min(self._idle_workers(), int(math.ceil(pe_slots / float(self.spn))))
        need_now = needed - self.booting - idle
        if need_now <= 0:
            return 0, "%s: %s needed, %d already booting%s" % (
                head, _plural(needed, "node"), self.booting, (", %d idle" % idle) if idle else "")
        room = self._room()
        if room <= 0:
            return 0, "%s, but %s (%d booting) >= max_nodes %d" % (
                head, _plural(self.current + self.booting, "node"), self.booting, self.max_nodes)
        per_iter = cfg["add_nodes_per_iter"] or need_now  # 0: no per-poll limit
        count = min(need_now, per_iter, room)
        reason = head
        if self.booting:
            reason += ", %d already booting" % self.booting
        if idle:
            reason += ", %d idle" % idle
        caps = []
        if count < need_now and count == cfg["add_nodes_per_iter"]:  # (never when 0)
            caps.append("add_nodes_per_iter=%d" % cfg["add_nodes_per_iter"])
        if count < need_now and count == room:
            caps.append("max_nodes=%d (%d up, %d booting)" % (self.max_nodes, self.current, self.booting))
        if caps:
            reason += ", capped by " + " and ".join(caps)
        return count, reason

    def _idle_workers(self):
        """Execution hosts (not the master) with every slot free and a known, error-free state."""
        master, slots_of = self.master, self.slots_of
        status = self.status
        hints = self.hints
        if hints is None:
            names = status
        else:  # (with "idle": the hosts running nothing, which are the hosts not busy here)
            names = hints["idle"] if "idle" in hints else status.keys() - hints["busy"]
        return sum(1 for name, st in ((n, status[n]) for n in names)
                   if st["exec_host"] and name != master and not st["busy"]
                   and not st["unknown"] and not st["error"] and slots_of.get(name, 0) > 0)

    def _unknown_to_remove(self, dead, keep):
        """The nodes of ``dead`` to remove now; the others get a keep reason.

        When more than half of the worker nodes, and more than one, are unknown at the same time,
        the fault is most likely the qmaster's or the network's, not the nodes': none is removed
        for being unknown (as Kubernetes' cluster autoscaler stops when too many nodes are unready).
        """
        if not dead:
            return []
        workers = sum(1 for name, st in self.status.items() if st["exec_host"] and name != self.master)
        unknown = sum(1 for name in self.unknown_since if name != self.master)
        if unknown > 1 and 2 * unknown > workers:
            why = "%d of %d worker nodes unknown at once: a qmaster or network fault, not dead nodes" % (unknown, workers)
            self.warnings.append("%s; none removed for being unknown" % why)
            for name, unknown_for, reason in dead:
                keep[name] = "%s, but %s" % (reason, why)
            return []
        dead.sort(key=lambda c: (-c[1], c[0]))
        for name, unknown_for, reason in dead:
            self.warnings.append("%s: %s; the plan removes it (growth or min_nodes replaces it if needed)"
                                 % (name, reason))
        return dead

    def _default_keeps(self, name, st, keep, dead):
        """Removal: True when ``name`` is kept (recorded in ``keep``) or goes as unknown (``dead``).

        Profiles ``default`` and ``parallelcluster``.
        """
        if st["used"] or st["reserved"]:
            keep[name] = "%s%s" % (
                ("%s in use" % _plural(st["used"], "slot")) if st["used"] else "",
                ("%s%s reserved" % (", " if st["used"] else "", _plural(st["reserved"], "slot")))
                if st["reserved"] else "")
            return True
        # FIX(unknown): a host that reports load "-" or state u cannot be seen idle; one
        # that stays so for unknown_timeout with nothing on it is dead weight and goes.
        if st["unknown"]:
            now = self.now
            load = "-" if st["load"] is None else st["load"]
            unknown_for = max(0.0, now - self.unknown_since.get(name, now))
            timeout = self.cfg["unknown_timeout"]
            if timeout and unknown_for >= timeout:
                why = "state unknown for %s >= unknown_timeout %s (load %s, states %r), no job listed on it" % (
                    fmt_duration(unknown_for), fmt_duration(timeout), load, st["states"])
                dead.append((name, unknown_for, why))
                return True
            keep[name] = "state unknown (load %s, states %r): its idleness cannot be known%s" % (
                load, st["states"], (", removed once unknown for unknown_timeout %s (%s so far)" % (
                    fmt_duration(timeout), fmt_duration(unknown_for))) if timeout else "")
            self.warnings.append("%s: state unknown (load %s, states %r); kept, check its execd"
                                 % (name, load, st["states"]))
            return True
        if st["error"]:
            keep[name] = "queue in error state %r: idleness not trusted" % st["states"]
            self.warnings.append("%s: queue error state %r; kept, clear it with qmod -c" % (name, st["states"]))
            return True
        # A waiting job that asks for this very host: removing it would strand the job.
        if name in self.wanted_hosts:
            keep[name] = "job %s waits for this host" % self.wanted_hosts[name]
            return True
        return False

    @staticmethod
    def _default_order(cands):
        """Longest idle first, so the floor keeps the most recently useful nodes."""
        cands.sort(key=lambda c: (-c[1], c[0]))

    def _default_floor(self):
        """(floor, floor_reason): the nodes missing below ``min_nodes``."""
        # FIX(min floor): below min_nodes we grow back to it at once (and regardless of
        # stabilization: the floor is a guarantee, not a reaction to load).
        floor = min(max(0, self.min_nodes - self.current - self.booting), self._room())
        floor_reason = None
        if floor:
            floor_reason = "%d up + %d booting < min_nodes %d (the master counts as a node)" % (
                self.current, self.booting, self.min_nodes)
        return floor, floor_reason
