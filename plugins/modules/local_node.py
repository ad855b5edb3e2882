#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: local_node
short_description: Launch or terminate a namespace node of the C(local) node provider
version_added: 0.1.0
description:
  - The launch/terminate primitive of the C(local) node provider. A node is a set of Linux
    namespaces on the target host that behaves like a separate machine on a private bridge.
  - Each node has its own network namespace (a veth pair into I(bridge), its own address,
    default route via the master), its own hostname (UTS namespace), its own mount namespace with
    a private copy of the host's C(/etc) (so C(/etc/hosts) and C(/etc/fstab) are plain per-node
    files) and its own C(/run), its own PID and IPC namespaces, and an C(sshd) listening on its
    address that accepts the keys of I(authorized_key_file) for C(root).
  - Everything else (C(/home), C(/root), C(/tmp), C(/var/lib/gridengine),
    C(/var/spool/gridengine)) is the host's filesystem, which plays the part of the NFS shares of
    a real cluster.
  - The machines this provider is made for have no kernel NFS (C(CONFIG_NETWORK_FILESYSTEMS) is
    unset). Unless I(nfs_shim=false), a stand-in is bind-mounted over C(/sbin/mount.nfs) inside
    the node only (never on the host); it turns C(mount -t nfs SERVER:/PATH DIR) into a bind mount
    of the host's C(PATH). NFS mounts of a node are therefore bookkeeping plus a bind mount, not
    real NFS.
  - The module registers nothing in Grid Engine and does not touch the host's C(/etc/hosts); those
    are later stages.
  - Node state lives in I(state_dir)C(/<name>/) (record, C(/etc) copy, logs, C(known_hosts)).
  - Must run as root on the host that owns the bridge (the qmaster host of a local cluster).
author:
  - gridengine.balancer developers (@gridengine)
requirements:
  - Linux with network, UTS, mount, PID and IPC namespaces
  - iproute2 (C(ip)), util-linux (C(nsenter), C(unshare)), OpenSSH server (C(sshd), C(ssh-keygen))
attributes:
  check_mode:
    support: full
    description: Reports C(would launch) or C(would terminate) and changes nothing.
  diff_mode:
    support: full
    description: Shows the node's state and address before and after.
options:
  name:
    description:
      - Node name; becomes the node's hostname and the name of its network namespace.
      - Must match C(^[a-z][a-z0-9-]{0,62}$) (no trailing newline); nothing runs otherwise.
    type: str
    required: true
  address:
    description:
      - IPv4 address of the node, inside the subnet of I(bridge_address); neither the network,
        broadcast nor bridge address.
      - Required with I(state=present). With I(state=absent) it is ignored.
    type: str
  state:
    description:
      - V(present) launches the node unless it already runs (then nothing changes).
      - V(absent) stops every process of the node, deletes its veth, network namespace and state
        directory, and deletes the bridge when no node is left in I(state_dir).
    type: str
    choices: [present, absent]
    default: present
  cluster:
    description:
      - Label recorded with the node (for example the cluster it was launched for);
        M(gridengine.balancer.local_node_info) can filter on it. It changes nothing on the node.
      - Must be usable as an Ansible group name.
    type: str
  bridge:
    description: Linux bridge the nodes are attached to; created when missing.
    type: str
    default: sgebr0
  bridge_address:
    description:
      - Address and prefix of the bridge on the host, which is the master's address as the nodes
        see it. Added to the bridge when missing.
    type: str
    default: 10.77.0.1/24
  master_name:
    description:
      - Name of the master written into the node's C(/etc/hosts).
      - Defaults to the short host name of the target.
    type: str
  master_address:
    description:
      - Address of the master written into the node's C(/etc/hosts), also the node's default
        route. Defaults to the address of I(bridge_address).
    type: str
  authorized_key_file:
    description:
      - Public key file (on the target) whose keys the node's sshd accepts for C(root).
      - The keys are copied into the node's state directory when it is launched.
      - Without it nobody can log in to the node over ssh.
    type: path
  state_dir:
    description:
      - Directory holding one sub-directory per node. Must be an absolute path.
      - A sub-directory I(name) that exists but holds neither a node record (C(node.json)) nor
        C(node-init) is not a node's; the module then fails and neither writes into it nor removes it.
    type: path
    default: /var/lib/gridengine-balancer/local-nodes
  nfs_shim:
    description:
      - Bind-mount the C(mount.nfs) stand-in over C(/sbin/mount.nfs) inside the node.
    type: bool
    default: true
  ssh_timeout:
    description: Seconds to wait for the node's sshd to accept connections.
    type: int
    default: 30
