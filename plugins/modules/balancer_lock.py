#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: balancer_lock
short_description: Make sure that only one balancer acts on a Grid Engine cluster at a time
version_added: 0.1.0
description:
  - Takes, renews or gives back the balancer's lock of a cluster, a small JSON file on the qmaster
    host holding the owner, a random token, when it was taken and when it expires.
  - The expiry is the only liveness rule. A controller may die anywhere; its lock then expires
    after O(ttl) seconds, and the next balancer takes it over (RV(taken_over_from)).
  - A live lock of another balancer is never touched. Taking it fails with a message naming the
    owner and when the lock expires, and RV(locked_by).
  - Give the token back to renew the lock (continuous polling, before O(ttl) runs out) or to
    release it; a lock held with another token is never renewed or released.
  - The lock file is created exclusively (a private temporary file hard-linked to the lock's
    name, which fails if the name exists), with mode V(0600) in a directory of mode V(0700). Every
    change is made under an exclusive C(flock) on a guard file beside it (C(.lock.json.guard)),
    which the kernel drops when a process dies; so of two balancers that race, exactly one wins,
    also when both take over the same stale lock.
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.attributes.diff
  - gridengine.balancer.cluster_file
attributes:
  check_mode:
    details:
      - Nothing is written. Taking a lock another balancer holds still fails, so the caller
        learns that it could not run.
