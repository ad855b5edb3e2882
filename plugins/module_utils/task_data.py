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
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile

from ansible_collections.gridengine.balancer.plugins.module_utils.child_process import collect_child

# \Z, not $: "$" also matches before a trailing newline
NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
PARTIAL = ".partial."
REMOVING = ".removing."
OUTGOING = ".outgoing"
DIR_MODE = 0o755
DEFAULT_ROOT = "/var/lib/gridengine-balancer/tasks"
CHUNK = 1 << 20


class TaskDataError(Exception):
    """A clear, user-facing error: bad name, missing copy, checksum mismatch, unsafe archive."""


def check_name(kind, value):
    value = str(value)
    if not NAME_RE.match(value):
        raise TaskDataError("%s name %r is not allowed: 1-64 letters, digits, '_' or '-', "
                            "starting with a letter or digit" % (kind, value))
    return value


def data_root_spec(**options):
    """The argument spec of a module that works on a node's task data: ``data_root`` (doc
    fragment ``gridengine.balancer.task_data``), then the module's own ``options``."""
    spec = dict(data_root=dict(type="path", default=DEFAULT_ROOT))
    spec.update(options)
    return spec


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
            with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as handle:
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
    Run as root, the packing is done as the data root's owner (see :func:`_as_owner`).
    """
    src = copy_dir(root, job, task)
    return tuple(_as_owner(check_root(root), lambda: _pack(root, job, task, src)))


def _pack(root, job, task, src):
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


MAX_LINK_STEPS = 40


def _member_path(member):
    """The member's path in the copy as a tuple of components (``()`` is the copy itself);
    TaskDataError for an absolute name, a ``..`` component or a control character."""
    name = member.name
    if name.startswith("/") or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise TaskDataError("archive member %r points outside the copy (absolute, or a control character)" % name)
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise TaskDataError("archive member %r points outside the copy (a '..' in its name)" % name)
    return parts


def _resolve(links, start, target, steps=0):
    """Where ``target`` (a link in directory ``start``) leads in the copy as it will be unpacked,
    following the archive's own links: the components, or TaskDataError if it ever leaves the copy.

    The real tree is exactly the archive (a fresh directory, links made last), so resolving with
    the archive's links is resolving against the real tree. ``None`` for a loop (it leads
    nowhere: the kernel refuses to follow it)."""
    if target.startswith("/"):
        raise TaskDataError("absolute link target %r" % target)
    path = list(start)
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not path:
                raise TaskDataError("link target %r climbs above the copy" % target)
            path.pop()
            continue
        path.append(part)
        if tuple(path) in links:
            if steps >= MAX_LINK_STEPS:
                return None
            here = path[:-1]
            resolved = _resolve(links, here, links[tuple(path)], steps + 1)
            if resolved is None:
                return None
            path = list(resolved)
    return tuple(path)


def check_members(tar):
    """The members of an archive of one copy, checked before anything is written.

    Only directories, regular files and symbolic links; no name twice; no absolute name, ``..``
    or control character; nothing under a link or a file; every link, followed through the
    archive's other links (chains included), resolves inside the copy. TaskDataError naming the
    member otherwise. Returns ``[(components, member)]`` in archive order.
    """
    seen, links, out = {}, {}, []
    for member in tar.getmembers():
        parts = _member_path(member)
        if not parts and not member.isdir():
            # "." is the copy's own directory: only the top directory may have that name
            raise TaskDataError("archive member %r is not a directory but names the copy itself" % member.name)
        if member.islnk():
            raise TaskDataError("archive member %r is a hard link (to %r): refused" % (member.name, member.linkname))
        if member.issparse() or not (member.isreg() or member.isdir() or member.issym()):
            raise TaskDataError("archive member %r is not a file, directory or symlink" % member.name)
        if parts in seen:
            raise TaskDataError("archive member %r appears more than once" % member.name)
        seen[parts] = member
        if member.issym():
            links[parts] = member.linkname
        out.append((parts, member))
    for parts, member in out:
        for i in range(1, len(parts)):
            above = seen.get(parts[:i])
            if above is not None and above.issym():
                raise TaskDataError("archive member %r is under the symbolic link %r" % (member.name, above.name))
            if above is not None and not above.isdir():
                raise TaskDataError("archive member %r is under the file %r" % (member.name, above.name))
        if member.issym():
            try:
                _resolve(links, parts[:-1], member.linkname)
            except TaskDataError as exc:
                raise TaskDataError("archive symlink %r -> %r points outside the copy: %s" % (
                    member.name, member.linkname, exc))
    return out


def archive_checksum(tar, members):
    """The :func:`content_checksum` of the copy the checked ``members`` make, read from the archive."""
    digest = hashlib.sha256()
    entries = sorted(("/".join(parts), member) for parts, member in members if member.isreg() or member.issym())
    for rel, member in entries:
        rel = rel.encode("utf-8", "surrogateescape")
        if member.issym():
            digest.update(b"L\0%s\0%s\0" % (rel, member.linkname.encode("utf-8", "surrogateescape")))
            continue
        digest.update(b"F\0%s\0%d\0" % (rel, member.size))
        for block in _member_blocks(tar, member):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _member_blocks(tar, member):
    """The data of the regular file ``member``, in blocks of at most CHUNK bytes; exactly its
    declared size, or tarfile.ReadError when the archive ends before."""
    handle = tar.extractfile(member)
    left = member.size
    while left > 0:
        block = handle.read(min(CHUNK, left))
        if not block:
            raise tarfile.ReadError("unexpected end of data in %r" % member.name)
        yield block
        left -= len(block)


def _free_bytes(path):
    while not os.path.isdir(path):      # a data root not made yet: the file system it will be on
        path = os.path.dirname(path)
    fs = os.statvfs(path)
    return fs.f_bavail * fs.f_frsize


def _owner_of(root):
    """``(uid, gid)`` to unpack as: the data root's owner (the user the task data belongs to)."""
    st = os.stat(root)
    return st.st_uid, st.st_gid


