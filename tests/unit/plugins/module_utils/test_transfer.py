# -*- coding: utf-8 -*-
"""Unit tests of the transfer-queue methods (plugins/module_utils/transfer.py).

The qacct/qstat texts are from the real partner cell this collection brings up
(playbooks/multicluster.yml, SoGE 8.1.9, 2026-11-23): ``qacct -j 12`` of a transferred job and
``qstat -g c -xml`` of the partner.
"""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import transfer as t

QACCT = """==============================================================
qname        all.q
hostname     partner01
jobname      tq1995_0_5cdf05f7_x$(touch${IFS}owned)
jobnumber    12
failed       0
exit_status  3
"""
QSTAT_GC = """<?xml version='1.0'?>
<job_info  xmlns:xsd="http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd">
  <cluster_queue_summary>
    <name>all.q</name><load>1.32056</load><used>0</used><resv>0</resv><available>3</available>
    <total>3</total><temp_disabled>0</temp_disabled><manual_intervention>0</manual_intervention>
  </cluster_queue_summary>
  <cluster_queue_summary>
    <name>transfer.q</name><load>1.32056</load><used>0</used><resv>0</resv><available>1</available>
    <total>1</total><temp_disabled>0</temp_disabled><manual_intervention>0</manual_intervention>
  </cluster_queue_summary>
</job_info>
"""
PENDING = """<?xml version='1.0'?>
<job_info><queue_info></queue_info><job_info>
<job_list state="pending"><JB_job_number>5</JB_job_number><state>qw</state></job_list>
<job_list state="pending"><JB_job_number>6</JB_job_number><state>hqw</state></job_list>
</job_info></job_info>
"""


def own(c):
    """This user's records directory (issue 20: records no longer sit in the shared jobs directory)."""
    path = t.records_dir(c)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def cfg(tmp_path):
    jobs = tmp_path / 'jobs'
    jobs.mkdir(exist_ok=True)
    return {'bin_dir': '/usr/bin', 'jobs_dir': str(jobs), 'host': 'vm', 'pending_complex': 'remote_pending',
            'local_free_complex': 'local_free', 'transfer_queues': ['transfer.q'], 'local_queues': [],
            'poll_interval': 1, 'accounting_timeout': 3, 'qsub_args': [], 'project': '',
            'local': {'root': '/r', 'cell': 'default', 'qmaster_port': '6444', 'execd_port': '6445'},
            'remote': {'root': '/r', 'cell': 'remote', 'qmaster_port': '6446', 'execd_port': '6447'}}


ENV = {'JOB_ID': '1995', 'SGE_TASK_ID': 'undefined', 'JOB_NAME': 'x$(touch${IFS}owned)', 'HOME': '/home/tester',
       'USER': 'tester', 'SGE_STDOUT_PATH': '/w/o', 'SGE_STDERR_PATH': '/w/e', 'SGE_CWD_PATH': '/w',
       'SGE_CELL': 'default', 'TMPDIR': '/tmp/1995.1.transfer.q', 'PATH': '/tmp/1995.1.transfer.q:/usr/bin', 'FOO': 'bar'}


