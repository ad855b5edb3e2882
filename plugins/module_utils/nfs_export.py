# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS exports of the master's shares to single hosts: validate, parse, change and render them.

Target side, standard library only (the nodes' and masters' ``/usr/bin/python3``, 3.11.2). Two
server kinds:

``kernel``   ``/etc/exports`` (exports(5)): one logical line ``PATH [-DEFAULTS] CLIENT(OPTS) ...``.
             Lines the module does not touch keep their text (comments, continuation lines,
             other clients); a line it changes is rendered again as ``PATH CLIENT(OPTS) ...``.
             ``exportfs -v`` output is read back to check what the kernel exports.
``ganesha``  a file of nfs-ganesha ``EXPORT`` blocks that only this module writes (the master's
             ``ganesha.conf`` ``%include``s it): one block per share, one ``CLIENT`` block per
             host address inside, the export itself ``Access_Type = None`` so that a host
             without a ``CLIENT`` block gets nothing.

Every value that reaches a file is checked first (:func:`check_path`, :func:`check_address`,
:func:`check_kernel_options`): one host address per client (no name, wildcard, network or
option), absolute normalised paths without blanks, quotes, braces, brackets, ``#``, ``;``,
``,``, ``=``, ``\\`` or control characters, so no value can add a client, a line, a block or an
option. Nothing here writes a file or runs a command: the module does (atomically).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress
import re

MARKER = "# Written by gridengine.balancer.nfs_export: one EXPORT block per share, one CLIENT block per host."
KERNEL_DEFAULT_OPTIONS = "rw,sync,root_squash,no_subtree_check"
SQUASH_CHOICES = ("root_squash", "no_root_squash", "all_squash")
ACCESS_CHOICES = ("RW", "RO")
FIRST_EXPORT_ID = 2000
MAX_EXPORT_ID = 65535

_PATH_RE = re.compile(r'/[^\s"\'{}()\[\];#,=\\*?<>|`$!&]*\Z')
_OPTIONS_RE = re.compile(r'[A-Za-z0-9_=:.-]+(,[A-Za-z0-9_=:.-]+)*\Z')


class NfsExportError(ValueError):
    """A value or a file the module refuses; the message names it."""


def check_path(path, name="path"):
    """Return ``path`` when it is an absolute, normalised path that is safe in both file kinds."""
    if not isinstance(path, str) or not _PATH_RE.match(path) or any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise NfsExportError(
            "%s=%r must be an absolute path without blanks, quotes, braces, brackets, parentheses or any of "
            "; # , = \\ * ? < > | ` $ ! & or control characters" % (name, path))
    parts = path.split("/")[1:]
    if len(path) > 1 and (path.endswith("/") or any(p in ("", ".", "..") for p in parts)):
        raise NfsExportError("%s=%r must be a normalised path (no //, /./, /../ or trailing /)" % (name, path))
    if len(path) > 1024:
        raise NfsExportError("%s=%r is longer than 1024 characters" % (name, path[:40] + "..."))
    return path


def check_address(value, name="clients"):
    """Return the canonical text of ``value`` when it is one host's IPv4 or IPv6 address.

    Refused: names, wildcards, networks (``/``), ranges, zones (``%``), the unspecified,
    multicast and broadcast addresses. Loopback is accepted (a server's own tests); the roles
    refuse it earlier (the ``host_address`` filter).
    """
    if not isinstance(value, str) or not re.match(r'[0-9A-Fa-f.:]+\Z', value):
        raise NfsExportError("%s: %r is not one host's IP address (no name, wildcard, network, zone or option)"
                             % (name, value))
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        raise NfsExportError("%s: %r is not one host's IP address" % (name, value))
    if addr.is_unspecified or addr.is_multicast or (addr.version == 4 and addr == ipaddress.IPv4Address("255.255.255.255")):
        raise NfsExportError("%s: %r is not one host's address (unspecified, multicast or broadcast)" % (name, value))
    if addr.version == 6 and addr.ipv4_mapped is not None:
        raise NfsExportError("%s: %r is an IPv4-mapped IPv6 address: give the IPv4 address" % (name, value))
    return str(addr)


def check_kernel_options(options, name="options"):
    """exports(5) option words, comma separated: no blank, parenthesis, slash or line break."""
    if not isinstance(options, str) or not _OPTIONS_RE.match(options):
        raise NfsExportError("%s=%r must be exports(5) option words separated by commas "
                             "(letters, digits, _ = : . -)" % (name, options))
    return options


def _same_host(token, address):
    """Does the client token (``HOST`` of ``HOST(OPTS)``) name ``address``?"""
    try:
        return str(ipaddress.ip_address(token)) == address
    except ValueError:
        return False


