# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burst shape on two real cells of this machine (docs/burst.md, issue 26).

Home is mycluster (the default cell, playbooks/local_cluster.yml up): its hosts are never touched.
The partner is the cell "remote" (ports 6446/6447) that playbooks/burst.yml brings up with no
execution host; `loadbalance.yml -e cluster=burst` (inventory/local/group_vars/burst.yml) routes
waiting home jobs to it (burst_plan, qalter -l remote=true) and grows it through the local
provider, whose nodes are real namespace nodes, then shrinks it back to none.

Marked ``burst`` and not ``integration``: it takes the cell "remote" for itself, so
scripts/test.sh runs it after the transfer queue scenario has removed that cell.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

pytestmark = pytest.mark.burst

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'SGE_QMASTER_PORT': '6444',
        'SGE_EXECD_PORT': '6445', 'PATH': '/usr/bin:/bin', 'LC_ALL': 'C'}
PARTNER = dict(HOME, SGE_CELL='remote', SGE_QMASTER_PORT='6446', SGE_EXECD_PORT='6447')
WORK = '/tmp/gridengine-balancer-burst-test'
JOB = '#!/bin/sh\nsleep ${SLEEP:-2}\nexit ${CODE:-$((40 + ${SGE_TASK_ID:-0}))}\n'
PLAYBOOK = os.path.join(ROOT, '.venv/bin/ansible-playbook')
STATE_DIR = '/var/lib/gridengine-balancer/burst'
# the rule's times made short for a test: a job may leave after 10 s; the cost rule is exercised
# once with a margin no wait reaches (nothing leaves) and then with none (every waiting job leaves)
ROUTE = ['-e', 'burst_wait=10', '-e', 'burst_boot_delay=0', '-e', 'idle_time=20', '-e', 'job_wait_time=0']


def run(argv, env, check=True, timeout=600):
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=timeout, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError('%s: rc %s\n%s\n%s' % (argv, proc.returncode, proc.stdout[-4000:], proc.stderr[-3000:]))
    return proc


def play(*args):
    env = dict(os.environ, LC_ALL='C.UTF-8')
    for key in ('SGE_CELL', 'SGE_QMASTER_PORT', 'SGE_EXECD_PORT'):
        env.pop(key, None)
    return run([PLAYBOOK] + list(args), env).stdout


def qsub(*args):
    argv = ['runuser', '-u', 'tester', '--', 'env'] + ['%s=%s' % kv for kv in HOME.items()] + \
        ['/usr/bin/qsub', '-terse', '-cwd', '-o', '/dev/null', '-e', '/dev/null'] + list(args) + \
        [os.path.join(WORK, 'job.sh')]
    return run(argv, None).stdout.strip().split('.')[0]


def partner_hosts():
    proc = run(['qconf', '-sel'], PARTNER, check=False)
    return sorted(proc.stdout.split()) if proc.returncode == 0 else []


def home_layout():
    """What the test must leave as it was: home's exec hosts, host group and queue slots."""
    return (run(['qconf', '-sel'], HOME).stdout, run(['qconf', '-shgrp', '@allhosts'], HOME).stdout,
            re.search(r'(?m)^slots\s.*$', run(['qconf', '-sq', 'all.q'], HOME).stdout).group(0))


def qacct_records(job_id):
    """Every accounting record of a job (a rescheduled job has several), in qacct's order."""
    proc = run(['qacct', '-j', str(job_id)], HOME, check=False)
    recs = []
    for block in proc.stdout.split('=' * 62) if proc.returncode == 0 else ():
        rec = dict((k, v.strip()) for k, v in (line.split(None, 1) for line in block.strip().splitlines()
                                               if len(line.split(None, 1)) == 2))
        if rec.get('jobnumber') == str(job_id):
            recs.append(rec)
    return recs


def acct(job_id):
    """{task id: (qname, exit_status, granted_pe)} of a finished job (its last run), or None."""
    return dict((rec['taskid'], (rec['qname'], int(rec['exit_status'].split()[0]), rec.get('granted_pe', 'NONE')))
                for rec in qacct_records(job_id)) or None


def wait_running(jobs, timeout=90):
    """Wait until every job of ``jobs`` runs. A burst submitted while the fillers still wait would be
    sorted with them, and Grid Engine's slot urgency (1000 per slot) starts a 2-slot job first."""
    deadline = time.time() + timeout
    while True:
        out = run(['qstat', '-s', 'r', '-u', '*'], HOME).stdout
        running = set(line.split()[0] for line in out.splitlines()[2:] if line.split())
        if running >= set(jobs):
            return
        assert time.time() < deadline, 'jobs not running after %d s: %s' % (timeout, sorted(set(jobs) - running))
        time.sleep(1)


def home_slots():
    out = run(['qstat', '-g', 'c'], HOME).stdout
    return int(next(line.split()[5] for line in out.splitlines() if line.startswith('all.q ')))


