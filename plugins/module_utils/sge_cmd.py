# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine environment, binaries and argv lists (target side, standard library only).

Commands are always argv lists run through ``AnsibleModule.run_command`` with
``LC_ALL=C``; no shell, no string built from job, user or host names.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import platform
import re
import selectors
import time

try:
    from shlex import quote as _quote
except ImportError:  # pragma: no cover - Python 2 only
    from pipes import quote as _quote

DEFAULT_SGE_ROOT = "/var/lib/gridengine"
DEFAULT_SGE_CELL = "default"

# settings.sh lines look like: SGE_ROOT=/var/lib/gridengine; export SGE_ROOT
_SETTING = re.compile(r"^\s*(SGE_[A-Z_]+)=([^;`$\s]*)\s*(?:;.*)?$")
# an architecture name (lx-amd64, lx26-x86, sol-sparc64): a directory of $SGE_ROOT/bin
_ARCH_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
_SETTINGS_KEYS = ("SGE_ROOT", "SGE_CELL", "SGE_ARCH", "SGE_QMASTER_PORT", "SGE_EXECD_PORT",
                  "SGE_CLUSTER_NAME")

# uname -> Grid Engine architecture string (what $SGE_ROOT/util/arch prints on Linux)
_LINUX_ARCH = {
    "x86_64": "lx-amd64",
    "amd64": "lx-amd64",
    "i386": "lx-x86",
    "i486": "lx-x86",
    "i586": "lx-x86",
    "i686": "lx-x86",
    "aarch64": "lx-arm64",
    "armv7l": "lx-arm",
    "ppc64le": "lx-ppc64le",
    "ppc64": "lx-ppc64",
    "s390x": "lx-s390x",
}


_PORT = re.compile(r"\A[0-9]{1,5}\Z")

# a cell is a directory under SGE_ROOT: one path component, never "." or ".."
CELL_RE = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}\Z")


class SgeCommandError(Exception):
    """A Grid Engine command could not be found or failed; the message says which and why."""


def location_error(sge_root, sge_cell):
    """Message naming ``sge_root`` or ``sge_cell`` when it cannot be used safely, else None.

    ``sge_root`` must be an absolute path without control characters; ``sge_cell`` one directory
    name (letters, digits, ``_ . -``, not starting with ``.`` or ``-``), so that
    ``$SGE_ROOT/$SGE_CELL/common/...`` stays under ``sge_root``.
    """
    if sge_root is not None and (not isinstance(sge_root, str) or not os.path.isabs(sge_root)
                                 or any(ord(c) < 32 or ord(c) == 127 for c in sge_root)):
        return "sge_root: %r must be an absolute path without control characters" % (sge_root,)
    if sge_cell is not None and (not isinstance(sge_cell, str) or not CELL_RE.match(sge_cell)):
        return ("sge_cell: %r is not a cell name (one directory name under sge_root: letters, digits, "
                "'_', '.', '-', not starting with '.' or '-')" % (sge_cell,))
    return None


def sge_argument_spec(**options):
    """The options every Grid Engine module shares, written once: which installation, cell and
    qmaster it talks to, after the module's own ``options``.

    Their documentation is the doc fragment ``gridengine.balancer.sge``
    (``plugins/doc_fragments/sge.py``), and ``meta/runtime.yml`` lists every module that uses
    them in the action group ``sge``, so a play sets them once with ``module_defaults:
    group/gridengine.balancer.sge``. A module builds its spec with them:
    ``sge_argument_spec(name=dict(...), ...)``; ``sge_options_error`` checks their values.
    """
    spec = dict(options)
    spec.update(
        sge_root=dict(type="path", default=DEFAULT_SGE_ROOT),
        sge_cell=dict(type="str", default=DEFAULT_SGE_CELL),
        sge_qmaster_port=dict(type="int"),
    )
    return spec


def sge_options_error(sge_root, sge_cell, sge_qmaster_port):
    """Message naming the shared option (``sge_argument_spec``) whose value cannot be used, else
    None: ``location_error`` for the root and cell, and a port outside 1-65535."""
    msg = location_error(sge_root, sge_cell)
    if msg:
        return msg
    if sge_qmaster_port is not None and not 0 < sge_qmaster_port < 65536:
        return "sge_qmaster_port must be between 1 and 65535, got %s" % sge_qmaster_port
    return None


