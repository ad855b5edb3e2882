#!/usr/bin/env bash
# All tests, on a fresh Debian 12 machine as root (this is what .ci/run calls):
#   1. setup (idempotent): Debian packages, .venv, collections
#   2. the checks that need no cluster: unit tests on the real Grid Engine outputs (tests/unit),
#      the target-side ones again under the nodes' interpreter /usr/bin/python3
#      (scripts/unit_nodes_python.sh), ansible-test sanity (empty ignore file), ansible-lint
#      (production profile), and the built collection tarball (installs, its modules run from it)
#   3. integration tests on a real local Grid Engine cluster that this script brings up
#      (qmaster on this machine + namespace nodes), then the molecule scenarios, torn down at the end
#   4. the adopt test: a cluster made with plain Grid Engine commands (tests/adopt/site_cluster.sh),
#      balanced by the collection installed from its tarball, with a user's inventory only, on
#      ports of its own
#
# With integration, the checks of step 2 run beside the integration tests (their output goes to
# .state/checks.log and is printed at the end): the integration steps alone keep about one of two
# cores busy, so running both at once saves most of the checks' 19 minutes. The steps that do not
# need the local cluster to themselves (molecule task_rebalance, provider_local, provider_ec2, then
# the adopt test) run one after the other in a background lane beside the transfer queue and burst
# steps, which do. The table printed at the end gives each step's wall and busy CPU time
# (docs/testing.md). Each side's result decides the exit status.
#
# The integration tests come in two tiers (docs/testing.md):
#   - core (default, CI): every feature on the real cluster, about 12 minutes, then the molecule scenarios;
#   - slow (--full adds it, about 15 minutes more): the infrastructure fault tests (a qmaster
#     stopped mid-poll, a node vanishing under a job, a node hanging on ssh, a job in a drain's
#     last second) and the race test (drains while jobs keep arriving). Marked `slow`.
# Usage: bash scripts/test.sh [--no-integration] [--no-sanity] [--full]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
integration=1 sanity=1 full=0
for a in "$@"; do
  case $a in
    --no-integration) integration=0;;
    --no-sanity) sanity=0;;
    --full) full=1;;
    *) echo "unknown option $a"; exit 2;;
  esac
