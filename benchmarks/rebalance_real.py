# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task rebalancing on the real local cluster, with figures (docs/rebalance.md).

    .venv/bin/python benchmarks/rebalance_real.py [--markdown docs/spawn/real_run.md]

Needs the local cluster up with two nodes (ansible-playbook playbooks/local_cluster.yml
-e cluster=mycluster -e local_cluster_nodes=2; every host has a 64 MB tmpfs data disk). It writes
job ``bench`` (30 tasks of 1.0-2.45 MB: 18 on the master, 8 on node001, 4 on node002) and job
``benchrep`` (6 tasks, one replica each, live on the master, replicas on node001), then:

1. joins a fresh node003 with ``node_add.yml`` and the join tie-in (``cluster_task_rebalance_on_join``),
2. runs ``rebalance.yml`` (up to 5 rounds),
3. removes node003 with ``node_remove.yml`` and the leave tie-in (its copies move off first).

After each stage it reads every host (task_data_info with checksums) and prints disk use per host,
max/mean and min/mean, the standard deviation of disk use (fraction of the disk) and of active
copies, moves and wall time; every task must keep its exact content and copy count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, ".venv", "bin")
ROOT = "/run/gridengine-balancer/tasks"
CLUSTER = "mycluster"
REGISTRY = "/var/lib/gridengine-balancer/%s/tasks.json" % CLUSTER
OPTIONS = {"min_task_size_bytes": 500000}
NEW = "node003"
MB = 1000 ** 2


def run(argv, timeout=1800):
    env = dict(os.environ, PATH=BIN + ":" + os.environ.get("PATH", ""), ANSIBLE_DEPRECATION_WARNINGS="False")
    proc = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        sys.exit("failed: %s\n%s\n%s" % (" ".join(argv), proc.stdout[-4000:], proc.stderr[-2000:]))
    return proc


def read_hosts(hosts):
    """{host: {"used": bytes, "total": bytes, "copies": {"job/task": (checksum, last_active)}}}."""
    proc = run([os.path.join(BIN, "ansible"), ",".join(hosts), "-o", "-m", "gridengine.balancer.task_data_info",
                "-a", "data_root=%s checksums=true" % ROOT])
    out = {}
    for line in proc.stdout.splitlines():
        host, sep, rest = line.partition(" | SUCCESS => ")
        if sep:
            data = json.loads(rest)
            out[host] = {"used": data["disk_used"], "total": data["disk_total"],
                         "copies": {"%s/%s" % (c["job"], c["task"]): c["checksum"] for c in data["copies"]
                                    if c["job"] in ("bench", "benchrep")},
                         "leftovers": data["leftovers"]}
    missing = set(hosts) - set(out)
    if missing:
        sys.exit("no answer from %s" % ", ".join(sorted(missing)))
    return out


def figures(stage, state, seconds, moves):
    loads = {h: s["used"] / s["total"] for h, s in state.items()}
    mean = statistics.mean(loads.values())
    active = {h: len(s["copies"]) for h, s in state.items()}
    return {"stage": stage, "hosts": len(state), "seconds": round(seconds, 1), "moves": moves,
            "used_mb": {h: round(s["used"] / MB, 1) for h, s in sorted(state.items())},
            "max_mean": round(max(loads.values()) / mean, 3) if mean else None,
            "min_mean": round(min(loads.values()) / mean, 3) if mean else None,
            "disk_std": round(statistics.pstdev(loads.values()), 4),
            "active_std": round(statistics.pstdev(active.values()), 2),
            "copies": dict(sorted(active.items()))}


def check_integrity(before, state):
    """Every task keeps its content and its copy count (bench: 1, benchrep: 2 on distinct hosts)."""
    want = {}
    for s in before.values():
        for key, checksum in s["copies"].items():
            want[key] = checksum
    have = {}
    for host, s in state.items():
        if s["leftovers"]:
            sys.exit("leftovers on %s: %s" % (host, s["leftovers"]))
        for key, checksum in s["copies"].items():
            have.setdefault(key, []).append(checksum)
    for key, checksum in want.items():
        count = 2 if key.startswith("benchrep/") else 1
        if have.get(key) != [checksum] * count:
            sys.exit("task %s: copies %s, wanted %d x %s" % (key, have.get(key), count, checksum))
    return len(want)