# ------------------------------------------------------------------------------------------ kernel

def _split_exports_words(text):
    """exports(5) words of one logical line: ``"quoted path"`` stays one word; ``#`` starts a comment."""
    words = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "#":
            break
        j = i
        while j < n and not text[j].isspace():
            if text[j] == '"':
                k = text.find('"', j + 1)
                j = n if k < 0 else k + 1
            else:
                j += 1
        words.append(text[i:j])
        i = j
    return words


def parse_exports(text):
    """Logical lines of an exports(5) file.

    A list of dicts: ``{'raw': [physical lines], 'path': str or None, 'defaults': [words],
    'clients': [[host, options or None], ...]}``; ``path`` is None for blank, comment and
    unreadable lines, which are kept as they are.
    """
    entries = []
    physical = text.split("\n")
    if physical and physical[-1] == "":
        physical.pop()
    i = 0
    while i < len(physical):
        raw = [physical[i]]
        while raw[-1].endswith("\\") and i + 1 < len(physical):
            i += 1
            raw.append(physical[i])
        i += 1
        logical = " ".join(line[:-1] if line.endswith("\\") else line for line in raw)
        words = _split_exports_words(logical)
        entry = {"raw": raw, "path": None, "defaults": [], "clients": []}
        if words and (words[0].startswith("/") or words[0].startswith('"/')):
            entry["path"] = words[0].strip('"')
            for word in words[1:]:
                if word.startswith("-") and not entry["clients"]:
                    entry["defaults"].append(word)
                    continue
                m = re.match(r'([^()]*)(?:\(([^()]*)\))?\Z', word)
                if not m:
                    entry["path"] = None      # not understood: kept as it is, never rewritten
                    entry["clients"] = []
                    break
                entry["clients"].append([m.group(1), m.group(2)])
        entries.append(entry)
    return entries


def _render_exports_entry(entry):
    words = [entry["path"]] + entry["defaults"]
    words += ["%s(%s)" % (host, opts) if opts is not None else host for host, opts in entry["clients"]]
    return [" ".join(words)]


def render_exports(entries):
    lines = []
    for entry in entries:
        if entry.get("dirty"):
            if entry["clients"]:          # a path left without a client would be exported to everyone
                lines.extend(_render_exports_entry(entry))
        else:
            lines.extend(entry["raw"])
    return "".join(line + "\n" for line in lines)


def kernel_exports_of(entries):
    """``{(path, address): options}`` of the clients that are host addresses."""
    found = {}
    for entry in entries:
        if entry["path"] is None:
            continue
        for host, opts in entry["clients"]:
            try:
                address = str(ipaddress.ip_address(host))
            except ValueError:
                continue
            found.setdefault((entry["path"], address), opts)
    return found


def apply_kernel(text, paths, clients, options, state):
    """The new text of ``/etc/exports`` and the list of changes (``'+ PATH ADDRESS(OPTS)'``, ...).

    present: every path exported to every client with exactly ``options`` (an entry with other
    options is changed in place, a second entry for the same path and client is removed).
    absent: no entry of any path for any client; a line left without a client is removed.
    """
    entries = parse_exports(text)
    changes = []
    for path in paths:
        for address in clients:
            seen = False
            for entry in entries:
                if entry["path"] != path:
                    continue
                kept = []
                for host, opts in entry["clients"]:
                    if not _same_host(host, address):
                        kept.append([host, opts])
                    elif state == "present" and not seen:
                        seen = True
                        if opts != options or host != address:
                            changes.append("~ %s %s(%s) -> (%s)" % (path, host, opts, options))
                            entry["dirty"] = True
                        kept.append([address, options])
                    else:
                        changes.append("- %s %s(%s)" % (path, host, opts))
                        entry["dirty"] = True
                entry["clients"] = kept
            if state == "present" and not seen:
                entries.append({"raw": [], "path": path, "defaults": [], "clients": [[address, options]], "dirty": True})
                changes.append("+ %s %s(%s)" % (path, address, options))
    return render_exports(entries), changes


def parse_exportfs_v(output):
    """``{(path, address): options}`` from ``exportfs -v`` (a long path is alone on its line, its
    clients on the next; paths escape blanks as ``\\040``)."""
    found = {}
    path = None
    for word in output.split():
        if word.startswith("/") and "(" not in word:
            path = word.replace("\\040", " ")
            continue
        m = re.match(r'([^()]+)\(([^()]*)\)\Z', word)
        if path is None or not m:
            continue
        try:
            address = str(ipaddress.ip_address(m.group(1)))
        except ValueError:
            continue
        found[(path, address)] = m.group(2)
    return found


