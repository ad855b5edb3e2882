#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_queue_facts
short_description: Read the state of a Grid Engine cluster as a compact snapshot
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
description:
  - Runs C(qstat -u '*' -f -r -xml) (with O(projects), C(-ext) too) and C(qhost -q -xml) on the Grid Engine qmaster host,
    parses both there with the Python standard library and returns a compact snapshot of hosts,
    queue instances, pending and running jobs as RV(ansible_facts.sge).
  - With O(lookback_window) it also runs C(qacct -j -b YYMMDDhhmm) and summarises the jobs
    that finished within the window.
  - The snapshot is the input of every decision plugin of this collection; its layout is
    described in C(docs/snapshot.md).
  - The module only reads. It never reports a change.
options:
  lookback_window:
    description:
      - Minutes to look back in the accounting file with C(qacct).
      - When set, RV(ansible_facts.sge.accounting) summarises the jobs that ended within the
        window. When not set, C(qacct) is not run and C(accounting) is not returned.
      - A cluster without an accounting file yet has no finished jobs; that is not an error.
    type: int
  queues:
    description:
      - Cluster queue names to restrict the snapshot to, for example C(all.q).
      - Queue instances, running jobs (by their master queue) and hosts (with an instance of one
        of these queues) are restricted to them; pending jobs are kept unless all their
        C(-q) requests name other queues.
      - Default is every queue.
    type: list
    elements: str
  projects:
    description:
      - Also read each job's project (and department) by adding C(-ext) to C(qstat), so that
        running and pending jobs carry C(project).
      - Plain C(qstat -xml) prints no C(JB_project); the fair-share plan
        (M(gridengine.balancer.fairshare_plan), C(playbooks/fairshare.yml)) needs it, the elastic
        balancer does not. C(-ext) makes the output about half again as large.
    type: bool
    default: false
  command_timeout:
    description:
      - Seconds each Grid Engine command (C(qstat), C(qhost), C(qacct)) may run. One still
        running then is killed and the module fails; no snapshot is returned.
      - A qmaster that does not answer can leave C(qstat) waiting far longer than a poll
        interval, holding the balancer's lock all that time.
      - V(0) means no limit.
    type: int
    default: 120
notes:
  - Run it on the qmaster host (or a Grid Engine submit/admin host); the XML is parsed there and
    only the snapshot is sent back. C(qstat)'s listing is parsed as the command prints it, so a
    large cluster's output (over 130 MB at 10,000 hosts) is never held in memory whole.
  - Literal values of C($SGE_ROOT/$SGE_CELL/common/settings.sh) (architecture, qmaster port)
    are used when present; without a port there or in O(sge_qmaster_port), Grid Engine's own
    default (C(/etc/services)) applies.
  - All times are seconds since the epoch on the qmaster's clock. Grid Engine 6.2 prints local
    time stamps; they are converted with the local time zone of the host the module runs on.
  - C(qacct -b) selects jobs by their start time, so a job that started before the window and
    ended within it is not counted.
  - Any error running or parsing a command fails the module and returns no facts, so no
    decision is ever made from a snapshot that was not read. That includes a command that exits
    non-zero (a dead qmaster, whose clients print C(commlib error) or C(unable to contact
    qmaster)), one that exits 0 but prints nothing, one that outlives
    O(command_timeout), and output that does not parse (broken or truncated XML). The message
    names the command and ends with C(no snapshot returned).
  - A snapshot it returns carries C(complete=true); M(gridengine.balancer.elastic_plan) refuses a
    snapshot that says C(complete) is anything else, and one that is missing.
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
seealso:
  - name: Grid Engine qstat(1)
    description: Manual page of the command whose XML output is parsed.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qstat.html
"""

EXAMPLES = r"""
- name: Read the cluster state on the qmaster
  gridengine.balancer.sge_queue_facts:
  register: sge_state

- name: Only all.q, with the jobs finished in the last 3 hours, for a second cell
  gridengine.balancer.sge_queue_facts:
    sge_root: /opt/sge
    sge_cell: remote
    sge_qmaster_port: 6446
    queues:
      - all.q
    lookback_window: 180

