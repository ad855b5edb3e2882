# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile task archives (issue 20, finding 1): nothing lands outside the data root.

Standard library and pytest only: this file also runs under the nodes' ``/usr/bin/python3``
(Debian 12, Python 3.11.2, no ``tarfile.data_filter``) through ``scripts/unit_nodes_python.sh``.
The property test builds archives at random (a fixed set of seeds, so a failure is repeatable
with its seed) from the shapes an attacker would use: chains of symbolic links, hard links,
absolute names, ``..``, device files and FIFOs, huge and truncated members, duplicate names,
members under links; and checks after every one that no path outside the data root was created or
changed, that what was received has no link leaving the root and no set-id bit, and that a
receive either left a verified copy or nothing at all.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import stat
import tarfile

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import task_data as td


def _add(tar, name, kind, extra=None, size=None, mode=None):
    info = tarfile.TarInfo(name)
    data = None
    if kind == "dir":
        info.type, info.mode = tarfile.DIRTYPE, 0o755 if mode is None else mode
    elif kind == "sym":
        info.type, info.linkname = tarfile.SYMTYPE, extra
    elif kind == "hard":
        info.type, info.linkname = tarfile.LNKTYPE, extra
    elif kind in ("chr", "blk"):
        info.type = tarfile.CHRTYPE if kind == "chr" else tarfile.BLKTYPE
        info.devmajor, info.devminor = 1, 3
    elif kind == "fifo":
        info.type = tarfile.FIFOTYPE
    else:
        data = extra if extra is not None else b"x"
        info.size = len(data) if size is None else size
        info.mode = 0o644 if mode is None else mode
    if data is not None and size is not None and size > len(data):
        # a header that promises more than the archive holds (a huge member)
        tar.fileobj.write(info.tobuf(tar.format, tar.encoding, tar.errors))
        tar.offset += tarfile.BLOCKSIZE
        tar.fileobj.write(data)
        tar.offset += len(data)
        return
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def _archive(path, members, fmt=tarfile.PAX_FORMAT):
    with tarfile.open(path, "w", format=fmt) as tar:
        for member in members:
            _add(tar, *member)
    return path


def _snapshot(top, skip):
    """{relative path: (type, size, mode, sha256 or link target)} of everything under ``top``
    except under ``skip`` (the data root)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        if os.path.abspath(dirpath) == os.path.abspath(skip):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.abspath(path) == os.path.abspath(skip):
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as handle:
                    what = hashlib.sha256(handle.read()).hexdigest()
            else:
                what = None
            out[os.path.relpath(path, top)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mode, what)
    return out


def _inside(root, path):
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def _check_root_is_safe(root):
    """Every link under the data root resolves inside it; no set-id, sticky or device entry."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX), path
            assert stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode), path
            if stat.S_ISLNK(st.st_mode):
                assert _inside(root, path), "%s -> %s leaves the root" % (path, os.readlink(path))


@pytest.fixture
def sandbox(tmp_path):
    """``(base, root)``: the data root three levels below ``base`` with a file beside it and above
    it, so that a member landing one, two or three levels too high is seen."""
    base = str(tmp_path / "base")
    root = os.path.join(base, "srv", "data", "tasks")
    os.makedirs(root)
    for path in (os.path.join(base, "secret"), os.path.join(base, "srv", "secret")):
        with open(path, "wb") as handle:
            handle.write(b"keep me")
    return base, root


def _chain_members(depth):
    """``d/l -> ..``, then ``d/l/u0 -> ..``, ...: each link checked against its own archive path
    stays inside; followed one after another they climb out of the copy."""
    members = [("d", "dir"), ("d/l", "sym", "..")]
    prefix = "d/l"
    for i in range(depth):
        members.append(("%s/u%d" % (prefix, i), "sym", ".."))
        prefix = "%s/u%d" % (prefix, i)
    members.append((prefix + "/escaped", "file", b"bad"))
    return members


def _archive_checksum(members):
    """The content checksum the source would report for a tree of these members."""
    digest = hashlib.sha256()
    for name, kind, extra in sorted((m[0], m[1], m[2]) for m in members if m[1] in ("file", "sym")):
        if kind == "sym":
            digest.update(b"L\0%s\0%s\0" % (name.encode(), extra.encode()))
        else:
            digest.update(b"F\0%s\0%d\0" % (name.encode(), len(extra)))
            digest.update(extra)
    return "sha256:" + digest.hexdigest()


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("right_checksum", [False, True])
def test_a_chain_of_links_never_writes_outside_the_root(sandbox, tmp_path, depth, right_checksum):
    base, root = sandbox
    members = _chain_members(depth)
    archive = _archive(str(tmp_path / "chain.tar"), members)
    checksum = _archive_checksum(members) if right_checksum else "sha256:0"
    before = _snapshot(base, root)
    with pytest.raises(td.TaskDataError):
        td.receive(root, "logs", "3", archive, checksum)
    assert _snapshot(base, root) == before
    assert os.listdir(root) in ([], ["logs"])
    _check_root_is_safe(root)


