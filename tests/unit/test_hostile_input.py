# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile input through every module, the inventory plugin, the roles and the transfer methods
(issue 7 part 6; docs/reliability/hostile-input.md).

Every module that takes names, paths or free text gets the same hostile values (:data:`HOSTILE`):
command substitution, ``;``, backquotes, newlines, NUL, 10,000 characters, non-ASCII, a leading
``-`` that a command would read as an option, ``../../etc/passwd`` and a glob. For each parameter
the table says which of them the module accepts; every other one must be refused with
``fail_json`` whose message names the parameter, before any command ran. An accepted value must
reach the command as exactly one argv element (never split, never an option: it follows the
option that takes it), or exactly one line of the object file handed to ``qconf -A*``/``-M*``,
or stay data (a filter, a JSON value). ``run_command`` is replaced by a recorder that answers
like Grid Engine; nothing runs, and the test checks that nothing ran through a shell
(``use_unsafe_shell``) and that no file named ``owned`` appeared.

Roles and playbooks are checked without running them: their input checks (the ``assert`` tasks)
are evaluated with Ansible's own templar on the hostile values; the NFS export line of
``node_join`` and the line ``node_leave`` removes are rendered and matched.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import io
import json
import os
import re
import tarfile

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible.inventory.group import to_safe_group_name

from ansible_collections.gridengine.balancer.plugins.filter.nodes import host_address
from ansible_collections.gridengine.balancer.plugins.module_utils import role_inputs, sge_admin
from ansible_collections.gridengine.balancer.plugins.module_utils import nfs_export as nfs_export_utils
from ansible_collections.gridengine.balancer.plugins.modules import (
    balancer_journal, balancer_state, ec2_node, ec2_node_info, local_node, local_node_info,
    sge_exec_host, sge_hostgroup, sge_queue, sge_queue_facts, sge_rqs, sge_submit, task_data,
    task_data_info, task_registry)
from ansible_collections.gridengine.balancer.plugins.plugin_utils import sge_inventory as inv

# The roles' regexps end in \Z inside Jinja string literals (as their \s and \. do): Jinja's
# literal unescaping warns about every such escape; the pattern reaches re unchanged.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(HERE, "fixtures")
SGE_ROOT = "/nonexistent/sge-root"
BIN = SGE_ROOT + "/bin/lx-amd64/"

# {owned} is a path in the test's temporary directory: a file there would mean something ran
HOSTILE = [
    ("subst", "$(touch {owned})"),
    ("subst-rel", "$(touch owned)"),
    ("semicolon", ";rm -rf /"),
    ("backticks", "`touch {owned}`"),
    ("backticks-rel", "`touch owned`"),
    ("newline", "node1\ntouch {owned}"),
    ("trailing-newline", "node1\n"),
    ("nul", "node1\x00x"),
    ("long", "a" * 10000),
    ("non-ascii", "J\u00f6b\u540d"),
    ("option", "-km"),
    ("traversal", "../../etc/passwd"),
    ("glob", "*"),
]
HOSTILE_IDS = [h[0] for h in HOSTILE]
ALL = frozenset(HOSTILE_IDS)
NO_CONTROL = ALL - {"newline", "trailing-newline", "nul"}


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


# ----------------------------------------------------------------------------------- harness

def _parse_object(text):
    return sge_admin.parse_object(text)


class FakeGridEngine(object):
    """Answers qconf/qstat/qsub/qmod like an empty cluster that keeps what it is given; records
    every argv and the object files handed to it."""

    LISTS = {"-sh": "admin", "-sel": "exec", "-ss": "submit", "-shgrpl": "hostgroup", "-sql": "queue"}

    def __init__(self):
        self.calls = []
        self.files = []
        self.lists = {k: [] for k in ("admin", "exec", "submit", "hostgroup", "queue")}
        self.objects = {}

    def __call__(self, module, args, **kwargs):
        assert isinstance(args, list), "argv must be a list, got %r" % (args,)
        assert not kwargs.get("use_unsafe_shell"), "a shell was asked for: %r" % (args,)
        assert all(isinstance(a, str) for a in args), args
        self.calls.append(list(args))
        rc, out, err = self.answer(os.path.basename(args[0]), args[1:])
        if kwargs.get("encoding", "utf-8") is None:
            out, err = out.encode("utf-8"), err.encode("utf-8")
        drain = kwargs.get("before_communicate_callback")
        if drain is not None and drain.consume is not None:
            # a command read as it prints (sge_cmd.run_sge_stream): stdout handed over in chunks
            drain.take(iter([out[i:i + 4096] for i in range(0, len(out), 4096)]))
            drain.err, out = err, b""
        return rc, out, err

    def _file(self, path):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        self.files.append(text)
        return text

    def answer(self, prog, args):
        if prog == "qsub":
            return 0, "42\n", ""
        if prog == "qstat":
            return 1, "", ""             # a queue without instances
        if prog == "qmod":
            return 0, "", ""
        if prog != "qconf":
            raise AssertionError("unexpected program %r" % prog)
        opt = args[0]
        if opt in self.LISTS:
            return 0, "".join(n + "\n" for n in self.lists[self.LISTS[opt]]), ""
        if opt in ("-se", "-shgrp", "-sq"):
            text = self.objects.get((opt, args[1]))
            return (0, text, "") if text else (1, "", "%s does not exist\n" % args[1])
        if opt == "-srqs":
            text = self.objects.get((opt, args[1]))
            return (0, text, "") if text else (1, "", "No resource quota set found\n")
        if opt in ("-ah", "-as"):
            self.lists["admin" if opt == "-ah" else "submit"].append(args[1])
            return 0, "", ""
        if opt in ("-Ae", "-Me", "-Ahgrp", "-Mhgrp", "-Aq", "-Mq"):
            obj = _parse_object(self._file(args[1]))
            key = {"-Ae": "hostname", "-Me": "hostname", "-Ahgrp": "group_name",
                   "-Mhgrp": "group_name", "-Aq": "qname", "-Mq": "qname"}[opt]
            show = {"-Ae": "-se", "-Me": "-se", "-Ahgrp": "-shgrp", "-Mhgrp": "-shgrp",
                    "-Aq": "-sq", "-Mq": "-sq"}[opt]
            self.objects[(show, obj[key])] = "".join("%s %s\n" % kv for kv in obj.items())
            if opt == "-Ae":
                self.lists["exec"].append(obj[key])
            return 0, "", ""
        if opt in ("-Arqs", "-Mrqs"):
            text = self._file(args[1])
            name = re.search(r"(?m)^\s*name\s+(\S+)", text).group(1)
            self.objects[("-srqs", name)] = text
            return 0, "", ""
        return 0, "", ""                  # -aattr, -dattr, -de, -dh, -ds, -ke, ...


