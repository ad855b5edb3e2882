# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline checks of the AWX definitions that run the balancer (playbooks/vars/awx_definitions.yml).

Test apparatus, not product: only the unit tests use it (tests/unit/test_awx_defs.py), so it lives
under tests/ and is not in the tarball. No AWX is needed, and nothing here imports Ansible:

- :func:`module_spec` reads an ``awx.awx`` module's argument spec out of the module's *source*
  (the ``argument_spec = dict(...)`` its ``main()`` hands to ``ControllerAPIModule``, with
  ``mutually_exclusive`` and friends), and :func:`auth_spec` the connection options every
  ``awx.awx`` module adds (``ControllerModule.AUTH_ARGSPEC``).  :func:`unknown_fields` names every
  field of a definition that is not an option of the module applying it; the unit tests also
  validate every task of playbooks/awx_setup.yml with Ansible's own argument validator.
- :func:`parse_rrule` applies AWX's documented schedule limits (ansible/awx ``docs/schedules.md``,
  "RRULE Limitations") and then parses the rule with python-dateutil's ``rrulestr``, which is what
  AWX itself uses, and returns the first occurrences and the period.
- :func:`survey_problems` checks a survey the way AWX's API does when it is saved
  (``JobTemplateSurveySpec._validate_spec_data``) and the way AWX applies its defaults at launch
  (``SurveyJobTemplateMixin._survey_element_validation``: a default that fails is dropped
  silently), plus the balancer's own rules (variables the playbook reads, node limits).
- :func:`secret_problems`: no literal secret, every secret input of a credential a variable.
- :func:`check_definitions` checks all of it, the references between the objects, and what makes
  the balancer safe to run from AWX: one acting job template per cluster, ``allow_simultaneous``
  false, no job slicing, one poll per job, a job timeout within the lock's time to live, and a
  schedule period equal to the balancer's ``interval``.

