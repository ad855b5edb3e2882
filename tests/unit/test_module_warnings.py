# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""No module hands ``warnings`` (or ``deprecations``) to ``exit_json``/``fail_json`` (issue 7).

ansible-core 2.19 deprecates it ("Passing `warnings` to `exit_json` or `fail_json` is
deprecated", removed in 2.23): a module says ``module.warn(...)`` / ``module.deprecate(...)``.
A static check over the code that runs inside a module (``plugins/modules``,
``plugins/module_utils``), read with ``ast``:

* a ``warnings=``/``deprecations=`` keyword in an ``exit_json``/``fail_json`` call;
* a result built with such a key that may reach them through ``**result``: a dict display
  ``{"warnings": ...}``, ``dict(warnings=...)``, ``result["warnings"] = ...``,
  ``result.update(warnings=...)``, ``result.setdefault("warnings", ...)``.

Action plugins (``plugins/action``) are not modules: a task result's ``warnings`` list is theirs
to return, and they are left out. The checker is tested on planted violations, on safe code, and
on the module that printed the warning in playbooks/local_cluster.yml runs, ansible.posix.mount
(``args = dict(..., warnings=[])`` then ``module.exit_json(changed=changed, **args)``).
"""

from __future__ import annotations

import ast
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
MODULE_CODE = ("plugins/modules", "plugins/module_utils")
KEYS = {"warnings", "deprecations"}
EXITS = {"exit_json", "fail_json"}


def _const_key(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def findings(source, path="<source>"):
    """``path:line: what`` for every way ``warnings``/``deprecations`` may reach exit_json/fail_json."""
    out = []
    for node in ast.walk(ast.parse(source, path)):
        where = "%s:%d" % (path, getattr(node, "lineno", 0))
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            keywords = {k.arg for k in node.keywords if k.arg}
            if name in EXITS and keywords & KEYS:
                out.append("%s: %s(%s=...)" % (where, name, sorted(keywords & KEYS)[0]))
            elif name == "dict" and keywords & KEYS:
                out.append("%s: dict(%s=...)" % (where, sorted(keywords & KEYS)[0]))
            elif name == "update" and keywords & KEYS:
                out.append("%s: .update(%s=...)" % (where, sorted(keywords & KEYS)[0]))
            elif name == "setdefault" and node.args and _const_key(node.args[0]) in KEYS:
                out.append("%s: .setdefault(%r, ...)" % (where, _const_key(node.args[0])))
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if _const_key(key) in KEYS:
                    out.append("%s: {%r: ...}" % (where, _const_key(key)))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            if _const_key(node.slice) in KEYS:
                out.append("%s: [%r] = ..." % (where, _const_key(node.slice)))
    return out


def module_files():
    for top in MODULE_CODE:
        base = os.path.join(REPO, top)
        for name in sorted(os.listdir(base)):
            if name.endswith(".py"):
                yield os.path.join(top, name)


def test_no_module_passes_warnings_to_exit_json_or_fail_json():
    files = list(module_files())
    assert len(files) > 20, files
    found = []
    for path in files:
        with open(os.path.join(REPO, path)) as handle:
            found.extend(findings(handle.read(), path))
    assert found == [], "use module.warn()/module.deprecate() instead:\n" + "\n".join(found)


PLANTED = {
    "keyword": "module.exit_json(changed=False, warnings=['x'])",
    "keyword in fail_json": "module.fail_json(msg='no', deprecations=[{'msg': 'x', 'version': '2.0'}])",
    "dict call": "result = dict(changed=False, warnings=[])\nmodule.exit_json(**result)",
    "dict display": "result = {'changed': False, 'warnings': []}\nmodule.exit_json(**result)",
    "subscript": "result = {}\nresult['warnings'] = ['x']\nmodule.exit_json(**result)",
    "update": "result = {}\nresult.update(warnings=['x'])\nmodule.exit_json(**result)",
    "setdefault": "result = {}\nresult.setdefault('warnings', []).append('x')\nmodule.exit_json(**result)",
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_checker_finds_planted_violations(name):
    assert findings(PLANTED[name]), name


def test_the_checker_passes_safe_code():
    safe = ("module.warn('x')\nmodule.deprecate('y', version='2.0')\nwarnings = []\n"
            "result = dict(changed=False, msg='; '.join(warnings))\nplan = {'warn': 1}\n"
            "result['warning_count'] = 0\nmodule.exit_json(**result)\n")
    assert findings(safe) == []


def test_the_checker_finds_ansible_posix_mount():
    """The module behind the deprecation warning seen in playbooks/local_cluster.yml runs
    (ansible.posix 2.1.0, bundled in the pinned ansible 12.3.0 wheel; fixed upstream by
    ansible.posix PR 670)."""
    path = os.path.join(REPO, ".collections", "ansible_collections", "ansible", "posix", "plugins",
                        "modules", "mount.py")
    if not os.path.exists(path):
        pytest.skip("ansible.posix is not installed under .collections (scripts/setup.sh)")
    with open(path) as handle:
        found = findings(handle.read(), "mount.py")
    if not found:
        pytest.skip("this ansible.posix.mount no longer returns warnings (fixed upstream)")
    assert any("dict(warnings=...)" in f for f in found), found
