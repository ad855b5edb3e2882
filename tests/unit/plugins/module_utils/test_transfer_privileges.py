# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transfer-queue load sensor leaves root before it does anything (issue 7 part 7).

Grid Engine's execd starts load sensors as root. ``transfer.drop_privileges`` switches to the
sensor's user (``setgroups([])``, ``setgid``, ``setuid``) and checks that root cannot be taken
back; ``transfer.main('load_sensor', ...)`` does that before it reads ``transfer.json``, and a
sensor that cannot switch reports why on stdout (the only stream the execd reads) and exits
instead of running as root.

No real id is changed here (these tests may run as root): every ``os`` function that reads or
sets ids is replaced by :class:`FakeIds`, which behaves like the kernel for one process, and
every other id-changing function fails the test if called.
"""

from __future__ import annotations

import errno
import io
import json
import os
import pwd
import re
import sys

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import transfer as t

SENSOR = {'user': 'gebtransfer', 'host': 'vm', 'closed': {'remote_pending': 99999}}
ENTRY = pwd.struct_passwd(('gebtransfer', 'x', 998, 997, 'gridengine.balancer transfer-queue load sensor',
                           '/nonexistent', '/usr/sbin/nologin'))


class FakeIds:
    """The credentials of one process, changed as Linux does (setuid(2), setgid(2), setgroups(2))."""

    def __init__(self, uid=0, gid=0, groups=(0, 4, 27), keeps_saved_root=False, refuses=(), ignores=()):
        self.ruid = self.euid = self.suid = uid
        self.rgid = self.egid = self.sgid = gid
        self.groups = list(groups)
        self.keeps_saved_root = keeps_saved_root   # a broken setuid: the saved uid stays 0
        self.refuses = set(refuses)                # calls that fail with EPERM
        self.ignores = set(ignores)                # calls that return without doing anything
        self.calls = []

    def _eperm(self, call):
        self.calls.append(call + ('EPERM',))
        raise PermissionError(errno.EPERM, 'Operation not permitted')

    def setgroups(self, groups):
        call = ('setgroups', list(groups))
        if self.euid != 0 or 'setgroups' in self.refuses:
            self._eperm(call)
        self.calls.append(call)
        if 'setgroups' not in self.ignores:
            self.groups = list(groups)

    def setgid(self, gid):
        call = ('setgid', gid)
        if 'setgid' in self.refuses:
            self._eperm(call)
        if self.euid == 0:
            self.calls.append(call)
            if 'setgid' not in self.ignores:
                self.rgid = self.egid = self.sgid = gid
        elif gid in (self.rgid, self.sgid):
            self.calls.append(call)
            self.egid = gid
        else:
            self._eperm(call)

    def setuid(self, uid):
        call = ('setuid', uid)
        if 'setuid' in self.refuses:
            self._eperm(call)
        if self.euid == 0:
            self.calls.append(call)
            self.ruid = self.euid = uid
            if not self.keeps_saved_root:
                self.suid = uid
        elif uid in (self.ruid, self.suid):
            self.calls.append(call)
            self.euid = uid
        else:
            self._eperm(call)

    def getuid(self):
        return self.ruid

    def geteuid(self):
        return self.euid

    def getgid(self):
        return self.rgid

    def getegid(self):
        return self.egid

    def getgroups(self):
        return list(self.groups)

    def changes(self):
        """The id changes asked for, in order, without the ones that failed."""
        return [c for c in self.calls if c[-1] != 'EPERM']


def _forbidden(name):
    def call(*args):
        raise AssertionError('os.%s%r called: the sensor only uses setgroups, setgid and setuid' % (name, args))
    return call


@pytest.fixture
def ids(monkeypatch):
    """Install a FakeIds factory: ``ids(uid=..., ...)`` returns the process's fake credentials."""
    users = {'gebtransfer': ENTRY}

    def getpwnam(name):
        install.lookups.append(name)
        return users[name]

    def install(**kwargs):
        fake = FakeIds(**kwargs)
        for name in ('setgroups', 'setgid', 'setuid', 'getuid', 'geteuid', 'getgid', 'getegid', 'getgroups'):
            monkeypatch.setattr(t.os, name, getattr(fake, name))
        return fake

    for name in ('seteuid', 'setegid', 'setreuid', 'setregid', 'setresuid', 'setresgid', 'initgroups', 'chroot'):
        if hasattr(os, name):
            monkeypatch.setattr(t.os, name, _forbidden(name))
    monkeypatch.setattr(t.pwd, 'getpwnam', getpwnam)
    install.users = users
    install.lookups = []
    return install


