#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: nfs_export
short_description: Export shares over NFS to single hosts (kernel NFS server or nfs-ganesha)
version_added: 0.1.0
description:
  - Gives (O(state=present)) or takes away (O(state=absent)) the NFS access of each host of
    O(clients) to each share of O(paths), on the NFS server the module runs on, and makes the
    server use it.
  - O(server=kernel) - the kernel NFS server. One C(/etc/exports) line C(PATH ADDRESS(OPTIONS))
    per share and host. A line with other options for the same share and host is changed in place;
    a second one is removed; with O(state=absent) the host's entry is removed from every line of
    the share, and a line left without a host is removed (a share listed without a host is exported
    to everyone). Every other line is kept as it is. Then C(exportfs -ra), when the file changed or
    when C(exportfs -v) shows a table that disagrees (a run interrupted between the two), and
    C(exportfs -v) read again to check the result. Without C(exportfs) on the host the file is
    written and a warning says that nothing was reloaded.
  - O(server=ganesha) - nfs-ganesha. O(config) is a file of C(EXPORT) blocks that only this module
    writes, one per share (C(Pseudo) = the path, C(Access_Type = None) so that a host without a
    C(CLIENT) block gets nothing, C(Squash = root_squash), C(SecType = sys), the FSAL C(VFS)),
    with one C(CLIENT) block per host (C(Access_Type) O(access), C(Squash) O(squash)). A share
    left without a host loses its block. O(include_in) (the main configuration) gets a line
    C(%include "CONFIG") when it lacks one. Then ganesha is sent C(SIGHUP) (its pid from O(pid_file),
    checked to be a C(ganesha.nfsd) process), which makes ganesha 4.x read its exports again; no
    D-Bus and no C(ganesha_mgr) are needed. ganesha applies it within milliseconds, in its own
    thread, after the module returns. A file beside O(config) (C(.<name>.loaded)) records which
    content was last sent to which ganesha process, so a run interrupted after the write and before
    the signal sends it on the next run. A ganesha that does not run gets no signal (a warning) -
    it reads the file when it starts.
  - Every value written is checked first, and nothing is changed when one is refused - every
    client must be one host's IPv4 or IPv6 address (no name, wildcard, network, range, zone or
    option; not the unspecified, a multicast or the broadcast address; loopback is accepted);
    every path absolute and normalised, without blanks, quotes, braces, brackets, parentheses,
    V(;), V(#), V(,), V(=), V(\\), shell or glob characters, or control characters; O(options)
    exports(5) option words only. A ganesha export file that holds anything this module does not
    write (another block, another setting) is refused, never rewritten.
  - Files are written atomically (a temporary file in the same directory, fsync, rename); a new
    file gets mode V(0644), an existing one keeps its owner and mode.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.diff
attributes:
  check_mode:
    details: Reports what would be written and whether the server would be reloaded; writes nothing, signals nothing.
options:
  server:
    description:
      - The NFS server - V(kernel) (C(/etc/exports), C(exportfs)) or V(ganesha) (nfs-ganesha's export blocks).
    type: str
    choices: [kernel, ganesha]
    default: kernel
  paths:
    description: The shares (absolute paths on the server).
    type: list
    elements: str
    required: true
  clients:
    description: The hosts, one IPv4 or IPv6 address each.
    type: list
    elements: str
    required: true
  state:
    description:
      - V(present) - every share exported to every host. V(absent) - no share exported to any of
        the hosts (other hosts keep theirs).
    type: str
    choices: [present, absent]
    default: present
  config:
    description:
      - The file written. Defaults to C(/etc/exports) (V(kernel)) and
        C(/etc/ganesha/gridengine-balancer.conf) (V(ganesha)).
      - For V(ganesha), use one file per cluster (for example
        C(/etc/ganesha/gridengine-balancer-<cluster>.conf)); its directory must exist.
    type: path
  options:
    description: exports(5) options of each host's entry (V(kernel) only).
    type: str
    default: rw,sync,root_squash,no_subtree_check
  access:
    description: C(Access_Type) of each host's C(CLIENT) block (V(ganesha) only).
    type: str
    choices: [RW, RO]
    default: RW
  squash:
    description:
      - C(Squash) of each host's C(CLIENT) block (V(ganesha) only). V(root_squash) maps root on
        the host to the anonymous user; V(no_root_squash) gives it root on the share.
    type: str
    choices: [root_squash, no_root_squash, all_squash]
    default: root_squash
  protocols:
    description:
      - NFS versions of the shares' export blocks (V(ganesha) only). NFSv4 needs no rpcbind or mountd.
    type: list
    elements: int
    choices: [3, 4]
    default: [4]
  privileged_port:
    description:
      - C(PrivilegedPort) of the shares' export blocks (V(ganesha) only) - only connections
        from a port below 1024 (root on the client) are served, as the kernel server's default
        C(secure) option does.
    type: bool
    default: true
  include_in:
    description:
      - The ganesha configuration that must C(%include) O(config) (V(ganesha) only). It gets the
        line when it lacks it (not with O(state=absent)). Empty - leave it alone.
    type: str
    default: /etc/ganesha/ganesha.conf
  pid_file:
    description: ganesha's pid file, to send it C(SIGHUP) (V(ganesha) only).
    type: path
    default: /run/ganesha/ganesha.pid
  reload:
    description:
      - Make the server use the exports - C(exportfs -ra) (V(kernel)), C(SIGHUP) (V(ganesha)) -
        when the file changed or the server does not use it yet. V(false) only writes the file.
    type: bool
    default: true
  unsafe_writes:
    description: Write in place when an atomic rename is impossible (a file that is itself a bind mount).
    type: bool
    default: false
notes:
  - The kernel server's live table can be read back (C(exportfs -v)); ganesha's cannot without
    D-Bus, so for V(ganesha) the module knows what it sent, and tests read the share with an NFS
    client (C(tests/integration/test_nfs_ganesha_real.py)).
  - AUTH_SYS (C(SecType = sys), the kernel's C(sec=sys)) trusts the uid the client sends;
    O(privileged_port) (kernel - C(secure)) keeps users of the client host who are not root from
    sending one.
seealso:
  - name: nfs-ganesha export configuration
    description: The EXPORT and CLIENT blocks.
    link: https://github.com/nfs-ganesha/nfs-ganesha/blob/V4.3/src/config_samples/export.txt
"""

EXAMPLES = r"""
- name: Export /home and SGE_ROOT to the new node (kernel NFS server)
  gridengine.balancer.nfs_export:
    paths: [/home, /var/lib/gridengine]
    clients: [10.77.0.13]

- name: The same with nfs-ganesha, one export file per cluster
  gridengine.balancer.nfs_export:
    server: ganesha
    config: /etc/ganesha/gridengine-balancer-mycluster.conf
    paths: [/home, /var/lib/gridengine]
    clients: [10.77.0.13]

- name: Take the leaving node's access away before it is terminated
  gridengine.balancer.nfs_export:
    server: ganesha
    config: /etc/ganesha/gridengine-balancer-mycluster.conf
    paths: [/home, /var/lib/gridengine]
    clients: [10.77.0.13]
    state: absent
"""

RETURN = r"""
config:
  description: The file the exports are in.
  returned: always
  type: str
  sample: /etc/exports
changes:
  description: What changed (or would in check mode), one line each - C(+) added, C(-) removed, C(~) changed.
  returned: always
  type: list
  elements: str
  sample: ["+ /home 10.77.0.13(rw,sync,root_squash,no_subtree_check)"]
reloaded:
  description: Whether the server was told to use the exports (C(exportfs -ra) or C(SIGHUP)); in check mode, whether it would be.
  returned: always
  type: bool
  sample: true
reload_reason:
  description: Why the server was (or would be) reloaded, empty when it was not.
  returned: always
  type: str
  sample: the file changed
exported:
  description:
    - V(kernel) with C(exportfs) - the kernel's export table as C(exportfs -v) shows it after the run,
      C(PATH ADDRESS(OPTIONS)) for each host entry. Otherwise empty.
  returned: always
  type: list
  elements: str
  sample: ["/home 10.77.0.13(sync,wdelay,hide,no_subtree_check,sec=sys,rw,secure,root_squash,no_all_squash)"]
ganesha_pid:
  description: The ganesha process that was (or would be) sent C(SIGHUP), 0 when none runs (V(ganesha) only).
  returned: when server is ganesha
  type: int
  sample: 4242
"""

import hashlib
import json
import os
import signal
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gridengine.balancer.plugins.module_utils import nfs_export as nx

DEFAULT_CONFIG = {"kernel": "/etc/exports", "ganesha": "/etc/ganesha/gridengine-balancer.conf"}


def read_text(module, path, name):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        module.fail_json(msg="%s %s cannot be read: %s" % (name, path, to_native(exc)))


def write_atomic(module, path, text):
    """temp file in the same directory, fsync, rename (module.atomic_move); a new file is 0644."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg="the directory of %s does not exist" % path)
    existed = os.path.exists(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, path, unsafe_writes=module.params["unsafe_writes"])
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if not existed:
        os.chmod(path, 0o644)


def diff_of(path, before, after):
    return {"before_header": path, "after_header": path, "before": before or "", "after": after}


def exportfs_table(module, exportfs):
    rc, out, err = module.run_command([exportfs, "-v"], environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg="exportfs -v failed (rc %d): %s" % (rc, (err or out).strip()))
    return nx.parse_exportfs_v(out)


def kernel(module, paths, clients, result):
    params = module.params
    options = nx.check_kernel_options(params["options"])
    config = result["config"]
    before = read_text(module, config, "the exports file")
    after, changes = nx.apply_kernel(before or "", paths, clients, options, params["state"])
    result["changes"] = changes
    pairs = [(p, c) for p in paths for c in clients]
    exportfs = module.get_bin_path("exportfs") if params["reload"] else None
    live = exportfs_table(module, exportfs) if exportfs else None
    reason = ""
    if changes:
        reason = "the file changed"
    elif live is not None:
        if params["state"] == "present":
            missing = [p + " " + c for p, c in pairs if (p, c) not in live]
            reason = "exportfs -v lacks %s" % ", ".join(missing) if missing else ""
        else:
            left = [p + " " + c for p, c in pairs if (p, c) in live]
            reason = "exportfs -v still lists %s" % ", ".join(left) if left else ""
    if params["reload"] and not exportfs:
        module.warn("exportfs was not found on this host: %s written, the kernel's export table not "
                    "reloaded" % config)
    result["reloaded"] = bool(reason and exportfs)
    result["reload_reason"] = reason if exportfs else ""
    result["changed"] = bool(changes or result["reloaded"])
    if changes and module._diff:
        result["diff"] = diff_of(config, before, after)
    if module.check_mode:
        result["exported"] = ["%s %s(%s)" % (p, c, o) for (p, c), o in sorted((live or {}).items())]
        return
    if changes:
        write_atomic(module, config, after)
    if result["reloaded"]:
        rc, out, err = module.run_command([exportfs, "-ra"], environ_update={"LC_ALL": "C"})
        if rc != 0:
            module.fail_json(msg="exportfs -ra failed (rc %d): %s" % (rc, (err or out).strip()), **result)
        live = exportfs_table(module, exportfs)
        if params["state"] == "present":
            wrong = [p + " " + c for p, c in pairs if (p, c) not in live]
            what = "does not list"
        else:
            wrong = [p + " " + c for p, c in pairs if (p, c) in live]
            what = "still lists"
        if wrong:
            result["exported"] = ["%s %s(%s)" % (p, c, o) for (p, c), o in sorted(live.items())]
            module.fail_json(msg="after exportfs -ra, exportfs -v %s %s (another exports file, "
                                 "/etc/exports.d, may export it)" % (what, ", ".join(wrong)), **result)
    result["exported"] = ["%s %s(%s)" % (p, c, o) for (p, c), o in sorted((live or {}).items())]


def ganesha_process(pid_file):
    """(pid, start time in seconds since the epoch) of the ganesha.nfsd the pid file names, or (0, 0)."""
    try:
        with open(pid_file, "r", encoding="ascii") as handle:
            pid = int(handle.read().strip() or "0")
        with open("/proc/%d/comm" % pid, "r", encoding="utf-8") as handle:
            comm = handle.read().strip()
        with open("/proc/%d/stat" % pid, "r", encoding="utf-8") as handle:
            start_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", "r", encoding="ascii") as handle:
            btime = int([line.split()[1] for line in handle if line.startswith("btime ")][0])
    except (OSError, ValueError, IndexError):
        return 0, 0.0
    if pid <= 1 or comm != "ganesha.nfsd":
        return 0, 0.0
    return pid, btime + start_ticks / float(os.sysconf("SC_CLK_TCK"))


def ganesha(module, paths, clients, result):
    params = module.params
    config = result["config"]
    state = params["state"]
    include_in = params["include_in"] or ""
    if include_in:
        try:
            nx.check_path(include_in, "include_in")
        except nx.NfsExportError as exc:
            module.fail_json(msg="%s; nothing was changed" % to_native(exc))
        if include_in == config:
            module.fail_json(msg="include_in and config are the same file %s" % config)
    before = read_text(module, config, "the ganesha export file")
    main = read_text(module, include_in, "the ganesha configuration") if include_in else None
    if include_in and main is None and state == "present":
        module.fail_json(msg="the ganesha configuration %s (include_in) does not exist: is nfs-ganesha "
                             "installed? Set include_in to '' to leave it alone" % include_in)
    try:
        after, changes = nx.apply_ganesha(
            before or "", paths, clients, state, access=params["access"], squash=params["squash"],
            protocols=",".join(str(p) for p in sorted(set(params["protocols"]))),
            privileged_port=params["privileged_port"], avoid_ids=nx.used_export_ids(main), source=config)
    except nx.NfsExportError as exc:
        module.fail_json(msg="%s; nothing was changed" % to_native(exc))
    new_main, include_changes = (main, [])
    if include_in and state == "present":
        new_main, include_changes = nx.apply_include(main, config)
    result["changes"] = changes + ["%s: %s" % (include_in, c) for c in include_changes]
    diffs = []
    if changes:
        diffs.append(diff_of(config, before, after))
    if include_changes:
        diffs.append(diff_of(include_in, main, new_main))
    if diffs and module._diff:
        result["diff"] = diffs if len(diffs) > 1 else diffs[0]

    pid, started = ganesha_process(params["pid_file"]) if params["reload"] else (0, 0.0)
    stamp_path = os.path.join(os.path.dirname(config), "." + os.path.basename(config) + ".loaded")
    digest = hashlib.sha256(after.encode("utf-8")).hexdigest()
    reason = ""
    if pid:
        if changes or include_changes:
            reason = "the file changed"
        elif before is not None:
            stamp = read_text(module, stamp_path, "the reload record") or "{}"
            try:
                stamp = json.loads(stamp)
            except ValueError:
                stamp = {}
            sent = stamp.get("sha256") == digest and stamp.get("pid") == pid
            try:
                loaded_at_start = started > os.stat(config).st_mtime
            except OSError:
                loaded_at_start = False
            if not sent and not loaded_at_start:
                reason = "ganesha %d has not been sent this file yet" % pid
    elif params["reload"]:
        module.warn("nfs-ganesha does not run (no ganesha.nfsd in %s): it reads %s when it starts"
                    % (params["pid_file"], config))
    result.update(ganesha_pid=pid, reloaded=bool(reason), reload_reason=reason,
                  changed=bool(changes or include_changes or reason))
    if module.check_mode:
        return
    if changes:
        write_atomic(module, config, after)
    if include_changes:
        write_atomic(module, include_in, new_main)
    if reason:
        try:
            os.kill(pid, signal.SIGHUP)
        except OSError as exc:
            module.fail_json(msg="SIGHUP to ganesha %d failed: %s" % (pid, to_native(exc)), **result)
        write_atomic(module, stamp_path, json.dumps({"sha256": digest, "pid": pid, "at": time.time()}) + "\n")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            server=dict(type="str", choices=["kernel", "ganesha"], default="kernel"),
            paths=dict(type="list", elements="str", required=True),
            clients=dict(type="list", elements="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            config=dict(type="path"),
            options=dict(type="str", default=nx.KERNEL_DEFAULT_OPTIONS),
            access=dict(type="str", choices=list(nx.ACCESS_CHOICES), default="RW"),
            squash=dict(type="str", choices=list(nx.SQUASH_CHOICES), default="root_squash"),
            protocols=dict(type="list", elements="int", choices=[3, 4], default=[4]),
            privileged_port=dict(type="bool", default=True),
            include_in=dict(type="str", default="/etc/ganesha/ganesha.conf"),
            pid_file=dict(type="path", default="/run/ganesha/ganesha.pid"),
            reload=dict(type="bool", default=True),
            unsafe_writes=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    config = params["config"] or DEFAULT_CONFIG[params["server"]]
    result = {"changed": False, "config": config, "changes": [], "reloaded": False, "reload_reason": "",
              "exported": []}
    try:
        nx.check_path(config, "config")
        paths = [nx.check_path(p, "paths") for p in params["paths"]]
        clients = [nx.check_address(c, "clients") for c in params["clients"]]
        if params["server"] == "kernel":
            nx.check_kernel_options(params["options"])
    except nx.NfsExportError as exc:
        module.fail_json(msg="%s; nothing was changed" % to_native(exc))
    paths = list(dict.fromkeys(paths))
    clients = list(dict.fromkeys(clients))
    if params["server"] == "kernel":
        kernel(module, paths, clients, result)
    else:
        ganesha(module, paths, clients, result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