# ----------------------------------------------------------------------------------------- ganesha

_TOKEN_RE = re.compile(r'\s+|#[^\n]*|"[^"\n]*"|[{};=]|[^\s{};="#]+')


def _tokens(text, source):
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise NfsExportError("%s: cannot read the text at offset %d" % (source, pos))
        tok = m.group(0)
        pos = m.end()
        if tok.isspace() or tok.startswith("#"):
            continue
        out.append(tok)
    return out


def _parse_block(tokens, i, source, depth=0):
    """``[(key, value)]`` with a block as ``(name, [...])``; returns (items, next index)."""
    items = []
    while i < len(tokens):
        tok = tokens[i]
        if tok == "}":
            if depth == 0:
                raise NfsExportError("%s: unbalanced '}'" % source)
            return items, i + 1
        if i + 1 < len(tokens) and tokens[i + 1] == "{":
            sub, i = _parse_block(tokens, i + 2, source, depth + 1)
            items.append((tok, sub))
            continue
        if i + 1 < len(tokens) and tokens[i + 1] == "=":
            j = i + 2
            value = []
            while j < len(tokens) and tokens[j] != ";":
                if tokens[j] in ("{", "}", "="):
                    raise NfsExportError("%s: %s has no ';' after its value" % (source, tok))
                value.append(tokens[j].strip('"'))
                j += 1
            if j >= len(tokens):
                raise NfsExportError("%s: %s has no ';' after its value" % (source, tok))
            items.append((tok, " ".join(value)))
            i = j + 1
            continue
        raise NfsExportError("%s: unexpected %r" % (source, tok))
    if depth:
        raise NfsExportError("%s: a block is not closed" % source)
    return items, i


def _get(items, key, source, block):
    values = [v for k, v in items if k.lower() == key.lower() and isinstance(v, str)]
    if len(values) != 1:
        raise NfsExportError("%s: an %s block needs exactly one %s" % (source, block, key))
    return values[0]


_EXPORT_KEYS = {"export_id", "path", "pseudo", "protocols", "transports", "access_type", "squash", "sectype",
                "privilegedport", "fsal", "client"}
_CLIENT_KEYS = {"clients", "access_type", "squash"}


def parse_ganesha(text, source="the ganesha export file"):
    """The exports of a file this module wrote: ``{path: {'id', 'pseudo', 'protocols',
    'privileged_port', 'clients': {address: {'access', 'squash'}}}}`` in file order.

    Anything else (another block, an unknown key, a client that is not one address) raises
    :class:`NfsExportError`: the file is refused, never rewritten.
    """
    items, dummy = _parse_block(_tokens(text, source), 0, source)
    exports = {}
    for name, block in items:
        if name.upper() != "EXPORT" or isinstance(block, str):
            raise NfsExportError("%s: %r is not an EXPORT block; the file holds only what "
                                 "gridengine.balancer.nfs_export writes" % (source, name))
        unknown = sorted({k.lower() for k, dummy in block} - _EXPORT_KEYS)
        if unknown:
            raise NfsExportError("%s: unknown EXPORT settings %s" % (source, ", ".join(unknown)))
        path = check_path(_get(block, "Path", source, "EXPORT"), "%s: Path" % source)
        if path in exports:
            raise NfsExportError("%s: two EXPORT blocks for %s" % (source, path))
        try:
            export_id = int(_get(block, "Export_Id", source, "EXPORT"))
        except ValueError:
            raise NfsExportError("%s: the Export_Id of %s is not a number" % (source, path))
        protocols = [p.strip() for p in _get(block, "Protocols", source, "EXPORT").replace(",", " ").split()]
        if not protocols or any(p not in ("3", "4") for p in protocols):
            raise NfsExportError("%s: the Protocols of %s are not 3 and/or 4" % (source, path))
        clients = {}
        for key, sub in block:
            if key.lower() != "client":
                continue
            if isinstance(sub, str) or sorted({k.lower() for k, dummy in sub} - _CLIENT_KEYS):
                raise NfsExportError("%s: a CLIENT block of %s holds other settings than Clients, "
                                     "Access_Type and Squash" % (source, path))
            address = check_address(_get(sub, "Clients", source, "CLIENT"), "%s: Clients of %s" % (source, path))
            access = _get(sub, "Access_Type", source, "CLIENT").upper()
            squash = _get(sub, "Squash", source, "CLIENT").lower()
            if access not in ACCESS_CHOICES or squash not in SQUASH_CHOICES:
                raise NfsExportError("%s: the CLIENT %s of %s has Access_Type %s and Squash %s"
                                     % (source, address, path, access, squash))
            clients[address] = {"access": access, "squash": squash}
        exports[path] = {
            "id": export_id,
            "pseudo": check_path(_get(block, "Pseudo", source, "EXPORT"), "%s: Pseudo" % source),
            "protocols": ",".join(sorted(set(protocols))),
            "privileged_port": _get(block, "PrivilegedPort", source, "EXPORT").lower() in ("true", "yes", "1"),
            "clients": clients,
        }
    return exports


