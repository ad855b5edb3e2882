# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared options once (DESIGN.md habit 12), table-driven over plugins/modules: every module that
talks to Grid Engine documents sge_root / sge_cell / sge_qmaster_port through the doc fragment
gridengine.balancer.sge (and nowhere else), builds them into its argument spec from
sge_cmd.sge_argument_spec (so the defaults are written once), and is in the action group ``sge``
of meta/runtime.yml, so a play can set them once with module_defaults."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib
import os
import re

import pytest
import yaml

from ansible_collections.gridengine.balancer.plugins.doc_fragments.sge import ModuleDocFragment
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_cmd import sge_argument_spec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULES = os.path.join(ROOT, "plugins", "modules")
PACKAGE = "ansible_collections.gridengine.balancer.plugins.modules."
FRAGMENT = "gridengine.balancer.sge"
SHARED = sorted(sge_argument_spec())

# A module talks to Grid Engine when it is named sge_*, or runs its clients through the
# collection's Grid Engine helpers, or names one of the shared options anywhere.
_TALKS_TO_SGE = re.compile(r"module_utils\.sge_(admin|cmd)\b|module_utils import sge_(admin|cmd)\b|\b(%s)\b"
                           % "|".join(SHARED))


def _source(name):
    with open(os.path.join(MODULES, name + ".py")) as handle:
        return handle.read()


def _all_modules():
    return sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py") and f != "__init__.py")


def _sge_modules():
    return [n for n in _all_modules() if n.startswith("sge_") or _TALKS_TO_SGE.search(_source(n))]


def _action_group():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        runtime = yaml.safe_load(handle)
    return (runtime.get("action_groups") or {}).get("sge") or []


class _Built(Exception):
    """Raised by the stand-in AnsibleModule with the keyword arguments main() built it with."""

    def __init__(self, kwargs):
        super(_Built, self).__init__("AnsibleModule built")
        self.kwargs = kwargs


def _fake_module(**kwargs):
    raise _Built(kwargs)


def _argument_spec(name, monkeypatch):
    """The argument spec ``main()`` of the module gives AnsibleModule (nothing runs after it)."""
    module = importlib.import_module(PACKAGE + name)
    monkeypatch.setattr(module, "AnsibleModule", _fake_module)
    with pytest.raises(_Built) as built:
        module.main()
    return built.value.kwargs["argument_spec"]


def test_the_table_is_not_empty():
    assert len(_sge_modules()) >= 6, _sge_modules()


@pytest.mark.parametrize("name", _sge_modules())
def test_documents_the_shared_options_through_the_fragment(name):
    module = importlib.import_module(PACKAGE + name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    fragments = doc.get("extends_documentation_fragment") or []
    if isinstance(fragments, str):
        fragments = [fragments]
    assert FRAGMENT in fragments, "%s: extends_documentation_fragment lacks %s" % (name, FRAGMENT)
    own = sorted(set(doc.get("options") or {}) & set(SHARED))
    assert not own, "%s documents %s itself; the fragment %s does" % (name, own, FRAGMENT)


@pytest.mark.parametrize("name", _sge_modules())
def test_builds_the_shared_options_from_one_spec(name, monkeypatch):
    spec = _argument_spec(name, monkeypatch)
    assert dict((k, spec.get(k)) for k in SHARED) == sge_argument_spec(), name
    source = _source(name)
    assert "sge_argument_spec(" in source, name
    for option in SHARED:
        assert not re.search(r"\b%s\s*=\s*dict\(" % option, source), \
            "%s spells out %s=dict(...) instead of taking it from sge_argument_spec()" % (name, option)


@pytest.mark.parametrize("name", _sge_modules())
def test_is_in_the_action_group(name):
    assert name in _action_group(), "%s is missing from action_groups.sge in meta/runtime.yml" % name


def test_the_action_group_holds_only_grid_engine_modules():
    group = _action_group()
    assert sorted(group) == sorted(set(group)), "a module listed twice: %s" % group
    assert sorted(group) == _sge_modules()


def test_the_fragment_matches_the_spec():
    """Same options, types and defaults in the documentation and in the argument spec."""
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert sorted(options) == SHARED
    for name, spec in sge_argument_spec().items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("default") == spec.get("default"), name


def test_the_fragment_names_the_action_group():
    attributes = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["attributes"]
    assert attributes["action_group"]["membership"] == [FRAGMENT]
