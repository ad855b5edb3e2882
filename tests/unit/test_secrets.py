# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets never in logs, statistics or state (issue 7 part 7; docs/reliability/privileges.md).

* Every module option, role option and task argument that holds a secret (AWS secret key and
  session token, AWX/controller token or password, ssh key data) is ``no_log`` where it is
  declared, or the task that passes it is ``no_log``.
* The writers of the balancer's files keep to their own fields: the statistics CSV
  (plugin_utils/stats.py), the elastic and reconcile state files (written through
  balancer_state) and the journal never hold a secret that sits in the task's environment, in an
  old state file or in an extra field of the input.
"""

from __future__ import annotations

import ast
import json
import os
import re

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.action import elastic_plan as elastic_action
from ansible_collections.gridengine.balancer.plugins.action import reconcile_plan as reconcile_action
from ansible_collections.gridengine.balancer.plugins.modules import balancer_journal
from ansible_collections.gridengine.balancer.plugins.plugin_utils import stats
from ansible_collections.gridengine.balancer.tests.unit.plugins.action.test_elastic_plan import (
    FakeQmaster, args as elastic_args)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
COLLECTIONS = os.path.join(REPO, ".collections", "ansible_collections")

SECRET_NAME = re.compile(r"secret|password|passw|passphrase|(?<!lock_)token|oauth|private_key|ssh_key_data|"
                         r"session_token|access_key|api_key|credential_key", re.I)
# options whose name looks secret and that are not: why
NOT_SECRET = {
    ("gridengine.balancer.balancer_lock", "token"):
        "the lock's ownership token, printed by design so that a stuck lock can be released by hand; "
        "it grants nothing",
}
SENTINEL = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYSENTINEL"


# ----------------------------------------------------------------------------- declarations

def _argument_specs(path):
    """``{option: {keyword: value}}`` of every ``name=dict(...)`` / ``"name": dict(...)`` in a
    Python file (the argument specs, also nested ones), also given to a spec builder
    (``cluster_file_spec(name=dict(...))``, ``en.ec2_argument_spec(...)``: a call whose name
    ends in ``_spec``)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    specs = {}

    def keywords(call):
        out = {}
        for kw in call.keywords:
            if kw.arg and isinstance(kw.value, ast.Constant):
                out[kw.arg] = kw.value.value
        return out

    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        name = getattr(func, "id", None) or getattr(func, "attr", None) or ""
        if isinstance(node, ast.Call) and (name == "dict" or name.endswith("_spec")):
            for kw in node.keywords:
                if kw.arg and isinstance(kw.value, ast.Call) and getattr(kw.value.func, "id", None) == "dict":
                    specs.setdefault(kw.arg, keywords(kw.value))
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Call) \
                        and getattr(value.func, "id", None) == "dict":
                    specs.setdefault(key.value, keywords(value))
    return specs


