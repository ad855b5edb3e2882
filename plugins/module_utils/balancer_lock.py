# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One balancer per cluster: a lock file with an expiry on the qmaster host.

Target side: standard library only, Python 3.8 compatible.

The lock is a JSON file ``{"schema", "cluster", "owner", "token", "acquired", "renewed",
"expires", "ttl"}``. Liveness is the expiry alone (a controller may die anywhere, and a pid
means nothing on the qmaster): a lock whose ``expires`` has passed is stale and the next
acquirer takes it over. All times are the clock of the host the module runs on (the qmaster),
so controllers with skewed clocks still agree.

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
  new lock linked in; the aside file is then removed. So even without the guard, of two takers racing
  for one stale lock exactly one wins.
  Renewal rewrites the file with a rename (atomic replace), release unlinks it; both only for
  the matching token.
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
    """The lock file exists but is not a lock this module wrote; nothing was changed."""


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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return "has no numeric %s" % key
    return None


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
    advice = "if no balancer is running, remove it by hand"
    try:
        content = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise LockCorrupt("lock file %s is not valid JSON (%s); %s" % (path, exc, advice), path)
    why = _valid(content)
    if why:
        raise LockCorrupt("lock file %s %s, it is not a balancer lock; %s" % (path, why, advice), path)
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
    try:
        os.rename(path, aside)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise LockError("cannot move the stale lock %s aside: %s" % (path, exc.strerror or exc), path)
    if not _is_record(aside, stale):
        # not the lock we judged stale: give it back (fails only if yet another lock appeared)
        try:
            os.link(aside, path)
        except OSError:
            pass
        _unlink_quietly(aside)
        return False
    try:
        return _create_exclusive(path, text)
    finally:
        _unlink_quietly(aside)


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
        current = read_lock(path)
        record = _new_record(cluster, owner, token, ttl, now)
        if current is not None and current["expires"] > now:
            raise LockHeld(held_message(current, path, now), path, current)
        result = dict(token=token, lock=record, before=current, taken_over_from=None,
                      action="acquired" if current is None else "taken_over")
        if current is not None:
            result["taken_over_from"] = current
        if check_mode:
            return result
        text = dumps(record)
        if current is None:
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