def render_ganesha(exports):
    """The file for ``exports`` (the shape :func:`parse_ganesha` returns); an export without a
    client is left out (its block would give nothing to anybody)."""
    out = [MARKER, "# Do not edit: the next run of the module rewrites it.", ""]
    for path, exp in exports.items():
        if not exp["clients"]:
            continue
        out += [
            "EXPORT {",
            "    Export_Id = %d;" % exp["id"],
            '    Path = "%s";' % path,
            '    Pseudo = "%s";' % exp["pseudo"],
            "    Protocols = %s;" % exp["protocols"].replace(",", ", "),
            "    Transports = TCP;",
            "    # nobody but the hosts of the CLIENT blocks below",
            "    Access_Type = None;",
            "    Squash = root_squash;",
            "    SecType = sys;",
            "    PrivilegedPort = %s;" % ("true" if exp["privileged_port"] else "false"),
            "    FSAL {",
            "        Name = VFS;",
            "    }",
        ]
        for address, client in exp["clients"].items():
            out += [
                "    CLIENT {",
                "        Clients = %s;" % address,
                "        Access_Type = %s;" % client["access"],
                "        Squash = %s;" % client["squash"],
                "    }",
            ]
        out += ["}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def used_export_ids(text):
    """Export_Id values of another ganesha file (the main configuration), to avoid them."""
    return {int(m) for m in re.findall(r'(?im)^[^#\n]*\bExport_Id\s*=\s*"?([0-9]+)', text or "")}


def apply_ganesha(text, paths, clients, state, access="RW", squash="root_squash", protocols="4",
                  privileged_port=True, avoid_ids=(), source="the ganesha export file"):
    """The new text of the export file and the list of changes.

    present: an EXPORT block per path (``Pseudo`` = the path, a new ``Export_Id`` from
    :data:`FIRST_EXPORT_ID` not used in the file or ``avoid_ids``), the block's protocols and
    privileged-port setting as given, a CLIENT block per client with ``access`` and ``squash``.
    absent: the clients' CLIENT blocks removed; a block left without a client is removed.
    """
    exports = parse_ganesha(text, source) if text.strip() else {}
    changes = []
    used = set(avoid_ids) | {e["id"] for e in exports.values()}
    for path in paths:
        exp = exports.get(path)
        if state == "present":
            if exp is None:
                new_id = FIRST_EXPORT_ID
                while new_id in used:
                    new_id += 1
                if new_id > MAX_EXPORT_ID:
                    raise NfsExportError("no free Export_Id left for %s" % path)
                used.add(new_id)
                exp = exports[path] = {"id": new_id, "pseudo": path, "protocols": protocols,
                                       "privileged_port": privileged_port, "clients": {}}
                changes.append("+ EXPORT %s (Export_Id %d)" % (path, new_id))
            if exp["protocols"] != protocols or exp["privileged_port"] != privileged_port:
                changes.append("~ EXPORT %s Protocols %s PrivilegedPort %s" % (path, protocols, privileged_port))
                exp["protocols"], exp["privileged_port"] = protocols, privileged_port
            for address in clients:
                want = {"access": access, "squash": squash}
                if exp["clients"].get(address) != want:
                    sign = "~" if address in exp["clients"] else "+"
                    changes.append("%s %s CLIENT %s %s %s" % (sign, path, address, access, squash))
                    exp["clients"][address] = want
        elif exp is not None:
            for address in clients:
                if address in exp["clients"]:
                    del exp["clients"][address]
                    changes.append("- %s CLIENT %s" % (path, address))
            if not exp["clients"]:
                changes.append("- EXPORT %s (no client left)" % path)
                del exports[path]
    return (render_ganesha(exports) if (exports or text.strip()) else text), changes


def include_line(config):
    return '%%include "%s"' % config


def apply_include(text, config):
    """The main configuration with a ``%include`` of ``config`` (appended when missing)."""
    for line in text.splitlines():
        m = re.match(r'\s*%include\s+"?([^"\s]+)"?\s*\Z', line)
        if m and m.group(1) == config:
            return text, []
    sep = "" if not text or text.endswith("\n") else "\n"
    return text + sep + include_line(config) + "\n", ["+ %s" % include_line(config)]
