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
ROUTE = ['-e', 'burst_wait=10', '-e', 'burst_boot_delay=0', '-e', 'idle_time=30', '-e', 'job_wait_time=0']


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


def acct(job_id):
    """{task id: (qname, exit_status, granted_pe)} of a finished job, or None."""
    proc = run(['qacct', '-j', str(job_id)], HOME, check=False)
    if proc.returncode != 0:
        return None
    out = {}
    for block in proc.stdout.split('=' * 62):
        rec = dict(line.split(None, 1) for line in block.strip().splitlines() if len(line.split(None, 1)) == 2)
        if rec.get('jobnumber', '').strip() == str(job_id):
            out[rec['taskid'].strip()] = (rec['qname'].strip(), int(rec['exit_status'].split()[0]),
                                          rec.get('granted_pe', 'NONE').strip())
    return out


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
    # fill every home slot for 80 s, then a burst behind them: two serial jobs, an array job of two
    # tasks (exit 41, 42) and a parallel job (the transfer queue has no PE: it must stay home)
    fillers = [qsub('-N', 'bfill%d' % i, '-v', 'SLEEP=80,CODE=%d' % (10 + i)) for i in range(home_slots())]
    serial = [qsub('-N', 'bser%d' % i, '-v', 'SLEEP=15,CODE=%d' % (30 + i)) for i in range(2)]
    array = qsub('-N', 'barr', '-t', '1-2', '-v', 'SLEEP=15')
    parallel = qsub('-N', 'bpar', '-pe', 'smp', '2', '-v', 'SLEEP=5,CODE=50')
    time.sleep(15)

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
