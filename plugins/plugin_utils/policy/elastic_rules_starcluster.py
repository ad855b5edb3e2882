# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Profile ``starcluster`` of the elastic policy (policy/elastic.py): StarCluster's rules as written.

Waiting: jobs in state exactly ``qw`` that may run in ``all.q``.  Growth: when the *first listed*
job has waited longer than ``job_wait_time``, add ``add_nodes_per_iter`` nodes (booting nodes not
counted, no floor).  Removal: a node with no job and no slot in use goes at ``kill_after`` minutes
past its hour (hourly billing only); an unknown node counts as idle (with a warning); candidates in
host-name order.  The removal loop shared by every profile is :mod:`policy.elastic_removal`.
"""

from __future__ import annotations

import fnmatch

from .elastic_common import STARCLUSTER_QUEUE, _job_label, _plural, fmt_duration


class StarclusterRules(object):
    """Part of :class:`policy.elastic._Decision`: profile ``starcluster``."""

    def _starcluster_waiting(self):
        """StarCluster's queued jobs: state exactly 'qw' (so hqw and Eqw are left out), all.q."""
        out = []
        for job in self.snap["pending"]:
            if job.get("state") != "qw":
                continue
            queues = job.get("hard_queues") or []
            if queues and not any(fnmatch.fnmatchcase(STARCLUSTER_QUEUE, str(q).partition("@")[0]) for q in queues):
                continue
            out.append(job)
        return out

    def _grow_starcluster(self):
        cfg = self.cfg
        waiting = self.waiting
        if not waiting:
            return 0, "no jobs in qw state"
        # StarCluster compared the *first* queued job it saw (list order), not the oldest.
        first = waiting[0]
        waited = self._waited(first)
        head = "%s in qw, the first listed (%s) waited %s" % (
            _plural(len(waiting), "job"), _job_label(first), fmt_duration(waited))
        if not waited > cfg["job_wait_time"]:
            return 0, "%s <= job_wait_time %s" % (head, fmt_duration(cfg["job_wait_time"]))
        if self.current + self.booting >= self.max_nodes:
            return 0, "%s, but %s (%d booting) >= max_nodes %d" % (
                head, _plural(self.current + self.booting, "node"), self.booting, self.max_nodes)
        count = min(cfg["add_nodes_per_iter"], self._room())
        reason = "%s > job_wait_time %s, %s < max_nodes %d" % (
            head, fmt_duration(cfg["job_wait_time"]), _plural(self.current + self.booting, "node"), self.max_nodes)
        if count < cfg["add_nodes_per_iter"]:
            reason += ", capped by max_nodes=%d" % self.max_nodes
        else:
            reason += ", add_nodes_per_iter=%d" % cfg["add_nodes_per_iter"]
        return count, reason

    def _starcluster_keeps(self, name, st, keep, dead):
        """Removal: True when ``name`` is kept for a reason of this profile (recorded in ``keep``)."""
        if st["used"]:
            keep[name] = "%s in use" % _plural(st["used"], "slot")
            return True
        if st["unknown"]:
            # StarCluster would remove it: it runs no job that Grid Engine knows of.
            self.warnings.append("%s: state unknown (load %r, states %r); profile starcluster "
                                 "treats it as idle" % (name, st["load"], st["states"]))
        return False

    @staticmethod
    def _starcluster_order(cands):
        """StarCluster walked the nodes in cluster order; ours is host-name order."""
        cands.sort(key=lambda c: c[0])