def run_module(module, args, monkeypatch, check_mode=False, fake=None):
    """``(result, fake)``: run ``module.main()`` with ``args``; nothing is executed."""
    fake = fake or FakeGridEngine()

    def exit_json(self, **kwargs):
        kwargs.setdefault("failed", False)
        raise ExitJson(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs["failed"] = True
        kwargs["msg"] = msg
        raise FailJson(kwargs)

    def run_command(self, argv, **kwargs):
        return fake(self, argv, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: BIN + name)
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, text: None)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(sge_admin, "_sleep", lambda seconds: None)
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=True)
    with patch_module_args(args):
        try:
            module.main()
        except (ExitJson, FailJson) as exc:
            return exc.args[0], fake
    raise AssertionError("the module returned without exit_json/fail_json")


@pytest.fixture
def owned(tmp_path, monkeypatch):
    """The path a hostile value would create; the test runs in tmp_path (for relative values)."""
    monkeypatch.chdir(tmp_path)
    before = os.path.exists("/tmp/owned")
    path = str(tmp_path / "owned")
    yield path
    assert not os.path.exists(path), "something ran a hostile value: %s exists" % path
    assert not os.path.exists(str(tmp_path / "owned")), "something ran a hostile value"
    assert os.path.exists("/tmp/owned") == before


def hostile(name, owned_path):
    return dict(HOSTILE)[name].replace("{owned}", owned_path)


def assert_rejected(result, fake, label):
    assert result["failed"], "accepted: %r" % (result,)
    assert label in result["msg"], "the message %r does not name %s" % (result["msg"], label)
    assert fake.calls == [], "commands ran before the refusal: %r" % (fake.calls,)


def assert_one_argv_element(fake, value, after=None, element=None):
    """``value`` (or ``element``, the argv element made of it) is one element of one call, right
    after the option ``after`` when given; no call has a part of it as an element."""
    element = value if element is None else element
    hits = [(call, i) for call in fake.calls for i, arg in enumerate(call) if arg == element]
    assert hits, "%r is not one argv element of %r" % (element, fake.calls)
    for call, index in hits:
        if after is not None:
            assert call[index - 1] == after, "%r follows %r, not %r: %r" % (element, call[index - 1], after, call)


OBJECT_KEYS = (set(sge_admin.QUEUE_ATTRIBUTES) | set(sge_admin.EXEC_HOST_ATTRIBUTES)
               | {"group_name", "hostlist"})


def assert_one_file_line(fake, key, value):
    """``value`` is the value of ``key`` in an object file (qconf's continuation lines joined), and
    the files hold no key but the known ones (no line was added). Resource quota set files
    (``{ ... }``) are read line by line."""
    text = value.strip()
    found = False
    for content in fake.files:
        if content.startswith("{"):
            lines = [line for line in content.splitlines() if text in line]
            assert all(line.split(None, 1)[0] == key for line in lines), lines
            found = found or bool(lines)
            continue
        obj = sge_admin.parse_object(content)
        assert set(obj) <= OBJECT_KEYS, set(obj) - OBJECT_KEYS
        if key in obj and text in obj[key]:
            found = True
            assert obj[key] in (text, "%s=2" % text, "slots=%s" % text), (key, obj[key])
    assert found, "%r is in no object file: %r" % (text, fake.files)


# ------------------------------------------------------------------------------ module table

def _submit(param):
    def build(value):
        args = {"script": "job.sh", "sge_root": SGE_ROOT}
        if param == "resources.key":
            args["resources"] = {value: "1"}
        elif param == "resources.value":
            args["resources"] = {"mem": value}
        elif param == "args":
            args["args"] = [value]
        else:
            args[param] = value
        return args
    return build


