# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""No shell anywhere, and no command built as a string from data (issue 7 part 6).

A static check over the repository (docs/reliability/hostile-input.md):

* Python (``plugins/``, ``benchmarks/``, ``scripts/``, ``tests/``, ``extensions/``, and the Python
  templates of the roles), read with ``ast``:

  - no ``shell=True`` and no ``use_unsafe_shell=True`` in any call;
  - no ``os.system``, ``os.popen``, ``subprocess.getoutput``/``getstatusoutput``,
    ``asyncio.create_subprocess_shell``;
  - the command given to ``subprocess.*``, ``os.exec*``/``os.spawn*``, ``asyncio.create_subprocess_exec``
    and any ``.run_command(...)`` is not a string built from data (f-string, ``%``, ``+``,
    ``.format``, ``.join``), also when it is a local name assigned such a string;
  - no argv list that hands data to a shell with ``-c`` (``["sh", "-c", script]`` where the script
    is not a constant: the unit tests use constant scripts as stand-ins for Grid Engine commands);
  - a command line joined from words inside an argv list (``" ".join(...)`` in a list assigned to
    ``argv``/``cmd``/``command``/``args``) is only allowed when every word is ``shlex.quote``-d:
    that is the one way to hand a command to a remote shell (ssh); those places are listed in
    :data:`QUOTED_REMOTE_COMMANDS` so a new one is reviewed.

* YAML (``roles/*/tasks``, ``roles/*/handlers``, ``playbooks/``, ``extensions/molecule/``, the
  test playbooks), task by task:

  - no ``shell``, ``raw`` or ``script`` task (any of ``ansible.builtin.``/``ansible.legacy.``/short);
  - ``command``/``expect`` only with ``argv:``, or with a free-form string / ``cmd:`` that has no
    template in it (data spliced into a command line would be split by the module, and a
    leading ``-`` in it would become an option);
  - no ``pipe`` lookup (it runs a shell on the controller), also not in ``.j2`` templates.

The checker itself is tested on planted violations (each must be found) and on safe code
(nothing may be found), so that a checker that finds nothing cannot pass for a clean repository.
"""

from __future__ import annotations

import ast
import os
import re

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

PYTHON_TOP = ("plugins", "benchmarks", "scripts", "tests", "extensions")
YAML_TOP = ("roles", "playbooks", "extensions", "tests")
SKIP_DIRS = {".git", ".venv", ".collections", "__pycache__", "node_modules", "fixtures"}

# (path, line) -> why a space-joined, shlex.quote-d command line is handed to a remote shell there
QUOTED_REMOTE_COMMANDS = {
    "plugins/inventory/sge.py": "ssh hands its command to the remote shell as one string; every word "
                                "(env VAR=..., program, arguments) is shlex.quote-d",
}

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "ash", "busybox"}
ALWAYS_SHELL = {
    "os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
    "asyncio.create_subprocess_shell", "commands.getoutput", "commands.getstatusoutput",
    "popen2.popen2", "popen2.popen3", "popen2.popen4",
}
EXEC_CALLS = {
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "asyncio.create_subprocess_exec", "pty.spawn",
    "os.execv", "os.execve", "os.execvp", "os.execvpe", "os.execl", "os.execle", "os.execlp",
    "os.execlpe", "os.spawnv", "os.spawnve", "os.spawnvp", "os.spawnvpe", "os.spawnl",
    "os.spawnle", "os.spawnlp", "os.spawnlpe", "os.posix_spawn", "os.posix_spawnp",
}
# positional index of the command in EXEC_CALLS (os.spawn*: after the mode; os.exec*/posix_spawn:
# the path first, then the argv)
COMMAND_INDEX = {"os.spawnv": 2, "os.spawnve": 2, "os.spawnvp": 2, "os.spawnvpe": 2,
                 "os.spawnl": 2, "os.spawnle": 2, "os.spawnlp": 2, "os.spawnlpe": 2,
                 "os.execv": 1, "os.execve": 1, "os.execvp": 1, "os.execvpe": 1,
                 "os.execl": 1, "os.execle": 1, "os.execlp": 1, "os.execlpe": 1,
                 "os.posix_spawn": 1, "os.posix_spawnp": 1}
QUOTE_FUNCS = {"quote", "shlex.quote", "pipes.quote", "_quote", "shell_quote"}
ARGV_NAME = re.compile(r"(?:^|_)(?:argv|cmd|command|args)$")


# --------------------------------------------------------------------------------------- Python

def _dotted(node):
    """``a.b.c`` of a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _str_const(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _Imports(ast.NodeVisitor):
    """Local names -> dotted names (``import subprocess as sp``, ``from os import system``)."""

    def __init__(self):
        self.names = {}

    def visit_Import(self, node):
        for alias in node.names:
            self.names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node):
        for alias in node.names:
            if node.module:
                self.names[alias.asname or alias.name] = "%s.%s" % (node.module, alias.name)


