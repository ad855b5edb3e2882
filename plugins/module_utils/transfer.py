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

The howto's improvements, as built here:

* One bulk poll per partner per interval: the load sensor (one process per transfer queue) reads
  every partner once per report (``qstat -u '*' -g d -xml``, ``qstat -g c -xml``, ``qhost -xml``;
  never more often than every 5 s) and writes ``status.json``; the starters read that file instead
  of polling the partner for their own job. Only when the file is missing or stale does a starter
  ask the partner itself, and then never more often than every 5 s.
* Several partners: ``partners`` in transfer.json; the sensor routes with the broker (weighted
  placement of seed 001 over the partners that are neither busy nor full) and publishes a cycle
  of partners; the starter of job N takes entry N of the cycle.
* Resource request mapping: the local job's hard resource requests are passed to the partner,
  renamed, re-valued or dropped by the partner's ``resource_map``.
* Invalid requests: a partner that refuses the job (unknown resource, no suitable queue, ...)
  sends it back: the local job's hard queue list is set to the local queues (so it is never
  dispatched to a transfer queue again) and the starter exits 99, which puts the job back into the
  pending list. A partner that cannot be reached sends the job back unmarked (the sensor closes
  the queue meanwhile). No job is killed.
* Pull-back: a partner job still pending after ``pullback_after`` seconds while local slots are
  free is held, checked, deleted and the local job re-queued (exit 99); one that started in the
  meantime is released and kept.

Crash safety of the starter: before ``qsub`` it writes a record with a unique token; the partner's
job is named ``<token>_<job name>``. A starter that finds a record without a partner job id
(it died between submit and recording) waits out a grace period for a qsub still in flight, then
looks the token up in the partner's ``qstat -j`` and ``qacct -j`` before it submits again, so a
crash neither loses nor duplicates a job.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import pwd
import re
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

CONFIG_NAME = 'transfer.json'
STATUS_NAME = 'status.json'

# Exit codes of the starter besides the partner job's own exit status.
EXIT_FAILED = 1          # the partner refused or lost the job
EXIT_RESCHEDULE = 99     # Grid Engine puts a job that exits 99 back into the pending list
EXIT_ERROR_STATE = 100   # Grid Engine keeps a job that exits 100 in error state (Eqw)
EXIT_TERMINATED = 143    # the job was terminated (128 + SIGTERM)

# The howto: never poll a partner more often than every 5 seconds.
MIN_PARTNER_POLL = 5

# Variables Grid Engine sets for every job: not passed on to the partner's job (its execd sets
# its own), so that the partner job does not see the local cluster's ids, paths or ports.
GE_JOB_VARS = frozenset((
    'ARC', 'ENVIRONMENT', 'HOSTNAME', 'JOB_ID', 'JOB_NAME', 'JOB_SCRIPT', 'NHOSTS', 'NQUEUES',
    'NSLOTS', 'PE', 'PE_HOSTFILE', 'QUEUE', 'REQNAME', 'REQUEST', 'RESTARTED', 'TMP', 'TMPDIR',
))

_SAFE_TOKEN = re.compile(r'^[A-Za-z0-9_]+\Z')
_SAFE_NAME = re.compile(r'^[A-Za-z0-9_.-]+\Z')
# qsub/qstat messages that mean "the partner's qmaster did not answer" (as opposed to a refusal)
_UNREACHABLE = re.compile(r'commlib error|unable to contact qmaster|unable to send message to qmaster|'
                          r'got send error|connection refused|timed out|no such file', re.I)


class TransferError(Exception):
    """A failure of a transfer method, with a message for the job's error output."""


class PartnerRefused(TransferError):
    """The partner's qmaster refused the job (an invalid request for that cluster)."""


class PartnerUnreachable(TransferError):
    """The partner's qmaster could not be reached."""


class UnsafeRecord(TransferError):
    """A record, flag or records directory that this user did not make (or that others may
    write): the job is re-queued, never killed, and nothing in it is used."""


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
    if not re.match(r'^[0-9]+\Z', str(job_id)) or not re.match(r'^[0-9]+\Z', task):
        raise TransferError('JOB_ID %r / SGE_TASK_ID %r are not job and task numbers' % (job_id, task_id))
    return '%s.%s.json' % (job_id, task)


def partners_of(cfg):
    """The partner clusters of a transfer queue: ``cfg['partners']`` (a list), else the single
    ``cfg['remote']``; each a dict with ``root``, ``cell``, ``name`` (default: the cell) and optional ports,
    ``qsub_args``, ``project``, ``resource_map``, ``pass_resources``."""
    parts = cfg.get('partners')
    if not parts and isinstance(cfg.get('remote'), dict):
        parts = [dict(cfg['remote'], name=cfg['remote'].get('name') or cfg['remote'].get('cell'))]
    if not isinstance(parts, list) or not parts:
        raise TransferError('the configuration names no partner cluster (partners or remote)')
    seen = set()
    parts = [dict(part, name=part.get('name') or part.get('cell')) if isinstance(part, dict) else part for part in parts]
    for part in parts:
        if not isinstance(part, dict) or not all(part.get(k) for k in ('name', 'root', 'cell')):
            raise TransferError('a partner needs name, root and cell: %r' % (part,))
        if not _SAFE_NAME.match(str(part['name'])) or part['name'] in seen:
            raise TransferError('partner name %r is invalid or repeated' % (part['name'],))
        seen.add(part['name'])
    return parts


def partner_named(cfg, name):
    for part in partners_of(cfg):
        if part['name'] == name:
            return part
    raise TransferError('no partner named %r in the configuration' % (name,))


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


def parse_request_list(text):
    """``[(name, value)]`` of a Grid Engine request list ``a=1,b=TRUE`` (``qstat -j`` form)."""
    out = []
    for item in (text or '').split(','):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition('=')
        out.append((name.strip(), value.strip() if sep else ''))
    return out