notes:
  - Never contacts any address other than the node's own (to wait for its sshd).
  - A node whose record exists but whose PID 1 is gone (after a reboot of the host, say) is
    relaunched from scratch by I(state=present).
  - I(state=absent) with a name that has no node still deletes the bridge when no node is left,
    which cleans up a bridge left behind by an interrupted launch.
seealso:
  - module: gridengine.balancer.local_node_info
'''

EXAMPLES = r'''
- name: Launch node003 (idempotent)
  gridengine.balancer.local_node:
    name: node003
    address: 10.77.0.13
    cluster: mycluster
    authorized_key_file: /var/lib/gridengine-balancer/local-nodes/id_ed25519.pub
  register: node

- name: Reach it over ssh
  ansible.builtin.add_host:
    name: "{{ node.name }}"
    groups: [mycluster, mycluster_nodes]
    ansible_host: "{{ node.address }}"
    ansible_user: root
    ansible_ssh_private_key_file: /var/lib/gridengine-balancer/local-nodes/id_ed25519
    ansible_ssh_common_args: "-o UserKnownHostsFile={{ node.known_hosts }}"

- name: Terminate node003 (and the bridge when it was the last node)
  gridengine.balancer.local_node:
    name: node003
    state: absent
'''

RETURN = r'''
name:
  description: Node name.
  returned: always
  type: str
  sample: node003
address:
  description: Node address (with I(state=absent), the address the node had, if known).
  returned: always
  type: str
  sample: 10.77.0.13
pid:
  description:
    - Host PID of the node's PID 1 (C(node-init)); null when the node does not run
      (after I(state=absent), or in check mode before a launch).
  returned: always
  type: int
  sample: 12345
cluster:
  description: Cluster label recorded with the node, or null.
  returned: always
  type: str
  sample: mycluster
bridge:
  description: Bridge the node is attached to.
  returned: always
  type: str
  sample: sgebr0
veth:
  description: Host side of the node's veth pair.
  returned: always
  type: str
  sample: vnode003
node_dir:
  description: State directory of the node.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/local-nodes/node003
known_hosts:
  description: File with the node's public host keys in C(known_hosts) format (for ssh).
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/local-nodes/node003/known_hosts
bridge_removed:
  description: Whether the bridge was (or in check mode would be) deleted.
  returned: when I(state=absent)
  type: bool
  sample: false
ssh_wait:
  description: Seconds waited for the node's sshd.
  returned: when I(state=present)
  type: float
  sample: 0.4
msg:
  description: What was done (or would be done in check mode).
  returned: always
  type: str
  sample: launched node003 at 10.77.0.13
