# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX definitions, checked offline (tests/unit/awx_defs.py).

playbooks/vars/awx_definitions.yml is in infra.aap_configuration's variable layout
(controller_templates, controller_schedules, ...) and playbooks/awx_setup.yml applies it with the
awx.awx modules. No AWX is reachable from the test machine. What is real here:

- the awx.awx modules' argument specs, read from the modules' source: the awx.awx collection
  installed beside ours (.collections, when scripts/setup.sh extracted it), else the pinned
  ``ansible`` wheel in .state/wheels (ansible 12.3.0 ships awx.awx 24.6.1); without either the
  spec tests are skipped and say why;
- every field of every entry is an option of the module that applies it, and reaches it: every
  awx.awx task of playbooks/awx_setup.yml is templated by Ansible with the definitions and each
  loop item, then validated by Ansible's ArgumentSpecValidator against those specs (types,
  choices, unknown options, mutually exclusive options), as the module would on the controller;
- the survey as AWX's API validates it and as AWX applies its defaults, its variables among
  those playbooks/loadbalance.yml (and what it imports) reads;
- every rrule parsed by python-dateutil's rrulestr (what AWX uses), after AWX's documented limits;
- no literal secret: the credentials' secret inputs are variables (a vault).
"""

from __future__ import annotations

import copy
import datetime
import glob
import os
import re
import zipfile

import pytest
import yaml

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

import ansible_collections
from ansible_collections.gridengine.balancer.tests.unit import awx_defs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFS_FILE = os.path.join(ROOT, "playbooks", "vars", "awx_definitions.yml")
PLAYBOOK = os.path.join(ROOT, "playbooks", "awx_setup.yml")
AWX_PREFIX = "ansible_collections/awx/awx/"
# what a vault gives (-e @vault.yml); dummy values, never real keys
VAULT = {
    "vault_gridengine_qmaster_ssh_key": "test-only ssh key text",
    "vault_gridengine_aws_access_key_id": "test-only-key-id",
    "vault_gridengine_aws_secret_access_key": "test-only-secret",
}


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
        if not modules:
            # the one other task: the credentials' secrets are there, checked outside no_log
            assert "ansible.builtin.assert" in task, "awx_setup.yml: %s uses no awx.awx module" % task["name"]
            continue
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
    variables = trust(dict(defs))
    variables.update(extra if extra is not None else VAULT)
    defaults = play.get("module_defaults", {}).get("group/awx.awx.controller", {})
    calls = []
    for module, task in awx_tasks(play):
        templar = Templar(loader=DataLoader(), variables=variables)
        loop_var = (task.get("loop_control") or {}).get("loop_var", "item")
        items = templar.template(trust(task["loop"])) if "loop" in task else [None]
        for item in items:
            scoped = dict(variables, **{loop_var: item}) if item is not None else variables
            templar = Templar(loader=DataLoader(), variables=scoped)
            if "when" in task and not templar.evaluate_conditional(trust(task["when"])):
                continue
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


def own_specs():
    """{module: argument_spec} of the modules of the layout, without the connection options."""
    return dict((module, awx_defs.module_spec(AWX_READ("plugins/modules/%s.py" % module.rsplit(".", 1)[-1]))["argument_spec"])
                for _var, module in awx_defs.LAYOUT)


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


def _imported(path, seen):
    """playbooks/loadbalance.yml and every file it imports or includes (playbooks, task files,
    vars files), followed by name; templated names are skipped."""
    if path in seen or not os.path.isfile(path):
        return
    seen.add(path)
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    refs = []

    def visit(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("ansible.builtin.import_playbook", "import_playbook", "ansible.builtin.import_tasks",
                           "import_tasks", "ansible.builtin.include_tasks", "include_tasks", "file") \
                        and isinstance(value, str):
                    refs.append(value)
                elif key == "vars_files" and isinstance(value, list):
                    refs.extend(v for v in value if isinstance(v, str))
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)
    visit(data)
    for ref in refs:
        if "{{" in ref:
            continue
        for base in (os.path.dirname(path), os.path.join(ROOT, "playbooks")):
            candidate = os.path.normpath(os.path.join(base, ref))
            if os.path.isfile(candidate):
                _imported(candidate, seen)
                break


def loadbalance_variables():
    """The variables the job templates' playbook (gridengine.balancer.loadbalance) reads."""
    seen = set()
    _imported(os.path.join(ROOT, "playbooks", "loadbalance.yml"), seen)
    documents = []
    for path in sorted(seen):
        with open(path, encoding="utf-8") as handle:
            documents.append(yaml.safe_load(handle))
    return awx_defs.playbook_variables(documents)


