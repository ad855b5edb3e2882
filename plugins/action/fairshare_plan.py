# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gridengine.balancer.fairshare_plan: one bank-algorithm round on the controller.

Arguments: ``snapshot`` (``ansible_facts.sge`` from sge_queue_facts), ``desired``
({project: percent}), ``current`` (``qconf -srqs`` text of the set now in force, or empty),
``profile`` (default/paper). Returns ``limits`` for gridengine.balancer.sge_rqs plus the
round's figures (``bank.plan_slots``). Changes nothing itself (``changed`` is false).
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_rqs import (
    RqsError,
    parse_rqs,
    parse_rule,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import bank


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("snapshot", "desired", "current", "profile"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        unknown = set(args) - self._VALID_ARGS
        if unknown:
            raise AnsibleActionFail("fairshare_plan: unknown argument(s) %s"
                                    % ", ".join(sorted(unknown)))
        snapshot = args.get("snapshot")
        desired = args.get("desired")
        if not isinstance(snapshot, dict) or not isinstance(desired, dict):
            raise AnsibleActionFail("fairshare_plan: snapshot and desired must be dicts")
        previous = []
        current = args.get("current") or ""
        if current.strip().startswith("{"):
            try:
                for rule in parse_rqs(current)["limits"]:
                    parsed = parse_rule(rule)
                    if parsed:
                        previous.append(dict(project=parsed[0], host=parsed[1],
                                             slots=parsed[2]))
            except RqsError as exc:
                raise AnsibleActionFail("fairshare_plan: current: %s" % exc)
        try:
            plan = bank.plan_slots(snapshot, dict((k, float(v)) for k, v in desired.items()),
                                   previous, profile=args.get("profile", "default"))
        except (bank.BankError, ValueError, TypeError) as exc:
            raise AnsibleActionFail("fairshare_plan: %s" % exc)
        result.update(plan)
        result["changed"] = False
        return result