# ----------------------------------------------------------------------- drop_privileges ----

def test_root_switches_groups_gid_uid_in_that_order_and_cannot_take_root_back(ids):
    fake = ids()
    assert t.drop_privileges('gebtransfer') == (998, 997)
    assert fake.calls == [('setgroups', []), ('setgid', 997), ('setuid', 998),
                          ('setuid', 0, 'EPERM'), ('setgid', 0, 'EPERM')]
    assert (fake.ruid, fake.euid, fake.suid, fake.rgid, fake.egid, fake.sgid, fake.groups) == \
        (998, 998, 998, 997, 997, 997, [])


def test_a_sensor_started_as_a_user_just_runs(ids):
    fake = ids(uid=1000, gid=1000, groups=(1000,))
    assert t.drop_privileges('gebtransfer') is None
    assert t.drop_privileges('no-such-user') is None      # the user is not even looked up
    assert fake.calls == [] and ids.lookups == []


def test_an_effective_root_also_switches(ids):
    fake = ids()
    fake.ruid = 1000                                      # set-uid root: real uid 1000, effective 0
    assert t.drop_privileges('gebtransfer') == (998, 997)
    assert (fake.ruid, fake.euid, fake.suid) == (998, 998, 998)


def test_a_missing_user_is_refused_before_any_switch(ids):
    fake = ids()
    with pytest.raises(t.PrivilegeError, match='the user gebtransfer2 does not exist on this host '
                                               r'\(transfer_queue_sensor_user\): not running as root instead'):
        t.drop_privileges('gebtransfer2')
    assert fake.calls == [] and fake.euid == 0


@pytest.mark.parametrize('user', [None, ''])
def test_root_without_a_user_is_refused(ids, user):
    fake = ids()
    with pytest.raises(t.PrivilegeError, match='started as root and no user to run as was given'):
        t.drop_privileges(user)
    assert fake.calls == []


@pytest.mark.parametrize('uid, gid', [(0, 997), (998, 0), (0, 0)])
def test_a_user_with_uid_or_gid_0_is_refused(ids, uid, gid):
    fake = ids()
    ids.users['toor'] = pwd.struct_passwd(('toor', 'x', uid, gid, '', '/root', '/bin/sh'))
    with pytest.raises(t.PrivilegeError, match='the user toor has uid %d and gid %d' % (uid, gid)):
        t.drop_privileges('toor')
    assert fake.calls == []


@pytest.mark.parametrize('refused', ['setgroups', 'setgid', 'setuid'])
def test_a_failed_switch_is_refused(ids, refused):
    fake = ids(refuses=[refused])
    with pytest.raises(t.PrivilegeError, match='cannot switch to the user gebtransfer .*Operation not permitted'):
        t.drop_privileges('gebtransfer')
    # nothing after the failed call was tried
    assert fake.calls[-1][0] == refused and fake.calls[-1][-1] == 'EPERM'


def test_root_that_could_be_taken_back_is_refused(ids):
    fake = ids(keeps_saved_root=True)
    with pytest.raises(t.PrivilegeError, match='could take uid 0 back'):
        t.drop_privileges('gebtransfer')
    assert ('setuid', 0) in fake.calls


