#!/usr/bin/env bash
# The main job on the embedded default: a real local Grid Engine cluster (qmaster on this machine,
# nodes in their own namespaces), a burst of real jobs, and the elastic load balancer deciding.
# On a fresh Debian 12 machine, as root:   bash scripts/demo.sh
# Until the node join/leave roles land, the balancer decides and records but does not act: each
# poll prints its plan (grow under the burst, shrink when idle) with the reason for each item,
# saves its state on the qmaster and appends the statistics; --check shows the plan and writes
# nothing at all.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
T0=$(date +%s)
step() { printf '\n=== [%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

step "setup (packages, venv, collections)"
bash scripts/setup.sh
export PATH=$ROOT/.venv/bin:$PATH

step "bring up the local cluster: qmaster + 1 node"
ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_nodes=1

# short timings so the demo finishes in minutes; every option is documented in docs/elastic.md
OPTS=(-e cluster=mycluster -e max_nodes=4 -e min_nodes=1 -e job_wait_time=10 -e idle_time=30
      -e stabilization_time=20 -e interval=10 -e dump_stats=true -e plot_stats=true
      -e stats_file="$ROOT/.state/demo/sge-stats.csv" -e plot_output_dir="$ROOT/.state/demo/plots")

step "submit a burst of 12 real jobs (20 s each) as user tester"
job=$(mktemp /tmp/demo-job.XXXXXX.sh)
cat > "$job" <<'JOB'
#!/bin/sh
sleep 20
echo "done on $(hostname)"
JOB
chmod 0755 "$job"
for i in $(seq 12); do
  su - tester -c "qsub -N demo$i -o /tmp -e /tmp -cwd $job" >/dev/null
done
su - tester -c 'qstat'

step "poll now (--check): the jobs have not waited job_wait_time yet"
ansible-playbook playbooks/loadbalance.yml "${OPTS[@]}" --check
sleep 12
step "poll after job_wait_time: the plan grows the cluster"
ansible-playbook playbooks/loadbalance.yml "${OPTS[@]}"

step "let the jobs finish on the current nodes"
for _ in $(seq 90); do
  [ -z "$(su - tester -c 'qstat' 2>/dev/null)" ] && break
  ansible-playbook playbooks/loadbalance.yml "${OPTS[@]}" | grep -E '^\s+(add|remove|keep|hold|none)' || true
  sleep 10
done
step "idle: polls until the nodes have been idle for idle_time"
for _ in 1 2 3 4; do ansible-playbook playbooks/loadbalance.yml "${OPTS[@]}"; sleep 10; done
step "statistics: $ROOT/.state/demo/sge-stats.csv, plots in $ROOT/.state/demo/plots"
cat "$ROOT/.state/demo/sge-stats.csv"
rm -f "$job"
step "done; the cluster is still up (tear down: ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_state=absent)"
