# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Table-driven tests of the Grid Engine admin modules (after community.general's
``test_pacemaker_info.{py,yaml}``).

Each case of ``test_<module>.yaml`` gives the module arguments, the commands the module must
run in order (argv, with ``qconf``/``qmod``/... for the binary), what each returns (``rc``,
``out`` or ``out_file`` from ``tests/unit/fixtures/qconf/``, ``err``) and the result expected.

Case keys:
  id, args, check_mode (bool), diff (bool, default true)
  commands: list of {argv, rc=0, out="" | out_file + out_replace, err="" | err_replace,
                     capture, file | file_fixture + file_replace}
      ``capture`` names what Grid Engine answered to the same command on the real cluster,
      instead of ``rc``/``out``/``err``: ``captured_access/NAME`` (the ``NAME.rc``, ``.out``
      and ``.err`` files of tests/capture/capture_access.py) or ``captured_objects/meta.json#KEY``
      (an answer recorded by tests/capture/capture_qconf_objects.py); the command the capture
      ran must be the case's ``argv`` (a ``{file}`` stands for the capture's temporary file).
      ``out_replace``/``err_replace`` apply on top, where a case needs a variant.
      ``{file}`` in argv is the temporary object file; ``file`` is its expected content, or
      ``file_fixture`` names a fixture whose text it must be (after the ``file_replace``
      substitutions); checked while the command runs, together with mode 0600; the file must
      be gone afterwards.
  expect: {failed=false, changed, msg, msg_contains: [..], commands, diff: {before, after},
           warnings_contain: [..], result: {subset of the other return values}}
  clock: for retry cases, seconds the fake clock advances with each command (default 0)
  act_qmaster: host name written to $SGE_ROOT/default/common/act_qmaster of a temporary
      SGE_ROOT (otherwise SGE_ROOT does not exist)

Every call is checked: argv is a list (never a string), no shell, LC_ALL=C, SGE_ROOT and
SGE_CELL in the environment, ``expand_user_and_vars`` off; in check mode no command that
changes the cluster may run.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shutil
import stat
import tempfile

import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_admin

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "fixtures", "qconf"))
SGE_ROOT = "/nonexistent/sge-root"
BIN = SGE_ROOT + "/bin/lx-amd64/"
FILE = "{file}"

MUTATING_QCONF = ("-A", "-M", "-a", "-d", "-k", "-m", "-r", "-p")


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def load_cases(test_file):
    path = os.path.splitext(test_file)[0] + ".yaml"
    with open(path) as handle:
        data = yaml.safe_load(handle)
    return data["test_cases"]


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def _captured_argv(name):
    """argv the capture program recorded for ``name`` (see ``capture`` above)."""
    if "#" in name:
        path, key = name.split("#", 1)
        with open(os.path.join(FIXTURES, path)) as handle:
            return json.load(handle)["answers"][key]["argv"]
    directory, base = os.path.split(name)
    with open(os.path.join(FIXTURES, directory, "meta.json")) as handle:
        commands = json.load(handle)["commands"]
    found = [c for c in commands if c["name"] == base]
    assert len(found) == 1, "%s is not one command of %s/meta.json" % (name, directory)
    return found[0]["argv"]


def captured(name):
    """(rc, out, err) Grid Engine answered on the real cluster (see ``capture`` above)."""
    if "#" in name:
        path, key = name.split("#", 1)
        with open(os.path.join(FIXTURES, path)) as handle:
            answer = json.load(handle)["answers"][key]
        return answer["rc"], answer["stdout"], answer["stderr"]
    return int(fixture(name + ".rc")), fixture(name + ".out"), fixture(name + ".err")


def _check_capture_argv(index, name, want):
    got = _captured_argv(name)
    same = len(got) == len(want) and all(w == FILE or g == w for g, w in zip(got, want))
    assert same, "command #%d: capture %s ran %r, not %r" % (index + 1, name, got, want)


def expected_file(exp):
    """``file``, or ``file_fixture`` with the ``file_replace`` line substitutions applied."""
    if "file" in exp:
        return exp["file"]
    text = fixture(exp["file_fixture"])
    for old, new in (exp.get("file_replace") or {}).items():
        assert old in text, "%r not in %s" % (old, exp["file_fixture"])
        text = text.replace(old, new)
    return text


def _is_mutating(argv):
    prog = os.path.basename(argv[0])
    if prog == "qmod":
        return True
    if prog == "qconf":
        return any(a.startswith(MUTATING_QCONF) and not a.startswith("-s") for a in argv[1:2])
    return False