def test_the_checksum_is_verified_before_anything_is_unpacked(sandbox, tmp_path):
    base, root = sandbox
    archive = _archive(str(tmp_path / "a.tar"), [(".", "dir"), ("data", "file", b"x" * 100)])
    with pytest.raises(td.TaskDataError, match="does not verify"):
        td.receive(root, "logs", "3", archive, "sha256:0")
    assert os.listdir(root) == []          # not even the job's directory or a partial copy


def test_the_archive_checksum_is_the_content_checksum(sandbox, tmp_path):
    base, root = sandbox
    src = str(tmp_path / "src")
    os.makedirs(os.path.join(src, "logs", "3", "sub"))
    for name, data in (("data", b"x" * 70000), ("sub/more", b"y"), ("sub/\u00e9t\u00e9", b"z")):
        with open(os.path.join(src, "logs", "3", name), "wb") as handle:
            handle.write(data)
    os.symlink("sub/more", os.path.join(src, "logs", "3", "link"))
    os.symlink("sub", os.path.join(src, "logs", "3", "dirlink"))
    archive, checksum, dummy = td.pack(src, "logs", "3")
    with tarfile.open(archive) as tar:
        assert td.archive_checksum(tar, td.check_members(tar)) == checksum
    assert td.receive(root, "logs", "3", archive, checksum) == "received"
    assert td.content_checksum(os.path.join(root, "logs", "3")) == checksum
    _check_root_is_safe(root)


@pytest.mark.parametrize("members, message", [
    ([("a", "file", b"x"), ("h", "hard", "a")], "is a hard link"),
    ([("h", "hard", "/etc/passwd")], "is a hard link"),
    ([("null", "chr")], "not a file, directory or symlink"),
    ([("disk", "blk")], "not a file, directory or symlink"),
    ([("pipe", "fifo")], "not a file, directory or symlink"),
    ([("l", "sym", "/etc")], "points outside the copy"),
    ([("l", "sym", "a/../..")], "points outside the copy"),
    ([("a", "sym", "b"), ("b", "sym", "../x")], "points outside the copy"),
    ([("a", "sym", "b/.."), ("b", "sym", "c/d"), ("c", "dir")], None),       # resolves inside: accepted
    ([("a", "sym", "b/../../.."), ("b", "sym", "c/d"), ("c", "dir")], "points outside the copy"),
    ([("a", "sym", "b/../.."), ("b", "sym", "c/d"), ("c", "dir")], None),        # b/.. is c: still inside
    ([("a", "sym", "b"), ("b", "sym", "a")], None),                          # a loop inside: harmless
    ([("l", "sym", "d"), ("d", "dir"), ("l/x", "file", b"x")], "under the symbolic link"),
    ([("x", "file", b"1"), ("x", "file", b"2")], "more than once"),
    ([("x", "dir"), ("x", "sym", "y")], "more than once"),
    ([("f", "file", b"x"), ("f/g", "file", b"y")], "under the file"),
    ([("/abs", "file", b"x")], "outside the copy"),
    ([("../up", "file", b"x")], "outside the copy"),
    ([("big", "file", b"x", 1 << 40)], "cannot be unpacked"),
])
def test_hostile_members_are_refused_before_anything_is_written(sandbox, tmp_path, members, message):
    base, root = sandbox
    archive = _archive(str(tmp_path / "h.tar"), [(".", "dir")] + members)
    checksum = _archive_checksum([m for m in members if m[1] in ("file", "sym")])
    before = _snapshot(base, root)
    if message is None:
        assert td.receive(root, "logs", "3", archive, checksum) == "received"
    else:
        with pytest.raises(td.TaskDataError, match=message):
            td.receive(root, "logs", "3", archive, checksum)
        assert os.listdir(root) == []
    assert _snapshot(base, root) == before
    _check_root_is_safe(root)


def test_set_id_and_world_write_bits_are_dropped(sandbox, tmp_path):
    base, root = sandbox
    members = [("run", "file", b"#!/bin/sh\n", None, 0o6777), ("d", "dir", None, None, 0o1777)]
    archive = _archive(str(tmp_path / "m.tar"), [(".", "dir")] + members)
    assert td.receive(root, "logs", "3", archive, _archive_checksum(members[:1])) == "received"
    assert stat.S_IMODE(os.lstat(os.path.join(root, "logs", "3", "run")).st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(os.path.join(root, "logs", "3", "d")).st_mode) == 0o755


