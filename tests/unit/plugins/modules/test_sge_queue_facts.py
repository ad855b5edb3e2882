# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.sge_queue_facts, table-driven (test_sge_queue_facts.yaml): every case lists
the commands expected (argv and environment), the rc/out/err they return and the result expected.
Outputs come from tests/unit/fixtures/sge (real Grid Engine output, see PROVENANCE.md)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import sys
import time

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import sge_queue_facts

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures", "sge")
with open(os.path.join(HERE, "test_sge_queue_facts.yaml")) as _handle:
    CASES = yaml.safe_load(_handle)["test_cases"]


def substitute(value, sge_root):
    if isinstance(value, str):
        return value.replace("{sge_root}", sge_root)
    if isinstance(value, list):
        return [substitute(v, sge_root) for v in value]
    if isinstance(value, dict):
        return dict((k, substitute(v, sge_root)) for k, v in value.items())
    return value


def assert_subset(expected, actual, path="result"):
    if isinstance(expected, dict) and "__len__" in expected:
        assert len(actual) == expected["__len__"], path
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), "%s: %r is not a dict" % (path, actual)
        for key, value in expected.items():
            assert key in actual, "%s: no key %r in %r" % (path, key, sorted(actual))
            assert_subset(value, actual[key], "%s.%s" % (path, key))
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), \
            "%s: %r != %r" % (path, actual, expected)
        for i, (exp, act) in enumerate(zip(expected, actual)):
            assert_subset(exp, act, "%s[%d]" % (path, i))
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected), path
    else:
        assert actual == expected, "%s: %r != %r" % (path, actual, expected)


class RunCommandMock(object):
    """Stands in for AnsibleModule.run_command: checks each call against the table, in order."""

    def __init__(self, calls):
        self.calls = list(calls)
        self.done = 0

    def __call__(self, module, args, **kwargs):
        assert self.done < len(self.calls), "unexpected command %r" % (args,)
        call = self.calls[self.done]
        self.done += 1
        assert isinstance(args, list), "commands are argv lists, never strings"
        assert not kwargs.get("use_unsafe_shell")
        assert args == call["command"]
        assert kwargs.get("environ_update") == call["environ"]
        assert kwargs.get("check_rc") is False
        if "out_file" in call:
            with open(os.path.join(FIXTURES, call["out_file"]), "rb") as handle:
                out = handle.read()
            if "out_truncate" in call:
                out = out[:call["out_truncate"]]
        else:
            out = call.get("out", "").encode("utf-8")
        err = call.get("err", "").encode("utf-8")
        drain = kwargs.get("before_communicate_callback")
        if drain is not None and drain.consume is not None:
            # a command read as it prints (sge_cmd.run_sge_stream): stdout in pipe-sized chunks
            drain.take(iter([out[i:i + 65536] for i in range(0, len(out), 65536)]))
            drain.err = err
            out = b""
        if call.get("timed_out"):
            drain.timed_out = True
        if kwargs.get("encoding", "utf-8") is not None:
            out, err = out.decode("utf-8"), err.decode("utf-8")
        return call["rc"], out, err


