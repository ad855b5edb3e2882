#!/usr/bin/env bash
# Build the collection with ansible-galaxy, install the tarball into an empty collections path
# and check that the installed copy (not this checkout) loads its modules and docs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/.state/build
rm -rf "$OUT"; mkdir -p "$OUT/collections"
ansible-galaxy collection build --force --output-path "$OUT" >/dev/null
tarball=$(ls "$OUT"/gridengine-balancer-*.tar.gz)
ansible-galaxy collection install --force --no-deps -p "$OUT/collections" "$tarball" >/dev/null 2>&1
echo "built and installed $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"
# what an installed user needs and nothing else: no docs images or raw run data, no development
# files (galaxy.yml build_ignore); the README Galaxy shows is the one for an installed copy
members=$(tar -tzf "$tarball")
bad=$(echo "$members" | grep -E '\.(png|svg|jpe?g|gif|csv)$|(^|/)__pycache__/|^(\.ci|\.hypothesis|\.pytest_cache|\.state|\.venv|\.collections|scripts|benchmarks|extensions)/|^(requirements\.txt|pytest\.ini|ansible\.cfg|README\.md|\.ansible-lint|\.gitignore)$|^tests/(unit|integration|capture|adopt|output)/|^inventory/|^changelogs/fragments/' || true)
if [ -n "$bad" ]; then echo "$bad" | head -20; echo "the tarball carries $(echo "$bad" | wc -l) development or image files"; exit 1; fi
for f in MANIFEST.json docs/README-collection.md CHANGELOG.md changelogs/changelog.yaml \
         meta/runtime.yml meta/execution-environment.yml meta/ee-requirements.txt bindep.txt; do
  echo "$members" | grep -qx "$f" || { echo "the tarball lacks $f"; exit 1; }
done
readme=$(tar -xzOf "$tarball" MANIFEST.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["collection_info"]["readme"])')
[ "$readme" = docs/README-collection.md ] || { echo "MANIFEST.json readme is $readme"; exit 1; }
echo "tarball: $(echo "$members" | grep -vc '/$') files, no images, no development files; readme $readme"
# dependencies beside it, but not this checkout
for d in "$ROOT"/.collections/ansible_collections/*/; do
  ns=$(basename "$d"); [ "$ns" = gridengine ] || ln -sfn "$d" "$OUT/collections/ansible_collections/$ns"
done
export ANSIBLE_COLLECTIONS_PATH=$OUT/collections
printf '[defaults]\n' > "$OUT/ansible.cfg"   # not the checkout's ansible.cfg
export ANSIBLE_CONFIG=$OUT/ansible.cfg
for m in sge_queue_facts elastic_plan balancer_state local_node sge_exec_host sge_hostgroup sge_queue; do
  file=$(ansible-doc -t module "gridengine.balancer.$m" --json \
         | python3 -c 'import json,sys; print(list(json.load(sys.stdin).values())[0]["doc"]["filename"])')
  case $file in
    "$OUT"/collections/*) ;;
    *) echo "gridengine.balancer.$m was loaded from $file, not from the installed tarball"; exit 1 ;;
  esac
done
echo "all modules load from the installed tarball ($(ansible-doc -l gridengine.balancer 2>/dev/null | wc -l) plugins listed)"
# a read-only module run ad hoc from the installed tarball with a Grid Engine root that does not
# exist: it must fail with a clear message naming the problem, not a traceback
out=$(ansible localhost -c local -e ansible_python_interpreter=/usr/bin/python3 \
      -m gridengine.balancer.sge_queue_facts -a "sge_root=$OUT/no-such-root" 2>&1 || true)
if echo "$out" | grep -qi "traceback"; then echo "$out"; echo "module printed a traceback"; exit 1; fi
echo "$out" | grep -q "FAILED" || { echo "$out"; echo "expected a clear failure"; exit 1; }
echo "ad hoc run from the tarball failed cleanly: $(echo "$out" | grep -o '"msg": .*' | head -1)"

# the docs: changelog and plugin docs lint, the docs site built into a temporary folder
bash "$ROOT/scripts/docs_check.sh"