def _doc_options(path):
    """Options of a module's DOCUMENTATION (suboptions included), ``{name: option}``."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            try:
                doc = yaml.safe_load(node.value.value)
            except yaml.YAMLError:
                return {}       # a broken DOCUMENTATION is ansible-test sanity's to report
            out = {}
            stack = [doc.get("options") or {}]
            while stack:
                for name, opt in stack.pop().items():
                    out[name] = opt
                    if isinstance(opt.get("suboptions"), dict):
                        stack.append(opt["suboptions"])
            return out
    return {}


def _modules():
    base = os.path.join(REPO, "plugins", "modules")
    return sorted(os.path.join(base, n) for n in os.listdir(base) if n.endswith(".py"))


@pytest.mark.parametrize("path", _modules(), ids=os.path.basename)
def test_module_secret_options_are_no_log(path):
    name = "gridengine.balancer." + os.path.basename(path)[:-3]
    specs = _argument_specs(path)
    docs = _doc_options(path)
    for option in sorted(set(specs) | set(docs)):
        if not SECRET_NAME.search(option) or (name, option) in NOT_SECRET:
            continue
        # a spec in main(), or one built from DOCUMENTATION (the action plugins keep no_log)
        no_log = specs.get(option, {}).get("no_log", docs.get(option, {}).get("no_log"))
        assert no_log is True, "%s: option %s holds a secret and is not no_log" % (name, option)


def test_declared_non_secrets_say_so_explicitly():
    for (module, option), why in NOT_SECRET.items():
        path = os.path.join(REPO, "plugins", "modules", module.rsplit(".", 1)[1] + ".py")
        assert _argument_specs(path)[option].get("no_log") is False, (module, option, why)


def test_the_scan_finds_secret_options():
    """The AWS modules get secret_key and session_token from amazon.aws's common spec, no_log there;
    awx.awx's controller_oauthtoken and controller_password are no_log in its own spec."""
    aws = _argument_specs(os.path.join(COLLECTIONS, "amazon", "aws", "plugins", "module_utils", "modules.py"))
    assert aws["secret_key"]["no_log"] is True and aws["session_token"]["no_log"] is True
    awx = _argument_specs(os.path.join(COLLECTIONS, "awx", "awx", "plugins", "module_utils", "controller_api.py"))
    assert awx["controller_oauthtoken"]["no_log"] is True and awx["controller_password"]["no_log"] is True
    for module in ("ec2_node", "ec2_node_info"):
        with open(os.path.join(REPO, "plugins", "modules", module + ".py"), encoding="utf-8") as handle:
            assert "AnsibleAWSModule(" in handle.read()


def _role_specs():
    roles = os.path.join(REPO, "roles")
    for role in sorted(os.listdir(roles)):
        path = os.path.join(roles, role, "meta", "argument_specs.yml")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                yield role, yaml.safe_load(handle)["argument_specs"]


def test_role_secret_options_are_no_log():
    found = []
    for role, entry_points in _role_specs():
        for entry, spec in entry_points.items():
            for option, opt in (spec.get("options") or {}).items():
                if SECRET_NAME.search(option):
                    found.append(option)
                    assert opt.get("no_log") is True, "%s %s: %s holds a secret and is not no_log" % (role, entry, option)
    assert "provider_ec2_secret_key" in found


def _task_files():
    for top in ("roles", "playbooks"):
        for dirpath, dummy, names in os.walk(os.path.join(REPO, top)):
            if "/templates" in dirpath or "/meta" in dirpath or "/defaults" in dirpath or "/vars" in dirpath:
                continue
            for name in sorted(names):
                if name.endswith(".yml"):
                    yield os.path.join(dirpath, name)


def _tasks(data):
    out = []
    stack = list(data) if isinstance(data, list) else []
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            if isinstance(item.get(key), list):
                stack.extend(item[key])
        if "hosts" not in item:
            out.append(item)
    return out


# (module, option) pairs whose value is hidden by the module's own spec
NO_LOG_BY_MODULE = {
    ("gridengine.balancer.ec2_node", "secret_key"), ("gridengine.balancer.ec2_node_info", "secret_key"),
    ("gridengine.balancer.ec2_node", "access_key"), ("gridengine.balancer.ec2_node_info", "access_key"),
}
SECRET_VAR = re.compile(r"\{\{[^}]*(?:secret|password|passw|oauth|ssh_key_data|credential_ssh_key|session_token)[^}]*\}\}", re.I)


def test_tasks_that_pass_secrets_hide_them():
    """A task that hands a secret variable to a module: the module's option is no_log, or the
    task is. (access_key: the AWS access key id is not secret for amazon.aws, no_log=False there;
    it is no_log in the role's argument spec.)"""
    checked = 0
    for path in _task_files():
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
        for task in _tasks(data):
            for module, spec in task.items():
                if not isinstance(spec, dict) or "." not in module:
                    continue
                for option, value in spec.items():
                    if not (isinstance(value, str) and SECRET_VAR.search(value)):
                        continue
                    checked += 1
                    assert task.get("no_log") is True or (module, option) in NO_LOG_BY_MODULE, (
                        "%s: task %r passes a secret in %s.%s without no_log" % (path, task.get("name"), module, option))
    assert checked >= 4


