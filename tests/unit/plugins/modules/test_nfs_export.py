# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.nfs_export: check mode, diff, idempotence, reloads, hostile values.

``exportfs`` is a recorder that keeps a table as the kernel would (``-ra`` reads the exports file);
ganesha is a pid file naming a process that is not ganesha (no signal) or, for the reload cases,
a recorded ``os.kill``. The real server is tested in tests/integration/test_nfs_ganesha_real.py.
"""

from __future__ import annotations

import json
import os
import stat
from unittest import mock

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.module_utils import nfs_export as nx
from ansible_collections.gridengine.balancer.plugins.modules import nfs_export

OPTS = nx.KERNEL_DEFAULT_OPTIONS


def run(capsys, args, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    # Ansible keeps a module's warnings in a process-wide table, and once controller code has run
    # in the process (an action plugin's test on this worker), module.warn() goes to the display
    # instead of the result: run the module as a module runs, with a table of its own
    ansible_warnings._global_warnings.clear()  # pylint: disable=protected-access
    with mock.patch.object(ansible_warnings._internal, "is_controller", False):  # pylint: disable=protected-access
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exc:
                nfs_export.main()
    result = json.loads(capsys.readouterr().out)
    result["rc"] = exc.value.code
    return result


class FakeExportfs:
    """exportfs -v / -ra against the exports file, as the kernel's table would follow it."""

    def __init__(self, exports):
        self.exports = exports
        self.table = {}
        self.calls = []

    def __call__(self, module, argv, **kwargs):
        self.calls.append(argv[1:])
        assert argv[0] == "/usr/sbin/exportfs" and kwargs.get("environ_update") == {"LC_ALL": "C"}
        if argv[1:] == ["-ra"]:
            with open(self.exports, encoding="utf-8") as handle:
                self.table = nx.kernel_exports_of(nx.parse_exports(handle.read()))
            return 0, "", ""
        out = "".join("%-14s\t%s(%s)\n" % (p, c, o) for (p, c), o in sorted(self.table.items()))
        return 0, out, ""


@pytest.fixture
def exportfs(tmp_path, monkeypatch):
    fake = FakeExportfs(str(tmp_path / "exports"))

    def run_command(self, argv, **kwargs):
        return fake(self, argv, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **k: "/usr/sbin/exportfs" if name == "exportfs" else None)
    return fake


def kernel_args(tmp_path, **kw):
    return dict({"paths": ["/home", "/var/lib/gridengine"], "clients": ["10.77.0.13"],
                 "config": str(tmp_path / "exports")}, **kw)


def test_kernel_check_mode_then_write_then_nothing(tmp_path, capsys, exportfs):
    (tmp_path / "exports").write_text("/srv 10.0.0.5(ro)\n")
    result = run(capsys, kernel_args(tmp_path), check=True, diff=True)
    assert result["changed"] and result["reloaded"] and result["rc"] == 0
    assert result["changes"] == ["+ /home 10.77.0.13(%s)" % OPTS, "+ /var/lib/gridengine 10.77.0.13(%s)" % OPTS]
    assert "+/home 10.77.0.13" not in result["diff"]["before"] and "/home 10.77.0.13(" in result["diff"]["after"]
    assert (tmp_path / "exports").read_text() == "/srv 10.0.0.5(ro)\n"
    assert exportfs.calls == [["-v"]]                 # read only

    result = run(capsys, kernel_args(tmp_path))
    assert result["changed"] and result["reloaded"] and result["reload_reason"] == "the file changed"
    assert (tmp_path / "exports").read_text() == ("/srv 10.0.0.5(ro)\n/home 10.77.0.13(%s)\n"
                                                  "/var/lib/gridengine 10.77.0.13(%s)\n" % (OPTS, OPTS))
    assert exportfs.calls[1:] == [["-v"], ["-ra"], ["-v"]]
    assert "/home 10.77.0.13(%s)" % OPTS in result["exported"]

    result = run(capsys, kernel_args(tmp_path))
    assert not result["changed"] and not result["reloaded"] and "diff" not in result
    assert exportfs.calls[4:] == [["-v"]]


def test_kernel_reloads_when_the_table_lags_the_file(tmp_path, capsys, exportfs):
    """A run killed between the write and exportfs -ra: the next run re-exports."""
    (tmp_path / "exports").write_text("/home 10.77.0.13(%s)\n" % OPTS)
    result = run(capsys, kernel_args(tmp_path, paths=["/home"]))
    assert result["changed"] and result["changes"] == [] and result["reload_reason"] == "exportfs -v lacks /home 10.77.0.13"
    assert ["-ra"] in exportfs.calls
    # and the reverse: the line is gone, the table still lists the node
    (tmp_path / "exports").write_text("")
    result = run(capsys, kernel_args(tmp_path, paths=["/home"], state="absent"))
    assert result["changed"] and result["reload_reason"] == "exportfs -v still lists /home 10.77.0.13"
    assert result["exported"] == []


