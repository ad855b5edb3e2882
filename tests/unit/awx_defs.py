# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline checks of the AWX definitions that run the balancer (playbooks/vars/awx_definitions.yml).

No AWX is needed, and nothing here imports Ansible:

- :func:`module_spec` reads an ``awx.awx`` module's argument spec out of the module's *source*
  (the ``argument_spec = dict(...)`` its ``main()`` hands to ``ControllerAPIModule``, with
  ``mutually_exclusive`` and friends), and :func:`auth_spec` the connection options every
  ``awx.awx`` module adds (``ControllerModule.AUTH_ARGSPEC``).  The unit tests validate every
  task of playbooks/awx_setup.yml against these specs with Ansible's own argument validator.
- :func:`parse_rrule` applies AWX's documented schedule limits (ansible/awx ``docs/schedules.md``,
  "RRULE Limitations") and then parses the rule with python-dateutil's ``rrulestr``, which is what
  AWX itself uses, and returns the first occurrences and the period.
- :func:`check_definitions` checks what makes the balancer safe to run from AWX: one acting job
  template per cluster, ``allow_simultaneous`` false, no job slicing, one poll per job, a job
  timeout within the lock's time to live, and a schedule period equal to the balancer's
  ``interval``.
"""

from __future__ import annotations

import ast
import datetime
import re

CLUSTER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # playbooks/loadbalance.yml's check
DEFAULT_INTERVAL = 60      # elastic_plan's interval default
MAX_INTERVAL = 300         # elastic_plan refuses a longer interval
DEFAULT_LOCK_TTL = 1800    # playbooks/loadbalance.yml: lock_ttl | default(1800)
AWX_MAX_COUNT = 999        # AWX: COUNT over 999 is refused


class Unresolved(str):
    """A piece of module source that is not a literal (``env_fallback``, a call, ...)."""


def _eval(node, names):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_eval(e, names) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict):
        return dict((_eval(k, names), _eval(v, names)) for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return dict((kw.arg, _eval(kw.value, names)) for kw in node.keywords if kw.arg)
    if isinstance(node, ast.Name):
        return names[node.id] if node.id in names else Unresolved(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    return Unresolved(ast.dump(node)[:60])


def _is_controller_call(node):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("ControllerAPIModule", "ControllerAWXKitModule", "ControllerModule"))


def module_spec(source):
    """The keyword arguments an ``awx.awx`` module's ``main()`` passes to ``ControllerAPIModule``.

    Returns a dict with ``argument_spec`` and whichever of ``mutually_exclusive``, ``required_if``,
    ``required_one_of``, ``required_together``, ``required_by`` the module gives.  Raises
    ValueError when the source has no such call.
    """
    tree = ast.parse(source)
    main = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"), None)
    if main is None:
        raise ValueError("no main() in the module source")
    names = {}
    for stmt in tree.body:  # module-level constants (choices lists and the like)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            names[stmt.targets[0].id] = _eval(stmt.value, names)
    for stmt in main.body:
        if isinstance(stmt, ast.Assign):
            if _is_controller_call(stmt.value):
                return _controller_kwargs(stmt.value, names)
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                names[stmt.targets[0].id] = _eval(stmt.value, names)
    raise ValueError("no ControllerAPIModule(...) call in main()")


def _controller_kwargs(call, names):
    out = dict((kw.arg, _eval(kw.value, names)) for kw in call.keywords if kw.arg)
    spec = out.get("argument_spec")
    if not isinstance(spec, dict):
        raise ValueError("argument_spec is not a literal dict")
    out["argument_spec"] = _clean_spec(spec)
    return out


def _clean_spec(spec):
    """Drop what cannot be literal (``fallback=(env_fallback, [...])``); keep the option's shape."""
    clean = {}
    for name, opt in spec.items():
        opt = dict(opt) if isinstance(opt, dict) else {}
        if isinstance(opt.get("fallback"), tuple) and opt["fallback"] and isinstance(opt["fallback"][0], Unresolved):
            opt.pop("fallback")
        if isinstance(opt.get("options"), dict):
            opt["options"] = _clean_spec(opt["options"])
        clean[name] = opt
    return clean


