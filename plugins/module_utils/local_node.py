# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Target-side helpers of the ``local`` node provider (standard library only).

A *local node* is a set of Linux namespaces on the qmaster host that behaves like a separate
machine: its own network namespace (a veth into a bridge), UTS (hostname), mount (its own
``/etc`` and ``/run``), PID and IPC namespace, an ``sshd`` on its own address.  Everything the
provider knows about a node lives in ``<state_dir>/<name>/``:

``node.json``        the record: name, address, cluster label, bridge, veth, host PIDs
``etc/``             the node's ``/etc`` (a copy of the host's; own hosts file, host keys)
``node-init``        the node's PID 1 (written from :data:`NODE_INIT`)
``mount.nfs``        the NFS stand-in bind-mounted over ``/sbin/mount.nfs`` in the node only
``authorized_keys``  keys accepted by the node's sshd for ``root``
``known_hosts``      the node's host keys, for the controller's ssh
``console.log``      output of the node's PID 1; ``sshd.log``: the node's sshd

Nothing here runs a command: the module does that through ``run_command`` with argv lists.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import hashlib
import json
import os
import re
import socket
import tempfile
import time

from ansible_collections.gridengine.balancer.plugins.module_utils.child_process import collect_child

try:
    import ipaddress
    HAS_IPADDRESS = True
except ImportError:  # pragma: no cover - Python 2 only
    HAS_IPADDRESS = False


# \Z, not $: "$" also matches before a trailing newline ("node003\n" would pass)
NAME_RE = re.compile(r'\A[a-z][a-z0-9-]{0,62}\Z')
CLUSTER_RE = re.compile(r'\A[A-Za-z_][A-Za-z0-9_]{0,62}\Z')
IFNAMSIZ = 15          # longest Linux interface name (16 bytes with the NUL)
RECORD = 'node.json'
INIT_NAME = 'node-init'
SHIM_NAME = 'mount.nfs'

# PID 1 of a node.  Started by the module as
#   nsenter --net=/run/netns/NAME unshare --uts --mount --pid --ipc --fork --mount-proc
#            --propagation private NODE_DIR/node-init NAME ADDRESS NODE_DIR
# It must never fall back to the host's /etc: if the per-node /etc cannot be mounted it stops.
NODE_INIT = r'''#!/bin/bash
# PID 1 of a gridengine.balancer local node (written by gridengine.balancer.local_node).
# Arguments: NAME ADDRESS NODE_DIR.  Runs inside fresh UTS, mount, PID and IPC namespaces and the
# node's network namespace.  Gives the node its own hostname, /etc (NODE_DIR/etc), /run, /proc,
# /sys, a mount.nfs stand-in, and an sshd on ADDRESS; then reaps orphans until SIGTERM.
set -u
NAME=$1 ADDRESS=$2 DIR=$3
say() { echo "$(date '+%F %T') node-init $NAME: $*"; }
hostname "$NAME" || { say "cannot set hostname"; exit 1; }
# the node's own /etc: refuse to run on the host's
mount --bind "$DIR/etc" /etc || { say "cannot bind $DIR/etc on /etc"; exit 1; }
mount -t tmpfs -o mode=0755 tmpfs /run || { say "cannot mount /run"; exit 1; }
mkdir -p /run/sshd
if getent passwd sgeadmin >/dev/null; then
  mkdir -p /run/gridengine && chown sgeadmin:sgeadmin /run/gridengine
fi
# /sys of this network namespace (so /sys/class/net lists eth0 and lo)
umount -l /sys 2>/dev/null; mount -t sysfs sysfs /sys 2>/dev/null
# No kernel NFS client on the test machines: mount.nfs becomes a bind mount, in this node only.
if [ -x "$DIR/mount.nfs" ] && [ -e /sbin/mount.nfs ]; then
  mount --bind "$DIR/mount.nfs" /sbin/mount.nfs || say "mount.nfs stand-in not installed"
fi
/usr/sbin/sshd -o ListenAddress="$ADDRESS" -o PidFile=/run/sshd.pid -o StrictModes=no \
  -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o UseDNS=no \
  -o AuthorizedKeysFile="$DIR/authorized_keys" -E "$DIR/sshd.log" || { say "sshd failed"; exit 1; }
say "ready on $ADDRESS"
# act as init: reap orphans (sge_shepherd, job children) until told to stop
trap 'kill -TERM -1 2>/dev/null; sleep 1; kill -KILL -1 2>/dev/null; say stopped; exit 0' TERM INT
while :; do sleep 3600 & wait $!; done
'''

