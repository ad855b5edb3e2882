# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine access objects and daemons (target side, standard library only).

Used by the modules ``sge_host_list``, ``sge_daemon``, ``sge_project``, ``sge_userset`` and
``sge_manager``, on top of :mod:`sge_admin` (:class:`SgeAdmin` runs every command). Python >= 3.8.

* Names are checked before any command runs: user names (:func:`user_error`), Grid Engine
  object names of projects and user sets (:func:`object_error`).
* :func:`qmaster_host` reads ``$SGE_ROOT/$SGE_CELL/common/act_qmaster``; :func:`admin_user` the
  ``admin_user`` of ``common/bootstrap`` (Grid Engine refuses to remove it or root from the
  manager and operator lists).
* :func:`qmaster_answers` and :func:`execd_answers` tell whether a daemon is running, for
  ``sge_daemon``; :func:`qping_answers` runs ``qping -info HOST PORT NAME 1`` with a time limit.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import socket

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    CommandFailed,
    SgeAdminError,
    output_message,
    output_text,
    same_host,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import (
    PipeDrain,
    SgeCommandError,
)

# a user name as useradd(8) takes it (and Samba's trailing $); no leading "-" (an option of qconf)
USER_RE = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}\$?\Z")
# a user set entry: a user name or a primary UNIX group written @group (access_list(5))
ENTRY_RE = re.compile(r"\A@?[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}\$?\Z")
# object_name of sge_types(5) allows more; this is the portable subset, and never starts with "-"
OBJECT_RE = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,511}\Z")

# a hostname that qconf -ke/-kej reads as a keyword: "all" stops every execd of the cluster
RESERVED_HOSTS = frozenset(("all", "global", "template"))

# what a Grid Engine client prints when no qmaster answers on the port (messages copied from the
# real SoGE 8.1.9 qmaster: tests/unit/fixtures/qconf/PROVENANCE-access.md)
QMASTER_DOWN = re.compile(r"got select error \(Connection refused\)|unable to contact qmaster|"
                          r"unable to send message to qmaster|can't find connection", re.I)

QPING_TIMEOUT = 20
DEFAULT_EXECD_PORT = 6445


def user_error(name, option):
    """Message for an invalid user name given in ``option``, else None."""
    if isinstance(name, str) and USER_RE.match(name):
        return None
    return ("%s: %r is not a valid user name; expected letters, digits, '_', '.', '-' (not "
            "starting with '.' or '-'), at most 256 characters" % (option, name))


def entry_error(name, option):
    """Message for an invalid user set entry (a user, or a group written ``@group``), else None."""
    if isinstance(name, str) and ENTRY_RE.match(name):
        return None
    return ("%s: %r is not a user name or an @group; expected letters, digits, '_', '.', '-' "
            "(not starting with '.' or '-'), a group with a leading @" % (option, name))


def object_error(name, option, what):
    """Message for an invalid Grid Engine object name (project, user set), else None."""
    if isinstance(name, str) and OBJECT_RE.match(name):
        return None
    return ("%s: %r is not a valid %s name; expected ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ (at most 512 "
            "characters)" % (option, name, what))


def check(errors):
    """Raise SgeAdminError with the first message of ``errors`` that is not None."""
    for msg in errors:
        if msg:
            raise SgeAdminError(msg)


def _cell_file(admin, name):
    path = os.path.join(admin.root, admin.cell, "common", name)
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def qmaster_host(admin):
    """The host named in ``$SGE_ROOT/$SGE_CELL/common/act_qmaster``, or None."""
    text = _cell_file(admin, "act_qmaster")
    if text is None:
        return None
    words = text.split()
    return words[0] if words else None


def admin_user(admin):
    """``admin_user`` of ``$SGE_ROOT/$SGE_CELL/common/bootstrap``, or None (unknown/none)."""
    text = _cell_file(admin, "bootstrap")
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "admin_user":
            return None if fields[1].lower() == "none" else fields[1]
    return None