PLAYBOOK_VARS = loadbalance_variables()


def problems_of(defs):
    return awx_defs.check_definitions(defs, playbook_vars=PLAYBOOK_VARS)


# ---- the layout, the definitions and the playbook, against the real awx.awx specs ---------------

def test_the_definitions_use_the_infra_aap_configuration_variables():
    defs = load_defs()
    assert list(defs) == [var for var, _module in awx_defs.LAYOUT]
    assert [t["name"] for t in defs["controller_templates"]] == ["loadbalance-mycluster", "loadbalance-mycluster-plan"]


@needs_awx
def test_specs_come_from_the_awx_collection_source():
    spec = spec_for("awx.awx.job_template")["argument_spec"]
    assert spec["allow_simultaneous"]["type"] == "bool"
    assert "concurrent_jobs_enabled" in spec["allow_simultaneous"]["aliases"]
    assert spec["job_slice_count"] == {"type": "int"}
    assert spec["extra_vars"] == {"type": "dict"}
    assert spec["survey_spec"] == {"type": "dict"}
    assert spec["survey_enabled"] == {"type": "bool"}
    assert spec["controller_host"]["aliases"] == ["tower_host"]  # AUTH_ARGSPEC merged in
    assert "fallback" not in spec["controller_host"]
    assert spec_for("awx.awx.schedule")["argument_spec"]["rrule"] == {}
    assert spec_for("awx.awx.execution_environment")["argument_spec"]["pull"]["choices"] == ["always", "missing", "never"]
    assert spec_for("awx.awx.credential")["mutually_exclusive"]


@needs_awx
def test_every_field_of_every_entry_is_an_option_of_its_module():
    assert awx_defs.unknown_fields(load_defs(), own_specs()) == []


@needs_awx
def test_every_task_of_awx_setup_passes_the_module_argument_spec():
    defs = load_defs()
    calls = rendered_calls(defs)
    expected = []
    for var, module in awx_defs.LAYOUT:
        expected += [module] * len(defs[var])
    assert [m for m, _p in calls] == expected
    for module, params in calls:
        result = validate(module, params)
        assert not result.error_messages, "%s %s: %s" % (module, params.get("name"), result.error_messages)
        assert set(params) <= set(spec_for(module)["argument_spec"]) | {
            a for o in spec_for(module)["argument_spec"].values() for a in o.get("aliases", [])}


@needs_awx
def test_awx_setup_passes_every_field_of_every_entry_unchanged():
    """What infra.aap_configuration's roles would apply, awx_setup.yml applies too: no field of an
    entry is dropped on the way (templated like the play templates it: the vault's values)."""
    defs = load_defs()
    calls = iter(rendered_calls(defs))
    templar = Templar(loader=DataLoader(), variables=dict(VAULT))
    for var, module in awx_defs.LAYOUT:
        for entry in defs[var]:
            called, params = next(calls)
            assert called == module
            for key, value in templar.template(trust(entry)).items():
                assert params.get(key) == value, "%s %s: %s does not reach %s" % (var, entry["name"], key, module)


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
    assert validated["credentials"] == ["gridengine-qmaster-ssh", "gridengine-balancer-aws"]
    assert validated["execution_environment"] == "gridengine-balancer-ee"
    assert validated["timeout"] == 1800
    assert validated["survey_enabled"] is True
    assert [q["variable"] for q in validated["survey_spec"]["spec"]] == ["cluster", "min_nodes", "max_nodes"]


@needs_awx
def test_the_credentials_reach_awx_with_the_vaults_values():
    creds = dict((p["name"], p) for m, p in rendered_calls(load_defs()) if m == "awx.awx.credential")
    assert creds["gridengine-balancer-aws"]["credential_type"] == "Amazon Web Services"
    assert creds["gridengine-balancer-aws"]["inputs"] == {"username": "test-only-key-id", "password": "test-only-secret"}
    assert creds["gridengine-qmaster-ssh"]["inputs"]["ssh_key_data"] == "test-only ssh key text"
    assert "test-only-secret" not in open(DEFS_FILE, encoding="utf-8").read()


