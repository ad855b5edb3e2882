# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gridengine.balancer.burst_plan: which waiting home jobs go to the burst partner.

Runs ``policy/burst.py``'s ``route`` on the home cell's facts, its accounting (run-time history)
and the partner cell's facts, and turns the decisions into Grid Engine changes the playbook makes
with ``qalter``: a job sent to the partner gets the transfer queue's boolean complex
(``remote=true``) added to its hard resource list, which the transfer queue requires
(``transfer_queue_remote_requestable: FORCED``), and the context mark ``tq_burst=1``; a job sent earlier that waits at home again (the
starter pulled it back, or the partner stopped answering) and that the rule now keeps at home gets
its own list back. The jobs sent are kept in ``state`` (job number -> the hard resource list it
had), so that a user's own ``-l remote=true`` is never taken away. Changes nothing itself.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_usage import (
    UsageError,
    parse_qacct_utc,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import burst

STATE_SCHEMA = 1
# The job context variable that marks a job this plan sent: the transfer starter's pull-back gives
# such a job its own requests back (plugins/module_utils/transfer.py, Transfer.withdraw_burst).
MARK = "tq_burst"
# A value written back into a hard resource list: what Grid Engine prints for one (no comma, which
# separates requests, no '=', no white space or control character).
_REQUEST_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")
_REQUEST_VALUE = re.compile(r"^[^\s,=\x00-\x1f\x7f]+\Z")


def run_times(qacct):
    """Run times in seconds (end - start, one per job task) from ``qacct -j`` text run with TZ=UTC."""
    seen = {}
    for rec in parse_qacct_utc(qacct or ""):
        start, end = rec.get("start_time"), rec.get("end_time")
        if start is None or end is None or end < start or start <= 0:
            continue
        key = (rec.get("jobnumber"), rec.get("taskid"))
        seen[key] = max(seen.get(key, 0.0), float(end) - float(start))
    return sorted(seen.values())


def request_list(requests):
    """``name=value,...`` of a job's hard requests, in a stable order; BurstError on a name or value
    that would not survive the round trip through ``qalter -l``."""
    parts = []
    for name in sorted(requests or {}):
        value = str(requests[name])
        if not _REQUEST_NAME.match(name) or not _REQUEST_VALUE.match(value):
            raise burst.BurstError("job request %r=%r cannot be written back with qalter -l" % (name, value))
        parts.append("%s=%s" % (name, value))
    return ",".join(parts)


def plan(args):
    home = args.get("home")
    partner_facts = args.get("partner")
    if not isinstance(home, dict) or not isinstance(partner_facts, dict):
        raise AnsibleActionFail("burst_plan: home and partner must be ansible_facts.sge of the two cells")
    state = args.get("state")
    state = {} if state is None else state
    routed = state.get("routed") if isinstance(state, dict) else None
    routed = {} if routed is None else routed
    if not isinstance(state, dict) or not isinstance(routed, dict) or \
            not all(isinstance(v, str) for v in routed.values()):
        raise AnsibleActionFail("burst_plan: state must be a dict (read with gridengine.balancer.balancer_state) "
                                "whose routed maps job numbers to resource lists")
    complex_name = args.get("remote_complex") or "remote"
    if not _REQUEST_NAME.match(complex_name):
        raise AnsibleActionFail("burst_plan: remote_complex must be a complex name, got %r" % complex_name)
    try:
        history = run_times(args.get("qacct"))
    except (UsageError, TypeError, ValueError) as exc:
        raise AnsibleActionFail("burst_plan: qacct: %s" % exc)
    try:
        nodes = int(args.get("partner_nodes"))
        slots = int(args.get("slots_per_node"))
    except (TypeError, ValueError):
        raise AnsibleActionFail("burst_plan: partner_nodes and slots_per_node must be whole numbers")
    if nodes < 0 or slots < 1:
        raise AnsibleActionFail("burst_plan: partner_nodes must be >= 0 and slots_per_node >= 1")

    routed = dict((str(k), v) for k, v in routed.items())
    pending = dict((str(j.get("id")), j) for j in home.get("pending") or ())
    running = set(str(j.get("id")) for j in home.get("running") or ())
    # sent jobs that have not reached the partner yet count as its committed slots
    waiting_sent = sum(int(j.get("slots") or 1) * int(j.get("task_count") or 1)
                       for i, j in pending.items() if i in routed)
    try:
        out = burst.route(home, history, {
            "max_nodes": nodes, "slots_per_node": slots,
            "committed_slots": burst.partner_demand(partner_facts) + waiting_sent},
            args.get("config") or {})
    except burst.BurstError as exc:
        raise AnsibleActionFail("burst_plan: %s" % exc)

    send, recall, notes = [], [], []
    for decision in out["decisions"]:
        job_id = str(decision["id"])
        job = pending.get(job_id) or {}
        requests = dict(job.get("hard_requests") or {})
        asked = str(requests.get(complex_name, "")).lower() in ("true", "1", "yes")
        if decision["to"] == burst.PARTNER and not asked:
            try:
                own = request_list(requests)
            except burst.BurstError as exc:
                notes.append("job %s stays: %s" % (job_id, exc))
                continue
            requests[complex_name] = "true"
            resources = request_list(requests)
            send.append({"id": job_id, "resources": resources, "reason": decision["reason"],
                         "qalter": ["-l", resources, "-ac", MARK + "=1", job_id]})
            routed[job_id] = own
        elif decision["to"] == burst.HOME and asked and job_id in routed:
            recall.append({"id": job_id, "resources": routed[job_id], "reason": decision["reason"],
                           "qalter": ["-l", routed[job_id], "-dc", MARK, job_id]})
    for item in recall:
        del routed[item["id"]]
    # a job that left the home pending list (started in the transfer queue or at home, or deleted)
    # no longer needs its record, except while it runs: a pulled-back job comes back pending
    kept = dict((k, v) for k, v in routed.items() if k in pending or k in running)
    return {
        "send": send,
        "recall": recall,
        "decisions": out["decisions"],
        "home_free": out["home_free"],
        "partner_room": out["partner_room"],
        "mean_run": out["mean_run"],
        "history_jobs": len(history),
        "notes": notes,
        "msg": "%s; %d sent, %d called back" % (out["reason"], len(send), len(recall)),
        "state": {"schema": STATE_SCHEMA, "routed": kept},
    }


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("home", "partner", "qacct", "state", "partner_nodes", "slots_per_node",
                             "config", "remote_complex"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        unknown = set(self._task.args) - self._VALID_ARGS
        if unknown:
            raise AnsibleActionFail("burst_plan: unknown argument(s) %s" % ", ".join(sorted(unknown)))
        result.update(plan(self._task.args))
        result["changed"] = False
        return result
