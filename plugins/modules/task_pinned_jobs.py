#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: task_pinned_jobs
short_description: Re-point pending Grid Engine jobs of a task from its old host to its new one
version_added: 0.1.0
description:
  - Work on a task of the task registry is a Grid Engine job named C(<job_name_prefix><job>.<task>).
    A pending one is pinned to a host by a hard queue request naming the host (C(-q all.q@node001))
    or a hard host name request (C(-l hostname=node001), also written C(-l h=node001)).
  - When the task's live copy moved from O(source) to O(target), the module reads the jobs
    (C(qstat -u '*' -f -r -xml)) and re-points each pending job of that task pinned to O(source)
    with C(qalter) - C(-q) with the job's whole hard queue list, each C(<queue>@<source>) as
    C(<queue>@<target>); C(-l) with the job's whole hard resource list, the host name set to
    O(target) and every other request kept. Soft requests are not touched.
  - Used by the role C(gridengine.balancer.task_rebalance) when a move finishes, also when it
    finishes a move a dead controller left in flight (the jobs are read again, so the record of the
    move needs no job ids).
  - Idempotent - a re-pointed job is pinned to O(target), so a second run finds nothing to do. Jobs
    of other tasks are never changed; nor is a job with a running task (an array job partly
    running), nor, with O(owners), a job of another user; those are listed in RV(skipped).
  - A host name request that is an expression (C(node00*)) or another spelling of the host (with a
    domain) is not a pin to O(source) and is left alone.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.diff
  - gridengine.balancer.sge
attributes:
  check_mode:
    details: Reads the jobs and reports what C(qalter) would change, without running it.
options:
  job:
    description: Job of the task registry (not a Grid Engine job).
    type: str
    required: true
  task:
    description: Task of O(job).
    type: str
    required: true
  source:
    description: Host the task's live copy left.
    type: str
    required: true
  target:
    description: Host that holds the task's live copy now.
    type: str
    required: true
  job_name_prefix:
    description: Grid Engine jobs named C(<prefix><job>.<task>) work on that task.
    type: str
    default: task.
  owners:
    description: Only jobs of these users are re-pointed; empty - jobs of any user named for the task.
    type: list
    elements: str
    default: []
  command_timeout:
    description: Seconds each C(qstat) or C(qalter) may run (0 - no limit).
    type: int
    default: 120