'''

import os
import shutil
import signal
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils import local_node as ln

ENV = {'LC_ALL': 'C'}
NODE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


class LocalNode(object):

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.name = self.params['name']
        self.state_dir = self.params['state_dir']
        self.dir = ln.node_dir(self.state_dir, self.name)
        self.netns_path = os.path.join('/run/netns', self.name)
        self.ip = module.get_bin_path('ip', required=True)
        self.bridge = self.params['bridge']
        self.veth = ln.veth_name(self.name)

    # -- helpers ------------------------------------------------------------------------------
    def fail(self, msg, **kwargs):
        self.module.fail_json(msg=msg, name=self.name, **kwargs)

    def run(self, argv, check_rc=True):
        rc, out, err = self.module.run_command(argv, environ_update=ENV)
        if check_rc and rc != 0:
            self.fail('%s failed (rc=%d): %s' % (' '.join(argv), rc, (err or out).strip()),
                      cmd=argv, rc=rc, stdout=out, stderr=err)
        return rc, out, err

    def link_exists(self, ifname):
        rc, dummy, dummy2 = self.run([self.ip, '-o', 'link', 'show', 'dev', ifname], check_rc=False)
        return rc == 0

    def netns_exists(self):
        return os.path.exists(self.netns_path)

    def netns_pids(self):
        if not self.netns_exists():
            return []
        rc, out, dummy = self.run([self.ip, 'netns', 'pids', self.name], check_rc=False)
        if rc != 0:
            return []
        return [int(p) for p in out.split() if p.isdigit()]

    def base_result(self, record, pid):
        record = record or {'name': self.name, 'address': self.params.get('address'),
                            'cluster': self.params.get('cluster'), 'bridge': self.bridge,
                            'veth': self.veth}
        return ln.public_view(self.state_dir, record, pid)

    # -- bridge -------------------------------------------------------------------------------
    def ensure_bridge(self, iface):
        cidr = '%s/%d' % (iface.ip, iface.network.prefixlen)
        if not self.link_exists(self.bridge):
            self.run([self.ip, 'link', 'add', 'name', self.bridge, 'type', 'bridge'])
        dummy, out, dummy2 = self.run([self.ip, '-o', '-4', 'addr', 'show', 'dev', self.bridge])
        if cidr not in out.split():
            self.run([self.ip, 'addr', 'add', cidr, 'dev', self.bridge])
        self.run([self.ip, 'link', 'set', 'dev', self.bridge, 'up'])

    # -- present ------------------------------------------------------------------------------
    def present(self):
        params = self.params
        self.refuse_foreign_dir()
        if not params.get('address'):
            self.fail('address is required with state=present')
        iface, err = ln.parse_bridge_address(params['bridge_address'])
        if err:
            self.fail(err)
        addr, err = ln.validate_address(params['address'], iface)
        if err:
            self.fail(err)
        if addr == iface.ip:
            self.fail('address %s is the bridge (master) address' % addr)
        address = str(addr)
        master_address = params.get('master_address') or str(iface.ip)
        maddr, err = ln.validate_address(master_address, iface, 'master_address')
        if err:
            self.fail(err)
        master_name = params.get('master_name') or socket.gethostname().split('.')[0]
        err = ln.validate_name(master_name)
        if err:
            self.fail('master_name: ' + err)
        key_file = params.get('authorized_key_file')
        if key_file and not os.path.isfile(key_file) and not self.module.check_mode:
            # (in check mode an earlier task that would create it was skipped)
            self.fail('authorized_key_file %s does not exist' % key_file)

        for other in ln.list_records(self.state_dir):
            if other['name'] != self.name and other.get('address') == address:
                self.fail('address %s is already used by node %s' % (address, other['name']))

        record = ln.read_record(self.state_dir, self.name)
        pid = ln.running_pid(self.state_dir, record)
        before = {'state': 'present' if pid else 'absent'}
        if record and record.get('address'):
            before['address'] = record['address']

        if pid:
            if record.get('address') != address:
                self.fail('node %s already runs with address %s, not %s; terminate it first'
                          % (self.name, record.get('address'), address))
            waited = ln.wait_tcp(address, 22, params['ssh_timeout'])
            if waited is None:
                self.fail('node %s runs (pid %d) but its sshd on %s:22 does not answer; see %s'
                          % (self.name, pid, address, os.path.join(self.dir, 'sshd.log')))
            result = self.base_result(record, pid)
            result.update(changed=False, ssh_wait=waited,
                          msg='node %s already runs at %s' % (self.name, address))
            self.exit(result, before, before)

        after = {'state': 'present', 'address': address}
        if self.module.check_mode:
            result = self.base_result(None, None)
            result.update(changed=True, address=address, ssh_wait=0.0,
                          msg='would launch %s at %s' % (self.name, address))
            self.exit(result, before, after)

        if record or self.netns_exists() or self.link_exists(self.veth):
            self.cleanup(record)          # leftovers of a node that stopped: start from scratch

        self.ensure_bridge(iface)
        if not os.path.isdir(self.state_dir):
            os.makedirs(self.state_dir, 0o700)
        if not os.path.isdir(self.dir):
            os.makedirs(self.dir, 0o700)
        record = {
            'name': self.name, 'address': address, 'prefixlen': iface.network.prefixlen,
            'cluster': params.get('cluster') or None, 'bridge': self.bridge, 'veth': self.veth,
            'master_name': master_name, 'master_address': str(maddr),
            'pid': None, 'launcher_pid': None, 'created': time.time(),
        }
        ln.write_record(self.state_dir, record)   # first, so an interrupted launch can be undone

        # network: namespace, veth pair into the bridge, address, default route via the master
        ip = self.ip
        self.run([ip, 'netns', 'add', self.name])
        self.run([ip, 'link', 'add', 'name', self.veth, 'type', 'veth',
                  'peer', 'name', 'eth0', 'netns', self.name])
        self.run([ip, 'link', 'set', 'dev', self.veth, 'master', self.bridge, 'up'])
        self.run([ip, '-n', self.name, 'addr', 'replace', '%s/%d' % (address, iface.network.prefixlen),
                  'dev', 'eth0'])
        self.run([ip, '-n', self.name, 'link', 'set', 'dev', 'eth0', 'up'])
        self.run([ip, '-n', self.name, 'link', 'set', 'dev', 'lo', 'up'])
        self.run([ip, '-n', self.name, 'route', 'replace', 'default', 'via', str(maddr)])
        # the master may still hold a neighbour (ARP) entry of an earlier node at this address, with
        # that node's MAC: until it expires (up to ~50 s) the master cannot reach the new node
        self.run([ip, 'neigh', 'flush', 'to', address])

        # the node's own /etc: a copy of the host's with its own hosts file and host keys
        etc = os.path.join(self.dir, 'etc')
        if os.path.lexists(etc):
            shutil.rmtree(etc)
        self.run([self.module.get_bin_path('cp', required=True), '-a', '/etc', etc])
        ln.write_file_atomic(os.path.join(etc, 'hosts'),
                             ln.hosts_file(master_name, str(maddr), self.name, address), 0o644)
        ln.write_file_atomic(os.path.join(etc, 'hostname'), self.name + '\n', 0o644)
        ssh_dir = os.path.join(etc, 'ssh')
        if os.path.isdir(ssh_dir):
            for entry in os.listdir(ssh_dir):
                if entry.startswith('ssh_host_'):
                    os.unlink(os.path.join(ssh_dir, entry))
        else:
            os.makedirs(ssh_dir, 0o755)
        # "ssh-keygen -A -f PREFIX" writes PREFIX/etc/ssh/ssh_host_*_key
        self.run([self.module.get_bin_path('ssh-keygen', required=True), '-A', '-f', self.dir])
        ln.write_file_atomic(os.path.join(self.dir, 'known_hosts'),
                             ln.known_hosts(self.name, address, etc), 0o644)
        keys = ''
        if key_file:
            with open(key_file) as handle:
                keys = handle.read()
        ln.write_file_atomic(os.path.join(self.dir, 'authorized_keys'), keys, 0o600)
        init = os.path.join(self.dir, ln.INIT_NAME)
        ln.write_file_atomic(init, ln.NODE_INIT, 0o755)
        shim = os.path.join(self.dir, ln.SHIM_NAME)
        if params['nfs_shim']:
            ln.write_file_atomic(shim, ln.NFS_SHIM, 0o755)
        elif os.path.exists(shim):
            os.unlink(shim)

        launcher, pid = self.start_init(init, address)
        record.update(pid=pid, launcher_pid=launcher)
        ln.write_record(self.state_dir, record)
        waited = ln.wait_tcp(address, 22, params['ssh_timeout'])
        if waited is None:
            self.fail('node %s started (pid %d, %s) but its sshd on %s:22 did not answer within %ds; '
                      'console: %s; sshd.log: %s' % (
                          self.name, pid, 'alive' if ln.pid_alive(pid) else 'gone', address, params['ssh_timeout'],
                          self.log_tail('console.log'), self.log_tail('sshd.log')), pid=pid)
        result = self.base_result(record, pid)
        result.update(changed=True, ssh_wait=waited,
                      msg='launched %s at %s' % (self.name, address))
        self.exit(result, before, after)

    def start_init(self, init, address):
        """Start the node's PID 1 in its own session; it must outlive this module."""
        nsenter = self.module.get_bin_path('nsenter', required=True)
        unshare = self.module.get_bin_path('unshare', required=True)
        argv = [nsenter, '--net=' + self.netns_path, unshare, '--uts', '--mount', '--pid', '--ipc',
                '--fork', '--mount-proc', '--propagation', 'private',
                init, self.name, address, self.dir]
        env = {'PATH': NODE_PATH, 'LANG': 'C.UTF-8', 'HOME': '/root', 'TERM': 'dumb'}
        try:
            launcher = ln.spawn_detached(argv, env, os.path.join(self.dir, 'console.log'))
        except OSError as exc:
            self.fail('cannot start the PID 1 of %s: %s' % (self.name, exc))
        # nsenter execs unshare (same PID); unshare forks the node's PID 1
        deadline = time.time() + 10
        while time.time() < deadline:
            for child in ln.children(launcher):
                if ln.is_node_init(child, self.state_dir, self.name):
                    return launcher, child
            if not ln.pid_alive(launcher) or _zombie(launcher):
                break
            time.sleep(0.05)
        self.fail('the PID 1 of %s did not start; console: %s' % (self.name, self.log_tail('console.log')))

    def log_tail(self, name, size=1500):
        """The last ``size`` characters of a log file in the node's directory (for error messages)."""
        try:
            with open(os.path.join(self.dir, name), errors='replace') as handle:
                return handle.read()[-size:].strip() or '(empty)'
        except (IOError, OSError) as exc:
            return '(%s)' % exc

    def refuse_foreign_dir(self):
        """Fail when ``state_dir/name`` exists but is not a node directory of this provider: it is
        never written into nor removed (state_dir=/var/lib with name=dpkg must not touch dpkg)."""
        if os.path.lexists(self.dir) and not ln.is_node_dir(self.dir):
            self.fail('%s exists but is not a node directory of the local provider (no %s or %s '
                      'in it): nothing was changed; check state_dir and name'
                      % (self.dir, ln.RECORD, ln.INIT_NAME))

    # -- absent -------------------------------------------------------------------------------
    def absent(self):
        self.refuse_foreign_dir()
        record = ln.read_record(self.state_dir, self.name)
        if record and record.get('veth'):
            self.veth = record['veth']
        if record and record.get('bridge'):
            self.bridge = record['bridge']
        pid = ln.running_pid(self.state_dir, record)
        exists = bool(record or pid or os.path.isdir(self.dir) or self.netns_exists()
                      or self.link_exists(self.veth))
        before = {'state': 'present' if exists else 'absent'}
        if record and record.get('address'):
            before['address'] = record['address']
        after = {'state': 'absent'}
        others = [r for r in ln.list_records(self.state_dir) if r['name'] != self.name]
        remove_bridge = not others and self.link_exists(self.bridge)
        result = self.base_result(record, None)
        result.update(bridge_removed=remove_bridge, changed=exists or remove_bridge)
        done, would = [], []
        if exists:
            done.append('terminated %s' % self.name)
            would.append('would terminate %s' % self.name)
        if remove_bridge:
            done.append('deleted bridge %s (no node left)' % self.bridge)
            would.append('would delete bridge %s (no node left)' % self.bridge)
        msg = '; '.join(done) or 'node %s does not exist' % self.name
        if self.module.check_mode:
            result['msg'] = '; '.join(would) or msg
            self.exit(result, before, after)
        if exists:
            self.cleanup(record)
            if os.path.lexists(self.dir):
                shutil.rmtree(self.dir)
        if remove_bridge:
            self.run([self.ip, 'link', 'del', 'dev', self.bridge])
        result['msg'] = msg
        self.exit(result, before, after)

    def cleanup(self, record):
        """Stop every process of the node and delete its veth and network namespace."""
        pid = ln.running_pid(self.state_dir, record)
        launcher = record.get('launcher_pid') if record else None
        if pid:
            self.signal([pid], signal.SIGTERM)     # node-init stops its namespace's processes
            self.wait_gone([pid], 5)
            self.signal([pid], signal.SIGKILL)     # PID 1 gone = every process of its PID ns gone
            self.wait_gone([pid], 5)
        if launcher and ln.is_launcher(launcher, self.state_dir, self.name):
            self.signal([launcher], signal.SIGKILL)
            self.wait_gone([launcher], 5)
        stray = self.netns_pids()                  # processes that only joined the netns
        if stray:
            self.signal(stray, signal.SIGKILL)
            self.wait_gone(stray, 5)
        if self.link_exists(self.veth):
            self.run([self.ip, 'link', 'del', 'dev', self.veth])
        if self.netns_exists():
            self.run([self.ip, 'netns', 'del', self.name])
        if pid and ln.is_node_init(pid, self.state_dir, self.name) and not _zombie(pid):
            self.fail('node %s: PID 1 (pid %d) did not stop' % (self.name, pid))

    @staticmethod
    def signal(pids, sig):
        for pid in pids:
            try:
                os.kill(int(pid), sig)
            except OSError:
                pass

    @staticmethod
    def wait_gone(pids, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not [p for p in pids if ln.pid_alive(p) and not _zombie(p)]:
                return True
            time.sleep(0.05)
        return False

    def exit(self, result, before, after):
        if self.module._diff:
            result['diff'] = {'before': before, 'after': after,
                              'before_header': 'node %s' % self.name,
                              'after_header': 'node %s' % self.name}
        self.module.exit_json(**result)


def _zombie(pid):
    try:
        with open('/proc/%d/stat' % int(pid)) as handle:
            stat = handle.read()
    except (IOError, OSError, ValueError):
        return True
    fields = stat[stat.rfind(')') + 2:].split()
    return bool(fields) and fields[0] in ('Z', 'X')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            address=dict(type='str'),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            cluster=dict(type='str'),
            bridge=dict(type='str', default='sgebr0'),
            bridge_address=dict(type='str', default='10.77.0.1/24'),
            master_name=dict(type='str'),
            master_address=dict(type='str'),
            authorized_key_file=dict(type='path'),
            state_dir=dict(type='path', default='/var/lib/gridengine-balancer/local-nodes'),
            nfs_shim=dict(type='bool', default=True),
            ssh_timeout=dict(type='int', default=30),
        ),
        required_if=[('state', 'present', ['address'])],
        supports_check_mode=True,
    )
    if not ln.HAS_IPADDRESS:
        module.fail_json(msg='the ipaddress module of the Python standard library is required')
    name = module.params['name']
    err = ln.validate_name(name)
    if err:
        module.fail_json(msg=err, name=name)
    err = ln.validate_cluster(module.params.get('cluster'))
    if err:
        module.fail_json(msg=err, name=name)
    bridge = module.params['bridge']
    if not ln.NAME_RE.match(bridge) or len(bridge) > ln.IFNAMSIZ:
        module.fail_json(msg='bridge %r is not a valid interface name (^[a-z][a-z0-9-]*$, at most '
                             '%d characters)' % (bridge, ln.IFNAMSIZ), name=name)
    if not os.path.isabs(module.params['state_dir']):
        module.fail_json(msg='state_dir must be an absolute path', name=name)
    if module.params['ssh_timeout'] < 1:
        module.fail_json(msg='ssh_timeout must be at least 1', name=name)
    if os.geteuid() != 0:
        module.fail_json(msg='gridengine.balancer.local_node must run as root (use become)',
                         name=name)

    node = LocalNode(module)
    if module.params['state'] == 'present':
        node.present()
    else:
        node.absent()


if __name__ == '__main__':
    main()
