# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine administration with qconf and qmod (target side, standard library only).

Used by the modules ``sge_exec_host``, ``sge_hostgroup`` and ``sge_queue``. Python >= 3.8.

* Names are validated before any command runs (:func:`check_names`).
* ``qconf -s*`` object output is parsed into a dict (:func:`parse_object`); values keep Grid
  Engine's text, continuation lines (``\\``) joined. :func:`split_value` splits a value into
  its default part and its per-host overrides (``slots 1,[node001=2]``); :func:`canonical` gives
  a form to compare values with.
* Objects are written with :func:`render_object` and applied with ``qconf -A*``/``-M*`` from a
  temporary file (mode 0600, removed afterwards). ``qconf -a*``/``-m*`` start ``$EDITOR`` and
  are never used.
* Every command is an argv list run through ``AnsibleModule.run_command`` with ``LC_ALL=C``,
  ``SGE_ROOT``, ``SGE_CELL`` (and ``SGE_QMASTER_PORT``) in its environment; never a shell.
* Mutating commands go through :meth:`SgeAdmin.change`, which only records them in check mode.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import shutil
import tempfile
import time

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import (
    DEFAULT_SGE_CELL,
    DEFAULT_SGE_ROOT,
    SgeCommandError,
    describe,
    find_command,
    read_settings,
    sge_arch,
    sge_environment,
    sge_options_error,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import (
    SgeParseError,
    parse_qhost,
    parse_qstat,
)

# patched by the unit tests
_sleep = time.sleep
_clock = time.time

RESOLVE_RETRY_INTERVAL = 5

# ---------------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------------

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# \Z, not $: "$" also matches before a trailing newline
HOSTNAME_RE = re.compile(r"\A%s(?:\.%s)*\Z" % (_LABEL, _LABEL))
HOSTGROUP_RE = re.compile(r"\A@[A-Za-z0-9_.-]+\Z")
# a leading "-" would make the name an option of qconf/qmod
QUEUE_RE = re.compile(r"\A[A-Za-z0-9_.][A-Za-z0-9_.-]*\Z")
# the name of a complex attribute (complex(5), qsub -l), a parallel environment or a resource quota
# set: a letter or "_" first (never a digit, "." or "-", which qconf and qsub would read as an option)
OBJECT_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.-]*\Z")
OBJECT_NAME_RULE = "letters, digits, '_', '.', '-', starting with a letter or '_'"

_KINDS = {
    "host": (lambda n: len(n) <= 253 and HOSTNAME_RE.match(n),
             "a host name of RFC 1123 labels (letters, digits, inner hyphens) separated by dots"),
    "hostgroup": (HOSTGROUP_RE.match,
                  "a host group name matching ^@[A-Za-z0-9_.-]+$"),
    "queue": (QUEUE_RE.match,
              "a cluster queue name matching ^[A-Za-z0-9_.-]+$ that does not start with -"),
    "object": (lambda n: len(n) <= 255 and OBJECT_NAME_RE.match(n), OBJECT_NAME_RULE),
    "host_or_group": (lambda n: (HOSTGROUP_RE.match(n) if n.startswith("@")
                                 else len(n) <= 253 and HOSTNAME_RE.match(n)),
                      "a host name (RFC 1123) or a host group name (^@[A-Za-z0-9_.-]+$)"),
}


class SgeAdminError(Exception):
    """A Grid Engine admin step failed or was refused; the message names the object and why.
    ``fail_result``: return values the failure adds (see :func:`run_admin`)."""

    fail_result = None


def name_error(kind, name, option):
    """Message for an invalid ``name`` of ``kind`` given in ``option``, or None when valid."""
    check, what = _KINDS[kind]
    if isinstance(name, str) and name and check(name):
        return None
    return "%s: %r is not a valid name; expected %s" % (option, name, what)


def check_names(kind, names, option):
    """Raise SgeAdminError naming the first invalid name of ``names``."""
    for name in names:
        msg = name_error(kind, name, option)
        if msg:
            raise SgeAdminError(msg)