# module, parameter, label in the message, build(value) -> args, accepted ids, check(fake, value)
MODULE_CASES = [
    (sge_submit, "name", "name", _submit("name"), {"subst-rel", "backticks-rel", "non-ascii"},
     lambda f, v: assert_one_argv_element(f, v, after="-N")),
    (sge_submit, "args", "args[0]", _submit("args"), ALL - {"nul"},
     lambda f, v: assert_one_argv_element(f, v, after="job.sh")),
    (sge_submit, "working_directory", "working_directory", _submit("working_directory"), NO_CONTROL,
     lambda f, v: assert_one_argv_element(f, v, after="-wd")),
    (sge_submit, "stdout_path", "stdout_path", _submit("stdout_path"), NO_CONTROL,
     lambda f, v: assert_one_argv_element(f, v, after="-o")),
    (sge_submit, "stderr_path", "stderr_path", _submit("stderr_path"), NO_CONTROL,
     lambda f, v: assert_one_argv_element(f, v, after="-e")),
    (sge_submit, "queue", "queue", _submit("queue"), {"long"},
     lambda f, v: assert_one_argv_element(f, v, after="-q")),
    (sge_submit, "host", "host", _submit("host"), set(), None),
    (sge_submit, "resources.key", "resources", _submit("resources.key"), {"long"},
     lambda f, v: assert_one_argv_element(f, v, after="-l", element="%s=1" % v)),
    (sge_submit, "resources.value", "resources.mem", _submit("resources.value"),
     {"long", "non-ascii", "option", "traversal", "glob"},
     lambda f, v: assert_one_argv_element(f, v, after="-l", element="mem=%s" % v)),
    (sge_exec_host, "name", "name", lambda v: {"name": v, "sge_root": SGE_ROOT}, set(), None),
    (sge_exec_host, "name (absent)", "name",
     lambda v: {"name": v, "state": "absent", "sge_root": SGE_ROOT}, set(), None),
    (sge_exec_host, "complex_values.key", "complex_values",
     lambda v: {"name": "node003", "complex_values": {v: 2}, "sge_root": SGE_ROOT}, {"long"},
     lambda f, v: assert_one_file_line(f, "complex_values", v)),
    (sge_exec_host, "complex_values.value", "complex_values.slots",
     lambda v: {"name": "node003", "complex_values": {"slots": v}, "sge_root": SGE_ROOT},
     # a trailing newline is stripped (the value becomes "node1")
     {"long", "non-ascii", "option", "traversal", "glob", "trailing-newline"},
     lambda f, v: assert_one_file_line(f, "complex_values", v)),
    (sge_hostgroup, "name", "name", lambda v: {"name": v, "hosts": ["node001"], "sge_root": SGE_ROOT},
     set(), None),
    (sge_hostgroup, "name after @", "name",
     lambda v: {"name": "@" + v, "hosts": ["node001"], "sge_root": SGE_ROOT}, {"long", "option"},
     lambda f, v: assert_one_file_line(f, "group_name", "@" + v)),
    (sge_hostgroup, "hosts", "hosts", lambda v: {"name": "@allhosts", "hosts": [v], "sge_root": SGE_ROOT},
     set(), None),
    (sge_queue, "name", "name", lambda v: {"name": v, "sge_root": SGE_ROOT}, {"long"},
     lambda f, v: assert_one_argv_element(f, v, after="-sq")),
    (sge_queue, "attributes.key", "attributes",
     lambda v: {"name": "all.q", "attributes": {v: "1"}, "sge_root": SGE_ROOT}, set(), None),
    (sge_queue, "attributes.value", "attributes.tmpdir",
     lambda v: {"name": "all.q", "attributes": {"tmpdir": v}, "sge_root": SGE_ROOT},
     NO_CONTROL | {"trailing-newline"},
     lambda f, v: assert_one_file_line(f, "tmpdir", v)),
    (sge_queue, "hosts", "hosts",
     lambda v: {"name": "all.q", "instance_state": "disabled", "hosts": [v], "sge_root": SGE_ROOT},
     set(), None),
    (sge_queue, "sge_cell", "sge_cell", lambda v: {"name": "all.q", "sge_cell": v, "sge_root": SGE_ROOT},
     set(), None),
    # (names of at most 255 characters, projects of at most 512, as the other object modules take
    # them: the 10,000-character name is refused too)
    (sge_rqs, "name", "name",
     lambda v: {"name": v, "limits": [{"project": "p", "host": "node001", "slots": 1}], "sge_root": SGE_ROOT},
     set(), None),
    (sge_rqs, "limits.project", "limits[0].project",
     lambda v: {"name": "fs", "limits": [{"project": v, "host": "node001", "slots": 1}], "sge_root": SGE_ROOT},
     set(), None),
    (sge_rqs, "limits.host", "limits[0].host",
     lambda v: {"name": "fs", "limits": [{"project": "p", "host": v, "slots": 1}], "sge_root": SGE_ROOT},
     set(), None),
    (sge_rqs, "description", "description",
     lambda v: {"name": "fs", "description": v, "limits": [{"project": "p", "host": "node001", "slots": 1}],
                "sge_root": SGE_ROOT},
     NO_CONTROL, lambda f, v: assert_one_file_line(f, "description", v)),
    (sge_queue_facts, "sge_cell", "sge_cell", lambda v: {"sge_cell": v, "sge_root": SGE_ROOT}, set(), None),
    (sge_queue_facts, "sge_root", "sge_root", lambda v: {"sge_root": v}, set(), None),
    (task_data, "job", "job", lambda v: {"data_root": "/srv/tasks", "job": v, "task": "0", "state": "absent"},
     set(), None),
    (task_data, "task", "task", lambda v: {"data_root": "/srv/tasks", "job": "logs", "task": v, "state": "absent"},
     set(), None),
    (task_data, "data_root", "data_root", lambda v: {"data_root": v, "state": "clean"}, set(), None),
    (task_data_info, "data_root", "data_root", lambda v: {"data_root": v}, set(), None),
    (ec2_node, "cluster", "cluster", lambda v: {"cluster": v, "name": "node003", "state": "absent"}, set(), None),
    (ec2_node, "name", "name", lambda v: {"cluster": "c", "name": v, "state": "absent"}, set(), None),
    (ec2_node_info, "cluster", "cluster", lambda v: {"cluster": v}, set(), None),
    (ec2_node_info, "name", "name", lambda v: {"cluster": "c", "name": v}, set(), None),
    (local_node, "name", "name", lambda v: {"name": v, "address": "10.77.0.13"}, set(), None),
    (local_node, "cluster", "cluster", lambda v: {"name": "node003", "address": "10.77.0.13", "cluster": v},
     set(), None),
    (local_node, "bridge", "bridge", lambda v: {"name": "node003", "address": "10.77.0.13", "bridge": v},
     set(), None),
    (local_node, "state_dir", "state_dir", lambda v: {"name": "node003", "address": "10.77.0.13", "state_dir": v},
     set(), None),
    (local_node_info, "name", "name", lambda v: {"name": v}, set(), None),
]


def _case_id(case):
    return "%s-%s" % (case[0].__name__.rsplit(".", 1)[-1], case[1].replace(" ", "_"))


@pytest.mark.parametrize("kind", HOSTILE_IDS)
@pytest.mark.parametrize("case", MODULE_CASES, ids=[_case_id(c) for c in MODULE_CASES])
def test_module_refuses_or_passes_as_one_argument(case, kind, owned, monkeypatch, tmp_path):
    module, dummy_param, label, build, accepts, check = case
    value = hostile(kind, owned)
    with open(tmp_path / "job.sh", "w") as handle:
        handle.write("#!/bin/sh\necho hello\n")
    monkeypatch.setattr(os, "geteuid", lambda: 0)      # local_node checks its inputs first
    result, fake = run_module(module, build(value), monkeypatch)
    if kind in accepts:
        assert not result["failed"] or fake.calls, "refused %s: %s" % (kind, result.get("msg"))
        check(fake, value)
    else:
        assert_rejected(result, fake, label)


