# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One balancer per cluster: a lock file with an expiry on the qmaster host.

Target side: standard library only, Python 3.8 compatible.

The lock is a JSON file ``{"schema", "cluster", "owner", "token", "acquired", "renewed",
"expires", "ttl"}``. Liveness is the expiry alone: the holder is a controller (a terminal's
ansible-playbook, an AWX job) that may run on another host and die anywhere, and the module
process that wrote the lock ends at once, so no pid or host name on the qmaster says whether the
holder lives (a dead pid, a pid reused by another process, a host that is gone: none of them
changes anything). A lock whose ``expires`` has passed is stale and the next acquirer takes it
over. All times are the clock of the host the module runs on (the qmaster), so controllers with
skewed clocks still agree.

Two mechanisms make "exactly one holder" hold:

* Every change (acquire, renew, take over, release) is made while holding an exclusive
  ``flock`` on a guard file beside the lock (``.lock.json.guard``). The kernel drops it when the
  process dies, so a killed module never leaves the guard taken; it is held for milliseconds.
* Inside it, the lock file itself is only ever created exclusively: the new content is
  written to a private temporary file and hard-linked to the lock's name (``link(2)`` fails
  when the name exists, like ``O_CREAT|O_EXCL``, but the file never appears half written; on a
  file system without hard links, ``O_CREAT|O_EXCL`` is used). A stale lock is first renamed
  aside to ``lock.json.stale-<its token>.<taker's token>`` (a name no other taker uses), and only
  when the file renamed is still the stale lock that was read (same token and expiry) is the
  new lock linked in; the aside file is then removed. Without the guard this still lets exactly
  one of two takers win; with three or more, only the guard does (a loser briefly moving the
  winner's lock aside leaves a window in which a third process finds no lock).
  Renewal rewrites the file with a rename (atomic replace), release unlinks it; both only for
  the matching token.

A lock file that is not a lock record (empty, truncated, not JSON, missing fields: something
other than this module wrote it, or the disk lost it) names no holder and no expiry. It is
treated as a lock taken when the file was last modified, for the ttl of the balancer that finds
it: before ``mtime + ttl`` every acquisition fails (naming the file and when it will be taken
over); after it, the file is renamed aside to ``lock.json.corrupt-<UTC time>.<taker's token>``
(kept for a person to look at, never deleted) and the lock is taken over like a stale one. A
live holder whose lock got corrupted cannot renew or release it (that fails), so with the same
ttl everywhere this is as safe as the expiry of a readable lock.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import secrets
import tempfile
import time

from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    DEFAULT_ROOT,
    DIR_MODE,
    FILE_MODE,
    StateFileError,
    _fsync_dir,
    check_cluster_name,
    dumps,
    ensure_dir,
    write_atomic,
)

LOCK_FILE_NAME = "lock.json"
DEFAULT_TTL = 900
SCHEMA = 1

_TOKEN_RE = re.compile(r"\A[A-Za-z0-9_-]{1,128}\Z")
# link(2) errors that mean "this file system has no hard links", not "the name exists"
_NO_LINK_ERRNOS = tuple(getattr(errno, n) for n in ("EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK")
                        if hasattr(errno, n))

# patched by the unit tests
_now = time.time


class LockError(Exception):
    """The lock cannot be used as asked; the message says why and names the file."""

    def __init__(self, msg, path=None, holder=None):
        super(LockError, self).__init__(msg)
        self.path = path
        self.holder = holder


class LockHeld(LockError):
    """Someone else holds a live lock (``holder`` is their lock record)."""


class LockLost(LockError):
    """A token was given but the lock is no longer ours (gone, or taken over by another)."""


class LockCorrupt(LockError):
    """The lock file exists but is not a lock this module wrote; nothing was changed.

    ``problem`` says what is wrong with it, naming the file, without advice.
    """

    def __init__(self, msg, path=None, holder=None, problem=None):
        super(LockCorrupt, self).__init__(msg, path, holder)
        self.problem = problem or msg


def default_path(cluster):
    """``/var/lib/gridengine-balancer/<cluster>/lock.json``."""
    return os.path.join(DEFAULT_ROOT, check_cluster_name(cluster), LOCK_FILE_NAME)


