# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine objects beside queues and hosts (target side, standard library only).

Used by the modules ``sge_complex`` (``qconf -sc``/``-Mc``), ``sge_pe`` (``qconf -sp``/``-Ap``/
``-Mp``/``-dp``), ``sge_sched_conf`` (``qconf -ssconf``/``-Msconf``) and ``sge_conf``
(``qconf -sconf``/``-Aconf``/``-Mconf``/``-dconf``). Python >= 3.8. It builds on
``sge_admin`` (:class:`SgeAdmin` runs the commands; check mode only records them):

* :func:`show` reads an object, telling a missing one (None) from a failure;
* :meth:`SgeAdmin.change_with_text` hands a text to ``qconf <option> FILE`` from a private
  temporary file; ``qconf -Aconf``/``-Mconf`` take the configuration's name from the file's
  name, so the file can be given a name (the host name or ``global``);
* :func:`parse_complexes` / :func:`render_complexes` read and write the complex list
  (complex(5)): one line per attribute, eight white-space separated columns.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    CommandFailed,
    SgeAdminError,
    canonical,
    output_message,
    output_text,
    to_sge_value,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import describe

# ---------------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------------

# (complex attribute and parallel environment names: sge_admin.name_error("object", ...))
# parameter names of sched_conf(5) and sge_conf(5)
PARAMETER_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


def pattern_error(pattern, name, option, what):
    """Message when ``name`` (given in ``option``) does not match ``pattern``, else None."""
    if isinstance(name, str) and len(name) <= 255 and pattern.match(name):
        return None
    return "%s: %r is not a valid name; expected %s" % (option, name, what)


# ---------------------------------------------------------------------------------------------
# reading and writing through qconf
# ---------------------------------------------------------------------------------------------

def show(admin, label, args, missing=None):
    """Output text of ``qconf ARGS``; None when it fails with a message matching ``missing``
    (a compiled pattern: the object does not exist). Raises CommandFailed otherwise."""
    argv, rc, out, err = admin.run("qconf", args)
    if rc == 0:
        return output_text(out)
    text = output_message(out, err)
    if missing is not None and missing.search(text):
        return None
    raise CommandFailed("%s: %s failed (rc %s): %s" % (label, describe(argv), rc, text), rc, text)


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------

_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def value_text(value):
    """Text of a value given to a module: booleans TRUE/FALSE, numbers as written, None and ""
    NONE, lists joined with commas."""
    if value is None:
        return "NONE"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (list, tuple)):
        items = [value_text(v) for v in value]
        items = [i for i in items if i != "NONE"]
        return ",".join(items) if items else "NONE"
    text = str(value).strip()
    return text if text else "NONE"


def line_value_error(option, text):
    """Message when ``text`` cannot be one value of a line-based object file, else None."""
    if _BAD_VALUE.search(text):
        return ("%s: value %r contains a line break or control character; Grid Engine object "
                "files are line based" % (option, text))
    if text.endswith("\\"):
        return "%s: value %r ends with a backslash (a continuation mark)" % (option, text)
    return None


def same(name, a, b):
    """Values compared as Grid Engine means them (sge_admin.canonical: keywords in upper case,
    h:m:s in seconds, numbers normalised)."""
    return canonical(name, a) == canonical(name, b)


# ---------------------------------------------------------------------------------------------
# complexes (complex(5))
# ---------------------------------------------------------------------------------------------

COMPLEX_FIELDS = ("shortcut", "type", "relop", "requestable", "consumable", "default", "urgency")
COMPLEX_TYPES = ("INT", "DOUBLE", "MEMORY", "TIME", "STRING", "CSTRING", "RESTRING", "HOST",
                 "BOOL", "RSMAP")
COMPLEX_RELOPS = ("==", "!=", "<", "<=", ">", ">=", "EXCL")
_STRING_TYPES = ("STRING", "CSTRING", "RESTRING", "HOST")
# qconf -sc's column layout ("%-19s %-10s %-9s %-5s %-11s %-10s %-8s %s"), header and footer, as
# the real SoGE 8.1.9 qmaster prints them (tests/unit/fixtures/qconf/captured_objects/qconf_sc.txt)
_COMPLEX_WIDTHS = (19, 10, 9, 5, 11, 10, 8)
COMPLEX_HEADER = ("#name               shortcut   type      relop requestable consumable "
                  "default  urgency \n"
                  "#" + "-" * 86 + "\n")