def _extract(tar, members, top_fd):
    """Write the checked ``members`` into the directory ``top_fd``: directories and files first,
    links last, every path relative to ``top_fd`` and opened with O_NOFOLLOW / O_EXCL, so no
    write follows a link. Modes as the "data" filter: no set-id or sticky bit, no group/other
    write, owner read/write kept."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    dirs = []

    def mkdirs(parts):
        for i in range(1, len(parts) + 1):
            try:
                os.mkdir("/".join(parts[:i]), 0o700, dir_fd=top_fd)
            except FileExistsError:
                st = os.stat("/".join(parts[:i]), dir_fd=top_fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    raise TaskDataError("archive path %r is not a directory" % "/".join(parts[:i]))

    for parts, member in sorted(members, key=lambda item: (len(item[0]), item[0])):
        if member.isdir():
            mkdirs(parts)
            dirs.append((parts, member))
    for parts, member in members:
        if not member.isreg():
            continue
        mkdirs(parts[:-1])
        fd = os.open("/".join(parts), os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600, dir_fd=top_fd)
        with os.fdopen(fd, "wb") as out:
            for block in _member_blocks(tar, member):
                out.write(block)
            out.flush()
            os.fchmod(out.fileno(), (member.mode & 0o755) | 0o600)
            os.utime(out.fileno(), (member.mtime, member.mtime))
    for parts, member in members:
        if member.issym():
            mkdirs(parts[:-1])
            os.symlink(member.linkname, "/".join(parts), dir_fd=top_fd)
            if os.utime in os.supports_follow_symlinks:
                os.utime("/".join(parts), (member.mtime, member.mtime), dir_fd=top_fd, follow_symlinks=False)
    for parts, member in sorted(dirs, key=lambda item: -len(item[0])):
        fd = os.open("/".join(parts) or ".", os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=top_fd)
        try:
            os.fchmod(fd, (member.mode & 0o755) | 0o700)
            os.utime(fd, (member.mtime, member.mtime))
        finally:
            os.close(fd)


def _as_user(uid, gid, work):
    """Run ``work()`` as ``uid``/``gid`` when this process is root and they are not root (in a
    forked child that drops every group first), else in this process; its result (from a child:
    through JSON, so lists for tuples). TaskDataError with the child's message when it fails."""
    if os.geteuid() != 0 or uid == 0:
        return work()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its outcome is checked by the parent
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            if os.getuid() != uid or os.geteuid() != uid:
                raise TaskDataError("could not become uid %d" % uid)
            reply = b"R" + json.dumps(work()).encode("utf-8")
            while reply:
                reply = reply[os.write(write_end, reply):]
            code = 0
        except BaseException as exc:  # pylint: disable=broad-except
            message = "%s: %s" % (type(exc).__name__, exc) if not isinstance(exc, TaskDataError) else str(exc)
            os.write(write_end, b"E" + message.encode("utf-8", "replace")[:8000])
        finally:
            os._exit(code)  # pylint: disable=protected-access
    data, status = collect_child(pid, read_end, write_end)
    if status != 0 or data[:1] != b"R":
        message = data[1:].decode("utf-8", "replace") if data[:1] == b"E" else ""
        raise TaskDataError(message or "the process working as uid %d died (status %d)" % (uid, status))
    return json.loads(data[1:].decode("utf-8"))


