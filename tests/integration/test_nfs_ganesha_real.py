# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.nfs_export against a real NFS server and a real NFS client (issue 25).

No Grid Engine and no namespace node: a private nfs-ganesha (user-space NFSv4 server,
``nfs-ganesha`` + ``nfs-ganesha-vfs``) runs in the foreground as root, bound to 127.0.0.1 on a
free port, with its configuration, pid file, log and recovery directory in a ``mkdtemp``
directory. The module (through ``ansible localhost``, under the target-side ``/usr/bin/python3``)
exports a directory of that temporary directory to 127.0.0.1; libnfs-utils (``nfs-ls``,
``nfs-cp``, ``nfs-cat``: an NFS client in user space, no kernel module) reads and writes it, as
root and with a user's credentials, and shows root squash in force. Then the client is removed
and access is refused, and an address that is not a member is refused: 127.0.0.2 as the source
address, through a small ``LD_PRELOAD`` helper compiled here (``nfs-ls`` has no option for a
source address; skipped with a message when there is no C compiler).

Skipped when ganesha or libnfs-utils is missing or not root, unless ``GEB_REQUIRE_CLUSTER=1``
(scripts/test.sh), which fails instead. Prints how long the export stage takes (add, remove).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE = os.path.join(ROOT, ".venv", "bin", "ansible")
ANON = 4294967294          # ganesha's default Anonymous_Uid (-2)
USER = 1001                # any uid: AUTH_SYS sends it, the server trusts it (the client is root)

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
/* Every IPv4 socket of the process gets GEB_SOURCE_ADDRESS as its source address: a bind() to
   INADDR_ANY (libnfs binds a reserved port when run as root) binds to it instead, and connect()
   of a socket not bound yet binds it first. */
static int source(struct in_addr *out) {
    const char *src = getenv("GEB_SOURCE_ADDRESS");
    return src && inet_pton(AF_INET, src, out) == 1;
}
int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    struct sockaddr_in me;
    if (!real) real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= sizeof me) {
        memcpy(&me, addr, sizeof me);
        if (me.sin_addr.s_addr == htonl(INADDR_ANY) && source(&me.sin_addr))
            return real(fd, (struct sockaddr *)&me, sizeof me);
    }
    return real(fd, addr, len);
}
int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    struct sockaddr_in me, cur;
    socklen_t cl = sizeof cur;
    if (!real) real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    if (addr && addr->sa_family == AF_INET && getsockname(fd, (struct sockaddr *)&cur, &cl) == 0
        && cur.sin_family == AF_INET && cur.sin_port == 0) {
        memset(&me, 0, sizeof me);
        me.sin_family = AF_INET;
        if (source(&me.sin_addr))
            bind(fd, (struct sockaddr *)&me, sizeof me);
    }
    return real(fd, addr, len);
}
"""


def _missing():
    if os.geteuid() != 0:
        return "not root (ganesha.nfsd and the reserved source ports of nfs-ls need root)"
    for tool in ("ganesha.nfsd", "nfs-ls", "nfs-cp", "nfs-cat"):
        if not shutil.which(tool):
            return "%s is not installed (apt-get install nfs-ganesha nfs-ganesha-vfs libnfs-utils)" % tool
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so") and not os.path.isdir("/usr/lib/ganesha"):
        return "nfs-ganesha-vfs is not installed"
    if not os.access(ANSIBLE, os.X_OK):
        return "no .venv/bin/ansible"
    return ""


def _fsal_dir():
    for d in ("/usr/lib/x86_64-linux-gnu/ganesha", "/usr/lib/aarch64-linux-gnu/ganesha", "/usr/lib/ganesha",
              "/usr/lib64/ganesha"):
        if os.path.exists(os.path.join(d, "libfsalvfs.so")):
            return d
    return "/usr/lib/x86_64-linux-gnu/ganesha"


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Ganesha:
    """A private ganesha.nfsd (foreground, NFSv4 only, 127.0.0.1:port) in a mkdtemp directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="geb-ganesha-test.")
        os.chmod(self.dir, 0o755)          # ganesha runs as root; the share below is what is served
        self.share = os.path.join(self.dir, "share")
        os.mkdir(self.share)
        os.chmod(self.share, 0o1777)       # the anonymous uid and any user may write (like /tmp)
        os.mkdir(os.path.join(self.dir, "recovery"), 0o700)
        self.port = _free_port()
        self.conf = os.path.join(self.dir, "ganesha.conf")
        self.exports = os.path.join(self.dir, "gridengine-balancer-test.conf")
        self.pid_file = os.path.join(self.dir, "ganesha.pid")
        self.log = os.path.join(self.dir, "ganesha.log")
        with open(self.conf, "w", encoding="utf-8") as handle:
            handle.write(
                "NFS_CORE_PARAM {\n    Protocols = 4;\n    NFS_Port = %d;\n    Bind_addr = 127.0.0.1;\n"
                "    Enable_NLM = false;\n    Enable_RQUOTA = false;\n    Enable_UDP = false;\n"
                '    Plugins_Dir = "%s";\n}\n'
                'NFSv4 {\n    RecoveryBackend = fs;\n    RecoveryRoot = "%s";\n    Graceless = true;\n}\n'
                "NFS_KRB5 {\n    Active_krb5 = false;\n}\n"
                % (self.port, _fsal_dir(), os.path.join(self.dir, "recovery")))
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(   # pylint: disable=consider-using-with
            ["ganesha.nfsd", "-F", "-f", self.conf, "-L", self.log, "-p", self.pid_file, "-N", "NIV_EVENT"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=self.dir, start_new_session=True)
        deadline = time.time() + 20
        while time.time() < deadline:
            assert self.proc.poll() is None, "ganesha.nfsd exited: %s" % self.log_tail()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    if os.path.exists(self.pid_file):
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("ganesha.nfsd did not listen on 127.0.0.1:%d: %s" % (self.port, self.log_tail()))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def log_tail(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-15:])
        except OSError:
            return "(no log)"

    def url(self, name="", **params):
        query = dict({"version": 4, "nfsport": self.port}, **params)
        path = self.share + ("/" + name if name else "")
        return "nfs://127.0.0.1%s?%s" % (path, "&".join("%s=%s" % kv for kv in query.items()))


