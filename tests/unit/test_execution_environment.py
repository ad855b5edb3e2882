# -*- coding: utf-8 -*-
"""The execution environment (issue 22, item 3): what ansible-builder makes of the collection.

No podman or docker on the test machines, so `ansible-builder build` cannot run: the test runs
`ansible-builder create` on the definition of docs/awx.md with the built tarball, then does what
the context's builder stage would do next (the collection installed from the tarball into a
collections path, the context's own `introspect.py` over it) and checks the requirement lists
it writes: exactly the runtime needs of meta/ee-requirements.txt and bindep.txt, none of the
development pins of the repository's requirements.txt.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.dirname(sys.executable)
DEPS = os.path.join(ROOT, ".collections", "ansible_collections")

# packages of the development pins that must never reach an execution environment
DEV_ONLY = {"moto", "hypothesis", "pytest", "pytest-xdist", "molecule", "ansible-lint",
            "ansible-builder", "antsibull-docs", "antsibull-changelog", "sphinx",
            "sphinx-ansible-theme", "jmespath", "netaddr"}


def _name(requirement):
    """The package name of a requirement line (``boto3>=1.34.0  # from ...`` -> ``boto3``)."""
    return re.split(r"[\s<>=!~;\[#]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _lines(path):
    with open(path, encoding="utf-8") as handle:
        return [line.split("#", 1)[0].strip() for line in handle
                if line.split("#", 1)[0].strip()]


def _run(argv, cwd):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
               ANSIBLE_CONFIG=os.path.join(str(cwd), "no-ansible.cfg"))
    proc = subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    assert proc.returncode == 0, "%s failed:\n%s" % (" ".join(argv), proc.stdout)
    return proc.stdout


def _definition():
    """The EE definition shown in docs/awx.md (the block that starts ``# execution-environment.yml``)."""
    with open(os.path.join(ROOT, "docs", "awx.md"), encoding="utf-8") as handle:
        text = handle.read()
    blocks = re.findall(r"```yaml\n(# execution-environment\.yml\n.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "docs/awx.md shows one execution-environment.yml"
    return blocks[0]


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), ROOT],
         cwd=out)
    (path,) = [p for p in out.iterdir() if p.name.endswith(".tar.gz")]
    return path


@pytest.fixture(scope="module")
def context(tarball, tmp_path_factory):
    """`ansible-builder create` on the documented definition, the tarball beside it."""
    work = tmp_path_factory.mktemp("ee")
    (work / "execution-environment.yml").write_text(_definition(), encoding="utf-8")
    shutil.copy(str(tarball), str(work / tarball.name))
    out = _run([os.path.join(BIN, "ansible-builder"), "create", "-f", "execution-environment.yml",
                "-c", "context", "--output-filename", "Containerfile"], cwd=work)
    assert "Complete!" in out
    return work / "context"


def _runtime():
    return {_name(r) for r in _lines(os.path.join(ROOT, "meta", "ee-requirements.txt"))}


def _introspect(context_dir, collections, tmp_path):
    """What the builder stage's `introspect.py introspect --write-pip --write-bindep` writes."""
    pip, bindep = tmp_path / "requirements.txt", tmp_path / "bindep.txt"
    _run([sys.executable, str(context_dir / "_build" / "scripts" / "introspect.py"), "introspect",
          str(collections), "--write-pip", str(pip), "--write-bindep", str(bindep)], cwd=tmp_path)
    return _lines(pip), _lines(bindep)


def test_meta_file_names_the_runtime_files():
    with open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8") as handle:
        meta = yaml.safe_load(handle)
    assert meta == {"version": 1, "dependencies": {"python": "meta/ee-requirements.txt",
                                                   "system": "bindep.txt"}}
    assert _runtime() == {"boto3", "botocore", "numpy", "scipy", "matplotlib"}
    assert not _runtime() & DEV_ONLY