@pytest.mark.parametrize('ignored', ['setgroups', 'setgid'])
def test_ids_that_are_not_the_users_after_the_switch_are_refused(ids, ignored):
    ids(ignores=[ignored])
    with pytest.raises(t.PrivilegeError, match='after switching to gebtransfer the ids are'):
        t.drop_privileges('gebtransfer')


# ------------------------------------------------------------------- main('load_sensor') ----

def _execd_reads(text):
    """What the execd makes of a report (sge_load_sensor.c read_ls): load values, error lines."""
    values, errors = {}, []
    for line in text.splitlines():
        if line in ('begin', 'end'):
            continue
        match = re.match(r'^([^:]+):([^:]+):(.+)$', line)      # sscanf("%[^:]:%[^:]:%[^\n]") == 3
        if match:
            values[(match.group(1), match.group(2))] = match.group(3)
        else:
            errors.append(line)
    return values, errors


@pytest.fixture
def sensor_dir(tmp_path):
    jobs = tmp_path / 'jobs'
    jobs.mkdir()
    (tmp_path / 'status').mkdir()
    cfg = {'bin_dir': '/nonexistent/bin', 'jobs_dir': str(jobs), 'status_file': str(tmp_path / 'status' / 'status.json'),
           'host': 'vm', 'pending_complex': 'remote_pending', 'local_free_complex': '',
           'local': {'root': '/r', 'cell': 'default'},
           'partners': [{'name': 'remote', 'root': '/r', 'cell': 'remote'}], 'unreachable_value': 99999}
    (tmp_path / t.CONFIG_NAME).write_text(json.dumps(cfg))
    return tmp_path


def _run_main(monkeypatch, sensor_dir, stdin, sensor=None):
    sensor = SENSOR if sensor is None else sensor
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, 'stdin', io.StringIO(stdin))
    monkeypatch.setattr(sys, 'stdout', out)
    monkeypatch.setattr(sys, 'stderr', err)
    rc = t.main('load_sensor', str(sensor_dir / 'load_sensor'), argv=['load_sensor'], environ={}, sensor=sensor)
    return rc, out.getvalue(), err.getvalue()


def _no_commands(monkeypatch):
    def run(*args, **kwargs):
        raise AssertionError('a command ran: %r' % (args,))
    monkeypatch.setattr(t.subprocess, 'run', run)


def test_the_sensor_switches_before_it_reads_its_configuration(ids, monkeypatch, sensor_dir):
    fake = ids()
    seen = []
    real_load = t.load_config

    def load_config(path):
        seen.append((path, fake.euid, fake.egid, fake.getgroups()))
        return real_load(path)

    monkeypatch.setattr(t, 'load_config', load_config)
    _no_commands(monkeypatch)
    rc, out, dummy = _run_main(monkeypatch, sensor_dir, 'quit\n')
    assert rc == 0 and out == ''
    assert seen == [(str(sensor_dir / t.CONFIG_NAME), 998, 997, [])]
    assert fake.changes()[:3] == [('setgroups', []), ('setgid', 997), ('setuid', 998)]


@pytest.mark.parametrize('user, reason', [
    ('gebtransfer2', 'the user gebtransfer2 does not exist on this host (transfer_queue_sensor_user)  '
                     'not running as root instead'),
    (None, 'started as root and no user to run as was given'),
])
def test_a_sensor_that_cannot_switch_says_so_to_grid_engine_closes_the_queue_and_exits(
        ids, monkeypatch, sensor_dir, user, reason):
    fake = ids()
    monkeypatch.setattr(t, 'load_config', _forbidden('load_config (transfer.json read as root)'))
    _no_commands(monkeypatch)
    rc, out, err = _run_main(monkeypatch, sensor_dir, '\n\n', sensor=dict(SENSOR, user=user))
    assert rc == t.EXIT_FAILED
    values, errors = _execd_reads(out)
    # the queue closes: the pending complex at the unreachable value, as for a silent partner
    assert values == {('vm', 'remote_pending'): '99999'}
    # and the execd logs the reason ("Format error of loadsensor ... Received: ...")
    assert len(errors) == 1 and errors[0].startswith('transfer_queue load_sensor error - ' + reason)
    assert out.startswith('begin\n') and out.endswith('\nend\n')
    assert 'transfer load_sensor: ' in err
    assert fake.changes() == [] and fake.euid == 0
    assert not (sensor_dir / 'status' / 'status.json').exists()


