# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX definitions, checked offline (plugins/plugin_utils/awx_defs.py).

No AWX is reachable from the test machine. What is real here:

- the awx.awx modules' argument specs, read from the modules' source: the awx.awx collection
  installed beside ours (.collections, when scripts/setup.sh extracted it), else the pinned
  ``ansible`` wheel in .state/wheels (ansible 12.3.0 ships awx.awx 24.6.1); without either the
  spec tests are skipped and say why;
- every awx.awx task of playbooks/awx_setup.yml, templated by Ansible with the definitions and
  each loop item, then validated by Ansible's ArgumentSpecValidator against those specs (types,
  choices, unknown options, mutually exclusive options), as the module would on the controller;
- every rrule parsed by python-dateutil's rrulestr (what AWX uses), after AWX's documented limits.
"""

from __future__ import annotations

import datetime
import glob
import os
import zipfile

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

import ansible_collections
from ansible_collections.gridengine.balancer.plugins.plugin_utils import awx_defs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
DEFS_FILE = os.path.join(ROOT, "playbooks", "vars", "awx_definitions.yml")
PLAYBOOK = os.path.join(ROOT, "playbooks", "awx_setup.yml")
AWX_PREFIX = "ansible_collections/awx/awx/"


def _awx_source():
    """(where, read(relative path) -> text) for the awx.awx collection, or (None, reason)."""
    for base in list(ansible_collections.__path__):
        coll = os.path.join(base, "awx", "awx")
        if os.path.isfile(os.path.join(coll, "plugins", "module_utils", "controller_api.py")):
            def read(rel, coll=coll):
                with open(os.path.join(coll, rel), encoding="utf-8") as handle:
                    return handle.read()
            return coll, read
    for whl in sorted(glob.glob(os.path.join(ROOT, ".state", "wheels", "ansible-*.whl"))):
        with zipfile.ZipFile(whl) as archive:
            files = dict((name[len(AWX_PREFIX):], archive.read(name).decode("utf-8"))
                         for name in archive.namelist()
                         if name.startswith(AWX_PREFIX + "plugins/") and name.endswith(".py"))
        if "plugins/module_utils/controller_api.py" in files:
            return whl, files.__getitem__
    return None, "awx.awx not found in .collections nor in an ansible wheel under .state/wheels"


AWX_WHERE, AWX_READ = _awx_source()
needs_awx = pytest.mark.skipif(AWX_WHERE is None, reason=str(AWX_READ))


def load_defs():
    with open(DEFS_FILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_play():
    with open(PLAYBOOK, encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    assert len(plays) == 1
    return plays[0]


def awx_tasks(play):
    out = []
    for task in play["tasks"]:
        modules = [k for k in task if k.startswith("awx.awx.")]
        assert len(modules) == 1, "every task of awx_setup.yml uses one awx.awx module (FQCN): %s" % task["name"]
        out.append((modules[0], task))
    return out


def trust(value):
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((k, trust(v)) for k, v in value.items())
    if isinstance(value, list):
        return [trust(v) for v in value]
    return value


def rendered_calls(defs, extra=None):
    """(module, params) for every awx.awx call the playbook makes, templated as Ansible would."""
    play = load_play()
    variables = dict(defs)
    variables.update(extra or {})
    defaults = play.get("module_defaults", {}).get("group/awx.awx.controller", {})
    calls = []
    for module, task in awx_tasks(play):
        templar = Templar(loader=DataLoader(), variables=variables)
        if "when" in task and not templar.evaluate_conditional(trust(task["when"])):
            continue
        items = templar.template(trust(task["loop"])) if "loop" in task else [None]
        for item in items:
            scoped = dict(variables, item=item) if item is not None else variables
            templar = Templar(loader=DataLoader(), variables=scoped)
            params = templar.template(trust(dict(defaults)))
            params.update(templar.template(trust(task[module])))
            calls.append((module, params))
    return calls


SPECS = {}


def spec_for(module):
    if module not in SPECS:
        name = module.split(".")[-1]
        SPECS[module] = awx_defs.full_spec(AWX_READ("plugins/modules/%s.py" % name),
                                           AWX_READ("plugins/module_utils/controller_api.py"))
    return SPECS[module]


def validate(module, params):
    spec = spec_for(module)
    validator = ArgumentSpecValidator(
        spec["argument_spec"],
        mutually_exclusive=spec.get("mutually_exclusive"),
        required_together=spec.get("required_together"),
        required_one_of=spec.get("required_one_of"),
        required_if=spec.get("required_if"),
        required_by=spec.get("required_by"),
    )
    return validator.validate(params)


# ---- the definitions and the playbook, against the real awx.awx specs -------------------------

@needs_awx
def test_specs_come_from_the_awx_collection_source():
    spec = spec_for("awx.awx.job_template")["argument_spec"]
    assert spec["allow_simultaneous"]["type"] == "bool"
    assert "concurrent_jobs_enabled" in spec["allow_simultaneous"]["aliases"]
    assert spec["job_slice_count"] == {"type": "int"}
    assert spec["extra_vars"] == {"type": "dict"}
    assert spec["controller_host"]["aliases"] == ["tower_host"]  # AUTH_ARGSPEC merged in
    assert "fallback" not in spec["controller_host"]
    assert spec_for("awx.awx.schedule")["argument_spec"]["rrule"] == {}
    assert spec_for("awx.awx.credential")["mutually_exclusive"]


@needs_awx
def test_every_task_of_awx_setup_passes_the_module_argument_spec():
    defs = load_defs()
    calls = rendered_calls(defs, extra={"awx_machine_credential_ssh_key": "-----BEGIN OPENSSH PRIVATE KEY-----"})
    modules = [m for m, _p in calls]
    assert modules == ["awx.awx.organization", "awx.awx.credential", "awx.awx.project", "awx.awx.inventory",
                       "awx.awx.inventory_source"] + ["awx.awx.job_template"] * len(defs["awx_job_templates"]) \
        + ["awx.awx.schedule"] * len(defs["awx_schedules"])
    for module, params in calls:
        result = validate(module, params)
        assert not result.error_messages, "%s %s: %s" % (module, params.get("name"), result.error_messages)
        assert set(params) <= set(spec_for(module)["argument_spec"]) | {
            a for o in spec_for(module)["argument_spec"].values() for a in o.get("aliases", [])}


@needs_awx
def test_the_job_templates_reach_awx_as_defined():
    defs = load_defs()
    jts = [p for m, p in rendered_calls(defs) if m == "awx.awx.job_template"]
    act = next(p for p in jts if p["name"] == "loadbalance-mycluster")
    validated = validate("awx.awx.job_template", act).validated_parameters
    assert validated["allow_simultaneous"] is False
    assert validated["job_slice_count"] == 1
    assert validated["job_type"] == "run"
    assert validated["extra_vars"]["cluster"] == "mycluster"
    assert validated["extra_vars"]["continuous"] is False
    assert validated["credentials"] == ["gridengine-qmaster-ssh"]
    assert validated["timeout"] == 1800
    # the credential task is skipped without a key (it must exist in AWX then)
    assert "awx.awx.credential" not in [m for m, _p in rendered_calls(defs)]


@needs_awx
@pytest.mark.parametrize("module, params, words", [
    ("awx.awx.job_template", {"name": "x", "allow_simultaneous": "sometimes"}, "allow_simultaneous"),
    ("awx.awx.job_template", {"name": "x", "job_slice_count": "two"}, "job_slice_count"),
    ("awx.awx.job_template", {"name": "x", "concurrency": 1}, "concurrency"),
    ("awx.awx.schedule", {"name": "x", "state": "running"}, "state"),
    ("awx.awx.project", {"name": "x", "scm_type": "cvs"}, "scm_type"),
    ("awx.awx.inventory_source", {"name": "x"}, "inventory"),
])
def test_the_validator_catches_what_awx_would_refuse(module, params, words):
    result = validate(module, params)
    assert result.error_messages and any(words in m for m in result.error_messages)


@needs_awx
def test_every_awx_module_the_playbook_uses_exists():
    for module, _task in awx_tasks(load_play()):
        assert "def main()" in AWX_READ("plugins/modules/%s.py" % module.split(".")[-1])


# ---- the safety rules --------------------------------------------------------------------------

def test_the_shipped_definitions_have_no_problem():
    assert awx_defs.check_definitions(load_defs()) == []


def test_the_loadbalance_schedule_fires_every_minute():
    defs = load_defs()
    sched = next(s for s in defs["awx_schedules"] if s["unified_job_template"] == "loadbalance-mycluster")
    assert sched["rrule"] == "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1"
    parsed = awx_defs.parse_rrule(sched["rrule"], count=1441)
    utc = datetime.timezone.utc
    assert parsed["dtstart"] == datetime.datetime(2026, 11, 23, 0, 0, tzinfo=utc)
    assert parsed["period"] == 60.0
    assert parsed["first"][0] == datetime.datetime(2026, 11, 23, 0, 0, tzinfo=utc)
    assert parsed["first"][-1] == datetime.datetime(2026, 11, 24, 0, 0, tzinfo=utc)  # 1440 polls a day
    # and after a given moment: the next minute
    later = awx_defs.parse_rrule(sched["rrule"], after=datetime.datetime(2027, 1, 1, 12, 0, 30, tzinfo=utc), count=2)
    assert later["first"] == [datetime.datetime(2027, 1, 1, 12, 1, tzinfo=utc),
                              datetime.datetime(2027, 1, 1, 12, 2, tzinfo=utc)]


@pytest.mark.parametrize("rrule, period", [
    ("DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=5", 300.0),
    ("DTSTART;TZID=Europe/Berlin:20261123T000000 RRULE:FREQ=MINUTELY;INTERVAL=2", 120.0),
    ("DTSTART:20261123T000000Z RRULE:FREQ=HOURLY;INTERVAL=1;COUNT=3", 3600.0),
    ("DTSTART:20261123T000000Z RRULE:FREQ=WEEKLY;INTERVAL=1;BYDAY=MO,WE,FR", None),
])
def test_rrules_awx_accepts(rrule, period):
    assert awx_defs.parse_rrule(rrule)["period"] == period


@pytest.mark.parametrize("rrule, words", [
    ("", "empty"),
    ("RRULE:FREQ=MINUTELY;INTERVAL=1", "DTSTART"),
    ("DTSTART:20261123T000000 RRULE:FREQ=MINUTELY;INTERVAL=1", "time zone"),
    ("DTSTART:20261123T000000Z DTSTART:20271123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1", "exactly one DTSTART"),
    ("DTSTART:20261123T000000Z", "needs an RRULE"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY", "INTERVAL"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=SECONDLY;INTERVAL=30", "SECONDLY"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=DAILY;INTERVAL=1;COUNT=2000", "COUNT over 999"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=DAILY;INTERVAL=1;COUNT=2;UNTIL=20270101T000000Z", "COUNT and UNTIL"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=MONTHLY;INTERVAL=1;BYDAY=1MO", "numeric prefix"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=YEARLY;INTERVAL=1;BYWEEKNO=20", "BYWEEKNO"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1 EXDATE:20261123T000100Z", "EXDATE"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=REGULARLY;INTERVAL=1", "dateutil"),
    ("DTSTART:20261123T000000Z RRULE:FREQ=DAILY;INTERVAL=1;UNTIL=20200101T000000Z", "never fires"),
])
def test_rrules_awx_refuses(rrule, words):
    with pytest.raises(ValueError, match=words):
        awx_defs.parse_rrule(rrule)


def broken(**changes):
    defs = load_defs()
    for path, value in changes.items():
        kind, index, key = path.split("__")
        target = defs[kind][int(index)] if index.isdigit() else defs[kind]
        if value is KeyError:
            target.pop(key)
        else:
            target[key] = value
    return awx_defs.check_definitions(defs)


def problems_with(defs):
    return "\n".join(awx_defs.check_definitions(defs))


@pytest.mark.parametrize("changes, words", [
    ({"awx_job_templates__0__allow_simultaneous": True}, "allow_simultaneous must be false"),
    ({"awx_job_templates__0__allow_simultaneous": KeyError}, "allow_simultaneous must be false"),
    ({"awx_job_templates__0__job_slice_count": 3}, "job_slice_count must be 1"),
    ({"awx_job_templates__0__limit": "node001"}, "limit must be unset"),
    ({"awx_job_templates__0__ask_variables_on_launch": True}, "ask_variables_on_launch must be false"),
    ({"awx_job_templates__0__timeout": 0}, "timeout must be set"),
    ({"awx_job_templates__0__timeout": 3600}, "<= the lock's ttl 1800"),
    ({"awx_job_templates__0__credentials": []}, "machine credential gridengine-qmaster-ssh"),
    ({"awx_job_templates__0__project": "other"}, "project is 'other'"),
    ({"awx_job_templates__0__name": "poll-mycluster"}, "must start with loadbalance-mycluster"),
    ({"awx_job_templates__0__job_type": "scan"}, "job_type must be run or check"),
    ({"awx_job_templates__1__job_type": "run", "awx_job_templates__1__timeout": 600},
     "2 job templates act on it"),
    ({"awx_schedules__0__unified_job_template": "nothing"}, "is not one of awx_job_templates"),
    ({"awx_schedules__0__rrule": "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=2"},
     "fires every 120 s but loadbalance-mycluster polls with interval 60 s"),
    ({"awx_schedules__0__rrule": "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1;BYHOUR=8,9,10"},
     "constant period"),
    ({"awx_schedules__0__rrule": "DTSTART:20261123T000000Z RRULE:FREQ=SECONDLY;INTERVAL=60"}, "SECONDLY"),
    ({"awx_schedules__0__extra_data": {"cluster": "other"}}, "extra_data must not set cluster"),
    ({"awx_inventory_source__x__source_project": "other"}, "source_project is not gridengine-site"),
])
def test_each_rule_is_enforced(changes, words):
    found = broken(**changes)
    assert any(words in p for p in found), found


def test_continuous_polling_is_refused_in_any_spelling():
    defs = load_defs()
    defs["awx_job_templates"][0]["extra_vars"]["continuous"] = "yes"
    assert "continuous must be false" in problems_with(defs)


def test_the_cluster_must_be_a_safe_name():
    defs = load_defs()
    defs["awx_job_templates"][0]["extra_vars"]["cluster"] = "my cluster; rm"
    assert "extra_vars.cluster must name the cluster" in problems_with(defs)


def test_a_second_enabled_schedule_is_refused_and_a_disabled_one_is_fine():
    defs = load_defs()
    extra = dict(defs["awx_schedules"][0], name="again")
    defs["awx_schedules"].append(extra)
    assert "2 enabled schedules" in problems_with(defs)
    extra["enabled"] = False
    assert awx_defs.check_definitions(defs) == []


def test_a_longer_interval_matches_a_longer_period():
    defs = load_defs()
    defs["awx_job_templates"][0]["extra_vars"]["interval"] = 300
    defs["awx_schedules"][0]["rrule"] = "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=5"
    assert awx_defs.check_definitions(defs) == []


def test_a_higher_lock_ttl_allows_a_longer_timeout():
    defs = load_defs()
    defs["awx_job_templates"][0]["extra_vars"]["lock_ttl"] = 3600
    defs["awx_job_templates"][0]["timeout"] = 3600
    assert awx_defs.check_definitions(defs) == []


def test_missing_sections_are_named():
    found = awx_defs.check_definitions({"awx_organization": {"name": "hpc"}})
    assert any("awx_project" in p for p in found) and any("awx_job_templates" in p for p in found)


# ---- the spec reader, on inline sources --------------------------------------------------------

MODULE_SRC = '''
from ..module_utils.controller_api import ControllerAPIModule

def helper():
    pass

def main():
    argument_spec = dict(
        name=dict(required=True),
        kind=dict(choices=['a', 'b'], default='a'),
        count=dict(type='int'),
        tags=dict(type='list', elements='str'),
    )
    mutually_exclusive = [('count', 'tags')]
    module = ControllerAPIModule(argument_spec=argument_spec, mutually_exclusive=mutually_exclusive)
    module.exit_json()
'''

AUTH_SRC = '''
from ansible.module_utils.basic import AnsibleModule, env_fallback

class ControllerModule(AnsibleModule):
    AUTH_ARGSPEC = dict(
        controller_host=dict(required=False, aliases=['tower_host'], fallback=(env_fallback, ['CONTROLLER_HOST'])),
        request_timeout=dict(type='float', required=False),
    )
'''


def test_module_spec_reads_main_and_the_auth_options():
    spec = awx_defs.full_spec(MODULE_SRC, AUTH_SRC)
    assert spec["argument_spec"]["kind"] == {"choices": ["a", "b"], "default": "a"}
    assert spec["argument_spec"]["controller_host"] == {"required": False, "aliases": ["tower_host"]}
    assert spec["mutually_exclusive"] == [("count", "tags")]
    with pytest.raises(ValueError, match="main"):
        awx_defs.module_spec("x = 1\n")
    with pytest.raises(ValueError, match="ControllerAPIModule"):
        awx_defs.module_spec("def main():\n    x = 1\n")
    with pytest.raises(ValueError, match="AUTH_ARGSPEC"):
        awx_defs.auth_spec("class Other:\n    pass\n")
