# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils.task_data and task_registry: the on-disk layout of task data and the registry."""

from __future__ import annotations

import io
import json
import os
import re
import tarfile

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import task_data as td
from ansible_collections.gridengine.balancer.plugins.module_utils import task_registry as tr


def _make(root, job, task, files):
    d = os.path.join(root, job, task)
    os.makedirs(d)
    for name, data in files.items():
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    return d


def test_pack_receive_remove_round_trip(tmp_path):
    src, dst = str(tmp_path / "a"), str(tmp_path / "b")
    _make(src, "logs", "3", {"data": b"x" * 5000, "sub/more": b"y" * 10})
    archive, checksum, size = td.pack(src, "logs", "3")
    assert size > 5000 and checksum.startswith("sha256:")
    assert td.receive(dst, "logs", "3", archive, checksum) == "received"
    assert td.content_checksum(os.path.join(dst, "logs", "3")) == checksum
    assert td.receive(dst, "logs", "3", archive, checksum) == "present"   # idempotent
    scan = td.scan(dst)
    assert [(c["job"], c["task"], c["bytes"]) for c in scan["copies"]] == [("logs", "3", 5010)]
    assert td.remove(src, "logs", "3") is True and td.remove(src, "logs", "3") is False
    leftovers = td.scan(src)["leftovers"]
    assert leftovers == [td.outgoing_path(src, "logs", "3")]
    assert td.clean(src, leftovers) == leftovers and td.scan(src)["leftovers"] == []


def test_a_copy_that_does_not_verify_never_gets_its_name(tmp_path):
    src, dst = str(tmp_path / "a"), str(tmp_path / "b")
    _make(src, "logs", "1", {"data": b"abc"})
    archive, checksum, dummy = td.pack(src, "logs", "1")
    with pytest.raises(td.TaskDataError, match="does not verify"):
        td.receive(dst, "logs", "1", archive, "sha256:" + "0" * 64)
    scan = td.scan(dst)
    assert scan["copies"] == [] and scan["leftovers"] == []


def test_an_existing_different_copy_is_never_overwritten(tmp_path):
    src, dst = str(tmp_path / "a"), str(tmp_path / "b")
    _make(src, "logs", "1", {"data": b"abc"})
    _make(dst, "logs", "1", {"data": b"other"})
    archive, checksum, dummy = td.pack(src, "logs", "1")
    with pytest.raises(td.TaskDataError, match="different copy"):
        td.receive(dst, "logs", "1", archive, checksum)
    with open(os.path.join(dst, "logs", "1", "data"), "rb") as handle:
        assert handle.read() == b"other"


@pytest.mark.parametrize("member", ["../evil", "/etc/evil"])
def test_archive_members_outside_the_copy_are_refused(tmp_path, member):
    archive = str(tmp_path / "bad.tar")
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo(member)
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(td.TaskDataError, match="outside"):
        td.receive(str(tmp_path / "b"), "logs", "1", archive, "sha256:x")
    assert not os.path.exists(str(tmp_path / "evil"))


@pytest.mark.parametrize("name", ["$(touch x)", "../x", "", "a/b", "-rf", "a" * 65, "a b"])
def test_hostile_names_are_refused(tmp_path, name):
    with pytest.raises(td.TaskDataError):
        td.copy_dir(str(tmp_path), name, "1")
    with pytest.raises(td.TaskDataError):
        td.copy_dir(str(tmp_path), "logs", name)


def test_scan_reports_partials_and_ignores_foreign_entries(tmp_path):
    root = str(tmp_path)
    _make(root, "logs", "1", {"d": b"1"})
    os.makedirs(os.path.join(root, "logs", ".partial.2"))
    os.makedirs(os.path.join(root, "bad name", "1"))
    scan = td.scan(root)
    assert [c["task"] for c in scan["copies"]] == ["1"]
    assert scan["leftovers"] == [os.path.join(root, "logs", ".partial.2")]
    assert scan["ignored"] == [os.path.join(root, "bad name")]
    assert td.scan(os.path.join(root, "missing"))["copies"] == []
    with pytest.raises(td.TaskDataError):
        td.clean(root, ["/etc/passwd"])