done
T0=$(date +%s)
step() { printf '\n=== [%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

# run NAME COMMAND...: one integration step. Its output is printed and kept in a private log; a
# failure is recorded (rc keeps the last failing status) and summarised at the very end, after the
# checks' log, so that the tail of a long run names what failed and shows why.
failed_steps=() last_rc=0 step_times=()
# cpu_now: the machine's busy and total CPU time so far, in clock ticks (the first line of
# /proc/stat: user nice system idle iowait irq softirq steal). Busy is all but idle and iowait; it
# counts every process, the checks running beside the integration steps included.
cpu_now() {
  local _cpu user nice sys idle iowait irq softirq steal _rest
  read -r _cpu user nice sys idle iowait irq softirq steal _rest </proc/stat
  echo "$((user + nice + sys + irq + softirq + steal)) $((user + nice + sys + idle + iowait + irq + softirq + steal))"
}
run() {
  local name=$1 log r=0 t0 b0 c0 b1 c1
  shift
  log=$(mktemp "$steps_dir/step.XXXXXX.log")
  t0=$(date +%s)
  read -r b0 c0 < <(cpu_now)
  "$@" 2>&1 | tee "$log" || r=$?
  read -r b1 c1 < <(cpu_now)
  record "$name" $r "$log" $(( $(date +%s) - t0 )) $((b1 - b0)) $((c1 - c0))
}
# record NAME RC LOG WALL BUSY TOTAL: a step's wall seconds and the machine's busy CPU ticks in that
# time (of TOTAL: wall x cores), for time_summary; a failure for failure_summary and the exit status
record() {
  step_times+=("$1|$4|$5|$6")
  last_rc=$2
  if [ "$2" != 0 ]; then
    rc=$2
    failed_steps+=("$1|$2|$3")
  fi
}
# time_summary: each integration step's wall time and how busy the machine's cores were meanwhile
# (measured, not estimated: where the cores idle, a step waits on Grid Engine or runs alone)
time_summary() {
  local entry name wall busy total
  [ ${#step_times[@]} = 0 ] && return 0
  step "integration steps: wall time, and the machine's busy CPU time meanwhile ($(nproc) cores)"
  printf '%-26s %7s %20s %11s\n' step 'wall s' 'busy CPU s' 'cores busy'
  for entry in "${step_times[@]}"; do
    IFS='|' read -r name wall busy total <<<"$entry"
    awk -v n="$name" -v w="$wall" -v b="$busy" -v c="$total" -v t="$ticks" 'BEGIN {
      printf "%-26s %7d %9.1f of %7.1f %11.2f\n", n, w, b / t, c / t, (w > 0 ? b / t / w : 0) }'
  done
}
# The background lane: steps that do not need the local cluster to themselves, one after the
# other beside the steps that do. start_bg FUNCTION runs FUNCTION (a list of bg_step calls) in the
# background; each bg_step keeps its output in a private log and writes its record (name, rc, log,
# its own wall time, the machine's busy and total CPU meanwhile) to the lane's record file; wait_bg
# waits for the lane, prints each step's log and records it as run does.
bg_pid="" bg_started=0 bg_t0=0 bg_records=""
bg_step() {
  local name=$1 log r=0 t0 b0 c0 b1 c1
  shift
  log=$(mktemp "$steps_dir/step.XXXXXX.log")
  t0=$(date +%s)
  read -r b0 c0 < <(cpu_now)
  "$@" >"$log" 2>&1 || r=$?
  read -r b1 c1 < <(cpu_now)
  echo "$name|$r|$log|$(( $(date +%s) - t0 ))|$((b1 - b0))|$((c1 - c0))" >>"$bg_records"
}
start_bg() {
  bg_records=$(mktemp "$steps_dir/lane.XXXXXX")
  bg_t0=$(date +%s)
  # niced like the checks: the steps beside it, which hold the local cluster, come first
  ( renice -n 10 -p $BASHPID >/dev/null; "$@" ) </dev/null >/dev/null 2>&1 &
  bg_pid=$! bg_started=1
}
wait_bg() {
  local lane_rc=0 name r log wall busy total
  [ -n "$bg_pid" ] || return 0
  step "waiting for the background lane (started $(( $(date +%s) - bg_t0 )) s ago, beside the steps since)"
  wait "$bg_pid" || lane_rc=$?
  bg_pid=""
  while IFS='|' read -r name r log wall busy total; do
    step "$name (ran in the background lane): its output"
    cat "$log"
    record "$name (beside)" "$r" "$log" "$wall" "$busy" "$total"
  done <"$bg_records"
  # a lane that died between its steps (killed) leaves fewer records: that is a failure too
  [ "$lane_rc" = 0 ] || record 'background lane' "$lane_rc" "$bg_records" $(( $(date +%s) - bg_t0 )) 0 0
}
failure_summary() {
  local entry name r log
  [ ${#failed_steps[@]} = 0 ] && return 0
  step "what failed (${#failed_steps[@]} step(s); each step's whole output is above)"
  for entry in "${failed_steps[@]}"; do
    IFS='|' read -r name r log <<<"$entry"
    printf '\n--- %s: rc %s; its failing lines, then its last lines:\n' "$name" "$r"
    sed 's/\x1b\[[0-9;]*m//g' "$log" \
      | grep -E -A8 'fatal: |FAILED!|^FAILED |^E  |Error:|ERROR |Idempotence test failed|CRITICAL' \
      | grep -v "glob failed" | tail -n 60 || true
    printf -- '--- last 15 lines of %s:\n' "$name"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | tail -n 15
  done
}

# what the background lane runs (after molecule sge_cell, until the kill test). The provider
# scenarios' idempotence steps rewrite the inventory file of live nodes (inventory/local/nodes.yml),
# which lists every namespace node on this machine: they run after sge_cell has made its node and
# long before transfer_queue's destroy and the burst test change the nodes again (about 150 s
# against 400 s); the adopt test, last, keeps its nodes in an inventory of its own.
beside_the_cluster() {
  bg_step 'molecule task_rebalance' molecule test -s task_rebalance
  bg_step 'molecule provider_local' molecule test -s provider_local
  bg_step 'molecule provider_ec2' molecule test -s provider_ec2
  bg_step 'adopt test' env SGE_QMASTER_PORT=6448 SGE_EXECD_PORT=6449 GEB_REQUIRE_CLUSTER=1 \
    pytest tests/adopt -q -m adopt -s -p no:cacheprovider
}

step "setup"
bash scripts/setup.sh
export PATH=$ROOT/.venv/bin:$PATH

checks() {
  step "unit tests (one worker per core)"
  pytest tests/unit -q -n auto
  step "target-side unit tests under the nodes' /usr/bin/python3"
  bash scripts/unit_nodes_python.sh
  if [ $sanity = 1 ]; then
    step "ansible-test sanity"
    bash scripts/sanity.sh
    step "ansible-lint (production profile)"
    ansible-lint --profile production --offline -q
  fi
  step "build and install the collection tarball"
  bash scripts/build_check.sh
  step "checks passed"
}

if [ $integration = 0 ]; then
  checks
  step "all tests passed (no integration)"
  exit 0
fi

mkdir -p .state
ticks=$(getconf CLK_TCK)
steps_dir=$(mktemp -d "$ROOT/.state/steps.XXXXXX")
checks_log=$(mktemp "$ROOT/.state/checks.XXXXXX.log")
step "checks (unit, nodes' Python, sanity, lint, tarball) in the background: $checks_log"
# nice: the integration tests' ansible runs and Grid Engine's daemons come first on the two cores;
# the checks use what they leave (measured: docs/testing.md)
( set -euo pipefail; renice -n 10 -p $BASHPID >/dev/null; checks ) >"$checks_log" 2>&1 &
checks_pid=$!

rc=0
step "integration: bring up the local cluster"
run 'cluster bring-up' ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_nodes=2
if [ "$rc" = 0 ]; then
  marker='integration and not slow'
  [ $full = 1 ] && marker='integration'
  step "integration tests (-m '$marker')"
  # test_transfer_real.py runs as the verify step of the molecule scenario transfer_queue below,
  # on the queues that scenario's converge sets up (one set-up and one removal instead of two)
  run 'integration tests' env GEB_REQUIRE_CLUSTER=1 pytest tests/integration -q -m "$marker" --durations=25 \
    --ignore=tests/integration/test_transfer_real.py
  # Molecule, one scenario per role (extensions/molecule), each create, converge, idempotence,
  # verify, destroy on real namespace nodes. node_join's node is kept (--destroy=never) and is
  # node_leave's starting point (node_leave's destroy removes it if a step failed); sge_cell's cell
  # "remote" is kept for transfer_queue, whose destroy deletes it; provider_ec2, provider_local and
  # task_rebalance run in the background lane below; sge_master runs after the kill test below,
  # which stops the cluster it starts and stops again.
  step "molecule: node_join, node_leave"
  run 'molecule node_join' molecule test -s node_join --destroy=never
  run 'molecule node_leave' molecule test -s node_leave
  step "molecule: sge_cell (kept), then transfer_queue on its cell (verify: tests/integration/test_transfer_real.py)"
  run 'molecule sge_cell' molecule test -s sge_cell --destroy=never
  # the background lane: task_rebalance (the cluster's hosts as they are, no job), the provider
  # scenarios, and a cluster built with plain Grid Engine commands (its own cell, on ports 6448/6449
  # of its own, nodes 10.77.0.201 and up) adopted from the built tarball with a user's inventory
  # only (docs/adopt.md). Beside the steps below that need the cluster to themselves: the transfer
  # queue and burst steps keep about one core busy (docs/testing.md), and every join and leave of
  # the three cells edits this master's /etc/hosts and exports under the host-files lock
  # (roles/node_join/tasks/locked.yml).
  step "background lane until the kill test: molecule task_rebalance, provider_local, provider_ec2; the adopt test (tests/adopt)"
  start_bg beside_the_cluster
  run 'molecule transfer_queue' molecule test -s transfer_queue
  # the cell "remote" is free again: the burst shape takes it (docs/burst.md), then deletes it
  step "integration: burst into a partner cell grown from zero (tests/integration -m burst)"
  burst_marker='burst and not slow'
  [ $full = 1 ] && burst_marker='burst'
  run 'burst test' env GEB_REQUIRE_CLUSTER=1 pytest tests/integration -q -m "$burst_marker" -s
fi
# the background lane's nodes share the local cluster's bridge: it ends before the cluster does
wait_bg
# kill_cluster: the balancer itself tears the cluster down after its jobs (it must come last)
step "integration: the balancer terminates the cluster (kill_cluster, tests/integration -m kill)"
run 'kill test' env GEB_REQUIRE_CLUSTER=1 pytest tests/integration -q -m kill -s
step "molecule: sge_master (the qmaster the kill test stopped: started, checked, stopped)"
run 'molecule sge_master' molecule test -s sge_master
step "integration: tear down whatever is left of the local cluster"
run 'teardown' ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_state=absent
if [ "$bg_started" = 0 ] && [ "$last_rc" = 0 ]; then
  # the local cluster never came up, so the adopt test did not run beside it: it runs now, on the
  # standard ports (so one run still reports on every tier)
  step "adopt: a cluster the collection did not build (tests/adopt)"
  run 'adopt test' env GEB_REQUIRE_CLUSTER=1 pytest tests/adopt -q -m adopt -s
fi

step "waiting for the checks"
checks_rc=0
wait "$checks_pid" || checks_rc=$?
cat "$checks_log"
time_summary
failure_summary
step "checks: rc $checks_rc; integration: rc $rc"
[ $checks_rc = 0 ] || { echo "checks failed (rc $checks_rc)"; exit $checks_rc; }
[ "$rc" = 0 ] || { echo "integration failed (rc $rc)"; exit "$rc"; }
step "all tests passed"
