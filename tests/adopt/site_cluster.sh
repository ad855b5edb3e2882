#!/usr/bin/env bash
# A Grid Engine cluster as a site builds it, WITHOUT this collection's roles: Debian's own cell
# set-up (/usr/share/gridengine/scripts/init_cluster, the script gridengine-master's postinst
# runs) and plain qconf. It is the cluster the adopt test (test_adopt_real.py) and docs/adopt.md
# hand to the balancer.
#
#   site_cluster.sh up      create the cell (once), start its qmaster, configure it, bring up the
#                           static host and its execd; idempotent
#   site_cluster.sh down    stop the static host's execd and the qmaster, delete the static host,
#                           the cell and its spool (only what `up` made: its mark file says so)
#
# What it makes (names overridable through the environment):
#   cell SITE_CELL=site under SGE_ROOT=/var/lib/gridengine, spool /var/spool/gridengine-$SITE_CELL,
#   qmaster on this host on Grid Engine's standard ports (6444/6445 from /etc/services), so the
#   cell `default` (playbooks/local_cluster.yml) must not be running; or, as many sites do, on the
#   ports SGE_QMASTER_PORT and SGE_EXECD_PORT of the environment (both set: scripts/test.sh runs
#   the adopt test that way beside the local cluster's tests);
#   scheduler interval 0:0:1; host group @allhosts; queue all.q (2 slots per host, pe_list mpi,
#   load_thresholds NONE: every namespace node shares this machine's one kernel and so its load
#   average; with the template's np_load_avg=1.75 a busy machine puts every host in alarm);
#   parallel environment mpi ($fill_up, so a 4-slot job spans two 2-slot hosts);
#   one static execution host STATIC_NAME=static01 at STATIC_ADDRESS=10.77.0.90: the machine is a
#   namespace node made with gridengine.balancer.local_node (our stand-in for a box in the rack,
#   labelled cluster "site_static", so no provider of the balancer counts it as its own); its /etc/hosts
#   line on the master, `qconf -ah/-Ae`, its host-group membership and its execd are plain commands.
# The harness's one concession: this machine may be running the project's other tests at the same
# time, whose joins and leaves edit /etc/hosts under the collection's host-files lock
# (roles/node_join/tasks/locked.yml); the static host's line is written and deleted under it too.
# Nothing here contacts an address but the static host's own (10.77.0.0/24, this machine's bridge).
set -euo pipefail
export SGE_ROOT=${SGE_ROOT:-/var/lib/gridengine}
export SGE_CELL=${SITE_CELL:-site}
export LC_ALL=C
SPOOL=/var/spool/gridengine-$SGE_CELL
STATIC=${STATIC_NAME:-static01}
STATIC_ADDRESS=${STATIC_ADDRESS:-10.77.0.90}
JOB_USER=${JOB_USER:-tester}
MASTER=$(hostname)
NODES_DIR=/var/lib/gridengine-balancer/local-nodes
MARK=$SPOOL/made-by-site_cluster.sh
HOSTS_MARK="# static host of the site cell $SGE_CELL (tests/adopt/site_cluster.sh)"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf '[site_cluster] %s\n' "$*"; }
die() { printf '[site_cluster] error: %s\n' "$*" >&2; exit 1; }

[[ $SGE_CELL =~ ^[a-z][a-z0-9_-]{0,30}$ ]] || die "SITE_CELL=$SGE_CELL is not a plain cell name"
[[ $STATIC =~ ^[a-z][a-z0-9-]{0,62}$ ]] || die "STATIC_NAME=$STATIC is not a host name"
[[ $STATIC_ADDRESS =~ ^10\.77\.0\.([0-9]{1,3})$ ]] || die "STATIC_ADDRESS must be in 10.77.0.0/24"
[ "$(id -u)" = 0 ] || die "run as root"
PORT_ENV=""
if [ -n "${SGE_QMASTER_PORT:-}${SGE_EXECD_PORT:-}" ]; then
  [[ ${SGE_QMASTER_PORT:-} =~ ^[1-9][0-9]{2,4}$ && ${SGE_EXECD_PORT:-} =~ ^[1-9][0-9]{2,4}$ ]] \
    || die "set both SGE_QMASTER_PORT and SGE_EXECD_PORT (ports), or neither"
  export SGE_QMASTER_PORT SGE_EXECD_PORT
  PORT_ENV="SGE_QMASTER_PORT=$SGE_QMASTER_PORT SGE_EXECD_PORT=$SGE_EXECD_PORT"
fi
HOST_FILES_LOCK=/var/lib/gridengine-balancer/_machine/host-files.lock.json