def test_kernel_absent_check_mode_and_removal(tmp_path, capsys, exportfs):
    run(capsys, kernel_args(tmp_path, clients=["10.77.0.13", "10.77.0.14"]))
    result = run(capsys, kernel_args(tmp_path, state="absent"), check=True, diff=True)
    assert result["changed"] and "10.77.0.13" in result["diff"]["before"] and "10.77.0.13" not in result["diff"]["after"]
    assert "10.77.0.13" in (tmp_path / "exports").read_text()
    result = run(capsys, kernel_args(tmp_path, state="absent"))
    assert result["changed"] and "10.77.0.13" not in (tmp_path / "exports").read_text()
    assert not any("10.77.0.13" in e for e in result["exported"]) and any("10.77.0.14" in e for e in result["exported"])
    assert not run(capsys, kernel_args(tmp_path, state="absent"))["changed"]


def test_kernel_without_exportfs_writes_and_warns(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result = run(capsys, kernel_args(tmp_path))
    assert result["changed"] and not result["reloaded"]
    assert "exportfs was not found" in json.dumps(result["warnings"])
    assert stat.S_IMODE(os.stat(tmp_path / "exports").st_mode) == 0o644


def test_kernel_failed_reexport_fails_naming_it(tmp_path, capsys, exportfs, monkeypatch):
    def lagging(module, argv, **kwargs):
        exportfs.calls.append(argv[1:])
        return 0, "", ""                            # -ra "works", -v never lists anything
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lagging)
    result = run(capsys, kernel_args(tmp_path))
    assert result["failed"] and "after exportfs -ra, exportfs -v does not list /home 10.77.0.13" in result["msg"]


HOSTILE = [
    ("paths", ["/home\n/etc 0.0.0.0(rw)"]), ("paths", ['/home" *(rw']), ("paths", ["relative"]),
    ("paths", ["/home/../etc"]), ("paths", ["/a{b}"]), ("clients", ["*"]), ("clients", ["10.77.0.0/24"]),
    ("clients", ["node001"]), ("clients", ["10.77.0.13(rw,no_root_squash)"]), ("clients", ["10.77.0.13 *"]),
    ("clients", ["0.0.0.0"]), ("clients", ["$(touch /tmp/owned)"]), ("options", "rw) *(rw"),
    ("options", "rw\n/etc *"), ("config", "/etc/exports\n"), ("include_in", "/etc/ganesha/x.conf\n%include /x"),
]


@pytest.mark.parametrize("server", ["kernel", "ganesha"])
@pytest.mark.parametrize("key, value", HOSTILE, ids=["%s-%d" % (k, i) for i, (k, dummy) in enumerate(HOSTILE)])
def test_hostile_values_are_refused_and_nothing_changes(tmp_path, capsys, exportfs, server, key, value):
    if key == "options" and server == "ganesha" or key == "include_in" and server == "kernel":
        pytest.skip("%s is not an option of the %s server" % (key, server))
    config = tmp_path / "exports"
    config.write_text("/srv 10.0.0.5(ro)\n" if server == "kernel" else "")
    args = kernel_args(tmp_path, server=server, include_in="", pid_file=str(tmp_path / "none.pid"))
    args[key] = value
    result = run(capsys, args)
    assert result["rc"] == 1 and result["failed"] and "nothing was changed" in result["msg"], result
    assert key in result["msg"]
    assert config.read_text() == ("/srv 10.0.0.5(ro)\n" if server == "kernel" else "")
    assert exportfs.calls == [] and sorted(os.listdir(tmp_path)) == ["exports"]


# ----------------------------------------------------------------------------------------- ganesha

@pytest.fixture
def ganesha_dir(tmp_path):
    (tmp_path / "ganesha.conf").write_text("NFS_CORE_PARAM {\n    Protocols = 4;\n}\n"
                                           "EXPORT {\n    Export_Id = 2000;\n    Path = /srv;\n}\n")
    (tmp_path / "ganesha.pid").write_text("%d\n" % os.getpid())    # pytest: not a ganesha.nfsd
    return tmp_path


def ganesha_args(d, **kw):
    return dict({"server": "ganesha", "paths": ["/home"], "clients": ["10.77.0.13"],
                 "config": str(d / "gridengine-balancer-c.conf"), "include_in": str(d / "ganesha.conf"),
                 "pid_file": str(d / "ganesha.pid")}, **kw)


