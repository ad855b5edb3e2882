# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gridengine.balancer.fairshare_plan: one fair-share round on the controller.

Arguments: ``snapshot`` (``ansible_facts.sge`` from sge_queue_facts), ``desired``
({project: percent}), ``current`` (``qconf -srqs`` text of the set now in force, or empty),
``profile`` (default/paper), ``allocation`` (bank/reserves), ``temporal`` (none/compensate),
``temporal_retain``, ``hostgroups`` ({@group: [hosts]}), ``state`` (the fair-share state read
with gridengine.balancer.balancer_state), ``qacct`` (``qacct -j -b ...`` text, run with
``TZ=UTC``). Returns ``limits`` for gridengine.balancer.sge_rqs, the round's figures
(``bank.plan_slots``) and ``state``, the content to save. Changes nothing itself
(``changed`` is false).
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_rqs import (
    RqsError,
    parse_rqs,
    parse_rule,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_usage import (
    UsageError,
    parse_qacct_utc,
    usage_per_project,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank

STATE_SCHEMA = 1


def previous_limits(current):
    """``[{project, host, slots}]`` from ``qconf -srqs`` text (empty: none)."""
    previous = []
    current = current or ""
    if current.strip().startswith("{"):
        for rule in parse_rqs(current)["limits"]:
            parsed = parse_rule(rule)
            if parsed:
                previous.append(dict(project=parsed[0], host=parsed[1], slots=parsed[2]))
    return previous


def measured_usage(snapshot, state, qacct):
    """``(usage, window)``: average slots per project and host since the last round, or
    ``(None, None)`` when there is no last round or no accounting text."""
    last = (state or {}).get("last_round")
    now = snapshot.get("taken_at")
    if qacct is None or last is None or now is None or float(now) <= float(last):
        return None, None
    records = parse_qacct_utc(qacct)
    return usage_per_project(records, snapshot.get("running"), last, now), \
        [float(last), float(now)]


def plan(args):
    """The round (pure apart from parsing); raises AnsibleActionFail naming the bad input."""
    snapshot = args.get("snapshot")
    desired = args.get("desired")
    if not isinstance(snapshot, dict) or not isinstance(desired, dict):
        raise AnsibleActionFail("fairshare_plan: snapshot and desired must be dicts")
    hostgroups = args.get("hostgroups") or None
    if hostgroups is not None and not isinstance(hostgroups, dict):
        raise AnsibleActionFail("fairshare_plan: hostgroups must be a mapping host group -> "
                                "list of hosts")
    state = args.get("state") or {}
    if not isinstance(state, dict):
        raise AnsibleActionFail("fairshare_plan: state must be a dict (the content read with "
                                "gridengine.balancer.balancer_state)")
    temporal = args.get("temporal", "none")
    allocation = args.get("allocation", "bank")
    try:
        retain = float(args.get("temporal_retain", 1.0))
    except (TypeError, ValueError):
        raise AnsibleActionFail("fairshare_plan: temporal_retain must be a number in [0, 1]")
    try:
        previous = previous_limits(args.get("current"))
    except RqsError as exc:
        raise AnsibleActionFail("fairshare_plan: current: %s" % exc)
    try:
        usage, window = measured_usage(snapshot, state, args.get("qacct"))
    except (UsageError, TypeError, ValueError) as exc:
        raise AnsibleActionFail("fairshare_plan: qacct: %s" % exc)
    same = (state.get("temporal") == temporal and state.get("allocation") == allocation
            and sorted(state.get("hostgroups") or []) == sorted(hostgroups or []))
    accounts = state.get("accounts") if temporal == "compensate" and same else None
    try:
        result = bank.plan_slots(snapshot, dict((k, float(v)) for k, v in desired.items()),
                                 previous, accounts=accounts,
                                 profile=args.get("profile", "default"), temporal=temporal,
                                 retain=retain, allocation=allocation, usage=usage,
                                 hostgroups=hostgroups)
    except (bank.BankError, ValueError, TypeError) as exc:
        raise AnsibleActionFail("fairshare_plan: %s" % exc)
    projects = list(desired)
    if hostgroups:
        kept = dict(result["group_accounts"])
        kept["top"] = dict(zip(projects, result["accounts"]))
        for name in result["failed_groups"]:
            # a failed manager's accounts wait for its return
            if accounts and isinstance(accounts.get(name), dict):
                kept[name] = accounts[name]
    else:
        kept = {"cluster": dict(zip(projects, result["accounts"]))}
    if not same and state.get("accounts"):
        result.setdefault("remarks", []).append(
            "the accounts in the state were kept for another temporal/allocation/hostgroups "
            "setting; they start again from zero")
    result["usage_window"] = window
    result["usage_source"] = "qacct" if usage is not None else "snapshot"
    result["state"] = dict(
        schema=STATE_SCHEMA,
        last_round=snapshot.get("taken_at"),
        temporal=temporal,
        allocation=allocation,
        hostgroups=sorted(hostgroups or []),
        failed_groups=result["failed_groups"],
        accounts=kept,
    )
    return result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("snapshot", "desired", "current", "profile", "allocation",
                             "temporal", "temporal_retain", "hostgroups", "state", "qacct"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        unknown = set(args) - self._VALID_ARGS
        if unknown:
            raise AnsibleActionFail("fairshare_plan: unknown argument(s) %s"
                                    % ", ".join(sorted(unknown)))
        for name, choices in (("profile", bank.PROFILES), ("allocation", bank.ALLOCATIONS),
                              ("temporal", bank.TEMPORAL_MODES)):
            if name in args and args[name] not in choices:
                raise AnsibleActionFail("fairshare_plan: %s: expected one of %s, got %r"
                                        % (name, ", ".join(choices), args[name]))
        result.update(plan(args))
        result["changed"] = False
        return result
