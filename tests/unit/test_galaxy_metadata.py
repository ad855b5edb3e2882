# -*- coding: utf-8 -*-
"""galaxy.yml says what the shipped content is and uses (issue 22, item 6).

- the declared dependencies are exactly the other collections that shipped content names
  (FQCNs in plugins, roles, playbooks and meta; ansible.builtin and this collection aside);
- every plugin's and role's version_added is at most the collection's version;
- the links are real-looking https URLs, and the README shipped is one for an installed copy.
"""

from __future__ import annotations

import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHIPPED = ("plugins", "roles", "playbooks", "meta")
FQCN = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z_][a-z0-9_]*")
# dotted names of the shipped files that look like FQCNs but are Python, hosts or data
NOT_COLLECTIONS = {"ansible.builtin", "gridengine.balancer", "ansible.module_utils",
                   "ansible.plugins", "ansible.errors", "ansible.utils", "ansible.template",
                   "ansible.inventory", "ansible.parsing", "ansible.playbook", "ansible.vars",
                   "ansible.executor", "ansible.galaxy", "ansible.cli", "ansible.config",
                   "ansible.constants", "ansible.release", "ansible._internal"}


def _galaxy():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _version(text):
    return tuple(int(part) for part in str(text).split("."))


def _shipped_files():
    for top in SHIPPED:
        for base, dummy, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".py", ".yml", ".yaml", ".j2")):
                    yield os.path.join(base, name)


def _used_collections():
    """collection -> files that name one of its modules, plugins, roles or doc fragments.

    A dotted name counts when its collection is one installed beside the checkout (setup.sh's
    amazon.aws, ansible.posix, awx.awx, community.general) or when it is a task's action (a YAML
    key such as ``- community.foo.bar:``): host names and URLs (awx.example.org) do not count.
    """
    base = os.path.join(ROOT, ".collections", "ansible_collections")
    installed = {"%s.%s" % (ns, name) for ns in os.listdir(base) if os.path.isdir(os.path.join(base, ns))
                 for name in os.listdir(os.path.join(base, ns))} if os.path.isdir(base) else set()
    installed |= {"community.general", "amazon.aws", "ansible.posix", "awx.awx"}
    task_key = re.compile(r"^\s*(?:- )?([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z_][a-z0-9_]*:", re.M)
    used = {}
    for path in _shipped_files():
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        names = set(FQCN.findall(text))
        if path.endswith((".yml", ".yaml")):
            names |= {m + ("task",) for m in task_key.findall(text)}
        for match in names:
            coll = "%s.%s" % match[:2]
            if coll in NOT_COLLECTIONS:
                continue
            if coll in installed or len(match) == 3:
                used.setdefault(coll, set()).add(os.path.relpath(path, ROOT))
    return used


def test_dependencies_are_exactly_the_collections_used():
    declared = set(_galaxy()["dependencies"])
    used = _used_collections()
    assert declared == set(used), "declared %s, used %s" % (sorted(declared),
                                                            {k: sorted(v)[:3] for k, v in used.items()})
    assert "community.general" not in declared
    # each for a reason that still holds
    assert "playbooks/awx_setup.yml" in used["awx.awx"]
    assert "plugins/modules/ec2_node.py" in used["amazon.aws"]
    assert any(p.startswith("roles/node_join/") for p in used["ansible.posix"])


def test_dependency_versions_are_ranges_the_installed_ones_meet():
    for coll, spec in _galaxy()["dependencies"].items():
        match = re.fullmatch(r">=(\d+\.\d+\.\d+)", spec)
        assert match, "%s: %r is not a lower bound" % (coll, spec)
        manifest = os.path.join(ROOT, ".collections", "ansible_collections", *coll.split("."),
                                "MANIFEST.json")
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as handle:
                installed = yaml.safe_load(handle)["collection_info"]["version"]
            assert _version(installed) >= _version(match.group(1)), (coll, installed)


def test_version_added_is_at_most_the_collection_version():
    version = _version(_galaxy()["version"])
    found = 0
    for path in _shipped_files():
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                match = re.search(r"\bversion_added:\s*['\"]?([0-9][0-9.]*)", line)
                if match:
                    found += 1
                    assert _version(match.group(1)) <= version, "%s:%d: %s" % (path, number, line.strip())
    assert found >= 20


def test_links_and_readme():
    galaxy = _galaxy()
    base = "https://github.com/gridengine-balancer/gridengine.balancer"
    assert galaxy["repository"] == base
    assert galaxy["issues"] == base + "/issues"
    assert galaxy["documentation"].startswith("https://")
    for key in ("repository", "documentation", "homepage", "issues"):
        assert "example.invalid" not in galaxy[key]
    readme = os.path.join(ROOT, galaxy["readme"])
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    # written for an installed copy: no scripts/ of the checkout, the install command first
    assert "scripts/" not in text
    assert "ansible-galaxy collection install gridengine.balancer" in text
    # every relative link of it points at a file the tarball carries
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert os.path.exists(os.path.join(os.path.dirname(readme), target)), target
    # the repository README is for a checkout and stays out of the tarball
    assert "README.md" in galaxy["build_ignore"]
