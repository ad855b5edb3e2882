# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's shares over real NFS, read and written from inside the nodes (issue 25).

The master serves /home and the Grid Engine root with nfs-ganesha on the bridge address
(inventory/local: cluster_nfs_server=ganesha; roles/provider_local/tasks/nfs_server.yml), and the
join stage's CLIENT block for a node is what lets that node in. From inside each namespace node
(its network namespace, so its own source address), libnfs-utils - an NFS client in user space,
as this kernel has none - shows:

* every joined node lists the share; the job user (AUTH_SYS credentials of its uid) writes a
  file that the master sees owned by that user and reads it back; root on the node is squashed
  (root_squash): it can neither write into the user's home nor read the user's 0600 file;
* the master's own bridge address, which is no member, is refused;
* a node added with node_add.yml is let in at once; after node_remove.yml (the leave stage
  removes its CLIENT block before the provider terminates it) a probe namespace at the same
  address - launched with the local provider, not joined - is refused (slow tier; the core tier
  checks the same for the node the balancer adds and removes, in test_loadbalance.py).

Prints how long the export stage took at join and at leave (ansible.posix.profile_tasks).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import time
import uuid

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import local_node as ln

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
CLUSTER = os.environ.get("GEB_TEST_CLUSTER", "mycluster")
STATE_DIR = "/var/lib/gridengine-balancer/local-nodes"
SGE_ENV = {"SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default", "LC_ALL": "C.UTF-8"}
JOB_USER = "tester"
SERVER = "10.77.0.1"
PORT = 2049
EXPORTS = "/var/lib/gridengine-balancer/local-nfs/exports.conf"
# the node this test adds and removes, and its address in the scheme (10.77.0.(10+K))
EXTRA = "node019"
EXTRA_ADDRESS = "10.77.0.29"
PROBE = "nfsprobe"