def read_settings(sge_root, sge_cell):
    """Literal ``SGE_*`` assignments of ``$SGE_ROOT/$SGE_CELL/common/settings.sh``.

    Only plain values are taken (no ``$``, backquote or shell syntax is evaluated); a missing
    or unreadable file gives ``{}``. Bytes that are not UTF-8 (a Latin-1 comment) are read as
    U+FFFD, and a port that is not a number from 1 to 65535 is left out, as if not set (both
    found by benchmarks/fuzz_parsers.py: they made every module that reads the file crash).
    """
    path = os.path.join(sge_root, sge_cell, "common", "settings.sh")
    values = {}
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                match = _SETTING.match(raw.decode("utf-8", "replace"))
                if match and match.group(1) in _SETTINGS_KEYS and match.group(2):
                    values[match.group(1)] = match.group(2)
    except (IOError, OSError):
        return {}
    for key in ("SGE_QMASTER_PORT", "SGE_EXECD_PORT"):
        if key in values and not _is_port(values[key]):
            del values[key]
    return values


def _is_port(text):
    return bool(_PORT.match(text)) and 0 < int(text) < 65536


def sge_environment(sge_root=None, sge_cell=None, qmaster_port=None, settings=None):
    """Environment for Grid Engine clients: SGE_ROOT, SGE_CELL, SGE_QMASTER_PORT, LC_ALL=C.

    Explicit arguments win over settings.sh values, which win over the defaults
    (``/var/lib/gridengine``, ``default``, port from settings.sh or none = /etc/services).
    """
    root = sge_root or DEFAULT_SGE_ROOT
    cell = sge_cell or DEFAULT_SGE_CELL
    if settings is None:
        settings = read_settings(root, cell)
    env = {"SGE_ROOT": root, "SGE_CELL": cell, "LC_ALL": "C"}
    port = qmaster_port if qmaster_port else settings.get("SGE_QMASTER_PORT")
    if port:
        env["SGE_QMASTER_PORT"] = str(int(port))
    if settings.get("SGE_EXECD_PORT"):
        env["SGE_EXECD_PORT"] = settings["SGE_EXECD_PORT"]
    return env


def sge_arch(sge_root=None, settings=None):
    """Grid Engine architecture string: SGE_ARCH from settings.sh, else the only directory in
    ``$SGE_ROOT/bin``, else derived from ``uname``; None when unknown."""
    if settings and settings.get("SGE_ARCH") and _ARCH_NAME.match(settings["SGE_ARCH"]):
        # only a plain name: settings.sh belongs to the admin user, and a value with a "/" or
        # ".." would send root's commands to a directory outside $SGE_ROOT/bin
        return settings["SGE_ARCH"]
    root = sge_root or DEFAULT_SGE_ROOT
    try:
        entries = [e for e in os.listdir(os.path.join(root, "bin"))
                   if os.path.isdir(os.path.join(root, "bin", e))]
    except (IOError, OSError):
        entries = []
    if len(entries) == 1:
        return entries[0]
    if platform.system() == "Linux":
        return _LINUX_ARCH.get(platform.machine())
    return None


def sge_bin_dir(sge_root, arch):
    """``$SGE_ROOT/bin/<arch>`` (the arch part left as ``<arch>`` when unknown)."""
    return os.path.join(sge_root or DEFAULT_SGE_ROOT, "bin", arch or "<arch>")


def find_command(module, name, sge_root=None, arch=None):
    """Absolute path of a Grid Engine client: ``$SGE_ROOT/bin/<arch>`` first, then PATH."""
    bin_dir = sge_bin_dir(sge_root, arch)
    opt_dirs = [bin_dir] if arch else []
    path = module.get_bin_path(name, required=False, opt_dirs=opt_dirs)
    if not path:
        raise SgeCommandError("%s not found in PATH or %s" % (name, bin_dir))
    return path


def qstat_argv(qstat, extended=False):
    """``qstat -u '*' -f -r -xml``: every user's jobs, full queue listing, requests; with
    ``extended``, ``-ext`` too, without which qstat prints no job's project (``JB_project``)."""
    return [qstat, "-u", "*", "-f", "-r"] + (["-ext"] if extended else []) + ["-xml"]