class PythonChecker(ast.NodeVisitor):
    """Violations of one Python source; ``notes`` lists the quoted remote command lines."""

    def __init__(self, path, tree):
        self.path = path
        imports = _Imports()
        imports.visit(tree)
        self.imports = imports.names
        self.violations = []
        self.notes = []
        self.scopes = [self._assignments(tree)]

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _assignments(scope):
        """name -> [assigned value nodes] in ``scope`` (not descending into nested functions)."""
        found = {}
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) \
                    and node.value is not None:
                found.setdefault(node.target.id, []).append(node.value)
            stack.extend(ast.iter_child_nodes(node))
        return found

    def _name_of(self, func):
        name = _dotted(func)
        if name is None:
            return None
        head, _sep, rest = name.partition(".")
        if head in self.imports:
            name = self.imports[head] + ("." + rest if rest else "")
        return name

    def _report(self, node, what):
        self.violations.append("%s:%d: %s" % (self.path, getattr(node, "lineno", 0), what))

    def _values(self, node, depth=0):
        """``node``, and when it is a local name, the values assigned to it (one level)."""
        if isinstance(node, ast.Name) and depth == 0:
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return [node] + list(scope[node.id])
        return [node]

    def _is_built_string(self, node):
        """An expression that builds a str from parts (f-string, %, +, .format, .join)."""
        if isinstance(node, ast.JoinedStr):
            return any(isinstance(v, ast.FormattedValue) for v in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _str_const(node.left):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return any(_str_const(side) or self._is_built_string(side) for side in (node.left, node.right))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("format", "join") and _str_const(node.func.value):
            return True
        return False

    def _quoted_join(self, node):
        """True for ``" ".join(quote(w) for w in ...)`` (every word shell-quoted)."""
        if not (isinstance(node, ast.Call) and node.args):
            return False
        arg = node.args[0]
        if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
            elt = arg.elt
            return isinstance(elt, ast.Call) and self._name_of(elt.func) in QUOTE_FUNCS | {
                "shlex.quote", "pipes.quote"}
        if isinstance(arg, (ast.List, ast.Tuple)):
            return all(isinstance(e, ast.Call) and self._name_of(e.func) in QUOTE_FUNCS for e in arg.elts)
        return False

    @staticmethod
    def _is_space_join(node):
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "join" and _str_const(node.func.value)
                and node.func.value.value.strip() == "" and node.func.value.value != "")

    def _check_argv_list(self, node, where):
        if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts:
            return
        first = node.elts[0]
        if _str_const(first) and os.path.basename(first.value) in SHELLS and len(node.elts) > 2 \
                and _str_const(node.elts[1]) and node.elts[1].value.startswith("-") and "c" in node.elts[1].value \
                and not _str_const(node.elts[2]):
            # a constant script (a test's stand-in for a Grid Engine command) holds no data
            self._report(node, "%s hands data to a shell (%s %s ...)" % (where, first.value, node.elts[1].value))
        for elt in node.elts:
            if self._is_space_join(elt):
                if self._quoted_join(elt):
                    self.notes.append("%s:%d" % (self.path, elt.lineno))
                else:
                    self._report(elt, "%s holds a command line joined from words that are not shlex.quote-d" % where)

    def _check_command(self, node, where):
        for value in self._values(node):
            if self._is_built_string(value):
                self._report(value, "%s: the command is a string built from data; give an argv list" % where)
            else:
                self._check_argv_value(value, where)

    # -- visitors ------------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        self.scopes.append(self._assignments(node))
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _check_argv_value(self, value, where):
        """Lists assigned to argv-like names: the list rules only (a string assigned to such a
        name is a violation only where it is run, see visit_Call)."""
        if isinstance(value, (ast.List, ast.Tuple)):
            self._check_argv_list(value, where)
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            for side in (value.left, value.right):
                self._check_argv_value(side, where)

    def visit_Assign(self, node):
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if any(ARGV_NAME.search(t) for t in targets):
            self._check_argv_value(node.value, "argv list %s" % targets[0])
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name) and ARGV_NAME.search(node.target.id):
            self._check_argv_value(node.value, "argv list %s" % node.target.id)
        self.generic_visit(node)

    def visit_Call(self, node):
        for kw in node.keywords:
            if kw.arg in ("shell", "use_unsafe_shell") and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value in (False, None)):
                self._report(node, "%s=%s asks for a shell" % (kw.arg, ast.unparse(kw.value)))
        name = self._name_of(node.func)
        if name in ALWAYS_SHELL:
            self._report(node, "%s runs its command through a shell" % name)
        command = None
        if name in EXEC_CALLS:
            index = COMMAND_INDEX.get(name, 0)
            if len(node.args) > index:
                command = node.args[index]
            for kw in node.keywords:
                if kw.arg in ("args", "argv", "cmd", "program"):
                    command = kw.value
            if name.startswith(("os.execl", "os.spawnl")):
                # list forms take the words as separate arguments
                command = ast.List(elts=node.args[COMMAND_INDEX.get(name, 1):], ctx=ast.Load(), lineno=node.lineno)
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "run_command":
            command = node.args[0] if node.args else None
            for kw in node.keywords:
                if kw.arg == "args":
                    command = kw.value
        if command is not None:
            self._check_command(command, name or node.func.attr)
        self.generic_visit(node)