def parse_local_job(out):
    """What the starter needs of the local job's ``qstat -j`` text: ``submission_time``,
    ``resources`` (the hard resource requests, ``[(name, value)]``), ``queues`` (the hard
    queue list) and ``context`` (``-ac`` variables, ``{name: value}``)."""
    info = {'submission_time': '', 'resources': [], 'queues': [], 'context': {}}
    for line in out.splitlines():
        key, sep, value = line.partition(':')
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == 'submission_time':
            info['submission_time'] = value
        elif key == 'hard resource_list':
            info['resources'] = parse_request_list(value)
        elif key == 'hard_queue_list':
            info['queues'] = [q.strip() for q in value.split(',') if q.strip()]
        elif key == 'context':
            info['context'] = dict(kv.split('=', 1) for kv in value.split(',') if '=' in kv)
    return info


def map_resources(requests, partner, internal=()):
    """The partner's ``-l`` requests for the local job's hard ``requests``.

    ``partner['resource_map']`` maps a local resource name to the partner's name (a string),
    to nothing (``""`` or ``None``: dropped), or to ``{"name": ..., "values": {local: remote}}``.
    Names in ``internal`` (the transfer queue's own complexes) are never passed on; names not in
    the map pass unchanged unless ``partner['pass_resources']`` is false (the howto passes them).
    """
    rmap = partner.get('resource_map') or {}
    out = []
    for name, value in requests:
        if name in internal:
            continue
        if name in rmap:
            target = rmap[name]
            if isinstance(target, dict):
                value = str((target.get('values') or {}).get(value, value))
                target = target.get('name', name)
            if not target:
                continue
            out.append((str(target), value))
        elif partner.get('pass_resources', True):
            out.append((name, value))
    for name, value in out:
        if not re.match(r'^[A-Za-z0-9_.-]+\Z', name) or ',' in value or '\n' in value:
            raise TransferError('resource request %s=%s cannot be passed to partner %s' % (name, value, partner['name']))
    return out


def build_qsub_argv(cfg, partner, command, args, token, environ, cwd, resources=()):
    """argv of the partner ``qsub`` for the local job's ``command`` and ``args``.

    ``command`` is the job script the starter got from Grid Engine (in the execd's
    ``job_scripts`` directory) or, for a binary job (``qsub -b y``), the binary.
    """
    job_name = environ.get('JOB_NAME', '')
    argv = [os.path.join(cfg['bin_dir'], 'qsub'), '-terse', '-V',
            '-N', remote_job_name(token, job_name),
            '-ac', 'tq_token=%s,tq_local_job=%s,tq_local_cell=%s' % (
                token, environ.get('JOB_ID', ''), cfg['local']['cell'])]
    task = environ.get('SGE_TASK_ID', '')
    if re.match(r'^[0-9]{1,9}\Z', task) and int(task) > 0:
        # a task of a local array job is that task at the partner too: a one-task array job N-N,
        # so that its script sees its own SGE_TASK_ID (a plain job there gets "undefined"; seen:
        # both tasks of a transferred 1-2 array ran as task "undefined")
        argv += ['-t', '%d-%d' % (int(task), int(task))]
    verify = partner.get('verify', cfg.get('verify', 'e'))
    if verify:
        argv += ['-w', verify]
    stdout = environ.get('SGE_STDOUT_PATH')
    stderr = environ.get('SGE_STDERR_PATH')
    if stdout:
        argv += ['-o', stdout]
    if stderr and stderr != stdout:
        argv += ['-e', stderr]
    elif stderr:
        argv += ['-j', 'y']
    argv += ['-wd', environ.get('SGE_CWD_PATH') or cwd]
    project = partner.get('project', cfg.get('project'))
    if project:
        argv += ['-P', project]
    if resources:
        argv += ['-l', ','.join('%s=%s' % kv if kv[1] != '' else kv[0] for kv in resources)]
    argv += list(cfg.get('qsub_args') or []) + list(partner.get('qsub_args') or [])
    if os.path.basename(os.path.dirname(command)) != 'job_scripts':
        if command.startswith('-'):
            raise TransferError('binary job command %r would be read as a qsub option' % command)
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


def submitted_anyway(text):
    """The job id of a qsub that failed but says it submitted the job, else None.

    Seen on a partner cell with no queue instance yet (no execution host: the burst partner at
    rest): with or without ``-w n`` qsub prints "Unable to run job: warning: tester's job is not
    allowed to run in any queue", "Your job 8 ("true") has been submitted" and "Exiting.", and
    exits 1. The job exists: treating it as refused would run it twice."""
    match = re.search(r'(?m)^Your job(?:-array)? ([0-9]+)[ .]', text)
    return match.group(1) if match else None


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


_DECLARATION = re.compile(r'<!\s*(DOCTYPE|ENTITY)', re.I)


def parse_xml(text):
    """The root element of a partner's ``-xml`` output. A document type or entity declaration is
    refused before anything is parsed (ET.ParseError), as sge_xml does for the local cluster:
    Grid Engine never writes one, and entity expansion (billion laughs, external entities) is
    the classic attack on an XML parser. The partner is another cluster's qmaster."""
    probe = text if isinstance(text, str) else bytes(text).decode('utf-8', 'replace')
    found = _DECLARATION.search(probe)
    if found:
        raise ET.ParseError('partner XML: document type/entity declarations are not accepted (<!%s ...>); '
                            'Grid Engine never writes them' % found.group(1).upper())
    return ET.fromstring(text)


