# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/fairshare.yml on the real local cluster (docs/shares.md).

Three projects with 50/30/20 shares each keep more jobs queued than the cluster has slots.
After a few rounds every project's running slots cluster-wide must be within one slot of its
share of all slots, and no slot may idle while work waits. Nothing is mocked.

    .venv/bin/pytest tests/integration/test_fairshare_real.py -m integration
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import pwd
import tempfile
import time
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER,
    JOB_USER,
    SGE_ENV,
    _run,
    _tool,
    _why_not_up,
)

pytestmark = pytest.mark.integration

DESIRED = {"gebfsalpha": 50, "gebfsbeta": 30, "gebfsgamma": 20}
RQS = "fairshare"
ROUNDS = 6
# short jobs: limits only stop new starts, so shares move as jobs end (no job is deleted to help)
JOB_SECONDS = 15


def _qconf_file(option, text):
    fd, path = tempfile.mkstemp(prefix="geb-fs-")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    try:
        return _run(["qconf", option, path])
    finally:
        os.unlink(path)


def _slots():
    """(running slots per project, total slots, pending jobs per project) from qstat -xml."""
    proc = _run(["qstat", "-u", "*", "-f", "-xml"])
    assert proc.returncode == 0, proc.stderr
    root = ET.fromstring(proc.stdout)
    total = sum(int(q.findtext("slots_total") or 0) for q in root.iter("Queue-List")
                if "u" not in (q.findtext("state") or "") and "d" not in (q.findtext("state") or ""))
    running = dict((p, 0) for p in DESIRED)
    pending = dict((p, 0) for p in DESIRED)
    for job in root.iter("job_list"):
        project = job.findtext("JB_project")
        if project not in DESIRED:
            continue
        if job.get("state") == "running":
            running[project] += int(job.findtext("slots") or 1)
        else:
            pending[project] += 1
    return running, total, pending


@pytest.fixture(scope="module")
def projects():
    reason = _why_not_up()
    if reason:
        if os.environ.get("GEB_REQUIRE_CLUSTER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        pwd.getpwnam(JOB_USER)
    except KeyError:
        pytest.skip("job user %s does not exist (roles/sge_master creates it)" % JOB_USER)
    for name in DESIRED:
        proc = _qconf_file("-Aprj", "name %s\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n" % name)
        assert proc.returncode == 0 or "already exists" in proc.stderr + proc.stdout, proc.stderr
    yield list(DESIRED)
    _run(["qdel", "-u", JOB_USER])
    time.sleep(5)
    _run(["qconf", "-drqs", RQS])
    for name in DESIRED:
        _run(["qconf", "-dprj", name])


def _submit(project, count, seconds=JOB_SECONDS):
    for _job in range(count):
        proc = _run(["runuser", "-u", JOB_USER, "--", "env",
                     "SGE_ROOT=" + SGE_ENV["SGE_ROOT"], "SGE_CELL=" + SGE_ENV["SGE_CELL"],
                     "qsub", "-terse", "-P", project, "-b", "y", "-o", "/dev/null",
                     "-e", "/dev/null", "/bin/sleep", str(seconds)])
        assert proc.returncode == 0, proc.stdout + proc.stderr


def _round():
    argv = [_tool("ansible-playbook"), "playbooks/fairshare.yml", "-e", "cluster=%s" % CLUSTER,
            "-e", json.dumps({"fairshare_desired": DESIRED})]
    proc = _run(argv, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_fairshare_rounds_reach_the_shares(projects):
    _running, total, _pending = _slots()
    assert total > 0
    # more work than slots for every project for the whole test; gebfsalpha first, so it holds
    # every slot when the rounds begin
    _submit("gebfsalpha", 6 * total)
    time.sleep(5)
    _submit("gebfsbeta", 6 * total)
    _submit("gebfsgamma", 6 * total)
    for _step in range(ROUNDS):
        _round()
        time.sleep(JOB_SECONDS)  # one generation of jobs ends and the limits steer the next
    running, total, pending = _slots()
    for project, pct in DESIRED.items():
        if pending[project]:
            assert abs(running[project] - total * pct / 100.0) <= 1.0, (running, total)
    if any(pending.values()):
        assert sum(running.values()) == total, (running, total, pending)
