#!/usr/bin/env bash
# All tests, on a fresh Debian 12 machine as root (this is what .ci/run calls):
#   1. setup (idempotent): Debian packages, .venv, collections
#   2. unit tests on the real Grid Engine outputs (tests/unit)
#   3. ansible-test sanity (empty ignore file) and ansible-lint (production profile)
#   4. the built collection tarball installs and its modules run from it
#   5. integration tests on a real local Grid Engine cluster that this script brings up
#      (qmaster on this machine + namespace nodes), torn down at the end
# Usage: bash scripts/test.sh [--no-integration] [--no-sanity]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
integration=1 sanity=1
for a in "$@"; do case $a in --no-integration) integration=0;; --no-sanity) sanity=0;; *) echo "unknown option $a"; exit 2;; esac; done
T0=$(date +%s)
step() { printf '\n=== [%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

step "setup"
bash scripts/setup.sh
export PATH=$ROOT/.venv/bin:$PATH

step "unit tests (one worker per core)"
pytest tests/unit -q -n auto

if [ $sanity = 1 ]; then
  step "ansible-test sanity"
  bash scripts/sanity.sh
  step "ansible-lint (production profile)"
  ansible-lint --profile production --offline -q
fi

step "build and install the collection tarball"
bash scripts/build_check.sh

if [ $integration = 1 ]; then
  step "integration: bring up the local cluster"
  ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_nodes=2
  rc=0
  step "integration tests"
  GEB_REQUIRE_CLUSTER=1 pytest tests/integration -q -m integration --durations=25 || rc=$?
  step "molecule: node_join and node_leave scenarios on fresh namespace nodes"
  molecule test -s node_join || rc=$?
  molecule test -s node_leave || rc=$?
  step "integration: tear the local cluster down"
  ansible-playbook playbooks/local_cluster.yml -e cluster=mycluster -e local_cluster_state=absent || rc=$?
  [ $rc = 0 ] || { echo "integration failed (rc $rc)"; exit $rc; }
fi
step "all tests passed"
