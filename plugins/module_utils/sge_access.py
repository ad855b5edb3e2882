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


def apply_named(module, admin, label, options, name, template, fields, wanted_for, differs):
    """One run of a module that keeps an object read with a list and a show command and written
    whole from a file (projects, user sets): present with the values asked for, or absent
    (``module.params["state"]``). In check mode the changing commands are only recorded.

    ``options``: the qconf options (list, show, add, modify, delete), for a project
    ``("-sprjl", "-sprj", "-Aprj", "-Mprj", "-dprj")``. ``template``: a new object's values
    before the ones asked for; ``fields``: the attributes written back when an existing object
    changes; ``wanted_for(current)``: the values asked for (``current`` is None for a new
    object); ``differs(current, wanted)``: the keys whose values differ.

    Returns ``(before, after, changed)``: the object before and after the run (None: there is
    none; after a change, as Grid Engine stored it; in check mode, as the run would leave it).
    """
    list_option, show_option, add_option, modify_option, delete_option = options
    present = module.params["state"] == "present"
    before = read_named(admin, label, list_option, show_option, name)
    after = before
    if not present:
        if before is not None:
            admin.change(label, "qconf", [delete_option, name])
            after = None
    elif before is None:
        after = dict(template)
        after.update(wanted_for(None))
        admin.change_with_file(label, add_option, after)
    else:
        wanted = wanted_for(before)
        keys = differs(before, wanted)
        if keys:
            after = dict((k, before.get(k, "NONE")) for k in fields)
            after["name"] = name
            after.update(dict((k, wanted[k]) for k in keys))
            admin.change_with_file(label, modify_option, after)
    if admin.commands and not module.check_mode and present:
        after = read_named(admin, label, list_option, show_option, name)
        if after is None:
            raise SgeAdminError("%s: not found after qconf reported success" % label)
    if module.check_mode:
        changed = bool(admin.commands)
    else:
        changed = (before is None) != (after is None) or bool(
            before and after and differs(before, dict((k, after.get(k, "NONE")) for k in fields)))
    return before, after, changed


# ---------------------------------------------------------------------------------------------
# lists of names changed one name at a time (admin and submit hosts, managers, operators)
# ---------------------------------------------------------------------------------------------

# Grid Engine's lists of names: (label, show, add, delete) options of qconf
NAME_LISTS = {
    "admin": ("administrative host list", "-sh", "-ah", "-dh"),
    "submit": ("submit host list", "-ss", "-as", "-ds"),
    "manager": ("manager list", "-sm", "-am", "-dm"),
    "operator": ("operator list", "-so", "-ao", "-do"),
}


def apply_list(module, admin, label, options, names, find, refuse=None, resolve_timeout=None):
    """Make ``names`` members of a list (``module.params["state"]`` V(present)) or not
    (V(absent)), one ``qconf`` call per name that changes. In check mode the calls are only
    recorded.

    ``options``: the qconf options (show, add, delete), those of :data:`NAME_LISTS`. ``find(name, members)``: the member that is ``name``, or None.
    ``refuse(before)``: called before anything is removed; raises SgeAdminError for a name Grid
    Engine keeps on the list. ``resolve_timeout``: given to the adding calls (see
    :meth:`SgeAdmin.change`).

    Returns ``(before, after)``: the list before and after the run (after a change, as Grid
    Engine prints it; in check mode, as the run would leave it)."""
    show, add, delete = options
    before = admin.show_list(label, show)
    after = list(before)
    if module.params["state"] == "present":
        for name in names:
            if find(name, after) is None:
                admin.change(label, "qconf", [add, name], resolve_timeout=resolve_timeout)
                after.append(name)
    else:
        if refuse is not None:
            refuse(before)
        for name in names:
            member = find(name, after)
            if member is not None:
                admin.change(label, "qconf", [delete, member])
                after.remove(member)
    if admin.commands and not module.check_mode:
        after = admin.show_list(label, show)
    return before, after


def lines_text(names):
    """One name a line, for a diff of a list."""
    return "".join("%s\n" % n for n in names)


def shares_spec():
    """The argument spec of the share options of projects and user sets (doc fragment
    ``gridengine.balancer.sge.shares``)."""
    return dict(fshare=dict(type="int"), oticket=dict(type="int"))


def check_shares(params):
    """SgeAdminError naming ``fshare`` or ``oticket`` when given negative."""
    for key in ("fshare", "oticket"):
        if params[key] is not None and params[key] < 0:
            raise SgeAdminError("%s: %s is negative; Grid Engine takes 0 or more" % (key, params[key]))


def check_named(params, what, errors):
    """The input check of a module that keeps a named object with shares (a project, a user set),
    before anything runs: SgeAdminError naming the option for ``params["name"]`` when it is not
    a valid name of a ``what``, then for the first of the module's own ``errors`` (messages or
    None), then for a negative share."""
    check([object_error(params["name"], "name", what)] + list(errors))
    check_shares(params)


def shares_wanted(params):
    """The share options given, as the values Grid Engine stores (``{"fshare": "10"}``)."""
    return dict((key, str(params[key])) for key in ("oticket", "fshare") if params[key] is not None)


def names_value(names):
    """A Grid Engine list value: names joined with commas, ``NONE`` when empty."""
    return ",".join(names) if names else "NONE"


def object_text(obj):
    """``key value`` lines of ``obj`` for a diff; ``""`` for no object."""
    if not obj:
        return ""
    width = max(len(k) for k in obj)
    return "".join("%s %s\n" % (k.ljust(width), v) for k, v in obj.items())
