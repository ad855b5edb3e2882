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
#      balanced by the collection installed from its tarball, with a user's inventory only
#
# With integration, the checks of step 2 run beside the integration tests (their output goes to
# .state/checks.log and is printed at the end): the integration tests spend most of their time
# waiting on Grid Engine, and running both at once saves the checks' 17 minutes on a 2-core machine
# (the whole run took 44 minutes on 2026-11-28, docs/testing.md). Each side's result decides the
# exit status.
#
# The integration tests come in two tiers (docs/testing.md):
#   - core (default, CI): every feature on the real cluster, about 15 minutes, then the molecule scenarios;
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
checks_log=$(mktemp "$ROOT/.state/checks.XXXXXX.log")
step "checks (unit, nodes' Python, sanity, lint, tarball) in the background: $checks_log"
# nice: the integration tests' ansible runs and Grid Engine's daemons come first on the two cores;
# the checks use what they leave (measured: docs/testing.md)
( set -euo pipefail; renice -n 10 -p $BASHPID >/dev/null; checks ) >"$checks_log" 2>&1 &
checks_pid=$!

rc=0
step "integration: bring up the local cluster"
ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_nodes=2 || rc=$?
if [ $rc = 0 ]; then
  marker='integration and not slow'
  [ $full = 1 ] && marker='integration'
  step "integration tests (-m '$marker')"
  # test_transfer_real.py runs as the verify step of the molecule scenario transfer_queue below,
  # on the queues that scenario's converge sets up (one set-up and one removal instead of two)
  GEB_REQUIRE_CLUSTER=1 pytest tests/integration -q -m "$marker" --durations=25 \
    --ignore=tests/integration/test_transfer_real.py || rc=$?
  # Molecule, one scenario per role (extensions/molecule), each create, converge, idempotence,
  # verify, destroy on real namespace nodes. node_join's node is kept (--destroy=never) and is
  # node_leave's starting point (node_leave's destroy removes it if a step failed); sge_cell's cell
  # "remote" is kept for transfer_queue, whose destroy deletes it; sge_master runs after the kill
  # test below, which stops the cluster it starts and stops again.
  step "molecule: node_join, node_leave, provider_local, provider_ec2 (moto_server), task_rebalance"
  molecule test -s node_join --destroy=never || rc=$?
  molecule test -s node_leave || rc=$?
  molecule test -s provider_local || rc=$?
  molecule test -s provider_ec2 || rc=$?
  molecule test -s task_rebalance || rc=$?
  step "molecule: sge_cell (kept), then transfer_queue on its cell (verify: tests/integration/test_transfer_real.py)"
  molecule test -s sge_cell --destroy=never || rc=$?
  molecule test -s transfer_queue || rc=$?
fi
# kill_cluster: the balancer itself tears the cluster down after its jobs (it must come last)
step "integration: the balancer terminates the cluster (kill_cluster, tests/integration -m kill)"
GEB_REQUIRE_CLUSTER=1 pytest tests/integration -q -m kill -s || rc=$?
step "molecule: sge_master (the qmaster the kill test stopped: started, checked, stopped)"
molecule test -s sge_master || rc=$?
step "integration: tear down whatever is left of the local cluster"
ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_state=absent || rc=$?
if [ $rc = 0 ]; then
  # a cluster built with plain Grid Engine commands (its own cell, on the standard ports, so after
  # the teardown), adopted from the built tarball with a user's inventory only (docs/adopt.md)
  step "adopt: a cluster the collection did not build (tests/adopt)"
  GEB_REQUIRE_CLUSTER=1 pytest tests/adopt -q -m adopt -s || rc=$?
fi

step "waiting for the checks"
checks_rc=0
wait "$checks_pid" || checks_rc=$?
cat "$checks_log"
step "checks: rc $checks_rc; integration: rc $rc"
[ $checks_rc = 0 ] || { echo "checks failed (rc $checks_rc)"; exit $checks_rc; }
[ $rc = 0 ] || { echo "integration failed (rc $rc)"; exit $rc; }
step "all tests passed"