def auth_spec(controller_api_source):
    """``ControllerModule.AUTH_ARGSPEC`` from ``plugins/module_utils/controller_api.py``: the
    connection options (``controller_host``, ``controller_oauthtoken``, ...) every module accepts."""
    tree = ast.parse(controller_api_source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ControllerModule":
            for stmt in node.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "AUTH_ARGSPEC"):
                    return _clean_spec(_eval(stmt.value, {}))
    raise ValueError("no ControllerModule.AUTH_ARGSPEC in the source")


def full_spec(module_source, controller_api_source):
    """What ``ControllerAPIModule.__init__`` validates: AUTH_ARGSPEC updated with the module's spec."""
    spec = module_spec(module_source)
    merged = dict(auth_spec(controller_api_source))
    merged.update(spec["argument_spec"])
    spec["argument_spec"] = merged
    return spec


# ---- schedules --------------------------------------------------------------------------------

_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _never_fires(parts):
    """True when BYMONTHDAY and BYMONTH name no existing day (30 February): dateutil would search
    day by day up to the year 9999 before it gives up."""
    try:
        days = [int(d) for d in parts.get("BYMONTHDAY", "").split(",") if d]
        months = [int(m) for m in parts.get("BYMONTH", "").split(",") if m] or list(range(1, 13))
    except ValueError:
        return False        # dateutil reports it
    if not days or any(not 1 <= m <= 12 for m in months):
        return False
    longest = max(_MONTH_DAYS[m - 1] for m in months)
    days = [d for d in days if d]
    return bool(days) and all(abs(d) > longest for d in days)


def _rrule_problems(rrule):
    """AWX's documented limits (docs/schedules.md, "RRULE Limitations"), checked on the text."""
    problems = []
    text = rrule.strip()
    words = text.split()
    if not text.upper().startswith("DTSTART"):
        problems.append("must start with DTSTART")
    dtstarts = [w for w in words if w.upper().startswith("DTSTART")]
    if len(dtstarts) != 1:
        problems.append("needs exactly one DTSTART (found %d)" % len(dtstarts))
    for dt in dtstarts:
        if not (dt.upper().endswith("Z") or ";TZID=" in dt.upper()):
            problems.append("DTSTART %s has no time zone (end it with Z for UTC, or use ;TZID=)" % dt)
    rules = [w for w in words if w.upper().startswith(("RRULE:", "EXRULE:"))]
    if not any(w.upper().startswith("RRULE:") for w in rules):
        problems.append("needs an RRULE")
    if any(w.upper().startswith(("RDATE", "EXDATE")) for w in words):
        problems.append("RDATE and EXDATE are not supported by AWX")
    for word in rules:
        parts = {}
        for item in word.split(":", 1)[1].split(";"):
            key, _sep, value = item.partition("=")
            parts[key.upper()] = value.upper()
        label = word.split(":", 1)[0].upper()
        if "INTERVAL" not in parts:
            problems.append("%s needs INTERVAL" % label)
        elif not re.match(r"\A[1-9][0-9]{0,5}\Z", parts["INTERVAL"]):
            # dateutil loops forever on INTERVAL=0
            problems.append("%s: INTERVAL must be a whole number from 1 to 999999" % label)
        if "BYSETPOS" in parts:
            # a position that never exists makes dateutil search the calendar to the year 9999
            problems.append("%s: BYSETPOS is not supported by this check" % label)
        if _never_fires(parts):
            problems.append("%s: BYMONTHDAY names no day of the months in BYMONTH; it never fires" % label)
        if parts.get("FREQ") == "SECONDLY":
            problems.append("%s: FREQ=SECONDLY is not supported by AWX" % label)
        if "COUNT" in parts and "UNTIL" in parts:
            problems.append("%s: COUNT and UNTIL together are not supported by AWX" % label)
        if parts.get("COUNT", "0").isdigit() and int(parts.get("COUNT", "0")) > AWX_MAX_COUNT:
            problems.append("%s: COUNT over %d is not supported by AWX" % (label, AWX_MAX_COUNT))
        if any(re.match(r"^[+-]?\d", day) for day in parts.get("BYDAY", "").split(",") if day):
            problems.append("%s: BYDAY with a numeric prefix is not supported by AWX" % label)
        for key in ("BYYEARDAY", "BYWEEKNO"):
            if key in parts:
                problems.append("%s: %s is not supported by AWX" % (label, key))
    return problems