ansible_local() {  # a module of this checkout (local_node, balancer_lock), on this host
  LC_ALL=C.UTF-8 ANSIBLE_COLLECTIONS_PATH=$REPO/.collections "$REPO/.venv/bin/ansible" localhost -c local \
    -e ansible_python_interpreter=/usr/bin/python3 "$@"
}
# hosts_locked COMMAND...: COMMAND under the machine's host-files lock (balancer_lock), waited for
hosts_locked() {
  local out="" token="" rc=0
  for _ in $(seq 90); do
    if out=$(ansible_local -o -m gridengine.balancer.balancer_lock \
        -a "path=$HOST_FILES_LOCK owner='tests/adopt/site_cluster.sh cell=$SGE_CELL' ttl=60" 2>&1); then
      token=$(sed -n 's/.*"token": "\([0-9a-f]\{32\}\)".*/\1/p' <<<"$out" | head -n 1)
      break
    fi
    sleep 2
  done
  [ -n "$token" ] || die "could not take the host-files lock $HOST_FILES_LOCK: $out"
  "$@" || rc=$?
  ansible_local -m gridengine.balancer.balancer_lock -a "path=$HOST_FILES_LOCK token=$token state=absent" >/dev/null \
    || log "warning: could not give the host-files lock back (it expires in 60 s)"
  return $rc
}
qmaster_pid() { cat "$SPOOL/qmaster/qmaster.pid" 2>/dev/null || true; }
qmaster_up() { local p; p=$(qmaster_pid); [ -n "$p" ] && [ -d "/proc/$p" ] && grep -qx sge_qmaster "/proc/$p/comm"; }
on_static() {
  ssh -n -o BatchMode=yes -o ConnectTimeout=10 -i "$NODES_DIR/id_ed25519" \
    -o "UserKnownHostsFile=$NODES_DIR/$STATIC/known_hosts" "root@$STATIC_ADDRESS" "$@"
}

up() {
  # 0. the standard ports must be free: the cell default's qmaster is not running
  if [ -z "$PORT_ENV" ] && pgrep -x sge_qmaster >/dev/null && ! qmaster_up; then
    die "another sge_qmaster runs (the local cluster's?); stop it first: the site cell uses the standard ports"
  fi
  case $(getent ahostsv4 "$MASTER" | awk 'NR==1{print $1}') in
    ''|127.0.0.1) die "$MASTER must resolve to a local address other than 127.0.0.1 (a site's DNS does that)";;
  esac
  id "$JOB_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$JOB_USER"

  # 1. the cell, made by Debian's own script, with its own spool directory
  if [ ! -e "$MARK" ]; then
    [ -e "$SGE_ROOT/$SGE_CELL" ] && die "$SGE_ROOT/$SGE_CELL exists and was not made by this script"
    log "creating cell $SGE_CELL with Debian's init_cluster"
    install -d -o sgeadmin -g sgeadmin -m 0755 "$SPOOL" "$SPOOL/qmaster" "$SPOOL/qmaster/job_scripts" \
      "$SPOOL/spooldb" "$SGE_ROOT/$SGE_CELL" "$SGE_ROOT/$SGE_CELL/common"
    sed -e "s|/var/spool/gridengine/spooldb|$SPOOL/spooldb|" -e "s|/var/spool/gridengine/qmaster|$SPOOL/qmaster|" \
      /usr/share/gridengine/default-bootstrap > "$SGE_ROOT/$SGE_CELL/common/bootstrap"
    chown sgeadmin:sgeadmin "$SGE_ROOT/$SGE_CELL/common/bootstrap"
    runuser -u sgeadmin -- /usr/share/gridengine/scripts/init_cluster "$SGE_ROOT" "$SGE_CELL" "$SPOOL/spooldb" sgeadmin >/dev/null
    echo "$MASTER" > "$SGE_ROOT/$SGE_CELL/common/act_qmaster"
    echo "$MASTER localhost" > "$SGE_ROOT/$SGE_CELL/common/host_aliases"   # clients over 127.0.0.1
    chown sgeadmin:sgeadmin "$SGE_ROOT/$SGE_CELL/common/act_qmaster" "$SGE_ROOT/$SGE_CELL/common/host_aliases"
    echo "cell $SGE_CELL made $(date -u +%FT%TZ)" > "$MARK"
  fi

  # 2. the qmaster (no systemd here; it daemonizes)
  if ! qmaster_up; then
    /usr/sbin/sge_qmaster
    for _ in $(seq 100); do qconf -sh >/dev/null 2>&1 && break; sleep 0.2; done
    qconf -sh >/dev/null || die "the qmaster of cell $SGE_CELL did not answer"
    log "sge_qmaster of cell $SGE_CELL started (pid $(qmaster_pid))"
  fi

  # 3. the cluster's objects, plain qconf with files (qconf -a* would open an editor)
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  qconf -ssconf | sed 's/^schedule_interval .*/schedule_interval 0:0:1/' > "$tmp/sconf"
  qconf -Msconf "$tmp/sconf" >/dev/null
  qconf -ss 2>/dev/null | grep -qx "$MASTER" || qconf -as "$MASTER" >/dev/null
  if ! qconf -spl 2>/dev/null | grep -qx mpi; then
    cat > "$tmp/pe" <<'EOF'