@pytest.mark.parametrize("kind", HOSTILE_IDS)
def test_sge_submit_script_named_like_an_attack(kind, owned, monkeypatch, tmp_path):
    """A job script whose file name is hostile: refused naming ``script``, or passed as the one
    argv element after the options (never read as a qsub option)."""
    value = hostile(kind, owned)
    try:
        with open(os.path.join(str(tmp_path), value), "w") as handle:
            handle.write("#!/bin/sh\n")
    except (OSError, ValueError):
        pass
    result, fake = run_module(sge_submit, {"script": value, "sge_root": SGE_ROOT}, monkeypatch)
    if result["failed"]:
        assert_rejected(result, fake, "script")
    else:
        assert fake.calls == [[BIN + "qsub", "-terse", value]]
        assert not value.startswith("-")


@pytest.mark.parametrize("kind", HOSTILE_IDS)
def test_sge_queue_facts_queue_filter_never_reaches_a_command(kind, owned, monkeypatch):
    value = hostile(kind, owned)
    fake = FakeGridEngine()

    def answer(prog, args):
        name = {"qstat": "qstat_u_f_r.xml", "qhost": "qhost_q.xml"}[prog]
        with open(os.path.join(FIXTURES, "sge", "local_soge819", name), encoding="utf-8") as handle:
            return 0, handle.read(), ""
    fake.answer = answer
    result, fake = run_module(sge_queue_facts, {"sge_root": SGE_ROOT, "queues": [value]}, monkeypatch, fake=fake)
    assert not result["failed"], result
    assert [c[1:] for c in fake.calls] == [["-u", "*", "-f", "-r", "-xml"], ["-q", "-xml"]]


@pytest.mark.parametrize("kind", HOSTILE_IDS)
@pytest.mark.parametrize("param", ["job", "tasks", "switch.host", "move.source", "cluster"])
def test_task_registry_refuses_hostile_names(param, kind, owned, monkeypatch, tmp_path):
    value = hostile(kind, owned)
    path = str(tmp_path / "reg" / "tasks.json")
    os.makedirs(os.path.dirname(path))
    args = {"path": path}
    if param == "job":
        args["job"] = value
    elif param == "tasks":
        args.update(job="logs", tasks={"0": value})
    elif param == "switch.host":
        args["switch"] = {"job": "logs", "task": "0", "host": value}
    elif param == "move.source":
        args["move"] = {"job": "logs", "task": "0", "source": value, "target": "node002"}
    else:
        args = {"cluster": value}
    result, dummy = run_module(task_registry, args, monkeypatch, check_mode=(param == "cluster"))
    assert result["failed"], result
    assert param in result["msg"], result["msg"]
    assert not os.path.exists(path)


@pytest.mark.parametrize("kind", HOSTILE_IDS)
def test_balancer_state_refuses_hostile_cluster_names(kind, owned, monkeypatch):
    # a trailing newline and 10,000 characters passed before issue 20 (_CLUSTER_RE ended in $)
    value = hostile(kind, owned)
    result, dummy = run_module(balancer_state, {"cluster": value, "state": "read"}, monkeypatch, check_mode=True)
    assert result["failed"] and "cluster" in result["msg"], result


@pytest.mark.parametrize("kind", HOSTILE_IDS)
def test_balancer_journal_keeps_hostile_node_names_as_data(kind, owned, monkeypatch, tmp_path):
    """The journal (a reserved file) stores node names; whatever it accepts stays one JSON string
    and never reaches a command (the roles check the name before using it, see below)."""
    value = hostile(kind, owned)
    path = str(tmp_path / "journal.json")
    result, fake = run_module(balancer_journal, {"path": path, "node": value, "operation": "join"}, monkeypatch)
    assert fake.calls == []
    if not result["failed"]:
        with open(path, encoding="utf-8") as handle:
            assert [op["node"] for op in json.load(handle)["operations"]] == [value]
    else:
        assert "node" in result["msg"], result["msg"]


# ------------------------------------------------------------------------------- paths

@pytest.mark.parametrize("kind", ["subst", "semicolon", "backticks", "non-ascii", "option", "glob"])
def test_task_data_root_with_hostile_characters_stays_inside(kind, owned, monkeypatch, tmp_path):
    """An absolute data root whose name is hostile works, and nothing is written outside it."""
    root = os.path.join(str(tmp_path), "tasks " + hostile(kind, owned).replace("/", "_"))
    os.makedirs(os.path.join(root, "logs", "3"))
    with open(os.path.join(root, "logs", "3", "data"), "w") as handle:
        handle.write("x")
    outside = sorted(os.listdir(str(tmp_path)))
    result, dummy = run_module(task_data, {"data_root": root, "job": "logs", "task": "3", "state": "packed"},
                               monkeypatch)
    assert not result["failed"], result
    assert result["archive"] == os.path.join(root, ".outgoing", "logs.3.tar")
    assert sorted(os.listdir(str(tmp_path))) == outside


@pytest.mark.parametrize("member", ["../../etc/passwd", "/etc/passwd", "a/../../x"])
def test_task_data_archive_cannot_escape_the_copy(member, monkeypatch, tmp_path):
    root = str(tmp_path / "root")
    os.makedirs(root)
    archive = str(tmp_path / "evil.tar")
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo(member)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    before = sorted(os.listdir(str(tmp_path)))
    result, dummy = run_module(task_data, {"data_root": root, "job": "logs", "task": "3", "src": archive,
                                           "checksum": "sha256:0"}, monkeypatch)
    assert result["failed"] and "outside the copy" in result["msg"], result
    assert sorted(os.listdir(str(tmp_path))) == before
    assert os.listdir(root) == []          # refused before anything was written (issue 20)


def test_task_data_refuses_the_file_system_root(monkeypatch):
    result, dummy = run_module(task_data, {"data_root": "/", "job": "etc", "task": "ssh", "state": "absent"},
                               monkeypatch)
    assert result["failed"] and "data_root" in result["msg"], result


def test_local_node_never_touches_a_directory_that_is_not_a_node(monkeypatch, tmp_path):
    """state_dir=/var/lib with name=dpkg must not remove dpkg: a directory without the node's
    record or PID 1 script is refused, in check mode too."""
    foreign = tmp_path / "dpkg"
    foreign.mkdir()
    (foreign / "status").write_text("precious\n")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    for state, check_mode in (("absent", True), ("absent", False), ("present", True)):
        result, fake = run_module(local_node, {"name": "dpkg", "address": "10.77.0.13", "state": state,
                                               "state_dir": str(tmp_path)}, monkeypatch, check_mode=check_mode)
        assert result["failed"] and "not a node directory" in result["msg"], result
        assert fake.calls == []
        assert (foreign / "status").read_text() == "precious\n"