def _as_owner(root, work):
    """Run ``work()`` as the data root's owner when this process is root and the owner is not.

    The owner can rename and replace every name under the data root (a job directory, a copy,
    ``.outgoing``) at any moment, for instance with a link to ``/`` between a check and a
    rename; done with the owner's rights, such a swap gains nothing the owner did not have.
    A missing data root is worked on as this process (it is made by it)."""
    try:
        uid, gid = _owner_of(root)
    except FileNotFoundError:
        return work()
    if os.geteuid() == 0 and uid != 0:
        _give_outgoing(root, uid, gid)
    return _as_user(uid, gid, work)


def _give_outgoing(root, uid, gid):
    """Hand an archive directory made by root (an earlier version, or the role's task on a target)
    to the data root's owner, who packs and cleans there. ``lchown``: a link swapped in is not
    followed."""
    path = os.path.join(root, OUTGOING)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode) and (st.st_uid, st.st_gid) != (uid, gid):
        os.chown(path, uid, gid, follow_symlinks=False)


def _unpack(archive, partial, job, task, checksum, root):
    """Check ``archive``, verify its content against ``checksum``, then unpack it into ``partial``
    (created here), verify the unpacked copy and rename it into place, all but the archive's
    reading as the data root's owner. Nothing is written before the archive has passed every
    check and the checksum; TaskDataError naming the archive when it is damaged, unsafe, does not
    verify or does not fit."""
    try:
        with tarfile.open(archive, mode="r") as tar:   # as root: the archive may be root's alone
            members = check_members(tar)
            got = archive_checksum(tar, members)
            if got != checksum:
                raise TaskDataError("copy of %s/%s from %s does not verify: checksum %s, source had %s" % (
                    job, task, archive, got, checksum))
            need = sum(member.size for dummy, member in members if member.isreg())
            free = _free_bytes(root)
            if need > free:
                raise TaskDataError("copy of %s/%s from %s needs %d bytes, the data root %s has %d free" % (
                    job, task, archive, need, root, free))
            if not os.path.isdir(root):
                os.makedirs(root, mode=DIR_MODE)
            return _as_owner(root, lambda: _place(tar, members, partial, job, task, checksum, archive))
    except TaskDataError:
        raise
    except RecursionError:
        raise TaskDataError("archive %s of %s/%s cannot be unpacked: it is nested too deeply" % (archive, job, task))
    except (tarfile.TarError, OSError, ValueError) as exc:
        raise TaskDataError("archive %s of %s/%s cannot be unpacked: %s" % (
            archive, job, task, str(exc).replace("\n", " ") or type(exc).__name__))


def _place(tar, members, partial, job, task, checksum, archive):
    """Unpack the checked ``members`` into ``partial``, verify, rename to the copy's name."""
    jobdir = os.path.dirname(partial)
    final = os.path.join(jobdir, task)
    try:
        os.makedirs(jobdir, mode=DIR_MODE, exist_ok=True)
        if os.path.lexists(partial):
            shutil.rmtree(partial)
        os.mkdir(partial, 0o700)
        top_fd = os.open(partial, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
        try:
            _extract(tar, members, top_fd)
        finally:
            os.close(top_fd)
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


def receive(root, job, task, archive, checksum):
    """Check ``archive``, verify ``checksum`` on its content, unpack it as the copy of job/task,
    verify the unpacked copy again, then give it its final name.

    Returns ``"present"`` when a copy with that checksum was already there (nothing changed),
    ``"received"`` otherwise. An archive that is damaged, holds anything but directories, files
    and links that stay inside the copy, or does not match ``checksum`` raises TaskDataError
    naming it before anything is written; an existing copy with other content raises (it is
    never overwritten). The unpacking never relies on the running Python's ``data`` filter, and
    everything written under the data root is written as its owner when that is not root.
    """
    final = copy_dir(root, job, task)
    root = check_root(root)
    if os.path.isdir(final):
        have = content_checksum(final)
        if have == checksum:
            return "present"
        raise TaskDataError("%s already holds a different copy of %s/%s (%s, wanted %s)" % (
            root, job, task, have, checksum))
    return _unpack(archive, os.path.join(os.path.dirname(final), PARTIAL + task), job, task, checksum, root)


def _sync_tree(top):
    for dirpath, dummy_dirs, filenames in os.walk(top):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(dirpath)


def remove(root, job, task):
    """Remove the copy (renamed to ``.removing.<task>`` first, so it stops counting at once).

    ``True`` when something was removed. Run as root, as the data root's owner (:func:`_as_owner`).
    """
    final = copy_dir(root, job, task)
    return _as_owner(check_root(root), lambda: _remove(final, task))


def _remove(final, task):
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
    """Remove the leftovers :func:`scan` reported (only paths under ``root``); the paths removed.
    Run as root, as the data root's owner (:func:`_as_owner`)."""
    root = check_root(root)
    return _as_owner(root, lambda: _clean(root, leftovers))


def _clean(root, leftovers):
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
