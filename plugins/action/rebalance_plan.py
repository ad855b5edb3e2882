# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gridengine.balancer.rebalance_plan: plan task moves on the controller.

Builds the spawn snapshot from the task registry, the nodes' task_data_info results and the
Grid Engine facts (plugin_utils/task_snapshot.py), runs the pure policy (policy/spawn.py) and,
with ``mode: validate``, re-checks planned moves against the current state (policy/spawn_exec.py).
Changes nothing (``changed`` is false). Documentation: plugins/modules/rebalance_plan.py.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gridengine.balancer.plugins.plugin_utils import task_snapshot
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import spawn, spawn_exec

MODES = ("round", "host", "job", "join", "drain", "validate")


def _loads(snapshot):
    out = {}
    for name, h in snapshot["hosts"].items():
        cap = float(h["disk_used"]) + float(h["disk_free"])
        out[name] = round(float(h["disk_used"]) / cap, 6) if cap > 0 else None
    return out


def _after(snapshot, moves):
    hosts = {n: dict(h) for n, h in snapshot["hosts"].items()}
    for m in moves:
        for name, sign in ((m["source"], -1), (m["target"], 1)):
            if name in hosts:
                hosts[name]["disk_used"] = hosts[name]["disk_used"] + sign * m["bytes"]
                hosts[name]["disk_free"] = hosts[name]["disk_free"] - sign * m["bytes"]
    return _loads({"hosts": hosts})


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("registry", "scans", "sge", "mode", "host", "job", "options", "moves",
                             "job_name_prefix", "down", "now"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        unknown = set(args) - self._VALID_ARGS
        if unknown:
            raise AnsibleActionFail("rebalance_plan: unknown argument(s) %s" % ", ".join(sorted(unknown)))
        mode = args.get("mode", "round")
        if mode not in MODES:
            raise AnsibleActionFail("rebalance_plan: mode must be one of %s, got %r" % (", ".join(MODES), mode))
        if mode in ("host", "join", "drain") and not args.get("host"):
            raise AnsibleActionFail("rebalance_plan: mode %s needs host" % mode)
        if mode == "job" and not args.get("job"):
            raise AnsibleActionFail("rebalance_plan: mode job needs job")
        options = dict(args.get("options") or {})
        now = args.get("now")
        try:
            now = time.time() if now is None else float(now)
            config = spawn.validate_config(options)
            snapshot, extra = task_snapshot.build(
                args.get("registry") or {}, args.get("scans") or {}, sge=args.get("sge"), now=now,
                prefix=args.get("job_name_prefix") or task_snapshot.DEFAULT_PREFIX,
                down=args.get("down") or ())
        except (ValueError, TypeError, KeyError) as exc:
            raise AnsibleActionFail("rebalance_plan: %s" % exc)
        result.update(changed=False, mode=mode, hosts_before=_loads(snapshot), snapshot_warnings=extra["warnings"])
        try:
            if mode == "validate":
                accepted, rejected = spawn_exec.validate_plan({"moves": args.get("moves") or []}, snapshot)
                result.update(accepted=accepted, rejected=[dict(m, rejected=why) for m, why in rejected])
                return result
            if mode == "round":
                plan = spawn.plan_round(snapshot, config)
            elif mode == "host":
                plan = spawn.rebalance_host(snapshot, args["host"], config)
            elif mode == "job":
                plan = spawn.rebalance_job(snapshot, str(args["job"]), config)
            elif mode == "join":
                plan = spawn.plan_join(snapshot, args["host"], config)
            else:
                plan = spawn.plan_drain(snapshot, args["host"], config)
        except ValueError as exc:
            raise AnsibleActionFail("rebalance_plan: %s" % exc)
        for move in plan["moves"] + plan.get("repairs", []):
            move["task"] = str(move["task"])
            move["pinned_jobs"] = task_snapshot.pinned_to(extra, move["job"], move["task"], move["source"])
        result.update(plan)
        result["hosts_after"] = _after(snapshot, plan["moves"])
        result["warnings_policy"] = result.pop("warnings", [])
        return result
