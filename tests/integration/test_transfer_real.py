# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transfer queue on two real Grid Engine clusters on this machine (docs/multicluster.md).

The local cluster is the default cell (playbooks/local_cluster.yml must be up); the partner is
the cell "remote" that playbooks/multicluster.yml brings up (qmaster port 6446, its execd on the
namespace node partner01). The default cell is shared with other tests, so the transfer queue is
set up with transfer_queue_remote_requestable=FORCED (only jobs asking -l remote=true may go to
it) and "the local cluster" of these tests is a one-slot queue tqlocal.q on this host that offers
remote=TRUE too (a test harness: the other users' jobs never reach either queue).
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = {'SGE_ROOT': '/var/lib/gridengine', 'SGE_CELL': 'default', 'SGE_QMASTER_PORT': '6444',
         'SGE_EXECD_PORT': '6445', 'PATH': '/usr/bin:/bin', 'LC_ALL': 'C'}
REMOTE = dict(LOCAL, SGE_CELL='remote', SGE_QMASTER_PORT='6446', SGE_EXECD_PORT='6447')
WORK = '/tmp/gridengine-balancer-tq-test'
JOB = '#!/bin/sh\necho "host=$(hostname) arg1=[$1] arg2=[$2]"\nsleep ${SLEEP:-2}\nexit ${CODE:-0}\n'
# The queues and their options: one file, also read by the molecule scenario transfer_queue.
VARS_FILE = os.path.join(ROOT, 'tests', 'integration', 'files', 'transfer_vars.yml')
PLAY = [os.path.join(ROOT, '.venv/bin/ansible-playbook'), os.path.join(ROOT, 'playbooks/multicluster.yml'),
        '-e', 'cluster=mycluster', '-e', '@' + VARS_FILE]
# Set by the molecule scenario transfer_queue (scripts/test.sh), whose converge set the queues up
# with VARS_FILE and whose destroy removes them: the test then neither sets up nor removes them.
CONVERGED = os.environ.get('GEB_TRANSFER_CONVERGED') == '1'
# A complex of the local cell only (the partner does not know it): jobs asking for it are refused
# by the partner and must come back to the local cluster.
LOCAL_ONLY = 'tq_localonly'


def run(argv, env, check=True):
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=600, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError('%s: rc %s\n%s\n%s' % (argv, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def qsub(env, *args):
    argv = ['runuser', '-u', 'tester', '--', 'env'] + ['%s=%s' % kv for kv in env.items()] + \
        ['/usr/bin/qsub', '-terse', '-cwd'] + list(args)
    return run(argv, None).stdout.strip().split('.')[0]


def wait_for(what, func, timeout=90, step=1.0):
    deadline = time.time() + timeout
    while True:
        value = func()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError('timed out waiting for %s' % what)
        time.sleep(step)


def load_value(name):
    out = run(['qhost', '-F', name, '-h', 'vm'], LOCAL).stdout
    for line in out.splitlines():
        if ':%s=' % name in line:
            return float(line.split('=')[1])
    return None


def job_state(env, job_id):
    out = run(['qstat', '-u', '*'], env).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == str(job_id):
            return fields[4], (fields[7] if len(fields) > 8 else '')
    return None


def acct(env, job_id):
    proc = run(['qacct', '-j', str(job_id)], env, check=False)
    if proc.returncode != 0:
        return None
    rec = {}
    for line in proc.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            rec[parts[0]] = parts[1].strip()
    return rec


def remote_job_of(local_id):
    """The partner job whose context names the local job."""
    out = run(['qstat', '-u', '*', '-xml'], REMOTE).stdout
    for jid in re.findall(r'<JB_job_number>([0-9]+)</JB_job_number>', out):
        detail = run(['qstat', '-j', jid], REMOTE, check=False).stdout
        if 'tq_local_job=%s,' % local_id in detail:
            return jid
    return None


def play_env():
    env = dict(os.environ, **{k: v for k, v in LOCAL.items() if k not in ('PATH', 'LC_ALL')})
    env['LC_ALL'] = 'C.UTF-8'
    return env


@pytest.fixture(scope='module')
def clusters():
    if run(['qstat'], LOCAL, check=False).returncode != 0:
        pytest.skip('the local cluster is not up (playbooks/local_cluster.yml)')
    os.makedirs(WORK, exist_ok=True)
    os.chmod(WORK, 0o777)
    with open(os.path.join(WORK, 'job.sh'), 'w') as handle:
        handle.write(JOB)
    os.chmod(os.path.join(WORK, 'job.sh'), 0o755)
    if not CONVERGED:
        run(PLAY, play_env())
    run(['qmod', '-d', 'transfer_ht.q'], LOCAL)
    queue = run(['qconf', '-sq', 'transfer.q'], LOCAL).stdout
    lines = []
    for line in queue.splitlines():
        key = line.split()[0]
        if key in ('starter_method', 'suspend_method', 'resume_method', 'terminate_method', 'load_thresholds'):
            line = key + ' NONE'
        lines.append({'qname': 'qname tqlocal.q', 'seq_no': 'seq_no 0', 'rerun': 'rerun FALSE'}.get(key, line))
    with open(os.path.join(WORK, 'tqlocal.q'), 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    if 'tqlocal.q' not in run(['qconf', '-sql'], LOCAL).stdout.split():
        run(['qconf', '-Aq', os.path.join(WORK, 'tqlocal.q')], LOCAL)
    complexes = run(['qconf', '-sc'], LOCAL).stdout
    if not re.search(r'(?m)^%s\s' % LOCAL_ONLY, complexes):
        with open(os.path.join(WORK, 'complexes'), 'w') as handle:
            handle.write(complexes + '%s %s INT <= YES NO 0 0\n' % (LOCAL_ONLY, LOCAL_ONLY))
        run(['qconf', '-Mc', os.path.join(WORK, 'complexes')], LOCAL)
    run(['qconf', '-aattr', 'exechost', 'complex_values', '%s=10' % LOCAL_ONLY, 'global'], LOCAL, check=False)
    yield
    for job in _jobs_in_test_queues():
        run(['qdel', job], LOCAL, check=False)
    wait_for('the test queues empty', lambda: not _jobs_in_test_queues(), timeout=120)
    run(['qconf', '-dq', 'tqlocal.q'], LOCAL, check=False)
    run(['qconf', '-dattr', 'exechost', 'complex_values', '%s=10' % LOCAL_ONLY, 'global'], LOCAL, check=False)
    complexes = run(['qconf', '-sc'], LOCAL).stdout
    with open(os.path.join(WORK, 'complexes'), 'w') as handle:
        handle.write(''.join(line + '\n' for line in complexes.splitlines() if not line.startswith(LOCAL_ONLY + ' ')))
    run(['qconf', '-Mc', os.path.join(WORK, 'complexes')], LOCAL, check=False)
    if not CONVERGED:
        run(PLAY + ['-e', 'multicluster_state=absent', '-e', 'multicluster_destroy=true'], play_env())


def _jobs_in_test_queues():
    """Ids of the jobs in tqlocal.q or transfer.q (qselect -q would list queue instances)."""
    out = run(['qstat', '-u', '*', '-q', 'tqlocal.q,transfer.q,transfer_ht.q', '-xml'], LOCAL, check=False).stdout
    return sorted(set(re.findall(r'<JB_job_number>([0-9]+)</JB_job_number>', out)))


def fill_local(seconds):
    """Fill tqlocal.q's one slot for ``seconds``. A test that does not need its filler to end by
    itself deletes it at its end (``done_with``): the next test's filler would otherwise wait for
    it (109 s in all in the CI run of 2026-11-25)."""
    job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'fill', '-l', 'remote=true', '-q', 'tqlocal.q',
               '-v', 'SLEEP=%d' % seconds, os.path.join(WORK, 'job.sh'))
    wait_for('the filler to run', lambda: (job_state(LOCAL, job) or ('',))[0] == 'r')
    wait_for('local_free=0', lambda: load_value('local_free') == 0, timeout=120)
    return job


def done_with(filler):
    run(['qdel', filler], LOCAL, check=False)


def test_overflow_exit_status_and_hostile_names(clusters):
    filler = fill_local(60)
    wait_for('remote_pending=0', lambda: load_value('remote_pending') == 0, timeout=60)
    name = 'x$(touch${IFS}owned)'
    job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', name, '-l', 'remote=true,h_rt=600', '-v', 'SLEEP=2', '-v', 'CODE=3',
               os.path.join(WORK, 'job.sh'), '$(touch /tmp/owned)', 'two words')
    rec = wait_for('the local accounting record', lambda: acct(LOCAL, job), timeout=180, step=2)
    assert rec['qname'] == 'transfer.q'
    assert rec['exit_status'].split()[0] == '3'
    with open(os.path.join(WORK, '%s.o%s' % (name, job))) as handle:
        assert handle.read().strip() == 'host=partner01 arg1=[$(touch /tmp/owned)] arg2=[two words]'
    assert not os.path.exists('/tmp/owned')
    assert not os.path.exists(os.path.join(WORK, 'owned'))
    # qacct_remote follows the local job id to the partner job's accounting record
    proc = run(['/var/lib/gridengine-transfer/transfer.q/qacct_remote', str(job)], LOCAL, check=False)
    assert proc.returncode == 0, proc.stderr
    assert '# local job %s -> cell remote job ' % job in proc.stdout and 'found by qacct' in proc.stdout
    assert re.search(r'(?m)^exit_status\s+3\s*$', proc.stdout), proc.stdout
    # the request h_rt=600 reached the partner renamed by transfer_queue_resource_map; remote=true did not
    category = re.search(r'(?m)^category\s+(.*)$', proc.stdout).group(1)
    assert 's_rt=600' in category and 'h_rt' not in category and 'remote' not in category, category
    done_with(filler)


def test_stays_local_when_partner_busy(clusters):
    filler = fill_local(40)
    busy = [qsub(REMOTE, '-o', WORK, '-e', WORK, '-N', 'busy', '-v', 'SLEEP=30', os.path.join(WORK, 'job.sh'))
            for dummy in range(5)]
    wait_for('remote_pending>=1', lambda: (load_value('remote_pending') or 0) >= 1, timeout=60)
    job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'stay', '-l', 'remote=true', os.path.join(WORK, 'job.sh'))
    time.sleep(8)
    assert job_state(LOCAL, job)[0] == 'qw'
    detail = run(['qstat', '-j', job], LOCAL).stdout
    assert 'remote_pending' in detail
    run(['qdel'] + busy, REMOTE, check=False)
    run(['qdel', job], LOCAL, check=False)
    done_with(filler)


def test_suspend_resume_terminate_reach_the_partner(clusters):
    filler = fill_local(60)
    wait_for('remote_pending=0', lambda: load_value('remote_pending') == 0, timeout=90)
    job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'srt', '-l', 'remote=true', '-v', 'SLEEP=120',
               os.path.join(WORK, 'job.sh'))
    remote = wait_for('the partner job', lambda: remote_job_of(job), timeout=60)
    wait_for('the partner job to run', lambda: (job_state(REMOTE, remote) or ('',))[0] == 'r', timeout=60)
    run(['runuser', '-u', 'tester', '--', 'env'] + ['%s=%s' % kv for kv in LOCAL.items()] + ['qmod', '-sj', job], None)
    wait_for('the partner job suspended', lambda: (job_state(REMOTE, remote) or ('',))[0] == 's', timeout=30)
    run(['runuser', '-u', 'tester', '--', 'env'] + ['%s=%s' % kv for kv in LOCAL.items()] + ['qmod', '-usj', job], None)
    wait_for('the partner job resumed', lambda: (job_state(REMOTE, remote) or ('',))[0] == 'r', timeout=30)
    run(['runuser', '-u', 'tester', '--', 'env'] + ['%s=%s' % kv for kv in LOCAL.items()] + ['qdel', job], None)
    wait_for('the partner job gone', lambda: job_state(REMOTE, remote) is None, timeout=60)
    rec = wait_for('the partner accounting record', lambda: acct(REMOTE, remote), timeout=60, step=2)
    assert rec['exit_status'].split()[0] != '0'
    wait_for('the local job gone', lambda: job_state(LOCAL, job) is None, timeout=60)
    done_with(filler)


