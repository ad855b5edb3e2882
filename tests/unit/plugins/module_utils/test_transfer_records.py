# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transfer queue's records in its shared jobs directory (issue 20, findings 3 and 4).

The jobs directory is shared and sticky (1777) and the record names follow sequential job ids,
so another user can create a job's record or ``.terminated`` flag before the job starts. Each
user's records now live in ``<jobs_dir>/u<uid>/`` (made 0700 by that user, checked on every use);
a planted file in the shared directory is never read, one in a user directory that is not that
user's own 0700 directory gets the job re-queued (exit 99), never killed, and ``qalter_remote`` /
``qstat_remote`` take only the caller's own records and only a job number as the remote id.
Standard library and pytest only (also run under the nodes' /usr/bin/python3).
"""

from __future__ import annotations

import io
import json
import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import transfer as t
from ansible_collections.gridengine.balancer.plugins.module_utils import transfer_remote as trr

OTHER = 65534                # nobody: "another user"
ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="needs root to create files of another user")

QACCT = """==============================================================
qname        all.q
jobnumber    12
exit_status  3
failed       0
"""


class FakeRunner(object):
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, argv, env):
        self.calls.append(list(argv))
        for prefix, rc, out, err in self.answers:
            if argv[:len(prefix)] == prefix:
                if isinstance(rc, list):
                    return rc.pop(0), out, err
                return rc, out, err
        return 1, '', 'Following jobs do not exist'


def cfg(tmp_path):
    jobs = tmp_path / 'jobs'
    jobs.mkdir(exist_ok=True)
    os.chmod(str(jobs), 0o1777)
    return {'bin_dir': '/usr/bin', 'jobs_dir': str(jobs), 'poll_interval': 1, 'accounting_timeout': 3,
            'qsub_args': [], 'project': '',
            'local': {'root': '/r', 'cell': 'default'}, 'remote': {'root': '/r', 'cell': 'remote'}}


ENV = {'JOB_ID': '4242', 'SGE_TASK_ID': 'undefined', 'JOB_NAME': 'j', 'HOME': '/home/u', 'USER': 'u'}


def _runner():
    return FakeRunner([
        (['/usr/bin/qstat', '-j', '4242'], 0, 'submission_time: Mon Nov 23 18:42:24 2026\n', ''),
        (['/usr/bin/qstat', '-j', 'tq'], 1, '', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', 'tq'], 1, '', 'not found'),
        (['/usr/bin/qsub'], 0, '12\n', ''),
        (['/usr/bin/qstat', '-j', '12'], [0, 1], 'job_number: 12\n', 'Following jobs do not exist'),
        (['/usr/bin/qacct', '-j', '12'], 0, QACCT, ''),
    ])


def _plant(path, data, uid=OTHER):
    with open(path, 'w') as handle:
        handle.write(data)
    os.chown(path, uid, uid)


@ROOT_ONLY
@pytest.mark.parametrize('planted', ['4242.0.terminated', '4242.0.json'])
def test_a_planted_record_or_flag_in_the_shared_directory_is_ignored(tmp_path, planted):
    """Before: a planted ``.terminated`` deleted the partner job and the starter returned 143; a
    planted record failed the job. Now neither is read: the job runs as usual."""
    c = cfg(tmp_path)
    _plant(os.path.join(c['jobs_dir'], planted), json.dumps({'token': 'tq4242_0_x', 'remote_id': '*'}))
    runner = _runner()
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab')
    assert tr.start('/spool/job_scripts/4242', [], '/w') == 3
    assert not [call for call in runner.calls if call[0] == '/usr/bin/qdel']
    assert os.path.exists(os.path.join(c['jobs_dir'], planted))      # not ours: left alone


@ROOT_ONLY
def test_a_user_directory_made_by_another_user_requeues_the_job(tmp_path):
    c = cfg(tmp_path)
    mine = t.records_dir(c)
    os.mkdir(mine, 0o700)
    os.chown(mine, OTHER, OTHER)
    runner = _runner()
    err = io.StringIO()
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab', err=err)
    assert tr.start('/spool/job_scripts/4242', [], '/w') == t.EXIT_RESCHEDULE
    assert not [call for call in runner.calls if call[0] in ('/usr/bin/qsub', '/usr/bin/qdel')]
    assert 'not your own' in err.getvalue() and mine in err.getvalue()


@ROOT_ONLY
@pytest.mark.parametrize('planted', ['4242.0.terminated', '4242.0.json'])
def test_a_foreign_file_in_the_user_directory_requeues_never_kills(tmp_path, planted):
    c = cfg(tmp_path)
    mine = t.records_dir(c)
    os.mkdir(mine, 0o700)
    _plant(os.path.join(mine, planted), json.dumps({'token': 'tq4242_0_x', 'remote_id': '12'}))
    runner = _runner()
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab', err=io.StringIO())
    assert tr.start('/spool/job_scripts/4242', [], '/w') == t.EXIT_RESCHEDULE
    assert not [call for call in runner.calls if call[0] in ('/usr/bin/qsub', '/usr/bin/qdel')]


def test_a_user_directory_open_to_others_requeues_the_job(tmp_path):
    c = cfg(tmp_path)
    mine = t.records_dir(c)
    os.mkdir(mine)
    os.chmod(mine, 0o777)
    tr = t.Transfer(c, ENV, runner=_runner(), sleep=lambda s: None, nonce=lambda: 'ab', err=io.StringIO())
    assert tr.start('/spool/job_scripts/4242', [], '/w') == t.EXIT_RESCHEDULE


def test_records_are_kept_in_a_private_directory_of_the_user(tmp_path):
    c = cfg(tmp_path)
    seen = {}
    runner = _runner()
    real_run = runner.run

    def run(argv, env):
        if argv[0] == '/usr/bin/qsub':
            seen['files'] = sorted(os.listdir(t.records_dir(c)))
            seen['mode'] = os.stat(t.records_dir(c)).st_mode & 0o777
        return real_run(argv, env)
    runner.run = run
    tr = t.Transfer(c, ENV, runner=runner, sleep=lambda s: None, nonce=lambda: 'ab')
    assert tr.start('/spool/job_scripts/4242', [], '/w') == 3
    assert seen == {'files': ['4242.0.json'], 'mode': 0o700}
    assert os.listdir(c['jobs_dir']) == [os.path.basename(t.records_dir(c))]


# --------------------------------------------------------------------------- qalter_remote --

def test_qalter_remote_never_passes_a_record_remote_id_that_is_not_a_job_number(tmp_path):
    c = cfg(tmp_path)
    mine = t.records_dir(c)
    os.mkdir(mine, 0o700)
    for rid in ('*', '-u', '12 13', '1\n2'):
        with open(os.path.join(mine, '77.0.json'), 'w') as handle:
            json.dump({'remote_id': rid}, handle)
        runner = FakeRunner([])
        trr.run('qalter', ['77', '-l', 'h_rt=1:00:00'], c, runner, io.StringIO(), io.StringIO())
        assert not [call for call in runner.calls if call[0] == '/usr/bin/qalter'], (rid, runner.calls)


@ROOT_ONLY
def test_qalter_remote_ignores_records_of_other_users(tmp_path):
    c = cfg(tmp_path)
    # where the records were before (the shared directory) and a foreign one in the user directory
    _plant(os.path.join(c['jobs_dir'], '77.0.json'), json.dumps({'remote_id': '99'}))
    mine = t.records_dir(c)
    os.mkdir(mine, 0o700)
    _plant(os.path.join(mine, '77.1.json'), json.dumps({'remote_id': '98'}))
    assert trr._records(c, '77', None) == []  # pylint: disable=protected-access
    runner = FakeRunner([])
    trr.run('qalter', ['77', '-l', 'h_rt=1:00:00'], c, runner, io.StringIO(), io.StringIO())
    assert not [call for call in runner.calls if call[0] == '/usr/bin/qalter']


def test_qalter_remote_takes_only_job_numbers_from_the_partner(tmp_path):
    c = cfg(tmp_path)
    runner = FakeRunner([(['/usr/bin/qstat', '-j', 'tq77_*'], 0, 'job_number: *\njob_number: 12\n', '')])
    assert [r[0] for r in trr.find_remote(c, runner, '77')] == ['12']
