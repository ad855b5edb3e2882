# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""task_data run as root on a data root another user owns.

The owner can rename and replace every name under the data root at any moment: a job directory
swapped for a link to ``/`` between a check and a rename would make root rename and delete
``/usr``, pack ``/root`` or write into a root-only directory. Run as root, everything task_data
writes, renames, removes or packs under the data root is therefore done as the owner (a forked
child); these tests run as root with the data root owned by ``nobody`` (65534) and check that a
swapped link makes the operation fail with the owner's rights and leaves the link's target as it
was. The sandbox is a directory of /tmp that ``nobody`` can traverse (pytest's own temporary
directories are root's alone).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import task_data as td

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="needs root to act as another user")

UID = GID = 65534


@pytest.fixture
def owned():
    """``(base, root)``: ``root`` (``base/srv/tasks``) owned by nobody; ``base`` root's, 0711."""
    base = tempfile.mkdtemp(prefix="td-owner.")
    try:
        os.chmod(base, 0o711)
        os.makedirs(os.path.join(base, "srv", "tasks"))
        os.chmod(os.path.join(base, "srv"), 0o755)
        root = os.path.join(base, "srv", "tasks")
        os.chown(root, UID, GID)
        yield base, root
    finally:
        shutil.rmtree(base)


def _as_nobody(path, kind="dir", data=b""):
    if kind == "dir":
        os.mkdir(path, 0o755)
    else:
        with open(path, "wb") as handle:
            handle.write(data)
    os.chown(path, UID, GID)


def _copy(root, job="logs", task="3", files=(("data", b"x" * 100),)):
    jobdir = os.path.join(root, job)
    if not os.path.isdir(jobdir):
        _as_nobody(jobdir)
    _as_nobody(os.path.join(jobdir, task))
    for name, data in files:
        _as_nobody(os.path.join(jobdir, task, name), "file", data)
    return os.path.join(jobdir, task)


def _victim(base, name, mode=0o755):
    """A root-owned directory outside the data root holding ``3/keep``."""
    victim = os.path.join(base, name)
    os.makedirs(os.path.join(victim, "3"))
    os.chmod(victim, mode)
    with open(os.path.join(victim, "3", "keep"), "wb") as handle:
        handle.write(b"root's")
    return victim


def _owner(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid


def test_pack_receive_remove_clean_as_the_owner(owned):
    base, root = owned
    _copy(root)
    archive, checksum, size = td.pack(root, "logs", "3")
    assert archive == os.path.join(root, ".outgoing", "logs.3.tar") and size > 0
    assert _owner(archive) == (UID, GID) and _owner(os.path.dirname(archive)) == (UID, GID)
    assert checksum == td.content_checksum(os.path.join(root, "logs", "3"))
    # the archive as the role sends it to a target: root's, 0600, in a directory root made
    incoming = os.path.join(base, "incoming.tar")
    shutil.copy(archive, incoming)
    os.chmod(incoming, 0o600)
    assert td.receive(root, "logs", "4", incoming, checksum) == "received"
    assert _owner(os.path.join(root, "logs", "4")) == (UID, GID)
    assert _owner(os.path.join(root, "logs", "4", "data")) == (UID, GID)
    assert td.receive(root, "logs", "4", incoming, checksum) == "present"
    assert td.remove(root, "logs", "3") is True
    assert not os.path.lexists(os.path.join(root, "logs", "3"))
    assert td.remove(root, "logs", "3") is False
    assert td.clean(root, [archive]) == [archive]
    assert not os.path.lexists(archive)


def test_an_archive_directory_root_made_is_handed_to_the_owner(owned):
    dummy_base, root = owned
    _copy(root)
    outgoing = os.path.join(root, ".outgoing")
    os.mkdir(outgoing, 0o700)              # root's, as the role's task on a target makes it
    with open(os.path.join(outgoing, "old.1.tar"), "wb") as handle:
        handle.write(b"root's leftover")
    archive, dummy_checksum, dummy_size = td.pack(root, "logs", "3")
    assert _owner(outgoing) == (UID, GID) and _owner(archive) == (UID, GID)
    assert td.clean(root, [os.path.join(outgoing, "old.1.tar")]) == [os.path.join(outgoing, "old.1.tar")]


def test_a_job_directory_swapped_for_a_link_is_not_removed_through(owned):
    """``<root>/logs`` is a link to a root-owned directory: removing logs/3 must not rename or
    delete the directory ``3`` in there (root would have: the rename and rmtree follow the link
    in the path)."""
    base, root = owned
    victim = _victim(base, "victim")
    os.symlink(victim, os.path.join(root, "logs"))
    with pytest.raises(td.TaskDataError, match="Permission denied"):
        td.remove(root, "logs", "3")
    assert os.listdir(victim) == ["3"]
    with open(os.path.join(victim, "3", "keep"), "rb") as handle:
        assert handle.read() == b"root's"


def test_a_job_directory_swapped_for_a_link_is_not_packed_through(owned):
    """``<root>/logs`` is a link to a directory only root may read: packing logs/3 must not put
    its files into an archive the owner can read (root would have packed them)."""
    base, root = owned
    _victim(base, "secret", mode=0o700)
    os.symlink(os.path.join(base, "secret"), os.path.join(root, "logs"))
    with pytest.raises(td.TaskDataError):
        td.pack(root, "logs", "3")
    outgoing = os.path.join(root, ".outgoing")
    assert not os.path.isdir(outgoing) or os.listdir(outgoing) == []


def test_a_job_directory_swapped_for_a_link_is_not_received_into(owned):
    """``<root>/logs`` is a link to a root-owned directory: receiving logs/5 must not create
    anything in there (root would have made ``.partial.5`` and ``5``)."""
    base, root = owned
    _copy(root, job="src")
    archive, checksum, dummy_size = td.pack(root, "src", "3")
    victim = _victim(base, "victim")
    os.symlink(victim, os.path.join(root, "logs"))
    with pytest.raises(td.TaskDataError, match="Permission denied"):
        td.receive(root, "logs", "5", archive, checksum)
    assert os.listdir(victim) == ["3"]


def test_leftovers_outside_the_root_are_still_refused(owned):
    base, root = owned
    victim = _victim(base, "victim")
    with pytest.raises(td.TaskDataError, match="not under the data root"):
        td.clean(root, [os.path.join(victim, "3")])
    assert os.listdir(victim) == ["3"]


def test_unpacked_as_the_data_root_owner_not_root(owned):
    """The extraction itself (issue 20) is done by the owner too: every file and directory of the
    received copy belongs to that user, and the archive, readable by root only, is opened by
    the root process before the child starts."""
    base, root = owned
    src = os.path.join(base, "src")
    os.makedirs(os.path.join(src, "sub"))
    for rel, data in (("data", b"x" * 10), ("sub/more", b"y")):
        with open(os.path.join(src, rel), "wb") as handle:
            handle.write(data)
    archive = os.path.join(base, "a.tar")
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(src, arcname=".")
    os.chmod(archive, 0o600)
    assert stat.S_IMODE(os.stat(archive).st_mode) == 0o600
    assert td.receive(root, "logs", "3", archive, td.content_checksum(src)) == "received"
    for rel in ("logs", "logs/3", "logs/3/data", "logs/3/sub", "logs/3/sub/more"):
        assert _owner(os.path.join(root, rel)) == (UID, GID), rel