class FakeRunner(object):
    def __init__(self, case, clock):
        self.expected = list(case.get("commands") or [])
        self.calls = []
        self.files = []
        self.check_mode = bool(case.get("check_mode"))
        self.clock = clock
        self.step = float(case.get("clock", 0))
        self.sge_root = SGE_ROOT

    def __call__(self, module, args, **kwargs):
        assert isinstance(args, list), "argv must be a list, got %r" % (args,)
        assert not kwargs.get("use_unsafe_shell"), "a shell was asked for: %r" % (args,)
        assert kwargs.get("expand_user_and_vars") is False, "expand_user_and_vars must be off"
        env = kwargs.get("environ_update") or {}
        assert env.get("LC_ALL") == "C", env
        assert env.get("SGE_ROOT") == self.sge_root, env
        assert env.get("SGE_CELL"), env
        assert os.path.dirname(args[0]) + "/" == BIN, args
        actual = [os.path.basename(args[0])] + list(args[1:])
        index = len(self.calls)
        self.calls.append(actual)
        if self.check_mode:
            assert not _is_mutating(args), "check mode ran a changing command: %r" % (actual,)
        assert index < len(self.expected), (
            "unexpected command #%d %r (expected only %d)" % (index + 1, actual, len(self.expected)))
        exp = self.expected[index]
        want = [str(a) for a in exp["argv"]]
        assert len(actual) == len(want), "command #%d: %r != %r" % (index + 1, actual, want)
        for got, expected_arg in zip(actual, want):
            if expected_arg == FILE:
                assert os.path.isfile(got), "command #%d: no object file %r" % (index + 1, got)
                mode = stat.S_IMODE(os.stat(got).st_mode)
                assert mode == 0o600, "object file mode %o" % mode
                with open(got) as handle:
                    content = handle.read()
                want_file = expected_file(exp)
                assert content == want_file, (
                    "command #%d object file:\n%s\n!=\n%s" % (index + 1, content, want_file))
                self.files.append(got)
            else:
                assert got == expected_arg, "command #%d: %r != %r" % (index + 1, actual, want)
        self.clock[0] += self.step
        if "capture" in exp:
            assert not set(exp) & {"rc", "out", "out_file", "err"}, (
                "command #%d: capture %s with its own rc/out/err" % (index + 1, exp["capture"]))
            _check_capture_argv(index, exp["capture"], want)
            rc, out, err = captured(exp["capture"])
        else:
            rc = exp.get("rc", 0)
            out = fixture(exp["out_file"]) if "out_file" in exp else exp.get("out", "")
            err = exp.get("err", "")
        source = exp.get("capture") or exp.get("out_file")
        for old, new in (exp.get("out_replace") or {}).items():
            assert old in out, "%r not in %s" % (old, source)
            out = out.replace(old, new)
        for old, new in (exp.get("err_replace") or {}).items():
            assert old in err, "%r not in the stderr of %s" % (old, source)
            err = err.replace(old, new)
        if kwargs.get("encoding", "utf-8") is None:
            out = out.encode("utf-8")
            err = err.encode("utf-8")
        return rc, out, err


def run_case(module, case, monkeypatch):
    clock = [1000.0]
    sleeps = []

    def fake_sleep(seconds):
        sleeps.append(seconds)
        clock[0] += seconds

    runner = FakeRunner(case, clock)

    def exit_json(self, **kwargs):
        kwargs.setdefault("failed", False)
        raise ExitJson(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs["failed"] = True
        kwargs["msg"] = msg
        raise FailJson(kwargs)

    def run_command(self, args, **kwargs):
        return runner(self, args, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: BIN + name)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, text: warnings.append(text))
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(sge_admin, "_sleep", fake_sleep)
    monkeypatch.setattr(sge_admin, "_clock", lambda: clock[0])

    args = dict(case.get("args") or {})
    args.setdefault("sge_root", SGE_ROOT)
    if case.get("act_qmaster"):
        # a cell directory that names the qmaster host
        root = tempfile.mkdtemp(prefix="sge-root-")
        os.makedirs(os.path.join(root, "default", "common"))
        with open(os.path.join(root, "default", "common", "act_qmaster"), "w") as handle:
            handle.write(case["act_qmaster"] + "\n")
        args["sge_root"] = runner.sge_root = root
    args["_ansible_check_mode"] = bool(case.get("check_mode"))
    args["_ansible_diff"] = case.get("diff", True)
    result = None
    with patch_module_args(args):
        try:
            module.main()
        except (ExitJson, FailJson) as exc:
            result = exc.args[0]
        else:
            raise AssertionError("the module returned without exit_json/fail_json")
        finally:
            if case.get("act_qmaster"):
                shutil.rmtree(args["sge_root"])

    assert len(runner.calls) == len(runner.expected), (
        "ran %d of %d expected commands; missing from #%d: %r\nresult: %r"
        % (len(runner.calls), len(runner.expected), len(runner.calls) + 1,
           runner.expected[len(runner.calls)]["argv"], result))
    for path in runner.files:
        assert not os.path.exists(path), "object file %s left behind" % path

    expect = case.get("expect") or {}
    assert result["failed"] == expect.get("failed", False), result
    if "changed" in expect:
        assert result.get("changed") == expect["changed"], result
    if "msg" in expect:
        assert result.get("msg") == expect["msg"], result.get("msg")
    for part in expect.get("msg_contains") or []:
        assert part in result.get("msg", ""), (part, result.get("msg"))
    if "commands" in expect:
        assert result.get("commands") == expect["commands"], result.get("commands")
    if "diff" in expect:
        diff = result.get("diff") or {}
        assert diff.get("before") == expect["diff"]["before"], diff.get("before")
        assert diff.get("after") == expect["diff"]["after"], diff.get("after")
    for part in expect.get("warnings_contain") or []:
        assert any(part in w for w in warnings), (part, warnings)
    if "warnings_contain" not in expect and not result["failed"]:
        assert not warnings, warnings
    for key, value in (expect.get("result") or {}).items():
        assert result.get(key) == value, (key, result.get(key), value)
    if "sleeps" in expect:
        assert sleeps == expect["sleeps"], sleeps
    return result