def qhost_argv(qhost):
    """``qhost -q -xml``: every execution host with its queue instances."""
    return [qhost, "-q", "-xml"]


def qacct_begin(epoch):
    """qacct ``-b`` time ``YYMMDDhhmm`` in the local time of the machine running qacct."""
    return time.strftime("%y%m%d%H%M", time.localtime(epoch))


def qacct_argv(qacct, begin_epoch):
    """``qacct -j -b YYMMDDhhmm``: accounting records of jobs started since ``begin_epoch``."""
    return [qacct, "-j", "-b", qacct_begin(begin_epoch)]


def describe(argv):
    """Readable form of an argv for messages: program basename, arguments shell-quoted."""
    return " ".join([os.path.basename(argv[0])] + [_quote(a) for a in argv[1:]])


def _first_line(*blobs):
    for blob in blobs:
        if not blob:
            continue
        if isinstance(blob, bytes):
            blob = blob.decode("utf-8", "replace")
        for line in blob.splitlines():
            if line.strip():
                return line.strip()
    return "(no output)"


class PipeDrain(object):
    """``before_communicate_callback`` for ``run_command`` that reads stdout and stderr itself.

    ``run_command`` appends each 32 KiB chunk to a bytes object, which is quadratic in the
    output size (27 MB of output took 9 s, 54 MB 26 s on a 2-core build machine; a 10,000 host
    ``qstat -f -r -xml`` is well over 100 MB). This drains both pipes with one selector, so
    ``run_command`` then finds both pipes at EOF. Without ``consume``, stdout goes into a
    bytearray ``out`` (amortised linear, no second copy of the output as a join of chunks would
    make; the XML parser reads any bytes-like object). With ``consume``, ``consume(chunks)`` reads
    stdout as it arrives (an iterator of bytes) and its return value is ``result``: stdout is
    never held whole. What it leaves unread is drained and dropped; an exception it raises is
    kept in ``error`` (raise it only after the exit status: a failed command explains an
    unreadable output), except SgeCommandError, which is raised. ``size`` counts stdout's bytes
    and ``head`` keeps its first 4 KiB, for messages.

    With ``timeout`` (seconds), a command still running then is killed (SIGKILL) and
    ``timed_out`` is set; its output so far is kept but must not be used. ``run_command`` has no
    timeout of its own, and a qstat that hangs on an unreachable qmaster would hold the poll
    (and the balancer's lock) for ever. If the pipes stay open ``grace`` seconds after the kill
    (a child of the command holds them), SgeCommandError is raised from here.
    """

    HEAD = 4096

    def __init__(self, chunk=1 << 20, timeout=None, grace=5.0, argv=None, consume=None):
        self.chunk = chunk
        self.timeout = timeout
        self.grace = grace
        self.argv = argv
        self.consume = consume
        self.out = None
        self.err = None
        self.result = None
        self.error = None
        self.size = 0
        self.head = b""
        self.timed_out = False

    def __call__(self, cmd):
        err = bytearray()
        chunks = self._read(cmd, err)
        try:
            self.take(chunks)
        finally:
            chunks.close()
            self.err = bytes(err)

    def take(self, chunks):
        """Give stdout's ``chunks`` (an iterator of bytes) to ``consume``, or collect them in
        ``out``; count them in ``size`` and ``head``."""
        counted = self._count(chunks)
        if self.consume is None:
            out = bytearray()
            for data in counted:
                out.extend(data)
            self.out = out
            return
        try:
            self.result = self.consume(counted)
        except SgeCommandError:
            raise
        except Exception as exc:  # pylint: disable=broad-except
            self.error = exc
        for _data in counted:
            pass

    def _count(self, chunks):
        for data in chunks:
            if len(self.head) < self.HEAD:
                self.head += data[:self.HEAD - len(self.head)]
            self.size += len(data)
            yield data

    def _read(self, cmd, err):
        """Yield stdout's chunks as they come; stderr goes into ``err``."""
        if hasattr(selectors, "PollSelector"):
            selector = selectors.PollSelector()
        else:  # pragma: no cover - platforms without poll()
            selector = selectors.SelectSelector()
        deadline = time.monotonic() + self.timeout if self.timeout else None
        try:
            selector.register(cmd.stdout, selectors.EVENT_READ, True)
            selector.register(cmd.stderr, selectors.EVENT_READ, False)
            while selector.get_map():
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    if self.timed_out:  # the pipes outlived the command by ``grace``
                        raise SgeCommandError("%s did not finish within %ss and was killed, but a process "
                                              "it started still holds its output open"
                                              % (describe(self.argv or [str(cmd.args)]), self.timeout))
                    self.timed_out = True
                    cmd.kill()
                    deadline = time.monotonic() + self.grace
                    continue
                for key, _event in selector.select(wait):
                    data = os.read(key.fileobj.fileno(), self.chunk)
                    if not data:
                        selector.unregister(key.fileobj)
                    elif key.data:
                        yield data
                    else:
                        err.extend(data)
        finally:
            selector.close()