def python_violations(path, source):
    """``(violations, notes)`` of one Python source."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return ["%s: cannot be parsed (%s)" % (path, exc)], []
    checker = PythonChecker(path, tree)
    checker.visit(tree)
    # a name checked where it is assigned and where it is run is reported once
    return list(dict.fromkeys(checker.violations)), list(dict.fromkeys(checker.notes))


def render_python_template(text):
    """A Python ``.j2`` template made parseable: ``{{ ... }}`` becomes a string, ``{% %}`` lines go."""
    text = re.sub(r"\{%.*?%\}", "", text)
    text = re.sub(r"'\{\{.*?\}\}'", "'X'", text)
    text = re.sub(r"\{\{.*?\}\}", "X", text)
    return text


# ----------------------------------------------------------------------------------------- YAML

def _module_names(short):
    return {short, "ansible.builtin." + short, "ansible.legacy." + short}


SHELL_MODULES = _module_names("shell") | _module_names("raw") | _module_names("script")
COMMAND_MODULES = _module_names("command") | _module_names("expect")
TASK_LISTS = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")
PIPE_LOOKUP = re.compile(r"\b(?:lookup|query|q)\(\s*['\"](?:ansible\.builtin\.)?pipe['\"]")


class _AnyTagLoader(yaml.SafeLoader):
    """Safe loading that keeps ``!vault``/``!unsafe`` values as their text."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_scalar(node)
                                    if isinstance(node, yaml.ScalarNode) else None)