@pytest.fixture(scope="module")
def server():
    why = _missing()
    if why:
        if os.environ.get("GEB_REQUIRE_CLUSTER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    srv = Ganesha()
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(srv.dir, ignore_errors=True)


def module(srv, clients, state="present", check=False, name="gridengine.balancer.nfs_export", **extra):
    """Run gridengine.balancer.nfs_export through `ansible localhost` (target Python /usr/bin/python3)."""
    args = dict({"server": "ganesha", "paths": [srv.share], "clients": clients, "state": state,
                 "config": srv.exports, "include_in": srv.conf, "pid_file": srv.pid_file}, **extra)
    argv = [ANSIBLE, "localhost", "-c", "local", "-i", "localhost,", "-m", name,
            "-a", json.dumps(args) if name.endswith("nfs_export") else "", "-e",
            "ansible_python_interpreter=/usr/bin/python3"]
    if check:
        argv += ["--check", "--diff"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="0")
    started = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)
    took = time.monotonic() - started
    assert proc.returncode == 0, "%s\n%s\n%s" % (argv, proc.stdout[-3000:], proc.stderr[-3000:])
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return result, took


def nfs(argv, source=None, shim=None, user=None):
    env = dict(os.environ, LC_ALL="C")
    if source:
        env.update(GEB_SOURCE_ADDRESS=source, LD_PRELOAD=shim)
    if user is not None:
        argv = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + argv
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=30)


def can_list(srv, **kw):
    return nfs(["nfs-ls", srv.url()], **kw).returncode == 0