def name_and_hosts_check(name_kind, hosts_kind):
    """The input check of a module whose object ``name`` is a name of ``name_kind`` and whose
    option ``hosts`` (a list, or None) holds names of ``hosts_kind`` (kinds of :func:`name_error`):
    a ``check(params)`` for :func:`run_admin`."""
    def check(params):
        check_names(name_kind, [params["name"]], "name")
        check_names(hosts_kind, params["hosts"] or [], "hosts")
    return check


def is_hostgroup(name):
    return name.startswith("@")


def same_host(a, b):
    """Grid Engine host name comparison: case-insensitive; a short name matches any domain."""
    a = a.lower()
    b = b.lower()
    if a == b:
        return True
    if is_hostgroup(a) or is_hostgroup(b):
        return False
    if "." not in a or "." not in b:
        return a.split(".", 1)[0] == b.split(".", 1)[0]
    return False


def same_member(a, b):
    """Members of a host list: host groups by exact name, hosts by :func:`same_host`."""
    if is_hostgroup(a) or is_hostgroup(b):
        return a == b
    return same_host(a, b)


def find_member(name, members):
    """The entry of ``members`` that is ``name`` (see :func:`same_member`), else None."""
    for member in members:
        if same_member(name, member):
            return member
    return None


# ---------------------------------------------------------------------------------------------
# qconf object text
# ---------------------------------------------------------------------------------------------

def parse_object(text):
    """Parse ``qconf -s*`` object output (``name value`` lines) into a dict (insertion ordered).

    A line ending in ``\\`` continues on the next one: after a comma the pieces are joined
    directly (``a, \\`` + ``b`` gives ``a,b``), otherwise with one space (``a \\`` + ``b``
    gives ``a b``). Comment lines (``#``) and blank lines are skipped.
    Values are Grid Engine's text, ``NONE`` included.
    """
    obj = {}
    key = None
    pieces = None   # the pieces of the value being read, joined once at its end (a value continued
    #                 over 100,000 lines, such as a large host group, stays linear)
    for raw in text.splitlines():
        line = raw.strip()
        if pieces is None:
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 1)
            key = fields[0]
            part = fields[1].strip() if len(fields) > 1 else ""
            pieces = []
        else:
            part = line
        cont = part.endswith("\\")
        if cont:
            part = part[:-1].rstrip()
        if part:
            # qconf cuts after a comma or a space: "a, \" + "b" is "a,b", "a \" + "b" is "a b"
            if pieces and not pieces[-1].endswith(","):
                pieces.append(" ")
            pieces.append(part)
        if not cont:
            obj[key] = "".join(pieces)
            pieces = None
    if pieces is not None:
        obj[key] = "".join(pieces)
    return obj


