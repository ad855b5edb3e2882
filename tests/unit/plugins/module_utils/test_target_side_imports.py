# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every target-side module_utils imports with nothing but the standard library (issue 20,
finding 8). Run under .venv's Python and, by scripts/unit_nodes_python.sh, under the nodes'
/usr/bin/python3: a module_utils that needs a newer Python or a third-party package fails here
instead of on a node."""

from __future__ import annotations

import ast
import importlib
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
MODULE_UTILS = os.path.join(REPO, "plugins", "module_utils")
NAMES = sorted(n[:-3] for n in os.listdir(MODULE_UTILS) if n.endswith(".py") and n != "__init__.py")


def _imports(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


@pytest.mark.parametrize("name", NAMES)
def test_module_utils_imports_on_this_python(name):
    module = importlib.import_module("ansible_collections.gridengine.balancer.plugins.module_utils." + name)
    assert module.__name__.endswith(name)


@pytest.mark.parametrize("name", NAMES)
def test_module_utils_use_only_the_standard_library(name):
    stdlib = getattr(sys, "stdlib_module_names", None)
    if stdlib is None:
        pytest.skip("Python < 3.10 lists no standard library modules")
    for module in _imports(os.path.join(MODULE_UTILS, name + ".py")):
        top = module.split(".")[0]
        if top in ("ansible_collections", "__future__"):
            continue
        if top in ("transfer", "broker"):   # transfer_remote: installed beside transfer.py
            continue
        assert top in stdlib, "%s imports %s, not in the standard library" % (name, module)