def refused_within(srv, seconds=10.0, **kw):
    """Seconds until nfs-ls is refused (ganesha applies a SIGHUP in its own thread), or None."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        proc = nfs(["nfs-ls", srv.url()], **kw)
        if proc.returncode != 0:
            assert "NFS4ERR" in proc.stderr or "mount" in proc.stderr.lower(), proc.stderr
            return time.monotonic() - started
        time.sleep(0.05)
    return None


@pytest.fixture(scope="module")
def shim(server):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src = os.path.join(server.dir, "source_address.c")
    lib = os.path.join(server.dir, "source_address.so")
    with open(src, "w", encoding="utf-8") as handle:
        handle.write(SHIM)
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, src, "-ldl"], capture_output=True, text=True,
                          check=False)
    return lib if proc.returncode == 0 else None


def test_export_read_write_squash_and_refusal(server, shim, capsys):
    srv = server
    timings = {}
    dummy, timings["ansible.builtin.ping (Ansible's own start)"] = module(srv, [], name="ansible.builtin.ping")
    assert not can_list(srv), "the share is served before any export"

    # check mode: says what it would do, writes nothing
    result, dummy = module(srv, ["127.0.0.1"], check=True)
    assert result["changed"] and not os.path.exists(srv.exports)
    assert any(c.startswith("+ EXPORT %s" % srv.share) for c in result["changes"]), result["changes"]
    assert "CLIENT" in json.dumps(result["diff"])
    assert '%include' not in open(srv.conf, encoding="utf-8").read()

    # join: the export block, the %include, SIGHUP
    result, timings["add (first export, %include, SIGHUP)"] = module(srv, ["127.0.0.1"])
    assert result["changed"] and result["reloaded"] and result["ganesha_pid"] == srv.proc.pid, result
    text = open(srv.exports, encoding="utf-8").read()
    assert "Clients = 127.0.0.1;" in text and "Squash = root_squash;" in text and "Access_Type = None;" in text
    assert oct(os.stat(srv.exports).st_mode & 0o777) == "0o644"
    assert srv.exports in open(srv.conf, encoding="utf-8").read()
    again, timings["add again (no change)"] = module(srv, ["127.0.0.1"])
    assert not again["changed"] and not again["reloaded"], again

    # read and write over NFS
    deadline = time.time() + 10
    while not can_list(srv) and time.time() < deadline:
        time.sleep(0.05)
    assert can_list(srv), srv.log_tail()
    local = os.path.join(srv.dir, "payload.txt")
    with open(local, "w", encoding="utf-8") as handle:
        handle.write("written over NFS\n")
    as_root = nfs(["nfs-cp", local, srv.url("by-root.txt")])
    assert as_root.returncode == 0, as_root.stderr
    as_user = nfs(["nfs-cp", local, srv.url("by-user.txt", uid=USER, gid=USER)])
    assert as_user.returncode == 0, as_user.stderr
    # root squash in force: root's file belongs to the anonymous uid, the user's to the user
    assert os.stat(os.path.join(srv.share, "by-root.txt")).st_uid == ANON
    assert os.stat(os.path.join(srv.share, "by-user.txt")).st_uid == USER
    cat = nfs(["nfs-cat", srv.url("by-user.txt", uid=USER, gid=USER)])
    assert cat.returncode == 0 and cat.stdout == "written over NFS\n", cat
    listing = nfs(["nfs-ls", srv.url()]).stdout
    assert "by-root.txt" in listing and "by-user.txt" in listing, listing
    # a root-owned file (0600) on the share: root on the client cannot read it (it is nobody there)
    secret = os.path.join(srv.share, "root-only.txt")
    with open(secret, "w", encoding="utf-8") as handle:
        handle.write("root only\n")
    os.chmod(secret, 0o600)
    assert nfs(["nfs-cat", srv.url("root-only.txt")]).returncode != 0
    # PrivilegedPort: a process that is not root on the client (unprivileged source port) is refused
    assert not can_list(srv, user=65534)

    # an address that is not a member
    if shim:
        assert not can_list(srv, source="127.0.0.2", shim=shim), "127.0.0.2 is not a member"
        dummy, timings["add a second host"] = module(srv, ["127.0.0.2"])
        deadline = time.time() + 10
        while not can_list(srv, source="127.0.0.2", shim=shim) and time.time() < deadline:
            time.sleep(0.05)
        assert can_list(srv, source="127.0.0.2", shim=shim), "the source-address helper does not work"
    else:
        print("no C compiler: the 127.0.0.2 (non-member) check was skipped")

    # leave: the host's CLIENT block goes, SIGHUP, refused
    result, dummy = module(srv, ["127.0.0.1"], state="absent", check=True)
    assert result["changed"] and can_list(srv)
    result, timings["remove (SIGHUP)"] = module(srv, ["127.0.0.1"], state="absent")
    assert result["changed"] and result["reloaded"], result
    waited = refused_within(srv)
    assert waited is not None, "127.0.0.1 still reads the share after its removal: %s" % srv.log_tail()
    timings["until refused after the remove returned"] = waited
    assert "127.0.0.1" not in open(srv.exports, encoding="utf-8").read()
    again, dummy = module(srv, ["127.0.0.1"], state="absent")
    assert not again["changed"], again
    if shim:
        assert can_list(srv, source="127.0.0.2", shim=shim), "the other member lost its access"
        # the last host: the export block goes
        result, dummy = module(srv, ["127.0.0.2"], state="absent")
        assert result["changed"] and "EXPORT" not in open(srv.exports, encoding="utf-8").read().split("\n", 2)[2]
        assert refused_within(srv, source="127.0.0.2", shim=shim) is not None

    # a run interrupted between the write and the signal: the next run sends it
    result, dummy = module(srv, ["127.0.0.1"], reload=False)
    assert result["changed"] and not result["reloaded"] and not can_list(srv)
    result, dummy = module(srv, ["127.0.0.1"])
    assert result["changed"] and result["reloaded"] and result["changes"] == [], result
    deadline = time.time() + 10
    while not can_list(srv) and time.time() < deadline:
        time.sleep(0.05)
    assert can_list(srv)
    module(srv, ["127.0.0.1"], state="absent")

    with capsys.disabled():
        print("\nnfs_export (ganesha %s, one share, `ansible localhost` wall seconds):" % srv.proc.pid)
        for what, seconds in timings.items():
            print("  %-45s %6.3f s" % (what, seconds))