@pytest.fixture(scope='module')
def burst():
    # scripts/test.sh sets GEB_REQUIRE_CLUSTER=1: there a skip would hide a failure
    skip = pytest.fail if os.environ.get('GEB_REQUIRE_CLUSTER') == '1' else pytest.skip
    if run(['qstat'], HOME, check=False).returncode != 0:
        skip('the local cluster is not up (playbooks/local_cluster.yml)')
    if run(['qstat', '-u', '*'], HOME).stdout.strip():
        skip('the home cell has jobs: this test needs it to itself')
    os.makedirs(WORK, exist_ok=True)
    os.chmod(WORK, 0o755)
    with open(os.path.join(WORK, 'job.sh'), 'w') as handle:
        handle.write(JOB)
    os.chmod(os.path.join(WORK, 'job.sh'), 0o755)
    # a partner cell of an earlier run goes first (its nodes removed by the balancer's own
    # node_remove), and with it the balancer's state of it
    for node in partner_hosts():
        play('playbooks/node_remove.yml', '-e', 'cluster=burst', '-e', 'node=' + node)
    if os.path.exists('/var/lib/gridengine/remote'):
        play('playbooks/burst.yml', '-e', 'cluster=mycluster', '-e', 'multicluster_state=absent',
             '-e', 'multicluster_destroy=true')
    for name in ('state.json', 'burst.json', 'journal.json'):
        if os.path.exists(os.path.join(STATE_DIR, name)):
            os.unlink(os.path.join(STATE_DIR, name))
    play('playbooks/burst.yml', '-e', 'cluster=mycluster')
    yield
    for node in partner_hosts():
        play('playbooks/node_remove.yml', '-e', 'cluster=burst', '-e', 'node=' + node)
    play('playbooks/burst.yml', '-e', 'cluster=mycluster', '-e', 'multicluster_state=absent',
         '-e', 'multicluster_destroy=true')


def test_a_burst_goes_to_a_partner_that_grows_from_zero_and_shrinks_back(burst):
    started = time.time()
    before = home_layout()
    assert partner_hosts() == [], 'the partner must start with no execution host'
    # fill every home slot for 50 s, then a burst behind them: two serial jobs, an array job of two
    # tasks (exit 41, 42) and a parallel job (the transfer queue has no PE: it must stay home)
    fillers = [qsub('-N', 'bfill%d' % i, '-v', 'SLEEP=50,CODE=%d' % (10 + i)) for i in range(home_slots())]
    wait_running(fillers)
    serial = [qsub('-N', 'bser%d' % i, '-v', 'SLEEP=8,CODE=%d' % (30 + i)) for i in range(2)]
    array = qsub('-N', 'barr', '-t', '1-2', '-v', 'SLEEP=8')
    parallel = qsub('-N', 'bpar', '-pe', 'smp', '2', '-v', 'SLEEP=5,CODE=50')
    time.sleep(12)

    # the cost rule: with a margin no wait reaches, nothing leaves and the partner stays at zero
    out = play('playbooks/loadbalance.yml', '-e', 'cluster=burst', '-e', 'burst_margin=100000', *ROUTE)
    assert re.search(r'0 of 4 waiting job\(s\) to the partner', out), out[-3000:]
    assert 'boot delay 0 s + margin 100000 s' in out
    assert 'pinned: parallel job (-pe smp)' in out
    assert partner_hosts() == []

    # no margin: the four non-parallel jobs leave; the partner grows for them and runs them
    grown, polls = set(), 0
    jobs = fillers + serial + [array, parallel]
    while not all(acct(j) for j in jobs):
        assert time.time() - started < 480, 'jobs not finished: %s' % [j for j in jobs if not acct(j)]
        out = play('playbooks/loadbalance.yml', '-e', 'cluster=burst', '-e', 'burst_margin=0', *ROUTE)
        polls += 1
        if polls == 1:
            assert re.search(r'3 of 4 waiting job\(s\) to the partner', out), out[-3000:]
        grown.update(partner_hosts())
        time.sleep(5)
    assert grown and all(re.match(r'^burst[0-9]{3}$', h) for h in grown), grown

    # every job ends with its own status; the burst ran in the transfer queue, the rest at home
    for i, job in enumerate(fillers):
        assert acct(job) == {'undefined': ('all.q', 10 + i, 'NONE')}
    for i, job in enumerate(serial):
        assert acct(job) == {'undefined': ('transfer.q', 30 + i, 'NONE')}
    assert acct(array) == {'1': ('transfer.q', 41, 'NONE'), '2': ('transfer.q', 42, 'NONE')}
    assert acct(parallel) == {'undefined': ('all.q', 50, 'smp')}

    # idle: the partner goes back to no execution host; home is as it was
    while partner_hosts():
        assert time.time() - started < 720, 'partner still has %s' % partner_hosts()
        play('playbooks/loadbalance.yml', '-e', 'cluster=burst', *ROUTE)
        time.sleep(10)
    assert home_layout() == before
    print('burst: %d polls, partner nodes %s, %.0f s' % (polls, sorted(grown), time.time() - started))