# /sbin/mount.nfs stand-in.  mount(8) runs "mount.nfs SERVER:/PATH DIR [-o OPTS]"; the machines
# this provider runs on have no kernel NFS (CONFIG_NETWORK_FILESYSTEMS unset), so the export
# PATH of the master (the same filesystem) is bind-mounted onto DIR instead.
NFS_SHIM = r'''#!/bin/sh
# mount.nfs stand-in of a gridengine.balancer local node (no kernel NFS on this machine):
# "mount.nfs SERVER:/PATH DIR [-o OPTS]" bind-mounts the master's PATH (same filesystem) on DIR.
spec=$1 dir=$2
path=${spec#*:}
exec mount --bind "$path" "$dir"
'''


def validate_name(name):
    """Return an error message for a bad node name, or None."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        return ("name %r is not a valid node name: it must match ^[a-z][a-z0-9-]{0,62}$ "
                "(lower-case letters, digits and '-', starting with a letter)" % (name,))
    return None


def validate_cluster(cluster):
    """Return an error message for a bad cluster label, or None.  Empty means no label."""
    if cluster and not CLUSTER_RE.match(cluster):
        return ("cluster %r is not a valid cluster label: it must be usable as an Ansible group "
                "name (^[A-Za-z_][A-Za-z0-9_]{0,62}$)" % (cluster,))
    return None


def parse_bridge_address(value):
    """Parse ``bridge_address`` (``10.77.0.1/24``).  Return (interface, error)."""
    try:
        iface = ipaddress.ip_interface(str(value))
    except ValueError as exc:
        return None, "bridge_address %r is not an IPv4 address with prefix: %s" % (value, exc)
    if iface.version != 4 or iface.network.prefixlen > 30:
        return None, ("bridge_address %r must be an IPv4 address with a prefix of at most /30, "
                      "such as 10.77.0.1/24" % (value,))
    if iface.ip in (iface.network.network_address, iface.network.broadcast_address):
        return None, "bridge_address %r is its network's network or broadcast address" % (value,)
    return iface, None


def validate_address(address, bridge_iface, what='address'):
    """Check that ``address`` is a usable host address of the bridge subnet.

    Return (IPv4Address, error).
    """
    try:
        addr = ipaddress.ip_address(str(address))
    except ValueError:
        return None, "%s %r is not an IPv4 address" % (what, address)
    net = bridge_iface.network
    if addr.version != 4 or addr not in net:
        return None, "%s %s is not inside the bridge subnet %s" % (what, addr, net)
    if addr in (net.network_address, net.broadcast_address):
        return None, "%s %s is the network or broadcast address of %s" % (what, addr, net)
    return addr, None


def veth_name(name):
    """Host-side veth name of a node: ``v<name>``, shortened with a hash to fit IFNAMSIZ."""
    full = 'v' + name
    if len(full) <= IFNAMSIZ:
        return full
    digest = hashlib.sha1(name.encode('utf-8')).hexdigest()[:6]
    return 'v' + name[:IFNAMSIZ - 8] + '-' + digest


def node_dir(state_dir, name):
    return os.path.join(state_dir, name)


def is_node_dir(path):
    """True when ``path`` is a directory this provider made for a node (it holds the record or
    the node's PID 1 script, or nothing at all), so that removing it removes nothing else."""
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    entries = os.listdir(path)
    return not entries or RECORD in entries or INIT_NAME in entries


def write_file_atomic(path, data, mode=0o644):
    """Write ``data`` (text) to ``path`` with a temp file + rename; ``mode`` applied first."""
    directory = os.path.dirname(path) or '.'
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=directory)
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except Exception:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_record(state_dir, record):
    write_file_atomic(os.path.join(node_dir(state_dir, record['name']), RECORD),
                      json.dumps(record, indent=2, sort_keys=True) + '\n', 0o600)


def read_record(state_dir, name):
    """The node's record, or None when there is none (or it cannot be read)."""
    path = os.path.join(node_dir(state_dir, name), RECORD)
    try:
        with open(path) as handle:
            record = json.load(handle)
    except (IOError, OSError, ValueError, RecursionError):    # RecursionError: JSON nested too deeply
        return None
    if not isinstance(record, dict) or record.get('name') != name:
        return None
    return record


def cmdline(pid):
    """The argv of a process as a list, or None when it does not exist."""
    try:
        with open('/proc/%d/cmdline' % int(pid), 'rb') as handle:
            raw = handle.read()
    except (IOError, OSError, ValueError, TypeError):
        return None
    return [part.decode('utf-8', 'replace') for part in raw.split(b'\0') if part]


def is_node_init(pid, state_dir, name):
    """True when ``pid`` is the PID 1 of node ``name`` (checked on its command line)."""
    argv = cmdline(pid)
    if not argv:
        return False
    init = os.path.join(node_dir(state_dir, name), INIT_NAME)
    return init in argv and name in argv