def local_records(job_id):
    """Every local accounting record of a job (a re-queued job has one per run)."""
    proc = run(['qacct', '-j', str(job_id)], LOCAL, check=False)
    recs = []
    for block in re.split(r'(?m)^=+\s*$', proc.stdout if proc.returncode == 0 else ''):
        rec = {k: v.strip() for k, v in (line.split(None, 1) for line in block.splitlines() if len(line.split(None, 1)) == 2)}
        if rec.get('jobnumber') == str(job_id):
            recs.append(rec)
    return recs


def partner_jobs_of(local_id):
    """Partner job ids (pending, running or finished) whose name says they came from ``local_id``."""
    out = run(['qstat', '-u', '*', '-xml'], REMOTE).stdout
    names = re.findall(r'<JB_job_number>([0-9]+)</JB_job_number>\s*<JAT_prio>[^<]*</JAT_prio>\s*<JB_name>tq%s_' % local_id, out)
    acct_out = run(['qacct', '-j', 'tq%s_*' % local_id], REMOTE, check=False).stdout
    return sorted(set(names + re.findall(r'(?m)^jobnumber\s+([0-9]+)', acct_out)))


def test_a_job_the_partner_refuses_comes_back_and_runs_locally(clusters):
    fill_local(20)
    wait_for('remote_pending=0', lambda: load_value('remote_pending') == 0, timeout=60)
    job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'refused', '-l', 'remote=true,%s=1' % LOCAL_ONLY,
               '-v', 'SLEEP=1', '-v', 'CODE=5', os.path.join(WORK, 'job.sh'))
    final = wait_for('the local run in tqlocal.q', lambda: [r for r in local_records(job) if r['qname'] == 'tqlocal.q'],
                     timeout=240, step=3)
    assert final[0]['exit_status'].split()[0] == '5' and final[0]['failed'].split()[0] == '0'
    assert [r['exit_status'].split()[0] for r in local_records(job) if r['qname'] == 'transfer.q'] == ['99']
    assert partner_jobs_of(job) == []
    with open(os.path.join(WORK, 'refused.e%s' % job)) as handle:
        err = handle.read()
    assert 'unknown resource "%s"' % LOCAL_ONLY in err and 'not eligible for transfer' in err