notes:
  - Run it on the qmaster host (or a submit host whose user may alter the jobs, a manager for
    other users' jobs).
seealso:
  - module: gridengine.balancer.task_registry
  - name: Grid Engine qalter(1)
    description: The options C(-q) and C(-l) replace the job's hard lists.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qalter.html
"""

EXAMPLES = r"""
- name: Re-point pending work of logs/3 from node001 to node003
  gridengine.balancer.task_pinned_jobs:
    job: logs
    task: "3"
    source: node001
    target: node003
    owners: [etl]
"""

RETURN = r"""
jobs:
  description: The jobs re-pointed (in check mode - that would be).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Grid Engine job number.
      type: int
      sample: 304
    name:
      description: Job name.
      type: str
      sample: task.logs.3
    owner:
      description: Job owner.
      type: str
    before:
      description: The hard queue list and hard resource requests before.
      type: dict
      sample: {hard_queues: [all.q@node001], hard_requests: {}}
    after:
      description: The same after.
      type: dict
      sample: {hard_queues: [all.q@node003], hard_requests: {}}
    args:
      description: The options given to C(qalter) before the job number.
      type: list
      elements: str
      sample: [-q, all.q@node003]
skipped:
  description: Pending jobs of the task pinned to O(source) that were left, each with C(id), C(name), C(owner), C(reason).
  returned: always
  type: list
  elements: dict
msg:
  description: What was done, one line per job.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import (
    SgeCommandError,
    find_command,
    sge_argument_spec,
    sge_options_error,
    qstat_argv,
    read_settings,
    run_sge,
    sge_arch,
    sge_environment,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import SgeParseError, parse_qstat
from ansible_collections.gridengine.balancer.plugins.module_utils.task_pinned import describe, plan_repoint
from ansible_collections.gridengine.balancer.plugins.module_utils.task_registry import HOST_RE
from ansible_collections.gridengine.balancer.plugins.module_utils.task_data import NAME_RE


def _check(module):
    params = module.params
    for key in ("job", "task"):
        if not NAME_RE.match(params[key]):
            module.fail_json(msg="%s: %r is not a job or task name (1-64 letters, digits, '_' or '-')" % (key, params[key]))
    for key in ("source", "target"):
        if len(params[key]) > 253 or not HOST_RE.match(params[key]):
            module.fail_json(msg="%s: %r is not a host name (RFC 1123)" % (key, params[key]))
    if "\n" in params["job_name_prefix"] or "@" in params["job_name_prefix"]:
        module.fail_json(msg="job_name_prefix: %r may hold no newline and no '@'" % params["job_name_prefix"])
    msg = sge_options_error(params["sge_root"], params["sge_cell"], params["sge_qmaster_port"])
    if msg:
        module.fail_json(msg=msg)
    if params["command_timeout"] < 0:
        module.fail_json(msg="command_timeout must be a number of seconds >= 0, got %s" % params["command_timeout"])


def main():
    argument_spec = sge_argument_spec(
        job=dict(type="str", required=True),
        task=dict(type="str", required=True),
        source=dict(type="str", required=True),
        target=dict(type="str", required=True),
        job_name_prefix=dict(type="str", default="task."),
        owners=dict(type="list", elements="str", default=[]),
        command_timeout=dict(type="int", default=120),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    _check(module)
    params = module.params
    timeout = params["command_timeout"] or None
    try:
        settings = read_settings(params["sge_root"], params["sge_cell"])
        environ = sge_environment(params["sge_root"], params["sge_cell"], params["sge_qmaster_port"], settings)
        arch = sge_arch(params["sge_root"], settings)
        qstat = find_command(module, "qstat", params["sge_root"], arch)
        jobs = parse_qstat(run_sge(module, qstat_argv(qstat), environ, timeout, require_output=True))
    except (SgeCommandError, SgeParseError) as exc:
        module.fail_json(msg=str(exc))
    changes, skipped = plan_repoint(jobs, params["job"], params["task"], params["source"], params["target"],
                                    params["job_name_prefix"], params["owners"])
    verb = "would re-point " if module.check_mode else "re-pointed "
    result = {"changed": bool(changes), "jobs": changes, "skipped": skipped,
              "msg": "\n".join(verb + describe(c) for c in changes)
              or "no pending job of %s/%s is pinned to %s" % (params["job"], params["task"], params["source"])}
    if module._diff:
        result["diff"] = {"before": "".join("%s: %s\n" % (c["id"], " ".join(_lists(c["before"]))) for c in changes),
                          "after": "".join("%s: %s\n" % (c["id"], " ".join(_lists(c["after"]))) for c in changes)}
    if changes and not module.check_mode:
        done = []
        try:
            qalter = find_command(module, "qalter", params["sge_root"], arch)
            for change in changes:
                run_sge(module, [qalter] + change["args"] + [str(change["id"])], environ, timeout)
                done.append(change)
        except SgeCommandError as exc:
            result.update(jobs=done, changed=bool(done))
            module.fail_json(msg="%s (re-pointed before it: %s; a new run re-points the rest)" % (
                exc, ", ".join(str(c["id"]) for c in done) or "none"), **{k: v for k, v in result.items() if k != "msg"})
    module.exit_json(**result)


def _lists(side):
    out = []
    if side["hard_queues"]:
        out.append("-q " + ",".join(side["hard_queues"]))
    if side["hard_requests"]:
        out.append("-l " + ",".join("%s=%s" % kv for kv in side["hard_requests"].items()))
    return out


if __name__ == "__main__":
    main()