# ------------------------------------------------------------------------------------ writers

def test_stats_rows_hold_only_their_columns(tmp_path):
    path = str(tmp_path / "sge-stats.csv")
    row = {c: 1 for c in stats.COLUMNS}
    row.update(time=1700000000.0, aws_secret_key=SENTINEL, password=SENTINEL, note=SENTINEL)
    stats.write_row(path, row, instance_hour_price=0.1)
    stats.write_row(path, dict(row, time=1700000060.0), instance_hour_price=0.1)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert SENTINEL not in text
    assert text.splitlines()[0].split(",") == list(stats.ALL_COLUMNS)


def test_elastic_state_and_stats_never_hold_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL)
    monkeypatch.setenv("CONTROLLER_OAUTH_TOKEN", SENTINEL)
    state_path = tmp_path / "qmaster" / "state.json"
    state_path.parent.mkdir()
    # an old state file that somebody wrote a secret into: unknown keys are not carried over
    state_path.write_text(json.dumps({"schema": 1, "aws_secret_key": SENTINEL,
                                      "nodes": {"node001": {"first_seen": 1.0, "password": SENTINEL}}}))
    qm = FakeQmaster()
    stats_file = str(tmp_path / "stats" / "sge-stats.csv")
    result = elastic_action.plan_poll(elastic_args(tmp_path, dump_stats=True, stats_file=stats_file,
                                                   instance_hour_price=0.1),
                                      qm, home=str(tmp_path / "home"))
    written = [c["content"] for c in qm.calls if c["state"] == "present"]
    assert written and SENTINEL not in json.dumps(written)
    assert SENTINEL not in state_path.read_text()
    with open(stats_file, encoding="utf-8") as handle:
        assert SENTINEL not in handle.read()
    assert SENTINEL not in json.dumps(result)


def test_reconcile_state_keeps_only_the_failure_fields(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL)
    path = str(tmp_path / "reconcile.json")
    qm = FakeQmaster()
    args = {k: None for k in reconcile_action.ARGUMENT_SPEC}
    args.update(cluster="mycluster", mode="record_failure", state_path=path, now=1700000000.0,
                failure={"node": "node004", "kind": "capacity", "code": "InsufficientInstanceCapacity",
                         "message": "launch failed", "secret_key": SENTINEL, "aws_session_token": SENTINEL})
    result = reconcile_action.run_reconcile(args, qm)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert "node004" in text and SENTINEL not in text
    assert SENTINEL not in json.dumps(result)


def test_journal_holds_only_node_operation_and_detail(tmp_path, monkeypatch):
    """The journal module writes what the task gives it; no task gives it a secret (the previous
    test of the task files) and nothing of the environment gets in."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL)
    path = str(tmp_path / "journal.json")

    class Done(Exception):
        pass

    def done(self, **kwargs):
        raise Done(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", done)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", done)
    with patch_module_args({"path": path, "node": "node004", "operation": "join"}):
        with pytest.raises(Done) as info:
            balancer_journal.main()
    assert not info.value.args[0].get("failed"), info.value.args[0]
    with open(path, encoding="utf-8") as handle:
        journal = json.load(handle)
    assert SENTINEL not in json.dumps(journal)
    assert set(journal["operations"][0]) <= {"node", "operation", "started", "detail"}
    for task_file in _task_files():
        with open(task_file, encoding="utf-8") as handle:
            for task in _tasks(yaml.safe_load(handle)):
                spec = task.get("gridengine.balancer.balancer_journal")
                if isinstance(spec, dict):
                    assert "detail" not in spec or not SECRET_VAR.search(json.dumps(spec["detail"])), task_file