pe_name            mpi
slots              999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $fill_up
control_slaves     TRUE
job_is_first_task  FALSE
urgency_slots      min
accounting_summary TRUE
qsort_args         NONE
EOF
    qconf -Ap "$tmp/pe" >/dev/null
  fi
  if ! qconf -shgrp @allhosts >/dev/null 2>&1; then
    printf 'group_name @allhosts\nhostlist NONE\n' > "$tmp/hg"
    qconf -Ahgrp "$tmp/hg" >/dev/null
  fi
  if ! qconf -sq all.q >/dev/null 2>&1; then
    # the built-in template, through an "editor" that sets what differs
    # shellcheck disable=SC2016  # $1 is the editor's argument, expanded when the editor runs
    printf '#!/bin/sh\nsed -i -e "s/^hostlist .*/hostlist @allhosts/" -e "s/^slots .*/slots 2/" -e "s/^pe_list .*/pe_list mpi/" -e "s/^load_thresholds .*/load_thresholds NONE/" "$1"\n' > "$tmp/ed"
    chmod 0700 "$tmp/ed"
    EDITOR=$tmp/ed qconf -aq all.q >/dev/null
  fi

  # 4. the static host: a machine (namespace node), its name in the master's /etc/hosts, and Grid
  #    Engine on it by hand
  ansible_local -m gridengine.balancer.local_node \
    -a "name=$STATIC address=$STATIC_ADDRESS cluster=site_static authorized_key_file=$NODES_DIR/id_ed25519.pub" >/dev/null \
    || { [ -f "$NODES_DIR/id_ed25519.pub" ] || die "no $NODES_DIR/id_ed25519.pub: run the local cluster once (it makes the key)"; die "could not bring up $STATIC"; }
  grep -qE "^${STATIC_ADDRESS//./\\.}[[:space:]]+${STATIC}([[:space:]]|\$)" /etc/hosts \
    || hosts_locked add_static_line
  qconf -sh | grep -qx "$STATIC" || qconf -ah "$STATIC" >/dev/null
  if ! qconf -se "$STATIC" >/dev/null 2>&1; then
    printf 'hostname %s\nload_scaling NONE\ncomplex_values NONE\nuser_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\nusage_scaling NONE\nreport_variables NONE\n' "$STATIC" > "$tmp/eh"
    qconf -Ae "$tmp/eh" >/dev/null
  fi
  qconf -shgrp @allhosts | grep -qw "$STATIC" || qconf -aattr hostgroup hostlist "$STATIC" @allhosts >/dev/null
  on_static "pgrep -x sge_execd >/dev/null || SGE_ROOT=$SGE_ROOT SGE_CELL=$SGE_CELL $PORT_ENV /usr/sbin/sge_execd </dev/null >/dev/null 2>&1"
  for _ in $(seq 60); do
    qhost -h "$STATIC" | awk -v h="$STATIC" '$1==h && $7!="-" {ok=1} END{exit !ok}' && break
    sleep 1
  done
  qhost -h "$STATIC" | awk -v h="$STATIC" '$1==h && $7!="-" {ok=1} END{exit !ok}' || die "$STATIC reports no load"
  log "cell $SGE_CELL up: queues $(qconf -sql | tr '\n' ' ')| PEs $(qconf -spl | tr '\n' ' ')| exec hosts $(qconf -sel | tr '\n' ' ')"
}

add_static_line() {
  printf '%s %s  %s\n' "$STATIC_ADDRESS" "$STATIC" "$HOSTS_MARK" >> /etc/hosts
}

# the static host's line out of /etc/hosts: a whole new file renamed over it, never a half-written one
remove_static_line() {
  local line="$STATIC_ADDRESS $STATIC  $HOSTS_MARK" tmp rc=0
  tmp=$(mktemp /etc/.hosts.site_cluster.XXXXXX)
  grep -vxF "$line" /etc/hosts > "$tmp" || rc=$?
  [ "$rc" -le 1 ] || { rm -f "$tmp"; die "could not read /etc/hosts (grep rc $rc); it is unchanged"; }
  chmod 0644 "$tmp"
  mv -f "$tmp" /etc/hosts
}

down() {
  [ -e "$MARK" ] || { log "no cell $SGE_CELL made by this script: nothing to do"; return 0; }
  if qmaster_up; then
    for h in $(qconf -sel 2>/dev/null); do qconf -ke "$h" >/dev/null 2>&1 || true; done
    qconf -km >/dev/null 2>&1 || true
    for _ in $(seq 50); do qmaster_up || break; sleep 0.2; done
  fi
  ansible_local -m gridengine.balancer.local_node -a "name=$STATIC state=absent" >/dev/null || true
  if grep -qxF "$STATIC_ADDRESS $STATIC  $HOSTS_MARK" /etc/hosts; then
    hosts_locked remove_static_line
  fi
  rm -rf "${SPOOL:?}" "${SGE_ROOT:?}/${SGE_CELL:?}" "/var/spool/gridengine/execd/$STATIC"
  log "cell $SGE_CELL and $STATIC removed"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
