# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind gridengine.balancer.elastic_plan (documentation: plugins/modules/elastic_plan.py).

One poll of the elastic load balancer, on the controller:

1. validate the task's arguments against the argument spec built from the module's DOCUMENTATION
   (one source of truth for docs and validation);
2. read the state on the task's host (the qmaster) with gridengine.balancer.balancer_state;
3. ``elastic.decide(snapshot, state, config, now=snapshot["taken_at"], launches=...)`` (``launches``:
   the provider's launch back-off and failures, when the task has them);
4. write the new state back with the same module (not in check mode);
5. append the statistics row and redraw the plots on the controller (not in check mode), with the
   node-hours and cost of the interval since the previous row when there is an instance_hour_price;
6. return the plan (without its state), ``changed`` = the state file changed, and a readable ``msg``.
"""

from __future__ import annotations

import json
import os

import yaml

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gridengine.balancer.plugins.modules import elastic_plan as _doc
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    check_cluster_name,
    default_path,
    dumps,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic
from ansible_collections.gridengine.balancer.plugins.plugin_utils import stats as stats_mod

display = Display()

STATE_MODULE = "gridengine.balancer.balancer_state"
_SPEC_KEYS = ("type", "required", "default", "choices", "elements", "aliases", "no_log")


def argument_spec_from_doc(documentation):
    """Build an AnsibleModule-style argument spec from a module's DOCUMENTATION options."""

    def convert(options):
        spec = {}
        for name, opt in (options or {}).items():
            entry = {k: opt[k] for k in _SPEC_KEYS if k in opt}
            if "suboptions" in opt:
                entry["options"] = convert(opt["suboptions"])
            spec[name] = entry
        return spec

    return convert(yaml.safe_load(documentation).get("options"))


ARGUMENT_SPEC = argument_spec_from_doc(_doc.DOCUMENTATION)
POLICY_OPTIONS = tuple(k for k in ARGUMENT_SPEC if k in elastic.OPTIONS)


def save_state(execute_state, path, old_state, new_state, check_mode=False, diff=False,
               failed="the state could not be saved (%s): %s"):
    """Write ``new_state`` to ``path`` on the task's host with balancer_state (``execute_state``);
    in check mode only compare it with ``old_state``. Returns ``(saved, res)``: ``saved`` holds the
    task result's ``changed`` and, in diff mode, its ``diff``; ``res`` is balancer_state's result
    (None in check mode). A failed write raises AnsibleActionFail(``failed % (path, msg)``).
    Shared by the decisions that keep a state file (elastic_plan, reconcile_plan)."""
    if check_mode:
        saved = {"changed": dumps(old_state) != dumps(new_state)}
        if diff and saved["changed"]:
            saved["diff"] = {"before": dumps(old_state), "after": dumps(new_state),
                             "before_header": path, "after_header": path}
        return saved, None
    res = execute_state({"path": path, "state": "present", "content": new_state})
    if res.get("failed"):
        raise AnsibleActionFail(failed % (path, res.get("msg")))
    saved = {"changed": bool(res.get("changed"))}
    if diff and res.get("diff"):
        saved["diff"] = res["diff"]
    return saved, res


def format_msg(cluster, plan):
    lines = ["%s: %s" % (cluster, plan["summary"])]
    lines.extend("- %s" % item["reason"] for item in plan["items"])
    return "\n".join(lines)


def plan_poll(args, execute_state, check_mode=False, diff=False, home=None):
    """The action's core, without Ansible's task machinery.

    ``args``: validated task arguments.  ``execute_state(module_args) -> result``: runs the
    balancer_state module on the task's host.  Raises AnsibleActionFail; returns the task result.
    """
    cluster = args["cluster"]
    try:
        check_cluster_name(cluster)
    except ValueError as exc:
        raise AnsibleActionFail(str(exc))
    snapshot = args.get("snapshot")
    if not snapshot:
        raise AnsibleActionFail("snapshot: missing or empty, no snapshot of the cluster was read (did "
                                "sge_queue_facts fail?); no decision made, nothing written")
    try:
        elastic.check_snapshot(snapshot)
    except ValueError as exc:
        raise AnsibleActionFail("%s; no decision made, nothing written" % exc)
    if "complete" in snapshot and snapshot["complete"] is not True:
        # a producer that could not read everything says so; never decide from part of a cluster
        raise AnsibleActionFail("snapshot: flagged incomplete (complete: %r%s); no decision made, nothing written"
                                % (snapshot["complete"], "; %s" % snapshot["errors"] if snapshot.get("errors") else ""))
    now = snapshot.get("taken_at")
    if not isinstance(now, (int, float)) or isinstance(now, bool):
        raise AnsibleActionFail("snapshot: 'taken_at' (the qmaster's clock) is missing; no decision made, nothing written")
    config = {k: args.get(k) for k in POLICY_OPTIONS}
    try:
        config = elastic.validate_config(config)
        price = stats_mod.check_price(args.get("instance_hour_price"))
    except ValueError as exc:
        raise AnsibleActionFail(str(exc))
    state_path = args.get("state_path") or default_path(cluster)

    # 1. the state, on the qmaster
    res = execute_state({"path": state_path, "state": "read"})
    if res.get("failed") or not isinstance(res.get("content"), dict):
        raise AnsibleActionFail("cannot read the balancer state (%s): %s" % (state_path, res.get("msg", "no content returned")))
    old_state = res["content"]
    if old_state.get("last_poll") == now:
        # facts outlive a failed task: a poll whose sge_queue_facts failed (and was ignored)
        # would otherwise decide again from the previous poll's snapshot
        raise AnsibleActionFail("snapshot: taken at %s, the time of the poll the state already records: "
                                "it is the previous poll's snapshot, not a new one (did sge_queue_facts "
                                "fail?); no decision made, nothing written" % now)

    # 2. the decision (pure)
    try:
        plan = elastic.decide(snapshot, old_state, config, now, launches=args.get("launches"))
    except ValueError as exc:
        raise AnsibleActionFail("%s; nothing written" % exc)
    new_state = plan.pop("state")
    # plan values come from the snapshot (possibly tagged by the templar): make them plain data
    plan = json.loads(json.dumps(plan))
    new_state = json.loads(json.dumps(new_state))

    result = {"plan": plan, "state_path": state_path, "msg": format_msg(cluster, plan)}
    warnings = list(plan["warnings"])
    corrupt = res.get("corrupt")
    if corrupt:
        result["state_corrupt"] = corrupt
        warnings.insert(0, "%s; %s; this poll decided from an empty state: every node's idle time starts "
                           "now, so none is removed before it has been seen idle for idle_time (docs/"
                           "reliability/state-faults.md)" % (
                               corrupt.get("problem"), "moved it aside to %s" % corrupt["moved_to"]
                               if corrupt.get("moved_to") else "it would be moved aside"))

    # 3. save the state (check mode: only say whether it would change)
    saved, res = save_state(execute_state, state_path, old_state, new_state, check_mode, diff,
                            "the plan was computed but the state could not be saved (%s): %s; do not act on this plan")
    result.update(saved)
    if res is not None and res.get("schema_copy"):
        warnings.append("the state file was written by a newer balancer (schema %r); it was kept as %s"
                        % (old_state.get("schema"), res["schema_copy"]))

    # 4. statistics on the controller (never in check mode; a failure here only warns)
    if not check_mode and (config["dump_stats"] or config["plot_stats"]):
        base = stats_mod.default_dir(cluster, home=home)
        stats_file = os.path.expanduser(config["stats_file"] or os.path.join(base, stats_mod.STATS_FILE_NAME))
        try:
            row = stats_mod.write_row(stats_file, plan["stats"], instance_hour_price=price)
            result["stats_file"] = stats_file
            if row.get("total_node_hours") is not None:
                result["cost"] = dict((k, row[k]) for k in stats_mod.COST_COLUMNS)
                result["cost"]["instance_hour_price"] = price
        except (OSError, ValueError) as exc:
            warnings.append("statistics not written to %s: %s" % (stats_file, exc))
            stats_file = None
        if config["plot_stats"] and stats_file:
            out_dir = os.path.expanduser(config["plot_output_dir"] or base)
            try:
                result["plots"] = stats_mod.write_plots(stats_file, out_dir, cluster=cluster)
            except ImportError as exc:
                warnings.append("plots not written: matplotlib is not available on the controller (%s)" % exc)
            except (OSError, ValueError) as exc:
                warnings.append("plots not written to %s: %s" % (out_dir, exc))

    if warnings:
        result["warnings"] = warnings
    return result


class StateAction(ActionBase):
    """The task machinery of a decision that keeps its state on the task's host (elastic_plan,
    reconcile_plan): the task's arguments validated against ``argument_spec``, then
    ``core(args, execute_state, check_mode=..., diff=...)``, where ``execute_state(module_args)``
    runs balancer_state on the task's host."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    argument_spec = None
    core = None

    def run(self, tmp=None, task_vars=None):
        if task_vars is None:
            task_vars = {}
        result = super(StateAction, self).run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=self.argument_spec)[1]

        def execute_state(module_args):
            return self._execute_module(module_name=STATE_MODULE, module_args=module_args, task_vars=task_vars)

        result.update(self.core(args, execute_state, check_mode=bool(self._task.check_mode),
                                diff=bool(self._task.diff)))
        return result


class ActionModule(StateAction):

    argument_spec = ARGUMENT_SPEC
    core = staticmethod(plan_poll)
