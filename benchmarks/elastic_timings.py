"""Wall time of the elastic load balancer's operations on the real local cluster.

Measures, on the cluster brought up by playbooks/local_cluster.yml (master + 2 nodes = 3 hosts):
  - one poll with nothing to do (playbooks/loadbalance.yml, idle_time long enough that no node
    is removed and no job waiting), target <= 10 s;
  - joining one node (playbooks/node_add.yml: provider launch + the seven join stages), <= 60 s;
  - removing one node (playbooks/node_remove.yml: drain with its settle time + the four stages
    + terminate), <= 60 s.
Prints a table and, with --markdown FILE, writes it there. Run as root from the repository:
    .venv/bin/python benchmarks/elastic_timings.py --markdown docs/benchmarks/elastic_timings.md
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK = os.path.join(REPO, ".venv", "bin", "ansible-playbook")


def run(args, label):
    env = dict(os.environ, LC_ALL="C.UTF-8", ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    t0 = time.monotonic()
    proc = subprocess.run([PLAYBOOK] + args, cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
        raise SystemExit("%s failed (rc %d)" % (label, proc.returncode))
    return took


def exec_hosts():
    proc = subprocess.run(["qconf", "-sel"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise SystemExit("qconf -sel failed: %s" % proc.stderr.strip())
    return set(proc.stdout.split())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", default="mycluster")
    parser.add_argument("--polls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="join+remove rounds")
    parser.add_argument("--first-node", type=int, default=41,
                        help="number of the first node name used (fresh names each round: the "
                             "qmaster caches failed lookups of a removed name for about a minute)")
    parser.add_argument("--markdown")
    opts = parser.parse_args()
    base = ["-e", "cluster=%s" % opts.cluster]

    hosts = exec_hosts()
    # min_nodes = max_nodes = the cluster's size and a day of idle_time: a poll with nothing to do
    size = ["-e", "max_nodes=%d" % len(hosts), "-e", "min_nodes=%d" % len(hosts), "-e", "idle_time=86400",
            "-e", "state_path=/tmp/geb-timings-state.json", "-e", "journal_path=/tmp/geb-timings-journal.json",
            "-e", "lock_path=/tmp/geb-timings-lock.json"]
    polls = [run(["playbooks/loadbalance.yml"] + base + size, "poll") for _poll in range(opts.polls)]
    if exec_hosts() != hosts:
        raise SystemExit("the idle polls changed the exec hosts: %s -> %s" % (sorted(hosts), sorted(exec_hosts())))
    joins, leaves = [], []
    for i in range(opts.rounds):
        name = "node%03d" % (opts.first_node + i)
        joins.append(run(["playbooks/node_add.yml"] + base + ["-e", "node=%s" % name], "join " + name))
        leaves.append(run(["playbooks/node_remove.yml"] + base + ["-e", "node=%s" % name], "remove " + name))

    rows = [("one poll, nothing to do (%d hosts)" % len(hosts), polls, 10.0),
            ("join one node (launch + 7 stages)", joins, 60.0),
            ("remove one node (drain, settle 15 s, 4 stages, terminate)", leaves, 60.0)]
    lines = ["| operation | runs | median s | min s | max s | target s | met |",
             "|---|---|---|---|---|---|---|"]
    for label, values, target in rows:
        lines.append("| %s | %d | %.1f | %.1f | %.1f | %.0f | %s |" % (
            label, len(values), statistics.median(values), min(values), max(values), target,
            "yes" if max(values) <= target else "no"))
    table = "\n".join(lines)
    print(table)
    if opts.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(opts.markdown)), exist_ok=True)
        with open(opts.markdown + ".tmp", "w") as handle:
            handle.write("# Elastic load balancer timings on the local cluster\n\n")
            handle.write("Produced by `.venv/bin/python benchmarks/elastic_timings.py --markdown %s` on %s "
                         "(Debian 12, 2 cores; the cluster of `playbooks/local_cluster.yml`: %s). Wall seconds of whole `ansible-playbook` runs, start-up "
                         "included.\n\n" % (opts.markdown, time.strftime("%Y-%m-%d"), ", ".join(sorted(hosts))))
            handle.write(table + "\n")
        os.replace(opts.markdown + ".tmp", opts.markdown)


if __name__ == "__main__":
    main()
