# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The balancer's state file on the qmaster host: read it, write it atomically.

Target side: standard library only, Python 2.7/3.8 compatible syntax.  The state is one JSON
object; a missing file is an empty state, anything unreadable is an error (never a silent reset,
which would forget booting nodes and idle clocks).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import json
import os
import re
import tempfile

DEFAULT_ROOT = "/var/lib/gridengine-balancer"
STATE_FILE_NAME = "state.json"
FILE_MODE = 0o600
DIR_MODE = 0o700

_CLUSTER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class StateFileError(Exception):
    """A state file that cannot be read or written; the message names the path."""


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


def read_state(path):
    """Return ``(content, text)``; ``({}, None)`` when the file does not exist.

    Raises StateFileError when the file exists but cannot be read or is not a JSON object.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return {}, None
        raise StateFileError("cannot read state file %s: %s" % (path, exc.strerror or exc))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateFileError("state file %s is not UTF-8 text (%s); fix or remove it" % (path, exc))
    try:
        content = json.loads(text)
    except ValueError as exc:
        raise StateFileError("state file %s is not valid JSON (%s); fix or remove it" % (path, exc))
    if not isinstance(content, dict):
        raise StateFileError("state file %s holds a JSON %s, not an object; fix or remove it"
                             % (path, type(content).__name__))
    return content, text


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
        raise StateFileError("cannot write state file %s: %s" % (path, exc.strerror or exc))
    _fsync_dir(directory)
