# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils.task_data and task_registry: the on-disk layout of task data and the registry."""

from __future__ import annotations

import io
import json
import os
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