def test_a_failing_sensor_answers_only_when_asked_and_stops_on_quit(ids, monkeypatch, sensor_dir):
    ids()
    for stdin in ('', 'quit\n'):
        rc, out, dummy = _run_main(monkeypatch, sensor_dir, stdin, sensor=dict(SENSOR, user='nobody-here'))
        assert (rc, out) == (t.EXIT_FAILED, '')


def test_a_failing_sensor_waits_until_the_execd_has_read_its_report():
    """The execd restarts a sensor that exited before it reads the sensor's output: the report
    would be lost. So the sensor reads the execd's next request before it exits."""
    class Stdin:
        def __init__(self):
            self.reads = 0

        def readline(self):
            self.reads += 1
            return '\n'

    stdin, out = Stdin(), io.StringIO()
    assert t.sensor_failure('broken', SENSOR, stdin, out, stderr=io.StringIO()) == t.EXIT_FAILED
    assert stdin.reads == 2 and out.getvalue().count('begin') == 1


def test_the_failure_line_never_looks_like_a_load_value():
    out = io.StringIO()
    t.sensor_failure('a:b:c\nvm:remote_pending:0\x00' + 'x' * 20000, SENSOR, io.StringIO('\n'), out,
                     stderr=io.StringIO())
    values, errors = _execd_reads(out.getvalue())
    assert values == {('vm', 'remote_pending'): '99999'}
    assert len(errors) == 1 and ':' not in errors[0] and len(errors[0]) <= 900


def test_a_bad_sensor_description_reports_no_values():
    out = io.StringIO()
    t.sensor_failure('x', {'host': 'vm;rm', 'closed': {'remote_pending': 'a:b'}}, io.StringIO('\n'), out,
                     stderr=io.StringIO())
    assert _execd_reads(out.getvalue())[0] == {}


def test_a_sensor_started_as_a_user_with_a_broken_configuration_says_so(ids, monkeypatch, sensor_dir):
    fake = ids(uid=1000, gid=1000, groups=(1000,))
    (sensor_dir / t.CONFIG_NAME).write_text('{"local": ')
    rc, out, dummy = _run_main(monkeypatch, sensor_dir, '\n\n')
    assert rc == t.EXIT_FAILED and fake.calls == []
    values, errors = _execd_reads(out)
    assert values == {('vm', 'remote_pending'): '99999'}
    assert errors[0].startswith('transfer_queue load_sensor error - %s' % (sensor_dir / t.CONFIG_NAME))


def test_the_sensor_writes_status_json_where_the_configuration_says(ids, monkeypatch, sensor_dir):
    ids(uid=1000, gid=1000, groups=(1000,))
    monkeypatch.setattr(t.Runner, 'run', lambda self, argv, env: (1, '', 'unable to contact qmaster'))
    rc, out, dummy = _run_main(monkeypatch, sensor_dir, '\nquit\n')
    assert rc == 0 and out == 'begin\nvm:remote_pending:99999\nend\n'
    status = sensor_dir / 'status' / 'status.json'
    assert status.exists() and not (sensor_dir / 'status.json').exists()
    assert oct(status.stat().st_mode & 0o777) == '0o644'


def test_the_methods_never_switch_user(ids, monkeypatch, tmp_path):
    """starter/suspend/resume/terminate run as the job owner (Grid Engine switches before it runs
    them): they neither look up the sensor's user nor change an id."""
    fake = ids()
    monkeypatch.setattr(sys, 'stderr', io.StringIO())
    assert t.main('terminate', str(tmp_path / 'terminate'), argv=['terminate'], environ={}) == t.EXIT_FAILED
    assert fake.calls == [] and ids.lookups == []