# ------------------------------------------------------------------------------- inventory

def _inventory_fixture(name):
    with open(os.path.join(FIXTURES, "inventory", name), "rb") as handle:
        return handle.read()


def _xml_attr(value):
    return (value.replace("&", "&amp;").replace("'", "&apos;").replace("<", "&lt;")
            .replace("\n", "&#10;"))


SAFE_GROUP = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


@pytest.mark.parametrize("kind", [k for k in HOSTILE_IDS if k != "nul"] + ["dash-host", "uppercase-ok"])
def test_inventory_hostile_host_names_never_become_hosts_or_groups(kind):
    value = {"dash-host": "-oProxyCommand=id", "uppercase-ok": "NODE001"}.get(kind) or hostile(kind, "/tmp/owned")
    xml = _inventory_fixture("qhost_xml_q_3hosts.xml").replace(
        b"<host name='node001'>", ("<host name='%s'>" % _xml_attr(value)).encode("utf-8"))
    model = inv.build_inventory(xml, hostgroup_text=_inventory_fixture("qconf_shgrp_allhosts_3hosts.txt"))
    groups = inv.group_names(model, "c")
    if kind == "uppercase-ok":
        assert value in model["hosts"]
    else:
        assert value not in model["hosts"]
        assert any(repr(value) in w for w in model["warnings"]), model["warnings"]
    for raw, members in groups.items():
        assert SAFE_GROUP.match(to_safe_group_name(raw, force=True, silent=True)), raw
        assert value not in members or kind == "uppercase-ok"
    for host in model["hosts"]:
        assert inv.valid_host(host)


@pytest.mark.parametrize("kind", [k for k in HOSTILE_IDS if k != "nul"])
def test_inventory_hostile_queue_and_state_never_break_group_names(kind):
    value = hostile(kind, "/tmp/owned")
    xml = _inventory_fixture("qhost_xml_q_3hosts.xml").replace(b"'all.q'", ("'%s'" % _xml_attr(value)).encode("utf-8"))
    model = inv.build_inventory(xml)
    for raw in inv.group_names(model, "c"):
        assert SAFE_GROUP.match(to_safe_group_name(raw, force=True, silent=True)), raw
    assert value not in model["queues"] or inv.valid_queue(value)
    # state letters are single characters turned into names; an unknown one stays safe too
    fake = {"hosts": {}, "hostgroups": {}, "queues": {}, "states": {value[:1]: ["node001"]}, "master": None}
    for raw in inv.group_names(fake, "c"):
        assert SAFE_GROUP.match(to_safe_group_name(raw, force=True, silent=True)), raw


def test_inventory_hostile_host_group_names_never_reach_qconf():
    with pytest.raises(inv.InventoryDataError):
        inv.shgrp_args(["@allhosts", "-km"])
    warnings = []
    names = inv.parse_hostgroup_names(b"@allhosts\n-km\n@a;id\n@$(id)\n@\xc3\xb6\n@" + b"a" * 10000 + b"\n", warnings)
    assert names == ["@allhosts", "@" + "a" * 10000]
    assert len(warnings) == 4
    assert inv.shgrp_args(names) == ["-shgrp", "@allhosts", "-shgrp", "@" + "a" * 10000]


# ------------------------------------------------------------------------------- transfer

def test_transfer_methods_pass_job_data_as_single_arguments(owned):
    """The starter's partner qsub (reserved file transfer.py, being reworked): job name, output
    paths and job arguments from the job's environment are single argv elements."""
    from ansible_collections.gridengine.balancer.plugins.module_utils import transfer
    environ = {"JOB_ID": "12", "JOB_NAME": "J\u00f6b$(touch owned)`id`;x",
               "SGE_STDOUT_PATH": "/tmp/$(touch %s)" % owned, "SGE_CWD_PATH": "/home/u/-km dir"}
    args = ["-km", "$(touch %s)" % owned, "a\nb", "*", "../../etc/passwd"]
    cfg = {"bin_dir": "/usr/bin", "local": {"cell": "default", "root": "/var/lib/gridengine"},
           "remote": {"name": "remote", "cell": "remote", "root": "/var/lib/gridengine"}}
    candidates = {"cfg": cfg, "partner": cfg["remote"], "command": "/var/spool/x/job_scripts/12",
                  "args": args, "token": "tq12_0_ab", "environ": environ, "cwd": "/home/u"}
    params = inspect.signature(transfer.build_qsub_argv).parameters
    missing = [p for p, spec in params.items() if spec.default is inspect.Parameter.empty and p not in candidates]
    if missing:
        pytest.skip("transfer.build_qsub_argv takes %s now: update this test" % ", ".join(missing))
    argv = transfer.build_qsub_argv(**{p: candidates[p] for p in params if p in candidates})
    assert argv[-len(args):] == args
    assert argv[argv.index("-N") + 1] == "tq12_0_ab_" + environ["JOB_NAME"]
    assert argv[argv.index("-o") + 1] == environ["SGE_STDOUT_PATH"]
    assert argv[argv.index("-wd") + 1] == environ["SGE_CWD_PATH"]
    for bad in ("12;id", "-1", "../12"):
        with pytest.raises(transfer.TransferError):
            transfer.record_name(bad, "1")


def test_transfer_binary_job_starting_with_a_dash_is_not_an_option():
    """A binary job (qsub -b y) whose command starts with '-' would be read by the partner's qsub
    as an option (it follows '-b y'): reserved file, reported with the fix."""
    from ansible_collections.gridengine.balancer.plugins.module_utils import transfer
    cfg = {"bin_dir": "/usr/bin", "local": {"cell": "default", "root": "/r"},
           "remote": {"name": "remote", "cell": "remote", "root": "/r"}}
    candidates = {"cfg": cfg, "partner": cfg["remote"], "command": "-km", "args": [], "token": "tq1_0_a",
                  "environ": {"JOB_ID": "1"}, "cwd": "/tmp"}
    params = inspect.signature(transfer.build_qsub_argv).parameters
    if [p for p, spec in params.items() if spec.default is inspect.Parameter.empty and p not in candidates]:
        pytest.skip("transfer.build_qsub_argv changed: update this test")
    try:
        argv = transfer.build_qsub_argv(**{p: candidates[p] for p in params if p in candidates})
    except transfer.TransferError:
        return
    assert not (argv[-1] == "-km" and argv[-3:-1] == ["-b", "y"]), \
        "transfer.build_qsub_argv passes a binary command starting with '-' right after '-b y'"