def test_an_archive_larger_than_the_free_space_is_refused(sandbox, tmp_path, monkeypatch):
    base, root = sandbox
    members = [("data", "file", b"x" * 5000)]
    archive = _archive(str(tmp_path / "a.tar"), [(".", "dir")] + members)
    monkeypatch.setattr(td, "_free_bytes", lambda path: 4096)
    with pytest.raises(td.TaskDataError, match="needs 5000 bytes, .* has 4096 free"):
        td.receive(root, "logs", "3", archive, _archive_checksum(members))
    assert os.listdir(root) == []


# test_unpacked_as_the_data_root_owner_not_root: in test_task_data_owner.py, with the other tests
# of a data root another user owns (they need a sandbox that user can traverse)


# --------------------------------------------------------------------- the property test --

NAMES = ["a", "b", "d", "l", "d/l", "d/l/u0", "d/l/u0/u1", "a/b", "a/b/c", ".", "./a", "..", "../x",
         "../../x", "/tmp/x", "/etc/passwd", "a/../../x", "d/../l", "x\ny", "-rf", "l/escaped",
         "d/l/u0/escaped", "d/l/u0/u1/escaped", "a/b/../../../y"]
TARGETS = ["..", "../..", "../../..", ".", "a", "b", "d", "l", "/", "/etc", "/tmp", "a/../..",
           "l/..", "d/l/..", "b/../../x", "../tasks", "./../.."]
KINDS = ["file", "file", "dir", "dir", "sym", "sym", "sym", "hard", "chr", "blk", "fifo", "huge"]


def _random_members(rng):
    members = [(".", "dir")] if rng.random() < 0.8 else []
    # a third of the archives hold only plain files and directories besides their links: a single
    # device file or absolute name would get the whole archive refused before a link is looked at
    plain = rng.random() < 0.35
    for dummy in range(rng.randint(1, 12)):
        name, kind = rng.choice(NAMES), rng.choice(KINDS)
        if plain:
            name, kind = rng.choice(["a", "b", "a/b", "c", "c/d"]), rng.choice(["file", "dir"])
        if kind == "file":
            members.append((name, "file", bytes([rng.randint(0, 255)]) * rng.randint(0, 3000)))
        elif kind == "huge":
            members.append((name, "file", b"y" * 10, rng.choice([1 << 20, 1 << 33, 1 << 62])))
        elif kind in ("sym", "hard"):
            members.append((name, kind, rng.choice(TARGETS + NAMES)))
        else:
            members.append((name, kind))
    if rng.random() < 0.4:
        # a chain of links that each stay inside on their own (finding 1), with a random last step
        links, prefix = [("d", "dir")], "d"
        for i in range(rng.randint(1, 6)):
            prefix = "%s/%s" % (prefix, "l%d" % i)
            links.append((prefix, "sym", rng.choice(["..", "../..", ".", "../d"])))
        links.append((prefix + "/escaped", rng.choice(["file", "dir"]), b"bad"))
        at = rng.randint(0, len(members))
        members[at:at] = [m[:2] if m[1] == "dir" else m for m in links]
    return members


@pytest.mark.parametrize("seed", range(300))
def test_property_no_hostile_archive_lands_outside_the_root(sandbox, tmp_path, seed):
    rng = random.Random(seed)
    base, root = sandbox
    members = _random_members(rng)
    fmt = rng.choice([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
    archive = str(tmp_path / "p.tar")
    try:
        _archive(archive, members, fmt)
    except (ValueError, tarfile.TarError):
        pytest.skip("tarfile cannot write this archive (%r)" % (members,))
    plain = [m for m in members if m[1] in ("file", "sym") and len(m) == 3]
    checksum = _archive_checksum(plain) if rng.random() < 0.7 else "sha256:0"
    before = _snapshot(base, root)
    try:
        result = td.receive(root, "logs", "3", archive, checksum)
    except td.TaskDataError:
        result = None
    assert _snapshot(base, root) == before, "seed %d wrote outside the root: %r" % (seed, members)
    _check_root_is_safe(root)
    copy = os.path.join(root, "logs", "3")
    # nothing beside the copy either (the job's directory, the data root)
    assert os.listdir(root) in ([], ["logs"]), os.listdir(root)
    assert not os.path.exists(os.path.join(root, "logs")) or os.listdir(os.path.join(root, "logs")) in ([], ["3"])
    if result is None:
        assert not os.path.exists(copy), members
        assert not os.path.exists(os.path.join(root, "logs")) or os.listdir(os.path.join(root, "logs")) == []
    else:
        assert td.content_checksum(copy) == checksum