def test_a_job_pending_on_the_partner_is_pulled_back_when_local_frees(clusters):
    busy = [qsub(REMOTE, '-o', WORK, '-e', WORK, '-N', 'busy', '-v', 'SLEEP=120', os.path.join(WORK, 'job.sh'))
            for dummy in range(3)]
    try:
        wait_for('the partner full', lambda: all((job_state(REMOTE, b) or ('',))[0] == 'r' for b in busy), timeout=60)
        filler = fill_local(25)
        wait_for('remote_pending=0', lambda: load_value('remote_pending') == 0, timeout=60)
        job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'pullback', '-l', 'remote=true', '-v', 'SLEEP=1', '-v', 'CODE=4',
                   os.path.join(WORK, 'job.sh'))
        remote = wait_for('the partner job', lambda: remote_job_of(job), timeout=90)
        assert (job_state(REMOTE, remote) or ('',))[0] == 'qw'
        final = wait_for('the local run after the pull-back',
                         lambda: [r for r in local_records(job) if r['qname'] == 'tqlocal.q'], timeout=240, step=3)
        assert final[0]['exit_status'].split()[0] == '4'
        assert job_state(REMOTE, remote) is None                  # deleted while still pending, never ran
        assert not [r for r in (acct(REMOTE, remote) or {}).get('hostname', '').split() if r]
        assert acct(LOCAL, filler)['exit_status'].split()[0] == '0'
    finally:
        run(['qdel'] + busy, REMOTE, check=False)


