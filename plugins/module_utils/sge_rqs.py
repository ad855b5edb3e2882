# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grid Engine resource quota sets (target side, standard library only).

* :func:`parse_rqs` reads ``qconf -srqs NAME`` output, :func:`render_rqs` writes the file
  ``qconf -Arqs FILE`` / ``-Mrqs FILE`` read (the same layout qconf prints: braces, three
  spaces, keys padded to 13 columns).
* :func:`slot_rule` is one ``projects P hosts {h} to slots=n`` rule.
* :func:`largest_remainder` turns percentages of a host's slots into integer slots that add up
  to the host's slots exactly (Hamilton's method).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re

_RULE_RE = re.compile(r"\Aprojects\s+\{?([^}\s]+)\}?\s+hosts\s+\{([^}\s]+)\}\s+to\s+"
                      r"slots\s*=\s*(\d+)\Z")
KEY_WIDTH = 13
MISSING = ("No resource quota set found", "does not exist")


class RqsError(ValueError):
    """Bad input or unreadable rule set; the message names it."""


def slot_rule(project, host, slots):
    return "projects %s hosts {%s} to slots=%d" % (project, host, int(slots))


def parse_rule(rule):
    """``(project, host, slots)`` of a rule this module writes, else None."""
    match = _RULE_RE.match(rule.strip())
    if not match:
        return None
    return match.group(1), match.group(2), int(match.group(3))


def parse_rqs(text):
    """``qconf -srqs NAME`` output -> ``{name, description, enabled, limits: [rule text]}``.

    Only the first rule set is read (``-srqs NAME`` prints one); raises RqsError when the text
    has none.
    """
    obj = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line == "{":
            if obj is not None:
                break
            obj = {"limits": []}
            continue
        if line == "}":
            if obj is not None:
                break
            continue
        if obj is None:
            continue
        fields = line.split(None, 1)
        key, value = fields[0], (fields[1].strip() if len(fields) > 1 else "")
        if key == "limit":
            obj["limits"].append(" ".join(value.split()))
        else:
            obj[key] = value
    if obj is None or "name" not in obj:
        raise RqsError("no resource quota set in qconf output: %r" % text[:200])
    obj.setdefault("description", "NONE")
    obj["enabled"] = obj.get("enabled", "TRUE").upper() == "TRUE"
    return obj


def _quote(description):
    if not description or description == "NONE":
        return "NONE"
    if any(ch.isspace() for ch in description):
        return '"%s"' % description
    return description


def render_rqs(name, description, enabled, limits):
    """Rule set file text for ``qconf -Arqs``/``-Mrqs``."""
    lines = ["{",
             "   %s%s" % ("name".ljust(KEY_WIDTH), name),
             "   %s%s" % ("description".ljust(KEY_WIDTH), _quote(description)),
             "   %s%s" % ("enabled".ljust(KEY_WIDTH), "TRUE" if enabled else "FALSE")]
    for rule in limits:
        lines.append("   %s%s" % ("limit".ljust(KEY_WIDTH), rule))
    lines.append("}")
    return "\n".join(lines) + "\n"


def normal_description(description):
    text = (description or "").strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text or "NONE"


def largest_remainder(percent, slots):
    """Integer slots per key from percentages of ``slots`` (a dict key -> percent >= 0).

    Every key gets ``floor(p x slots / sum p)``; the slots left go one each to the largest
    remainders (ties: the key given first). The result adds up to ``slots`` exactly; with all
    percentages 0 every key gets 0.
    """
    slots = int(slots)
    if slots < 0:
        raise RqsError("slots must be >= 0, got %d" % slots)
    keys = list(percent)
    values = []
    for key in keys:
        value = float(percent[key])
        if not math.isfinite(value) or value < 0:
            raise RqsError("percent for %r must be finite and >= 0, got %r" % (key, value))
        values.append(value)
    total = sum(values)
    if total <= 0:
        return dict((k, 0) for k in keys)
    quotas = [v * slots / total for v in values]
    result = [int(math.floor(q)) for q in quotas]
    left = slots - sum(result)
    order = sorted(range(len(keys)), key=lambda i: (-(quotas[i] - result[i]), i))
    for i in order[:left]:
        result[i] += 1
    return dict(zip(keys, result))
