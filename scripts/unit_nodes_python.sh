#!/usr/bin/env bash
# Unit tests of the target-side code (plugins/module_utils: stdlib only) under the nodes' own
# interpreter, /usr/bin/python3 (Debian 12: Python 3.11.2, no tarfile.data_filter), as well as
# under .venv's Python (scripts/test.sh runs the whole suite there). Issue 20, finding 8.
#
# The interpreter's own standard library is used, with pytest only added: a venv in
# .state/nodes-python made with --system-site-packages, pytest at .venv's version (made once,
# about 10 s; reused after). The tests run are every test file of tests/unit/plugins/module_utils
# that needs nothing but the standard library and pytest (listed below; the others import
# ansible-core and run under .venv only).
# Usage: bash scripts/unit_nodes_python.sh [pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${NODES_PYTHON:-/usr/bin/python3}
VENV=$ROOT/.state/nodes-python
if [ ! -x "$PY" ]; then
  echo "unit_nodes_python: $PY not found (the nodes' interpreter)" >&2
  exit 2
fi
if [ ! -d "$ROOT/.collections/ansible_collections/gridengine" ]; then
  echo "unit_nodes_python: run scripts/setup.sh first (.collections/ is missing)" >&2
  exit 2
fi
want=$("$ROOT/.venv/bin/python" -c 'import pytest; print(pytest.__version__)' 2>/dev/null || true)
have=$("$VENV/bin/python" -c 'import pytest; print(pytest.__version__)' 2>/dev/null || true)
if [ ! -x "$VENV/bin/python" ] || [ -z "$have" ] || { [ -n "$want" ] && [ "$have" != "$want" ]; }; then
  rm -rf "$VENV"
  mkdir -p "$ROOT/.state"
  "$PY" -m venv --system-site-packages "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "pytest${want:+==$want}"
fi
"$VENV/bin/python" -c 'import sys; print("unit_nodes_python: %s (%s)" % (sys.version.split()[0], sys.executable))'
# ignore the one file that needs ansible-core (test_lock_concurrency: the module balancer_lock)
exec "$VENV/bin/python" -m pytest tests/unit/plugins/module_utils \
  --ignore=tests/unit/plugins/module_utils/test_lock_concurrency.py -q -p no:cacheprovider "$@"