def test_registry_switch_moves_and_corruption(tmp_path):
    path = str(tmp_path / "c" / "tasks.json")

    def define(reg):
        return tr.define_job(reg, "logs", replicas=1, tasks={"0": "n1", "1": "n2"})
    before, after, changed = tr.update(path, define, check_mode=True)
    assert changed and not os.path.exists(path)
    tr.update(path, define)
    assert tr.update(path, define)[2] is False            # idempotent
    tr.update(path, lambda r: tr.begin_move(r, "logs", "0", "n1", "n3", "live", now=5.0))
    with pytest.raises(tr.RegistryError, match="already in flight"):
        tr.update(path, lambda r: tr.begin_move(r, "logs", "0", "n1", "n4", "live"))
    tr.update(path, lambda r: tr.switch(r, "logs", "0", "n3", expect="n1"))
    tr.update(path, lambda r: tr.switch(r, "logs", "0", "n3", expect="n1"))   # resumed: already there
    with pytest.raises(tr.RegistryError, match="moved since the plan"):
        tr.update(path, lambda r: tr.switch(r, "logs", "1", "n3", expect="n1"))
    tr.update(path, lambda r: tr.end_move(r, "logs", "0"))
    reg = tr.read(path)
    assert reg["jobs"]["logs"]["tasks"]["0"] == {"live": "n3"} and reg["moves"] == {}
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    with open(path, "w") as handle:
        handle.write("{not json")
    with pytest.raises(tr.RegistryError):
        tr.update(path, define)
    with open(path) as handle:
        assert handle.read() == "{not json"
    with open(path, "w") as handle:
        json.dump({"version": 1, "jobs": {"bad name": {}}, "moves": {}}, handle)
    with pytest.raises(tr.RegistryError, match="not allowed"):
        tr.read(path)


# ------------------------------------------------ found by the parser fuzzing (docs/reliability/fuzzing.md) --

def _archive(path, members):
    """A tar archive of (name, kind, data or link target) members, kind file, dir or sym."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, extra in members:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, extra
                tar.addfile(info)
            else:
                info.size = len(extra)
                tar.addfile(info, io.BytesIO(extra))
    return path


@pytest.mark.parametrize("members, message", [
    # a regular file named "." was extracted onto the copy's directory: IsADirectoryError
    ([(".", "file", b"x")], "'.' is not a directory but names the copy itself"),
    ([("./", "sym", "elsewhere")], "is not a directory but names the copy itself"),
    # a link that cannot be made (a directory is there) was followed by tarfile: RecursionError;
    # now a name given twice is refused before anything is written (issue 20)
    ([(".", "dir", None), ("x", "dir", None), ("x", "sym", "y"), ("y", "sym", "x")],
     "archive member 'x' appears more than once"),
    # a file where a directory is: IsADirectoryError from tarfile, now refused up front
    ([("d", "dir", None), ("d", "file", b"x")], "archive member 'd' appears more than once"),
])
def test_archives_that_cannot_be_unpacked(tmp_path, members, message):
    archive = _archive(str(tmp_path / "a.tar"), members)
    dst = str(tmp_path / "b")
    with pytest.raises(td.TaskDataError, match=message):
        td.receive(dst, "logs", "1", archive, "sha256:x")
    assert not os.path.exists(dst)         # refused before anything was written (issue 20)


@pytest.mark.parametrize("damage", ["truncate", "checksum", "garbage"])
def test_a_damaged_archive_is_a_task_data_error(tmp_path, damage):
    src, dst = str(tmp_path / "a"), str(tmp_path / "b")
    _make(src, "logs", "1", {"data": b"x" * 5000})
    archive, checksum, dummy = td.pack(src, "logs", "1")
    with open(archive, "rb") as handle:
        data = handle.read()
    data = {"truncate": data[:700], "checksum": data[:148] + b"99999999" + data[156:],
            "garbage": b"not an archive" * 100}[damage]
    with open(archive, "wb") as handle:
        handle.write(data)
    with pytest.raises(td.TaskDataError, match=r"archive %s of logs/1 cannot be unpacked: " % re.escape(archive)):
        td.receive(dst, "logs", "1", archive, checksum)
    assert not os.path.exists(dst)         # refused before anything was written (issue 20)
    with pytest.raises(td.TaskDataError, match="cannot be unpacked: .*No such file"):
        td.receive(dst, "logs", "1", str(tmp_path / "missing.tar"), checksum)


def test_a_deeply_nested_registry_is_a_registry_error(tmp_path):
    # json.loads in balancer_state.read_state raises RecursionError; the registry names the file
    path = tmp_path / "tasks.json"
    path.write_bytes(b'{"version": 1, "jobs": ' + b"[" * 100000 + b"]" * 100000 + b"}")
    with pytest.raises(tr.RegistryError, match="%s is not valid JSON" % re.escape(str(path))):
        tr.read(str(path))
    with pytest.raises(tr.RegistryError):
        tr.update(str(path), lambda reg: reg)
