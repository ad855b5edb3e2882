# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ec2_node's user_data is no_log (issue 20, finding 7): user data commonly carries bootstrap
secrets (join tokens, keys), and without no_log it is printed with -v, kept in AWX job events and
logged to syslog by the module's invocation record."""

from __future__ import annotations

import ast
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def _spec_keywords(path, option):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        # dict(...) or the spec builder ec2_nodes.ec2_argument_spec(...)
        if isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "dict"
                                           or getattr(node.func, "attr", None) == "ec2_argument_spec"):
            for kw in node.keywords:
                if kw.arg == option and isinstance(kw.value, ast.Call):
                    return {k.arg: getattr(k.value, "value", None) for k in kw.value.keywords}
    raise AssertionError("no argument spec for %s in %s" % (option, path))


def test_user_data_is_no_log():
    spec = _spec_keywords(os.path.join(REPO, "plugins", "modules", "ec2_node.py"), "user_data")
    assert spec.get("no_log") is True, spec