The layout is infra.aap_configuration's (redhat-cop): ``aap_organizations``,
``controller_execution_environments``, ``controller_credentials``, ``controller_projects``,
``controller_inventories``, ``controller_inventory_sources``, ``controller_templates``,
``controller_schedules`` (:data:`LAYOUT`).
"""

from __future__ import annotations

import ast
import datetime
import re
import warnings

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


# infra.aap_configuration's variables, in the order its dispatch role applies them, and the awx.awx
# module that applies one entry of each (the module its role calls)
LAYOUT = (
    ("aap_organizations", "awx.awx.organization"),
    ("controller_execution_environments", "awx.awx.execution_environment"),
    ("controller_credentials", "awx.awx.credential"),
    ("controller_projects", "awx.awx.project"),
    ("controller_inventories", "awx.awx.inventory"),
    ("controller_inventory_sources", "awx.awx.inventory_source"),
    ("controller_templates", "awx.awx.job_template"),
    ("controller_schedules", "awx.awx.schedule"),
)

# AWX's managed credential types (ansible/awx awx/main/models/credential/__init__.py): their
# input fields, the secret ones and the required ones
CREDENTIAL_TYPES = {
    "Machine": {
        "fields": {"username", "password", "ssh_key_data", "ssh_public_key_data", "ssh_key_unlock",
                   "become_method", "become_username", "become_password"},
        "secret": {"password", "ssh_key_data", "ssh_key_unlock", "become_password"},
        "required": set(),
    },
    "Amazon Web Services": {
        "fields": {"username", "password", "security_token"},
        "secret": {"password", "security_token"},
        "required": {"username", "password"},
    },
    "Source Control": {
        "fields": {"username", "password", "ssh_key_data", "ssh_key_unlock"},
        "secret": {"password", "ssh_key_data", "ssh_key_unlock"},
        "required": set(),
    },
    "Container Registry": {
        "fields": {"host", "username", "password", "verify_ssl"},
        "secret": {"password"},
        "required": {"host"},
    },
}

# a secret's value: one variable, at most through argument-less filters (no default('literal'))
VAR_REF = re.compile(r"\A\{\{\s*[A-Za-z_][A-Za-z0-9_]*(\s*\|\s*[A-Za-z_][A-Za-z0-9_.]*)*\s*\}\}\Z")
SECRET_KEY = re.compile(r"password|passwd|secret|token|ssh_key_data|ssh_key_unlock|private_key|oauth|api_key", re.I)
SECRET_TEXT = (
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"), "a private key"),
)
AWX_PLACEHOLDER = "$encrypted$"   # what AWX shows for a stored secret: not a secret itself

# AWX's survey question types and the Python type of their values (awx/main/constants.py
# SURVEY_TYPE_MAPPING)
SURVEY_TYPES = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str,
                "integer": int, "float": (float, int)}
IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
# extra variables a survey must not offer, and why
SURVEY_FORBIDDEN = {
    "continuous": "one poll per job",
    "interval": "it must equal the schedule's period",
    "lock_ttl": "the job's timeout is checked against it",
    "awx_job_id": "AWX sets it",
}
# the balancer's own limits (policy/elastic.py validate: min_nodes >= 0, max_nodes >= 1)
NODE_FLOOR = {"min_nodes": 0, "max_nodes": 1}


def unknown_fields(defs, specs):
    """Every field of an entry that is not an option (nor an alias) of the awx.awx module that
    applies it. ``specs``: {module: its argument_spec} (the module's own options: connection
    options are set once for the play, not per object)."""
    problems = []
    for var, module in LAYOUT:
        spec = specs.get(module)
        entries = defs.get(var)
        if spec is None or not isinstance(entries, list):
            continue
        known = set(spec) | {a for opt in spec.values() for a in (opt.get("aliases") or [])}
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            for key in entry:
                if key not in known:
                    problems.append("%s: %s: %r is not an option of %s" % (var, entry.get("name"), key, module))
    return problems


def _walk(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, "%s.%s" % (path, key) if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, "%s[%d]" % (path, index))
    else:
        yield path, node


def secret_problems(defs):
    """Literal secrets anywhere in the definitions, and credential inputs that AWX keeps secret but
    that are not a variable (a vault gives them)."""
    problems = []
    for path, value in _walk(defs):
        if not isinstance(value, str) or value == AWX_PLACEHOLDER:
            continue
        for pattern, what in SECRET_TEXT:
            if pattern.search(value):
                problems.append("%s: holds %s; secrets come from variables (a vault), never from this file" % (path, what))
        leaf = re.split(r"[.\[]", path)[-1]
        if SECRET_KEY.search(leaf) and value.strip() and not VAR_REF.match(value.strip()):
            problems.append("%s: a literal secret; give it as a variable, e.g. \"{{ vault_%s }}\"" % (path, leaf))
    for cred in defs.get("controller_credentials") or []:
        if not isinstance(cred, dict):
            continue
        kind = CREDENTIAL_TYPES.get(cred.get("credential_type"))
        inputs = cred.get("inputs") or {}
        if kind is None or not isinstance(inputs, dict):
            continue
        for field in sorted(kind["secret"] & set(inputs)):
            value = inputs[field]
            if not (isinstance(value, str) and VAR_REF.match(value.strip())):
                msg = "controller_credentials: %s: input %s is secret in AWX; it must be a variable (\"{{ vault_... }}\")" % (
                    cred.get("name"), field)
                if msg not in problems:
                    problems.append(msg)
    return problems


def _choices(question):
    choices = question.get("choices")
    if isinstance(choices, str):
        return [c for c in choices.splitlines() if c.strip()]
    return list(choices) if isinstance(choices, list) else None


def survey_value_errors(question, value):
    """What AWX says of ``value`` as the answer (or default) of ``question``
    (SurveyJobTemplateMixin._survey_element_validation); empty when AWX accepts it."""
    qtype, var = question.get("type"), question.get("variable")
    low, high = question.get("min"), question.get("max")
    low = None if low in ("", None) else low
    high = None if high in ("", None) else high
    if qtype in ("text", "textarea", "password"):
        if not isinstance(value, str):
            return ["value %r for %s is not a string" % (value, var)]
        if low is not None and len(value) < int(low):
            return ["value %r for %s is shorter than its min %s" % (value, var, low)]
        if high is not None and len(value) > int(high):
            return ["value %r for %s is longer than its max %s" % (value, var, high)]
    elif qtype in ("integer", "float"):
        if isinstance(value, bool) or (qtype == "integer" and not isinstance(value, int)) or \
                (qtype == "float" and not isinstance(value, (int, float))):
            return ["value %r for %s is not %s" % (value, var, "an integer" if qtype == "integer" else "a number")]
        if low is not None and value < low:
            return ["value %r for %s is below its min %s" % (value, var, low)]
        if high is not None and value > high:
            return ["value %r for %s is above its max %s" % (value, var, high)]
    elif qtype == "multiplechoice":
        if value not in (_choices(question) or []):
            return ["value %r for %s is not one of its choices %s" % (value, var, _choices(question))]
    elif qtype == "multiselect":
        if not isinstance(value, list):
            return ["value %r for %s is not a list" % (value, var)]
        bad = [v for v in value if v not in (_choices(question) or [])]
        if bad:
            return ["values %r for %s are not among its choices %s" % (bad, var, _choices(question))]
    return []


def survey_problems(survey, label, playbook_vars=None):
    """Problems of one survey spec as AWX validates it when it is saved, plus: every question has a
    default that AWX accepts (a scheduled job gets the defaults; AWX drops a default that fails its
    own validation silently), numbers are bounded, no password question (secrets come from
    credentials), variables are names the playbook reads (``playbook_vars``, when given) and none
    of :data:`SURVEY_FORBIDDEN`."""
    if not isinstance(survey, dict):
        return ["%s: survey_spec must be a dict with name, description and spec" % label]
    problems = []
    for field, kind, what in (("name", str, "a string"), ("description", str, "a string"), ("spec", list, "a list of questions")):
        if not isinstance(survey.get(field), kind):
            problems.append("%s: survey_spec.%s must be %s (AWX refuses the survey otherwise)" % (label, field, what))
    if problems:
        return problems
    if not survey["spec"]:
        return ["%s: survey_spec.spec has no question" % label]
    seen = set()
    for index, question in enumerate(survey["spec"]):
        where = "%s: survey question %d" % (label, index)
        if not isinstance(question, dict):
            problems.append("%s is not a mapping" % where)
            continue
        bad = [f for f in ("type", "question_name", "variable") if not isinstance(question.get(f), str)]
        if bad:
            problems.append("%s: %s must be strings" % (where, ", ".join(bad)))
            continue
        var, qtype = question["variable"], question["type"]
        where = "%s (%s)" % (where, var)
        if not isinstance(question.get("required"), bool):
            problems.append("%s: required must be true or false" % where)
        if var in seen:
            problems.append("%s: variable %s is asked twice" % (where, var))
        seen.add(var)
        if not IDENTIFIER.match(var):
            problems.append("%s: %r is not a variable name" % (where, var))
        elif var in SURVEY_FORBIDDEN:
            problems.append("%s: the survey must not ask %s (%s)" % (where, var, SURVEY_FORBIDDEN[var]))
        elif playbook_vars is not None and var not in playbook_vars:
            problems.append("%s: the playbook reads no variable %s (known: %s)"
                            % (where, var, ", ".join(sorted(v for v in playbook_vars if not v.startswith("_")))))
        if qtype not in SURVEY_TYPES:
            problems.append("%s: type %r is not one of %s" % (where, qtype, ", ".join(sorted(SURVEY_TYPES))))
            continue
        if qtype == "password":
            problems.append("%s: no password questions: secrets come from credentials" % where)
        for key in ("min", "max"):
            value = question.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                problems.append("%s: %s must be an integer, got %r" % (where, key, value))
        low, high = question.get("min"), question.get("max")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            problems.append("%s: min %s is above max %s" % (where, low, high))
        if qtype in ("integer", "float") and (low is None or high is None):
            problems.append("%s: a number question needs both min and max" % where)
        if qtype in ("multiplechoice", "multiselect"):
            choices = _choices(question)
            if not choices:
                problems.append("%s: a %s question needs choices" % (where, qtype))
            elif len(set(map(str, choices))) != len(choices):
                problems.append("%s: choices repeat" % where)
        if "default" not in question or question["default"] in (None, ""):
            problems.append("%s: no default (a scheduled job gets the defaults; without one it cannot start)" % where)
            continue
        default = question["default"]
        want = SURVEY_TYPES[qtype]
        if isinstance(default, bool) or not isinstance(default, want) and not (qtype == "multiselect" and isinstance(default, (list, str))):
            problems.append("%s: default %r is not of type %s (AWX refuses the survey)" % (where, default, qtype))
            continue
        if qtype == "multiselect" and isinstance(default, str):
            default = [d for d in default.splitlines() if d.strip()]
        for error in survey_value_errors(question, default):
            problems.append("%s: default: %s (AWX would drop it silently)" % (where, error))
    return problems


def _questions(template):
    """{variable: question} of a job template's survey, when it is enabled."""
    survey = template.get("survey_spec")
    if not template.get("survey_enabled") or not isinstance(survey, dict) or not isinstance(survey.get("spec"), list):
        return {}
    return dict((q.get("variable"), q) for q in survey["spec"] if isinstance(q, dict))