def moved(output):
    return output.count("TASK [gridengine.balancer.task_rebalance : Count the move]")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--markdown", help="write the table to this file")
    args = parser.parse_args()
    base = ["vm", "node001", "node002"]
    hosts = base + [NEW]
    rng = random.Random(7)
    setup = {"hosts": base, "root": ROOT, "cluster": CLUSTER,
             "bench": {"vm": list(range(0, 18)), "node001": list(range(18, 26)), "node002": list(range(26, 30))}}
    playbook = os.path.join("/tmp", "geb-rebalance-real-setup.yml")
    with open(playbook, "w") as handle:
        handle.write(SETUP)
    if os.path.exists(REGISTRY):
        os.unlink(REGISTRY)
    run([os.path.join(BIN, "ansible-playbook"), playbook, "-e", json.dumps(dict(setup, seed=rng.randrange(1 << 30)))])
    before = read_hosts(base)
    rows = [figures("start (3 hosts)", before, 0.0, 0)]
    options = {"cluster_task_rebalance_options": OPTIONS, "rebalance_options": OPTIONS}
    extra = ["-e", "cluster=%s" % CLUSTER, "-e", json.dumps(options)]
    t0 = time.time()
    out = run([os.path.join(BIN, "ansible-playbook"), "playbooks/node_add.yml", "-e", "node=%s" % NEW,
               "-e", "cluster_task_rebalance_on_join=true"] + extra).stdout
    state = read_hosts(hosts)
    check_integrity(before, state)
    rows.append(figures("%s joined (join tie-in)" % NEW, state, time.time() - t0, moved(out)))
    t0 = time.time()
    out = run([os.path.join(BIN, "ansible-playbook"), "playbooks/rebalance.yml", "-e", "rebalance_rounds=5"] + extra).stdout
    state = read_hosts(hosts)
    check_integrity(before, state)
    rows.append(figures("rebalance.yml (up to 5 rounds)", state, time.time() - t0, moved(out)))
    t0 = time.time()
    out = run([os.path.join(BIN, "ansible-playbook"), "playbooks/node_remove.yml", "-e", "node=%s" % NEW,
               "-e", "cluster_task_rebalance_on_leave=true"] + extra).stdout
    state = read_hosts(base)
    tasks = check_integrity(before, state)
    rows.append(figures("%s removed (drain tie-in)" % NEW, state, time.time() - t0, moved(out)))

    head = "| stage | hosts | MB used per host | max/mean | min/mean | disk std | copies per host | active std | moves | wall s |"
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        lines.append("| %s | %d | %s | %s | %s | %.4f | %s | %.2f | %d | %.1f |" % (
            r["stage"], r["hosts"], ", ".join("%s %s" % kv for kv in r["used_mb"].items()), r["max_mean"],
            r["min_mean"], r["disk_std"], ", ".join("%s %d" % kv for kv in r["copies"].items()),
            r["active_std"], r["moves"], r["seconds"]))
    text = "\n".join(lines)
    print(text)
    print("%d tasks, every one with its exact content and copy count after every stage" % tasks)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("# Task rebalancing on the real local cluster\n\nMeasured by `.venv/bin/python "
                         "benchmarks/rebalance_real.py --markdown %s` (64 MB tmpfs data disk per host; "
                         "options %s).\n\n%s\n\n%d tasks kept their exact content (sha256) and copy count "
                         "after every stage.\n" % (args.markdown, json.dumps(OPTIONS), text, tasks))


SETUP = r'''
- name: Benchmark task data
  hosts: "{{ cluster }}_master"
  gather_facts: false
  tasks:
    - name: Remove earlier benchmark data on every host
      ansible.builtin.file:
        path: "{{ root }}/{{ item.1 }}"
        state: absent
      delegate_to: "{{ item.0 }}"
      loop: "{{ hosts | product(['bench', 'benchrep']) | list }}"

    - name: Write the copies
      ansible.builtin.command:
        argv: "{{ ['python3', '-c', writer, root, item.job, seed | string] + (item.tasks | map('string') | list) }}"
      vars:
        writer: |
          import os, random, sys
          root, job, seed, tasks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
          for t in tasks:
              d = os.path.join(root, job, t)
              os.makedirs(d, exist_ok=True)
              rnd = random.Random("%s/%s/%s" % (seed, job, t))
              with open(os.path.join(d, "data"), "wb") as f:
                  f.write(rnd.randbytes(1000000 + int(t) * 50000))
      delegate_to: "{{ item.host }}"
      loop: >-
        {{ bench | dict2items(key_name='host', value_name='tasks')
           | map('combine', {'job': 'bench'}) | list
           + [{'host': 'vm', 'job': 'benchrep', 'tasks': range(6) | list},
              {'host': 'node001', 'job': 'benchrep', 'tasks': range(6) | list}] }}
      loop_control:
        label: "{{ item.host }} {{ item.job }}"
      changed_when: true

    - name: Register the jobs
      gridengine.balancer.task_registry:
        cluster: "{{ cluster }}"
        job: "{{ item.job }}"
        replicas: "{{ item.replicas }}"
        tasks: "{{ item.tasks }}"
      loop:
        - job: bench
          replicas: 0
          tasks: >-
            {{ dict(bench.vm | map('string') | zip(['vm'] * 18))
               | combine(dict(bench.node001 | map('string') | zip(['node001'] * 8)))
               | combine(dict(bench.node002 | map('string') | zip(['node002'] * 4))) }}
        - job: benchrep
          replicas: 1
          tasks: "{{ dict(range(6) | map('string') | zip(['vm'] * 6)) }}"
      loop_control:
        label: "{{ item.job }}"
'''

if __name__ == "__main__":
    main()
