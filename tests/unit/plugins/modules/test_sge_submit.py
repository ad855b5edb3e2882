# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.sge_submit, driven by test_sge_submit.yaml.

Case keys: id, args, check_mode, commands (list of {argv, rc=0, out="", err=""}: the commands the
module must run, in order, with ``qsub`` for the binary) and expect ({failed=false, changed, msg,
msg_contains: [..], result: {subset of the return values}}). ``{script}`` stands for a real job
script in a temporary directory, ``{bin}`` for the directory of the Grid Engine binaries.

Every call is checked: argv is a list (never a string), no shell, LC_ALL=C, SGE_ROOT and
SGE_CELL in the environment, ``expand_user_and_vars`` off. Nothing is ever executed: the
hostile strings (``$(touch /tmp/owned)`` as an argument and in a path, ``$(touch owned)`` as
a job name; Grid Engine refuses ``/`` in job names) must arrive as one argv element each, and the test checks that
no file appeared.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_submit as utils
from ansible_collections.gridengine.balancer.plugins.modules import sge_submit

HERE = os.path.dirname(os.path.abspath(__file__))
SGE_ROOT = "/nonexistent/sge-root"
BIN = SGE_ROOT + "/bin/lx-amd64/"

with open(os.path.join(HERE, "test_sge_submit.yaml")) as _handle:
    CASES = yaml.safe_load(_handle)["test_cases"]


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def _subst(value, script):
    if isinstance(value, str):
        return value.replace("{script}", script).replace("{bin}", BIN)
    if isinstance(value, list):
        return [_subst(v, script) for v in value]
    if isinstance(value, dict):
        return {k: _subst(v, script) for k, v in value.items()}
    return value


def run_case(case, monkeypatch, tmp_path):
    script = str(tmp_path / "job.sh")
    with open(script, "w") as handle:
        handle.write("#!/bin/sh\necho hello\n")
    case = _subst(case, script)
    expected = list(case.get("commands") or [])
    calls = []

    def run_command(self, args, **kwargs):
        assert isinstance(args, list), "argv must be a list, got %r" % (args,)
        assert not kwargs.get("use_unsafe_shell"), "a shell was asked for: %r" % (args,)
        assert kwargs.get("expand_user_and_vars") is False, "expand_user_and_vars must be off"
        env = kwargs.get("environ_update") or {}
        assert env.get("LC_ALL") == "C" and env.get("SGE_ROOT") == SGE_ROOT and env.get("SGE_CELL"), env
        assert args[0] == BIN + "qsub", args
        assert not case.get("check_mode"), "check mode ran %r" % (args,)
        actual = ["qsub"] + list(args[1:])
        assert len(calls) < len(expected), "unexpected command %r" % (actual,)
        exp = expected[len(calls)]
        calls.append(actual)
        assert actual == [str(a) for a in exp["argv"]], (actual, exp["argv"])
        return exp.get("rc", 0), exp.get("out", ""), exp.get("err", "")

    def exit_json(self, **kwargs):
        kwargs.setdefault("failed", False)
        raise ExitJson(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs["failed"] = True
        kwargs["msg"] = msg
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: BIN + name)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    args = dict(case.get("args") or {})
    args.setdefault("sge_root", SGE_ROOT)
    args["_ansible_check_mode"] = bool(case.get("check_mode"))
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as info:
            sge_submit.main()
    result = info.value.args[0]
    assert len(calls) == len(expected), "ran %d of %d commands: %r" % (len(calls), len(expected), result)
    expect = case.get("expect") or {}
    assert result["failed"] == expect.get("failed", False), result
    if "changed" in expect:
        assert result.get("changed") == expect["changed"], result
    if "msg" in expect:
        assert result.get("msg") == expect["msg"], result.get("msg")
    for part in expect.get("msg_contains") or []:
        assert part in result.get("msg", ""), (part, result.get("msg"))
    for key, value in (expect.get("result") or {}).items():
        assert result.get(key) == value, (key, result.get(key), value)
    if not result["failed"]:
        assert result["argv"][0] == BIN + "qsub"
        assert result["command"].startswith("qsub -terse")
    return result


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sge_submit(case, monkeypatch, tmp_path):
    owned = "/tmp/owned"
    existed = os.path.exists(owned)
    run_case(case, monkeypatch, tmp_path)
    if not existed:
        assert not os.path.exists(owned), "something executed the hostile job name"


def test_hostile_strings_are_exactly_one_element():
    args = utils.submit_args("/home/t/job.sh", args=["$(touch /tmp/owned)"], name="$(touch owned)")
    assert args == ["-terse", "-N", "$(touch owned)", "/home/t/job.sh", "$(touch /tmp/owned)"]


def test_hostile_name_with_slash_is_refused_as_grid_engine_would():
    # QSUB_TABLE of Grid Engine's verify_str_key forbids "/" in job names
    with pytest.raises(utils.SubmitError, match="contains '/'"):
        utils.submit_args("/home/t/job.sh", name="$(touch /tmp/owned)")


@pytest.mark.parametrize("name", ["a/b", "a:b", "a@b", "a\\b", "a*b", "a?b", "a\nb", "a\tb", "a\rb",
                                  "", "7up", "ALL", "Template", "x" * 513])
def test_job_names_grid_engine_refuses(name):
    assert utils.job_name_error(name)
    with pytest.raises(utils.SubmitError):
        utils.submit_args("job.sh", name=name)


@pytest.mark.parametrize("name", ["$(touch owned)", "nightly run", "a-b_c.d", "x" * 512,
                                  "job; rm -rf ~", "ünïcode", "NONE1", "`id`"])
def test_job_names_grid_engine_accepts(name):
    assert utils.job_name_error(name) is None


@pytest.mark.parametrize("out, expected", [
    ("42\n", (42, None)),
    (b"42\n", (42, None)),
    ("7.1-100:2\n", (7, "1-100:2")),
    ("warning: something\n12\n", (12, None)),
    ("9" * 18 + "\n", (10 ** 18 - 1, None)),
])
def test_parse_terse(out, expected):
    assert utils.parse_terse(out) == expected


# "9" * 5858: found by the parser fuzzing, int() raised ValueError past 4,300 digits
@pytest.mark.parametrize("out", ["", "Your job 3 has been submitted", "3x", "9" * 19, "9" * 5858 + "\n"])
def test_parse_terse_refuses(out):
    with pytest.raises(utils.SubmitError):
        utils.parse_terse(out)