def survey_defaults(template):
    """The survey's defaults of a job template, as AWX adds them to a job's extra vars (only when
    the survey is enabled and the default passes validation)."""
    out = {}
    for var, question in _questions(template).items():
        if question.get("default") is not None and not survey_value_errors(question, question["default"]):
            out[var] = question["default"]
    return out


def _image_problem(image):
    if not isinstance(image, str) or not image.strip():
        return "image must name the container image"
    last = image.rsplit("/", 1)[-1]
    if "@sha256:" in last:
        return None
    if ":" not in last:
        return "image %s has no tag: pin one (the collection's version), not the moving latest" % image
    if last.rsplit(":", 1)[1] == "latest":
        return "image %s: pin a version tag, not latest (every job would run whatever was pushed last)" % image
    return None


def _as_bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _entries(defs, var, problems):
    entries = defs.get(var)
    if not isinstance(entries, list) or not entries:
        problems.append("%s: a non-empty list is needed" % var)
        return []
    seen = set()
    out = []
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            problems.append("%s: an entry without a name: %r" % (var, entry))
            continue
        if name in seen:
            problems.append("%s: %s is defined twice" % (var, name))
        seen.add(name)
        out.append(entry)
    return out


PERIOD_SAMPLE = 7 * 24 * 60 + 1  # a week of minutes: a rule that pauses (nights, weekends) shows it