# ------------------------------------------------------------------------------- roles

def _load(path):
    return DataLoader().load_from_file(os.path.join(REPO, path))


def _defaults(role):
    data = _load("roles/%s/defaults/main.yml" % role) or {}
    return dict(data)


def _plays(path):
    """A playbook's entries, with the plays of an ``import_playbook`` in its place (each marked
    ``imported``, with the import's ``vars`` merged into its own)."""
    for item in _load(path):
        target = item.get("ansible.builtin.import_playbook") or item.get("import_playbook")
        if target and "{{" not in target:
            for play in _plays(os.path.join(os.path.dirname(path), target)):
                yield dict(play, imported=True, vars=dict(play.get("vars") or {}, **(item.get("vars") or {})),
                           vars_files=[os.path.join(os.path.dirname(target), f) for f in play.get("vars_files") or []])
        else:
            yield item


def _asserts(path, first_play_only=False):
    """The ``that`` conditions of the assert tasks of a task file or of a playbook's plays (with
    ``first_play_only``: of the plays up to the first one with tasks that is not imported, i.e. the
    shared checks a playbook imports first, playbooks/common/cluster_group.yml, and its own)."""
    return list(_asserts_read(path, first_play_only))


@functools.lru_cache(maxsize=None)
def _asserts_read(path, first_play_only):
    """_asserts, read once per file (a run asks for the same file's checks thousands of times)."""
    data = list(_plays(path)) if path.startswith("playbooks/") else _load(path)
    tasks = []
    for item in data:
        if "hosts" in item:
            tasks.extend(item.get("tasks") or [])
            if first_play_only and tasks and not item.get("imported"):
                break
        else:
            tasks.append(item)
    conditions = []
    for task in tasks:
        spec = task.get("ansible.builtin.assert")
        if spec:
            that = spec["that"]
            conditions.extend([that] if isinstance(that, str) else list(that))
    return tuple(conditions)


def failing(conditions, variables):
    """The conditions that are false or fail to evaluate with ``variables`` (Ansible's assert
    fails on both)."""
    templar = Templar(loader=DataLoader(), variables=variables)
    out = []
    for cond in conditions:
        try:
            if not templar.evaluate_conditional(trust_as_template(cond)):
                out.append(cond)
        except Exception:  # pylint: disable=broad-except
            out.append(cond)
    return out


GROUPS = {"mycluster_master": ["vm"], "mycluster_nodes": ["node001"], "all": ["vm", "node001"]}

ROLE_CASES = [
    # task file, variables that pass, {variable: hostile ids accepted}, how a hostile value is given
    ("roles/node_join/tasks/validate.yml", "node_join",
     {"node_join_cluster": "mycluster", "node_join_name": "node003", "node_join_master_name": "vm",
      "groups": GROUPS, "inventory_hostname": "vm"},
     {"node_join_cluster": set(), "node_join_name": set(), "node_join_provider": {"long"},
      # option words only: no space, parenthesis, slash or line break reaches /etc/exports or fstab
      "node_join_export_options": {"long", "option"}, "node_join_mount_options": {"long", "option"},
      "node_join_sge_root": set(),
      "node_join_sge_cell": {"long"}, "node_join_hostgroup": set(), "node_join_queue": {"long"},
      "node_join_job_user": set(), "node_join_master_name": set(), "node_join_exports": set(),
      "node_join_sge_qmaster_port": set(), "node_join_sge_execd_port": set()}),
    ("roles/node_leave/tasks/validate.yml", "node_leave",
     {"node_leave_cluster": "mycluster", "node_leave_name": "node003", "groups": GROUPS,
      "inventory_hostname": "vm", "node_leave_is_master": False, "node_leave_master_name": "vm"},
     {"node_leave_cluster": set(), "node_leave_name": set(), "node_leave_provider": {"long"},
      "node_leave_sge_root": set(), "node_leave_sge_cell": {"long"}, "node_leave_hostgroup": set(),
      "node_leave_exports": set(), "node_leave_execd_spool_dir": set(),
      "node_leave_sge_qmaster_port": set(), "node_leave_sge_execd_port": set()}),
    ("roles/task_rebalance/tasks/main.yml", "task_rebalance",
     {"task_rebalance_cluster": "mycluster", "task_rebalance_mode": "host", "task_rebalance_host": "node001",
      "task_rebalance_stage_dir": "/tmp/gridengine-balancer-moves"},     # the default is an env lookup
     {"task_rebalance_cluster": {"long"}, "task_rebalance_host": set(), "task_rebalance_job": set(),
      "task_rebalance_hosts": set(), "task_rebalance_data_root": set(), "task_rebalance_queue": {"long"},
      "task_rebalance_sge_cell": {"long"}, "task_rebalance_stage_dir": set()}),
    ("roles/sge_master/tasks/validate.yml", "sge_master", {},
     {"sge_master_root": set(), "sge_master_cell": {"long"}, "sge_master_name": set(),
      "sge_master_hosts_address": set(), "sge_master_hostgroup": set(), "sge_master_queue": {"long"},
      "sge_master_pe": {"long"}, "sge_master_queue_load_thresholds": {"long"},
      "sge_master_schedule_interval": set(), "sge_master_execd_gid_range": set(),
      "sge_master_job_user": set(), "sge_master_work_dir": set()}),
    ("roles/provider_local/tasks/launch.yml", "provider_local",
     {"provider_local_node_name": "node003", "provider_local_node_address": "10.77.0.13"},
     {"provider_local_data_disk_size": set(), "provider_local_data_disk_path": set()}),
]
# issue 20: the roles that write Grid Engine objects or sourced files from their variables; the
# values accepted are exactly those module_utils/role_inputs.py accepts (tests/unit/test_role_inputs.py)
for _role, _path, _base in (("transfer_queue", "roles/transfer_queue/tasks/main.yml", {}),
                            ("sge_cell", "roles/sge_cell/tasks/main.yml", {"sge_cell_master": "vm"})):
    ROLE_CASES.append((_path, _role, _base, {
        var: {k for k in HOSTILE_IDS if role_inputs.valid(kind, dict(HOSTILE)[k].format(owned="/tmp/owned"))}
        for var, kind in role_inputs.ROLE_VARIABLES[_role].items()}))

