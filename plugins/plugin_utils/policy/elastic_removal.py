# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Removal of the elastic policy (policy/elastic.py): the loop every profile's removal rules share.

For every node: the master and hosts the balancer does not own are kept, so is a node running a
job; then the profile's own checks (:meth:`StarclusterRules._starcluster_keeps`,
:meth:`DefaultRules._default_keeps`); then the billing's idle rule (hourly: ``kill_after`` minutes
past the hour; per second: ``idle_time``), and the profile's order of the candidates.
"""

from __future__ import annotations

import fnmatch

from .elastic_common import _cmp, _plural, fmt_duration


def idle_since(rec):
    """When the node of record ``rec`` last ran a job as the polls saw it (``last_busy``), else when
    it joined (or was first seen)."""
    last_busy = rec.get("last_busy")
    return last_busy if last_busy is not None else (rec.get("joined") or rec["first_seen"])


def minutes_past_hour(rec, now):
    """The minutes past the last full hour the node of record ``rec`` has been up at ``now``."""
    return int(max(0.0, now - (rec.get("joined") or rec["first_seen"])) // 60) % 60


def removal_due(rec, now, cfg, hourly):
    """Whether the node of record ``rec`` passes its billing's removal rule at ``now``: up
    ``kill_after`` minutes or more past its hour (``hourly``), or idle ``idle_time`` or more (per
    second). :meth:`Removal._removal_candidates` keeps more nodes than this (for other reasons),
    never fewer; the trace simulator uses it to skip polls that remove nothing."""
    if hourly:
        return minutes_past_hour(rec, now) >= cfg["kill_after"]
    return max(0.0, now - idle_since(rec)) >= cfg["idle_time"]


class Removal(object):
    """Part of :class:`policy.elastic._Decision`: removal candidates and ownership."""

    # ---- shrinking ---------------------------------------------------------------------------
    def _removal_candidates(self):
        """[(host, idle_for, reason)] eligible now, {host: keep reason} for the others, and
        [(host, unknown_for, reason)] for the nodes unknown for ``unknown_timeout`` (see
        :meth:`_unknown_to_remove`)."""
        cfg, now, lean = self.cfg, self.now, self.lean
        cands, keep, dead = [], {}, []
        names = self.node_names
        if lean:
            # a node running a job is only a "keep" text, which lean plans leave out
            if self.hints is not None:
                hints = self.hints
                # the hosts running nothing: kept by the caller ("idle"), else derived
                names = set(hints["idle"]) if "idle" in hints else names - hints["running"]
                if self.master in self.node_names:
                    names.add(self.master)
            else:
                status = self.status
                names = [n for n in names if not status[n]["jobs"] or n == self.master]
        hourly = self.billing == "hourly"
        for name in sorted(names):
            st = self.status[name]
            rec = self.nodes[name]
            if name == self.master:
                keep[name] = "master (never removed%s)" % (", unless kill_cluster" if cfg["kill_cluster"] else "")
                continue
            if lean and not (st["unknown"] or st["error"]) and not removal_due(rec, now, cfg, hourly):
                # not yet removable under its billing: whatever else keeps it is only a "keep"
                # text, which lean plans leave out (an unknown or erring host may warn: the long way)
                continue
            not_ours = self._not_ours(name, rec)
            if not_ours is not None:
                keep[name] = not_ours
                continue
            if st["jobs"]:
                if not self.lean:
                    keep[name] = "running %s" % _plural(st["jobs"], "job")
                    if st["unknown"] and not self.starcluster:
                        self.warnings.append(
                            "%s: state unknown (load %s, states %r) with %s listed on it; kept, never removed "
                            "while Grid Engine lists a job there: check its execd (if the node is gone, qdel -f "
                            "its jobs and the next polls remove it)" % (
                                name, "-" if st["load"] is None else st["load"], st["states"],
                                _plural(st["jobs"], "job")))
                continue
            if self._profile_keeps(name, st, keep, dead):
                continue
            idle_for = max(0.0, now - idle_since(rec))
            if hourly:
                mins = minutes_past_hour(rec, now)
                if lean and mins < cfg["kill_after"]:
                    continue  # only a "keep" text
                text = "up %dm past the hour" % mins
                if self.starcluster:
                    text = "not running an SGE job, " + text
                else:
                    text = "idle %s, %s" % (fmt_duration(idle_for), text)
                if mins >= cfg["kill_after"]:
                    cands.append((name, idle_for, "%s >= kill_after %dm" % (text, cfg["kill_after"])))
                else:
                    keep[name] = "%s < kill_after %dm" % (text, cfg["kill_after"])
            else:
                # FIX(per-second billing): idle long enough, measured from the last poll that
                # saw the node busy.
                if idle_for >= cfg["idle_time"]:
                    cands.append((name, idle_for, "idle %s %s idle_time %s" % (
                        fmt_duration(idle_for), _cmp(idle_for, cfg["idle_time"]), fmt_duration(cfg["idle_time"]))))
                elif not lean:
                    keep[name] = "idle %s < idle_time %s" % (fmt_duration(idle_for), fmt_duration(cfg["idle_time"]))
        self._order_candidates(cands)
        return cands, keep, self._unknown_to_remove(dead, keep)

    def _not_ours(self, name, rec):
        """None if the balancer may remove host ``name``, else the reason it never does.

        FIX(ownership): StarCluster removed any idle node but the master; on a cluster someone
        else built that takes the site's own hosts (on-premises nodes, a login node running an
        execd, GPU boxes).  The balancer removes only the hosts it launched: those the provider
        lists (``launched_hosts``, which the playbook fills from the provider), or, when no list
        is given (the simulator, a plan made by hand), the hosts that filled a node a plan asked
        for (``launched`` in the state).  ``managed_hosts`` adds hosts by pattern (``["*"]``:
        every node, as StarCluster did); ``protected_hosts`` wins over everything.
        """
        cfg = self.cfg
        lname = name.lower()
        for pat in cfg["protected_hosts"]:
            if fnmatch.fnmatchcase(lname, pat.lower()):
                return "protected host (protected_hosts: %s)" % pat
        launched = self.launched
        if (rec.get("launched") is True) if launched is None else (lname in launched):
            return None
        for pat in cfg["managed_hosts"]:
            if fnmatch.fnmatchcase(lname, pat.lower()):
                return None
        return "static host, not launched by the balancer (managed_hosts lets it remove such a host)"
