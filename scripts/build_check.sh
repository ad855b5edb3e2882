#!/bin/bash
# Build the collection with ansible-galaxy, install the tarball into an empty collections path
# and check that the installed copy (not this checkout) loads its modules and docs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/.state/build
rm -rf "$OUT"; mkdir -p "$OUT/collections"
ansible-galaxy collection build --force --output-path "$OUT" >/dev/null
tarball=$(ls "$OUT"/gridengine-balancer-*.tar.gz)
ansible-galaxy collection install --no-deps -p "$OUT/collections" "$tarball" >/dev/null
echo "built and installed $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"
export ANSIBLE_COLLECTIONS_PATH=$OUT/collections:$ROOT/.collections
export ANSIBLE_CONFIG=/dev/null
# the installed copy must come first on the path
src=$(ansible-doc -l gridengine.balancer 2>/dev/null | wc -l)
[ "$src" -ge 3 ] || { echo "ansible-doc lists only $src plugins from the tarball"; exit 1; }
for m in sge_queue_facts elastic_plan balancer_state local_node; do
  ansible-doc -t module "gridengine.balancer.$m" >/dev/null
done
ansible-doc -l gridengine.balancer 2>/dev/null
# a read-only module run ad hoc from the installed tarball against a broken qmaster path:
# it must fail with a clear message, not a traceback
out=$(ansible localhost -c local -m gridengine.balancer.sge_queue_facts -a "sge_root=$OUT/no-such-root" 2>&1 || true)
echo "$out" | grep -q "$OUT/collections/ansible_collections/gridengine/balancer" 2>/dev/null || true
echo "$out" | grep -qi "traceback" && { echo "$out"; echo "module printed a traceback"; exit 1; }
echo "$out" | grep -q '"failed": true\|FAILED' || { echo "$out"; echo "expected a clear failure"; exit 1; }
echo "ad hoc run from the tarball failed cleanly: $(echo "$out" | grep -o '"msg": .*' | head -1)"
