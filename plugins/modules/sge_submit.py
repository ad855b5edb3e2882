#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: sge_submit
short_description: Submit a job script to Grid Engine with qsub, optionally to a chosen host
version_added: 0.1.0
extends_documentation_fragment:
  - gridengine.balancer.sge
description:
  - Submits a job script with C(qsub -terse) and returns the job id.
  - The job name, the paths and the script arguments are data. Each is one element of the
    argument list C(qsub) is run with; no shell ever reads them, so a job named
    C($(touch /tmp/owned\)) is submitted under exactly that name and nothing runs.
  - What Grid Engine would refuse is refused before anything runs, naming the option.
  - O(host) places the job on one host (C(-q queue@host)); choose it with the filters
    P(gridengine.balancer.placement_distribution#filter) and
    P(gridengine.balancer.placement_next_hosts#filter) (see C(docs/placement.md)).
  - Every run submits a new job; the module is not idempotent by nature. In check mode it
    submits nothing and returns the C(qsub) command it would have run.
  - To submit as another user, use Ansible's C(become) and C(become_user).
options:
  script:
    description:
      - Path of the job script on the host the module runs on, as C(qsub) reads it (relative paths
        are relative to the module's working directory).
      - Passed to C(qsub) as given; C(~) and variables are not expanded. It must be a readable
        file and must not start with C(-).
    type: str
    required: true
  args:
    description:
      - Arguments of the job script, each passed as one argument, as given.
    type: list
    elements: str
    default: []
  name:
    description:
      - Job name (C(qsub -N)). Grid Engine refuses names with a newline, tab, carriage return,
        C(/), C(:), C(@), C(\\), C(*) or C(?), names starting with a digit, the keywords C(NONE),
        C(ALL) and C(TEMPLATE), and names longer than 512 characters; so does the module.
      - The module also refuses other control characters (NUL, escape, ...) and a leading C(-).
      - Default is Grid Engine's (the script's file name).
    type: str
  queue:
    description:
      - Cluster queue (C(qsub -q queue), or C(-q queue@host) with O(host)).
    type: str
  host:
    description:
      - Execution host the job must run on, for example chosen by
        P(gridengine.balancer.placement_next_hosts#filter). Gives C(-q queue@host), or
        C(-q *@host) (any queue on that host) without O(queue).
    type: str
  resources:
    description:
      - Resource requests, each given as C(-l name=value), in the order given, for example
        C(h_rt) to C(01:00:00) and C(mem_free) to C(2G). Booleans become C(TRUE)/C(FALSE).
      - Values must not contain spaces or commas; C(slots) cannot be requested this way (Grid
        Engine refuses it; use a parallel environment).
    type: dict
    default: {}
  working_directory:
    description: Working directory of the job (C(qsub -wd)).
    type: str
  stdout_path:
    description:
      - Standard output file or directory of the job (C(qsub -o)). Grid Engine's pseudo variables
        such as C($JOB_ID) are expanded by Grid Engine, not by a shell. No C(:) or C(,) (C(qsub)
        would read a host name or a list).
    type: str
  stderr_path:
    description: Standard error file or directory of the job (C(qsub -e)), as O(stdout_path).
    type: str
notes:
  - Run it on a Grid Engine submit host.
  - Bad input fails the module before C(qsub) runs; a C(qsub) failure returns its message and
    the argument list.
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
seealso:
  - name: Grid Engine qsub(1)
    description: Manual page of the command the module runs.
    link: https://arc.liv.ac.uk/SGE/htmlman/htmlman1/qsub.html
"""

EXAMPLES = r"""
- name: Submit a script
  gridengine.balancer.sge_submit:
    script: /home/tester/job.sh
    args: [input.dat, --fast]
    name: nightly
  register: job

- name: Show its id
  ansible.builtin.debug:
    msg: "submitted job {{ job.job_id }}"

- name: Place a job by the weighted placement of the cluster's load
  gridengine.balancer.sge_queue_facts:
    queues: [all.q]

- name: Submit to the host the placement chooses
  gridengine.balancer.sge_submit:
    script: /home/tester/job.sh
    queue: all.q
    host: >-
      {{ ansible_facts.sge
         | gridengine.balancer.placement_distribution(queue='all.q')
         | gridengine.balancer.placement_next_hosts(1) | first }}
    resources:
      h_rt: "01:00:00"
      mem_free: 2G
    stdout_path: /home/tester/logs
    working_directory: /home/tester
  become: true
  become_user: tester
"""

RETURN = r"""
job_id:
  description: Job number Grid Engine gave the job; null in check mode.
  returned: success
  type: int
  sample: 42
tasks:
  description: Task range of an array job as C(qsub -terse) prints it, else null.
  returned: success
  type: str
  sample: null
argv:
  description:
    - The argument list C(qsub) was run with (in check mode, would have been run with); the
      binary is its full path.
  returned: always
  type: list
  elements: str
  sample: ["/var/lib/gridengine/bin/lx-amd64/qsub", "-terse", "-N", "nightly", "-q", "all.q@node001",
           "/home/tester/job.sh", "input.dat"]
command:
  description: The same command, readable (program name, arguments shell-quoted); for display only.
  returned: always
  type: str
  sample: "qsub -terse -N nightly -q all.q@node001 /home/tester/job.sh input.dat"
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    SgeAdmin,
    SgeAdminError,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import describe, sge_argument_spec
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_submit import (
    SubmitError,
    parse_terse,
    submit_args,
)


def _first_line(*texts):
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for line in (text or "").splitlines():
            if line.strip():
                return line.strip()
    return "(no output)"


def run(module):
    p = module.params
    args = submit_args(p["script"], args=p["args"], name=p["name"], queue=p["queue"], host=p["host"],
                       resources=p["resources"], working_directory=p["working_directory"],
                       stdout_path=p["stdout_path"], stderr_path=p["stderr_path"])
    if not os.path.isfile(p["script"]) or not os.access(p["script"], os.R_OK):
        raise SubmitError("script: %r is not a readable file on this host" % (p["script"],))
    admin = SgeAdmin(module, p["sge_root"], p["sge_cell"], p["sge_qmaster_port"])
    argv = [admin.binary("qsub")] + args
    result = dict(changed=True, argv=argv, command=describe(argv), job_id=None, tasks=None)
    if module.check_mode:
        return result
    argv, rc, out, err = admin.run("qsub", args)
    if rc != 0:
        module.fail_json(msg="qsub failed (rc %s): %s" % (rc, _first_line(err, out)),
                         changed=False, argv=argv, command=describe(argv), rc=rc,
                         stdout=out, stderr=err)
    try:
        result["job_id"], result["tasks"] = parse_terse(out)
    except SubmitError as exc:
        # qsub said it succeeded: a job may exist, so report a change
        module.fail_json(msg="%s; qsub exited 0, so a job may have been submitted" % exc,
                         changed=True, argv=argv, command=describe(argv), stdout=out, stderr=err)
    return result


def main():
    argument_spec = sge_argument_spec(
        script=dict(type="str", required=True),
        args=dict(type="list", elements="str", default=[]),
        name=dict(type="str"),
        queue=dict(type="str"),
        host=dict(type="str"),
        resources=dict(type="dict", default={}),
        working_directory=dict(type="str"),
        stdout_path=dict(type="str"),
        stderr_path=dict(type="str"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = run(module)
    except (SubmitError, SgeAdminError) as exc:
        module.fail_json(msg=str(exc), changed=False)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
