# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils.transfer_remote: qstat_remote / qacct_remote / qalter_remote find the partner job."""

from __future__ import annotations

import io
import json
import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import transfer as tr
from ansible_collections.gridengine.balancer.plugins.module_utils import transfer_remote as trr

QACCT = """==============================================================
qname        all.q
hostname     partner01
jobname      tq77_0_ab12cd34_hello
jobnumber    12
failed       0
exit_status  3
==============================================================
qname        all.q
hostname     partner01
jobname      tq770_0_ffff0000_other
jobnumber    13
failed       0
exit_status  0
"""


class FakeRunner(object):
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, argv, env):
        self.calls.append(list(argv))
        name = argv[0].rsplit('/', 1)[-1]
        return self.answers.get((name,) + tuple(argv[1:]), (1, '', 'not found'))


@pytest.fixture
def records(tmp_path):
    """The caller's records directory (issue 20: ``<jobs_dir>/u<uid>``, private)."""
    path = tmp_path / ('u%d' % os.getuid())
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def cfg(tmp_path):
    return {'local': {'root': '/r', 'cell': 'default'}, 'remote': {'root': '/r', 'cell': 'remote', 'qmaster_port': 6446},
            'jobs_dir': str(tmp_path), 'bin_dir': '/usr/bin'}


def test_a_running_job_is_found_by_its_record_and_qstat_runs_on_the_partner(cfg, records):
    (records / '77.0.json').write_text(json.dumps({'token': 'tq77_0_ab12cd34', 'remote_id': '12'}))
    runner = FakeRunner({('qstat', '-j', '12'): (0, 'job_number: 12\n', '')})
    out, err = io.StringIO(), io.StringIO()
    assert trr.run('qstat', ['77'], cfg, runner, out, err) == 0
    assert '# local job 77 -> cell remote job 12 (found by record)' in out.getvalue()
    assert ['/usr/bin/qstat', '-j', '12'] in runner.calls


def test_a_finished_job_is_found_in_the_partner_accounting_by_its_exact_prefix(cfg):
    runner = FakeRunner({('qacct', '-j', 'tq77_*'): (0, QACCT, ''), ('qacct', '-j', '12'): (0, QACCT, '')})
    assert [r[:2] for r in trr.find_remote(cfg, runner, '77')] == [('12', 'qacct')]          # not job 13 (tq770_)


def test_qalter_arguments_are_data(cfg, records):
    (records / '77.0.json').write_text(json.dumps({'remote_id': '12'}))
    hostile = '$(touch /tmp/owned)'
    runner = FakeRunner({('qalter', '-N', hostile, '12'): (0, 'modified\n', '')})
    assert trr.run('qalter', ['77', '-N', hostile], cfg, runner, io.StringIO(), io.StringIO()) == 0
    assert ['/usr/bin/qalter', '-N', hostile, '12'] in runner.calls


@pytest.mark.parametrize('argv, command, message', [
    (['77;rm'], 'qstat', 'not a local job id'), ([], 'qstat', 'usage'), (['77', 'x'], 'qacct', 'only the local job id'),
    (['77'], 'qalter', 'needs the qalter arguments'), (['77'], 'qdel', 'unknown command')])
def test_bad_input_is_refused(cfg, argv, command, message):
    with pytest.raises(tr.TransferError, match=message):
        trr.run(command, argv, cfg, FakeRunner({}), io.StringIO(), io.StringIO())


def test_no_partner_job(cfg):
    err = io.StringIO()
    assert trr.run('qacct', ['5'], cfg, FakeRunner({}), io.StringIO(), err) == 1
    assert 'no partner job found in cell remote' in err.getvalue()


def test_a_deeply_nested_record_is_skipped(cfg, records):
    # found by the parser fuzzing: json.load raised RecursionError (docs/reliability/fuzzing.md)
    (records / '77.0.json').write_bytes(b'[' * 100000 + b']' * 100000)
    (records / '77.1.json').write_text(json.dumps({'remote_id': '12'}))
    assert trr._records(cfg, '77', None) == [('12', 'remote')]  # pylint: disable=protected-access