def queue_conf(name):
    conf = {}
    for line in run(['qconf', '-sq', name], LOCAL).stdout.splitlines():
        key, dummy, value = line.partition(' ')
        conf[key] = value.strip()
    return conf


def test_several_transfer_queues_and_high_throughput(clusters):
    """Two transfer queues to the partner: transfer.q keeps its pending threshold; transfer_ht.q
    (high throughput) has none, a tenth of the partner's slots and its own resources, so it still
    sends a job while the partner has pending work, and the job's own exit status comes home."""
    plain, ht = queue_conf('transfer.q'), queue_conf('transfer_ht.q')
    # transfer.q closes at a few pending partner jobs; transfer_ht.q only when no partner answers
    # (its sensor then reports 99999, the role's transfer_queue_unreachable_value)
    plain_limits = dict(kv.split('=') for kv in plain['load_thresholds'].split(','))
    ht_limits = dict(kv.split('=') for kv in ht['load_thresholds'].split(','))
    assert int(plain_limits['remote_pending']) < 100, plain_limits
    assert ht_limits['remote_pending_transfer_ht_q'] == '99999', ht_limits
    assert ht['slots'] == '1', ht['slots']        # 10 % of the partner's 3 slots, at least one
    assert set(ht['complex_values'].split(',')) == {'remote=TRUE', 'h_vmem=4G'}, ht['complex_values']
    # each queue has its own load sensor and pending complex; the first keeps the old name
    assert load_value('remote_pending_transfer_ht_q') is not None
    filler = fill_local(150)
    busy = [qsub(REMOTE, '-o', WORK, '-e', WORK, '-N', 'busy', '-v', 'SLEEP=60', os.path.join(WORK, 'job.sh'))
            for dummy in range(5)]
    run(['qmod', '-e', 'transfer_ht.q'], LOCAL)
    try:
        wait_for('remote_pending>=1', lambda: (load_value('remote_pending') or 0) >= 1, timeout=60)
        # transfer.q is closed by its threshold; transfer_ht.q still takes a job for it
        stay = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'stay', '-l', 'remote=true', '-q', 'transfer.q',
                    os.path.join(WORK, 'job.sh'))
        job = qsub(LOCAL, '-o', WORK, '-e', WORK, '-N', 'ht', '-l', 'remote=true,h_vmem=1G', '-q', 'transfer_ht.q',
                   '-v', 'SLEEP=1', '-v', 'CODE=6', os.path.join(WORK, 'job.sh'))
        remote = wait_for('the partner job of the high-throughput queue', lambda: remote_job_of(job), timeout=60)
        assert (job_state(LOCAL, stay) or ('',))[0] == 'qw'
        run(['qdel', stay], LOCAL, check=False)
        run(['qdel'] + busy, REMOTE, check=False)     # the partner job may start now
        rec = wait_for('the local accounting record', lambda: acct(LOCAL, job), timeout=180, step=2)
        assert rec['qname'] == 'transfer_ht.q' and rec['exit_status'].split()[0] == '6', rec
        assert acct(REMOTE, remote)['exit_status'].split()[0] == '6'
        with open(os.path.join(WORK, 'ht.o%s' % job)) as handle:
            assert handle.read().strip().startswith('host=partner01 ')
    finally:
        run(['qmod', '-d', 'transfer_ht.q'], LOCAL, check=False)
        run(['qdel'] + busy, REMOTE, check=False)
        done_with(filler)