def _call(module, argv, environ, timeout=None, consume=None):
    env = dict(environ or {})
    env["LC_ALL"] = "C"
    drain = PipeDrain(timeout=timeout, argv=argv, consume=consume)
    try:
        rc, out, err = module.run_command(argv, environ_update=env, check_rc=False, encoding=None,
                                          expand_user_and_vars=False, handle_exceptions=False,
                                          before_communicate_callback=drain)
    except OSError as exc:
        raise SgeCommandError("cannot run %s: %s" % (describe(argv), exc.strerror or exc))
    if drain.timed_out:
        raise SgeCommandError("%s did not finish within %ss and was killed (is the qmaster reachable "
                              "and answering?); its output was not used" % (describe(argv), timeout))
    if drain.err is not None:
        out, err = drain.out, drain.err
    return rc, out, err, drain


def _check(argv, rc, out, err, require_output, empty=None):
    """Raise SgeCommandError for a failed command, or with ``require_output`` for one that printed
    nothing (``empty``, else judged from ``out``)."""
    if rc != 0:
        raise SgeCommandError("%s failed (rc %s): %s" % (describe(argv), rc, _first_line(err, out)))
    if empty is None:
        empty = not bytes(out).strip()
    if require_output and empty:
        raise SgeCommandError("%s exited 0 but printed nothing%s" % (
            describe(argv), (": " + _first_line(err)) if err and bytes(err).strip() else ""))


def run_sge(module, argv, environ=None, timeout=None, require_output=False):
    """Run a Grid Engine command; return its stdout (bytes or bytearray).

    Raises SgeCommandError "<command> failed (rc N): <first line of stderr>" otherwise, and when
    it runs longer than ``timeout`` seconds (then it is killed). With ``require_output``, an
    exit 0 with nothing on stdout is an error too (``qstat -xml`` always prints a document).
    """
    rc, out, err, _drain = _call(module, argv, environ, timeout)
    _check(argv, rc, out, err, require_output)
    return out


def run_sge_stream(module, argv, consume, environ=None, timeout=None, require_output=False):
    """:func:`run_sge` whose stdout is read by ``consume(chunks)`` as the command prints it
    (``sge_xml.parse_qstat_stream``); returns what ``consume`` returns.

    The command's failure, time-out or empty output is reported as by :func:`run_sge` and before
    anything ``consume`` raised (a qmaster that is down explains an empty document); then what it
    raised is raised.
    """
    rc, _out, err, drain = _call(module, argv, environ, timeout, consume)
    # only the output's head is kept: one longer than that is not empty
    _check(argv, rc, drain.head, err, require_output,
           empty=drain.size <= drain.HEAD and not drain.head.strip())
    if drain.error is not None:
        raise drain.error
    return drain.result


def run_qacct(module, argv, environ=None, timeout=None):
    """Run qacct; return stdout (bytes-like). No accounting file yet (a fresh cluster: rc 1,
    ``.../accounting: No such file or directory``) gives ``b""`` -- no jobs, not an error."""
    rc, out, err, _drain = _call(module, argv, environ, timeout)
    if rc == 0:
        return out
    text = err.decode("utf-8", "replace") if isinstance(err, bytes) else (err or "")
    if "No such file or directory" in text and "accounting" in text:
        return b""
    raise SgeCommandError("%s failed (rc %s): %s" % (describe(argv), rc, _first_line(err, out)))