def parse_jobs(xml_text, prefix='tq'):
    """``(pending, jobs)`` of ``qstat -u '*' -g d -xml``: the number of pending jobs (tasks) and
    ``{job id: state}`` of the jobs whose name starts with ``prefix`` (the transferred ones)."""
    root = parse_xml(xml_text)
    pending = 0
    jobs = {}
    for job in root.iter('job_list'):
        state = (job.findtext('state') or '')
        if job.get('state', 'pending') == 'pending':
            pending += 1
        if (job.findtext('JB_name') or '').startswith(prefix):
            number = (job.findtext('JB_job_number') or '').strip()
            if number:
                jobs.setdefault(number, state)
    return pending, jobs


def count_pending(xml_text):
    """Pending jobs (tasks, with ``-g d``) in ``qstat -u '*' -s p -g d -xml`` output."""
    return parse_jobs(xml_text)[0]


def free_slots(xml_text, exclude=(), include=()):
    """Free slots of the cluster queues in ``qstat -g c -xml``: ``available`` summed.

    ``include`` (when not empty) names the queues to count, ``exclude`` queues to leave out
    (the transfer queues themselves).
    """
    return cluster_slots(xml_text, exclude, include)['free']


def cluster_slots(xml_text, exclude=(), include=()):
    """``{"total", "used", "free"}`` slots of the cluster queues in ``qstat -g c -xml``."""
    root = parse_xml(xml_text)
    out = {'total': 0, 'used': 0, 'free': 0}
    for summary in root.iter('cluster_queue_summary'):
        name = summary.findtext('name') or ''
        if name in exclude or (include and name not in include):
            continue
        for key, tag in (('total', 'total'), ('used', 'used'), ('free', 'available')):
            try:
                out[key] += int(summary.findtext(tag) or 0)
            except ValueError:
                continue
    return out


_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4}


def parse_memory(text):
    """Bytes of a qhost memory value (``23.5G``, ``819.9M``, ``0.0``); None for ``-``."""
    match = re.match(r'^\s*([0-9.]+)\s*([KMGT]?)\s*$', text or '', re.I)
    if not match:
        return None
    try:
        return float(match.group(1)) * _UNITS[match.group(2).upper()]
    except ValueError:
        return None


def cluster_memory(xml_text):
    """``(mem_total, mem_used)`` bytes summed over the hosts of ``qhost -xml``."""
    root = parse_xml(xml_text)
    total = used = 0.0
    for host in root.iter('host'):
        # the values are children of their host: findall, not iter (iter walks the whole subtree,
        # which is quadratic in a document of nested hosts)
        values = {v.get('name'): v.text for v in host.findall('hostvalue')}
        mem_total, mem_used = parse_memory(values.get('mem_total')), parse_memory(values.get('mem_used'))
        if mem_total:
            total += mem_total
            used += mem_used or 0.0
    return total, used


def classify_refusal(text):
    """The exception for a partner qsub that failed with ``text``."""
    if _UNREACHABLE.search(text or ''):
        return PartnerUnreachable
    return PartnerRefused


def job_phase(state):
    """``error``, ``pending``, ``running`` or ``other`` for a Grid Engine job state string."""
    if 'E' in state:
        return 'error'
    if 'q' in state:
        return 'pending'
    if state:
        return 'running'
    return 'other'


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
                                  stderr=subprocess.PIPE, encoding='utf-8', errors='replace',
                                  timeout=self.timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 127, '', str(exc)
        return proc.returncode, proc.stdout, proc.stderr


def load_config(path):
    """The transfer queue's configuration (``transfer.json``); TransferError naming ``path`` when
    it is not UTF-8 JSON of an object with the required keys, OSError when it cannot be read."""
    with open(path, 'rb') as handle:
        data = handle.read()
    try:
        cfg = json.loads(data.decode('utf-8'))
    except UnicodeDecodeError as exc:
        raise TransferError('%s: not UTF-8 (%s)' % (path, exc))
    except ValueError as exc:
        raise TransferError('%s: not valid JSON (%s)' % (path, exc))
    except RecursionError:
        raise TransferError('%s: not valid JSON (nested too deeply)' % path)
    if not isinstance(cfg, dict):
        raise TransferError('%s: not a JSON object' % path)
    for key in ('local', 'jobs_dir', 'bin_dir'):
        if key not in cfg:
            raise TransferError('%s: missing key %s' % (path, key))
    partners_of(cfg)
    return cfg


def status_path(cfg):
    return cfg.get('status_file') or os.path.join(os.path.dirname(cfg['jobs_dir'].rstrip('/')), STATUS_NAME)


_JOB_NUMBER = re.compile(r'^[0-9]+\Z')


def is_job_number(value):
    """True for a Grid Engine job number (digits only): the only remote id ever passed to a command."""
    return isinstance(value, (str, int)) and not isinstance(value, bool) and bool(_JOB_NUMBER.match(str(value)))


def records_dir(cfg, uid=None):
    """This user's records directory, ``<jobs_dir>/u<uid>``: the shared jobs directory is sticky
    and world-writable (1777), so each user keeps records and flags in a directory of their own."""
    return os.path.join(cfg['jobs_dir'], 'u%d' % (os.getuid() if uid is None else uid))


def check_own_dir(path, create=False):
    """``path`` is a directory of this user that nobody else may write (not a link); made with
    mode 0700 when ``create`` and missing. UnsafeRecord otherwise (False when missing and not
    ``create``)."""
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if create:
            raise
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise UnsafeRecord('the records directory %s is not your own private directory (owner uid %d, mode %o, '
                           'a %s): an administrator should remove it' % (
                               path, st.st_uid, stat.S_IMODE(st.st_mode),
                               'directory' if stat.S_ISDIR(st.st_mode) else 'link or file'))
    return True


