# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The balancer's state file on the qmaster host: read it, write it atomically.

Target side: standard library only, Python 2.7/3.8 compatible syntax.  The state is one JSON
object; a missing file is an empty state.

Faults, and what this module makes of them (docs/reliability/state-faults.md):

* a file whose *content* is not a state (empty, truncated, not UTF-8, not JSON, JSON that is not
  an object): :class:`StateFileCorrupt`. :func:`read_state_or_move_aside` renames it to
  ``<name>.corrupt-<UTC time>-<random>`` (kept for a person, never deleted) and reads an empty
  state, saying so; the caller warns. The journal (balancer_journal) does not use it: a journal
  it cannot read stops the balancer instead;
* a file that cannot be *read* (permissions, a directory in its place, I/O error):
  :class:`StateFileError`, never moved or replaced: nothing can be said about what it holds;
* a write that fails (disk full, I/O error, read-only file system): :class:`StateFileError`,
  and the old file is left as it was (temporary file, fsync, rename); a temporary file left by
  a writer killed mid-write is removed by a later write once it is an hour old.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import binascii
import errno
import json
import os
import re
import tempfile
import time

DEFAULT_ROOT = "/var/lib/gridengine-balancer"
STATE_FILE_NAME = "state.json"
FILE_MODE = 0o600
DIR_MODE = 0o700

# \A...\Z, not ^...$: "$" also matches before a trailing newline (issue 20)
_CLUSTER_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z")


#: a temporary file of write_atomic older than this (seconds) was left by a killed writer
STALE_TEMP_AGE = 3600


class StateFileError(Exception):
    """A state file that cannot be read or written; the message names the path."""


class StateFileCorrupt(StateFileError):
    """A state file that was read but does not hold a state (``problem`` says why, ``stat`` is
    the ``os.fstat`` of the file that was read)."""

    def __init__(self, msg, problem=None, stat=None):
        super(StateFileCorrupt, self).__init__(msg)
        self.problem = problem or msg
        self.stat = stat


#: give AnsibleModule ``required_one_of=CLUSTER_OR_PATH`` with :func:`cluster_file_spec`
CLUSTER_OR_PATH = [("cluster", "path")]


def cluster_file_spec(**options):
    """The argument spec of a module that works on one of a cluster's balancer files: ``cluster``
    (which gives the default path) and ``path`` (doc fragment ``gridengine.balancer.cluster_file``),
    then the module's own ``options``."""
    spec = dict(cluster=dict(type="str"), path=dict(type="path"))
    spec.update(options)
    return spec


def _no_path_info(kwargs):
    return kwargs


def plain_path_result(module):
    """Make ``module`` return its ``path`` key as it is.

    ``AnsibleModule.exit_json``/``fail_json`` treat a result with a ``path`` key as a file
    module's: they stat the file and add ``uid``, ``gid``, ``owner``, ``group``, ``mode``,
    ``size`` and ``state`` (overwriting a key of that name). For the balancer's files that is
    noise, and it races with other balancers: a lock released between its ``exists()`` and its
    ``stat()`` crashed a losing balancer's module with a traceback (FileNotFoundError) instead of
    a message naming the holder (seen with benchmarks/lock_contention.py).
    """
    module.add_path_info = _no_path_info
    return module


def cluster_file_module(module_class, argument_spec, **kwargs):
    """The module object (``module_class``: AnsibleModule) of a module that keeps one of a
    cluster's balancer files: ``argument_spec`` (made with :func:`cluster_file_spec`), one of
    ``cluster`` and ``path`` required, check mode supported, ``path`` returned as it is
    (:func:`plain_path_result`). ``kwargs`` go to ``module_class`` as they are (``required_if``)."""
    return plain_path_result(module_class(
        argument_spec=argument_spec,
        required_one_of=CLUSTER_OR_PATH,
        supports_check_mode=True,
        **kwargs
    ))


def file_path(params, default):
    """The path of the file a module works on: its ``path`` parameter, else
    ``default(cluster)`` (the file in the cluster's directory; ValueError for a bad name)."""
    if params["path"] is not None:
        return params["path"]
    return default(params["cluster"])


def check_cluster_name(cluster):
    """Cluster names become a directory name: letters, digits, '_', '.', '-'; no leading dot."""
    if not isinstance(cluster, str) or not _CLUSTER_RE.match(cluster):
        raise ValueError("cluster: %r is not a valid cluster name (letters, digits, '_', '.', '-'; "
                         "starting with a letter or digit)" % (cluster,))
    return cluster


def default_path(cluster):
    """``/var/lib/gridengine-balancer/<cluster>/state.json``."""
    return os.path.join(DEFAULT_ROOT, check_cluster_name(cluster), STATE_FILE_NAME)


def dumps(content):
    """The canonical text of a state: sorted keys, one key per line, trailing newline."""
    return json.dumps(content, sort_keys=True, indent=1, separators=(",", ": "), allow_nan=False) + "\n"


def read_state(path, what="state file"):
    """Return ``(content, text)``; ``({}, None)`` when the file does not exist.

    Raises StateFileCorrupt when the file was read but is not a state (empty, not UTF-8, not
    JSON, not a JSON object), StateFileError when it cannot be read (the message names the path,
    calling it ``what``).
    """
    content, text, _stat = _read(path, what)
    return content, text