def test_a_missing_secret_fails_naming_its_variable_before_the_no_log_task():
    """The assert before the credential task templates each credential's inputs outside no_log:
    without the vault the run stops there, naming the variable (no_log would hide it)."""
    play = load_play()
    tasks = [t for t in play["tasks"] if "credentials" in t.get("tags", [])]
    assert [("ansible.builtin.assert" in t, t.get("no_log")) for t in tasks] == [(True, None), (False, True)]
    check = tasks[0]
    defs = load_defs()
    loop_var = check["loop_control"]["loop_var"]
    for index, cred in enumerate(defs["controller_credentials"]):
        given = Templar(loader=DataLoader(), variables=dict(trust(defs), **dict(VAULT, **{loop_var: index})))
        assert given.evaluate_conditional(trust(check["ansible.builtin.assert"]["that"]))
        missing = Templar(loader=DataLoader(), variables=dict(trust(defs), **{loop_var: index}))
        with pytest.raises(AnsibleError, match="vault_gridengine_"):
            missing.evaluate_conditional(trust(check["ansible.builtin.assert"]["that"]))


def test_the_play_connects_with_infra_aap_configurations_variables():
    defaults = load_play()["module_defaults"]["group/awx.awx.controller"]
    assert defaults["controller_host"] == "{{ aap_hostname | default(omit) }}"
    assert defaults["controller_oauthtoken"] == "{{ aap_token | default(omit) }}"
    assert defaults["validate_certs"] == "{{ aap_validate_certs | default(omit) }}"


def test_the_tags_are_the_dispatch_roles():
    tags = [t.get("tags") for t in load_play()["tasks"]]
    assert tags == [["organizations"], ["execution_environments"], ["credentials"], ["credentials"], ["projects"],
                    ["inventories"], ["inventory_sources"], ["job_templates"], ["schedules"]]


@needs_awx
@pytest.mark.parametrize("module, params, words", [
    ("awx.awx.job_template", {"name": "x", "allow_simultaneous": "sometimes"}, "allow_simultaneous"),
    ("awx.awx.job_template", {"name": "x", "job_slice_count": "two"}, "job_slice_count"),
    ("awx.awx.job_template", {"name": "x", "concurrency": 1}, "concurrency"),
    ("awx.awx.job_template", {"name": "x", "survey_spec": "cluster?"}, "survey_spec"),
    ("awx.awx.schedule", {"name": "x", "state": "running"}, "state"),
    ("awx.awx.project", {"name": "x", "scm_type": "cvs"}, "scm_type"),
    ("awx.awx.execution_environment", {"name": "x", "pull": "sometimes"}, "pull"),
    ("awx.awx.inventory_source", {"name": "x"}, "inventory"),
])
def test_the_validator_catches_what_awx_would_refuse(module, params, words):
    result = validate(module, params)
    assert result.error_messages and any(words in m for m in result.error_messages)


@needs_awx
def test_every_awx_module_the_playbook_uses_exists():
    for module, _task in awx_tasks(load_play()):
        assert "def main()" in AWX_READ("plugins/modules/%s.py" % module.split(".")[-1])


def test_the_ee_image_is_the_collections_version():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    ee = load_defs()["controller_execution_environments"][0]
    assert ee["image"].endswith(":" + version)


# ---- the survey ---------------------------------------------------------------------------------

def test_the_playbook_reads_the_surveys_variables():
    assert {"cluster", "min_nodes", "max_nodes", "interval", "lock_ttl", "continuous"} <= PLAYBOOK_VARS
    assert "max_node" not in PLAYBOOK_VARS


def test_a_scheduled_job_gets_the_surveys_defaults():
    """AWX: template extra_vars, then the survey's defaults, then the launch's answers."""
    jt = load_defs()["controller_templates"][0]
    assert awx_defs.survey_defaults(jt) == {"cluster": "mycluster", "min_nodes": 1, "max_nodes": 10}
    jt["survey_enabled"] = False
    assert awx_defs.survey_defaults(jt) == {}


@pytest.mark.parametrize("variable, value, words", [
    ("cluster", "mycluster", None),
    ("cluster", "othercluster", "not one of its choices"),
    ("min_nodes", 0, None),
    ("min_nodes", -1, "below its min 0"),
    ("max_nodes", 100, None),
    ("max_nodes", 101, "above its max 100"),
    ("max_nodes", "10", "not an integer"),
    ("max_nodes", True, "not an integer"),
])
def test_answers_as_awx_validates_them(variable, value, words):
    jt = load_defs()["controller_templates"][0]
    question = next(q for q in jt["survey_spec"]["spec"] if q["variable"] == variable)
    errors = awx_defs.survey_value_errors(question, value)
    assert (errors == []) if words is None else any(words in e for e in errors), errors