def guard_path(path):
    """The guard file of ``path``: ``<dir>/.<name>.guard``."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, "." + name + ".guard")


@contextlib.contextmanager
def guard(path):
    """Hold an exclusive ``flock`` on the guard file of ``path`` (created 0600; its directory
    0700) for the duration of the block. Processes that change ``path`` take it first."""
    gpath = guard_path(path)
    try:
        ensure_dir(os.path.dirname(gpath), DIR_MODE)
    except StateFileError as exc:
        raise LockError(str(exc), path)
    try:
        fd = os.open(gpath, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise LockError("cannot open guard file %s: %s" % (gpath, exc.strerror or exc), path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise LockError("cannot lock guard file %s (%s); put the lock on a local file system"
                            % (gpath, exc.strerror or exc), path)
        yield gpath
    finally:
        os.close(fd)  # closing drops the flock


def new_token():
    """A random token that identifies one acquisition."""
    return secrets.token_hex(16)


def format_time(epoch):
    """``2024-05-01 12:00:00 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def public(record, now=None):
    """The lock record without its token, with ``expires_in`` (seconds, negative when stale)."""
    if record is None:
        return None
    now = _now() if now is None else now
    result = dict((k, v) for k, v in record.items() if k != "token")
    result["expires_in"] = int(math.ceil(record["expires"] - now))
    return result


def _valid(content):
    """Why ``content`` is not a lock record, or None."""
    if not isinstance(content, dict):
        return "holds a JSON %s, not an object" % type(content).__name__
    token = content.get("token")
    if not isinstance(token, str) or not _TOKEN_RE.match(token):
        return "has no valid token"
    if not isinstance(content.get("owner"), str):
        return "has no owner"
    for key in ("acquired", "expires"):
        value = content.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not is_time(value):
            return "has no numeric %s" % key
    return None


def is_time(value):
    """Whether ``value`` (a number) is a time this module can print: finite, and within what
    ``time.gmtime`` takes (``Infinity``, ``NaN`` and 1e300 are not; found by fuzzing)."""
    try:
        time.gmtime(value)
    except (OverflowError, ValueError, OSError):
        return False
    return math.isfinite(value)