def _read(path, what="state file"):
    """``(content, text, stat of the file read)``; ``({}, None, None)`` for a missing file."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            raw = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return {}, None, None
        if exc.errno == errno.EISDIR:
            raise StateFileError("cannot read %s %s: it is a directory; move it away (the %s "
                                 "is a file)" % (what, path, what))
        raise StateFileError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    advice = "fix or remove it"
    if not raw.strip():
        problem = "%s %s is empty (%d bytes)" % (what, path, len(raw))
        raise StateFileCorrupt("%s; %s" % (problem, advice), problem, st)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = "%s %s is not UTF-8 text (%s)" % (what, path, exc)
        raise StateFileCorrupt("%s; %s" % (problem, advice), problem, st)
    try:
        content = json.loads(text)
    except ValueError as exc:
        problem = "%s %s is not valid JSON (%s)" % (what, path, exc)
        raise StateFileCorrupt("%s; %s" % (problem, advice), problem, st)
    except RecursionError:  # found by benchmarks/fuzz_parsers.py: JSON nested 1,000+ deep
        problem = "%s %s is not valid JSON (nested too deeply)" % (what, path)
        raise StateFileCorrupt("%s; %s" % (problem, advice), problem, st)
    if not isinstance(content, dict):
        problem = "%s %s holds a JSON %s, not an object" % (what, path, type(content).__name__)
        raise StateFileCorrupt("%s; %s" % (problem, advice), problem, st)
    return content, text, st


def move_aside(path, label="corrupt", expected=None):
    """Rename ``path`` to ``<path>.<label>-<UTC time>-<random>`` and return that name.

    ``expected``: the ``os.stat`` of the file that was judged; when ``path`` is now another file
    (a writer replaced it meanwhile), nothing is moved and None is returned. None too when the
    file is gone. Raises StateFileError when it cannot be renamed.
    """
    try:
        current = os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise StateFileError("cannot move %s aside: %s" % (path, exc.strerror or exc))
    if expected is not None and (current.st_dev, current.st_ino) != (expected.st_dev, expected.st_ino):
        return None
    aside = "%s.%s-%s-%s" % (path, label, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
                             binascii.hexlify(os.urandom(3)).decode("ascii"))
    try:
        os.rename(path, aside)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise StateFileError("cannot move %s aside to %s: %s" % (path, aside, exc.strerror or exc))
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return aside


def read_state_or_move_aside(path, check_mode=False):
    """Read the state; a corrupt file is moved aside and reads as an empty state.

    Returns ``(content, text, problem, moved_to)``: ``problem`` is None, or what was wrong with
    the file (then ``content`` is ``{}`` and ``text`` None); ``moved_to`` is where the file went
    (None in check mode, or when a concurrent writer replaced or removed it first: then the file
    is read again). A file that cannot be read at all raises StateFileError and is not touched.
    """
    for _attempt in range(3):
        try:
            content, text, _st = _read(path)
            return content, text, None, None
        except StateFileCorrupt as exc:
            problem, judged = exc.problem, exc.stat
        if check_mode:
            return {}, None, problem, None
        moved = move_aside(path, "corrupt", expected=judged)
        if moved is not None:
            return {}, None, problem, moved
    raise StateFileError("state file %s keeps changing while it is read; try again" % path)


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_dir(directory, mode=DIR_MODE):
    """Create ``directory`` (and parents) with ``mode``; an existing one is left as it is."""
    if os.path.isdir(directory):
        return False
    try:
        os.makedirs(directory, mode)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(directory):
            raise StateFileError("cannot create state directory %s: %s" % (directory, exc.strerror or exc))
        return False
    os.chmod(directory, mode)  # makedirs honours the umask
    return True


def write_atomic(path, text, mode=FILE_MODE, dir_mode=DIR_MODE):
    """Write ``text`` to ``path``: temp file in the same directory, fsync, chmod, rename, fsync dir.

    A crash leaves either the old file or the new one, never a mix.
    """
    directory = os.path.dirname(os.path.abspath(path))
    ensure_dir(directory, dir_mode)
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    except (IOError, OSError) as exc:
        raise StateFileError("cannot create a temporary file in %s: %s" % (directory, exc.strerror or exc))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except (IOError, OSError) as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise StateFileError("cannot write state file %s: %s; the file was left as it was"
                             % (path, exc.strerror or exc))
    _fsync_dir(directory)
    remove_stale_temps(path)


def remove_stale_temps(path, age=STALE_TEMP_AGE, now=None):
    """Remove temporary files of ``write_atomic(path)`` older than ``age`` seconds: left by a
    writer killed between creating and renaming them. Returns the names removed."""
    directory, name = os.path.split(os.path.abspath(path))
    prefix = "." + name + "."
    now = time.time() if now is None else now
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(".tmp")):
            continue
        full = os.path.join(directory, entry)
        try:
            if now - os.lstat(full).st_mtime > age:
                os.unlink(full)
                removed.append(full)
        except OSError:
            pass
    return removed
