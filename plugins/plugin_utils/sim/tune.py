# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tune the balancer on a site's own history: replay it under candidate options, pick the cheapest.

A *candidate* is a set of ``decide`` options (``profile`` and any of the profile's options, e.g.
``idle_time``, ``job_wait_time``, ``add_nodes_per_iter``, ``interval``); :func:`grid` builds the
candidates of every combination of the values given.  :func:`sweep` replays the jobs under each
with the simulator engine (:func:`engine.simulate`, the same ``decide`` the playbook runs, on top
of the engine's own settings for the profile: :func:`engine.policy_config`), and
:func:`recommend` picks the cheapest (cost under the billing mode, node-hours when they tie) whose
wait meets the target (``p95`` or ``mean`` wait, seconds), or, when none does, says so and names
the closest (the lowest wait).  Pure: no clock, no I/O, no Ansible import.
"""

from __future__ import annotations

import itertools

from . import engine

#: What a candidate may set besides the profile (``decide`` options that shape the policy).
TUNABLE = ("idle_time", "job_wait_time", "add_nodes_per_iter", "interval", "stabilization_time", "kill_after",
           "boot_timeout")
TARGETS = ("p95", "mean")


def _value(name, text, cap):
    text = text.strip()
    if name == "profile":
        if text not in engine.DECIDE_POLICIES:
            raise ValueError("profile: %r is not one of %s" % (text, ", ".join(engine.DECIDE_POLICIES)))
        return text
    if name == "add_nodes_per_iter" and text == "cap":
        return cap
    try:
        number = float(text)
    except ValueError:
        raise ValueError("%s: %r is not a number" % (name, text))
    return int(number) if number == int(number) else number


def grid(specs, cap):
    """Candidates (a list of dicts) from ``["name=v1,v2", ...]``; ``add_nodes_per_iter=cap`` means the cap.

    Every combination of the values is one candidate; ``profile`` defaults to ``default``.
    Raises ``ValueError`` naming the bad spec.
    """
    axes = []
    seen = set()
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not values.strip():
            raise ValueError("grid: %r is not name=value[,value...]" % spec)
        if name != "profile" and name not in TUNABLE:
            raise ValueError("grid: %r is not an option tune varies (profile, %s)" % (name, ", ".join(TUNABLE)))
        if name in seen:
            raise ValueError("grid: %s is given twice" % name)
        seen.add(name)
        vals = [_value(name, v, cap) for v in values.split(",") if v.strip()]
        axes.append((name, list(dict.fromkeys(vals))))
    out = []
    for combo in itertools.product(*[vals for _n, vals in axes]):
        cand = dict(zip([n for n, _v in axes], combo))
        cand.setdefault("profile", "default")
        out.append(cand)
    return out


def label(candidate):
    """``default idle_time=120 interval=30``: the profile, then the options set, sorted."""
    rest = " ".join("%s=%s" % (k, candidate[k]) for k in sorted(candidate) if k not in ("profile", "baseline"))
    name = candidate.get("profile", "default")
    if candidate.get("baseline"):
        name += " (as simulated)"
    return (name + " " + rest).strip()


def run(jobs, candidate, cap, slots_per_node, billing="per_second", boot_delay=120.0):
    """Replay ``jobs`` under one candidate; the figures of :func:`engine.summarize` plus ``cost``."""
    profile = candidate.get("profile", "default")
    overrides = {k: v for k, v in candidate.items() if k not in ("profile", "baseline")}
    config = engine.policy_config(profile, cap, slots_per_node, billing, overrides=overrides)
    res = engine.simulate(jobs, profile, cap, slots_per_node, boot_delay=boot_delay, billing=billing,
                          config=config, timeline=False)
    fig = engine.summarize(res)
    fig["cost"] = fig["cost_per_second"] if billing == "per_second" else fig["cost_hourly"]
    fig["candidate"] = dict(candidate)
    fig["label"] = label(candidate)
    return fig


def sweep(jobs, candidates, cap, slots_per_node, billing="per_second", boot_delay=120.0, progress=None):
    """:func:`run` for every candidate, in order; ``progress(i, n, figures)`` after each."""
    rows = []
    for i, cand in enumerate(candidates, 1):
        rows.append(run(jobs, cand, cap, slots_per_node, billing, boot_delay))
        if progress is not None:
            progress(i, len(candidates), rows[-1])
    return rows


def wait_of(row, target):
    if target not in TARGETS:
        raise ValueError("target: must be one of %s, got %r" % (", ".join(TARGETS), target))
    return row["wait_p95"] if target == "p95" else row["wait_mean"]


def recommend(rows, target, limit):
    """``(row, met)``: the cheapest row whose ``target`` wait is <= ``limit`` seconds, ``met`` True;
    when none is, the row with the lowest such wait (cheapest among equals) and ``met`` False.

    Rows marked ``baseline`` in their candidate are only for comparison and never recommended.
    """
    pool = [r for r in rows if not r["candidate"].get("baseline")]
    if not pool:
        raise ValueError("recommend: no candidate rows")
    ok = [r for r in pool if wait_of(r, target) <= limit + 1e-9]
    if ok:
        return min(ok, key=lambda r: (r["cost"], r["node_hours"], wait_of(r, target))), True
    return min(pool, key=lambda r: (wait_of(r, target), r["cost"])), False