def own_file_exists(path):
    """True for a regular file of this user, False when there is none; UnsafeRecord for anything
    else (another user's file, a link, a directory)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        raise UnsafeRecord('%s is not a file of yours (owner uid %d): not used' % (path, st.st_uid))
    return True


def write_json_atomic(path, data, mode=0o600):
    tmp = '%s.tmp.%d' % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, 'O_NOFOLLOW', 0), mode)
    with os.fdopen(fd, 'w') as handle:
        os.fchmod(handle.fileno(), mode)
        json.dump(data, handle, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)


def read_own_json(path):
    """A record written by this user, or None. Records of other users are refused (the jobs
    directory is shared and sticky, like /tmp)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except FileNotFoundError:
        return None
    except OSError as exc:      # a link (ELOOP with O_NOFOLLOW) or a file we may not read
        raise UnsafeRecord('%s cannot be read as a record of yours: %s' % (path, exc))
    with os.fdopen(fd) as handle:
        st = os.fstat(handle.fileno())
        if st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
            raise UnsafeRecord('%s belongs to another user or is not a file' % path)
        try:
            data = json.load(handle)
        except (ValueError, RecursionError):    # not JSON (or nested too deeply): a broken record
            return None
    return data if isinstance(data, dict) else None


def read_status(cfg, now, max_age=None):
    """The sensor's last ``status.json`` if it is at most ``max_age`` seconds old, else None."""
    max_age = max_age if max_age is not None else cfg.get('status_max_age', 60)
    try:
        with open(status_path(cfg)) as handle:
            status = json.load(handle)
        if not isinstance(status, dict) or not isinstance(status.get('partners'), dict):
            return None
        if now - float(status.get('time', 0)) > max_age:
            return None
    except (OSError, ValueError, TypeError, RecursionError):
        return None
    return status