def parse_list(text):
    """Names printed one per line (``qconf -sel``, ``-sh``, ``-ss``, ``-shgrpl``, ``-sql``)."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _top_level_tokens(value):
    """Split at commas and white space outside ``[...]``; bracket tokens are kept whole."""
    tokens = []
    cur = []
    depth = 0
    for ch in value:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        if depth == 0 and (ch == "," or ch.isspace()):
            if cur:
                tokens.append("".join(cur))
                cur = []
            continue
        cur.append(ch)
    if cur:
        tokens.append("".join(cur))
    return tokens


def split_value(value):
    """``(default_tokens, overrides)`` of a queue attribute value.

    ``"1,[node001=2],[@big=4]"`` gives ``(["1"], [("node001", "2"), ("@big", "4")])``;
    ``"np_load_avg=1.75,[vm=np_load_avg=1.5,mem_free=2G]"`` gives
    ``(["np_load_avg=1.75"], [("vm", "np_load_avg=1.5,mem_free=2G")])``.
    ``NONE`` gives ``[]``.
    """
    default = []
    overrides = []
    for token in _top_level_tokens(value or ""):
        if token.startswith("[") and token.endswith("]"):
            host, _sep, inner = token[1:-1].partition("=")
            overrides.append((host.strip(), inner.strip()))
        else:
            default.append(token)
    if len(default) == 1 and default[0].upper() == "NONE":
        default = []
    return default, overrides


def split_list(value):
    """Entries of a list value (``hostlist``, ``user_lists`` ...); ``NONE`` gives ``[]``."""
    return split_value(value)[0]


def parse_pairs(value):
    """``name=value`` list (``complex_values``) as a dict; ``NONE`` gives ``{}``."""
    pairs = {}
    for token in split_list(value):
        name, _sep, val = token.partition("=")
        pairs[name] = val
    return pairs


_KEYWORDS = frozenset(("NONE", "TRUE", "FALSE", "INFINITY", "UNDEFINED"))
_HMS = re.compile(r"\A(\d+):(\d+):(\d+)\Z")
_NUMBER = re.compile(r"\A-?\d+(?:\.\d+)?\Z")

# list attributes whose order has no meaning
UNORDERED = frozenset((
    "hostlist", "pe_list", "ckpt_list", "user_lists", "xuser_lists", "projects", "xprojects",
    "owner_list", "qtype", "load_thresholds", "suspend_thresholds", "complex_values",
    "subordinate_list", "load_scaling", "usage_scaling", "report_variables",
))
# list attributes that qconf prints separated by spaces (others: by commas)
SPACE_LISTS = frozenset((
    "hostlist", "pe_list", "ckpt_list", "user_lists", "xuser_lists", "projects", "xprojects",
    "owner_list", "qtype",
))


def _norm_scalar(text):
    upper = text.upper()
    if upper in _KEYWORDS:
        return upper
    match = _HMS.match(text)
    if match:
        h, m, s = (int(g) for g in match.groups())
        return str(h * 3600 + m * 60 + s)
    if _NUMBER.match(text):
        number = float(text)
        return str(int(number)) if number.is_integer() else repr(number)
    return text


def _norm_token(attr, token):
    if attr == "hostlist":
        return token if is_hostgroup(token) else token.lower()
    name, sep, val = token.partition("=")
    if sep:
        return "%s=%s" % (name, _norm_scalar(val))
    return _norm_scalar(token)


def _canonical_default(attr, default):
    norm = [_norm_token(attr, t) for t in default]
    if attr in UNORDERED:
        norm.sort()
    return tuple(norm)


def canonical(attr, value):
    """Comparable form of an attribute value: keywords upper case, ``h:m:s`` in seconds,
    numbers normalised, order ignored for list attributes, overrides keyed by host.

    An override's value is normalised the same way, one level only: Grid Engine never nests
    overrides, so an override inside an override (``[a=[b=1]]``) is kept as its text, keyed by
    host, instead of being followed (text nested thousands deep raised RecursionError).
    """
    default, overrides = split_value(value)
    over = []
    for host, inner in overrides:
        inner_default, inner_overrides = split_value(inner)
        nested = tuple(sorted((h.lower(), text) for h, text in inner_overrides))
        over.append((host.lower(), (_canonical_default(attr, inner_default), nested)))
    return (_canonical_default(attr, default), tuple(sorted(over)))


def same_value(attr, a, b):
    return canonical(attr, a) == canonical(attr, b)


def to_sge_value(attr, value):
    """Text of a value given to a module: booleans TRUE/FALSE, None and empty NONE, lists
    joined (spaces for name lists, commas otherwise), dicts as ``name=value,...``."""
    if value is None:
        return "NONE"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        items = [to_sge_value(attr, v) for v in value]
        items = [i for i in items if i != "NONE"]
        if not items:
            return "NONE"
        return (" " if attr in SPACE_LISTS else ",").join(items)
    if isinstance(value, dict):
        if not value:
            return "NONE"
        return ",".join("%s=%s" % (k, to_sge_value(attr, v)) for k, v in value.items())
    text = str(value).strip()
    return text if text else "NONE"


_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def value_error(attr, text):
    """Message when a value cannot be written safely into an object file, else None."""
    if _BAD_VALUE.search(text):
        return ("%s: value %r contains a line break or control character; Grid Engine object "
                "files are line based" % (attr, text))
    if text.endswith("\\"):
        return "%s: value %r ends with a backslash (a continuation mark)" % (attr, text)
    return None


def _separators(value):
    """Positions of commas and spaces outside ``[...]``."""
    depth = 0
    cuts = []
    for i, ch in enumerate(value):
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif depth == 0 and ch in ", ":
            cuts.append(i)
    return cuts


def _wrap(value, room):
    """Cut a long value after top-level separators, as qconf prints it."""
    pieces = []
    rest = value
    while len(rest) > room:
        cuts = [c for c in _separators(rest) if c < len(rest) - 1]
        if not cuts:
            break
        fitting = [c for c in cuts if c < room]
        cut = fitting[-1] if fitting else cuts[0]
        piece = rest[:cut + 1].rstrip()
        tail = rest[cut + 1:].lstrip(" ")
        if not piece or not tail:
            break
        pieces.append(piece)
        rest = tail
    pieces.append(rest)
    return pieces


def render_object(obj, key_width=21, width=78):
    """Object file text for ``qconf -A*``/``-M*``: ``name value`` lines, long values continued
    with ``\\`` after a top-level separator (never inside ``[...]``)."""
    lines = []
    for key, value in obj.items():
        value = "NONE" if value in (None, "") else value
        head = key.ljust(key_width) + " "
        pieces = _wrap(value, max(width - len(head) - 2, 20))
        for n, piece in enumerate(pieces):
            prefix = head if n == 0 else " " * len(head)
            tail = " \\" if n < len(pieces) - 1 else ""
            lines.append(prefix + piece + tail)
    return "\n".join(lines) + "\n"


def render_text(obj, key_width=0):
    """Readable ``name value`` lines for diffs (no continuation)."""
    if not obj:
        return ""
    width = key_width or max(len(k) for k in obj)
    return "".join("%s %s\n" % (k.ljust(width), v) for k, v in obj.items())


# ---------------------------------------------------------------------------------------------
# an object module's attributes: what is given, what Grid Engine stored
# ---------------------------------------------------------------------------------------------

def wanted_attributes(attributes, known, name_key, whose, kind):
    """``{key: text}`` of the ``attributes`` given to an object module, in key order (texts as
    :func:`to_sge_value` writes them), or SgeAdminError naming the first bad one: ``name_key``
    (the object's own name, set with the option ``name``; ``whose`` owns it in the message), a key
    not in ``known`` (``kind`` says what attributes these are), a value no object file can hold."""
    wanted = {}
    for key in sorted(attributes):
        if key == name_key:
            raise SgeAdminError("attributes: %s is the %s name; set it with name" % (name_key, whose))
        if key not in known:
            raise SgeAdminError("attributes: %r is not a %s; known: %s" % (key, kind, ", ".join(known)))
        text = to_sge_value(key, attributes[key])
        msg = value_error("attributes.%s" % key, text)
        if msg:
            raise SgeAdminError(msg)
        wanted[key] = text
    return wanted


def warn_stored(module, label, what, given, stored):
    """Warns that Grid Engine stored ``what`` (an attribute or parameter of ``label``) as
    ``stored`` although it was given as ``given``: the next run would change it again."""
    module.warn("%s: %s was given as %r; Grid Engine stored %r. Give it as Grid Engine prints it, "
                "or every run changes it again." % (label, what, given, stored))


def stored_attributes(module, label, stored, wanted):
    """The attributes ``wanted`` as Grid Engine stored them, from the object ``stored`` read back
    after a change (None: it is gone, SgeAdminError); a warning for each stored otherwise than
    given (:func:`warn_stored`)."""
    if stored is None:
        raise SgeAdminError("%s: not found after qconf reported success" % label)
    for key, value in sorted(wanted.items()):
        if not same_value(key, stored.get(key, "NONE"), value):
            warn_stored(module, label, key, value, stored.get(key, "NONE"))
    return dict((k, stored.get(k, "NONE")) for k in wanted)


def delete_object(admin, label, option, name, current):
    """Deletes the object ``name`` with ``qconf <option> name`` when it exists (``current``, as
    read, is not None). Returns the text of what is deleted (for the diff), "" for nothing."""
    if current is None:
        return ""
    admin.change(label, "qconf", [option, name])
    return render_text(current)


# ---------------------------------------------------------------------------------------------
# built-in templates (Son of Grid Engine 8.1.9, captured from qconf -aq / -ae with an EDITOR
# that copies the file: tests/unit/fixtures/qconf/)
# ---------------------------------------------------------------------------------------------

QUEUE_TEMPLATE = (
    ("qname", "template"), ("hostlist", "NONE"), ("seq_no", "0"),
    ("load_thresholds", "np_load_avg=1.75"), ("suspend_thresholds", "NONE"),
    ("nsuspend", "1"), ("suspend_interval", "00:05:00"), ("priority", "0"),
    ("min_cpu_interval", "00:05:00"), ("processors", "UNDEFINED"),
    ("qtype", "BATCH INTERACTIVE"), ("ckpt_list", "NONE"), ("pe_list", "make smp mpi"),
    ("rerun", "FALSE"), ("slots", "1"), ("tmpdir", "/tmp"), ("shell", "/bin/sh"),
    ("prolog", "NONE"), ("epilog", "NONE"), ("shell_start_mode", "posix_compliant"),
    ("starter_method", "NONE"), ("suspend_method", "NONE"), ("resume_method", "NONE"),
    ("terminate_method", "NONE"), ("notify", "00:00:60"), ("owner_list", "NONE"),
    ("user_lists", "NONE"), ("xuser_lists", "NONE"), ("subordinate_list", "NONE"),
    ("complex_values", "NONE"), ("projects", "NONE"), ("xprojects", "NONE"),
    ("calendar", "NONE"), ("initial_state", "default"),
    ("s_rt", "INFINITY"), ("h_rt", "INFINITY"), ("s_cpu", "INFINITY"), ("h_cpu", "INFINITY"),
    ("s_fsize", "INFINITY"), ("h_fsize", "INFINITY"), ("s_data", "INFINITY"),
    ("h_data", "INFINITY"), ("s_stack", "INFINITY"), ("h_stack", "INFINITY"),
    ("s_core", "INFINITY"), ("h_core", "INFINITY"), ("s_rss", "INFINITY"),
    ("h_rss", "INFINITY"), ("s_vmem", "INFINITY"), ("h_vmem", "INFINITY"),
)
QUEUE_ATTRIBUTES = tuple(k for k, _v in QUEUE_TEMPLATE)

EXEC_HOST_TEMPLATE = (
    ("hostname", "template"), ("load_scaling", "NONE"), ("complex_values", "NONE"),
    ("user_lists", "NONE"), ("xuser_lists", "NONE"), ("projects", "NONE"),
    ("xprojects", "NONE"), ("usage_scaling", "NONE"), ("report_variables", "NONE"),
)
# what qconf -se prints besides these (load_values, processors, ...) is read-only
EXEC_HOST_ATTRIBUTES = tuple(k for k, _v in EXEC_HOST_TEMPLATE)


# ---------------------------------------------------------------------------------------------
# running commands
# ---------------------------------------------------------------------------------------------

_EMPTY_LIST = re.compile(r"\Ano [a-z ]+ defined\Z", re.I)
_MISSING = re.compile(r"does not exist|No cluster queue or queue instance matches|"
                      r"is not an execution host", re.I)
_UNRESOLVED = ("can't resolve hostname", "unable to resolve host")


def output_text(blob):
    """A command's output as text (``""`` for none; bytes decoded as UTF-8, bad bytes replaced)."""
    if blob is None:
        return ""
    if isinstance(blob, (bytes, bytearray)):
        return bytes(blob).decode("utf-8", "replace")
    return blob


def output_message(out, err):
    """A failed command's stderr and stdout lines joined with ``; `` for a message."""
    lines = [ln.strip() for ln in (output_text(err) + "\n" + output_text(out)).splitlines() if ln.strip()]
    return "; ".join(lines) if lines else "(no output)"


class CommandFailed(SgeAdminError):
    """A command exited non-zero; ``output`` holds its stderr and stdout lines."""

    def __init__(self, msg, rc, output):
        super(CommandFailed, self).__init__(msg)
        self.rc = rc
        self.output = output


class SgeAdmin(object):
    """Grid Engine client commands for one cell, run through one AnsibleModule."""

    def __init__(self, module, sge_root=None, sge_cell=None, qmaster_port=None):
        self.module = module
        self.root = sge_root or DEFAULT_SGE_ROOT
        self.cell = sge_cell or DEFAULT_SGE_CELL
        msg = sge_options_error(self.root, self.cell, qmaster_port)
        if msg:
            raise SgeAdminError(msg)
        settings = read_settings(self.root, self.cell)
        self.env = sge_environment(self.root, self.cell, qmaster_port, settings)
        self.arch = sge_arch(self.root, settings)
        self.commands = []
        self._bins = {}

    # -- plumbing -------------------------------------------------------------------------
    def binary(self, name):
        path = self._bins.get(name)
        if path is None:
            try:
                path = find_command(self.module, name, self.root, self.arch)
            except SgeCommandError as exc:
                raise SgeAdminError(str(exc))
            self._bins[name] = path
        return path

    def run(self, prog, args, raw=False):
        """Run ``prog args``; return ``(argv, rc, out, err)``. ``raw`` gives bytes."""
        argv = [self.binary(prog)] + list(args)
        kwargs = dict(environ_update=dict(self.env), check_rc=False, expand_user_and_vars=False)
        if raw:
            kwargs["encoding"] = None
        rc, out, err = self.module.run_command(argv, **kwargs)
        return argv, rc, out, err

    def read(self, label, prog, args, raw=False):
        """Run a read-only command; return its stdout, or raise naming ``label``."""
        argv, rc, out, err = self.run(prog, args, raw=raw)
        if rc != 0:
            raise CommandFailed("%s: %s failed (rc %s): %s"
                                % (label, describe(argv), rc, output_message(out, err)),
                                rc, output_message(out, err))
        if raw and not isinstance(out, bytes):
            out = output_text(out).encode("utf-8")
        return out if raw else output_text(out)

    def change(self, label, prog, args, resolve_timeout=None, shown=None):
        """Run a command that changes the cluster (in check mode: only record it).

        Returns its output text (``""`` in check mode). With ``resolve_timeout`` a failure
        "can't resolve hostname" is retried every few seconds until the timeout: the qmaster
        caches failed host lookups for about a minute.
        """
        self.commands.append(describe([prog] + list(shown if shown is not None else args)))
        if self.module.check_mode:
            return ""
        deadline = _clock() + (resolve_timeout or 0)
        while True:
            argv, rc, out, err = self.run(prog, args)
            if rc == 0:
                return output_message(out, err)
            text = output_message(out, err)
            remaining = deadline - _clock()
            if resolve_timeout and remaining > 0 and any(u in text for u in _UNRESOLVED):
                _sleep(min(RESOLVE_RETRY_INTERVAL, remaining))
                continue
            shown_argv = [argv[0]] + list(shown if shown is not None else args)
            raise CommandFailed("%s: %s failed (rc %s): %s"
                                % (label, describe(shown_argv), rc, text), rc, text)

    def change_with_text(self, label, option, text, file_name=None, resolve_timeout=None):
        """``qconf <option> FILE`` with ``text`` in a private temporary file: created exclusively
        (mode 0600) in a private directory (mode 0700), named ``file_name`` (``qconf -Aconf``/
        ``-Mconf`` take the configuration's name from the file's name) or ``object``, both removed
        afterwards. In check mode the command is only recorded, as ``FILE``."""
        if self.module.check_mode:
            return self.change(label, "qconf", [option, "FILE"])
        directory = tempfile.mkdtemp(prefix="gridengine-balancer-")
        try:
            os.chmod(directory, 0o700)
            path = os.path.join(directory, file_name or "object")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            return self.change(label, "qconf", [option, path], resolve_timeout=resolve_timeout,
                               shown=[option, "FILE"])
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def change_with_file(self, label, option, obj, resolve_timeout=None):
        """``qconf <option> FILE`` with ``obj`` rendered by :func:`render_object` (see
        :meth:`change_with_text`)."""
        return self.change_with_text(label, option, render_object(obj), resolve_timeout=resolve_timeout)

    # -- reading ----------------------------------------------------------------------------
    def show_list(self, label, option):
        """Names of ``qconf <option>``; Grid Engine's "no ... defined" answer gives []."""
        argv, rc, out, err = self.run("qconf", [option])
        if rc == 0:
            return parse_list(output_text(out))
        text = output_message(out, err)
        if _EMPTY_LIST.match(text):
            return []
        raise CommandFailed("%s: %s failed (rc %s): %s" % (label, describe(argv), rc, text),
                            rc, text)

    def show_object(self, label, option, name):
        """``qconf <option> <name>`` parsed, or None when the object does not exist."""
        argv, rc, out, err = self.run("qconf", [option, name])
        if rc == 0:
            return parse_object(output_text(out))
        text = output_message(out, err)
        if _MISSING.search(text):
            return None
        raise CommandFailed("%s: %s failed (rc %s): %s" % (label, describe(argv), rc, text),
                            rc, text)

    def queue_instances(self, label, queue):
        """``{host: state letters}`` of the instances of cluster queue ``queue``
        (``qstat -f -q QUEUE -xml``).

        qstat exits 1 without a word when the queue has no instance (``hostlist NONE``):
        that gives ``{}``.
        """
        argv, rc, out, err = self.run("qstat", ["-f", "-q", queue, "-xml"], raw=True)
        if rc != 0:
            if not output_text(out).strip() and not output_text(err).strip():
                return {}
            raise CommandFailed("%s: %s failed (rc %s): %s"
                                % (label, describe(argv), rc, output_message(out, err)),
                                rc, output_message(out, err))
        data = out if isinstance(out, bytes) else output_text(out).encode("utf-8")
        try:
            parsed = parse_qstat(data, strict_schema=False)
        except SgeParseError as exc:
            raise SgeAdminError("%s: %s" % (label, exc))
        return dict((q["host"], q["states"] or "") for q in parsed["queues"]
                    if q["queue"] == queue and q["host"])

    def execd_reporting(self, label, host):
        """True when the qmaster has load values of ``host`` (its execd reports), from
        ``qhost -h HOST -xml``."""
        data = self.read(label, "qhost", ["-h", host, "-xml"], raw=True)
        try:
            parsed = parse_qhost(data, strict_schema=False)
        except SgeParseError as exc:
            raise SgeAdminError("%s: %s" % (label, exc))
        for name, values in parsed["hosts"].items():
            if same_host(name, host):
                return values["load_avg"] is not None
        return False

    def jobs_on_host(self, label, host):
        """Numbers (sorted, once each) of the jobs with a task on ``host``, from
        ``qstat -u '*' -s rs -g t -xml``: every state but pending (running, transferring,
        suspended ``s``/``S``/``T``, restarted, being deleted), master or slave task (``-g t``
        lists each slave task with its queue instance; without it only the master queue is
        shown). qstat, not ``qhost -j``: it need not resolve the host's name. Raises
        SgeAdminError when qstat fails or its output cannot be read."""
        data = self.read(label, "qstat", ["-u", "*", "-s", "rs", "-g", "t", "-xml"], raw=True)
        try:
            parsed = parse_qstat(data, strict_schema=False)
        except SgeParseError as exc:
            raise SgeAdminError("%s: %s" % (label, exc))
        found = set()
        for job in parsed["running"]:
            hosts = list(job["hosts"])
            if job["host"]:
                hosts.append(job["host"])
            if any(same_host(name, host) for name in hosts):
                found.add(job["id"])
        return sorted(found)


# ---------------------------------------------------------------------------------------------
# the frame of a module that changes Grid Engine
# ---------------------------------------------------------------------------------------------

def run_admin(module, run, check=None):
    """The body of an admin module's ``main()``, after its AnsibleModule is built.

    ``check(params)`` validates the input before anything runs (raising SgeAdminError);
    ``run(module, admin)`` does the work with an :class:`SgeAdmin` for the module's
    ``sge_root`` / ``sge_cell`` / ``sge_qmaster_port`` and returns the result. The module exits
    with that result, or fails with the message of an SgeAdminError, ``commands`` (those run so
    far, the failing one last) and the error's ``fail_result``."""
    admin = None
    params = module.params
    try:
        if check is not None:
            check(params)
        admin = SgeAdmin(module, params["sge_root"], params["sge_cell"], params["sge_qmaster_port"])
        result = run(module, admin)
    except SgeAdminError as exc:
        module.fail_json(msg=str(exc), commands=admin.commands if admin else [], **(exc.fail_result or {}))
    module.exit_json(**result)