def check_definitions(defs, playbook_vars=None, after=None):
    """Every problem of the AWX definitions (a list of strings; empty means fine).

    ``defs`` is the content of playbooks/vars/awx_definitions.yml; ``playbook_vars`` the variables
    the job templates' playbook reads (survey questions must be among them; None: not checked).
    Schedules are parsed with :func:`parse_rrule` (occurrences counted from ``after``, default
    each rule's DTSTART); the period of an acting schedule must be constant over its first
    ``PERIOD_SAMPLE`` occurrences.
    """
    problems = []
    ent = dict((var, _entries(defs, var, problems)) for var, _module in LAYOUT)
    names = dict((var, {e["name"] for e in entries}) for var, entries in ent.items())
    if problems:
        return problems
    problems.extend(secret_problems(defs))

    def ref(var, entry, field, target, required=True):
        value = entry.get(field)
        if value is None and not required:
            return
        if value not in names[target]:
            problems.append("%s: %s: %s %r is not one of %s (%s)" % (
                var, entry["name"], field, value, target, ", ".join(sorted(names[target]))))

    for var, entries in ent.items():
        if var == "aap_organizations":
            continue
        for entry in entries:
            ref(var, entry, "organization", "aap_organizations",
                required=var in ("controller_credentials", "controller_projects", "controller_inventories"))

    for ee in ent["controller_execution_environments"]:
        problem = _image_problem(ee.get("image"))
        if problem:
            problems.append("controller_execution_environments: %s: %s" % (ee["name"], problem))
        ref("controller_execution_environments", ee, "credential", "controller_credentials", required=False)

    cred_type = {}
    for cred in ent["controller_credentials"]:
        kind = cred.get("credential_type")
        cred_type[cred["name"]] = kind
        if kind not in CREDENTIAL_TYPES:
            problems.append("controller_credentials: %s: credential_type %r is not one these checks know (%s)"
                            % (cred["name"], kind, ", ".join(sorted(CREDENTIAL_TYPES))))
            continue
        inputs = cred.get("inputs") or {}
        if not isinstance(inputs, dict):
            problems.append("controller_credentials: %s: inputs must be a mapping" % cred["name"])
            continue
        unknown = sorted(set(inputs) - CREDENTIAL_TYPES[kind]["fields"])
        if unknown:
            problems.append("controller_credentials: %s: %s has no input %s (its inputs: %s)" % (
                cred["name"], kind, ", ".join(unknown), ", ".join(sorted(CREDENTIAL_TYPES[kind]["fields"]))))
        missing = sorted(CREDENTIAL_TYPES[kind]["required"] - set(inputs))
        if missing:
            problems.append("controller_credentials: %s: %s needs the input %s" % (cred["name"], kind, ", ".join(missing)))

    for project in ent["controller_projects"]:
        ref("controller_projects", project, "credential", "controller_credentials", required=False)
        ref("controller_projects", project, "default_environment", "controller_execution_environments", required=False)
    for source in ent["controller_inventory_sources"]:
        ref("controller_inventory_sources", source, "inventory", "controller_inventories")
        if source.get("source") == "scm":
            ref("controller_inventory_sources", source, "source_project", "controller_projects")
        ref("controller_inventory_sources", source, "execution_environment", "controller_execution_environments",
            required=False)

    acting = {}      # cluster -> templates that change the cluster (job_type run)
    by_name = {}
    effective = {}   # template -> its extra vars as a job without answers gets them
    for jt in ent["controller_templates"]:
        name = jt["name"]
        by_name[name] = jt
        label = "controller_templates: %s" % name
        for field, target in (("project", "controller_projects"), ("inventory", "controller_inventories"),
                              ("execution_environment", "controller_execution_environments")):
            ref("controller_templates", jt, field, target)
        creds = jt.get("credentials") or []
        for cred in creds:
            if cred not in names["controller_credentials"]:
                problems.append("%s: credential %r is not one of controller_credentials" % (label, cred))
        kinds = [cred_type.get(c) for c in creds]
        if "Machine" not in kinds:
            problems.append("%s: credentials must include a Machine credential (ssh to the qmaster)" % label)
        for kind in sorted({k for k in kinds if k and kinds.count(k) > 1}):
            problems.append("%s: two %s credentials (AWX takes one of each type)" % (label, kind))
        if not str(jt.get("playbook", "")).endswith((".yml", ".yaml")):
            problems.append("%s: playbook must be a .yml file of the project" % label)

        extra = jt.get("extra_vars") if isinstance(jt.get("extra_vars"), dict) else {}
        if jt.get("survey_enabled"):
            if "survey_spec" not in jt:
                problems.append("%s: survey_enabled without a survey_spec" % label)
            else:
                problems.extend(survey_problems(jt["survey_spec"], label, playbook_vars))
        defaults = survey_defaults(jt)
        for var in sorted(set(defaults) & set(extra)):
            if defaults[var] != extra[var]:
                problems.append("%s: extra_vars.%s is %r but the survey's default %r wins at every launch; "
                                "keep one" % (label, var, extra[var], defaults[var]))
        merged = dict(extra, **defaults)
        effective[name] = merged

        cluster = merged.get("cluster")
        if not isinstance(cluster, str) or not CLUSTER_RE.match(cluster):
            problems.append("%s: cluster must name the cluster (letters, digits, _ . -), got %r" % (label, cluster))
            continue
        if not name.startswith("loadbalance-%s" % cluster):
            problems.append("%s: the name must start with loadbalance-%s (its cluster)" % (label, cluster))
        questions = _questions(jt)
        question = questions.get("cluster")
        if question is not None and (question.get("type") != "multiplechoice" or _choices(question) != [cluster]):
            problems.append("%s: the survey's cluster question must be a multiplechoice of this template's "
                            "cluster alone ([%s]): one template acts on one cluster" % (label, cluster))
        for var, floor in sorted(NODE_FLOOR.items()):
            value = merged.get(var)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < floor):
                problems.append("%s: %s must be an integer >= %d, got %r" % (label, var, floor, value))
        low, high = merged.get("min_nodes"), merged.get("max_nodes")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            problems.append("%s: min_nodes %s is above max_nodes %s" % (label, low, high))
        for var, floor in sorted(NODE_FLOOR.items()):
            question = questions.get(var)
            if question is None:
                continue
            if question.get("type") != "integer":
                problems.append("%s: the survey asks %s as %r; it must be integer" % (label, var, question.get("type")))
            elif isinstance(question.get("min"), int) and question["min"] < floor:
                problems.append("%s: the survey lets %s go down to %s; the balancer needs >= %d"
                                % (label, var, question["min"], floor))
        if "min_nodes" in questions and "max_nodes" in questions:
            top_low, top_high = questions["min_nodes"].get("max"), questions["max_nodes"].get("max")
            if isinstance(top_low, int) and isinstance(top_high, int) and top_low > top_high:
                problems.append("%s: the survey lets min_nodes reach %s, above the largest max_nodes %s"
                                % (label, top_low, top_high))

        if jt.get("allow_simultaneous") is not False:
            problems.append("%s: allow_simultaneous must be false (one job of a template at a time)" % label)
        if jt.get("job_slice_count", 1) != 1:
            problems.append("%s: job_slice_count must be 1 (the play runs on the one qmaster; slices would "
                            "be separate balancers)" % label)
        if jt.get("limit"):
            problems.append("%s: limit must be unset (the play chooses <cluster>_master itself)" % label)
        for ask in ("ask_variables_on_launch", "ask_limit_on_launch", "ask_inventory_on_launch",
                    "ask_job_type_on_launch"):
            if jt.get(ask):
                problems.append("%s: %s must be false (a launch could then act on another cluster or "
                                "switch check mode off)" % (label, ask))
        if _as_bool(merged.get("continuous", False)):
            problems.append("%s: continuous must be false: one poll per scheduled job" % label)
        job_type = jt.get("job_type", "run")
        if job_type == "run":
            acting.setdefault(cluster, []).append(name)
            ttl = merged.get("lock_ttl", DEFAULT_LOCK_TTL)
            timeout = jt.get("timeout")
            if not isinstance(timeout, int) or isinstance(timeout, bool) or not 0 < timeout <= ttl:
                problems.append("%s: timeout must be set, > 0 and <= the lock's ttl %s s (AWX stops the job "
                                "before its lock can be taken over as stale), got %r" % (label, ttl, timeout))
        elif job_type != "check":
            problems.append("%s: job_type must be run or check, got %r" % (label, job_type))

    for cluster, tnames in sorted(acting.items()):
        if len(tnames) > 1:
            problems.append("cluster %s: %d job templates act on it (%s); allow_simultaneous only keeps one "
                            "template's jobs apart, so keep one (others may use job_type check)"
                            % (cluster, len(tnames), ", ".join(sorted(tnames))))

    scheduled = {}
    for sched in ent["controller_schedules"]:
        name = sched["name"]
        label = "controller_schedules: %s" % name
        target = sched.get("unified_job_template")
        if target not in by_name:
            problems.append("%s: unified_job_template %r is not one of controller_templates" % (label, target))
            continue
        jt = by_name[target]
        extra = sched.get("extra_data") or {}
        if not isinstance(extra, dict):
            problems.append("%s: extra_data must be a mapping" % label)
            extra = {}
        if "cluster" in extra or "continuous" in extra:
            problems.append("%s: extra_data must not set cluster or continuous (the template fixes them)" % label)
        questions = _questions(jt)
        for var in sorted(extra):
            if var in ("cluster", "continuous"):
                continue
            if var not in questions and not jt.get("ask_variables_on_launch"):
                problems.append("%s: extra_data.%s is neither a survey question of %s nor prompted: AWX refuses it"
                                % (label, var, target))
            elif var in questions:
                for error in survey_value_errors(questions[var], extra[var]):
                    problems.append("%s: extra_data: %s" % (label, error))
        try:
            parsed = parse_rrule(sched.get("rrule"), after=after, count=PERIOD_SAMPLE)
        except ValueError as exc:
            problems.append("%s: %s" % (label, exc))
            continue
        if jt.get("job_type", "run") != "run" or sched.get("enabled") is False:
            continue
        scheduled.setdefault(target, []).append(name)
        job_vars = dict(effective.get(target) or {}, **extra)
        interval = job_vars.get("interval", DEFAULT_INTERVAL)
        if parsed["period"] is None:
            problems.append("%s: the rule does not fire at a constant period; the balancer's interval "
                            "needs one" % label)
        elif parsed["period"] != interval:
            problems.append("%s: fires every %g s but %s polls with interval %s s; make them equal"
                            % (label, parsed["period"], target, interval))
        elif not 60 <= parsed["period"] <= MAX_INTERVAL:
            problems.append("%s: period %g s is outside 60..%d s" % (label, parsed["period"], MAX_INTERVAL))
    for target, snames in sorted(scheduled.items()):
        if len(snames) > 1:
            problems.append("%s: %d enabled schedules (%s); one is enough" % (target, len(snames), ", ".join(snames)))
    return problems


