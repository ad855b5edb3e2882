#!/usr/bin/env bash
# ansible-test sanity on a copy of the tracked files laid out as ansible_collections/gridengine/balancer
# (ansible-test requires that path and resolves symlinks, so the .collections link cannot be used).
# The ignore file tests/sanity/ignore-2.19.txt is kept empty on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# outside the checkout: ansible-test would otherwise see the enclosing git work tree, where
# this copy is an ignored path, and skip every target.
# A fresh private directory (mktemp -d: an unpredictable name, mode 0700) unless SANITY_WORKDIR
# names one; either way it is removed on exit, also after a failure or an interrupt.
if [ -n "${SANITY_WORKDIR:-}" ]; then
  WORK=$SANITY_WORKDIR
  rm -rf "$WORK"; mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/gridengine-balancer-sanity.XXXXXXXX")
fi
trap 'rm -rf "$WORK"' EXIT
DEST=$WORK/ansible_collections/gridengine/balancer
mkdir -p "$DEST"
git ls-files -co --exclude-standard -z | rsync -a --from0 --files-from=- ./ "$DEST/"
# the collections we depend on, beside it
for d in .collections/ansible_collections/*/; do
  ns=$(basename "$d"); [ "$ns" = gridengine ] && continue
  ln -sfn "$ROOT/$d" "$WORK/ansible_collections/$ns"
done
cd "$DEST"
export PATH=$ROOT/.venv/bin:$PATH
ansible-test sanity --venv --python 3.11 --color no "$@"
