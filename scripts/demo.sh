#!/usr/bin/env bash
# The main job on the embedded default: a real local Grid Engine cluster (qmaster on this machine,
# nodes in their own namespaces), a burst of real jobs, and the elastic load balancer growing the
# cluster from min_nodes to max_nodes under it and shrinking it back when the jobs are done.
# On a fresh Debian 12 machine, as root:   bash scripts/demo.sh
# Each poll prints its plan with the reason for every item; joins and leaves print their outcome;
# the statistics CSV and plots are written under .state/demo/. Short timings keep it to minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
T0=$(date +%s)
step() { printf '\n=== [%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

step "setup (packages, venv, collections)"
bash scripts/setup.sh
export PATH=$ROOT/.venv/bin:$PATH
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default

step "bring up the local cluster at its minimum: the qmaster (which also runs jobs), no extra node"
ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_nodes=0 | tail -3
# nodes left by an earlier run (of the demo or the tests) are drained and removed the safe way
master=$(cat "$SGE_ROOT/$SGE_CELL/common/act_qmaster")
for node in $(qconf -sel); do
  [ "$node" = "$master" ] && continue
  echo "removing $node, left by an earlier run"
  ansible-playbook playbooks/node_remove.yml -e cluster=mycluster -e node="$node" | tail -2
done
start_hosts=$(qconf -sel | wc -l)

# short timings so the demo finishes in minutes; every option is documented in docs/elastic.md
# (instance_hour_price: an example price per node-hour, for the node_hours / cost columns)
mkdir -p "$ROOT/.state/demo"
rm -f "$ROOT/.state/demo/sge-stats.csv"
OPTS=(-e cluster=mycluster -e max_nodes=3 -e min_nodes=1 -e add_nodes_per_iter=2
      -e job_wait_time=10 -e idle_time=30 -e stabilization_time=20 -e interval=5
      -e drain_settle_time=5 -e dump_stats=true -e plot_stats=true -e instance_hour_price=0.10
      -e stats_file="$ROOT/.state/demo/sge-stats.csv" -e plot_output_dir="$ROOT/.state/demo/plots")

step "submit a burst of 16 real jobs (30 s each) as user tester"
jobdir=$(mktemp -d /tmp/demo-jobs.XXXXXX); chmod 0755 "$jobdir"
cat > "$jobdir/job.sh" <<'JOB'
#!/bin/sh
sleep 30
echo "done on $(hostname)"
JOB
chmod 0755 "$jobdir/job.sh"
ids=()
for i in $(seq 16); do
  ids+=("$(su - tester -c "qsub -terse -N demo$i -o /dev/null -e /dev/null $jobdir/job.sh")")
done
echo "submitted jobs ${ids[*]}"

step "poll every 5 s until the jobs are done and the cluster is back at min_nodes (at most 10 min)"
deadline=$(( $(date +%s) + 600 ))
max_hosts=$start_hosts back=0
while [ "$(date +%s)" -lt $deadline ]; do
  out=$(ansible-playbook playbooks/loadbalance.yml "${OPTS[@]}" 2>&1) || { echo "$out"; exit 1; }
  printf '[%4ss] ' "$(( $(date +%s) - T0 ))"
  # the plan's lines ("    - 'mycluster: ...'") and each node's outcome ("    msg: 'join node002: ...'");
  # a poll that prints none of them prints an empty line, it does not stop the demo
  { echo "$out" | sed -nE "s/^[[:space:]]+(- |msg: )'?((mycluster:|- (add|remove)|(join|leave) node).*)\$/\2/p" \
      | sed -E "s/'\$//" | paste -sd'\n' - | sed '2,$s/^/        /'; } || true
  waiting=$(qstat -u '*' | awk 'NR>2' | wc -l)
  hosts=$(qconf -sel | wc -l)
  [ "$hosts" -gt "$max_hosts" ] && max_hosts=$hosts
  if [ "$waiting" = 0 ] && [ "$hosts" -le 1 ]; then back=1; break; fi
  sleep 5
done

step "every job of the burst, as qacct recorded it (no job may be killed)"
bad=0
for id in "${ids[@]}"; do
  line=$(qacct -j "$id" 2>/dev/null | awk '/^hostname/{h=$2} /^failed/{f=$2} /^exit_status/{e=$2} END{print h, f, e}')
  echo "job $id: host/failed/exit_status = $line"
  case $line in *" 0 0") ;; *) bad=$((bad + 1));; esac
done
rm -rf "$jobdir"
step "statistics: $ROOT/.state/demo/sge-stats.csv, plots in $ROOT/.state/demo/plots"
column -s, -t < "$ROOT/.state/demo/sge-stats.csv" | tail -n 25
[ $bad = 0 ] || { echo "$bad job(s) did not end with status 0"; exit 1; }
[ "$max_hosts" -gt "$start_hosts" ] || { echo "the cluster never grew (stayed at $start_hosts hosts)"; exit 1; }
[ $back = 1 ] || { echo "the cluster did not shrink back to 1 host within 10 minutes"; exit 1; }
step "done: the cluster grew from $start_hosts to $max_hosts hosts under the burst and shrank back to 1; tear down with: ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_state=absent"
