# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``qstat_remote``, ``qacct_remote`` and ``qalter_remote``: follow a local job id to its partner job.

The howto (seed 002, "Improvements") asks for ``*_remote`` versions of qstat, qacct and qalter
that find the remote job of a local one. The starter (transfer.py) names every partner job
``tq<local job>_<task>_<nonce>_<name>`` and keeps ``<jobs_dir>/u<uid>/<job>.<task>.json`` with the remote
id while the job runs, so the remote job is found by the record while it exists, else by name in
the partner's ``qstat -j`` (still pending or running) and ``qacct -j`` (finished). Every command
is an argv list; the user's extra arguments are passed as data.

    qstat_remote 1234            qstat -j <remote id> on the partner
    qacct_remote 1234            qacct -j <remote id> on the partner
    qalter_remote 1234 -l h_rt=1:00:00   qalter <args> <remote id> on the partner
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re
import sys

try:
    from ansible_collections.gridengine.balancer.plugins.module_utils import transfer as tr
except ImportError:  # installed beside transfer.py by the role transfer_queue
    import transfer as tr  # type: ignore[no-redef]  # pylint: disable=import-error

COMMANDS = ('qstat', 'qacct', 'qalter')
_JOB = re.compile(r'^([0-9]+)(?:\.([0-9]+))?\Z')


def parse_job(text):
    """``("1234", None)`` or ``("1234", "3")`` from ``1234`` / ``1234.3``; TransferError otherwise."""
    match = _JOB.match(str(text))
    if not match:
        raise tr.TransferError('%r is not a local job id (1234 or 1234.3)' % (text,))
    return match.group(1), match.group(2)


def _records(cfg, job, task):
    """``[(remote id, partner name)]`` of the caller's own records of local ``job`` (``task``).

    Only ``<jobs_dir>/u<uid>/`` is read, only if it is the caller's private directory, only
    regular files of the caller, and only a job number as the remote id: the jobs directory is
    shared, and a record planted there (``{"remote_id": "*"}``) would otherwise become an
    argument of qalter on the partner."""
    directory = tr.records_dir(cfg)
    try:
        if not tr.check_own_dir(directory):
            return []
    except tr.UnsafeRecord as exc:
        sys.stderr.write('warning: %s; its records are not used\n' % exc)
        return []
    pattern = '%s.%s.json' % (job, task if task else '*')
    out = []
    for path in sorted(glob.glob(os.path.join(glob.escape(directory), pattern))):
        try:
            rec = tr.read_own_json(path)
        except tr.UnsafeRecord as exc:
            sys.stderr.write('warning: %s\n' % exc)
            continue
        except (OSError, ValueError, RecursionError):    # RecursionError: JSON nested too deeply
            continue
        if not isinstance(rec, dict) or not rec.get('remote_id'):
            continue
        if not tr.is_job_number(rec['remote_id']):
            sys.stderr.write('warning: %s: remote_id %r is not a job number; not used\n' % (path, rec['remote_id']))
            continue
        partner = rec.get('partner') if isinstance(rec.get('partner'), str) else None
        out.append((str(rec['remote_id']), partner or tr.partners_of(cfg)[0]['name']))
    return out


def find_remote(cfg, runner, job, task=None, home=None, user=None):
    """``[(remote id, where, partner)]`` of the partner jobs of local ``job`` (``where``: record,
    qstat or qacct; ``partner``: the partner's dict), without duplicates, in that order. Every
    partner of the configuration is searched by the job name prefix ``tq<job>_``."""
    prefix = 'tq%s_%s_' % (job, task) if task else 'tq%s_' % job
    partners = tr.partners_of(cfg)
    found = []
    for rid, name in _records(cfg, job, task):
        found += [(rid, 'record', p) for p in partners if p['name'] == name]
    bin_dir = cfg['bin_dir']
    for partner in partners:
        env = tr.cell_env(partner, home, user)
        rc, out, dummy = runner.run([os.path.join(bin_dir, 'qstat'), '-j', prefix + '*'], env)
        if rc == 0:
            found += [(rid, 'qstat', partner) for rid in tr.parse_qstat_j(out)[0] if tr.is_job_number(rid)]
        if not [f for f in found if f[2] is partner]:
            rc, out, dummy = runner.run([os.path.join(bin_dir, 'qacct'), '-j', prefix + '*'], env)
            if rc == 0:
                found += [(r['jobnumber'], 'qacct', partner) for r in tr.parse_qacct(out)
                          if r.get('jobname', '').startswith(prefix) and tr.is_job_number(r.get('jobnumber'))]
    seen, unique = set(), []
    for rid, where, partner in found:
        if (rid, partner['name']) not in seen:
            seen.add((rid, partner['name']))
            unique.append((rid, where, partner))
    return unique


def run(command, argv, cfg, runner, out=sys.stdout, err=sys.stderr):
    """Run ``<command>_remote JOB [args...]``; the exit status."""
    if command not in COMMANDS:
        raise tr.TransferError('unknown command %r (one of %s)' % (command, ', '.join(COMMANDS)))
    if not argv:
        raise tr.TransferError('usage: %s_remote LOCAL_JOB_ID%s' % (command, ' [qalter args...]' if command == 'qalter' else ''))
    job, task = parse_job(argv[0])
    extra = list(argv[1:])
    if extra and command != 'qalter':
        raise tr.TransferError('%s_remote takes only the local job id' % command)
    if command == 'qalter' and not extra:
        raise tr.TransferError('qalter_remote needs the qalter arguments after the job id')
    home, user = os.environ.get('HOME'), os.environ.get('USER')
    remote = find_remote(cfg, runner, job, task, home, user)
    if not remote:
        err.write('local job %s%s: no partner job found in %s (never transferred, or its accounting '
                  'record is gone)\n' % (job, '.' + task if task else '',
                                         ', '.join('cell ' + p['cell'] for p in tr.partners_of(cfg))))
        return 1
    status = 0
    for rid, where, partner in remote:
        out.write('# local job %s%s -> cell %s job %s (found by %s)\n' % (
            job, '.' + task if task else '', partner['cell'], rid, where))
        if command == 'qalter':
            argv_ = [os.path.join(cfg['bin_dir'], 'qalter')] + extra + [rid]
        else:
            argv_ = [os.path.join(cfg['bin_dir'], command), '-j', rid]
        rc, text, error = runner.run(argv_, tr.cell_env(partner, home, user))
        out.write(text)
        if error:
            err.write(error)
        status = status or rc
    return status


def main(command, script_path, argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        cfg = tr.load_config(os.path.join(os.path.dirname(os.path.abspath(script_path)), tr.CONFIG_NAME))
        return run(command, argv, cfg, tr.Runner())
    except (tr.TransferError, OSError, ValueError) as exc:
        sys.stderr.write('%s_remote: %s\n' % (command, exc))
        return 2