# ---- rrules -------------------------------------------------------------------------------------

def test_the_loadbalance_schedule_fires_every_minute():
    defs = load_defs()
    sched = next(s for s in defs["controller_schedules"] if s["unified_job_template"] == "loadbalance-mycluster")
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


# ---- broken definitions, one rule each ------------------------------------------------------------

DELETE = object()
PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def mutate(defs, path, value):
    """Set (or with DELETE remove) the value at ``path`` (``controller_templates[0].survey_spec.name``)."""
    parts = [int(i) if i else k for k, i in PATH_PART.findall(path)]
    target = defs
    for part in parts[:-1]:
        target = target[part]
    if value is DELETE:
        del target[parts[-1]]
    else:
        target[parts[-1]] = value
    return defs


def broken(changes):
    defs = copy.deepcopy(load_defs())
    for path, value in changes.items():
        mutate(defs, path, value if value is DELETE else copy.deepcopy(value))
    return defs


def test_the_shipped_definitions_have_no_problem():
    assert problems_of(load_defs()) == []


JT = "controller_templates[0]"
SURVEY = JT + ".survey_spec"
Q_CLUSTER, Q_MIN, Q_MAX = SURVEY + ".spec[0]", SURVEY + ".spec[1]", SURVEY + ".spec[2]"
AWS = "controller_credentials[1]"
SCHED = "controller_schedules[0]"

