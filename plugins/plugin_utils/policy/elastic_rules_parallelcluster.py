# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Profile ``parallelcluster`` of the elastic policy (policy/elastic.py): AWS ParallelCluster v2's rules.

Growth (jobwatcher): every poll, grow to ``busy nodes + ceil(waiting slots / slots per node)``, no
wait threshold, no floor.  Waiting jobs are those profile ``default`` counts
(:meth:`DefaultRules._default_waiting`).  Removal (nodewatcher): a node idle for ``idle_time``
goes while nothing that fits waits, with profile ``default``'s keep checks
(:meth:`DefaultRules._default_keeps`) and order.
"""

from __future__ import annotations

import math

from .elastic_common import _is_int, _plural


class ParallelclusterRules(object):
    """Part of :class:`policy.elastic._Decision`: profile ``parallelcluster``."""

    def _grow_parallelcluster(self):
        """ParallelCluster v2 jobwatcher: desired = busy nodes + ceil(pending slots / slots per node)."""
        waiting = self.waiting
        if not waiting:
            return 0, "no job waiting that fits"
        slots = 0
        for job in waiting:
            per_task = job.get("slots") if _is_int(job.get("slots")) else 1
            tasks = job.get("task_count") if _is_int(job.get("task_count")) and job["task_count"] > 0 else 1
            slots += per_task * tasks
        status = self.status
        names = self.hints["busy"] if self.hints is not None else status
        busy = sum(1 for name in names if status[name]["exec_host"] and name != self.master and status[name]["busy"])
        workers = self.current - (1 if self.master in self.node_names else 0)
        wanted = busy + int(math.ceil(slots / float(self.spn)))
        head = "%s waiting, %s: %d busy + %d needed = %d wanted, %d up + %d booting" % (
            _plural(slots, "slot"), self.spn_text, busy, wanted - busy, wanted, workers, self.booting)
        need_now = wanted - workers - self.booting
        if need_now <= 0:
            return 0, head
        room = self._room()
        if room <= 0:
            return 0, "%s, but %s (%d booting) >= max_nodes %d" % (
                head, _plural(self.current + self.booting, "node"), self.booting, self.max_nodes)
        count = min(need_now, room)
        return count, head + (", capped by max_nodes=%d" % self.max_nodes if count < need_now else "")
