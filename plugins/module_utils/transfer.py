# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transfer-queue methods: starter, suspend, resume, terminate and the load sensor.

A transfer queue (Grid Engine howto "A Prototype of a Multi-Clustering Implementation using
Transfer Queues") is a queue of the local cluster whose jobs run on a partner cluster: its
starter_method submits the job script there and waits for it, its suspend/resume/terminate
methods act on the partner's job, and a load sensor reports the partner's pending jobs so that the
queue's load_thresholds close it while the partner is busy.

The role gridengine.balancer.transfer_queue installs this file beside five small entry scripts
(``starter``, ``suspend``, ``resume``, ``terminate``, ``load_sensor``) and a ``transfer.json``
configuration. Standard library only (the scripts run under the job user's uid with the job's
environment, via ``/usr/bin/python3 -I``). Every command is an argv list: job names, paths and
arguments are data, never parts of a shell string.

Crash safety of the starter: before ``qsub`` it writes a record with a unique token; the partner's
job is named ``<token>_<job name>``. A starter that finds a record without a partner job id
(it died between submit and recording) looks the token up in the partner's ``qstat -j`` and
``qacct -j`` before it submits again, so a crash neither loses nor duplicates a job.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

CONFIG_NAME = 'transfer.json'

# Exit codes of the starter besides the partner job's own exit status.
EXIT_FAILED = 1          # the partner refused or lost the job
EXIT_TERMINATED = 143    # the job was terminated (128 + SIGTERM)

# Variables Grid Engine sets for every job: not passed on to the partner's job (its execd sets
# its own), so that the partner job does not see the local cluster's ids, paths or ports.
GE_JOB_VARS = frozenset((
    'ARC', 'ENVIRONMENT', 'HOSTNAME', 'JOB_ID', 'JOB_NAME', 'JOB_SCRIPT', 'NHOSTS', 'NQUEUES',
    'NSLOTS', 'PE', 'PE_HOSTFILE', 'QUEUE', 'REQNAME', 'REQUEST', 'RESTARTED', 'TMP', 'TMPDIR',
))

_SAFE_TOKEN = re.compile(r'^[A-Za-z0-9_]+$')


class TransferError(Exception):
    """A failure of a transfer method, with a message for the job's error output."""


# ----------------------------------------------------------------------------- pure helpers --

def make_token(job_id, task_id, nonce):
    """The unique token of one transfer (``tq<job>_<task>_<nonce>``), safe as a job name part."""
    task = task_id if task_id and task_id != 'undefined' else '0'
    token = 'tq%s_%s_%s' % (job_id, task, nonce)
    if not _SAFE_TOKEN.match(token):
        raise TransferError('job id %r / task id %r make no valid token' % (job_id, task_id))
    return token


def remote_job_name(token, job_name):
    """The partner job's name: the token, then the local name (Grid Engine accepts it there too)."""
    return '%s_%s' % (token, job_name) if job_name else token


def record_name(job_id, task_id):
    """File name of the record of one local job (task)."""
    task = task_id if task_id and task_id != 'undefined' else '0'
    if not re.match(r'^[0-9]+$', str(job_id)) or not re.match(r'^[0-9]+$', task):
        raise TransferError('JOB_ID %r / SGE_TASK_ID %r are not job and task numbers' % (job_id, task_id))
    return '%s.%s.json' % (job_id, task)


def cell_env(cell, home=None, user=None):
    """Minimal environment of a Grid Engine client command for ``cell`` (a config dict)."""
    env = {
        'PATH': '/usr/bin:/bin',
        'LC_ALL': 'C',
        'SGE_ROOT': cell['root'],
        'SGE_CELL': cell['cell'],
    }
    if cell.get('qmaster_port'):
        env['SGE_QMASTER_PORT'] = str(cell['qmaster_port'])
    if cell.get('execd_port'):
        env['SGE_EXECD_PORT'] = str(cell['execd_port'])
    if home:
        env['HOME'] = home
    if user:
        env['USER'] = env['LOGNAME'] = user
    return env


def job_env_for_partner(environ, cell):
    """The job's environment as the partner job should get it (``qsub -V``).

    Grid Engine's own job variables and the local cell's SGE_* settings are left out, the job's
    TMPDIR is taken out of PATH, and the partner cell's settings are put in (qsub needs them).
    """
    tmpdir = environ.get('TMPDIR')
    env = {}
    for key, value in environ.items():
        if key in GE_JOB_VARS or key.startswith('SGE_'):
            continue
        env[key] = value
    if tmpdir and 'PATH' in env:
        env['PATH'] = os.pathsep.join(p for p in env['PATH'].split(os.pathsep) if p != tmpdir)
    env.update({k: v for k, v in cell_env(cell).items() if k.startswith('SGE_')})
    env.setdefault('PATH', '/usr/bin:/bin')
    return env


def build_qsub_argv(cfg, command, args, token, environ, cwd):
    """argv of the partner ``qsub`` for the local job's ``command`` and ``args``.

    ``command`` is the job script the starter got from Grid Engine (in the execd's
    ``job_scripts`` directory) or, for a binary job (``qsub -b y``), the binary.
    """
    job_name = environ.get('JOB_NAME', '')
    argv = [os.path.join(cfg['bin_dir'], 'qsub'), '-terse', '-V',
            '-N', remote_job_name(token, job_name),
            '-ac', 'tq_token=%s,tq_local_job=%s,tq_local_cell=%s' % (
                token, environ.get('JOB_ID', ''), cfg['local']['cell'])]
    stdout = environ.get('SGE_STDOUT_PATH')
    stderr = environ.get('SGE_STDERR_PATH')
    if stdout:
        argv += ['-o', stdout]
    if stderr and stderr != stdout:
        argv += ['-e', stderr]
    elif stderr:
        argv += ['-j', 'y']
    argv += ['-wd', environ.get('SGE_CWD_PATH') or cwd]
    if cfg.get('project'):
        argv += ['-P', cfg['project']]
    argv += list(cfg.get('qsub_args') or [])
    if os.path.basename(os.path.dirname(command)) != 'job_scripts':
        argv += ['-b', 'y']
    argv += [command] + list(args)
    return argv


def parse_qsub_terse(out):
    """The job id printed by ``qsub -terse`` (``123`` or ``123.1-4:1`` for an array)."""
    for line in out.splitlines():
        line = line.strip()
        match = re.match(r'^([0-9]+)(\.[0-9:-]+)?$', line)
        if match:
            return match.group(1)
    raise TransferError('qsub -terse printed no job id: %r' % out[:200])


def parse_qstat_j(out):
    """Job numbers and whether any is in error state, from ``qstat -j`` text."""
    numbers = re.findall(r'(?m)^job_number:\s+([0-9]+)\s*$', out)
    error = bool(re.search(r'(?m)^error reason\s', out))
    return numbers, error


def parse_qacct(out):
    """Records of ``qacct -j`` text: list of dicts with jobnumber, jobname, failed, exit_status."""
    records = []
    for block in re.split(r'(?m)^=+\s*$', out):
        rec = {}
        for line in block.splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0] in ('jobnumber', 'jobname', 'failed', 'exit_status', 'qname', 'hostname'):
                rec[parts[0]] = parts[1].strip()
        if 'jobnumber' in rec:
            records.append(rec)
    return records