class Transfer(object):
    """The methods of one transfer queue, for one local job."""

    def __init__(self, cfg, environ, runner=None, sleep=time.sleep, clock=time.time, nonce=None, err=None):
        self.cfg = cfg
        self.environ = environ
        self.runner = runner or Runner()
        self.sleep = sleep
        self.clock = clock
        self.err = err or sys.stderr
        self.nonce = nonce or (lambda: os.urandom(4).hex())
        self.job_id = environ.get('JOB_ID', '')
        self.task_id = environ.get('SGE_TASK_ID', 'undefined')
        self.rec_dir = records_dir(cfg)
        self.rec_path = os.path.join(self.rec_dir, record_name(self.job_id, self.task_id))
        self.flag_path = self.rec_path[:-len('.json')] + '.terminated'
        self.home = environ.get('HOME')
        self.user = environ.get('USER') or environ.get('LOGNAME')

    # -- commands
    def _q(self, partner, name, *args):
        """A Grid Engine command on ``partner`` (a partner dict) or, with None, the local cell."""
        cell = partner if partner is not None else self.cfg['local']
        return self.runner.run([os.path.join(self.cfg['bin_dir'], name)] + list(args),
                               cell_env(cell, self.home, self.user))

    def partner(self, rec):
        """The partner of a record (records of older versions name none: the first partner)."""
        if rec.get('partner'):
            return partner_named(self.cfg, rec['partner'])
        return partners_of(self.cfg)[0]

    def choose_partner(self):
        """The partner for this job: entry ``job id + task`` of the sensor's routing cycle (consecutive
        jobs follow the weighted dispatcher); without a fresh route, the reachable partner with the
        fewest pending jobs, else the first one."""
        parts = partners_of(self.cfg)
        if len(parts) == 1:
            return parts[0]
        status = read_status(self.cfg, self.clock()) or {}
        names = [p['name'] for p in parts]
        sequence = [n for n in (status.get('route') or {}).get('sequence') or [] if n in names]
        if sequence:
            task = int(self.task_id) if str(self.task_id).isdigit() else 0
            return partner_named(self.cfg, sequence[(int(self.job_id) + task) % len(sequence)])
        known = [(info.get('pending', 0), names.index(name), name) for name, info in status.get('partners', {}).items()
                 if name in names and info.get('reachable')]
        return partner_named(self.cfg, min(known)[2]) if known else parts[0]

    def lookup(self, partner, token):
        """(job id, exit status or None) of the partner job with ``token``, or (None, None)."""
        rc, out, dummy = self._q(partner, 'qstat', '-j', token + '*')
        if rc == 0:
            numbers, dummy_error = parse_qstat_j(out)
            if numbers:
                return numbers[0], None
        rc, out, dummy = self._q(partner, 'qacct', '-j', token + '*')
        if rc == 0:
            recs = parse_qacct(out)
            if recs:
                return recs[-1]['jobnumber'], exit_status_of(recs[-1])
        return None, None

    def local_job(self):
        """The local job's submission time, hard resource requests and hard queue list."""
        rc, out, dummy = self._q(None, 'qstat', '-j', self.job_id)
        return parse_local_job(out) if rc == 0 else parse_local_job('')

    def internal_resources(self):
        return set(n for n in (self.cfg.get('remote_complex', 'remote'), self.cfg.get('pending_complex'),
                               self.cfg.get('local_free_complex')) if n)

    def submit(self, partner, command, args, token, cwd, info):
        resources = map_resources(info.get('resources', ()), partner, self.internal_resources())
        argv = build_qsub_argv(self.cfg, partner, command, args, token, self.environ, cwd, resources)
        rc, out, err = self.runner.run(argv, job_env_for_partner(self.environ, partner))
        if rc != 0:
            text = (err or out).strip()
            remote_id = submitted_anyway(out + '\n' + err)
            if remote_id:
                self.err.write('transfer starter: partner %s qsub exited %s but submitted job %s: %s\n'
                               % (partner['name'], rc, remote_id, ' '.join(text.split())[:300]))
                return remote_id
            raise classify_refusal(text if rc != 127 else 'timed out: ' + text)(
                'partner %s qsub failed (rc %s): %s' % (partner['name'], rc, text[:500]))
        return parse_qsub_terse(out)

    def accounting(self, partner, remote_id, timeout):
        deadline = self.clock() + timeout
        while True:
            rc, out, dummy = self._q(partner, 'qacct', '-j', remote_id)
            if rc == 0:
                recs = [r for r in parse_qacct(out) if r.get('jobnumber') == remote_id]
                if recs:
                    return recs[-1]
            if self.clock() >= deadline:
                return None
            self.sleep(min(self.cfg.get('poll_interval', 5), 5))

    def send_back(self, info, reason, ineligible):
        """Give the job back to the local cluster: exit 99 puts it back into the pending list.

        ``ineligible``: the partner refused the job, so its hard queue list becomes the local
        queues (every cluster queue but the transfer queues, or what it asked for minus them) and
        no transfer queue takes it again. If nothing local is left, the job goes to error state
        (exit 100) with the reason, kept for its owner to see; it is never killed.
        """
        if ineligible:
            transfer_queues = set(self.cfg.get('transfer_queues') or ())
            queues = info.get('queues') or []
            if not queues:
                rc, out, err = self._q(None, 'qconf', '-sql')
                if rc != 0:
                    self.err.write('transfer starter: %s; cannot list the local queues (%s)\n' % (reason, err.strip()))
                    return EXIT_ERROR_STATE
                queues = out.split()
            keep = [q for q in queues if q.split('@')[0] not in transfer_queues]
            if not keep:
                self.err.write('transfer starter: %s; the job asks for no local queue, left in error state\n' % reason)
                self.finish()
                return EXIT_ERROR_STATE
            rc, out, err = self._q(None, 'qalter', '-q', ','.join(keep), self.job_id)
            if rc != 0:
                self.err.write('transfer starter: %s; qalter -q failed (%s), left in error state\n'
                               % (reason, (err or out).strip()))
                return EXIT_ERROR_STATE
            self.err.write('transfer starter: %s; sent back to the local cluster, not eligible for transfer '
                           '(hard queue list %s)\n' % (reason, ','.join(keep)))
        else:
            self.err.write('transfer starter: %s; sent back to the local pending list\n' % reason)
        self.finish()
        return EXIT_RESCHEDULE

    # -- the starter
    def terminated(self):
        """True when this job's terminate method ran (its flag, a file of this user). A flag this
        user did not make is reported and ignored: it never deletes the partner job."""
        try:
            return own_file_exists(self.flag_path)
        except UnsafeRecord as exc:
            self.err.write('transfer starter: %s\n' % exc)
            return False

    def start(self, command, args, cwd):
        """Submit (or find again) the partner job, wait for it, return its exit status.

        The records directory, the record and the flag must be this user's own (UnsafeRecord
        otherwise): such a job goes back to the pending list (exit 99) before anything is
        submitted or deleted."""
        try:
            check_own_dir(self.rec_dir, create=True)
            own_file_exists(self.flag_path)
            rec = read_own_json(self.rec_path)
            if rec is not None and rec.get('remote_id') and not is_job_number(rec['remote_id']):
                raise UnsafeRecord('%s holds a remote job id that is not a job number: %r' % (
                    self.rec_path, rec['remote_id']))
        except UnsafeRecord as exc:
            self.err.write('transfer starter: %s; the job goes back to the pending list\n' % exc)
            return EXIT_RESCHEDULE
        info = self.local_job()
        if rec is not None and rec.get('local_submit', '') != info['submission_time']:
            rec = None                       # an older job's record with the same id
        if rec is not None and rec.get('pulled_back'):
            return self.complete_pull_back(self.partner(rec), rec)
        if rec is None:
            partner = self.choose_partner()
            rec = {'token': make_token(self.job_id, self.task_id, self.nonce()),
                   'local_job': self.job_id, 'local_task': self.task_id,
                   'local_submit': info['submission_time'], 'partner': partner['name'],
                   'remote_cell': partner['cell']}
            write_json_atomic(self.rec_path, rec)
        partner = self.partner(rec)
        remote_id = rec.get('remote_id')
        if not remote_id:
            if rec.get('submit_started'):
                # an earlier starter died around its qsub: a request still in flight reaches the
                # partner's qmaster within the grace period, and only then is the lookup reliable
                wait = float(rec['submit_started']) + self.cfg.get('lookup_grace', 10) - self.clock()
                if wait > 0:
                    self.sleep(wait)
            remote_id, status = self.lookup(partner, rec['token'])
            if remote_id and status is not None:
                self.finish()
                return status
            if not remote_id:
                rec['submit_started'] = self.clock()
                write_json_atomic(self.rec_path, rec)
                try:
                    remote_id = self.submit(partner, command, args, rec['token'], cwd, info)
                except PartnerRefused as exc:
                    return self.send_back(info, str(exc), ineligible=True)
                except PartnerUnreachable as exc:
                    return self.send_back(info, str(exc), ineligible=False)
            rec['remote_id'] = remote_id
            rec['submitted_at'] = self.clock()
            write_json_atomic(self.rec_path, rec)
        return self.wait(partner, remote_id, rec)

    def observe(self, partner, remote_id, rec, last_direct):
        """``(phase, local_free, last_direct)``: the partner job's phase (``gone``, ``error``,
        ``pending``, ``running``, ``unknown``) from the sensor's bulk status, or, if that is stale,
        from the partner itself at most every ``MIN_PARTNER_POLL`` seconds."""
        now = self.clock()
        status = read_status(self.cfg, now)
        info = (status or {}).get('partners', {}).get(partner['name']) or {}
        if status is not None and info.get('reachable'):
            state = (info.get('jobs') or {}).get(str(remote_id))
            if state is None:
                seen_after = float(status.get('time', 0)) > float(rec.get('submitted_at') or 0) + 1
                return ('gone' if seen_after else 'unknown'), status.get('local_free', 0), last_direct
            return job_phase(state), status.get('local_free', 0), last_direct
        poll = max(MIN_PARTNER_POLL, int(self.cfg.get('poll_interval', 5)))
        if last_direct is not None and now - last_direct < poll:
            return 'unknown', 0, last_direct
        rc, out, err = self._q(partner, 'qstat', '-j', remote_id)
        if rc != 0 and 'do not exist' in (out + err):
            return 'gone', 0, now
        if rc == 0:
            return ('error' if parse_qstat_j(out)[1] else 'running'), 0, now
        return 'unknown', 0, now

    def wait(self, partner, remote_id, rec):
        poll = max(1, int(self.cfg.get('poll_interval', 5)))
        pullback_after = float(self.cfg.get('pullback_after', 0) or 0)
        pending_since = None
        last_direct = None
        while True:
            if self.terminated():
                self._q(partner, 'qdel', remote_id)
            phase, local_free, last_direct = self.observe(partner, remote_id, rec, last_direct)
            if phase == 'gone':
                break
            if phase == 'error':
                self._q(partner, 'qdel', remote_id)
                self.finish()
                raise TransferError('partner job %s on %s is in error state; deleted it' % (remote_id, partner['name']))
            if phase == 'pending' and pullback_after > 0 and not self.terminated():
                pending_since = self.clock() if pending_since is None else pending_since
                if local_free > 0 and self.clock() - pending_since >= pullback_after:
                    status = self.pull_back(partner, remote_id, rec)
                    if status is not None:
                        return status
            elif phase != 'unknown':
                pending_since = None
            self.sleep(poll)
        terminated = self.terminated()
        acct = self.accounting(partner, remote_id, poll if terminated else self.cfg.get('accounting_timeout', 120))
        self.finish()
        if acct is None:
            if terminated:
                return EXIT_TERMINATED
            raise TransferError('partner job %s ended without an accounting record' % remote_id)
        return exit_status_of(acct)

    def partner_pending(self, partner, remote_id):
        """True if the partner job is in the partner's pending list right now (asked directly)."""
        rc, out, dummy = self._q(partner, 'qstat', '-u', '*', '-s', 'p', '-g', 'd', '-xml')
        if rc != 0:
            return False
        try:
            return str(remote_id) in parse_jobs(out, prefix='')[1]
        except ET.ParseError:
            return False

    def pull_back(self, partner, remote_id, rec):
        """Hold the pending partner job, make sure it did not start, delete it and re-queue the
        local job (exit 99). None if it started meanwhile (released and kept)."""
        self._q(partner, 'qhold', remote_id)
        if not self.partner_pending(partner, remote_id):
            self._q(partner, 'qrls', remote_id)
            return None
        rec['pulled_back'] = True
        write_json_atomic(self.rec_path, rec)
        return self.complete_pull_back(partner, rec)

    def complete_pull_back(self, partner, rec):
        """Delete the held partner job of a pulled-back record and re-queue the local job."""
        remote_id = rec.get('remote_id')
        if remote_id:
            deadline = self.clock() + 60
            while True:
                self._q(partner, 'qdel', remote_id)
                rc, out, err = self._q(partner, 'qstat', '-j', remote_id)
                if rc != 0 and 'do not exist' in (out + err):
                    break
                if self.clock() >= deadline:
                    raise TransferError('partner job %s on %s would not go away' % (remote_id, partner['name']))
                self.sleep(MIN_PARTNER_POLL)
        self.finish()
        self.err.write('transfer starter: partner job %s on %s was still pending while local slots were free; '
                       'pulled back to the local pending list\n' % (remote_id, partner['name']))
        self.withdraw_burst()
        return EXIT_RESCHEDULE

    def withdraw_burst(self):
        """A job the burst router sent (context ``tq_burst=1``: it added the transfer queue's complex
        to the job's own requests) goes back as it was, without the complex, so that no transfer
        queue takes it again before the router has decided anew (docs/burst.md). A job whose owner
        asked for the complex is left as it is."""
        info = self.local_job()
        if info['context'].get('tq_burst') != '1':
            return
        complex_name = self.cfg.get('remote_complex', 'remote')
        own = ','.join('%s=%s' % kv for kv in info['resources'] if kv[0] != complex_name)
        rc, out, err = self._q(None, 'qalter', '-l', own, '-dc', 'tq_burst', self.job_id)
        if rc != 0:
            self.err.write('transfer starter: qalter -l %s of the pulled-back job failed (%s); the burst '
                           'router calls it back when it waits at home\n' % (own, (err or out).strip()))

    def finish(self):
        for path in (self.rec_path, self.flag_path):
            try:
                os.unlink(path)
            except OSError:
                pass

    # -- suspend / resume / terminate
    def act(self, action):
        """Suspend, resume or terminate the partner job of this local job."""
        if not check_own_dir(self.rec_dir, create=action == 'terminate'):
            return 0                          # no records directory: no partner job of this user
        if action == 'terminate' and not own_file_exists(self.flag_path):
            # before reading the record: a starter between submit and recording sees the flag
            fd = os.open(self.flag_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
            os.close(fd)
        rec = read_own_json(self.rec_path)
        if not rec:
            return 0
        partner = self.partner(rec)
        remote_id = rec.get('remote_id')
        if remote_id and not is_job_number(remote_id):
            raise UnsafeRecord('%s holds a remote job id that is not a job number: %r' % (self.rec_path, remote_id))
        if not remote_id and action == 'terminate':
            remote_id, dummy = self.lookup(partner, rec['token'])
        if not remote_id:
            return 0
        argv = {'suspend': ('qmod', '-sj', remote_id), 'resume': ('qmod', '-usj', remote_id),
                'terminate': ('qdel', remote_id)}[action]
        rc, out, err = self._q(partner, *argv)
        if rc != 0 and action != 'terminate':
            raise TransferError('%s of partner job %s failed: %s' % (action, remote_id, (err or out).strip()))
        return 0


# --------------------------------------------------------------------------- the load sensor --

def _broker():
    try:
        from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import broker
    except ImportError:  # installed beside this file by the role transfer_queue
        import broker  # type: ignore[no-redef]  # pylint: disable=import-error
    return broker


def poll_partner(cfg, partner, runner):
    """One bulk poll of a partner: pending jobs, the transferred jobs' states, slots and memory."""
    env = cell_env(partner)
    bin_dir = cfg['bin_dir']
    info = {'reachable': False, 'pending': None, 'jobs': {}}
    rc, out, err = runner.run([os.path.join(bin_dir, 'qstat'), '-u', '*', '-g', 'd', '-xml'], env)
    try:
        if rc != 0:
            raise ValueError((err or out).strip()[:200])
        info['pending'], info['jobs'] = parse_jobs(out)
        info['reachable'] = True
    except (ET.ParseError, ValueError) as exc:
        info['error'] = 'qstat: %s' % exc
        return info
    rc, out, dummy = runner.run([os.path.join(bin_dir, 'qstat'), '-g', 'c', '-xml'], env)
    try:
        slots = cluster_slots(out) if rc == 0 else {'total': 0, 'used': 0}
    except ET.ParseError:
        slots = {'total': 0, 'used': 0}
    info['slots_total'], info['slots_used'] = slots['total'], slots['used']
    rc, out, dummy = runner.run([os.path.join(bin_dir, 'qhost'), '-xml'], env)
    try:
        info['mem_total'], info['mem_used'] = cluster_memory(out) if rc == 0 else (0.0, 0.0)
    except ET.ParseError:
        info['mem_total'], info['mem_used'] = 0.0, 0.0
    return info


def route_partners(cfg, partners):
    """The broker's routing over the reachable partners (a cycle of ``route_cycle`` entries)."""
    loads = {}
    for name, info in partners.items():
        if info.get('reachable'):
            loads[name] = {'slots_total': info.get('slots_total', 0), 'slots_used': info.get('slots_used', 0),
                           'pending': info.get('pending', 0), 'mem_free': info.get('mem_total', 0) - info.get('mem_used', 0),
                           'mem_max': info.get('mem_total', 0)}
    if not loads:
        return {'sequence': [], 'distribution': {}, 'excluded': {}, 'reason': 'no partner answered'}
    threshold = int(cfg.get('pending_threshold') or 0)
    try:
        out = _broker().route(loads, idle_pending=threshold - 1 if threshold > 0 else None,
                              count=int(cfg.get('route_cycle', 100)))
    except (ImportError, ValueError) as exc:
        return {'sequence': [], 'distribution': {}, 'excluded': {}, 'reason': 'broker failed: %s' % exc}
    return {k: out[k] for k in ('sequence', 'distribution', 'excluded', 'reason')}


def sensor_status(cfg, runner, now):
    """The bulk status of every partner and of the local cluster (one poll of each)."""
    partners = {p['name']: poll_partner(cfg, p, runner) for p in partners_of(cfg)}
    status = {'time': now, 'partners': partners, 'route': route_partners(cfg, partners) if len(partners) > 1 else {}}
    # the starters' pull-back reads the local free slots too, also when no complex reports them
    # (the burst shape: its router, not a load threshold, decides which job leaves)
    if cfg.get('local_free_complex') or cfg.get('pullback_after'):
        rc, out, dummy = runner.run([os.path.join(cfg['bin_dir'], 'qstat'), '-g', 'c', '-xml'], cell_env(cfg['local']))
        try:
            status['local_free'] = free_slots(out, exclude=cfg.get('transfer_queues', ()),
                                              include=cfg.get('local_queues', ())) if rc == 0 else 0
        except ET.ParseError:
            status['local_free'] = 0
    return status


def sensor_values(cfg, status):
    """The load values the sensor reports: the fewest pending jobs of a reachable partner (a large
    number when none answers, which closes the queue) and, optionally, the local free slots."""
    pending = [info['pending'] for info in status['partners'].values() if info.get('reachable')]
    values = {cfg['pending_complex']: min(pending) if pending else cfg.get('unreachable_value', 99999)}
    if cfg.get('local_free_complex'):
        values[cfg['local_free_complex']] = status.get('local_free', 0)
    return values


def run_sensor(cfg, stdin, stdout, runner=None, reload=None, clock=time.time):
    """The Grid Engine load sensor loop: a report per line read, until ``quit`` or EOF.

    The partners are polled at most every ``bulk_poll_interval`` seconds (never below 5; a faster
    load report repeats the last values) and the result is written to ``status.json`` for the
    starters. ``reload`` (a function returning the configuration) is called before each report,
    so that a changed ``transfer.json`` takes effect without restarting the sensor; on an error
    the previous configuration stays.
    """
    runner = runner or Runner(timeout=30)
    status = None
    while True:
        line = stdin.readline()
        if not line or line.strip() == 'quit':
            return 0
        if reload is not None:
            try:
                cfg = reload()
            except (TransferError, OSError, ValueError):
                pass
        now = clock()
        interval = max(MIN_PARTNER_POLL, float(cfg.get('bulk_poll_interval', MIN_PARTNER_POLL)))
        if status is None or now - status['time'] >= interval:
            status = sensor_status(cfg, runner, now)
            try:
                write_json_atomic(status_path(cfg), status, mode=0o644)
            except OSError as exc:
                sys.stderr.write('transfer load_sensor: cannot write %s: %s\n' % (status_path(cfg), exc))
        stdout.write(sensor_report(cfg['host'], sensor_values(cfg, status)))
        stdout.flush()


# ----------------------------------------------------------------- the sensor's privileges --

class PrivilegeError(TransferError):
    """The load sensor could not become its unprivileged user."""


def drop_privileges(user):
    """Run as ``user`` from now on if started as root; ``(uid, gid)`` of the switch, or None.

    Grid Engine's execd starts load sensors as root (``/bin/sh -c <path>`` without switching
    user). The sensor needs no privilege: it reads the partners with ``qstat``/``qhost`` (any
    user on a submit host may) and writes ``status.json`` into a directory its user owns. So,
    before it reads its configuration, writes a file or runs a command, it takes the user's
    uid and gid and no supplementary group (``setgroups([])``, ``setgid``, ``setuid``, in that
    order: after ``setuid`` it could no longer change its groups), then checks that the ids
    are the user's and that neither uid 0 nor gid 0 can be taken back. Started as another user
    (a test, a manual run), it runs as that user. PrivilegeError when the user is unknown or
    root, a switch fails, or root could be taken back: the sensor must not go on as root.
    """
    if os.getuid() != 0 and os.geteuid() != 0:
        return None
    if not user:
        raise PrivilegeError('started as root and no user to run as was given (the load_sensor script '
                             'predates transfer_queue_sensor_user: run the role transfer_queue again)')
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise PrivilegeError('the user %s does not exist on this host (transfer_queue_sensor_user): '
                             'not running as root instead' % user)
    uid, gid = entry.pw_uid, entry.pw_gid
    if uid == 0 or gid == 0:
        raise PrivilegeError('the user %s has uid %d and gid %d: the sensor runs neither as root nor in '
                             'the root group' % (user, uid, gid))
    try:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    except OSError as exc:
        raise PrivilegeError('cannot switch to the user %s (uid %d, gid %d): %s' % (user, uid, gid, exc))
    ids = (os.getuid(), os.geteuid(), os.getgid(), os.getegid())
    groups = os.getgroups()
    if ids != (uid, uid, gid, gid) or set(groups) - set([gid]):
        raise PrivilegeError('after switching to %s the ids are uid %d/%d gid %d/%d groups %s, not %d/%d'
                             % ((user,) + ids + (groups, uid, gid)))
    for name, regain in (('uid 0', os.setuid), ('gid 0', os.setgid)):
        try:
            regain(0)
        except OSError:
            continue
        raise PrivilegeError('after switching to %s the process could take %s back' % (user, name))
    return uid, gid


def sensor_failure(reason, sensor, stdin, stdout, stderr=None):
    """Report a sensor that cannot work where Grid Engine shows it, then exit (EXIT_FAILED).

    The execd reads a load sensor's stdout only (its stderr is never read). So the sensor waits
    for the execd's request, answers with a report that closes the queue (the pending complex
    at the unreachable value, as for a partner that does not answer) and a line of text, which
    the execd logs as an error in its messages file (``Format error of loadsensor "<path>".
    Received: "transfer_queue load_sensor error - <reason>"``), waits until the execd has read
    the report (it asks for the next one), and exits. The execd keeps the report's values and
    restarts the sensor at a later load report, which then says the same again. Nothing but
    stdin and stdout (the execd's pipes) is used here: no file, no command.
    """
    sensor = sensor or {}
    (stderr or sys.stderr).write('transfer load_sensor: %s\n' % reason)
    # one line, no colon (a host:name:value line would be taken as a load value), not too long
    # for the execd's buffer
    text = 'transfer_queue load_sensor error - %s' % re.sub(r'[\x00-\x1f\x7f:]+', ' ', str(reason)).strip()
    lines = ['begin']
    host = str(sensor.get('host') or '')
    closed = sensor.get('closed') or {}
    if _SAFE_NAME.match(host):
        for name in sorted(closed):
            if _SAFE_NAME.match(str(name)) and re.match(r'^[0-9]+\Z', str(closed[name])):
                lines.append('%s:%s:%s' % (host, name, closed[name]))
    lines += [text[:900], 'end']
    try:
        line = stdin.readline()
        if not line or line.strip() == 'quit':
            return EXIT_FAILED
        stdout.write('\n'.join(lines) + '\n')
        stdout.flush()
        stdin.readline()
    except (OSError, ValueError):
        pass
    return EXIT_FAILED


def main(action, script_path, argv=None, environ=None, sensor=None):
    """Entry point of the installed scripts: ``action`` is starter, suspend, resume, terminate or
    load_sensor; the configuration is ``transfer.json`` beside ``script_path``.

    ``sensor`` (load_sensor only, written into its script by the role): ``user`` to run as when
    started as root, ``host`` and ``closed`` (``{pending complex: unreachable value}``), the
    report of a sensor that cannot work (``sensor_failure``)."""
    argv = sys.argv if argv is None else argv
    environ = dict(os.environ) if environ is None else environ
    if action == 'load_sensor':
        try:
            drop_privileges((sensor or {}).get('user'))         # before anything is read
            cfg_path = os.path.join(os.path.dirname(os.path.abspath(script_path)), CONFIG_NAME)
            cfg = load_config(cfg_path)
            return run_sensor(cfg, sys.stdin, sys.stdout, reload=lambda: load_config(cfg_path))
        except (TransferError, OSError, ValueError) as exc:
            return sensor_failure(str(exc), sensor, sys.stdin, sys.stdout)
    try:
        cfg_path = os.path.join(os.path.dirname(os.path.abspath(script_path)), CONFIG_NAME)
        cfg = load_config(cfg_path)
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
