# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters about cluster nodes: their names and their addresses.

- ``next_node_names``: the names of the next nodes, numbered from the highest existing number + 1
  (StarCluster: "Name it with the highest Node # available: if node001, node003 and node005 are
  started, the next node will be node006"), passing over the names in ``avoid`` (the balancer
  gives those of nodes removed recently: ``elastic_plan``'s ``plan.recently_removed``).
- ``node_index``: the number in a node name (``node005`` -> 5), for address schemes.
- ``host_address``: the address itself when it is one valid IPv4/IPv6 host address, else an
  error, so that nothing such as ``*``, ``10.0.0.0/8`` or ``a(rw) *`` ever reaches a file like
  ``/etc/exports``.

The documentation of each filter is in the ``<filter name>.yml`` file beside this one.
"""

from __future__ import annotations

import ipaddress
import re

from ansible.errors import AnsibleFilterError

try:
    from ansible.errors import AnsibleTypeError
except ImportError:  # pragma: no cover - older ansible-core
    from ansible.errors import AnsibleFilterTypeError as AnsibleTypeError

DEFAULT_FORMAT = "node%03d"

# one printf integer conversion: flags, width, d/i/u; "%%" is a literal percent sign
_CONVERSION = re.compile(r"%(?P<spec>[-+ 0#]*[0-9]*)(?P<type>[diu])")
_ANY_CONVERSION = re.compile(r"%[-+ 0#]*[0-9]*(?:\.[0-9]+)?[a-zA-Z%]")


def _is_text(value):
    return isinstance(value, str)


def _check_format(fmt, option="format"):
    """Return ``fmt`` when it has exactly one integer conversion (and maybe ``%%``)."""
    if not _is_text(fmt) or not fmt:
        raise AnsibleFilterError("%s must be a non-empty string such as 'node%%03d', got %r" % (option, fmt))
    conversions = [m.group(0) for m in _ANY_CONVERSION.finditer(fmt) if m.group(0) != "%%"]
    stray = _ANY_CONVERSION.sub("", fmt)
    if len(conversions) != 1 or not _CONVERSION.fullmatch(conversions[0]) or "%" in stray:
        raise AnsibleFilterError(
            "%s must contain exactly one integer conversion (%%d, %%03d, %%i, %%u) and no other "
            "%% sign except %%%%, got %r" % (option, fmt))
    if "-" in _CONVERSION.search(fmt).group("spec"):
        raise AnsibleFilterError("%s: a left-aligned conversion (%%-...) pads names with spaces: %r"
                                 % (option, fmt))
    return fmt


def _pattern(fmt):
    """Regular expression matching what ``fmt`` can produce for numbers >= 0."""
    out = []
    pos = 0
    for match in re.finditer(r"%%|" + _CONVERSION.pattern, fmt):
        out.append(re.escape(fmt[pos:match.start()]))
        out.append("%" if match.group(0) == "%%" else r"(?P<number>[+ ]?[0-9]+)")
        pos = match.end()
    out.append(re.escape(fmt[pos:]))
    return re.compile("".join(out))


def _number(name, fmt, regex):
    """The number ``name`` was made from with ``fmt``, or None when it was not made so."""
    if not _is_text(name):
        return None
    match = regex.fullmatch(name)
    if not match:
        return None
    number = int(match.group("number"))
    # exactly what the format gives for that number (node01 is not node%03d, node0005 neither)
    if number < 0 or fmt % number != name:
        return None
    return number


def _names(existing, what="the input"):
    if existing is None:
        return []
    if _is_text(existing):
        raise AnsibleTypeError(
            "next_node_names: %s must be a list of node names, got the string %r "
            "(wrap a single name in a list)" % (what, existing))
    if isinstance(existing, dict):
        return list(existing)
    try:
        return list(existing)
    except TypeError:
        raise AnsibleTypeError("next_node_names: %s must be a list of node names, got %s"
                               % (what, type(existing).__name__))


def _count(count, option="count"):
    if isinstance(count, bool):
        raise AnsibleTypeError("%s must be a whole number >= 0, got %r" % (option, count))
    if isinstance(count, int):
        value = count
    elif _is_text(count) and count.strip().isdigit():
        value = int(count.strip())
    else:
        raise AnsibleTypeError("%s must be a whole number >= 0, got %r" % (option, count))
    if value < 0:
        raise AnsibleFilterError("%s must be a whole number >= 0, got %d" % (option, value))
    return value


def next_node_names(existing, count=1, format=DEFAULT_FORMAT, start=1, avoid=None):  # pylint: disable=redefined-builtin
    """Names for ``count`` new nodes, numbered from the highest existing number + 1.

    ``existing`` is a list of names (host names, inventory names); names that ``format`` does not
    produce exactly (other hosts such as the master, ``node01`` for ``node%03d``) are ignored.
    Without any matching name the numbering begins at ``start``.  Numbers whose name is in
    ``avoid`` (names of nodes removed recently) are passed over; ``avoid`` does not move the start.
    """
    fmt = _check_format(format)
    wanted = _count(count)
    first = _count(start, "start")
    regex = _pattern(fmt)
    numbers = [n for n in (_number(name, fmt, regex) for name in _names(existing)) if n is not None]
    skip = set(n for n in (_number(name, fmt, regex) for name in _names(avoid, "avoid")) if n is not None)
    nxt = max(numbers) + 1 if numbers else first
    out = []
    while len(out) < wanted:
        if nxt not in skip:
            out.append(fmt % nxt)
        nxt += 1
    return out


def node_index(name, format=DEFAULT_FORMAT):  # pylint: disable=redefined-builtin
    """The number of node ``name`` under ``format`` (``node005`` -> 5); an error when it has none."""
    fmt = _check_format(format)
    number = _number(name, fmt, _pattern(fmt))
    if number is None:
        raise AnsibleFilterError("node_index: %r is not a node name of the format %r" % (name, fmt))
    return number


def host_address(value):
    """``value`` (canonical form) when it is one IPv4 or IPv6 host address; an error otherwise.

    Refused: anything but a plain address (names, ``*``, networks ``a/n``, ranges, spaces,
    options), the unspecified address, loopback, multicast, the IPv4 broadcast address
    255.255.255.255 and IPv6 addresses with a zone (``%eth0``).
    """
    if not _is_text(value):
        raise AnsibleTypeError("host_address: expected an IP address as a string, got %s %r"
                               % (type(value).__name__, value))
    text = value.strip()
    if text != value or not text:
        raise AnsibleFilterError("host_address: %r is not a host address (empty or surrounded by spaces)"
                                 % value)
    if "%" in text:
        raise AnsibleFilterError("host_address: %r has an IPv6 zone; give the address alone" % value)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise AnsibleFilterError("host_address: %r is not a single IPv4 or IPv6 address" % value)
    problem = None
    if address.is_unspecified:
        problem = "the unspecified address"
    elif address.is_loopback:
        problem = "a loopback address"
    elif address.is_multicast:
        problem = "a multicast address"
    elif address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255"):
        problem = "the broadcast address"
    if problem:
        raise AnsibleFilterError("host_address: %r is %s, not the address of a host" % (value, problem))
    return str(address)


class FilterModule(object):
    """Node name and address filters of gridengine.balancer."""

    def filters(self):
        return {
            "next_node_names": next_node_names,
            "node_index": node_index,
            "host_address": host_address,
        }
