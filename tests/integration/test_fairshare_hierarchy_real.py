# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/fairshare.yml's issue-23 options on the real local cluster (docs/shares.md):
temporal compensation from qacct, cluster reserves as the allocation step, managers per host
group with fail-over. Nothing is mocked: jobs are submitted as the job user with projects, the
playbook reads qstat/qhost/qacct and writes the resource quota set, and the test reads back what
Grid Engine runs.

Slow tier (scripts/test.sh --full; about 10 minutes). First run on the cluster, 2026-11-27 (with
the core integration tests, 7 other sessions loading the 2 cores): the temporal compensation test
passed (beta's limits 4, 2, 4, 2, 4 slots against its 3 of 6, its account 150 then 0); the reserves
and host group tests FAILED: no job of any project was running when they counted (running per
project {alpha: 0, beta: 0, gamma: 0}). Not yet understood; see the closing note of that session.

    .venv/bin/pytest tests/integration/test_fairshare_hierarchy_real.py -m integration -s

What each test shows, with its figures printed (-s):

* test_temporal_compensation_pays_back: gebfhbeta has no work for 3 rounds while gebfhalpha holds
  every slot; the state file on the master then holds beta's account (> 0), the rounds measured
  usage from qacct ("usage from qacct" in the playbook's output); once beta's jobs come back its
  limits exceed its 50 % for at least one round, then come back to 50 % +- 1 slot and its account
  to about 0. A --check round writes no state.
* test_reserves_allocation_reaches_the_shares: allocation=reserves, 50/30/20, every project with
  more work than slots: running slots per project within one slot of the share, no slot idle.
* test_hostgroup_managers_and_failover: two host groups; gebfhgamma's jobs may run only in the
  first (-q all.q@@gebfha); after the rounds gamma runs its 10 % of all slots, all of them in
  @gebfha, and no rule gives it a slot in @gebfhb. Then the execds of @gebfhb's hosts are killed
  (max_unheard lowered to 20 s): the next round names @gebfhb in failed_groups, writes rules only
  for @gebfha's hosts, and @gebfha's slots are shared 60/30/10; the node comes back
  (local_cluster.yml, as the other real tests give nodes back), and the next rounds give @gebfhb
  its share again. About 10 minutes with the node's return.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import pwd
import re
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

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROJECTS = ("gebfhalpha", "gebfhbeta", "gebfhgamma")
RQS = "fairshare_itest"
HG_A, HG_B = "@gebfha", "@gebfhb"
JOB_SECONDS = 15
STATE = "/var/lib/gridengine-balancer/%s/fairshare-itest.json" % CLUSTER


def _qconf_file(option, text, name=None):
    directory = tempfile.mkdtemp(prefix="geb-fh-")
    path = os.path.join(directory, name or "obj")
    with open(path, "w") as handle:
        handle.write(text)
    try:
        return _run(["qconf", option, path])
    finally:
        os.unlink(path)
        os.rmdir(directory)


def _queue_hosts():
    """all.q's execution hosts that report (qstat -f -xml), with their slots."""
    proc = _run(["qstat", "-f", "-q", "all.q", "-xml"])
    assert proc.returncode == 0, proc.stderr
    out = {}
    for q in ET.fromstring(proc.stdout).iter("Queue-List"):
        if set(q.findtext("state") or "") & set("uEdD"):
            continue
        out[q.findtext("name").split("@", 1)[1]] = int(q.findtext("slots_total") or 0)
    return out


def _running():
    """{(host, project): slots} of the running jobs of our projects (qstat -u * -g t -xml is
    not needed: our jobs are single-slot; -ext, without which qstat prints no JB_project)."""
    proc = _run(["qstat", "-u", "*", "-s", "r", "-ext", "-xml"])  # -ext: JB_project
    assert proc.returncode == 0, proc.stderr
    out = {}
    for job in ET.fromstring(proc.stdout).iter("job_list"):
        project = job.findtext("JB_project")
        if project in PROJECTS:
            host = (job.findtext("queue_name") or "@").split("@", 1)[1]
            out[(host, project)] = out.get((host, project), 0) + int(job.findtext("slots") or 1)
    return out


def _busy_running(total, seconds=20):
    """_running() once every slot is busy (or after `seconds`): a generation of jobs (same length,
    same start) ends at once, and for a moment before the scheduler starts the next the counts
    are short."""
    deadline = time.time() + seconds
    running = _running()
    while sum(running.values()) < total and time.time() < deadline:
        time.sleep(0.5)
        running = _running()
    return running


def _per_project(running):
    out = dict((p, 0) for p in PROJECTS)
    for (_host, project), n in running.items():
        out[project] += n
    return out


def _limits():
    """{(host, project): slots} of the rules in force."""
    proc = _run(["qconf", "-srqs", RQS])
    assert proc.returncode == 0, proc.stderr
    out = {}
    for m in re.finditer(r"limit\s+projects\s+\{?(\S+?)\}?\s+hosts\s+\{(\S+)\}\s+to\s+slots=(\d+)", proc.stdout):
        out[(m.group(2), m.group(1))] = int(m.group(3))
    return out


def _submit(project, count, queue=None, seconds=JOB_SECONDS, hold=False):
    """Submit `count` jobs from one shell (fast on a busy machine); with `hold`, on hold, for
    _release to let go of all at once (the jobs submitted first would otherwise run out of work
    while the last are still being submitted)."""
    opts = "-h " if hold else ""
    if queue:
        opts += "-q %s " % queue
    proc = _run(["runuser", "-u", JOB_USER, "--", "env", "SGE_ROOT=" + SGE_ENV["SGE_ROOT"],
                 "SGE_CELL=" + SGE_ENV["SGE_CELL"], "sh", "-c",
                 'for i in $(seq "$1"); do qsub -terse $4 -P "$2" -b y -o /dev/null -e /dev/null '
                 '/bin/sleep "$3" || exit 1; done', "submit", str(count), project, str(seconds), opts])
    assert proc.returncode == 0 and len(proc.stdout.split()) == count, proc.stdout + proc.stderr


def _release():
    proc = _run(["qrls", "-u", JOB_USER])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _round(desired, *extra, check=False):
    argv = [_tool("ansible-playbook"), "playbooks/fairshare.yml", "-e", "cluster=%s" % CLUSTER,
            "-e", json.dumps({"fairshare_desired": desired, "fairshare_rqs_name": RQS,
                              "fairshare_state_path": STATE})]
    for item in extra:
        argv += ["-e", json.dumps(item)]
    if check:
        argv.append("--check")
    proc = _run(argv, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def _state():
    with open(STATE) as handle:
        return json.load(handle)


def _clean_jobs():
    _run(["qdel", "-u", JOB_USER])
    for _attempt in range(30):
        if not _running():
            return
        time.sleep(2)


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
    for name in PROJECTS:
        proc = _qconf_file("-Aprj", "name %s\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n" % name)
        assert proc.returncode == 0 or "already exists" in proc.stderr + proc.stdout, proc.stderr
    yield list(PROJECTS)
    _clean_jobs()
    _run(["qconf", "-drqs", RQS])
    for name in PROJECTS:
        _run(["qconf", "-dprj", name])
    if os.path.exists(STATE):
        os.unlink(STATE)


@pytest.fixture
def clean(projects):
    _clean_jobs()
    _run(["qconf", "-drqs", RQS])
    if os.path.exists(STATE):
        os.unlink(STATE)
    yield projects
    _clean_jobs()


def test_temporal_compensation_pays_back(clean):
    total = sum(_queue_hosts().values())
    assert total >= 2
    desired = {"gebfhalpha": 50, "gebfhbeta": 50}
    opts = {"fairshare_temporal": "compensate"}
    _submit("gebfhalpha", 12 * total)
    out = []
    for step in range(3):
        text = _round(desired, opts)
        if step:
            assert "usage from qacct" in text, text[-3000:]
        time.sleep(JOB_SECONDS)
        out.append((_state()["accounts"]["cluster"]["gebfhbeta"], _limits_totals()))
    print("beta away: account, limits per project:", out)
    assert _state()["temporal"] == "compensate" and _state()["last_round"] > 0
    assert out[-1][0] > 0
    # a --check round computes but writes no state
    before = _state()
    _round(desired, opts, check=True)
    assert _state() == before
    _submit("gebfhbeta", 12 * total)
    beta = []
    for _step in range(6):
        _round(desired, opts)
        beta.append((_limits_totals().get("gebfhbeta", 0),
                     round(_state()["accounts"]["cluster"]["gebfhbeta"], 1)))
        time.sleep(JOB_SECONDS)
    print("beta back: its limit slots and account per round (share %s of %s slots):"
          % (total / 2.0, total), beta)
    assert max(n for n, _a in beta) > total / 2.0
    assert abs(beta[-1][0] - total / 2.0) <= 1.0
    # paid out: below what it held when beta came back (measured usage lags the limits a
    # little, so the account need not reach exactly 0)
    assert beta[-1][1] < out[-1][0]


def _limits_totals():
    out = {}
    for (_host, project), n in _limits().items():
        out[project] = out.get(project, 0) + n
    return out


def test_reserves_allocation_reaches_the_shares(clean):
    total = sum(_queue_hosts().values())
    desired = {"gebfhalpha": 50, "gebfhbeta": 30, "gebfhgamma": 20}
    for project in desired:
        _submit(project, 8 * total, hold=True)
    _release()
    for _step in range(6):
        _round(desired, {"fairshare_allocation": "reserves"})
        time.sleep(JOB_SECONDS)
    running = _per_project(_busy_running(total))
    print("reserves: running per project of %d slots:" % total, running)
    for project, pct in desired.items():
        assert abs(running[project] - total * pct / 100.0) <= 1.0, (running, total)
    assert sum(running.values()) == total


def _hostgroup(name, hosts):
    text = "group_name %s\nhostlist %s\n" % (name, " ".join(hosts))
    proc = _qconf_file("-Ahgrp", text, name)
    if proc.returncode != 0 and "already exists" in proc.stdout + proc.stderr:
        proc = _qconf_file("-Mhgrp", text, name)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hostgroup_managers_and_failover(clean):
    from ansible_collections.gridengine.balancer.tests.integration.test_infra_faults_real import (
        _kill_execd, _set_global_conf, _wait_unknown)
    from ansible_collections.gridengine.balancer.tests.integration.test_elastic_real import (
        _give_back_two_nodes)
    hosts = _queue_hosts()
    names = sorted(hosts)
    # the second group is one namespace node (its execd can be killed and started again), the
    # first group the other hosts (the master's execd among them)
    nodes = [h for h in names if _run(["ip", "netns", "pids", h]).returncode == 0]
    if len(names) < 3 or not nodes:
        pytest.skip("needs three execution hosts in all.q, one of them a namespace node")
    group_b = [nodes[-1]]
    group_a = [h for h in names if h not in group_b]
    _hostgroup(HG_A, group_a)
    _hostgroup(HG_B, group_b)
    total = sum(hosts.values())
    slots_a = sum(hosts[h] for h in group_a)
    desired = {"gebfhalpha": 60, "gebfhbeta": 30, "gebfhgamma": 10}
    opts = {"fairshare_hostgroups": [HG_A, HG_B]}
    _submit("gebfhalpha", 8 * total, hold=True)
    _submit("gebfhbeta", 8 * total, hold=True)
    _submit("gebfhgamma", 8 * total, queue="all.q@" + HG_A, hold=True)
    _release()
    old = None
    try:
        for _step in range(8):
            _round(desired, opts)
            time.sleep(JOB_SECONDS)
        running = _busy_running(total)
        per = _per_project(running)
        print("host groups: running per project of %d slots:" % total, per, running)
        assert abs(per["gebfhgamma"] - total * 0.10) <= 1.0, per
        assert all(running.get((h, "gebfhgamma"), 0) == 0 for h in group_b)
        assert all(_limits().get((h, "gebfhgamma"), 0) == 0 for h in group_b)
        assert sum(per.values()) == total, per

        # fail-over: every host of the second group vanishes (its execd killed)
        old = _set_global_conf({"max_unheard": "00:00:20", "load_report_time": "00:00:05"})
        for host in group_b:
            assert _kill_execd(host) > 0
        for host in group_b:
            _wait_unknown(host)
        text = _round(desired, opts)
        assert "host group %s has no live execution host" % HG_B in text, text[-3000:]
        limits = _limits()
        assert set(h for h, _p in limits) == set(group_a), limits
        totals = _limits_totals()
        print("%s failed: limits per project in %s (%d slots):" % (HG_B, HG_A, slots_a), totals)
        for project, pct in desired.items():
            assert abs(totals[project] - slots_a * pct / 100.0) <= 1.0, totals
    finally:
        if old is not None:
            _set_global_conf(old)
        # the node's execd comes back the way the other real tests bring nodes back:
        # local_cluster.yml with two nodes, run when a node does not report
        _give_back_two_nodes()
    for host in group_b:
        _wait_unknown(host, unknown=False)
    # the give-back may also have brought a node the balancer had removed in an earlier test (it
    # runs local_cluster.yml with node001 and node002): the rounds divide what is there now
    hosts = _queue_hosts()
    names = sorted(hosts)
    total = sum(hosts.values())
    # the give-back takes minutes while the jobs keep running: alpha and beta ran out of work
    # there once (gamma then rightly held 6 of 8 slots), so they get more before the rounds
    _submit("gebfhalpha", 8 * total)
    _submit("gebfhbeta", 8 * total)
    # back: the next rounds divide the cluster among both groups again
    for _step in range(6):
        text = _round(desired, opts)
        time.sleep(JOB_SECONDS)
    assert "has no live execution host" not in text
    limits = _limits()
    assert set(h for h, _p in limits) == set(names), limits
    per = _per_project(_busy_running(total))
    print("%s back: running per project of %d slots:" % (HG_B, total), per)
    assert abs(per["gebfhgamma"] - total * 0.10) <= 1.0, per
    _run(["qconf", "-dhgrp", HG_A])
    _run(["qconf", "-dhgrp", HG_B])