# ---- what the playbook reads --------------------------------------------------------------------

CONDITION_KEYS = ("when", "that", "changed_when", "failed_when", "until")


def playbook_variables(documents):
    """The variables a playbook reads: the names every Jinja template in the parsed YAML
    ``documents`` loads (and does not set itself), also in conditionals (``when``, ``that``, ...),
    which are bare Jinja. An over-approximation (a loop's ``item`` is in it): enough to catch a
    survey variable that nothing reads."""
    import jinja2
    from jinja2 import nodes

    env = jinja2.Environment()
    names = set()

    def visit(node, key=None):
        if isinstance(node, dict):
            for child_key, child in node.items():
                visit(child, child_key)
        elif isinstance(node, list):
            for child in node:
                visit(child, key)
        elif isinstance(node, str):
            if "{{" in node or "{%" in node:
                source = node
            elif key in CONDITION_KEYS:
                source = "{{ %s }}" % node
            else:
                return
            try:
                with warnings.catch_warnings():
                    # jinja2's lexer warns about regex escapes (\Z) in string literals; Ansible's too
                    warnings.simplefilter("ignore", DeprecationWarning)
                    tree = env.parse(source)
            except jinja2.TemplateSyntaxError:
                return
            # the names loaded and never stored (meta.find_undeclared_variables compiles the
            # template, which needs Ansible's filters and tests)
            loaded = {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
            stored = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
            names.update(loaded - stored)
    for document in documents:
        visit(document)
    return names