def exit_status_of(rec):
    """The exit status the starter returns for a partner accounting record."""
    try:
        status = int(rec.get('exit_status', '1').split()[0])
    except ValueError:
        status = EXIT_FAILED
    failed = rec.get('failed', '0').split()[0]
    if failed not in ('0', '') and status == 0:
        return EXIT_FAILED
    return status


def count_pending(xml_text):
    """Pending jobs (tasks, with ``-g d``) in ``qstat -u '*' -s p -g d -xml`` output."""
    root = ET.fromstring(xml_text)
    count = 0
    for job in root.iter('job_list'):
        state = (job.findtext('state') or '')
        if job.get('state', 'pending') == 'pending' or 'q' in state:
            count += 1
    return count


def free_slots(xml_text, exclude=(), include=()):
    """Free slots of the cluster queues in ``qstat -g c -xml``: ``available`` summed.

    ``include`` (when not empty) names the queues to count, ``exclude`` queues to leave out
    (the transfer queues themselves).
    """
    root = ET.fromstring(xml_text)
    free = 0
    for summary in root.iter('cluster_queue_summary'):
        name = summary.findtext('name') or ''
        if name in exclude or (include and name not in include):
            continue
        try:
            free += int(summary.findtext('available') or 0)
        except ValueError:
            continue
    return free


def sensor_report(host, values):
    """One load sensor report: ``begin``, ``host:name:value`` lines, ``end``."""
    lines = ['begin']
    for name in sorted(values):
        lines.append('%s:%s:%s' % (host, name, values[name]))
    lines.append('end')
    return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------------------ the runtime --

class Runner(object):
    """Runs Grid Engine client commands (argv lists, never a shell)."""

    def __init__(self, timeout=60):
        self.timeout = timeout

    def run(self, argv, env):
        try:
            proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True,
                                  timeout=self.timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 127, '', str(exc)
        return proc.returncode, proc.stdout, proc.stderr


def load_config(path):
    with open(path) as handle:
        cfg = json.load(handle)
    for key in ('local', 'remote', 'jobs_dir', 'bin_dir'):
        if key not in cfg:
            raise TransferError('%s: missing key %s' % (path, key))
    return cfg


