# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/sge_cell, read as data (issue 7): its input checks refuse a value with a trailing
newline (``\\Z``, not ``$``), and every file it writes has an explicit owner, group and mode.

Nothing runs: the checks are evaluated with Ansible's Templar, as the assert task would."""

from __future__ import annotations

import os

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gridengine.balancer.plugins.module_utils import role_inputs

# \Z inside a Jinja string literal: Jinja warns about the escape, the pattern reaches re unchanged
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
ROLE = os.path.join(REPO, "roles", "sge_cell")
WRITERS = ("ansible.builtin.template", "ansible.builtin.copy", "ansible.builtin.file",
           "ansible.builtin.lineinfile", "ansible.builtin.blockinfile")


def _load(*parts):
    return DataLoader().load_from_file(os.path.join(ROLE, *parts))


def _conditions():
    for task in _load("tasks", "main.yml"):
        spec = task.get("ansible.builtin.assert")
        if spec:
            that = spec["that"]
            return [that] if isinstance(that, str) else list(that)
    raise AssertionError("no assert task in roles/sge_cell/tasks/main.yml")


def failing(variables):
    """The checks that are false or fail to evaluate (the assert fails on both)."""
    templar = Templar(loader=DataLoader(), variables=variables)
    out = []
    for cond in _conditions():
        try:
            if not templar.evaluate_conditional(trust_as_template(cond)):
                out.append(cond)
        except Exception:  # pylint: disable=broad-except
            out.append(cond)
    return out


def good():
    defaults = dict(_load("defaults", "main.yml"))
    out = {k: defaults[k] for k in ("sge_cell_state", "sge_cell_name", "sge_cell_qmaster_port",
                                    "sge_cell_execd_port", "sge_cell_gid_range", "sge_cell_execd_node")}
    # the values checked since issue 20 (module_utils/role_inputs.py), rendered as Ansible would
    templar = Templar(loader=DataLoader(), variables=defaults)
    for key in sorted(role_inputs.ROLE_VARIABLES["sge_cell"]):
        value = defaults[key]
        out[key] = templar.template(trust_as_template(value)) if isinstance(value, str) else value
    return out


def test_the_defaults_pass():
    assert failing(good()) == []


@pytest.mark.parametrize("var, value", [
    ("sge_cell_name", "partner"), ("sge_cell_name", "Cell_2-b"),
    ("sge_cell_gid_range", "1-2"), ("sge_cell_execd_node", ""), ("sge_cell_execd_node", "node-9"),
])
def test_good_values_pass(var, value):
    assert failing(dict(good(), **{var: value})) == []


@pytest.mark.parametrize("var, value", [
    # a trailing newline: "$" matched before it, "\Z" does not
    ("sge_cell_name", "remote\n"), ("sge_cell_gid_range", "65200-65299\n"), ("sge_cell_execd_node", "partner01\n"),
    ("sge_cell_name", "remote\nx"), ("sge_cell_name", "../etc"), ("sge_cell_name", "default"),
    ("sge_cell_gid_range", "65200"), ("sge_cell_execd_node", "Partner01"), ("sge_cell_execd_node", "-km"),
])
def test_bad_values_are_refused(var, value):
    assert failing(dict(good(), **{var: value})), (var, value)


def test_every_file_the_role_writes_has_owner_group_and_mode():
    missing = []
    tasks_dir = os.path.join(ROLE, "tasks")
    for name in sorted(os.listdir(tasks_dir)):
        stack = list(_load("tasks", name) or [])
        while stack:
            task = stack.pop()
            for key in ("block", "rescue", "always"):
                stack.extend(task.get(key) or [])
            for module in set(WRITERS) & set(task):
                spec = task[module]
                if spec.get("state") == "absent":
                    continue
                missing.extend("%s: %s has no %s" % (name, task.get("name"), key)
                               for key in ("owner", "group", "mode") if key not in spec)
    assert missing == [], "\n".join(missing)


def test_objects_change_grid_engine_only_through_modules():
    """Issue 24: the cell's objects (objects.yml) and the node's registration (execd.yml) are
    changed through the collection's modules, which hand qconf private temporary files; no task
    writes an object file or runs a qconf that changes something (a qconf there only reads, with
    changed_when false)."""
    for name in ("objects.yml", "execd.yml", "absent.yml"):
        stack = list(_load("tasks", name))
        while stack:
            task = stack.pop()
            stack.extend(task.get("block") or [])
            if name == "objects.yml":
                assert not {"ansible.builtin.copy", "ansible.builtin.template"} & set(task), task.get("name")
            argv = (task.get("ansible.builtin.command") or {}).get("argv") or []
            if argv[:1] == ["qconf"]:
                assert argv[1].startswith("-s"), (name, task.get("name"), argv)
                assert task.get("changed_when") is False, (name, task.get("name"))