PLAYBOOK_CASES = [
    ("playbooks/loadbalance.yml", {"cluster": "mycluster", "groups": GROUPS}, "cluster", set()),
    ("playbooks/rebalance.yml", {"cluster": "mycluster", "groups": GROUPS}, "cluster", set()),
    ("playbooks/node_add.yml", {"cluster": "mycluster", "groups": GROUPS}, "cluster", set()),
    ("playbooks/node_add.yml", {"cluster": "mycluster", "groups": GROUPS, "node": "node007"}, "node", set()),
    ("playbooks/node_remove.yml", {"cluster": "mycluster", "groups": GROUPS, "node": "node003"}, "cluster", set()),
    ("playbooks/node_remove.yml", {"cluster": "mycluster", "groups": GROUPS, "node": "node003"}, "node", set()),
    ("playbooks/fairshare.yml", {"cluster": "mycluster", "groups": GROUPS, "fairshare_rqs_name": "fairshare",
                                 "fairshare_desired": {"a": 100}}, "cluster", set()),
    ("playbooks/fairshare.yml", {"cluster": "mycluster", "groups": GROUPS, "fairshare_rqs_name": "fairshare",
                                 "fairshare_desired": {"a": 100}}, "fairshare_rqs_name", {"long"}),
    ("playbooks/local_cluster.yml", {"cluster": "mycluster", "groups": GROUPS}, "cluster", set()),
    ("playbooks/multicluster.yml", {"cluster": "mycluster", "groups": GROUPS}, "cluster", set()),
]


def _role_vars(role, base):
    """The role's defaults, rendered as Ansible would (they refer to each other and to the
    cluster_* group vars), with ``base`` on top: a new dict each call (callers set variables in
    it), rendered once per role and base."""
    return dict(_role_vars_rendered(role, json.dumps(base, sort_keys=True)))


@functools.lru_cache(maxsize=None)
def _role_vars_rendered(role, base_json):
    variables = json.loads(base_json)
    templates = {k: v for k, v in _defaults(role).items() if k not in variables}
    rendered = dict(templates)
    for dummy_pass in range(4):          # defaults refer to defaults: render from the originals again
        known = dict(rendered, **variables)
        for key, value in templates.items():
            try:
                rendered[key] = _render(value, known) if isinstance(value, str) else value
            except Exception:  # pylint: disable=broad-except
                rendered[key] = value
    variables.update(rendered)
    return variables


@pytest.mark.parametrize("case", ROLE_CASES, ids=[c[1] for c in ROLE_CASES])
def test_role_input_checks_pass_good_values(case):
    path, role, base, dummy = case
    assert failing(_asserts(path), _role_vars(role, base)) == []


ROLE_PARAMS = [(c, var, kind) for c in ROLE_CASES for var in sorted(c[3]) for kind in HOSTILE_IDS]


@pytest.mark.parametrize("case, var, kind", ROLE_PARAMS,
                         ids=["%s-%s-%s" % (c[1], v, k) for c, v, k in ROLE_PARAMS])
def test_role_input_checks_refuse_hostile_values(case, var, kind):
    path, role, base, accepted = case
    value = hostile(kind, "/tmp/owned")
    variables = _role_vars(role, base)
    if var in ("node_join_exports", "node_leave_exports", "task_rebalance_hosts"):
        variables[var] = ["/home", value] if "exports" in var else ["node001", value]
    else:
        variables[var] = value
    refused = failing(_asserts(path), variables)
    if kind in accepted[var]:
        assert refused == [], refused
    else:
        assert refused, "%s=%r passed the checks of %s" % (var, value, path)


def _check_vars(path):
    """The variables the checks of ``_asserts(path, first_play_only=True)`` see: the vars and
    vars_files of those plays (playbooks/vars/cluster_group.yml holds the cluster check), as the
    templates Ansible takes them for."""
    found = {}
    for item in _plays(path):
        if "hosts" not in item:
            continue
        for name in item.get("vars_files") or []:
            found.update(_load(os.path.normpath(os.path.join(os.path.dirname(path), name))) or {})
        found.update(item.get("vars") or {})
        if item.get("tasks") and not item.get("imported"):
            break
    return {k: trust_as_template(v) if isinstance(v, str) else v for k, v in found.items()}


@pytest.mark.parametrize("kind", HOSTILE_IDS)
@pytest.mark.parametrize("case", PLAYBOOK_CASES, ids=["%s-%s" % (os.path.basename(c[0]), c[2]) for c in PLAYBOOK_CASES])
def test_playbook_input_checks_refuse_hostile_values(case, kind):
    path, base, var, accepted = case
    conditions = _asserts(path, first_play_only=True)
    base = dict(_check_vars(path), **base)
    assert conditions and failing(conditions, dict(base)) == []
    refused = failing(conditions, dict(base, **{var: hostile(kind, "/tmp/owned")}))
    assert bool(refused) != (kind in accepted), (var, kind, refused)


# ------------------------------------------------------------------------ NFS exports (part 7)

def _task(path, name):
    for task in _load(path):
        if task.get("name") == name:
            return task
    raise AssertionError("no task %r in %s" % (name, path))


def _render(template, variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(template))


