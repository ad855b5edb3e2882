# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Weighted job placement filters (CloverDX's load balancer, docs/placement.md).

- ``placement_distribution``: the target job distribution of the hosts of a cluster snapshot
  (``ansible_facts.sge`` from ``gridengine.balancer.sge_queue_facts``), or of any mapping of
  node name to load.
- ``placement_next_hosts``: the hosts for the next N jobs (for ``qsub -q queue@host`` or the
  ``host`` option of ``gridengine.balancer.sge_submit``), by the deterministic smooth weighted
  round robin of ``plugins/plugin_utils/policy/placement.py``.
- ``placement_decisions``: the same hosts and, when ``log_level`` is ``debug`` or ``trace``, the
  load balancer's log lines of those decisions in CloverDX's format, for a play to show
  (``ansible.builtin.debug`` with ``verbosity``).

The documentation of each filter is in the ``<filter name>.yml`` file beside this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import placement

# Queue state letters under which Grid Engine does not start a new job in the queue instance:
# u unknown, a load alarm, A suspend alarm, E error, d disabled, D calendar disabled,
# s suspended, S subordinate, C calendar suspended, o orphaned.
UNUSABLE_STATES = "uaAEdDsSCo"


def _host_load(name, host):
    """``(load, None)`` for the placement, or ``(None, reason)`` when the host cannot be used."""
    if not isinstance(host, Mapping):
        raise AnsibleFilterError("placement_distribution: hosts.%s must be a mapping, got %s"
                                 % (name, type(host).__name__))
    total, used = host.get("mem_total"), host.get("mem_used")
    load_avg, num_proc = host.get("load_avg"), host.get("num_proc")
    if not total or used is None:
        return None, "memory unknown (mem_total %r, mem_used %r)" % (total, used)
    if load_avg is None or not num_proc:
        return None, "CPU load unknown (load_avg %r, num_proc %r)" % (load_avg, num_proc)
    free = min(max(total - used, 0), total)
    # np_load_avg, capped at 1 (a load above the processor count is a fully used CPU)
    cpu = min(max(float(load_avg) / float(num_proc), 0.0), 1.0)
    return {"mem_free": free, "mem_max": total, "cpu_usage": cpu,
            "running": host.get("running_jobs")}, None


def _unusable(states):
    return "".join(sorted(set(c for c in (states or "") if c in UNUSABLE_STATES)))


def snapshot_loads(sge, queue=None):
    """``(loads, skipped)`` from a cluster snapshot: loads of the usable hosts for ``queue``."""
    if not isinstance(sge, Mapping) or not isinstance(sge.get("hosts"), Mapping):
        raise AnsibleFilterError(
            "placement_distribution: the input must be the cluster snapshot ansible_facts.sge "
            "(with 'hosts') or a mapping of node name to load, got %s" % type(sge).__name__)
    if queue is not None and (not isinstance(queue, str) or not queue):
        raise AnsibleFilterError("placement_distribution: queue must be a cluster queue name, got %r" % (queue,))
    instances = {}
    for entry in sge.get("queues") or []:
        if isinstance(entry, Mapping) and entry.get("queue") == queue:
            instances[entry.get("host")] = entry
    loads, skipped = {}, {}
    for name, host in sge["hosts"].items():
        if queue is not None:
            instance = instances.get(name)
            if instance is None:
                skipped[name] = "no instance of queue %s" % queue
                continue
            states = instance.get("states")
        else:
            states = host.get("states") if isinstance(host, Mapping) else None
        bad = _unusable(states)
        if bad:
            skipped[name] = "queue state %s" % bad
            continue
        load, reason = _host_load(name, host)
        if load is None:
            skipped[name] = reason
        else:
            loads[name] = load
    return loads, skipped


def placement_distribution(data, queue=None, memory_weight=None, memory_exponent=None,
                           memory_limit=None, cpu_weight=None, cpu_exponent=None, cpu_limit=None,
                           ratio_digits=None):
    """Target job distribution of the hosts of ``data`` (a snapshot or ``{node: load}``)."""
    config = {"memory_weight": memory_weight, "memory_exponent": memory_exponent,
              "memory_limit": memory_limit, "cpu_weight": cpu_weight, "cpu_exponent": cpu_exponent,
              "cpu_limit": cpu_limit, "ratio_digits": ratio_digits}
    if isinstance(data, Mapping) and "hosts" in data:
        loads, skipped = snapshot_loads(data, queue)
        if not loads:
            raise AnsibleFilterError(
                "placement_distribution: no usable host%s in the snapshot (%s)"
                % (" for queue %s" % queue if queue else "",
                   "; ".join("%s: %s" % item for item in sorted(skipped.items())) or "no hosts"))
    elif isinstance(data, Mapping):
        if queue is not None:
            raise AnsibleFilterError("placement_distribution: queue applies to a cluster snapshot "
                                     "(ansible_facts.sge) only")
        loads, skipped = data, {}
    else:
        raise AnsibleFilterError(
            "placement_distribution: the input must be the cluster snapshot ansible_facts.sge or a "
            "mapping of node name to load, got %s" % type(data).__name__)
    try:
        result = placement.distribution(loads, config)
    except placement.PlacementError as exc:
        raise AnsibleFilterError("placement_distribution: %s" % exc)
    result["skipped"] = skipped
    result["queue"] = queue
    return result


def placement_next_hosts(data, count=1, offset=0):
    """The hosts for the next ``count`` jobs, after ``offset`` jobs already placed by ``data``."""
    try:
        return placement.dispatch(data, count, offset=offset)
    except placement.PlacementError as exc:
        raise AnsibleFilterError("placement_next_hosts: %s" % exc)


def placement_decisions(data, count=1, offset=0, log_level="none"):
    """``{"hosts": [...], "log": [...]}``: the hosts for the next ``count`` jobs and the log lines."""
    if log_level is None:
        log_level = "none"
    try:
        return placement.decide(data, count, offset=offset, log_level=log_level)
    except placement.PlacementError as exc:
        raise AnsibleFilterError("placement_decisions: %s" % exc)


class FilterModule(object):
    """Weighted job placement filters of gridengine.balancer."""

    def filters(self):
        return {
            "placement_distribution": placement_distribution,
            "placement_next_hosts": placement_next_hosts,
            "placement_decisions": placement_decisions,
        }
