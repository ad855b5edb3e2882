# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task data on a node: the on-disk layout the task rebalancer reads and changes (stdlib only).

Layout under a node's data root (docs/rebalance.md)::

    <root>/<job>/<task>/            a complete copy of task <task> of job <job> (any files)
    <root>/<job>/.partial.<task>/   a copy being received (never counted as a copy)
    <root>/<job>/.removing.<task>/  a copy being removed (never counted as a copy)
    <root>/.outgoing/<job>.<task>.tar   a packed copy waiting to be fetched

A copy only ever gets its final name by ``rename`` after its content checksum was compared with
the source's, so a directory with a final name is complete; a crash leaves ``.partial`` /
``.removing`` / ``.outgoing`` leftovers, which :func:`clean` removes and nothing counts.
Job and task names are data: they must match :data:`NAME_RE` and never reach a shell.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tarfile
import tempfile

# \Z, not $: "$" also matches before a trailing newline
NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
PARTIAL = ".partial."
REMOVING = ".removing."
OUTGOING = ".outgoing"
DIR_MODE = 0o755
CHUNK = 1 << 20


class TaskDataError(Exception):
    """A clear, user-facing error: bad name, missing copy, checksum mismatch, unsafe archive."""


def check_name(kind, value):
    value = str(value)
    if not NAME_RE.match(value):
        raise TaskDataError("%s name %r is not allowed: 1-64 letters, digits, '_' or '-', "
                            "starting with a letter or digit" % (kind, value))
    return value


def check_root(root):
    if not root or not isinstance(root, str) or not os.path.isabs(root):
        raise TaskDataError("data_root %r must be an absolute path" % (root,))
    if any(ord(c) < 32 or ord(c) == 127 for c in root):
        raise TaskDataError("data_root %r contains a newline or another control character" % (root,))
    root = os.path.normpath(root)
    if root in ("/", "//"):
        # every top-level directory (etc, usr, ...) would be a "job" of it
        raise TaskDataError("data_root %r is the file system root; give the task data's own directory" % (root,))
    return root


def copy_dir(root, job, task):
    return os.path.join(check_root(root), check_name("job", job), check_name("task", task))


