# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Constants and small helpers the parts of the elastic policy share (policy/elastic.py).

The public names are re-exported by :mod:`policy.elastic`, where callers import them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

SCHEMA = 1
PROFILES = ("default", "starcluster", "parallelcluster")
BILLING = ("per_second", "hourly")
STARCLUSTER_QUEUE = "all.q"
#: StarCluster documents a minimum stabilization time of 300 s; lower values only warn.
MIN_STABILIZATION_TIME = 300
#: StarCluster's documented maximum polling interval.
MAX_INTERVAL = 300
#: How many ignored jobs a reason names before it says "and N more".
REASON_LIST_LIMIT = 5

_MEMORY_REQUESTS = ("mem_free", "mf", "virtual_free", "vf", "mem_total", "mt")
_HOST_REQUESTS = ("hostname", "h")
_ARCH_REQUESTS = ("arch", "a")
_WILDCARDS = re.compile(r"[*?\[]")
_MEMORY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([kKmMgGtT]?)\s*$")
_MEMORY_FACTORS = {"": 1, "k": 1000, "K": 1024, "m": 1000 ** 2, "M": 1024 ** 2,
                   "g": 1000 ** 3, "G": 1024 ** 3, "t": 1000 ** 4, "T": 1024 ** 4}


def _is_number(value):
    kind = type(value)  # fast paths: the trace simulator calls this millions of times
    if kind is float:
        return math.isfinite(value)
    if kind is int:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def fmt_duration(seconds):
    """``965`` -> ``16m05s``, ``900`` -> ``15m``, ``45`` -> ``45s``, ``3720`` -> ``1h02m``."""
    if seconds is None:
        return "?"
    total = int(max(0, seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm" % (hours, minutes) + ("%02ds" % secs if secs else "")
    if minutes:
        return "%dm" % minutes + ("%02ds" % secs if secs else "")
    return "%ds" % secs


def _plural(count, word, plural=None):
    return "%s %s" % (count, word if count == 1 else (plural or word + "s"))


def _cmp(value, limit):
    return ">" if value > limit else (">=" if value >= limit else "<")


def _num(value, default=None):
    kind = type(value)  # fast paths (see _is_number)
    if kind is float:
        return value if math.isfinite(value) else default
    if kind is int:
        return value
    if value is None:
        return default
    return value if _is_number(value) else default


def _is_mapping(value):
    return isinstance(value, Mapping)


def _parse_memory(value):
    """Grid Engine memory specifier (``2G``, ``512M``, ``1.5g``, bytes) -> bytes, or None."""
    if _is_number(value):
        return float(value)
    if not isinstance(value, str):
        return None
    match = _MEMORY_RE.match(value)
    if not match:
        return None
    return float(match.group(1)) * _MEMORY_FACTORS[match.group(2)]


def _fmt_bytes(value):
    return "%.1f GiB" % (value / 1024.0 ** 3)


def _job_label(job):
    return "job %s" % job.get("id")


def _list_limited(texts):
    texts = list(texts)
    if len(texts) <= REASON_LIST_LIMIT:
        return "; ".join(texts)
    return "; ".join(texts[:REASON_LIST_LIMIT]) + "; and %d more" % (len(texts) - REASON_LIST_LIMIT)