@pytest.fixture(autouse=True)
def utc_zone(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def make_sge_root(tmp_path, case):
    root = tmp_path / "sge"
    cell = case.get("settings_cell", "default")
    common = root / cell / "common"
    common.mkdir(parents=True)
    lines = ["SGE_ROOT=%s; export SGE_ROOT" % root, "SGE_CELL=%s; export SGE_CELL" % cell,
             "SGE_ARCH=lx-amd64; export SGE_ARCH"] + case.get("settings", [])
    (common / "settings.sh").write_text("\n".join(lines) + "\n")
    return str(root)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sge_queue_facts(case, tmp_path, monkeypatch, capsys):
    sge_root = make_sge_root(tmp_path, case)
    case = substitute(case, sge_root)
    bin_dir = os.path.join(sge_root, "bin", "lx-amd64")
    found = case.get("bins", {"qstat": True, "qhost": True, "qacct": True})

    def get_bin_path(module, name, required=False, opt_dirs=None):
        assert opt_dirs == [bin_dir]
        return os.path.join(bin_dir, name) if found.get(name) else None

    run_command = RunCommandMock(case["mocks"]["run_command"])

    def fake_run_command(module, args, **kwargs):
        return run_command(module, args, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake_run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
    monkeypatch.setattr(sge_queue_facts, "_now", lambda: case["now"])

    with patch_module_args(case["input"]):
        with pytest.raises(SystemExit):
            sge_queue_facts.main()
    result = json.loads(capsys.readouterr().out)

    assert run_command.done == len(run_command.calls), "commands expected but not run"
    assert_subset(case["output"], result)
    for key in case.get("absent", []):
        assert key not in result, "%s should not be in %r" % (key, sorted(result))
    if not result.get("failed"):
        assert result["changed"] is False


# ---------------------------------------------------------------------------------------------
# plugins/module_utils/sge_cmd.py (environment, argv, and running real commands)
# ---------------------------------------------------------------------------------------------

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_cmd, sge_xml  # noqa: E402


def test_settings_sh_literal_values_only(tmp_path):
    common = tmp_path / "default" / "common"
    common.mkdir(parents=True)
    (common / "settings.sh").write_text(
        "SGE_ROOT=/var/lib/gridengine; export SGE_ROOT\n"
        "SGE_CELL=default; export SGE_CELL\n"
        "SGE_ARCH=`$SGE_ROOT/util/arch`; export SGE_ARCH\n"
        "SGE_QMASTER_PORT=6444; export SGE_QMASTER_PORT\n"
        "SGE_EXECD_PORT=6445\n"
        "unset SGE_CLUSTER_NAME\n")
    settings = sge_cmd.read_settings(str(tmp_path), "default")
    assert settings == {"SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default",
                        "SGE_QMASTER_PORT": "6444", "SGE_EXECD_PORT": "6445"}
    assert sge_cmd.read_settings(str(tmp_path), "nocell") == {}


def test_environment_precedence():
    assert sge_cmd.sge_environment(None, None, None, {}) == {
        "SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default", "LC_ALL": "C"}
    settings = {"SGE_QMASTER_PORT": "6446"}
    assert sge_cmd.sge_environment("/opt/sge", "remote", None, settings)["SGE_QMASTER_PORT"] == "6446"
    assert sge_cmd.sge_environment("/opt/sge", "remote", 7000, settings)["SGE_QMASTER_PORT"] == "7000"


def test_arch_from_settings_or_single_bin_directory(tmp_path):
    assert sge_cmd.sge_arch(str(tmp_path), {"SGE_ARCH": "lx-arm64"}) == "lx-arm64"
    (tmp_path / "bin" / "lx-ppc64le").mkdir(parents=True)
    assert sge_cmd.sge_arch(str(tmp_path), {}) == "lx-ppc64le"


@pytest.mark.parametrize("arch", ["../default/common", "/tmp", "lx-amd64/../../../tmp", "..", ".", "", "a b", "x\ny"])
def test_an_arch_that_is_no_plain_name_is_not_used(tmp_path, arch):
    # settings.sh belongs to the admin user: a path in SGE_ARCH would send root's qconf elsewhere
    (tmp_path / "bin" / "lx-amd64").mkdir(parents=True)
    assert sge_cmd.sge_arch(str(tmp_path), {"SGE_ARCH": arch}) == "lx-amd64"
    if "\n" in arch:
        return  # in settings.sh the line would end there
    settings = tmp_path / "default" / "common"
    settings.mkdir(parents=True)
    (settings / "settings.sh").write_text("SGE_ROOT=%s; export SGE_ROOT\nSGE_ARCH=%s; export SGE_ARCH\n" % (tmp_path, arch))
    assert sge_cmd.sge_arch(str(tmp_path), sge_cmd.read_settings(str(tmp_path), "default")) == "lx-amd64"


def test_argv_lists():
    assert sge_cmd.qstat_argv("/b/qstat") == ["/b/qstat", "-u", "*", "-f", "-r", "-xml"]
    # projects=true: without -ext, qstat prints no JB_project (seen on the local cluster)
    assert sge_cmd.qstat_argv("/b/qstat", extended=True) == ["/b/qstat", "-u", "*", "-f", "-r", "-ext", "-xml"]
    assert sge_cmd.qhost_argv("/b/qhost") == ["/b/qhost", "-q", "-xml"]
    assert sge_cmd.qacct_argv("/b/qacct", 1700000000 - 3600) == ["/b/qacct", "-j", "-b", "2311142113"]
    assert sge_cmd.describe(["/b/qstat", "-u", "*", "-xml"]) == "qstat -u '*' -xml"


def _module():
    with patch_module_args({}):
        return basic.AnsibleModule(argument_spec={})


def test_run_sge_reads_large_output_with_run_command(tmp_path):
    # a real subprocess through AnsibleModule.run_command: 8 MB on stdout while stderr is written
    # too (no deadlock), read linearly by PipeDrain
    script = tmp_path / "emit.py"
    script.write_text("import sys\n"
                      "for i in range(8):\n"
                      "    sys.stdout.write('x' * (1024 * 1024)); sys.stdout.flush()\n"
                      "    sys.stderr.write('warning %d\\n' % i); sys.stderr.flush()\n")
    import sys
    out = sge_cmd.run_sge(_module(), [sys.executable, str(script)], {})
    assert isinstance(out, (bytes, bytearray)) and out == b"x" * (8 * 1024 * 1024)


def test_run_sge_failure_names_command_rc_and_first_stderr_line():
    with pytest.raises(sge_cmd.SgeCommandError) as exc:
        sge_cmd.run_sge(_module(), ["sh", "-c", "echo partial; echo 'error: commlib error: got "
                                    "select error (Connection refused)' >&2; echo more >&2; exit 1"])
    assert str(exc.value) == ("sh -c 'echo partial; echo '\"'\"'error: commlib error: got select error "
                              "(Connection refused)'\"'\"' >&2; echo more >&2; exit 1' failed (rc 1): "
                              "error: commlib error: got select error (Connection refused)")


def test_run_sge_passes_lc_all_and_no_shell():
    out = sge_cmd.run_sge(_module(), ["sh", "-c", 'printf "%s|%s" "$LC_ALL" "$SGE_CELL"'],
                          {"SGE_CELL": "x;$(reboot)", "LC_ALL": "de_DE.UTF-8"})
    assert out == b"C|x;$(reboot)"


def test_run_qacct_without_accounting_file_is_empty():
    module = _module()
    argv = ["sh", "-c", "echo 'no jobs running since startup'; echo "
            "'/var/lib/gridengine/default/common/accounting: No such file or directory' >&2; exit 1"]
    assert sge_cmd.run_qacct(module, argv) == b""
    with pytest.raises(sge_cmd.SgeCommandError, match=r"failed \(rc 2\): error: denied$"):
        sge_cmd.run_qacct(module, ["sh", "-c", "echo 'error: denied' >&2; exit 2"])


def test_run_sge_kills_a_command_that_outlives_its_timeout():
    import sys
    t0 = time.monotonic()
    with pytest.raises(sge_cmd.SgeCommandError) as exc:
        sge_cmd.run_sge(_module(), [sys.executable, "-c", "import sys, time; sys.stdout.write('<job_info');"
                                    " sys.stdout.flush(); time.sleep(60)"], {}, timeout=1)
    assert time.monotonic() - t0 < 10
    assert str(exc.value).endswith("did not finish within 1s and was killed (is the qmaster reachable and "
                                   "answering?); its output was not used")


def test_run_sge_timeout_when_a_child_of_the_command_holds_its_output():
    t0 = time.monotonic()
    with pytest.raises(sge_cmd.SgeCommandError, match="still holds its output open"):
        sge_cmd._call(_module(), ["sh", "-c", "sleep 20 & wait"], {}, timeout=1)
    assert time.monotonic() - t0 < 15


def test_run_sge_without_timeout_and_a_program_that_cannot_run(tmp_path):
    script = tmp_path / "qstat"
    script.write_text("not a program\n")
    script.chmod(0o644)  # not executable
    with pytest.raises(sge_cmd.SgeCommandError, match=r"^cannot run qstat -xml: Permission denied$"):
        sge_cmd.run_sge(_module(), [str(script), "-xml"], {})


def test_unexpected_parser_exception_is_a_failure_not_a_traceback(monkeypatch, tmp_path, capsys):
    """A crash of the XML parser (reported to its owner if ever seen) still returns no facts."""
    def crash(*args, **kwargs):
        raise KeyError("JB_job_number")
    monkeypatch.setattr(sge_queue_facts, "snapshot_from", crash)

    def run_command(self, args, **kwargs):
        out = b"<qhost/>" if os.path.basename(args[0]) == "qhost" else b"<job_info/>"
        drain = kwargs["before_communicate_callback"]
        if drain.consume is not None:
            drain.take(iter([out]))
            drain.err, out = b"", b""
        return 0, out, b""
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: "/bin/" + name)
    with patch_module_args({"sge_root": str(tmp_path)}):
        with pytest.raises(SystemExit):
            sge_queue_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and "ansible_facts" not in result
    assert result["msg"] == ("qstat -xml / qhost -xml: the output could not be parsed (KeyError: 'JB_job_number'; a bug "
                             "in gridengine.balancer's parser, please report it with the output); no snapshot returned")


FAKE_QSTAT = {
    "dead qmaster": ("echo 'error: commlib error: got select error (Connection refused)' >&2\n"
                     "echo 'error: unable to send message to qmaster using port 6444 on host \"vm\": got send error' >&2\n"
                     "exit 1\n", "failed (rc 1): error: commlib error: got select error (Connection refused)"),
    "broken XML": ("printf '<?xml version=\"1.0\"?>\\n<job_info><queue_info><Queue-List>'\n",
                   "qstat -xml: "),  # the parser's own words
    "empty output": ("exit 0\n", "exited 0 but printed nothing"),
    "hangs": ("exec sleep 60\n", "did not finish within 1s and was killed"),
}


@pytest.mark.parametrize("kind", sorted(FAKE_QSTAT))
def test_fake_qstat_programs_for_real(kind, tmp_path, capsys):
    """The module end to end with real processes: a fake SGE_ROOT whose bin/lx-amd64 holds a
    qstat script that fails (and a qhost that would work)."""
    sge_root = make_sge_root(tmp_path, {})
    bin_dir = os.path.join(sge_root, "bin", "lx-amd64")
    os.makedirs(bin_dir)
    for name, body in (("qstat", FAKE_QSTAT[kind][0]),
                       ("qhost", "cat %s\n" % os.path.join(FIXTURES, "local_soge819", "qhost_q.xml"))):
        path = os.path.join(bin_dir, name)
        with open(path, "w") as handle:
            handle.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)
    with patch_module_args({"sge_root": sge_root, "command_timeout": 1}):
        with pytest.raises(SystemExit):
            sge_queue_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and "ansible_facts" not in result
    assert FAKE_QSTAT[kind][1] in result["msg"] and result["msg"].endswith("; no snapshot returned")