def write_json_atomic(path, data):
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        json.dump(data, handle, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)


def read_own_json(path):
    """A record written by this user, or None. Records of other users are refused (the jobs
    directory is shared and sticky, like /tmp)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except OSError:
        return None
    with os.fdopen(fd) as handle:
        if os.fstat(handle.fileno()).st_uid != os.getuid():
            raise TransferError('%s belongs to another user' % path)
        try:
            return json.load(handle)
        except ValueError:
            return None


class Transfer(object):
    """The methods of one transfer queue, for one local job."""

    def __init__(self, cfg, environ, runner=None, sleep=time.sleep, clock=time.time, nonce=None):
        self.cfg = cfg
        self.environ = environ
        self.runner = runner or Runner()
        self.sleep = sleep
        self.clock = clock
        self.nonce = nonce or (lambda: os.urandom(4).hex())
        self.job_id = environ.get('JOB_ID', '')
        self.task_id = environ.get('SGE_TASK_ID', 'undefined')
        self.rec_path = os.path.join(cfg['jobs_dir'], record_name(self.job_id, self.task_id))
        self.flag_path = self.rec_path[:-len('.json')] + '.terminated'
        self.qenv = cell_env(cfg['remote'], environ.get('HOME'), environ.get('USER') or environ.get('LOGNAME'))

    # -- partner commands
    def _q(self, name, *args):
        return self.runner.run([os.path.join(self.cfg['bin_dir'], name)] + list(args), self.qenv)

    def lookup(self, token):
        """(job id, exit status or None) of the partner job with ``token``, or (None, None)."""
        rc, out, dummy = self._q('qstat', '-j', token + '*')
        if rc == 0:
            numbers, dummy_error = parse_qstat_j(out)
            if numbers:
                return numbers[0], None
        rc, out, dummy = self._q('qacct', '-j', token + '*')
        if rc == 0:
            recs = parse_qacct(out)
            if recs:
                return recs[-1]['jobnumber'], exit_status_of(recs[-1])
        return None, None

    def submit(self, command, args, token, cwd):
        argv = build_qsub_argv(self.cfg, command, args, token, self.environ, cwd)
        rc, out, err = self.runner.run(argv, job_env_for_partner(self.environ, self.cfg['remote']))
        if rc != 0:
            raise TransferError('partner qsub failed (rc %s): %s' % (rc, (err or out).strip()[:500]))
        return parse_qsub_terse(out)

    def accounting(self, remote_id, timeout):
        deadline = self.clock() + timeout
        while True:
            rc, out, dummy = self._q('qacct', '-j', remote_id)
            if rc == 0:
                recs = [r for r in parse_qacct(out) if r.get('jobnumber') == remote_id]
                if recs:
                    return recs[-1]
            if self.clock() >= deadline:
                return None
            self.sleep(min(self.cfg.get('poll_interval', 5), 5))

    def local_submit_time(self):
        """The local job's submission time (tells a record of this job from one of an older job
        with the same id)."""
        env = cell_env(self.cfg['local'], self.environ.get('HOME'), self.environ.get('USER'))
        rc, out, dummy = self.runner.run([os.path.join(self.cfg['bin_dir'], 'qstat'), '-j', self.job_id], env)
        if rc == 0:
            match = re.search(r'(?m)^submission_time:\s+(.+?)\s*$', out)
            if match:
                return match.group(1)
        return ''

    # -- the starter
    def start(self, command, args, cwd):
        """Submit (or find again) the partner job, wait for it, return its exit status."""
        submitted = self.local_submit_time()
        rec = read_own_json(self.rec_path)
        if rec is not None and rec.get('local_submit', '') != submitted:
            rec = None                       # an older job's record with the same id
        if rec is None:
            rec = {'token': make_token(self.job_id, self.task_id, self.nonce()),
                   'local_job': self.job_id, 'local_task': self.task_id,
                   'local_submit': submitted, 'remote_cell': self.cfg['remote']['cell']}
            write_json_atomic(self.rec_path, rec)
        remote_id = rec.get('remote_id')
        if not remote_id:
            remote_id, status = self.lookup(rec['token'])
            if remote_id and status is not None:
                self.finish()
                return status
            if not remote_id:
                remote_id = self.submit(command, args, rec['token'], cwd)
            rec['remote_id'] = remote_id
            write_json_atomic(self.rec_path, rec)
        return self.wait(remote_id)

    def wait(self, remote_id):
        poll = max(1, int(self.cfg.get('poll_interval', 5)))
        while True:
            if os.path.exists(self.flag_path):
                self._q('qdel', remote_id)
            rc, out, err = self._q('qstat', '-j', remote_id)
            if rc != 0 and 'do not exist' in (out + err):
                break
            if rc == 0:
                dummy, error = parse_qstat_j(out)
                if error:
                    self._q('qdel', remote_id)
                    self.finish()
                    raise TransferError('partner job %s is in error state; deleted it:\n%s' % (remote_id, out[-1000:]))
            self.sleep(poll)
        terminated = os.path.exists(self.flag_path)
        rec = self.accounting(remote_id, poll if terminated else self.cfg.get('accounting_timeout', 120))
        self.finish()
        if rec is None:
            if terminated:
                return EXIT_TERMINATED
            raise TransferError('partner job %s ended without an accounting record' % remote_id)
        return exit_status_of(rec)

    def finish(self):
        for path in (self.rec_path, self.flag_path):
            try:
                os.unlink(path)
            except OSError:
                pass

    # -- suspend / resume / terminate
    def act(self, action):
        """Suspend, resume or terminate the partner job of this local job."""
        if action == 'terminate':
            # before reading the record: a starter between submit and recording sees the flag
            fd = os.open(self.flag_path, os.O_WRONLY | os.O_CREAT | getattr(os, 'O_NOFOLLOW', 0), 0o600)
            os.close(fd)
        rec = read_own_json(self.rec_path)
        remote_id = (rec or {}).get('remote_id')
        if not remote_id and rec and action == 'terminate':
            remote_id, dummy = self.lookup(rec['token'])
        if not remote_id:
            return 0
        argv = {'suspend': ('qmod', '-sj', remote_id), 'resume': ('qmod', '-usj', remote_id),
                'terminate': ('qdel', remote_id)}[action]
        rc, out, err = self._q(*argv)
        if rc != 0 and action != 'terminate':
            raise TransferError('%s of partner job %s failed: %s' % (action, remote_id, (err or out).strip()))
        return 0


def sensor_values(cfg, runner):
    """The load values the sensor reports: the partner's pending jobs (a large number when the
    partner does not answer, which closes the queue) and, optionally, the local free slots."""
    values = {}
    rc, out, dummy = runner.run([os.path.join(cfg['bin_dir'], 'qstat'), '-u', '*', '-s', 'p', '-g', 'd', '-xml'],
                                cell_env(cfg['remote']))
    try:
        pending = count_pending(out) if rc == 0 else None
    except ET.ParseError:
        pending = None
    values[cfg['pending_complex']] = cfg.get('unreachable_value', 99999) if pending is None else pending
    if cfg.get('local_free_complex'):
        rc, out, dummy = runner.run([os.path.join(cfg['bin_dir'], 'qstat'), '-g', 'c', '-xml'], cell_env(cfg['local']))
        try:
            free = free_slots(out, exclude=cfg.get('transfer_queues', ()), include=cfg.get('local_queues', ())) if rc == 0 else 0
        except ET.ParseError:
            free = 0
        values[cfg['local_free_complex']] = free
    return values


def run_sensor(cfg, stdin, stdout, runner=None, reload=None):
    """The Grid Engine load sensor loop: a report per line read, until ``quit`` or EOF.

    ``reload`` (a function returning the configuration) is called before each report, so that a
    changed ``transfer.json`` takes effect without restarting the sensor; on an error the
    previous configuration stays.
    """
    runner = runner or Runner(timeout=30)
    while True:
        line = stdin.readline()
        if not line or line.strip() == 'quit':
            return 0
        if reload is not None:
            try:
                cfg = reload()
            except (TransferError, OSError, ValueError):
                pass
        stdout.write(sensor_report(cfg['host'], sensor_values(cfg, runner)))
        stdout.flush()


def main(action, script_path, argv=None, environ=None):
    """Entry point of the installed scripts: ``action`` is starter, suspend, resume, terminate or
    load_sensor; the configuration is ``transfer.json`` beside ``script_path``."""
    argv = sys.argv if argv is None else argv
    environ = dict(os.environ) if environ is None else environ
    try:
        cfg_path = os.path.join(os.path.dirname(os.path.abspath(script_path)), CONFIG_NAME)
        cfg = load_config(cfg_path)
        if action == 'load_sensor':
            return run_sensor(cfg, sys.stdin, sys.stdout, reload=lambda: load_config(cfg_path))
        transfer = Transfer(cfg, environ)
        if action == 'starter':
            if len(argv) < 2:
                raise TransferError('the starter got no job command')
            return transfer.start(argv[1], argv[2:], os.getcwd())
        if action in ('suspend', 'resume', 'terminate'):
            return transfer.act(action)
        raise TransferError('unknown action %r' % action)
    except (TransferError, OSError, ValueError) as exc:
        sys.stderr.write('transfer %s: %s\n' % (action, exc))
        return EXIT_FAILED
