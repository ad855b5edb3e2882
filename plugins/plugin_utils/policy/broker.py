# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transfer-queue broker: which partner cluster gets the next transferred job (pure).

Seed 002 lists "brokerage for intelligent routing of jobs" as a future direction; issue 5 asks the
broker to choose among several partner clusters by weighted placement (seed 001). Each partner is
summarised from ``sge_queue_facts`` of its own cell (:func:`partner_load`), partners that are busy
by the howto's rule (more than ``idle_pending`` jobs waiting, the transfer queue's load threshold)
or full are left out, and the others get CloverDX's target distribution with a cluster as a
"node": free memory of the cluster's maximum, and slot usage as CPU usage. The choice of the next
job follows the distribution with the deterministic dispatcher of ``placement.py`` (within one
interval, no partner falls more than one job behind its share), resumed at ``offset`` (the number
of jobs the broker already routed in this interval).

No clock, no I/O, no Ansible import.
"""

from __future__ import annotations

from collections.abc import Mapping

try:
    from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import placement
except ImportError:  # installed beside transfer.py by the role transfer_queue (the load sensor routes)
    import placement  # type: ignore[no-redef]  # pylint: disable=import-error


class BrokerError(ValueError):
    pass


def partner_load(sge):
    """``{"slots_total", "slots_used", "pending", "mem_free", "mem_max"}`` of one partner cluster
    from its ``ansible_facts.sge`` (hosts in state u/E/d/D do not count)."""
    if not isinstance(sge, Mapping) or not isinstance(sge.get("hosts"), Mapping):
        raise BrokerError("partner facts must be ansible_facts.sge with 'hosts'")
    total = used = 0
    mem_free = mem_max = 0.0
    for host in sge["hosts"].values():
        if set(host.get("states") or "") & set("uEdD"):
            continue
        total += int(host.get("slots_total") or 0)
        used += int(host.get("slots_used") or 0)
        if host.get("mem_total"):
            mem_max += float(host["mem_total"])
            mem_free += float(host["mem_total"]) - float(host.get("mem_used") or 0)
    pending = sum(int(j.get("task_count") or 1) for j in sge.get("pending", ())
                  if not j.get("held") and not j.get("error"))
    return {"slots_total": total, "slots_used": used, "pending": pending,
            "mem_free": mem_free, "mem_max": mem_max}


def route(partners, idle_pending=None, offset=0, config=None, count=1):
    """Distribution over the partners that may take work, and the partner of the next job.

    ``partners`` maps a partner name to :func:`partner_load`'s dict. ``idle_pending``: a partner
    with more jobs waiting is busy (default: 10 % of its slots, the howto's example). Returns
    ``{"choice": name or None, "sequence": [name, ...], "distribution": {name: share},
    "excluded": {name: reason}, "reason": str}``; ``sequence`` holds the partners of the next
    ``count`` jobs (the transfer queue's load sensor publishes a cycle of them, and a starter takes
    the entry of its job number, so consecutive jobs follow the dispatcher).
    """
    if not isinstance(partners, Mapping) or not partners:
        raise BrokerError("partners: a mapping of partner name to load is required")
    excluded, nodes = {}, {}
    for name, load in sorted(partners.items()):
        total = int(load.get("slots_total") or 0)
        if total <= 0:
            excluded[name] = "no usable slots"
            continue
        limit = idle_pending if idle_pending is not None else max(1, total // 10)
        if load.get("pending", 0) > limit:
            excluded[name] = "busy: %d jobs waiting > %d" % (load["pending"], limit)
            continue
        if load.get("slots_used", 0) >= total:
            excluded[name] = "full: %d of %d slots used" % (load["slots_used"], total)
            continue
        mem_max = float(load.get("mem_max") or 0) or 1.0
        mem_free = float(load.get("mem_free") or 0) if load.get("mem_max") else 1.0
        nodes[name] = {"mem_free": max(mem_free, 0.0), "mem_max": mem_max,
                       "cpu_usage": min(1.0, float(load.get("slots_used", 0)) / total)}
    if not nodes:
        return {"choice": None, "sequence": [], "distribution": {}, "excluded": excluded,
                "reason": "no partner can take a job: %s" % "; ".join(
                    "%s %s" % kv for kv in sorted(excluded.items()))}
    dist = placement.distribution(nodes, config)
    sequence = placement.dispatch(dist, max(1, int(count)), offset=offset)
    choice = sequence[0]
    return {"choice": choice, "sequence": sequence, "distribution": dist["distribution"], "excluded": excluded,
            "reason": "%s gets the next job (share %.1f%%%s)" % (
                choice, 100 * dist["distribution"][choice],
                "; left out: " + "; ".join("%s %s" % kv for kv in sorted(excluded.items())) if excluded else "")}