class FakeRunner:
    """Answers commands from a list of (argv prefix, rc, out, err); records every call."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, argv, env):
        self.calls.append((argv, env))
        for prefix, rc, out, err in self.answers:
            if argv[:len(prefix)] == prefix:
                if isinstance(rc, list):
                    return rc.pop(0), out, err
                return rc, out, err
        return 1, '', 'Following jobs do not exist'


def test_helpers():
    assert t.make_token('12', 'undefined', 'ab') == 'tq12_0_ab'
    assert t.remote_job_name('tq12_0_ab', 'x y') == 'tq12_0_ab_x y'
    assert t.record_name('12', '3') == '12.3.json'
    with pytest.raises(t.TransferError):
        t.record_name('../x', 'undefined')
    assert t.parse_qsub_terse('123\n') == '123'
    assert t.parse_qsub_terse('124.1-4:1\n') == '124'
    assert t.parse_qstat_j('job_number:   8\nerror reason    1: x\n') == (['8'], True)
    rec = t.parse_qacct(QACCT)[0]
    assert rec['jobnumber'] == '12' and t.exit_status_of(rec) == 3
    assert t.exit_status_of({'failed': '100 : assumedly after job', 'exit_status': '0'}) == t.EXIT_FAILED
    assert t.free_slots(QSTAT_GC, exclude=['transfer.q']) == 3
    assert t.free_slots(QSTAT_GC, include=['transfer.q']) == 1
    assert t.count_pending(PENDING) == 2
    assert t.sensor_report('vm', {'b': 1, 'a': 0}) == 'begin\nvm:a:0\nvm:b:1\nend\n'


def test_qsub_argv_is_data_and_env_is_clean(tmp_path):
    c = cfg(tmp_path)
    argv = t.build_qsub_argv(c, t.partners_of(c)[0], '/spool/vm/job_scripts/1995', ['$(touch /tmp/owned)', 'two words'],
                             'tq1995_0_ab', ENV, '/home/tester')
    assert argv[:3] == ['/usr/bin/qsub', '-terse', '-V']
    assert argv[argv.index('-N') + 1] == 'tq1995_0_ab_x$(touch${IFS}owned)'
    assert argv[-3:] == ['/spool/vm/job_scripts/1995', '$(touch /tmp/owned)', 'two words']
    assert '-b' not in argv and argv[argv.index('-wd') + 1] == '/w'
    assert argv[argv.index('-w') + 1] == 'e' and '-l' not in argv
    binary = t.build_qsub_argv(c, t.partners_of(c)[0], '/bin/sleep', ['1'], 'tq1_0_a', ENV, '/')
    assert binary[-4:] == ['-b', 'y', '/bin/sleep', '1']
    env = t.job_env_for_partner(ENV, cfg(tmp_path)['remote'])
    assert env['SGE_CELL'] == 'remote' and env['SGE_QMASTER_PORT'] == '6446'
    assert 'JOB_ID' not in env and 'TMPDIR' not in env and env['PATH'] == '/usr/bin' and env['FOO'] == 'bar'


@pytest.mark.parametrize('task, expected', [
    ('undefined', None), ('2', ['-t', '2-2']), ('17', ['-t', '17-17']), ('0', None), ('2;id', None), ('', None),
])
def test_an_array_task_is_the_same_task_at_the_partner(tmp_path, task, expected):
    c = cfg(tmp_path)
    argv = t.build_qsub_argv(c, t.partners_of(c)[0], '/spool/vm/job_scripts/1995', [], 'tq1995_2_ab',
                             dict(ENV, SGE_TASK_ID=task), '/w')
    got = argv[argv.index('-t'):argv.index('-t') + 2] if '-t' in argv else None
    assert got == expected


def test_starter_submits_records_waits_and_returns_exit(tmp_path):
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, 'submission_time: Mon Nov 23 18:42:24 2026\n', ''),
        (['/usr/bin/qstat', '-j', 'tq'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', 'tq'], 1, '', 'not found'),
        (['/usr/bin/qsub'], 0, '12\n', ''),
        (['/usr/bin/qstat', '-j', '12'], [0, 1], 'job_number: 12\n', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    tr = t.Transfer(cfg(tmp_path), ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab')
    assert tr.start('/spool/job_scripts/1995', ['a'], '/w') == 3
    submits = [c for c in runner.calls if c[0][0] == '/usr/bin/qsub']
    assert len(submits) == 1
    assert os.listdir(own(cfg(tmp_path))) == []


def test_starter_after_a_crash_finds_the_job_instead_of_submitting(tmp_path):
    c = cfg(tmp_path)
    # a record without a partner job id: the starter died between qsub and recording
    with open(os.path.join(own(c), '1995.0.json'), 'w') as handle:
        json.dump({'token': 'tq1995_0_ab', 'local_submit': ''}, handle)
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 1, '', ''),
        (['/usr/bin/qstat', '-j', 'tq1995_0_ab*'], 0, 'job_number: 12\n', ''),
        (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None)
    assert tr.start('/spool/job_scripts/1995', [], '/w') == 3
    assert not [call for call in runner.calls if call[0][0] == '/usr/bin/qsub']


def test_suspend_resume_terminate_act_on_the_partner_job(tmp_path):
    c = cfg(tmp_path)
    t.write_json_atomic(os.path.join(own(c), '1995.0.json'), {'token': 'tq1995_0_ab', 'remote_id': '12'})
    runner = FakeRunner([(['/usr/bin/qmod'], 0, '', ''), (['/usr/bin/qdel'], 0, '', '')])
    for action in ('suspend', 'resume', 'terminate'):
        assert t.Transfer(c, ENV, runner=runner).act(action) == 0
    assert [call[0][1:] for call in runner.calls] == [['-sj', '12'], ['-usj', '12'], ['12']]
    assert all(call[1]['SGE_CELL'] == 'remote' for call in runner.calls)
    assert os.path.exists(os.path.join(own(c), '1995.0.terminated'))


def test_sensor_reports_unreachable_partner_as_busy(tmp_path):
    runner = FakeRunner([(['/usr/bin/qstat', '-g', 'c'], 0, QSTAT_GC, '')])
    out = io.StringIO()
    assert t.run_sensor(cfg(tmp_path), io.StringIO('\nquit\n'), out, runner=runner) == 0
    assert out.getvalue() == 'begin\nvm:local_free:3\nvm:remote_pending:99999\nend\n'


@pytest.mark.parametrize('complex_name, pullback, counted', [
    ('local_free', 0, True), ('', 120, True), ('', 0, False)])
def test_local_free_slots_are_counted_for_the_report_or_for_the_pull_back(tmp_path, complex_name, pullback, counted):
    c = dict(cfg(tmp_path), local_free_complex=complex_name, pullback_after=pullback)
    runner = FakeRunner([(['/usr/bin/qstat', '-g', 'c'], 0, QSTAT_GC, '')])
    status = t.sensor_status(c, runner, 1000.0)
    assert status.get('local_free') == (3 if counted else None)
    assert ('local_free' in t.sensor_values(c, status)) == bool(complex_name)


# ----------------------------------------------------------------- the howto's improvements --

LOCAL_J = ('job_number:                 1995\nsubmission_time:            Mon Nov 23 18:42:24 2026\n'
           'hard resource_list:         h_vmem=2G,remote=TRUE,arch=lx-amd64,licence=1\n')
# qstat -u '*' -g d -xml of the partner cell (trimmed from the real partner, 2026-11-24)
BULK = """<?xml version='1.0'?>
<job_info><queue_info>
<job_list state="running"><JB_job_number>12</JB_job_number><JB_name>tq1995_0_ab_x</JB_name><state>r</state></job_list>
</queue_info><job_info>
<job_list state="pending"><JB_job_number>13</JB_job_number><JB_name>tq1996_0_cd_y</JB_name><state>qw</state></job_list>
<job_list state="pending"><JB_job_number>14</JB_job_number><JB_name>busy</JB_name><state>qw</state></job_list>
</job_info></job_info>
"""
QHOST = """<?xml version='1.0'?>
<qhost><host name='global'><hostvalue name='mem_total'>-</hostvalue></host>
<host name='partner01'><hostvalue name='mem_total'>23.5G</hostvalue><hostvalue name='mem_used'>819.9M</hostvalue></host>
</qhost>
"""


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_bulk_parsers():
    pending, jobs = t.parse_jobs(BULK)
    assert pending == 2 and jobs == {'12': 'r', '13': 'qw'}
    assert t.cluster_slots(QSTAT_GC) == {'total': 4, 'used': 0, 'free': 4}
    total, used = t.cluster_memory(QHOST)
    assert total == 23.5 * 1024 ** 3 and round(used) == round(819.9 * 1024 ** 2)
    assert t.parse_memory('-') is None and t.parse_memory('1.5K') == 1536
    assert t.parse_local_job(LOCAL_J)['resources'][0] == ('h_vmem', '2G')
    assert [t.job_phase(s) for s in ('qw', 'hqw', 'r', 'Rr', 't', 'Eqw', '')] == \
        ['pending', 'pending', 'running', 'running', 'running', 'error', 'other']
    assert t.classify_refusal('Unable to run job: unknown resource "foo"') is t.PartnerRefused
    assert t.classify_refusal('error: commlib error: got select error (Connection refused)') is t.PartnerUnreachable


def test_resource_mapping_renames_revalues_drops_and_never_passes_internal_complexes():
    partner = {'name': 'p', 'resource_map': {'h_vmem': 'mem', 'arch': {'values': {'lx-amd64': 'linux-x64'}},
                                             'licence': ''}}
    requests = t.parse_local_job(LOCAL_J)['resources']
    assert t.map_resources(requests, partner, {'remote'}) == [('mem', '2G'), ('arch', 'linux-x64')]
    assert t.map_resources(requests, {'name': 'p', 'pass_resources': False}, {'remote'}) == []
    with pytest.raises(t.TransferError):
        t.map_resources([('a', 'x\nb')], {'name': 'p'})


def test_resources_reach_the_partner_qsub(tmp_path):
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qsub'], 0, '12\n', ''),
        (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    c = dict(cfg(tmp_path), remote_complex='remote')
    c['remote'] = dict(c['remote'], resource_map={'licence': None})
    clock = Clock()
    tr = t.Transfer(c, ENV, runner=runner, sleep=clock.sleep, clock=clock, nonce=lambda: 'ab')
    assert tr.start('/spool/job_scripts/1995', [], '/w') == 3
    qsub = [call[0] for call in runner.calls if call[0][0] == '/usr/bin/qsub'][0]
    assert qsub[qsub.index('-l') + 1] == 'h_vmem=2G,arch=lx-amd64'


def test_refused_job_goes_back_to_the_local_queues_not_killed(tmp_path):
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qsub'], 1, '', 'Unable to run job: unknown resource "licence"\nExiting.\n'),
        (['/usr/bin/qconf', '-sql'], 0, 'all.q\nbig.q\ntransfer.q\n', ''),
        (['/usr/bin/qalter'], 0, 'modified hard queue list of job 1995\n', ''),
    ])
    err = io.StringIO()
    tr = t.Transfer(cfg(tmp_path), ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab', err=err)
    assert tr.start('/spool/job_scripts/1995', [], '/w') == t.EXIT_RESCHEDULE
    qalter = [call for call in runner.calls if call[0][0] == '/usr/bin/qalter'][0]
    assert qalter[0][1:] == ['-q', 'all.q,big.q', '1995'] and qalter[1]['SGE_CELL'] == 'default'
    assert 'unknown resource' in err.getvalue() and 'not eligible for transfer' in err.getvalue()
    assert os.listdir(own(cfg(tmp_path))) == []


def test_a_qsub_that_fails_but_submits_is_followed_not_sent_back(tmp_path):
    # the burst partner at rest (no execution host): qsub warns, submits and exits 1
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qsub'], 1, 'Your job 12 ("tq1995_0_ab_job") has been submitted\nExiting.\n',
         "Unable to run job: warning: tester's job is not allowed to run in any queue\n"),
        (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    err = io.StringIO()
    tr = t.Transfer(cfg(tmp_path), ENV, runner=runner, sleep=Clock().sleep, clock=Clock(), nonce=lambda: 'ab', err=err)
    assert tr.start('/spool/job_scripts/1995', [], '/w') == 3
    assert not [call for call in runner.calls if call[0][0] in ('/usr/bin/qalter', '/usr/bin/qconf')]
    assert 'qsub exited 1 but submitted job 12' in err.getvalue()


@pytest.mark.parametrize('text, job', [
    ('Your job 12 ("x") has been submitted\n', '12'),
    ('Your job-array 40.1-4:1 ("x") has been submitted\n', '40'),
    ('Unable to run job: unknown resource "licence"\nExiting.\n', None),
    ('error: Your job 12 is not a job\n', None),
])
def test_submitted_anyway(text, job):
    assert t.submitted_anyway(text) == job


def test_refused_job_that_asked_only_for_the_transfer_queue_is_kept_in_error_state(tmp_path):
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J + 'hard_queue_list:            transfer.q\n', ''),
        (['/usr/bin/qsub'], 1, '', 'Unable to run job: error: no suitable queues.\n'),
    ])
    tr = t.Transfer(cfg(tmp_path), ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab', err=io.StringIO())
    assert tr.start('/spool/job_scripts/1995', [], '/w') == t.EXIT_ERROR_STATE
    assert not [call for call in runner.calls if call[0][0] == '/usr/bin/qalter']


def test_unreachable_partner_requeues_without_marking(tmp_path):
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qsub'], 1, '', 'error: commlib error: got select error (Connection refused)\n'),
    ])
    tr = t.Transfer(cfg(tmp_path), ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab', err=io.StringIO())
    assert tr.start('/spool/job_scripts/1995', [], '/w') == t.EXIT_RESCHEDULE
    assert not [call for call in runner.calls if call[0][0] in ('/usr/bin/qalter', '/usr/bin/qconf')]


def _status(c, now, jobs, local_free=0, reachable=True):
    t.write_json_atomic(t.status_path(c), {'time': now, 'local_free': local_free, 'route': {},
                                           'partners': {'remote': {'reachable': reachable, 'pending': 0, 'jobs': jobs}}})


def test_starter_waits_on_the_sensors_bulk_status_not_on_the_partner(tmp_path):
    c = cfg(tmp_path)
    clock = Clock()

    def sleep(seconds):
        clock.sleep(seconds)
        # the sensor's view: the job runs for 30 s after submission, then is gone
        _status(c, clock.now, {'12': 'r'} if clock.now < 1030 else {})

    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qstat', '-j', 'tq'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', 'tq'], 1, '', 'not found'),
        (['/usr/bin/qsub'], 0, '12\n', ''),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    tr = t.Transfer(c, ENV, runner=runner, sleep=sleep, clock=clock, nonce=lambda: 'ab')
    _status(c, clock.now, {})
    assert tr.start('/spool/job_scripts/1995', [], '/w') == 3
    assert not [call for call in runner.calls if call[0][:3] == ['/usr/bin/qstat', '-j', '12']]


def test_without_a_fresh_status_the_partner_is_asked_at_most_every_5_seconds(tmp_path):
    c = dict(cfg(tmp_path), poll_interval=1)
    clock = Clock()
    asked = []
    answers = [0] * 5 + [1]
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qsub'], 0, '12\n', ''),
        (['/usr/bin/qstat', '-j', '12'], answers, 'job_number: 12\n', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    orig = runner.run

    def run(argv, env):
        if argv[:3] == ['/usr/bin/qstat', '-j', '12']:
            asked.append(clock.now)
        return orig(argv, env)

    runner.run = run
    tr = t.Transfer(c, ENV, runner=runner, sleep=clock.sleep, clock=clock, nonce=lambda: 'ab')
    assert tr.start('/spool/job_scripts/1995', [], '/w') == 3
    assert len(asked) == 6 and min(b - a for a, b in zip(asked, asked[1:])) >= t.MIN_PARTNER_POLL


def test_pending_partner_job_is_pulled_back_when_local_slots_free(tmp_path):
    c = dict(cfg(tmp_path), pullback_after=30)
    clock = Clock()

    def sleep(seconds):
        clock.sleep(seconds)
        _status(c, clock.now, {'12': 'qw'}, local_free=1 if clock.now >= 1040 else 0)

    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 0, LOCAL_J, ''),
        (['/usr/bin/qsub'], 0, '12\n', ''),
        (['/usr/bin/qhold'], 0, '', ''),
        (['/usr/bin/qstat', '-u', '*', '-s', 'p'], 0, BULK.replace('<state>r</state>', '<state>hqw</state>')
         .replace('state="running"', 'state="pending"'), ''),
        (['/usr/bin/qdel'], 0, '', ''),
        (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist'),
    ])
    err = io.StringIO()
    tr = t.Transfer(c, ENV, runner=runner, sleep=sleep, clock=clock, nonce=lambda: 'ab', err=err)
    _status(c, clock.now, {})
    assert tr.start('/spool/job_scripts/1995', [], '/w') == t.EXIT_RESCHEDULE
    names = [call[0][0].rsplit('/', 1)[1] for call in runner.calls]
    assert names.index('qhold') < names.index('qdel') and 'pulled back' in err.getvalue()
    assert 1040 <= clock.now <= 1045      # pending longer than pullback_after: pulled back as local slots free
    assert os.listdir(own(c)) == []


@pytest.mark.parametrize('context, withdrawn', [('tq_burst=1', True), ('tq_burst=0', False), (None, False)])
def test_a_pulled_back_burst_job_gets_its_own_requests_back(tmp_path, context, withdrawn):
    # the burst router sent the job: -l <own>,remote=true -ac tq_burst=1 (docs/burst.md)
    local_j = LOCAL_J + ('context:                    %s\n' % context if context else '')
    c = dict(cfg(tmp_path), pullback_after=1)
    rec = {'token': 'tq1995_0_ab', 'remote_id': '12', 'submitted_at': 0, 'partner': 'remote'}
    runner = FakeRunner([
        (['/usr/bin/qdel'], 0, '', ''),
        (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qstat', '-j', '1995'], 0, local_j, ''),
        (['/usr/bin/qalter'], 0, 'modified hard resource list of job 1995\n', ''),
    ])
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab', err=io.StringIO())
    assert tr.complete_pull_back(t.partners_of(c)[0], rec) == t.EXIT_RESCHEDULE
    qalter = [call[0][1:] for call in runner.calls if call[0][0] == '/usr/bin/qalter']
    assert qalter == ([['-l', 'h_vmem=2G,arch=lx-amd64,licence=1', '-dc', 'tq_burst', '1995']] if withdrawn else [])


def test_pull_back_keeps_a_job_that_started_meanwhile(tmp_path):
    c = dict(cfg(tmp_path), pullback_after=1)
    rec = {'token': 'tq1995_0_ab', 'remote_id': '12', 'submitted_at': 0, 'partner': 'remote'}
    runner = FakeRunner([
        (['/usr/bin/qhold'], 0, '', ''),
        (['/usr/bin/qstat', '-u', '*', '-s', 'p'], 0, '<job_info/>', ''),
        (['/usr/bin/qrls'], 0, '', ''),
    ])
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None)
    assert tr.pull_back(t.partners_of(c)[0], '12', rec) is None
    assert [call[0][0] for call in runner.calls][-1] == '/usr/bin/qrls' and not rec.get('pulled_back')


def test_a_crash_during_pull_back_still_requeues_and_never_returns_the_deleted_jobs_status(tmp_path):
    c = cfg(tmp_path)
    t.write_json_atomic(os.path.join(own(c), '1995.0.json'),
                        {'token': 'tq1995_0_ab', 'remote_id': '12', 'pulled_back': True, 'local_submit': ''})
    runner = FakeRunner([(['/usr/bin/qstat', '-j', '1995'], 1, '', ''), (['/usr/bin/qdel'], 0, '', ''),
                         (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist')])
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None, err=io.StringIO())
    assert tr.start('/spool/job_scripts/1995', [], '/w') == t.EXIT_RESCHEDULE
    assert not [call for call in runner.calls if call[0][0] in ('/usr/bin/qsub', '/usr/bin/qacct')]


def test_lookup_after_a_crash_waits_out_a_qsub_in_flight(tmp_path):
    c = cfg(tmp_path)
    clock = Clock()
    t.write_json_atomic(os.path.join(own(c), '1995.0.json'),
                        {'token': 'tq1995_0_ab', 'local_submit': '', 'submit_started': clock.now - 3})
    seen = []
    runner = FakeRunner([
        (['/usr/bin/qstat', '-j', '1995'], 1, '', ''),
        (['/usr/bin/qstat', '-j', 'tq1995_0_ab*'], 0, 'job_number: 12\n', ''),
        (['/usr/bin/qstat', '-j', '12'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])
    orig = runner.run

    def run(argv, env):
        if argv[-1] == 'tq1995_0_ab*':
            seen.append(clock.now)
        return orig(argv, env)

    runner.run = run
    tr = t.Transfer(c, ENV, runner=runner, sleep=clock.sleep, clock=clock)
    assert tr.start('/spool/job_scripts/1995', [], '/w') == 3
    assert seen[0] >= 1000 - 3 + 10 and not [call for call in runner.calls if call[0][0] == '/usr/bin/qsub']


def test_sensor_bulk_polls_each_partner_at_most_every_5_seconds_and_routes(tmp_path):
    c = cfg(tmp_path)
    c['partners'] = [dict(c['remote'], name='east'), dict(c['remote'], name='west', cell='west')]
    c['pending_threshold'] = 2
    del c['remote']
    clock = Clock()
    answers = []

    class Runner:
        def run(self, argv, env):
            answers.append((env['SGE_CELL'], argv[1:]))
            if argv[1:] == ['-u', '*', '-g', 'd', '-xml']:
                return 0, BULK if env['SGE_CELL'] == 'west' else '<job_info/>', ''
            if argv[0].endswith('qhost'):
                return 0, QHOST, ''
            return 0, QSTAT_GC, ''

    lines = io.StringIO('\n' * 12 + 'quit\n')
    out = io.StringIO()

    class Input:
        def readline(self):
            clock.sleep(1)
            return lines.readline()

    assert t.run_sensor(c, Input(), out, runner=Runner(), clock=clock) == 0
    bulk = [a for a in answers if a[1][:2] == ['-u', '*']]
    assert len(bulk) == 2 * 3                      # 12 reports in 12 s: polls at 0, 5 and 10 s
    assert out.getvalue().count('begin') == 12
    assert 'vm:remote_pending:0\n' in out.getvalue()   # the fewest pending of the partners
    status = json.load(open(t.status_path(c)))
    assert status['partners']['west']['jobs'] == {'12': 'r', '13': 'qw'}
    assert status['route']['excluded'] == {'west': 'busy: 2 jobs waiting > 1'}
    assert set(status['route']['sequence']) == {'east'}


def test_starter_takes_its_entry_of_the_routing_cycle(tmp_path):
    c = cfg(tmp_path)
    c['partners'] = [dict(c['remote'], name='east'), dict(c['remote'], name='west', cell='west')]
    t.write_json_atomic(t.status_path(c), {'time': 1000, 'partners': {}, 'route': {'sequence': ['east', 'west', 'west']}})
    chosen = [t.Transfer(c, dict(ENV, JOB_ID=str(j)), clock=lambda: 1000).choose_partner()['name'] for j in range(6)]
    assert chosen == ['east', 'west', 'west'] * 2


# ------------------------------------------------ found by the parser fuzzing (docs/reliability/fuzzing.md) --

DEEP_JSON = b'{"local": ' + b'[' * 100000 + b']' * 100000 + b'}'


@pytest.mark.parametrize('data, message', [
    (b'{"local": "caf\xe9"}', 'not UTF-8'),
    (DEEP_JSON, r'not valid JSON \(nested too deeply\)'),
    (b'{"local": ', 'not valid JSON'),
])
def test_a_bad_config_is_a_transfer_error_naming_the_file(tmp_path, data, message):
    path = tmp_path / t.CONFIG_NAME
    path.write_bytes(data)
    with pytest.raises(t.TransferError, match=message) as info:
        t.load_config(str(path))
    assert str(path) in str(info.value)
    assert t.main('starter', str(tmp_path / 'starter'), argv=['starter', 'job.sh'], environ={}) == t.EXIT_FAILED


def test_deeply_nested_records_and_status_read_as_broken(tmp_path):
    c = cfg(tmp_path)
    rec = tmp_path / 'jobs' / ('u%d' % os.getuid()) / '1995.0.json'
    own(c)
    rec.write_bytes(DEEP_JSON)
    assert t.read_own_json(str(rec)) is None            # as any record that is not JSON
    with open(t.status_path(c), 'wb') as handle:
        handle.write(DEEP_JSON)
    assert t.read_status(c, 0, max_age=10 ** 9) is None


def test_cluster_memory_reads_each_hosts_own_values_in_linear_time():
    # a host's values are its children; a nested host (not Grid Engine's output) is a host of its
    # own, whose values are not the outer host's (host.iter() read them, quadratically)
    nested = ('<qhost><host name="a"><hostvalue name="mem_total">1G</hostvalue>'
              '<host name="b"><hostvalue name="mem_total">2G</hostvalue></host></host></qhost>')
    assert t.cluster_memory(nested) == (3 * 1024 ** 3, 0.0)
    deep = '<qhost>' + '<host name="h"><hostvalue name="mem_total">1K</hostvalue>' * 100000 + \
        '</host>' * 100000 + '</qhost>'
    assert t.cluster_memory(deep) == (100000 * 1024.0, 0.0)     # was > 5 s; a fraction of a second now


def test_runner_replaces_output_bytes_that_are_not_utf8():
    # a local process (not a Grid Engine command): a partner's qstat printing a Latin-1 job name
    code = 'import sys; sys.stdout.buffer.write(b"job caf\\xe9\\n"); sys.stderr.buffer.write(b"\\xff")'
    rc, out, err = t.Runner(timeout=30).run([sys.executable, '-c', code], dict(os.environ))
    assert (rc, out, err) == (0, 'job caf\ufffd\n', '\ufffd')
