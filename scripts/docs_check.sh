#!/usr/bin/env bash
# The collection's documentation as a docs site would build it, offline (Galaxy is not needed):
#   1. antsibull-changelog lint           the changelog fragments and changelogs/changelog.yaml
#   2. antsibull-docs lint-collection-docs --plugin-docs
#                                         every plugin's and role's docs: schema, markup, links
#   3. antsibull-docs collection           the docs site's RST for this collection, into a
#      + sphinx-build                      temporary folder, built to HTML with warnings as errors
# Fails on the first error; the temporary folder is removed at the end.
# Usage: bash scripts/docs_check.sh   (needs the .venv and .collections of scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH=$ROOT/.venv/bin:$PATH
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
start=$SECONDS

# The dependencies are copied out of the checkout: antsibull-docs copies a collection that lies
# inside a git work tree with `git ls-files`, and .collections/ is ignored by git, so a copy made
# from there would be empty (ec2_node's amazon.aws doc fragments would then be "unknown").
mkdir -p "$TMP/collections/ansible_collections"
deps=$(python3 -c 'import yaml; print(" ".join(yaml.safe_load(open("galaxy.yml"))["dependencies"]))')
for dep in $deps; do
  ns=${dep%%.*} name=${dep#*.}
  src=$ROOT/.collections/ansible_collections/$ns/$name
  [ -f "$src/MANIFEST.json" ] || { echo "docs_check: dependency $dep is not in .collections (run scripts/setup.sh)"; exit 1; }
  mkdir -p "$TMP/collections/ansible_collections/$ns"
  cp -r "$src" "$TMP/collections/ansible_collections/$ns/$name"
done
# this checkout as gridengine.balancer, beside its dependencies (for `antsibull-docs collection`)
mkdir -p "$TMP/collections/ansible_collections/gridengine"
ln -s "$ROOT" "$TMP/collections/ansible_collections/gridengine/balancer"
export ANSIBLE_COLLECTIONS_PATH=$TMP/collections
printf '[defaults]\n' > "$TMP/ansible.cfg"    # not the checkout's ansible.cfg
export ANSIBLE_CONFIG=$TMP/ansible.cfg

step() { echo "== $* (at $((SECONDS - start)) s)"; }
step antsibull-changelog lint
antsibull-changelog lint
# CHANGELOG.md is generated (changelogs/README.md); a fragment added since the last run of
# `antsibull-changelog release --version 0.1.0` is not in it yet: say so (not an error, the
# fragment itself is linted above)
python3 - <<'PY'
import os, yaml
known = {f for r in yaml.safe_load(open("changelogs/changelog.yaml"))["releases"].values()
         for f in r.get("fragments", [])}
new = sorted(set(os.listdir("changelogs/fragments")) - known)
if new:
    print("docs_check: WARNING: %d fragment(s) not in CHANGELOG.md yet: %s; run"
          " `antsibull-changelog release --version 0.1.0` (see changelogs/README.md)" % (len(new), " ".join(new)))
PY
step antsibull-docs lint-collection-docs --plugin-docs
# --skip-rstcheck: the RST of every plugin and role is checked by sphinx-build below (warnings
# fail), which is the slower half of this lint otherwise
antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs all \
  --disallow-unknown-collection-refs --skip-rstcheck .

step antsibull-docs collection into a temporary folder
SITE=$TMP/site
mkdir -m 700 "$SITE"
antsibull-docs sphinx-init --use-current --dest-dir "$SITE" --fail-on-error \
  --project gridengine.balancer --title "gridengine.balancer" gridengine.balancer >/dev/null
# sphinx-init's build.sh, step by step: `antsibull-docs collection` writes the RST (failing on any
# plugin or role whose docs do not parse, instead of writing an error page), sphinx-build the HTML.
# Offline: no intersphinx inventories, so a reference into docs.ansible.com (common_return_values,
# action_plugins) or into another collection's docs cannot resolve here; every other warning fails.
chmod og-w "$SITE/rst"   # antsibull-docs wants it writable by its owner only
antsibull-docs --config-file "$SITE/antsibull-docs.cfg" collection --cleanup everything \
  --fail-on-error --use-current --dest-dir "$SITE/rst" gridengine.balancer >/dev/null
python3 - "$SITE/conf.py" <<'PY'
import re, sys
path = sys.argv[1]
text = re.sub(r"intersphinx_mapping = \{.*?\n\}\n", "intersphinx_mapping = {}\n", open(path).read(), flags=re.S)
open(path, "w").write(text)
PY
step sphinx-build
sphinx-build -q -b html -c "$SITE" -w "$SITE/warnings.txt" "$SITE/rst" "$SITE/html" 2>/dev/null || {
  cat "$SITE/warnings.txt"; echo "docs_check: sphinx-build failed"; exit 1; }
external="undefined label: '(common_return_values|action_plugins|ansible_configuration_settings|ansible_collections\.(ansible\.builtin|ansible\.posix|amazon\.aws|awx\.awx)\.[a-z0-9_]+)'"
external="$external|'envvar' reference target not found: ANSIBLE_[A-Z_]+ "   # ansible-core's own settings
if grep -Ev "$external" "$SITE/warnings.txt" | grep -q .; then
  grep -Ev "$external" "$SITE/warnings.txt"; echo "docs_check: sphinx-build warnings (above)"; exit 1
fi
pages=$(find "$SITE/html/collections" -name '*.html' | wc -l)
echo "docs_check: changelog lint, docs lint and the docs site ($pages HTML pages of the collection," \
  "$(grep -c . "$SITE/warnings.txt") references into docs.ansible.com left to intersphinx) are clean" \
  "($((SECONDS - start)) s)"