def _tasks(data):
    """Every task dict of a playbook or a task file (blocks expanded)."""
    out = []

    def walk_list(items):
        for item in items or []:
            if not isinstance(item, dict):
                continue
            if "hosts" in item or "import_playbook" in item or "ansible.builtin.import_playbook" in item:
                for key in TASK_LISTS:
                    if isinstance(item.get(key), list):
                        walk_list(item[key])
                continue
            out.append(item)
            for key in ("block", "rescue", "always"):
                if isinstance(item.get(key), list):
                    walk_list(item[key])

    if isinstance(data, list):
        walk_list(data)
    return out


def task_violations(path, task):
    found = []
    label = "%s: task %r" % (path, task.get("name", "(unnamed)"))
    for key, value in task.items():
        if key in SHELL_MODULES:
            found.append("%s uses %s (runs a shell); use ansible.builtin.command with argv" % (label, key))
        elif key in COMMAND_MODULES:
            cmd = None
            if isinstance(value, str):
                cmd = value
            elif isinstance(value, dict) and "argv" not in value:
                cmd = value.get("cmd") or value.get("command") or value.get("_raw_params")
            if cmd is None and isinstance(task.get("args"), dict) and "argv" not in task["args"]:
                cmd = task["args"].get("cmd")
            if isinstance(cmd, str) and "{{" in cmd:
                found.append("%s: %s builds its command line from data (%r); use argv" % (label, key, cmd))
    return found


def yaml_violations(path, text):
    found = ["%s: %s" % (path, line.strip()) for line in text.splitlines() if PIPE_LOOKUP.search(line)]
    try:
        data = yaml.load(text, Loader=_AnyTagLoader)  # nosec B506: a SafeLoader subclass
    except yaml.YAMLError as exc:
        return found + ["%s: cannot be parsed (%s)" % (path, exc)]
    for task in _tasks(data):
        found.extend(task_violations(path, task))
    return found


# ------------------------------------------------------------------------------ the repository