def read_lock(path):
    """Return the lock record at ``path``, None when there is none.

    Raises LockCorrupt when the file is not a lock record, LockError when it cannot be read.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise LockError("cannot read lock file %s: %s" % (path, exc.strerror or exc), path)
    advice = ("a balancer takes it over once it is older than its ttl (it is then moved aside); "
              "if no balancer is running, remove it by hand")
    try:
        content = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = ("lock file %s is empty" % path if not raw.strip() else
                   "lock file %s is not valid JSON (%s)" % (
                       path, "nested too deeply" if isinstance(exc, RecursionError) else exc))
        raise LockCorrupt("%s; %s" % (problem, advice), path, problem=problem)
    why = _valid(content)
    if why:
        problem = "lock file %s %s, it is not a balancer lock" % (path, why)
        raise LockCorrupt("%s; %s" % (problem, advice), path, problem=problem)
    return content


def _what(record, path):
    return "cluster %s" % record["cluster"] if record.get("cluster") else "lock %s" % path


def held_message(record, path, now):
    """``cluster mycluster is locked by <owner> since <time> (expires in Ns); ...``."""
    return ("%s is locked by %s since %s (expires in %ds); another balancer is running"
            % (_what(record, path), record["owner"] or "(no owner given)",
               format_time(record["acquired"]), int(math.ceil(record["expires"] - now))))


def _create_exclusive(path, text):
    """Create ``path`` holding ``text`` (mode 0600) only if it does not exist. True on success.

    The text goes to a temporary file first, which is hard-linked to ``path``: link(2) fails
    with EEXIST like O_CREAT|O_EXCL, and readers never see a half-written lock. Where the file
    system has no hard links, ``path`` is opened with O_CREAT|O_EXCL instead.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        raise LockError("cannot create a temporary file in %s: %s" % (directory, exc.strerror or exc),
                        path)
    try:
        _write_fd(fd, text)
        os.chmod(tmp, FILE_MODE)
        try:
            os.link(tmp, path)
            created = True
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                created = False
            elif exc.errno in _NO_LINK_ERRNOS:
                created = _create_excl_open(path, text)
            else:
                raise
    except OSError as exc:
        raise LockError("cannot create lock file %s: %s" % (path, exc.strerror or exc), path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    if created:
        _fsync_dir(directory)
    return created


def _write_fd(fd, text):
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


def _create_excl_open(path, text):
    """O_CREAT|O_EXCL fallback for file systems without hard links."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return False
        raise
    _write_fd(fd, text)
    return True


def _is_record(path, record):
    """Whether ``path`` holds ``record`` (same token and expiry; a renewed lock is not the same)."""
    try:
        current = read_lock(path)
    except LockError:
        return False
    return (current is not None and current["token"] == record["token"]
            and current["expires"] == record["expires"])


def _take_over(path, stale, text, token):
    """Replace the stale lock ``stale`` by ``text``. True on success.

    The stale file is renamed to ``<path>.stale-<its token>.<new token>`` (a name of this taker
    alone); if what was renamed is not the stale lock that was read (same token and expiry:
    another taker replaced it already, or its owner renewed it), it is put back and False is
    returned. Otherwise the new lock is created exclusively (False if someone else's appeared
    in between) and the aside file is removed. Under the guard nothing can interleave; without
    it, of two takers exactly one still wins.
    """
    aside = "%s.stale-%s.%s" % (path, stale["token"], token)
    if not _move_aside(path, aside, "stale"):
        return False
    if not _is_record(aside, stale):
        # not the lock we judged stale
        return _put_back(aside, path)
    try:
        return _create_exclusive(path, text)
    finally:
        _unlink_quietly(aside)


def _move_aside(path, aside, what):
    """Rename the lock ``path`` to ``aside``. False when there is no lock any more; LockError,
    naming ``what`` (stale, corrupt), when it cannot be moved."""
    try:
        os.rename(path, aside)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise LockError("cannot move the %s lock %s aside: %s" % (what, path, exc.strerror or exc), path)
    return True


def _put_back(aside, path):
    """Give a file moved aside that is not the lock that was judged its name back (which fails
    only if yet another lock appeared there meanwhile); returns False, the take-over lost."""
    try:
        os.link(aside, path)
    except OSError:
        pass
    _unlink_quietly(aside)
    return False


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _new_record(cluster, owner, token, ttl, now):
    return {
        "schema": SCHEMA,
        "cluster": cluster,
        "owner": owner,
        "token": token,
        "acquired": now,
        "renewed": now,
        "expires": now + ttl,
        "ttl": ttl,
    }


def _check_ttl(ttl):
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise ValueError("ttl must be a positive number of seconds, got %r" % (ttl,))


def acquire(path, owner, ttl=DEFAULT_TTL, cluster=None, check_mode=False, retries=3):
    """Take the lock at ``path`` for ``owner`` for ``ttl`` seconds.

    Returns ``{"action": "acquired"|"taken_over", "token", "lock", "before", "taken_over_from"}``;
    raises LockHeld when another live lock is there, LockCorrupt for a file that is not a lock.
    In check mode nothing is written (not even the directory) and the token is one that would
    have been used.
    """
    _check_ttl(ttl)
    if not isinstance(owner, str) or not owner.strip():
        raise ValueError("owner must say who takes the lock (controller host, pid, playbook)")
    token = new_token()
    if check_mode:
        return _acquire(path, owner, ttl, cluster, token, True, retries)
    with guard(path):
        return _acquire(path, owner, ttl, cluster, token, False, retries)


def _acquire(path, owner, ttl, cluster, token, check_mode, retries):
    for _attempt in range(retries + 1):
        now = _now()
        try:
            current = read_lock(path)
            corrupt = None
        except LockCorrupt as exc:
            current = None
            corrupt = _corrupt_lock(path, exc, ttl, now)
        record = _new_record(cluster, owner, token, ttl, now)
        if current is not None and current["expires"] > now:
            raise LockHeld(held_message(current, path, now), path, current)
        result = dict(token=token, lock=record, before=current, taken_over_from=None,
                      action="acquired" if current is None and corrupt is None else "taken_over")
        if current is not None:
            result["taken_over_from"] = current
        if corrupt is not None:
            result["corrupt"] = corrupt
        if check_mode:
            return result
        text = dumps(record)
        if corrupt is not None:
            done = _take_over_corrupt(path, corrupt, text, token, now)
        elif current is None:
            done = _create_exclusive(path, text)
        else:
            done = _take_over(path, current, text, token)
        if done:
            return result
        # the file changed between reading and writing (only possible for a process that does
        # not take the guard): look again
    current = read_lock(path)
    if current is not None:
        raise LockHeld(held_message(current, path, _now()), path, current)
    raise LockError("lock %s keeps changing; try again" % path, path)


def _corrupt_lock(path, exc, ttl, now):
    """What is known of a corrupt lock file: ``{"problem", "modified", "stat", "path"}``.

    Raises LockCorrupt (naming the file and when it will be taken over) while it is younger
    than ``ttl`` by its modification time: a balancer may still be acting under it.
    """
    try:
        st = os.lstat(path)
    except OSError as err:
        if err.errno == errno.ENOENT:  # gone since it was read (a process without the guard)
            return None
        raise LockError("cannot stat lock file %s: %s" % (path, err.strerror or err), path)
    problem = exc.problem
    if st.st_mtime + ttl > now:
        raise LockCorrupt("%s; it was last written %ds ago and names no holder or expiry, so it is "
                          "treated as held until %s (its modification time + ttl %ds), then moved "
                          "aside and taken over; if no balancer is running, remove it by hand"
                          % (problem, max(0, int(now - st.st_mtime)), format_time(st.st_mtime + ttl), ttl),
                          path)
    return {"problem": problem, "modified": st.st_mtime, "stat": st, "path": path}


def _same_file(st, other):
    keys = ("st_dev", "st_ino", "st_size", "st_mtime")
    return all(getattr(st, key) == getattr(other, key) for key in keys)


def _take_over_corrupt(path, corrupt, text, token, now):
    """Move the corrupt lock file aside (kept) and create the new lock exclusively.

    ``corrupt["moved_to"]`` is set to the aside name on success. As in :func:`_take_over`, a
    file renamed that is not the one judged (another process replaced it) is put back.
    """
    aside = "%s.corrupt-%s.%s" % (path, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)), token)
    if not _move_aside(path, aside, "corrupt"):
        return False
    try:
        moved = os.lstat(aside)
    except OSError:
        moved = None
    if moved is None or not _same_file(moved, corrupt["stat"]):
        return _put_back(aside, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    corrupt["moved_to"] = aside
    return _create_exclusive(path, text)


def renew(path, token, ttl=DEFAULT_TTL, check_mode=False):
    """Extend the lock held with ``token`` to now + ``ttl``.

    Returns ``{"action": "renewed", "token", "lock", "before", "taken_over_from": None}``;
    raises LockLost when the lock is gone or another holds it (the message says who).
    A lock past its expiry that nobody took over yet is still ours and is renewed.
    """
    _check_ttl(ttl)
    if check_mode:
        return _renew(path, token, ttl, True)
    with guard(path):
        return _renew(path, token, ttl, False)


def _renew(path, token, ttl, check_mode):
    now = _now()
    current = read_lock(path)
    if current is None:
        raise LockLost("the lock %s held with token %s is gone (released, or taken over and "
                       "released by another balancer); acquire it again without a token"
                       % (path, token), path)
    if current["token"] != token:
        raise LockLost("the lock with token %s was lost: %s" % (token, held_message(current, path, now)),
                       path, current)
    record = dict(current)
    record["renewed"] = now
    record["expires"] = now + ttl
    record["ttl"] = ttl
    if not check_mode:
        try:
            write_atomic(path, dumps(record))
        except StateFileError as exc:
            raise LockError(str(exc), path)
    return dict(action="renewed", token=token, lock=record, before=current, taken_over_from=None)


def release(path, token, check_mode=False):
    """Remove the lock if it is held with ``token``.

    Returns ``{"action": "released"|"not_held", "before"}``; a missing lock is ``not_held``
    (nothing to do). Raises LockHeld when the lock there has another token: never someone
    else's lock, even a stale one.
    """
    if check_mode:
        return _release(path, token, True)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        return dict(action="not_held", before=None)  # nothing to release; create nothing
    with guard(path):
        return _release(path, token, False)


def _release(path, token, check_mode):
    now = _now()
    current = read_lock(path)
    if current is None:
        return dict(action="not_held", before=None)
    if current["token"] != token:
        msg = held_message(current, path, now)
        if current["expires"] <= now:
            msg = ("%s is locked by %s since %s with another token (stale for %ds); not released, "
                   "the next acquisition takes it over"
                   % (_what(current, path), current["owner"], format_time(current["acquired"]),
                      int(now - current["expires"])))
        else:
            msg += "; token %s does not match, not released" % token
        raise LockHeld(msg, path, current)
    if not check_mode:
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise LockError("cannot remove lock file %s: %s" % (path, exc.strerror or exc), path)
        _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return dict(action="released", before=current)