def test_settings_sh_with_bytes_that_are_not_utf8_and_bad_ports(tmp_path):
    """Found by benchmarks/fuzz_parsers.py: UnicodeDecodeError, and ValueError from int(port)."""
    common = tmp_path / "default" / "common"
    common.mkdir(parents=True)
    (common / "settings.sh").write_bytes(b"# \xe9crit par l'installateur\n"
                                         b"SGE_ROOT=/var/lib/gridengine; export SGE_ROOT\n"
                                         b"SGE_QMASTER_PORT=-1K; export SGE_QMASTER_PORT\n"
                                         b"SGE_EXECD_PORT=99999\n")
    settings = sge_cmd.read_settings(str(tmp_path), "default")
    assert settings == {"SGE_ROOT": "/var/lib/gridengine"}
    assert "SGE_QMASTER_PORT" not in sge_cmd.sge_environment(str(tmp_path), "default", None, settings)
    (common / "settings.sh").write_text("SGE_QMASTER_PORT=\u00b2\nSGE_EXECD_PORT=6445\n")
    assert sge_cmd.read_settings(str(tmp_path), "default") == {"SGE_EXECD_PORT": "6445"}


# ---- qstat read as it prints (sge_cmd.run_sge_stream) ----

def _emit(tmp_path, body):
    script = tmp_path / "emit.py"
    script.write_text("import sys\n" + body)
    return [sys.executable, str(script)]


