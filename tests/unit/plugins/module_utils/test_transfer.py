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
    argv = t.build_qsub_argv(cfg(tmp_path), '/spool/vm/job_scripts/1995', ['$(touch /tmp/owned)', 'two words'],
                             'tq1995_0_ab', ENV, '/home/tester')
    assert argv[:3] == ['/usr/bin/qsub', '-terse', '-V']
    assert argv[argv.index('-N') + 1] == 'tq1995_0_ab_x$(touch${IFS}owned)'
    assert argv[-3:] == ['/spool/vm/job_scripts/1995', '$(touch /tmp/owned)', 'two words']
    assert '-b' not in argv and argv[argv.index('-wd') + 1] == '/w'
    binary = t.build_qsub_argv(cfg(tmp_path), '/bin/sleep', ['1'], 'tq1_0_a', ENV, '/')
    assert binary[-4:] == ['-b', 'y', '/bin/sleep', '1']
    env = t.job_env_for_partner(ENV, cfg(tmp_path)['remote'])
    assert env['SGE_CELL'] == 'remote' and env['SGE_QMASTER_PORT'] == '6446'
    assert 'JOB_ID' not in env and 'TMPDIR' not in env and env['PATH'] == '/usr/bin' and env['FOO'] == 'bar'


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
    assert os.listdir(cfg(tmp_path)['jobs_dir']) == []


def test_starter_after_a_crash_finds_the_job_instead_of_submitting(tmp_path):
    c = cfg(tmp_path)
    # a record without a partner job id: the starter died between qsub and recording
    with open(os.path.join(c['jobs_dir'], '1995.0.json'), 'w') as handle:
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
    t.write_json_atomic(os.path.join(c['jobs_dir'], '1995.0.json'), {'token': 'tq1995_0_ab', 'remote_id': '12'})
    runner = FakeRunner([(['/usr/bin/qmod'], 0, '', ''), (['/usr/bin/qdel'], 0, '', '')])
    for action in ('suspend', 'resume', 'terminate'):
        assert t.Transfer(c, ENV, runner=runner).act(action) == 0
    assert [call[0][1:] for call in runner.calls] == [['-sj', '12'], ['-usj', '12'], ['12']]
    assert all(call[1]['SGE_CELL'] == 'remote' for call in runner.calls)
    assert os.path.exists(os.path.join(c['jobs_dir'], '1995.0.terminated'))


def test_sensor_reports_unreachable_partner_as_busy(tmp_path):
    runner = FakeRunner([(['/usr/bin/qstat', '-g', 'c'], 0, QSTAT_GC, '')])
    out = io.StringIO()
    assert t.run_sensor(cfg(tmp_path), io.StringIO('\nquit\n'), out, runner=runner) == 0
    assert out.getvalue() == 'begin\nvm:local_free:3\nvm:remote_pending:99999\nend\n'