- name: Show how many jobs wait
  ansible.builtin.debug:
    msg: "{{ ansible_facts.sge.pending | map(attribute='task_count') | sum }} tasks pending"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: success
  type: dict
  contains:
    sge:
      description: The cluster snapshot (see C(docs/snapshot.md)).
      returned: success
      type: dict
      contains:
        schema:
          description: Version of the snapshot layout.
          returned: success
          type: int
          sample: 1
        complete:
          description:
            - Always true in a snapshot this module returns (it returns none when it could not
              read everything). Consumers refuse a snapshot whose C(complete) is anything else.
          returned: success
          type: bool
          sample: true
        taken_at:
          description: Qmaster clock (seconds since the epoch) when C(qstat) ran.
          returned: success
          type: float
          sample: 1700000000.0
        flavour:
          description:
            - Grid Engine flavour, told by the schema URL of the XML output.
            - One of C(SGE 6.2), C(OGS 2011.11), C(SoGE 8.1), C(UGE 8.0-8.5), C(UGE 8.6), C(unknown).
          returned: success
          type: str
          sample: SoGE 8.1
        cell:
          description: Grid Engine cell.
          returned: success
          type: str
          sample: default
        hosts:
          description:
            - One entry per execution host (the C(global) pseudo-host excluded), keyed by host name.
            - Each entry has C(arch), C(num_proc), C(load_avg) (null when the execd does not
              report), C(mem_total) and C(mem_used) (bytes or null), C(slots_total),
              C(slots_used) and C(slots_reserved) (summed over the host's queue instances),
              C(states) (union of its queue instances' state letters), C(queues) (cluster queues
              with an instance on the host) and C(running_jobs) (job tasks using the host).
          returned: success
          type: dict
          sample:
            node001:
              arch: lx-amd64
              num_proc: 2
              load_avg: 0.01
              mem_total: 2147483648
              mem_used: 123456789
              slots_total: 2
              slots_used: 1
              slots_reserved: 0
              states: d
              queues: [all.q]
              running_jobs: 1
        queues:
          description: One entry per queue instance.
          returned: success
          type: list
          elements: dict
          contains:
            name:
              description: Queue instance name (C(queue@host)).
              type: str
              sample: all.q@node001
            queue:
              description: Cluster queue.
              type: str
              sample: all.q
            host:
              description: Host of the instance.
              type: str
              sample: node001
            qtype:
              description: Queue type letters (B batch, I interactive, P parallel).
              type: str
              sample: BIP
            slots_total:
              description: Slots of the instance.
              type: int
              sample: 2
            slots_used:
              description: Slots in use.
              type: int
              sample: 1
            slots_reserved:
              description: Slots reserved (null when Grid Engine does not report it).
              type: int
              sample: 0
            load_avg:
              description: Load average of the host (null when unknown).
              type: float
              sample: 0.01
            states:
              description: Queue state letters, for example C(d), C(au), C(E); empty when fine.
              type: str
              sample: ""
        pending:
          description:
            - Pending jobs, one entry per job and state (an array job whose tasks are partly
              held appears once per state).
          returned: success
          type: list
          elements: dict
          contains:
            id: &job_number
              description: Job number.
              type: int
              sample: 12
            name:
              description: Job name as given (data, never used to build a command).
              type: str
              sample: analysis
            owner:
              description: Job owner.
              type: str
              sample: tester
            project:
              description: Project, or null.
              type: str
            state:
              description: Grid Engine state letters (C(qw), C(hqw), C(Eqw), ...).
              type: str
              sample: qw
            priority:
              description: Normalised priority.
              type: float
              sample: 0.5
            submit_time:
              description: Submission time (seconds since the epoch).
              type: float
              sample: 1700000000.0
            tasks:
              description: Task range as Grid Engine prints it, or null for a non-array job.
              type: str
              sample: 1-1000000:1
            task_count:
              description: Number of tasks, counted from the range (never expanded).
              type: int
              sample: 1000000
            slots:
              description: Slots per task (parallel jobs, the minimum of the PE range).
              type: int
              sample: 1
            pe:
              description: Requested parallel environment, or null.
              type: str
            pe_range:
              description: Requested PE slot range (C(4) or C(2-8)), or null.
              type: str
            hard_requests:
              description: Hard resource requests (C(-l)), name to value.
              type: dict
              sample: {h_rt: "360"}
            hard_queues:
              description: Hard queue requests (C(-q)); empty when none.
              type: list
              elements: str
              sample: [all.q]
            held:
              description: Whether the state has a hold letter (C(h)).
              type: bool
              sample: false
            error:
              description: Whether the state has an error letter (C(E)).
              type: bool
              sample: false
        running:
          description:
            - Running job tasks, one entry per job and task; the rows Grid Engine prints per
              queue instance or per slot are merged.
          returned: success
          type: list
          elements: dict
          contains:
            id: *job_number
            task:
              description: Array task id, or null.
              type: str
              sample: "3"
            name:
              description: Job name as given.
              type: str
            owner:
              description: Job owner.
              type: str
            project:
              description: Project, or null.
              type: str
            state:
              description: State letters (C(r), C(t), C(Rr), C(s), C(S), C(T), C(dr), ...).
              type: str
              sample: r
            queue:
              description: Cluster queue of the master task.
              type: str
              sample: all.q
            host:
              description: Host of the master task.
              type: str
              sample: node001
            hosts:
              description: Slots per host (parallel jobs span hosts).
              type: dict
              sample: {node001: 1}
            slots:
              description: Total slots of the job task.
              type: int
              sample: 1
            start_time:
              description: Start time (seconds since the epoch).
              type: float
              sample: 1700000000.0
        accounting:
          description: Summary of the jobs that finished within O(lookback_window).
          returned: when O(lookback_window) is set
          type: dict
          contains:
            window:
              description: Seconds looked back.
              type: int
              sample: 10800
            jobs:
              description: Jobs (tasks) that ended in the window.
              type: int
              sample: 4
            avg_duration:
              description: Mean run time in seconds (end - start), null without jobs.
              type: float
              sample: 12.5
            avg_wait:
              description: Mean wait in seconds (start - submit), null without jobs.
              type: float
              sample: 3.0
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import (
    SgeCommandError,
    find_command,
    qacct_argv,
    qhost_argv,
    qstat_argv,
    read_settings,
    run_qacct,
    run_sge,
    run_sge_stream,
    sge_arch,
    sge_argument_spec,
    sge_environment,
    sge_options_error,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import (
    SgeParseError,
    accounting_summary,
    parse_qacct,
    parse_qhost,
    parse_qstat_stream,
    snapshot_from,
)


def _now():
    return time.time()


def gather(module):
    """Run the commands and build the snapshot; raises SgeCommandError / SgeParseError."""
    params = module.params
    settings = read_settings(params["sge_root"], params["sge_cell"])
    environ = sge_environment(params["sge_root"], params["sge_cell"],
                              params["sge_qmaster_port"], settings)
    arch = sge_arch(params["sge_root"], settings)
    window = params["lookback_window"]

    qstat = find_command(module, "qstat", params["sge_root"], arch)
    qhost = find_command(module, "qhost", params["sge_root"], arch)
    qacct = find_command(module, "qacct", params["sge_root"], arch) if window else None

    timeout = params["command_timeout"] or None
    taken_at = _now()
    # qstat's listing is parsed as it arrives (a 10,000-host cluster prints over 100 MB of it)
    parsed_qstat = run_sge_stream(module, qstat_argv(qstat, extended=params["projects"]),
                                  lambda chunks: _parse(parse_qstat_stream, "qstat -xml", chunks),
                                  environ, timeout, require_output=True)
    qhost_out = run_sge(module, qhost_argv(qhost), environ, timeout, require_output=True)
    accounting = None
    if window:
        seconds = window * 60
        qacct_out = run_qacct(module, qacct_argv(qacct, taken_at - seconds), environ, timeout)
        accounting = accounting_summary(_parse(parse_qacct, "qacct -j", qacct_out), taken_at, seconds)
    parsed_qhost = _parse(parse_qhost, "qhost -xml", qhost_out)
    del qhost_out
    snapshot = _parse(snapshot_from, "qstat -xml / qhost -xml", parsed_qstat, parsed_qhost, taken_at,
                      params["sge_cell"], queues=params["queues"], accounting=accounting)
    snapshot["complete"] = True
    return snapshot


def _parse(parser, what, *args, **kwargs):
    """Run a parser; an exception other than SgeParseError (a bug in the parser, met by an
    output nobody foresaw) becomes an SgeParseError naming it, never a traceback."""
    try:
        return parser(*args, **kwargs)
    except (SgeParseError, SgeCommandError):  # a command's time-out is met while its output is read
        raise
    except Exception as exc:
        raise SgeParseError("%s: the output could not be parsed (%s: %s; a bug in gridengine.balancer's parser, "
                            "please report it with the output)" % (what, type(exc).__name__, exc))


def main():
    argument_spec = sge_argument_spec(
        lookback_window=dict(type="int"),
        queues=dict(type="list", elements="str"),
        command_timeout=dict(type="int", default=120),
        projects=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    msg = sge_options_error(module.params["sge_root"], module.params["sge_cell"],
                            module.params["sge_qmaster_port"])
    if msg:
        module.fail_json(msg=msg)
    if module.params["command_timeout"] < 0:
        module.fail_json(msg="command_timeout must be a number of seconds >= 0 (0: no limit), got %s"
                         % module.params["command_timeout"])
    window = module.params["lookback_window"]
    if window is not None and window <= 0:
        module.fail_json(msg="lookback_window must be a positive number of minutes, got %s"
                         % window)
    try:
        snapshot = gather(module)
    except (SgeCommandError, SgeParseError) as exc:
        module.fail_json(msg="%s; no snapshot returned" % exc)
    module.exit_json(changed=False, ansible_facts={"sge": snapshot})


if __name__ == "__main__":
    main()