@pytest.mark.parametrize("server", ["kernel", "ganesha"])
@pytest.mark.parametrize("address", ["10.77.0.13", "fd00::13"])
def test_node_join_exports_each_share_to_the_node_address_only(address, server):
    """issue 25: the stage is one gridengine.balancer.nfs_export call; its arguments are rendered
    here and the module's own renderer makes the lines / blocks."""
    task = _task("roles/node_join/tasks/exports.yml", "Export the shares to the new node only")
    spec = task["gridengine.balancer.nfs_export"]
    variables = dict(_role_vars("node_join", {"node_join_cluster": "c", "node_join_name": "n1",
                                              "cluster_nfs_server": server}),
                     node_join_node_address=address)
    clients = [_render(c, variables) for c in spec["clients"]]
    paths = _render(spec["paths"], variables)
    assert clients == [address] and _render(spec["state"], variables) == "present"
    assert _render(spec["server"], variables) == server
    if server == "kernel":
        text, dummy = nfs_export_utils.apply_kernel("", paths, clients, _render(spec["options"], variables), "present")
        for share, line in zip(("/home", "/var/lib/gridengine"), text.splitlines()):
            assert line == "%s %s(rw,sync,root_squash,no_subtree_check)" % (share, address)
            # one client per line, no wildcard, no network, no second host
            assert re.fullmatch(r"/\S* [0-9A-Fa-f:.]+\([A-Za-z0-9_=,:.-]+\)", line), line
    else:
        text, dummy = nfs_export_utils.apply_ganesha("", paths, clients, "present",
                                                     squash=_render(spec["squash"], variables))
        assert re.findall(r"Clients = (.*);", text) == [address, address]
        assert text.count("Access_Type = None;") == 2 and text.count("Squash = root_squash;") == 4


def test_node_leave_removes_only_the_node_address_lines():
    spec = _task("roles/node_leave/tasks/unexport.yml", "Stop exporting the shares to the node")["gridengine.balancer.nfs_export"]
    assert spec["clients"] == "{{ node_leave_addresses }}" and spec["state"] == "absent"
    kept = ["/home 10.77.0.130(rw)", "/home 10.77.0.12(rw)", "/home *(rw)", "/home2 10.77.0.13(rw)",
            "/home 10x77x0x13(rw)"]
    text = "\n".join(["/home 10.77.0.13(rw,sync)"] + kept) + "\n"
    new, changes = nfs_export_utils.apply_kernel(text, ["/home"], ["10.77.0.13"], "rw", "absent")
    assert new.splitlines() == kept and changes == ["- /home 10.77.0.13(rw,sync)"]


@pytest.mark.parametrize("value", ["", "*", "10.77.0.0/24", "10.77.0.13 *", "10.77.0.13\n", "node003",
                                   "$(touch /tmp/owned)", "0.0.0.0", "255.255.255.255", "::", "-km",
                                   "10.77.0.13(rw)", "fe80::1%eth0"])
def test_node_addresses_are_single_host_addresses(value):
    """node_join writes provider_node.address into /etc/exports and /etc/hosts only through the
    host_address filter: anything but one host's address fails the join."""
    with pytest.raises(Exception):
        host_address(value)


def test_role_tasks_that_write_files_set_mode_and_owner():
    """Least privilege (part 7): every template/copy/file/lineinfile/blockinfile task of the roles
    this change owns that creates or rewrites a file or directory sets ``mode``; the ones that
    run as root on the master or a node also set ``owner``. Reserved roles are left out (reported
    in docs/reliability/privileges.md)."""
    writers = {"ansible.builtin.template", "ansible.builtin.copy", "ansible.builtin.file",
               "ansible.builtin.lineinfile", "ansible.builtin.blockinfile"}
    # tasks on the controller (owner = the user running the playbook) or of task data (owner =
    # the user the role connects as)
    no_owner = {"Write the inventory file of live nodes", "Create the stage directory on the controller",
                "Create the incoming directory on the target", "Send the archive to the target"}
    missing = []
    for role in ("node_join", "node_leave", "provider_local", "provider_ec2", "sge_master", "task_rebalance",
                 "transfer_queue"):
        tasks_dir = os.path.join(REPO, "roles", role, "tasks")
        for name in sorted(os.listdir(tasks_dir)):
            stack = list(_load(os.path.join("roles", role, "tasks", name)) or [])
            while stack:
                task = stack.pop()
                for key in ("block", "rescue", "always"):
                    stack.extend(task.get(key) or [])
                for module in writers & set(task):
                    spec = task[module]
                    if spec.get("state") == "absent" or module == "ansible.builtin.lineinfile" and spec.get("state") == "absent":
                        continue
                    if "mode" not in spec:
                        missing.append("%s/%s: %s has no mode" % (role, name, task.get("name")))
                    if "owner" not in spec and task.get("name") not in no_owner:
                        missing.append("%s/%s: %s has no owner" % (role, name, task.get("name")))
    assert missing == [], "\n".join(missing)


def _documentation(module):
    """A module's DOCUMENTATION followed by that of the collection's doc fragments it extends
    (an option shared by several modules is documented in a fragment)."""
    text = module.DOCUMENTATION
    for name in yaml.safe_load(text).get("extends_documentation_fragment") or []:
        if name.startswith("gridengine.balancer."):
            parts = name.split(".")[2:]
            fragment = importlib.import_module("ansible_collections.gridengine.balancer.plugins.doc_fragments."
                                               + parts[0]).ModuleDocFragment
            text += getattr(fragment, parts[1].upper() if len(parts) > 1 else "DOCUMENTATION")
    return text


def test_module_docs_name_the_checks():
    """The modules whose validation changed say so in their DOCUMENTATION (or a doc fragment it extends)."""
    for module, text in ((sge_submit, "leading C(-)"), (task_data, "C(/) and paths with control"),
                         (task_registry, "RFC 1123 host names"), (local_node, "is not a node's;"),
                         (sge_exec_host, "complex names"), (ec2_node, "before any API call")):
        assert text in _documentation(module), (module.__name__, text)
        yaml.safe_load(module.DOCUMENTATION)


@pytest.mark.parametrize("path, role, var", [
    ("roles/task_rebalance/tasks/main.yml", "task_rebalance", "task_rebalance_data_root"),
    ("roles/node_leave/tasks/validate.yml", "node_leave", "node_leave_execd_spool_dir"),
    ("roles/sge_master/tasks/validate.yml", "sge_master", "sge_master_work_dir"),
])
def test_role_paths_that_are_removed_or_written_under_are_never_the_root(path, role, var):
    case = [c for c in ROLE_CASES if c[0] == path][0]
    variables = _role_vars(role, case[2])
    for good in ("/srv/x", "/srv/x/"):
        assert failing(_asserts(path), dict(variables, **{var: good})) == [], good
    for bad in ("/", "//", "srv/x", "/srv/x\n"):
        assert failing(_asserts(path), dict(variables, **{var: bad})), bad