def is_launcher(pid, state_dir, name):
    """True when ``pid`` is the ``unshare`` process that started node ``name``."""
    argv = cmdline(pid)
    if not argv:
        return False
    init = os.path.join(node_dir(state_dir, name), INIT_NAME)
    return init in argv and os.path.basename(argv[0]) in ('unshare', 'nsenter')


def children(pid):
    """PIDs whose parent is ``pid`` (from /proc/PID/task/*/children, else a /proc scan)."""
    found = []
    try:
        for task in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, task)) as handle:
                found.extend(int(p) for p in handle.read().split())
        return found
    except (IOError, OSError, ValueError):
        pass
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        # the command name is in parentheses and may contain spaces
        fields = stat[stat.rfind(')') + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    except (ValueError, TypeError):
        return False
    return True


def running_pid(state_dir, record):
    """Host PID of the node's PID 1 when the node runs, else None."""
    if not record:
        return None
    pid = record.get('pid')
    if pid and is_node_init(pid, state_dir, record['name']):
        return int(pid)
    return None


def list_records(state_dir):
    """Records of every node under ``state_dir``, sorted by name."""
    records = []
    try:
        entries = sorted(os.listdir(state_dir))
    except OSError:
        return records
    for entry in entries:
        if NAME_RE.match(entry) and os.path.isdir(node_dir(state_dir, entry)):
            record = read_record(state_dir, entry)
            if record:
                records.append(record)
    return records


def spawn_detached(argv, env, log_path, cwd='/'):
    """Start ``argv`` detached from the calling process and return its PID.

    A classic double fork: the child starts a new session (setsid) and forks the grandchild,
    which execs ``argv`` with stdin from /dev/null and stdout/stderr appended to ``log_path``;
    the child exits at once and is reaped here, so the grandchild is re-parented to init and
    outlives the module. ``run_command`` cannot do this: it waits for the command to end.
    ``argv[0]`` must be an absolute path (no PATH search).
    """
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        status = 1
        try:
            os.close(read_fd)
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                try:
                    os.chdir(cwd)
                    null = os.open(os.devnull, os.O_RDONLY)
                    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                    os.dup2(null, 0)
                    os.dup2(log, 1)
                    os.dup2(log, 2)
                    os.closerange(3, 65536)
                    os.execve(argv[0], argv, env)
                finally:
                    os._exit(127)
            os.write(write_fd, str(grandchild).encode('ascii'))
            status = 0
        finally:
            os._exit(status)
    data, status = collect_child(child, read_fd, write_fd)
    data = data.decode('ascii')
    if status != 0 or not data.isdigit():
        raise OSError('could not start %s (fork failed)' % argv[0])
    return int(data)


def tcp_open(address, port, timeout=0.5):
    """True when a TCP connection to address:port succeeds."""
    try:
        conn = socket.create_connection((str(address), int(port)), timeout=timeout)
    except (socket.error, socket.timeout, OSError):
        return False
    conn.close()
    return True


def wait_tcp(address, port, timeout, interval=0.1):
    """Wait up to ``timeout`` seconds for address:port to accept.  Return the seconds waited or
    None on timeout."""
    start = time.time()
    deadline = start + timeout
    while True:
        if tcp_open(address, port, timeout=min(0.5, max(0.05, deadline - time.time()))):
            return round(time.time() - start, 2)
        if time.time() >= deadline:
            return None
        time.sleep(interval)


def hosts_file(master_name, master_address, name, address):
    """The node's /etc/hosts: localhost, the master, itself."""
    return ('127.0.0.1\tlocalhost\n'
            '%s\t%s\n'
            '%s\t%s\n' % (master_address, master_name, address, name))


def known_hosts(name, address, etc_dir):
    """known_hosts lines for the node from the public host keys under ``etc_dir``/ssh."""
    lines = []
    ssh_dir = os.path.join(etc_dir, 'ssh')
    for key in ('ssh_host_ed25519_key.pub', 'ssh_host_ecdsa_key.pub', 'ssh_host_rsa_key.pub'):
        try:
            with open(os.path.join(ssh_dir, key)) as handle:
                parts = handle.read().split()
        except (IOError, OSError):
            continue
        if len(parts) >= 2:
            lines.append('%s,%s %s %s\n' % (address, name, parts[0], parts[1]))
    return ''.join(lines)


def public_view(state_dir, record, pid=None):
    """What the modules return about a node."""
    directory = node_dir(state_dir, record['name'])
    return {
        'name': record['name'],
        'address': record.get('address'),
        'cluster': record.get('cluster') or None,
        'bridge': record.get('bridge'),
        'veth': record.get('veth'),
        'pid': pid,
        'running': pid is not None,
        'node_dir': directory,
        'known_hosts': os.path.join(directory, 'known_hosts'),
        'created': record.get('created'),
    }