def unique(names, same=None):
    """``names`` without repeats (first spelling kept), compared with ``same`` (default ==)."""
    result = []
    for name in names:
        if not any((same or (lambda a, b: a == b))(name, seen) for seen in result):
            result.append(name)
    return result


def find_host(name, hosts):
    """The entry of ``hosts`` that is host ``name`` (Grid Engine's comparison), else None."""
    for host in hosts:
        if same_host(name, host):
            return host
    return None


# ---------------------------------------------------------------------------------------------
# is a daemon running?
# ---------------------------------------------------------------------------------------------

def qmaster_answers(admin, label):
    """True when the cell's qmaster answers ``qconf -sh`` (the same path ``qconf -km`` takes);
    False when no qmaster listens (Grid Engine's "Connection refused" / "unable to contact
    qmaster" answers). Any other failure raises SgeAdminError."""
    argv, rc, out, err = admin.run("qconf", ["-sh"])
    if rc == 0:
        return True
    if QMASTER_DOWN.search("%s\n%s" % (output_text(err), output_text(out))):
        return False
    lines = output_message(out, err)
    raise CommandFailed("%s: qconf -sh failed (rc %s): %s" % (label, rc, lines), rc, lines)


def execd_port(admin):
    """TCP port of execd: SGE_EXECD_PORT of settings.sh, else services ``sge_execd``, else 6445."""
    port = admin.env.get("SGE_EXECD_PORT")
    if port:
        return int(port)
    try:
        return socket.getservbyname("sge_execd", "tcp")
    except (OSError, socket.error):
        return DEFAULT_EXECD_PORT


def qping_answers(admin, host, port, name, timeout=QPING_TIMEOUT):
    """True when ``qping -info HOST PORT NAME 1`` exits 0 (the daemon answered) within
    ``timeout`` seconds; qping exits 1 when it cannot reach it (qping(1)). A qping that does
    not finish in time is killed and counts as no answer."""
    argv = [admin.binary("qping"), "-info", host, str(port), name, "1"]
    drain = PipeDrain(timeout=timeout, argv=argv)
    try:
        rc, _out, _err = admin.module.run_command(
            argv, environ_update=dict(admin.env), check_rc=False, expand_user_and_vars=False,
            encoding=None, before_communicate_callback=drain)
    except SgeCommandError:
        return False
    if drain.timed_out:
        return False
    return rc == 0


def execd_answers(admin, label, host):
    """``(running, how)`` of the execd of ``host``: running when the qmaster has load values from
    it (``qhost -h HOST -xml``; Grid Engine clears them when it sends the execd a stop) or, when
    it has none, when the execd itself answers ``qping -info HOST PORT execd 1``.

    The qhost call also shows that the qmaster answers, which stopping through it needs; it
    raises SgeAdminError when it fails."""
    if admin.execd_reporting(label, host):
        return True, "qhost"
    if qping_answers(admin, host, execd_port(admin), "execd"):
        return True, "qping"
    return False, None


# ---------------------------------------------------------------------------------------------
# objects read with a list command and one show command (projects, user sets)
# ---------------------------------------------------------------------------------------------

def read_named(admin, label, list_option, show_option, name):
    """The object ``name`` parsed (``qconf <show_option> NAME``), or None when ``qconf
    <list_option>`` does not list it. The list is asked first, so a missing object is told by
    the list (Grid Engine's "no ... defined" answer is an empty list), not by the wording of
    the show command's error."""
    if name not in admin.show_list(label, list_option):
        return None
    obj = admin.show_object(label, show_option, name)
    if obj is None:
        raise SgeAdminError("%s: listed by qconf %s but qconf %s %s found nothing"
                            % (label, list_option, show_option, name))
    return obj


def names_value(names):
    """A Grid Engine list value: names joined with commas, ``NONE`` when empty."""
    return ",".join(names) if names else "NONE"


def object_text(obj):
    """``key value`` lines of ``obj`` for a diff; ``""`` for no object."""
    if not obj:
        return ""
    width = max(len(k) for k in obj)
    return "".join("%s %s\n" % (k.ljust(width), v) for k, v in obj.items())