def test_ganesha_check_mode_write_idempotence_without_a_running_ganesha(ganesha_dir, capsys):
    d = ganesha_dir
    result = run(capsys, ganesha_args(d), check=True, diff=True)
    assert result["changed"] and not result["reloaded"] and result["ganesha_pid"] == 0
    assert isinstance(result["diff"], list) and len(result["diff"]) == 2      # the export file and the %include
    assert not (d / "gridengine-balancer-c.conf").exists()
    assert "does not run" in json.dumps(result["warnings"])

    result = run(capsys, ganesha_args(d))
    assert result["changed"] and result["changes"][0] == "+ EXPORT /home (Export_Id 2001)"
    text = (d / "gridengine-balancer-c.conf").read_text()
    assert "Clients = 10.77.0.13;" in text and "Access_Type = RW;" in text and "Squash = root_squash;" in text
    assert '%include "' + str(d / "gridengine-balancer-c.conf") + '"' in (d / "ganesha.conf").read_text()
    assert stat.S_IMODE(os.stat(d / "gridengine-balancer-c.conf").st_mode) == 0o644
    assert sorted(p.name for p in d.iterdir()) == ["ganesha.conf", "ganesha.pid", "gridengine-balancer-c.conf"]

    assert not run(capsys, ganesha_args(d))["changed"]
    result = run(capsys, ganesha_args(d, state="absent"), check=True)
    assert result["changed"] and "10.77.0.13" in (d / "gridengine-balancer-c.conf").read_text()
    assert run(capsys, ganesha_args(d, state="absent"))["changed"]
    assert "10.77.0.13" not in (d / "gridengine-balancer-c.conf").read_text()
    assert not run(capsys, ganesha_args(d, state="absent"))["changed"]


def test_ganesha_sighup_once_and_again_after_an_interrupted_run(ganesha_dir, capsys, monkeypatch):
    d = ganesha_dir
    sent = []
    monkeypatch.setattr(nfs_export, "ganesha_process", lambda pid_file: (4242, 1.0))
    monkeypatch.setattr(nfs_export.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    result = run(capsys, ganesha_args(d))
    assert result["reloaded"] and result["ganesha_pid"] == 4242 and sent == [(4242, nfs_export.signal.SIGHUP)]
    assert (d / ".gridengine-balancer-c.conf.loaded").exists()
    assert not run(capsys, ganesha_args(d))["changed"] and len(sent) == 1
    # written without a reload (as a run killed before the signal): the next run sends it
    result = run(capsys, ganesha_args(d, clients=["10.77.0.14"], reload=False))
    assert result["changed"] and not result["reloaded"] and len(sent) == 1
    result = run(capsys, ganesha_args(d, clients=["10.77.0.14"]))
    assert result["changed"] and result["changes"] == [] and result["reloaded"] and len(sent) == 2
    assert "not been sent" in result["reload_reason"]
    # a ganesha started after the file was written read it: no signal
    monkeypatch.setattr(nfs_export, "ganesha_process", lambda pid_file: (4343, 4.0e9))
    assert not run(capsys, ganesha_args(d, clients=["10.77.0.14"]))["changed"] and len(sent) == 2


def test_ganesha_refuses_a_file_it_did_not_write(ganesha_dir, capsys):
    d = ganesha_dir
    foreign = "EXPORT { Export_Id = 1; Path = /home; Pseudo = /home; Protocols = 4; PrivilegedPort = true; " \
              "CLIENT { Clients = *; Access_Type = RW; Squash = no_root_squash; } }\n"
    (d / "gridengine-balancer-c.conf").write_text(foreign)
    result = run(capsys, ganesha_args(d))
    assert result["failed"] and "nothing was changed" in result["msg"]
    assert (d / "gridengine-balancer-c.conf").read_text() == foreign


def test_ganesha_needs_its_main_configuration(tmp_path, capsys):
    result = run(capsys, ganesha_args(tmp_path))
    assert result["failed"] and "include_in" in result["msg"]
    result = run(capsys, ganesha_args(tmp_path, include_in="", pid_file=str(tmp_path / "x.pid")))
    assert result["changed"] and not (tmp_path / "ganesha.conf").exists()


def test_ganesha_process_is_named_by_its_pid_file(tmp_path):
    (tmp_path / "p").write_text("%d\n" % os.getpid())
    assert nfs_export.ganesha_process(str(tmp_path / "p")) == (0, 0.0)     # pytest is not ganesha.nfsd
    assert nfs_export.ganesha_process(str(tmp_path / "missing")) == (0, 0.0)
    (tmp_path / "p").write_text("garbage")
    assert nfs_export.ganesha_process(str(tmp_path / "p")) == (0, 0.0)