def _files(tops, suffixes):
    for top in tops:
        base = os.path.join(REPO, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if name.endswith(suffixes):
                    path = os.path.join(dirpath, name)
                    yield os.path.relpath(path, REPO), path


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def scan_repository():
    """``(violations, notes)`` of the whole repository."""
    violations, notes = [], []
    for rel, path in _files(PYTHON_TOP, (".py",)):
        v, n = python_violations(rel, _read(path))
        violations += v
        notes += n
    for rel, path in _files(("roles",), (".py.j2",)):
        v, n = python_violations(rel, render_python_template(_read(path)))
        violations += v
        notes += n
    for rel, path in _files(YAML_TOP, (".yml", ".yaml")):
        if rel.startswith("tests/unit/plugins/") or "/defaults/" in rel or "/meta/" in rel or "/vars/" in rel:
            # module test tables and variable files hold no tasks
            text = _read(path)
            violations += ["%s: %s" % (rel, line.strip()) for line in text.splitlines() if PIPE_LOOKUP.search(line)]
            continue
        violations += yaml_violations(rel, _read(path))
    for rel, path in _files(("roles", "playbooks", "inventory"), (".j2",)):
        violations += ["%s: %s" % (rel, line.strip()) for line in _read(path).splitlines()
                       if PIPE_LOOKUP.search(line)]
    return violations, notes


def test_repository_runs_no_shell_and_builds_no_command_string():
    violations, dummy_notes = scan_repository()
    assert violations == [], "\n".join(violations)


def test_quoted_remote_command_lines_are_the_reviewed_ones():
    dummy_violations, notes = scan_repository()
    files = sorted(set(n.rsplit(":", 1)[0] for n in notes))
    assert files == sorted(QUOTED_REMOTE_COMMANDS), notes


def test_the_scan_sees_the_code_it_must_see():
    """A scan that reads nothing would pass: the modules, roles and playbooks are read."""
    python = [rel for rel, _p in _files(PYTHON_TOP, (".py",))]
    yml = [rel for rel, _p in _files(YAML_TOP, (".yml", ".yaml"))]
    assert "plugins/modules/sge_submit.py" in python and "plugins/inventory/sge.py" in python
    assert "roles/node_join/tasks/exports.yml" in yml and "playbooks/loadbalance.yml" in yml
    tasks = _tasks(yaml.safe_load(_read(os.path.join(REPO, "roles", "node_join", "tasks", "sge.yml"))))
    assert sum(1 for t in tasks if "ansible.builtin.command" in t) >= 4


# ------------------------------------------------------------------------------ the checker

PLANTED_PYTHON = [
    ("shell-true", "import subprocess\nsubprocess.run('ls', shell=True)\n"),
    ("shell-true-variable", "import subprocess\nsubprocess.Popen(['ls'], shell=flag)\n"),
    ("os-system", "import os\nos.system('ls')\n"),
    ("os-popen-alias", "from os import popen\npopen('ls')\n"),
    ("getoutput", "import subprocess as sp\nsp.getoutput('ls')\n"),
    ("fstring", "import subprocess\ndef f(job):\n    subprocess.run(f'qdel {job}')\n"),
    ("percent", "import subprocess\ndef f(host):\n    subprocess.check_call('qconf -de %s' % host)\n"),
    ("plus", "import subprocess\ndef f(host):\n    subprocess.call('qconf -de ' + host)\n"),
    ("format", "import subprocess\ndef f(h):\n    subprocess.check_output('qhost -h {}'.format(h))\n"),
    ("join", "import subprocess\ndef f(words):\n    subprocess.run(' '.join(words))\n"),
    ("name-assigned", "import subprocess\ndef f(host):\n    cmd = 'qconf -de %s' % host\n    subprocess.run(cmd)\n"),
    ("run-command-string", "def f(module, name):\n    module.run_command('qconf -sq %s' % name)\n"),
    ("run-command-keyword", "def f(module, name):\n    module.run_command(args=f'qstat -j {name}')\n"),
    ("unsafe-shell", "def f(module):\n    module.run_command(['ls'], use_unsafe_shell=True)\n"),
    ("sh-c", "import subprocess\ndef f(x):\n    subprocess.run(['/bin/sh', '-c', x])\n"),
    ("bash-c-name", "import subprocess\ndef f(x):\n    argv = ['bash', '-c', x]\n    subprocess.run(argv)\n"),
    ("unquoted-remote", "def f(host, words):\n    argv = ['ssh', host, ' '.join(words)]\n    return argv\n"),
    ("exec-string", "import os\ndef f(x):\n    os.execv('/bin/qdel', 'qdel %s' % x)\n"),
    ("spawnl-sh", "import os\ndef f(x):\n    os.spawnl(os.P_WAIT, 'sh', 'sh', '-c', x)\n"),
    ("async-shell", "import asyncio\nasync def f(x):\n    await asyncio.create_subprocess_shell(x)\n"),
]

SAFE_PYTHON = [
    ("argv-list", "import subprocess\ndef f(host):\n    subprocess.run(['qconf', '-de', host], check=False)\n"),
    ("shell-false", "import subprocess\nsubprocess.run(['ls'], shell=False)\n"),
    ("element-with-data", "def f(module, q, h):\n    module.run_command(['qmod', '-d', '%s@%s' % (q, h)])\n"),
    ("argv-built", "def f(module, x):\n    argv = ['qconf'] + ['-sq', x]\n    argv += ['-xml']\n    module.run_command(argv)\n"),
    ("message-join", "def f(argv):\n    return 'failed: ' + ' '.join(argv)\n"),
    ("quoted-remote", "import shlex\ndef f(host, words):\n    argv = ['ssh', host, ' '.join(shlex.quote(w) for w in words)]\n    return argv\n"),
    ("constant", "import subprocess\nsubprocess.run('true')\n"),
]


@pytest.mark.parametrize("name, source", PLANTED_PYTHON, ids=[c[0] for c in PLANTED_PYTHON])
def test_checker_finds_planted_python(name, source):
    violations, dummy = python_violations("planted_%s.py" % name, source)
    assert violations, "the checker missed %s" % name


@pytest.mark.parametrize("name, source", SAFE_PYTHON, ids=[c[0] for c in SAFE_PYTHON])
def test_checker_passes_safe_python(name, source):
    violations, notes = python_violations("safe_%s.py" % name, source)
    assert violations == []
    assert bool(notes) == (name == "quoted-remote")


PLANTED_YAML = [
    ("shell-task", "- name: x\n  ansible.builtin.shell: qconf -de {{ node }}\n"),
    ("short-shell", "- name: x\n  shell: echo hi\n"),
    ("raw", "- name: x\n  ansible.builtin.raw: reboot\n"),
    ("script", "- name: x\n  ansible.legacy.script: do.sh\n"),
    ("command-free-form", "- name: x\n  ansible.builtin.command: qconf -de {{ node_join_name }}\n"),
    ("command-cmd", "- name: x\n  ansible.builtin.command:\n    cmd: qhost -h {{ host }}\n"),
    ("command-args-cmd", "- name: x\n  command:\n  args:\n    cmd: qstat -j {{ job }}\n"),
    ("in-block", "- name: b\n  block:\n    - name: x\n      ansible.builtin.command: qdel {{ id }}\n"),
    ("in-rescue", "- name: b\n  block: []\n  rescue:\n    - name: x\n      ansible.builtin.shell: true\n"),
    ("in-play", "- hosts: all\n  tasks:\n    - name: x\n      ansible.builtin.shell: id\n"),
    ("in-handler", "- hosts: all\n  handlers:\n    - name: x\n      ansible.builtin.raw: id\n"),
    ("pipe-lookup", "- name: x\n  ansible.builtin.debug:\n    msg: \"{{ lookup('pipe', 'id') }}\"\n"),
    ("pipe-query-fqcn", "- name: x\n  ansible.builtin.set_fact:\n    y: \"{{ query('ansible.builtin.pipe', 'id') }}\"\n"),
]

SAFE_YAML = [
    ("argv", "- name: x\n  ansible.builtin.command:\n    argv: [qconf, -de, \"{{ node }}\"]\n"),
    ("constant-command", "- name: x\n  ansible.builtin.command: exportfs -ra\n"),
    ("user-shell-option", "- name: x\n  ansible.builtin.user:\n    name: tester\n    shell: /bin/bash\n"),
    ("queue-shell-attribute", "- name: x\n  gridengine.balancer.sge_queue:\n    name: all.q\n    attributes:\n"
                              "      shell: /bin/sh\n"),
    ("file-lookup", "- name: x\n  ansible.builtin.debug:\n    msg: \"{{ lookup('ansible.builtin.file', 'x') }}\"\n"),
]


@pytest.mark.parametrize("name, text", PLANTED_YAML, ids=[c[0] for c in PLANTED_YAML])
def test_checker_finds_planted_yaml(name, text):
    assert yaml_violations("planted_%s.yml" % name, text), "the checker missed %s" % name


@pytest.mark.parametrize("name, text", SAFE_YAML, ids=[c[0] for c in SAFE_YAML])
def test_checker_passes_safe_yaml(name, text):
    assert yaml_violations("safe_%s.yml" % name, text) == []


def test_planted_files_in_a_copy_of_the_layout_are_found(tmp_path):
    """The whole scan, not only the functions: a role task and a module planted in a tree."""
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "tasks" / "main.yml").write_text(
        "---\n- name: Remove the node\n  ansible.builtin.command: qconf -de {{ node }}\n")
    (tmp_path / "plugins" / "modules").mkdir(parents=True)
    (tmp_path / "plugins" / "modules" / "m.py").write_text(
        "def main(module, job):\n    module.run_command('qdel %s' % job)\n")
    globals()["REPO"], saved = str(tmp_path), REPO
    try:
        violations, dummy = scan_repository()
    finally:
        globals()["REPO"] = saved
    assert any(v.startswith("roles/r/tasks/main.yml") for v in violations), violations
    assert any(v.startswith("plugins/modules/m.py:2") for v in violations), violations