COMPLEX_FOOTER = "# >#< starts a comment but comments are not saved across edits --------\n"


def parse_complexes(text):
    """``qconf -sc`` output as an ordered dict ``{name: {field: value}}`` (fields
    :data:`COMPLEX_FIELDS`; columns beyond the eighth, printed by other Grid Engines, are kept
    under ``extra``). Comment and blank lines are skipped; a line of fewer than eight columns
    raises SgeAdminError naming it."""
    entries = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        cols = line.split()
        if len(cols) < 8:
            raise SgeAdminError("qconf -sc: cannot read the line %r (expected 8 columns: name "
                                "shortcut type relop requestable consumable default urgency)"
                                % line)
        entry = dict(zip(COMPLEX_FIELDS, cols[1:8]))
        entry["extra"] = cols[8:]
        entries[cols[0]] = entry
    return entries


def complex_line(name, entry):
    cols = [name] + [entry[f] for f in COMPLEX_FIELDS]
    head = "".join(c.ljust(w) + " " for c, w in zip(cols[:7], _COMPLEX_WIDTHS))
    return head + " ".join([cols[7]] + list(entry.get("extra") or [])) + "\n"


def render_complexes(entries):
    """The complex list as ``qconf -Mc`` reads it (and ``qconf -sc`` prints it)."""
    return (COMPLEX_HEADER + "".join(complex_line(n, e) for n, e in entries.items())
            + COMPLEX_FOOTER)


def complex_defaults(ctype):
    """Columns of a new attribute of type ``ctype`` that were not given: the values
    ``qconf -mc`` users write for a requestable, non-consumable attribute."""
    string = ctype in _STRING_TYPES
    return {
        "relop": "==" if string or ctype == "BOOL" else "<=",
        "requestable": "YES",
        "consumable": "NO",
        "default": "NONE" if string else ("FALSE" if ctype == "BOOL" else "0"),
        "urgency": "0",
    }


def complex_same(field, a, b):
    if field in ("type", "requestable", "consumable"):
        return a.upper() == b.upper()
    if field in ("shortcut", "relop"):
        return a == b
    return same(field, a, b)


def complex_text(names, entries):
    """Lines of the attributes ``names`` that are in ``entries`` (for diffs)."""
    return "".join(complex_line(n, entries[n]) for n in names if n in entries)


# ---------------------------------------------------------------------------------------------
# parallel environments (sge_pe(5))
# ---------------------------------------------------------------------------------------------

# Son of Grid Engine 8.1.9's parallel environment as roles/sge_master created it with qconf -Ap
# on the local cluster (the values of the PEs the Debian package ships, util/resources/pe/)
PE_TEMPLATE = (
    ("pe_name", "template"), ("slots", "0"), ("user_lists", "NONE"), ("xuser_lists", "NONE"),
    ("start_proc_args", "NONE"), ("stop_proc_args", "NONE"), ("allocation_rule", "$pe_slots"),
    ("control_slaves", "FALSE"), ("job_is_first_task", "TRUE"), ("urgency_slots", "min"),
    ("accounting_summary", "FALSE"), ("qsort_args", "NONE"),
)
PE_ATTRIBUTES = tuple(k for k, _v in PE_TEMPLATE)
PE_MISSING = re.compile(r"is not a parallel environment|does not exist", re.I)
# qconf -sconf HOST of a host without a local configuration
CONF_MISSING = re.compile(r"configuration \S+ not defined|does not exist", re.I)


# ---------------------------------------------------------------------------------------------
# configurations (sched_conf(5), sge_conf(5))
# ---------------------------------------------------------------------------------------------

def checked_parameters(parameters, option, keep_none=False):
    """``{name: text}`` of parameters given to a module, in name order, or SgeAdminError naming
    the first bad one. Texts as :func:`sge_admin.to_sge_value` writes them; with ``keep_none``
    a None value stays None (a parameter to remove)."""
    checked = {}
    for name in sorted(parameters or {}, key=str):
        msg = pattern_error(PARAMETER_RE, name, option, "a parameter name (letters, digits, '_')")
        if msg:
            raise SgeAdminError(msg)
        value = parameters[name]
        if value is None and keep_none:
            checked[name] = None
            continue
        text = to_sge_value(name, value)
        msg = line_value_error("%s.%s" % (option, name), text)
        if msg:
            raise SgeAdminError(msg)
        checked[name] = text
    return checked
