#!/usr/bin/env bash
# Set up everything this project needs on a fresh Debian 12 machine, as root, idempotently:
#   - Debian packages (Grid Engine, sshd, iproute2, NFS tools, ...)
#   - .venv with the pinned Python packages of requirements.txt
#   - .collections/: this checkout as gridengine.balancer, plus amazon.aws, ansible.posix and
#     community.general extracted from the pinned `ansible` wheel (Galaxy is unreachable)
#   - ansible-test's pip bootstrap, served from the standard library (its download host is
#     unreachable)
# Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
log() { printf '[setup] %s\n' "$*"; }

# 1. Debian packages. gridengine-* are configured by the sge_master role (debconf preseeds), so
#    they are installed here without starting anything.
PKGS=(openssh-server openssh-client iproute2 util-linux procps nfs-kernel-server nfs-common
      psmisc rsync shellcheck gridengine-master gridengine-exec gridengine-client python3-venv
      nfs-ganesha nfs-ganesha-vfs libnfs-utils)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  host=$(hostname)
  debconf-set-selections <<DEB
gridengine-common shared/gridenginemaster string $host
gridengine-common shared/gridenginecell string default
gridengine-common shared/gridengineconfig boolean true
postfix postfix/main_mailer_type select No configuration
DEB
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Python packages
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --no-compile -r requirements.txt 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
# byte-compiled once here, on every core (pip compiles one file after the other: 41 s of its 113 s
# on a 2-core machine, against about 28 s this way); a file that does not compile is only slower
purelib=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
.venv/bin/python -m compileall -q -j 0 "$purelib" >/dev/null 2>&1 \
  || log "some files in $purelib did not byte-compile (they are compiled when imported)"
.venv/bin/python -c 'import ansible, boto3, jmespath, netaddr, matplotlib' \
  || { log "python packages missing after pip install"; exit 1; }

# 3. collections
spec=$(sed -n 's/^# collections-from-wheel: //p' requirements.txt)
read -r wheel_pin colls <<<"$spec"
mkdir -p .collections/ansible_collections/gridengine .state/wheels
ln -sfn "$ROOT" .collections/ansible_collections/gridengine/balancer
for c in $colls; do
  ns=${c%%.*} name=${c#*.}
  [ -f ".collections/ansible_collections/$ns/$name/MANIFEST.json" ] && continue
  whl=$(find .state/wheels -name "ansible-${wheel_pin#ansible==}-*.whl" | head -1)
  if [ -z "$whl" ]; then
    log "downloading the $wheel_pin wheel for its collections"
    .venv/bin/python -m pip download -q --no-deps "$wheel_pin" -d .state/wheels 2>&1 \
      | grep -v "is ignored: it is neither a file nor a directory" || true
    whl=$(find .state/wheels -name "ansible-${wheel_pin#ansible==}-*.whl" | head -1)
  fi
  log "extracting $c from $(basename "$whl")"
  .venv/bin/python - "$whl" "$ns/$name" <<'PYX'
import sys, zipfile, os
whl, sub = sys.argv[1], sys.argv[2]
prefix = "ansible_collections/%s/" % sub
with zipfile.ZipFile(whl) as z:
    for m in z.namelist():
        if m.startswith(prefix):
            z.extract(m, ".collections")
PYX
done

# 4. ansible-test's get-pip bootstrap, answered by ensurepip (no network needed)
mkdir -p ~/.ansible/test/cache
for v in 24_2 25_0 25_1 25_2; do
  install -m 0644 tests/sanity/get_pip_offline.py ~/.ansible/test/cache/get_pip_"$v".py
done
log "ready: $(.venv/bin/ansible --version | sed -n 1p)"