options:
  path:
    description:
      - Path of the lock file on the target host. Overrides the default derived from O(cluster),
        C(/var/lib/gridengine-balancer/<cluster>/lock.json). The cluster's name is also recorded
        in the lock and named in messages.
      - It must be on a file system with working C(flock), normally a local one.
    type: path
  state:
    description:
      - V(present) without O(token) takes the lock (or takes over a stale one); with O(token) it
        renews the lock held with that token until now + O(ttl).
      - V(absent) releases the lock held with O(token). No lock is not an error (nothing
        changes); a lock held with another token is.
    type: str
    choices: [present, absent]
    default: present
  owner:
    description:
      - Who takes the lock, free text shown to other balancers, for example
        C(controller1 pid 4242 loadbalance.yml).
      - Required to take the lock. Ignored when renewing or releasing (the lock keeps the owner
        it was taken with).
    type: str
  token:
    description:
      - The token returned when the lock was taken (RV(token)).
      - Required with O(state=absent). With O(state=present), renews the lock.
      - It tells acquisitions apart (so a balancer never releases another's lock by mistake); it
        is not a secret.
    type: str
  ttl:
    description:
      - Seconds the lock stays valid after it was taken or last renewed.
      - Longer than the longest run between two renewals, or another balancer may take the lock
        over while the holder still works.
    type: int
    default: 900
notes:
  - All times are seconds since the epoch on the clock of the host the module runs on (the
    qmaster), so controllers whose clocks differ still agree on when a lock expires.
  - Run every balancer's lock tasks on the same host (the qmaster), with the same O(path).
  - To remove a lock by hand (a balancer that surely is not running any more, and you cannot wait
    for O(ttl)), delete the lock file; leave the C(.guard) file.
  - A lock file that is empty, not valid JSON or lacks the fields of a lock names no holder and no
    expiry. It is treated as a lock taken at the file's modification time for O(ttl) seconds
    (the O(ttl) of the task that finds it, so give every balancer of a cluster the same O(ttl)).
    Until then taking the lock fails, naming the file and when it will be taken over; after
    that the file is renamed to C(lock.json.corrupt-<UTC time>.<token>) (kept, never deleted),
    the lock is taken over and RV(corrupt_lock) says so. Renewing or releasing a corrupt lock
    always fails.
  - Liveness is the expiry alone. No process id or host name is checked. The holder is the
    controller, which may run on another host, so a dead pid, a pid reused by another process
    or a controller host that no longer exists neither shortens nor prolongs a lock.
seealso:
  - module: gridengine.balancer.balancer_state
  - module: gridengine.balancer.balancer_journal
"""

EXAMPLES = r"""
- name: Take the lock of mycluster (fails if another balancer runs)
  gridengine.balancer.balancer_lock:
    cluster: mycluster
    owner: "{{ lookup('ansible.builtin.pipe', 'hostname') }} {{ ansible_play_name }}"
    ttl: 900
  register: balancer_lock

- name: Renew it in continuous mode, before it expires
  gridengine.balancer.balancer_lock:
    cluster: mycluster
    token: "{{ balancer_lock.token }}"
    ttl: 900

- name: Give it back at the end (also after a failure)
  gridengine.balancer.balancer_lock:
    cluster: mycluster
    state: absent
    token: "{{ balancer_lock.token }}"

- name: Skip this poll quietly when another balancer holds the lock
  gridengine.balancer.balancer_lock:
    cluster: mycluster
    owner: poller
  register: balancer_lock
  failed_when: balancer_lock is failed and balancer_lock.locked_by is not defined
"""

RETURN = r"""
path:
  description: The lock file's path on the target.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/lock.json
action:
  description:
    - What was done (in check mode, what would have been done).
    - V(acquired) (there was no lock), V(taken_over) (a stale lock was replaced), V(renewed),
      V(released), or V(not_held) (O(state=absent) and there was no lock).
  returned: success
  type: str
  sample: acquired
token:
  description:
    - The token of the lock; keep it to renew and release the lock.
    - In check mode when taking the lock, the token that would have been written (nothing was).
  returned: success
  type: str
  sample: 0f6e4a1bd2c94a67b8d43b9c1f0e2a57
expires:
  description: When the lock expires (seconds since the epoch, the target's clock).
  returned: success with O(state=present)
  type: float
  sample: 1700000900.0
lock:
  description: The lock after the task (in check mode, as it would be); null after a release.
  returned: success
  type: dict
  contains:
    schema:
      description: Version of the lock layout.
      type: int
      sample: 1
    cluster:
      description: O(cluster) given when the lock was taken, or null.
      type: str
      sample: mycluster
    owner:
      description: O(owner) given when the lock was taken.
      type: str
      sample: controller1 pid 4242 loadbalance.yml
    token:
      description: The lock's token.
      type: str
      sample: 0f6e4a1bd2c94a67b8d43b9c1f0e2a57
    acquired:
      description: When the lock was taken (seconds since the epoch).
      type: float
      sample: 1700000000.0
    renewed:
      description: When it was last taken or renewed.
      type: float
      sample: 1700000000.0
    expires:
      description: When it expires.
      type: float
      sample: 1700000900.0
    ttl:
      description: O(ttl) of the last acquisition or renewal.
      type: int
      sample: 900
taken_over_from:
  description:
    - The stale lock that was replaced (with its token, which is dead), when RV(action=taken_over).
    - Same fields as RV(lock), plus C(expires_in) (negative, seconds since it expired).
  returned: when RV(action) is V(taken_over)
  type: dict
  sample: {"owner": "controller2 pid 17", "token": "9a1c...", "acquired": 1699990000.0,
           "renewed": 1699990000.0, "expires": 1699990900.0, "ttl": 900, "cluster": "mycluster",
           "schema": 1, "expires_in": -9100}
corrupt_lock:
  description:
    - When the lock file found was not a lock (empty, not JSON, fields missing) and was taken
      over (RV(action=taken_over)), what was wrong, when the file was last written, and where it
      was moved (null in check mode).
  returned: when a corrupt lock file was taken over
  type: dict
  sample: {"problem": "lock file /var/lib/gridengine-balancer/mycluster/lock.json is empty",
           "modified": 1700000000.0,
           "moved_to": "/var/lib/gridengine-balancer/mycluster/lock.json.corrupt-20231114T224000Z.0f6e4a1bd2c94a67b8d43b9c1f0e2a57"}
locked_by:
  description:
    - When the task failed because another balancer holds the lock (or, with O(token), because
      the lock was taken over), that lock without its token, plus C(expires_in) (seconds).
  returned: on failure, when another lock is in the way
  type: dict
  sample: {"owner": "controller2 pid 17", "acquired": 1700000000.0, "renewed": 1700000000.0,
           "expires": 1700000900.0, "expires_in": 512, "ttl": 900, "cluster": "mycluster", "schema": 1}
diff:
  description: The lock file's text before and after, when run with C(--diff).
  returned: when diff mode is on and the task succeeded
  type: dict
  sample: {"before": "", "after": "{\n \"owner\": \"controller1\", ...}\n"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_lock import (
    DEFAULT_TTL,
    LockError,
    acquire,
    default_path,
    format_time,
    public,
    release,
    renew,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    cluster_file_module,
    cluster_file_spec,
    dumps,
    file_path,
)
from ansible_collections.gridengine.balancer.plugins.module_utils.results import with_diff


def run(module, path):
    """The module's work; returns the result dict or raises LockError / ValueError."""
    p = module.params
    if p["state"] == "absent":
        outcome = release(path, p["token"], check_mode=module.check_mode)
        outcome.update(token=p["token"], lock=None)
    elif p["token"] is not None:
        outcome = renew(path, p["token"], p["ttl"], check_mode=module.check_mode)
    else:
        outcome = acquire(path, p["owner"], p["ttl"], cluster=p["cluster"],
                          check_mode=module.check_mode)
    before = outcome.get("before")
    lock = outcome.get("lock")
    result = dict(
        changed=outcome["action"] != "not_held",
        path=path,
        action=outcome["action"],
        token=outcome["token"],
        lock=lock,
    )
    if lock is not None:
        result["expires"] = lock["expires"]
    if outcome.get("taken_over_from"):
        result["taken_over_from"] = public(outcome["taken_over_from"])
        result["taken_over_from"]["token"] = outcome["taken_over_from"]["token"]
        module.warn("%s: %s the stale lock of %s, expired %ds ago; check what that balancer "
                    "left half done" % (path, "would take over" if module.check_mode else "took over",
                                        outcome["taken_over_from"]["owner"],
                                        -result["taken_over_from"]["expires_in"]))
    corrupt = outcome.get("corrupt")
    if corrupt:
        result["corrupt_lock"] = dict(problem=corrupt["problem"], modified=corrupt["modified"],
                                      moved_to=corrupt.get("moved_to"))
        if module.check_mode:
            module.warn("%s; would move it aside and take the lock over" % corrupt["problem"])
        else:
            module.warn("%s; took the lock over, the file last written at %s is kept as %s"
                        % (corrupt["problem"], format_time(corrupt["modified"]), corrupt["moved_to"]))
    return with_diff(module, result, dumps(before) if before else "", dumps(lock) if lock else "", path)


def main():
    module = cluster_file_module(
        AnsibleModule,
        cluster_file_spec(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            owner=dict(type="str"),
            token=dict(type="str", no_log=False),
            ttl=dict(type="int", default=DEFAULT_TTL),
        ),
        required_if=[("state", "absent", ("token",))],
    )
    p = module.params
    path = p["path"]
    try:
        path = file_path(p, default_path)
        if p["state"] == "present" and p["token"] is None and not (p["owner"] or "").strip():
            raise ValueError("owner is required to take the lock (state=present without token): "
                             "say who runs, for example the controller host, pid and playbook")
        if p["ttl"] <= 0:
            raise ValueError("ttl must be a positive number of seconds, got %s" % p["ttl"])
        if p["token"] is not None and not p["token"].strip():
            raise ValueError("token must not be empty")
        if p["cluster"] is not None and p["path"] is not None:
            default_path(p["cluster"])  # validates the name recorded in the lock
        result = run(module, path)
    except ValueError as exc:
        module.fail_json(msg=str(exc), path=path)
    except LockError as exc:
        extra = {}
        if exc.holder is not None:
            extra["locked_by"] = public(exc.holder)
        module.fail_json(msg=str(exc), path=path, **extra)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