def test_run_sge_stream_parses_a_real_pipe(tmp_path):
    """A real process prints a listing of 2 MB (a captured one with a comment of padding after
    its root's start tag, so that it is read as a stream) in small writes while writing to stderr,
    through AnsibleModule.run_command: the parse is that of the bytes."""
    with open(os.path.join(FIXTURES, "captured", "pe_and_arrays", "qstat_u_f_r.xml"), "rb") as handle:
        one = handle.read()
    cut = one.index(b">", one.index(b"<job_info")) + 1
    data = one[:cut] + b"<!--" + b" padding " * 250000 + b"-->" + one[cut:]
    path = tmp_path / "qstat.xml"
    path.write_bytes(data)
    argv = _emit(tmp_path, "data = open(%r, 'rb').read()\n"
                           "for i in range(0, len(data), 3000):\n"
                           "    sys.stdout.buffer.write(data[i:i + 3000]); sys.stdout.flush()\n"
                           "    sys.stderr.write('w\\n'); sys.stderr.flush()\n" % str(path))
    got = sge_cmd.run_sge_stream(_module(), argv, sge_xml.parse_qstat_stream, {}, require_output=True)
    assert got == sge_xml.parse_qstat(data) and got["pending"] and got["running"]


def test_run_sge_stream_reports_the_command_before_the_parser(tmp_path):
    """A qmaster that is down: qstat prints half a document and exits 1; the message is the
    command's, not the parser's."""
    argv = _emit(tmp_path, "sys.stdout.write('<job_info><queue_info>')\n"
                           "sys.stderr.write('error: commlib error: got select error (Connection refused)\\n')\n"
                           "sys.exit(1)\n")
    with pytest.raises(sge_cmd.SgeCommandError, match=r"failed \(rc 1\): error: commlib error"):
        sge_cmd.run_sge_stream(_module(), argv, sge_xml.parse_qstat_stream, {})
    empty = _emit(tmp_path, "sys.stdout.write('  \\n')\n")
    with pytest.raises(sge_cmd.SgeCommandError, match="exited 0 but printed nothing$"):
        sge_cmd.run_sge_stream(_module(), empty, sge_xml.parse_qstat_stream, {}, require_output=True)
    broken = _emit(tmp_path, "sys.stdout.write('<job_info><queue_info>' + ' ' * 100000)\n")
    with pytest.raises(sge_xml.SgeParseError, match="document ends before its root element is closed"):
        sge_cmd.run_sge_stream(_module(), broken, sge_xml.parse_qstat_stream, {}, require_output=True)


def test_run_sge_stream_raises_the_parser_error_after_a_clean_exit(tmp_path):
    """The parser stops at an error early in a long output: the command ends normally and the
    parser's error is raised."""
    argv = _emit(tmp_path, "sys.stdout.write('<job_info><bad></job_info>' + ' ' * (8 << 20))\n"
                           "sys.stdout.flush()\nsys.stderr.write('done\\n')\n")
    with pytest.raises(sge_xml.SgeParseError, match="mismatched tag"):
        sge_cmd.run_sge_stream(_module(), argv, sge_xml.parse_qstat_stream, {})


def test_run_sge_stream_times_out_while_parsing(tmp_path):
    argv = _emit(tmp_path, "import time\nsys.stdout.write('<job_info>' + ' ' * 100000)\n"
                           "sys.stdout.flush()\ntime.sleep(60)\n")
    with pytest.raises(sge_cmd.SgeCommandError, match="did not finish within 1s and was killed"):
        sge_cmd.run_sge_stream(_module(), argv, sge_xml.parse_qstat_stream, {}, timeout=1)