def parse_rrule(rrule, after=None, count=10):
    """Check an AWX schedule rule and parse it with dateutil's ``rrulestr`` (as AWX does).

    Returns ``{"first": [the next ``count`` occurrences after ``after`` (default: DTSTART)],
    "period": seconds between them when that is constant else None, "dtstart": ...}``.
    Raises ValueError naming every problem.
    """
    if not isinstance(rrule, str) or not rrule.strip():
        raise ValueError("rrule: empty")
    problems = _rrule_problems(rrule)
    if problems:
        raise ValueError("rrule %r: %s" % (rrule, "; ".join(problems)))
    try:
        from dateutil import rrule as du_rrule
    except ImportError as exc:  # pragma: no cover - dateutil comes with matplotlib
        raise ValueError("rrule: python-dateutil is needed to parse it (%s)" % exc)
    start = None
    try:
        ruleset = du_rrule.rrulestr(rrule, forceset=True)
        for occurrence in ruleset:
            start = occurrence
            break
        first = []
        if start is not None:
            if after is None:
                after = start - datetime.timedelta(seconds=1)
            elif after.tzinfo is None and start.tzinfo is not None:
                after = after.replace(tzinfo=datetime.timezone.utc)
            first = list(ruleset.xafter(after, count=count, inc=False))
    except (ValueError, TypeError, OverflowError) as exc:
        # OverflowError: a year or an INTERVAL beyond what datetime holds
        raise ValueError("rrule %r: dateutil cannot parse it: %s" % (rrule, exc))
    if start is None:
        raise ValueError("rrule %r: never fires" % rrule)
    gaps = {(b - a).total_seconds() for a, b in zip(first, first[1:])}
    period = gaps.pop() if len(gaps) == 1 else None
    return {"dtstart": start, "first": first, "period": period}


# ---- the definitions --------------------------------------------------------------------------

def _names(items, kind, problems):
    seen = set()
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        if not name:
            problems.append("%s: an entry without a name: %r" % (kind, item))
        elif name in seen:
            problems.append("%s: %s is defined twice" % (kind, name))
        seen.add(name)
    return seen


def _as_bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


PERIOD_SAMPLE = 7 * 24 * 60 + 1  # a week of minutes: a rule that pauses (nights, weekends) shows it