@pytest.mark.slow
def test_a_sent_job_is_pulled_back_when_home_frees_and_runs_at_home(burst):
    """Item 3's pull-back: a job sent to a partner that has not grown yet, still waiting there when
    home slots free up, comes back with its own requests (the starter's withdraw) and runs at home."""
    play('playbooks/burst.yml', '-e', 'cluster=mycluster', '-e', 'transfer_queue_pullback_after=10')
    try:
        started = time.time()
        fillers = [qsub('-N', 'bpfill%d' % i, '-v', 'SLEEP=25,CODE=0') for i in range(home_slots())]
        wait_running(fillers)
        job = qsub('-N', 'bpull', '-l', 'h_rt=600', '-v', 'SLEEP=3,CODE=61')
        time.sleep(12)
        out = play('playbooks/loadbalance.yml', '-e', 'cluster=burst', '-e', 'burst_margin=0', *ROUTE)
        assert re.search(r'1 of 1 waiting job\(s\) to the partner', out), out[-3000:]
        # no further poll: the partner does not grow, the job waits there until home frees a slot;
        # its first record (the transfer queue's, exit 99) comes before its run at home ends
        while not any(r['qname'] == 'all.q' for r in qacct_records(job)) or not all(acct(j) for j in fillers):
            assert time.time() - started < 240, 'bpull not finished'
            time.sleep(3)
        assert partner_hosts() == []
        # its first run, in the transfer queue, ended with 99 (back to the pending list); then at home
        assert [(r['qname'], int(r['exit_status'].split()[0])) for r in qacct_records(job)] == \
            [('transfer.q', 99), ('all.q', 61)]
        detail = run(['qacct', '-j', job], HOME).stdout
        assert re.search(r'(?m)^failed\s+25\s', detail)
    finally:
        play('playbooks/burst.yml', '-e', 'cluster=mycluster')


@pytest.mark.slow
def test_an_ec2_partner_on_moto_grows_from_zero_for_a_burst_and_back(burst, tmp_path):
    """The same shape with the ec2 provider: EC2 is moto_server on 127.0.0.1 (AWS cannot be reached
    from here) and each instance boots a namespace node at its private address
    (provider_ec2_local_boot, tests/integration/files/ec2_vars.yml): the partner's nodes are EC2
    instances tagged for the cluster "burst", joined to the cell "remote" on its own ports."""
    import json                                          # pylint: disable=import-outside-toplevel
    import yaml                                          # pylint: disable=import-outside-toplevel
    from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import (  # pylint: disable=import-outside-toplevel
        MotoEc2)
    server = MotoEc2().start()
    vars_path = os.path.join(str(tmp_path), 'ec2.json')
    try:
        net = server.network()
        with open(os.path.join(ROOT, 'tests', 'integration', 'files', 'ec2_vars.yml')) as handle:
            extra = yaml.safe_load(handle)
        work = str(tmp_path)
        extra.update(provider_ec2_endpoint_url=server.endpoint, provider_ec2_subnet_ids=[net['subnet_id']],
                     provider_ec2_security_group_ids=[net['security_group_id']],
                     provider_ec2_state_path=os.path.join(work, 'reconcile.json'),
                     state_path=os.path.join(work, 'state.json'), journal_path=os.path.join(work, 'journal.json'),
                     lock_path=os.path.join(work, 'lock.json'), burst_state_path=os.path.join(work, 'burst.json'),
                     cluster_node_name_format='bec2%03d', drain_settle_time=2)
        with open(vars_path, 'w') as handle:
            json.dump(extra, handle)
        poll = ['playbooks/loadbalance.yml', '-e', 'cluster=burst', '-e', '@' + vars_path, '-e', 'burst_margin=0'] + ROUTE
        started = time.time()
        fillers = [qsub('-N', 'befill%d' % i, '-v', 'SLEEP=40,CODE=0') for i in range(home_slots())]
        serial = [qsub('-N', 'bec%d' % i, '-v', 'SLEEP=5,CODE=%d' % (70 + i)) for i in range(2)]
        time.sleep(12)
        grown = set()
        while not all(acct(j) for j in fillers + serial):
            assert time.time() - started < 480, 'jobs not finished'
            play(*poll)
            grown.update(partner_hosts())
            time.sleep(5)
        assert grown and all(re.match(r'^bec2[0-9]{3}$', h) for h in grown), grown
        launched = server.client().describe_instances(Filters=[
            {'Name': 'tag:gridengine-balancer:cluster', 'Values': ['burst']}])['Reservations']
        assert launched, 'no EC2 instance was launched for the partner'
        for i, job in enumerate(serial):
            assert acct(job) == {'undefined': ('transfer.q', 70 + i, 'NONE')}
        while partner_hosts():
            assert time.time() - started < 720, 'partner still has %s' % partner_hosts()
            play(*poll)
            time.sleep(10)
        assert server.live_instances('burst') == []
    finally:
        for node in partner_hosts() if os.path.exists(vars_path) else ():
            play('playbooks/node_remove.yml', '-e', 'cluster=burst', '-e', '@' + vars_path, '-e', 'node=' + node)
        server.stop()