def _walk_files(top):
    """(relative path, absolute path, lstat) of every entry under ``top``, sorted, no symlink followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            out.append((os.path.relpath(path, top), path, os.lstat(path)))
    out.sort(key=lambda item: item[0])
    return out


def tree_stats(top):
    """``(bytes, newest mtime)`` of the regular files under ``top`` (the directory's own mtime counts)."""
    size, newest = 0, os.lstat(top).st_mtime
    for dummy_rel, dummy_path, st in _walk_files(top):
        if stat.S_ISREG(st.st_mode):
            size += st.st_size
        newest = max(newest, st.st_mtime)
    return size, newest


def content_checksum(top):
    """sha256 over every regular file's relative path, size and bytes (sorted); symlinks by target.

    Modes and times are not part of it: the checksum says whether two copies hold the same data.
    """
    digest = hashlib.sha256()
    for rel, path, st in _walk_files(top):
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(path).encode("utf-8", "surrogateescape")
            digest.update(b"L\0%s\0%s\0" % (rel.encode("utf-8", "surrogateescape"), target))
        elif stat.S_ISREG(st.st_mode):
            digest.update(b"F\0%s\0%d\0" % (rel.encode("utf-8", "surrogateescape"), st.st_size))
            with open(path, "rb") as handle:
                while True:
                    block = handle.read(CHUNK)
                    if not block:
                        break
                    digest.update(block)
    return "sha256:" + digest.hexdigest()


def scan(root, checksums=False):
    """What the node holds: disk use of the data root's file system, copies and leftovers.

    A missing data root is an empty node (nothing created).  Names that do not match
    :data:`NAME_RE` are reported in ``ignored`` and never touched.
    """
    root = check_root(root)
    result = {"data_root": root, "exists": os.path.isdir(root), "copies": [], "leftovers": [], "ignored": []}
    probe = root
    while not os.path.isdir(probe):
        probe = os.path.dirname(probe)
    fs = os.statvfs(probe)
    result["disk_total"] = fs.f_blocks * fs.f_frsize
    result["disk_free"] = fs.f_bavail * fs.f_frsize
    result["disk_used"] = (fs.f_blocks - fs.f_bfree) * fs.f_frsize
    if not result["exists"]:
        return result
    for job in sorted(os.listdir(root)):
        jpath = os.path.join(root, job)
        if job == OUTGOING:
            result["leftovers"].extend(os.path.join(jpath, n) for n in sorted(os.listdir(jpath)))
            continue
        if os.path.islink(jpath) or not os.path.isdir(jpath) or not NAME_RE.match(job):
            result["ignored"].append(jpath)
            continue
        for task in sorted(os.listdir(jpath)):
            tpath = os.path.join(jpath, task)
            if task.startswith(PARTIAL) or task.startswith(REMOVING):
                result["leftovers"].append(tpath)
                continue
            if os.path.islink(tpath) or not os.path.isdir(tpath) or not NAME_RE.match(task):
                result["ignored"].append(tpath)
                continue
            size, newest = tree_stats(tpath)
            entry = {"job": job, "task": task, "bytes": size, "last_active": newest, "path": tpath}
            if checksums:
                entry["checksum"] = content_checksum(tpath)
            result["copies"].append(entry)
    return result


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def outgoing_path(root, job, task):
    return os.path.join(check_root(root), OUTGOING, "%s.%s.tar" % (check_name("job", job), check_name("task", task)))


def pack(root, job, task):
    """Pack the copy into ``<root>/.outgoing/<job>.<task>.tar``: ``(path, checksum, bytes)``.

    The archive is written under a temporary name and renamed, so a fetched archive is whole.
    """
    src = copy_dir(root, job, task)
    if not os.path.isdir(src) or os.path.islink(src):
        raise TaskDataError("no copy of %s/%s under %s" % (job, task, root))
    checksum = content_checksum(src)
    dest = outgoing_path(root, job, task)
    os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".pack.", dir=os.path.dirname(dest))
    try:
        with os.fdopen(fd, "wb") as handle:
            with tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as tar:
                tar.add(src, arcname=".", recursive=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.rename(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return dest, checksum, os.path.getsize(dest)


def _safe_members(tar, dest):
    for member in tar.getmembers():
        name = os.path.normpath(member.name)
        if name.startswith("..") or os.path.isabs(name):
            raise TaskDataError("archive member %r points outside the copy" % member.name)
        if name == "." and not member.isdir():
            # "." is the copy's own directory: only the top directory may have that name
            raise TaskDataError("archive member %r is not a directory but names the copy itself" % member.name)
        if not (member.isfile() or member.isdir() or member.issym()):
            raise TaskDataError("archive member %r is not a file, directory or symlink" % member.name)
        if member.issym():
            target = os.path.normpath(os.path.join(os.path.dirname(name), member.linkname))
            if member.linkname.startswith("/") or target.startswith(".."):
                raise TaskDataError("archive symlink %r points outside the copy" % member.name)
        yield member
    del dest


def _unpack(archive, partial, job, task):
    """Extract ``archive`` into ``partial``; TaskDataError naming the archive when it is damaged
    (tarfile.ReadError), cannot be written as it is (a file where a directory is, ...) or holds
    symbolic links that refer to each other in a loop (tarfile follows them when a link cannot be
    made, RecursionError)."""
    try:
        with tarfile.open(archive, mode="r") as tar:
            members = list(_safe_members(tar, partial))
            if hasattr(tarfile, "data_filter"):
                tar.extractall(partial, members=members, filter="data")
            else:  # Python < 3.11.4: the members were checked by _safe_members above
                for member in members:  # as the "data" filter: no set-id, sticky or group/other write
                    member.mode &= ~(stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH)
                tar.extractall(partial, members=members)  # nosec B202: members checked
    except RecursionError:
        raise TaskDataError("archive %s of %s/%s cannot be unpacked: its links refer to each other in a loop" % (
            archive, job, task))
    except (tarfile.TarError, OSError) as exc:
        raise TaskDataError("archive %s of %s/%s cannot be unpacked: %s" % (
            archive, job, task, str(exc).replace("\n", " ") or type(exc).__name__))


def receive(root, job, task, archive, checksum):
    """Unpack ``archive`` as the copy of job/task, verify ``checksum``, then give it its final name.

    Returns ``"present"`` when a copy with that checksum was already there (nothing changed),
    ``"received"`` otherwise.  A mismatch removes what was unpacked and raises; an existing copy
    with other content raises (it is never overwritten).  An archive that cannot be unpacked
    (damaged, unsafe, or not writable as it is) raises TaskDataError naming it, and what was
    unpacked is removed.
    """
    final = copy_dir(root, job, task)
    if os.path.isdir(final):
        have = content_checksum(final)
        if have == checksum:
            return "present"
        raise TaskDataError("%s already holds a different copy of %s/%s (%s, wanted %s)" % (
            root, job, task, have, checksum))
    jobdir = os.path.dirname(final)
    os.makedirs(jobdir, mode=DIR_MODE, exist_ok=True)
    partial = os.path.join(jobdir, PARTIAL + task)
    if os.path.lexists(partial):
        shutil.rmtree(partial)
    os.mkdir(partial, DIR_MODE)
    try:
        _unpack(archive, partial, job, task)
        got = content_checksum(partial)
        if got != checksum:
            raise TaskDataError("copy of %s/%s from %s does not verify: checksum %s, source had %s" % (
                job, task, archive, got, checksum))
        _sync_tree(partial)
        os.rename(partial, final)
        _fsync_dir(jobdir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return "received"


def _sync_tree(top):
    for dirpath, dummy_dirs, filenames in os.walk(top):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(dirpath)


def remove(root, job, task):
    """Remove the copy (renamed to ``.removing.<task>`` first, so it stops counting at once).

    ``True`` when something was removed.
    """
    final = copy_dir(root, job, task)
    if not os.path.lexists(final):
        return False
    jobdir = os.path.dirname(final)
    doomed = os.path.join(jobdir, REMOVING + task)
    if os.path.lexists(doomed):
        shutil.rmtree(doomed)
    os.rename(final, doomed)
    _fsync_dir(jobdir)
    shutil.rmtree(doomed)
    return True


def clean(root, leftovers):
    """Remove the leftovers :func:`scan` reported (only paths under ``root``); the paths removed."""
    root = check_root(root)
    removed = []
    for path in leftovers:
        real = os.path.normpath(path)
        if os.path.commonpath([root, real]) != root or real == root:
            raise TaskDataError("leftover %r is not under the data root %s" % (path, root))
        if os.path.isdir(real) and not os.path.islink(real):
            shutil.rmtree(real)
        elif os.path.lexists(real):
            os.unlink(real)
        else:
            continue
        removed.append(real)
    return removed