BROKEN = [
    # the survey
    ("survey type", {Q_MIN + ".type": "number"}, "type 'number' is not one of"),
    ("survey default of the wrong type", {Q_MAX + ".default": "10"}, "default '10' is not of type integer"),
    ("survey default out of bounds", {Q_MAX + ".default": 500}, "above its max 100 (AWX would drop it silently"),
    ("survey default missing", {Q_MIN + ".default": DELETE}, "no default"),
    ("survey min above max", {Q_MIN + ".min": 50, Q_MIN + ".max": 5}, "min 50 is above max 5"),
    ("survey min not an integer", {Q_MAX + ".min": 1.5}, "min must be an integer"),
    ("survey number without bounds", {Q_MAX + ".max": DELETE}, "needs both min and max"),
    ("survey variable the playbook does not read", {Q_MAX + ".variable": "max_node"}, "reads no variable max_node"),
    ("survey variable not a name", {Q_MAX + ".variable": "max-nodes"}, "is not a variable name"),
    ("survey variable asked twice", {Q_MIN + ".variable": "max_nodes"}, "asked twice"),
    ("survey asks continuous", {Q_MAX + ".variable": "continuous"}, "must not ask continuous"),
    ("survey asks interval", {Q_MAX + ".variable": "interval"}, "must not ask interval"),
    ("survey required not a bool", {Q_MIN + ".required": "yes"}, "required must be true or false"),
    ("survey without description", {SURVEY + ".description": DELETE}, "survey_spec.description must be a string"),
    ("survey without questions", {SURVEY + ".spec": []}, "has no question"),
    ("survey enabled without spec", {JT + ".survey_spec": DELETE}, "survey_enabled without a survey_spec"),
    ("survey password question", {Q_MIN: {"question_name": "p", "required": False, "type": "password",
                                          "variable": "min_nodes", "default": "x"}}, "no password questions"),
    ("survey offers another cluster", {Q_CLUSTER + ".choices": ["mycluster", "othercluster"]},
     "multiplechoice of this template's cluster alone"),
    ("survey cluster as free text", {Q_CLUSTER + ".type": "text"}, "multiplechoice of this template's cluster alone"),
    ("survey cluster default not a choice", {Q_CLUSTER + ".default": "other"}, "not one of its choices"),
    ("survey min_nodes below the balancer's floor", {Q_MAX + ".min": 0}, "lets max_nodes go down to 0"),
    ("survey min_nodes reaches above every max_nodes", {Q_MIN + ".max": 200}, "above the largest max_nodes 100"),
    ("survey defaults min above max", {Q_MIN + ".default": 20, Q_MAX + ".default": 5}, "min_nodes 20 is above max_nodes 5"),
    ("survey default disagrees with extra_vars", {JT + ".extra_vars.max_nodes": 12}, "the survey's default 10 wins"),
    ("survey as integer of the wrong type", {Q_MAX + ".type": "float"}, "it must be integer"),
    # unknown field (the module-independent part; the awx.awx part is the next test)
    ("credential input unknown to its type", {AWS + ".inputs.secret_key": "{{ vault_x }}"},
     "Amazon Web Services has no input secret_key"),
    ("credential type unknown", {AWS + ".credential_type": "AWS"}, "credential_type 'AWS' is not one"),
    ("credential required input missing", {AWS + ".inputs.username": DELETE}, "needs the input username"),
    # literal secrets
    ("literal AWS secret", {AWS + ".inputs.password": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
     "input password is secret in AWX"),
    ("literal secret with a literal fallback", {AWS + ".inputs.password": "{{ vault_x | default('abc') }}"},
     "input password is secret in AWX"),
    ("literal AWS key id", {AWS + ".inputs.username": "AKIAIOSFODNN7EXAMPLE"}, "holds an AWS access key id"),
    ("literal private key", {"controller_credentials[0].inputs.ssh_key_data": "-----BEGIN OPENSSH PRIVATE KEY-----\nx"},
     "holds a private key"),
    ("literal token in extra_vars", {JT + ".extra_vars.api_token": "abc123"}, "a literal secret"),
    # rrules
    ("rrule without time zone", {SCHED + ".rrule": "DTSTART:20261123T000000 RRULE:FREQ=MINUTELY;INTERVAL=1"}, "time zone"),
    ("rrule every 30 s", {SCHED + ".rrule": "DTSTART:20261123T000000Z RRULE:FREQ=SECONDLY;INTERVAL=30"}, "SECONDLY"),
    ("rrule unparseable", {SCHED + ".rrule": "DTSTART:20261123T000000Z RRULE:FREQ=OFTEN;INTERVAL=1"}, "dateutil"),
    ("rrule period not the interval", {SCHED + ".rrule": "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=2"},
     "fires every 120 s but loadbalance-mycluster polls with interval 60 s"),
    ("rrule pausing at night",
     {SCHED + ".rrule": "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1;BYHOUR=8,9,10"}, "constant period"),
    # the EE
    ("EE image without tag", {"controller_execution_environments[0].image": "registry.example.org/ee"}, "has no tag"),
    ("EE image latest", {"controller_execution_environments[0].image": "registry.example.org:5000/ee:latest"},
     "not latest"),
    ("template without EE", {JT + ".execution_environment": DELETE}, "execution_environment None is not one of"),
    ("template with an unknown EE", {JT + ".execution_environment": "awx-ee"}, "execution_environment 'awx-ee'"),
    # references and the safety rules
    ("template without the machine credential", {JT + ".credentials": ["gridengine-balancer-aws"]},
     "must include a Machine credential"),
    ("template with an unknown credential", {JT + ".credentials": ["gridengine-qmaster-ssh", "aws"]},
     "credential 'aws' is not one of"),
    ("template with two credentials of a type", {JT + ".credentials": ["gridengine-qmaster-ssh", "gridengine-qmaster-ssh"]},
     "two Machine credentials"),
    ("template project unknown", {JT + ".project": "other"}, "project 'other' is not one of"),
    ("organization unknown", {"controller_projects[0].organization": "ops"}, "organization 'ops' is not one of"),
    ("inventory source of another project", {"controller_inventory_sources[0].source_project": "other"},
     "source_project 'other'"),
    ("allow_simultaneous true", {JT + ".allow_simultaneous": True}, "allow_simultaneous must be false"),
    ("allow_simultaneous unset", {JT + ".allow_simultaneous": DELETE}, "allow_simultaneous must be false"),
    ("job slicing", {JT + ".job_slice_count": 3}, "job_slice_count must be 1"),
    ("a limit", {JT + ".limit": "node001"}, "limit must be unset"),
    ("prompt for variables", {JT + ".ask_variables_on_launch": True}, "ask_variables_on_launch must be false"),
    ("no timeout", {JT + ".timeout": 0}, "timeout must be set"),
    ("timeout beyond the lock", {JT + ".timeout": 3600}, "<= the lock's ttl 1800"),
    ("continuous polling", {JT + ".extra_vars.continuous": "yes"}, "continuous must be false"),
    ("a cluster name with spaces", {JT + ".extra_vars.cluster": "my cluster; rm", JT + ".survey_enabled": False},
     "cluster must name the cluster"),
    ("template name without its cluster", {JT + ".name": "poll-mycluster", SCHED + ".unified_job_template": "poll-mycluster"},
     "must start with loadbalance-mycluster"),
    ("job_type scan", {JT + ".job_type": "scan"}, "job_type must be run or check"),
    ("two acting templates", {"controller_templates[1].job_type": "run"}, "2 job templates act on it"),
    ("schedule of nothing", {SCHED + ".unified_job_template": "nothing"}, "is not one of controller_templates"),
    ("schedule sets the cluster", {SCHED + ".extra_data": {"cluster": "other"}}, "extra_data must not set cluster"),
    ("schedule sets an unprompted variable", {SCHED + ".extra_data": {"profile": "starcluster"}},
     "extra_data.profile is neither a survey question"),
    ("schedule answers out of bounds", {SCHED + ".extra_data": {"max_nodes": 1000}}, "above its max 100"),
    ("empty layout variable", {"controller_schedules": []}, "controller_schedules: a non-empty list is needed"),
]


@pytest.mark.parametrize("changes, words", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_a_broken_definition_is_named(changes, words):
    found = problems_of(broken(changes))
    assert any(words in p for p in found), found


@needs_awx
@pytest.mark.parametrize("path, value, words", [
    (JT + ".concurrent", 1, "'concurrent' is not an option of awx.awx.job_template"),
    (JT + ".survey", {"name": "s"}, "'survey' is not an option of awx.awx.job_template"),
    (SCHED + ".frequency", "minutely", "'frequency' is not an option of awx.awx.schedule"),
    ("controller_execution_environments[0].pull_policy", "missing",
     "'pull_policy' is not an option of awx.awx.execution_environment"),
    (AWS + ".secret", "{{ vault_x }}", "'secret' is not an option of awx.awx.credential"),
])
def test_an_unknown_field_is_named(path, value, words):
    """A field the awx.awx module does not have (infra.aap_configuration's roles would drop or
    refuse it; awx_setup.yml would not pass it): named, with the module. (``survey`` is an alias of
    infra.aap_configuration's role, not of awx.awx.job_template: the file uses survey_spec.)"""
    found = awx_defs.unknown_fields(mutate(copy.deepcopy(load_defs()), path, value), own_specs())
    assert any(words in p for p in found), found


def test_a_longer_interval_matches_a_longer_period():
    defs = broken({JT + ".extra_vars.interval": 300,
                   SCHED + ".rrule": "DTSTART:20261123T000000Z RRULE:FREQ=MINUTELY;INTERVAL=5"})
    assert problems_of(defs) == []


def test_a_higher_lock_ttl_allows_a_longer_timeout():
    assert problems_of(broken({JT + ".extra_vars.lock_ttl": 3600, JT + ".timeout": 3600})) == []


def test_a_second_enabled_schedule_is_refused_and_a_disabled_one_is_fine():
    defs = load_defs()
    extra = dict(defs["controller_schedules"][0], name="again")
    defs["controller_schedules"].append(extra)
    assert any("2 enabled schedules" in p for p in problems_of(defs))
    extra["enabled"] = False
    assert problems_of(defs) == []


def test_a_schedule_may_answer_the_survey():
    assert problems_of(broken({SCHED + ".extra_data": {"max_nodes": 20}})) == []


def test_without_a_survey_the_extra_vars_hold_the_limits():
    defs = broken({JT + ".survey_enabled": False, JT + ".extra_vars.min_nodes": 1, JT + ".extra_vars.max_nodes": 10})
    assert problems_of(defs) == []
    defs = broken({JT + ".survey_enabled": False, JT + ".extra_vars.min_nodes": 11, JT + ".extra_vars.max_nodes": 10})
    assert any("min_nodes 11 is above max_nodes 10" in p for p in problems_of(defs))


def test_missing_sections_are_named():
    found = awx_defs.check_definitions({"aap_organizations": [{"name": "hpc"}]})
    assert any("controller_projects" in p for p in found) and any("controller_templates" in p for p in found)


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


def test_playbook_variables_reads_templates_and_conditionals():
    found = awx_defs.playbook_variables([[{"name": "x", "when": "alpha | default(false)", "debug": {
        "msg": "{{ beta ~ item }}"}, "vars": {"gamma": "{% if delta %}1{% endif %}"}, "plain": "epsilon"}]])
    assert found == {"alpha", "beta", "item", "delta"}