def check_definitions(defs, after=None):
    """Every problem of the AWX definitions (a list of strings; empty means fine).

    ``defs`` is the content of playbooks/vars/awx_definitions.yml.  Schedules are parsed with
    :func:`parse_rrule` (occurrences counted from ``after``, default each rule's DTSTART); the
    period of an acting schedule must be constant over its first ``PERIOD_SAMPLE`` occurrences.
    """
    problems = []
    for key in ("awx_organization", "awx_project", "awx_inventory", "awx_inventory_source",
                "awx_machine_credential"):
        if not isinstance(defs.get(key), dict) or not defs[key].get("name"):
            problems.append("%s: missing, or without a name" % key)
    templates = defs.get("awx_job_templates")
    schedules = defs.get("awx_schedules")
    if not isinstance(templates, list) or not templates:
        problems.append("awx_job_templates: a non-empty list is needed")
        templates = []
    if not isinstance(schedules, list):
        problems.append("awx_schedules: a list is needed")
        schedules = []
    if problems:
        return problems
    org = defs["awx_organization"]["name"]
    project = defs["awx_project"]["name"]
    inventory = defs["awx_inventory"]["name"]
    machine = defs["awx_machine_credential"]["name"]

    if defs["awx_project"].get("organization", org) != org:
        problems.append("awx_project: organization is not %s" % org)
    if defs["awx_inventory"].get("organization", org) != org:
        problems.append("awx_inventory: organization is not %s" % org)
    source = defs["awx_inventory_source"]
    if source.get("inventory", inventory) != inventory:
        problems.append("awx_inventory_source: inventory is not %s" % inventory)
    if source.get("source") == "scm" and source.get("source_project", project) != project:
        problems.append("awx_inventory_source: source_project is not %s" % project)

    template_names = _names(templates, "awx_job_templates", problems)
    _names(schedules, "awx_schedules", problems)
    acting = {}      # cluster -> templates that change the cluster (job_type run)
    by_name = {}
    for jt in templates:
        if not isinstance(jt, dict) or not jt.get("name"):
            continue
        name = jt["name"]
        by_name[name] = jt
        extra = jt.get("extra_vars") if isinstance(jt.get("extra_vars"), dict) else {}
        cluster = extra.get("cluster")
        if not isinstance(cluster, str) or not CLUSTER_RE.match(cluster):
            problems.append("%s: extra_vars.cluster must name the cluster (letters, digits, _ . -), got %r"
                            % (name, cluster))
            continue
        if not name.startswith("loadbalance-%s" % cluster):
            problems.append("%s: the name must start with loadbalance-%s (its extra_vars.cluster)" % (name, cluster))
        for ref, want in (("organization", org), ("project", project), ("inventory", inventory)):
            if jt.get(ref) != want:
                problems.append("%s: %s is %r, not the defined %s" % (name, ref, jt.get(ref), want))
        if machine not in (jt.get("credentials") or []):
            problems.append("%s: credentials must include the machine credential %s (ssh to the qmaster)"
                            % (name, machine))
        if not str(jt.get("playbook", "")).endswith((".yml", ".yaml")):
            problems.append("%s: playbook must be a .yml file of the project" % name)
        if jt.get("allow_simultaneous") is not False:
            problems.append("%s: allow_simultaneous must be false (one job of a template at a time)" % name)
        if jt.get("job_slice_count", 1) != 1:
            problems.append("%s: job_slice_count must be 1 (the play runs on the one qmaster; slices would "
                            "be separate balancers)" % name)
        if jt.get("limit"):
            problems.append("%s: limit must be unset (the play chooses <cluster>_master itself)" % name)
        for ask in ("ask_variables_on_launch", "ask_limit_on_launch", "ask_inventory_on_launch",
                    "ask_job_type_on_launch"):
            if jt.get(ask):
                problems.append("%s: %s must be false (a launch could then act on another cluster or "
                                "switch check mode off)" % (name, ask))
        if _as_bool(extra.get("continuous", False)):
            problems.append("%s: continuous must be false: one poll per scheduled job" % name)
        job_type = jt.get("job_type", "run")
        if job_type == "run":
            acting.setdefault(cluster, []).append(name)
            ttl = extra.get("lock_ttl", DEFAULT_LOCK_TTL)
            timeout = jt.get("timeout")
            if not isinstance(timeout, int) or isinstance(timeout, bool) or not 0 < timeout <= ttl:
                problems.append("%s: timeout must be set, > 0 and <= the lock's ttl %s s (AWX stops the job "
                                "before its lock can be taken over as stale), got %r" % (name, ttl, timeout))
        elif job_type != "check":
            problems.append("%s: job_type must be run or check, got %r" % (name, job_type))

    for cluster, names in sorted(acting.items()):
        if len(names) > 1:
            problems.append("cluster %s: %d job templates act on it (%s); allow_simultaneous only keeps one "
                            "template's jobs apart, so keep one (others may use job_type check)"
                            % (cluster, len(names), ", ".join(sorted(names))))

    scheduled = {}
    for sched in schedules:
        if not isinstance(sched, dict) or not sched.get("name"):
            continue
        name = sched["name"]
        target = sched.get("unified_job_template")
        if target not in template_names:
            problems.append("%s: unified_job_template %r is not one of awx_job_templates" % (name, target))
            continue
        extra = sched.get("extra_data") or {}
        if "cluster" in extra or "continuous" in extra:
            problems.append("%s: extra_data must not set cluster or continuous (the template fixes them)" % name)
        try:
            parsed = parse_rrule(sched.get("rrule"), after=after, count=PERIOD_SAMPLE)
        except ValueError as exc:
            problems.append("%s: %s" % (name, exc))
            continue
        jt = by_name[target]
        if jt.get("job_type", "run") != "run" or sched.get("enabled") is False:
            continue
        scheduled.setdefault(target, []).append(name)
        interval = (jt.get("extra_vars") or {}).get("interval", DEFAULT_INTERVAL)
        if parsed["period"] is None:
            problems.append("%s: the rule does not fire at a constant period; the balancer's interval "
                            "needs one" % name)
        elif parsed["period"] != interval:
            problems.append("%s: fires every %g s but %s polls with interval %s s; make them equal"
                            % (name, parsed["period"], target, interval))
        elif not 60 <= parsed["period"] <= MAX_INTERVAL:
            problems.append("%s: period %g s is outside 60..%d s" % (name, parsed["period"], MAX_INTERVAL))
    for target, names in sorted(scheduled.items()):
        if len(names) > 1:
            problems.append("%s: %d enabled schedules (%s); one is enough" % (target, len(names), ", ".join(names)))
    return problems