def test_create_writes_a_context_that_installs_the_tarball(context, tarball):
    containerfile = (context / "Containerfile").read_text(encoding="utf-8")
    assert "ansible-galaxy collection install" in containerfile
    assert "introspect.py introspect" in containerfile
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text(encoding="utf-8"))
    assert galaxy == {"collections": [{"name": "/build/collections/" + tarball.name, "type": "file"}]}
    assert (context / "_build" / "collections" / tarball.name).is_file()
    # the definition adds no Python packages of its own: everything comes from the collections
    assert not (context / "_build" / "requirements.txt").exists()
    # what the context installs (ansible-builder's own scripts under _build/scripts aside)
    for path in context.rglob("*"):
        if path.is_file() and path.suffix != ".gz" and "scripts" not in path.parts:
            text = path.read_text(encoding="utf-8", errors="replace").lower()
            assert not any(re.search(r"\b%s\b" % re.escape(dev), text)
                           for dev in ("moto", "hypothesis", "pytest", "molecule")), path


def test_builder_stage_requirements_are_exactly_the_runtime_needs(context, tarball, tmp_path):
    collections = tmp_path / "collections"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--no-deps", "-p",
          str(collections), str(tarball)], cwd=tmp_path)
    pip, bindep = _introspect(context, collections, tmp_path)
    assert pip == _lines(os.path.join(ROOT, "meta", "ee-requirements.txt"))
    assert bindep == _lines(os.path.join(ROOT, "bindep.txt"))
    # the tarball carries no development pins that a fallback could find
    assert not (collections / "ansible_collections" / "gridengine" / "balancer" / "requirements.txt").exists()


@pytest.mark.skipif(not os.path.isdir(DEPS), reason="scripts/setup.sh extracts the dependencies")
def test_with_the_dependencies_beside_it(context, tarball, tmp_path):
    """Galaxy is unreachable: the dependencies come from .collections (setup.sh's wheel)."""
    collections = tmp_path / "collections"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--no-deps", "-p",
          str(collections), str(tarball)], cwd=tmp_path)
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        deps = yaml.safe_load(handle)["dependencies"]
    for dep in deps:
        namespace, name = dep.split(".")
        shutil.copytree(os.path.join(DEPS, namespace, name),
                        str(collections / "ansible_collections" / namespace / name))
    pip, dummy = _introspect(context, collections, tmp_path)
    names = {_name(r) for r in pip}
    # ours, amazon.aws's (boto3, botocore) and awx.awx's (pytz, python-dateutil, awxkit)
    assert names == _runtime() | {"pytz", "python-dateutil", "awxkit"}
    assert not names & DEV_ONLY


def test_introspect_of_the_checkout_reads_the_meta_file(tmp_path):
    """The checkout has the development requirements.txt at its root; the meta file wins."""
    link = tmp_path / "ansible_collections" / "gridengine"
    link.mkdir(parents=True)
    (link / "balancer").symlink_to(ROOT)
    out = _run([os.path.join(BIN, "ansible-builder"), "introspect", str(tmp_path)], cwd=tmp_path)
    data = yaml.safe_load(out.split("---", 1)[1])
    assert {_name(r) for r in data["python"]} == _runtime()
    assert os.path.exists(os.path.join(ROOT, "requirements.txt"))  # there, and not used


def _third_party_imports():
    """Top-level modules imported by shipped Python code that are neither stdlib nor Ansible."""
    found = {}
    # the transfer_queue role installs transfer.py, broker.py and placement.py side by side on a
    # host, where they import each other by their bare names
    own = {name[:-3] for dummy, dummy2, files in os.walk(os.path.join(ROOT, "plugins"))
           for name in files if name.endswith(".py")}
    for base, dummy, files in os.walk(os.path.join(ROOT, "plugins")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(base, name)
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for mod in mods:
                    top = mod.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("ansible", "ansible_collections",
                                                                 "__future__") or top in own:
                        continue
                    found.setdefault(top, set()).add(os.path.relpath(path, ROOT))
    return found


def test_runtime_file_covers_every_import_of_the_plugins():
    # ansible-core brings yaml and jinja2; dateutil (awx_defs, an offline check of the tests)
    # comes with matplotlib and with awx.awx's requirements
    comes_along = {"yaml", "jinja2", "dateutil"}
    imports = _third_party_imports()
    missing = {mod: sorted(paths) for mod, paths in imports.items()
               if mod not in comes_along and mod not in _runtime()}
    assert not missing, "imported by plugins but not in meta/ee-requirements.txt: %s" % missing
    # and nothing in the file that no plugin imports (boto3 is imported by amazon.aws's
    # module_utils on behalf of ec2_node and ec2_node_info)
    assert _runtime() - set(imports) == {"boto3"}