def _tool(name):
    path = os.path.join(VENV_BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


def _run(argv, env=None, timeout=300):
    full_env = dict(os.environ, **SGE_ENV)
    full_env.update(env or {})
    return subprocess.run(argv, cwd=REPO, env=full_env, timeout=timeout, capture_output=True, text=True,
                          check=False)


def _nodes():
    return sorted(r["name"] for r in ln.list_records(STATE_DIR)
                  if r.get("cluster") == CLUSTER and ln.running_pid(STATE_DIR, r))


def node_addresses():
    """{name: address} of the cluster's running local nodes."""
    return {r["name"]: r["address"] for r in ln.list_records(STATE_DIR)
            if r.get("cluster") == CLUSTER and ln.running_pid(STATE_DIR, r)}


def _pid(name):
    record = ln.read_record(STATE_DIR, name)
    pid = ln.running_pid(STATE_DIR, record) if record else None
    assert pid, "node %s does not run" % name
    return pid


def _url(path, uid=None, gid=None):
    query = "version=4&nfsport=%d" % PORT
    if uid is not None:
        query += "&uid=%d&gid=%d" % (uid, gid)
    return "nfs://%s%s?%s" % (SERVER, path, query)


def _in_node(name, argv):
    """argv inside the node's network namespace (its own address is the source); None = the master."""
    if name is not None:
        argv = ["nsenter", "--target", str(_pid(name)), "--net"] + argv
    return _run(argv, timeout=60)


def _lists(name, path="/home"):
    return _in_node(name, ["nfs-ls", _url(path)])


def serves():
    """Whether the running local cluster serves its shares with nfs-ganesha (inventory/local)."""
    return os.path.exists(EXPORTS) and shutil.which("nfs-ls") is not None


def node_lists_share(name, seconds=10.0):
    """The node lists /home over NFS within `seconds` (ganesha applies a SIGHUP in its own thread)."""
    deadline = time.monotonic() + seconds
    while _lists(name).returncode != 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    proc = _lists(name)
    assert proc.returncode == 0, "node %s cannot list its share: %s" % (name, proc.stderr)


def address_refused(address):
    """A namespace at `address` (the local provider's node, never joined) is refused by the server."""
    with open(EXPORTS, encoding="utf-8") as handle:
        blocks = re.findall(r"Clients = ([^;]+);", handle.read())
    assert address not in blocks, "%s still has a CLIENT block" % address
    proc = _run([_tool("ansible"), CLUSTER + "_master", "-m", "gridengine.balancer.local_node", "-a",
                 json.dumps({"name": PROBE, "address": address, "state": "present"})])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    try:
        refused = _lists(PROBE)
        assert refused.returncode != 0, "address %s was let in: %s" % (address, refused.stdout)
        assert "NFS4ERR" in refused.stderr or "mount" in refused.stderr.lower(), refused.stderr
    finally:
        proc = _run([_tool("ansible"), CLUSTER + "_master", "-m", "gridengine.balancer.local_node", "-a",
                     json.dumps({"name": PROBE, "state": "absent"})])
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.fixture(scope="module")
def cluster():
    why = None
    if os.geteuid() != 0:
        why = "needs root (namespaces, Grid Engine)"
    elif not all(shutil.which(t) for t in ("nfs-ls", "nfs-cp", "nfs-cat", "ganesha.nfsd", "nsenter")):
        why = "libnfs-utils or nfs-ganesha missing (bash scripts/setup.sh)"
    elif _run(["qstat"]).returncode != 0 or not _nodes():
        why = "no local cluster: ansible-playbook playbooks/local_cluster.yml -e cluster=%s" % CLUSTER
    elif not os.path.exists(EXPORTS):
        why = "the local cluster does not serve NFS with ganesha (%s missing)" % EXPORTS
    if why:
        if os.environ.get("GEB_REQUIRE_CLUSTER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return _nodes()


def _playbook(name, *extra):
    env = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks", "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "all"}
    return _run([_tool("ansible-playbook"), "playbooks/" + name, "-e", "cluster=" + CLUSTER] + list(extra),
                env=env, timeout=600)


def _stage_seconds(output, task):
    """Seconds of a task in profile_tasks' summary ("role : task ---- 1.23s"), summed over its lines."""
    found = re.findall(r"%s -+ (\d+\.\d+)s" % re.escape(task), output)
    assert found, "no timing of %r in the output" % task
    return sum(float(s) for s in found)


def test_nodes_read_and_write_their_share_with_root_squash(cluster):
    user = pwd.getpwnam(JOB_USER)
    home = user.pw_dir
    tag = uuid.uuid4().hex[:8]
    local = os.path.join(os.environ.get("TMPDIR", "/tmp"), "geb-nfs-%s" % tag)
    written = []
    try:
        with open(local, "w", encoding="ascii") as handle:
            handle.write("written over NFS %s\n" % tag)
        for node in cluster:
            listing = _lists(node)
            assert listing.returncode == 0, (node, listing.stderr)
            assert os.path.basename(home) in listing.stdout, (node, listing.stdout)
            # the job user writes into its home; the master sees the file as that user's
            name = "geb-nfs-%s-%s" % (tag, node)
            target = os.path.join(home, name)
            proc = _in_node(node, ["nfs-cp", local, _url(target, user.pw_uid, user.pw_gid)])
            assert proc.returncode == 0, (node, proc.stdout, proc.stderr)
            written.append(target)
            st = os.stat(target)
            assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid), (node, st)
            os.chmod(target, 0o600)
            proc = _in_node(node, ["nfs-cat", _url(target, user.pw_uid, user.pw_gid)])
            assert proc.returncode == 0 and proc.stdout == "written over NFS %s\n" % tag, (node, proc.stderr)
            # root on the node is nobody on the share (root_squash)
            proc = _in_node(node, ["nfs-cat", _url(target, 0, 0)])
            assert proc.returncode != 0, (node, "root read a 0600 file of %s" % JOB_USER, proc.stdout)
            denied = os.path.join(home, "geb-nfs-%s-%s-root" % (tag, node))
            proc = _in_node(node, ["nfs-cp", local, _url(denied, 0, 0)])
            assert proc.returncode != 0 and not os.path.exists(denied), (node, "root wrote into a 0755 home")
        # the master's bridge address is no member of the cluster's exports
        proc = _lists(None)
        assert proc.returncode != 0, "the master's own address %s was let in" % SERVER
    finally:
        for path in written + [local]:
            if os.path.exists(path):
                os.unlink(path)


# Slow tier (CI's 35 minutes): the core tier checks the same through the balancer in
# test_loadbalance.py (the node it adds lists the share; the address of the node it removes is
# refused); this one adds node_add.yml / node_remove.yml and measures the export stage.
@pytest.mark.slow
def test_join_lets_a_node_in_and_leave_shuts_it_out(cluster):
    assert EXTRA not in cluster, "%s is left over from an earlier run" % EXTRA
    try:
        proc = _playbook("node_add.yml", "-e", "node=" + EXTRA)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        join_export = _stage_seconds(proc.stdout, "Export the shares to the new node only")
        with open(EXPORTS, encoding="utf-8") as handle:
            assert EXTRA_ADDRESS in handle.read()
        node_lists_share(EXTRA)

        proc = _playbook("node_remove.yml", "-e", "node=" + EXTRA, "-e", "node_leave_settle_time=0")
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        leave_export = _stage_seconds(proc.stdout, "Stop exporting the shares to the node")
        assert EXTRA not in _nodes()
        # a namespace at the departed node's address, never joined: refused
        address_refused(EXTRA_ADDRESS)
    finally:
        if EXTRA in _nodes():
            _playbook("node_remove.yml", "-e", "node=" + EXTRA, "-e", "node_leave_settle_time=0")
    print("\nexport stage (nfs-ganesha, 2 shares, wall seconds from profile_tasks): join %.2f s, leave %.2f s"
          % (join_export, leave_export))
