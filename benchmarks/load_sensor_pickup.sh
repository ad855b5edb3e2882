#!/usr/bin/env bash
# How long the local cluster's master execd takes to start a load sensor added to its local
# configuration (until the qmaster shows the sensor's value), and how long until the complex it
# reported can be deleted after the sensor is removed again, at a given global load_report_time.
# The execd learns of a configuration change at its next load report (docs/local-cluster.md).
#
#   bash benchmarks/load_sensor_pickup.sh [LOAD_REPORT_TIME]     # e.g. 0:0:40; default: as it is
#
# Run as root on this machine with the local cluster up (playbooks/local_cluster.yml). It puts the
# global load_report_time back, and the master's local configuration as it found it, at the end.
set -euo pipefail
export SGE_ROOT=${SGE_ROOT:-/var/lib/gridengine} SGE_CELL=${SGE_CELL:-default} LC_ALL=C
host=$(uname -n)
complex=gebprobe
want=${1:-}
if [ -n "$want" ] && ! [[ $want =~ ^[0-9]{1,6}(:[0-9]{1,2}){0,2}$ ]]; then
  echo "LOAD_REPORT_TIME must be a time [[h:]m:]s, got '$want'" >&2
  exit 2
fi
if qconf -sc | grep -q "^$complex "; then
  echo "a complex $complex exists already: not this script's to change" >&2
  exit 1
fi
work=$(mktemp -d)            # private (0700): the sensor and the qconf files
chmod 0755 "$work"           # the execd runs the sensor as root: it only needs to read it
old_global=$(qconf -sconf global | awk '$1 == "load_report_time" {print $2}')
qconf -sconf "$host" | sed '1{/^#/d}' >"$work/localconf.orig"

cleanup() {
  set +e
  cp "$work/localconf.orig" "$work/$host"
  qconf -Mconf "$work/$host" >/dev/null
  if [ -n "$want" ]; then
    qconf -sconf global | sed '1{/^#/d}' | sed "s/^load_report_time .*/load_report_time $old_global/" >"$work/global"
    qconf -Mconf "$work/global" >/dev/null
  fi
  if qconf -sc | grep -q "^$complex "; then
    for _ in $(seq 1 120); do
      qconf -sc | grep -v "^$complex " >"$work/complexes"
      qconf -Mc "$work/complexes" >/dev/null 2>&1 && break
      sleep 1
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "$want" ]; then
  qconf -sconf global | sed '1{/^#/d}' | sed "s/^load_report_time .*/load_report_time $want/" >"$work/global"
  qconf -Mconf "$work/global" >/dev/null
  echo "global load_report_time $old_global -> $want; waiting 2 reports of the old time for the execd to take it"
  sleep "$(( 2 * $(echo "$old_global" | awk -F: '{s=0; for (i=1; i<=NF; i++) s=s*60+$i; print s}') ))"
fi
echo "global load_report_time now: $(qconf -sconf global | awk '$1 == "load_report_time" {print $2}')"

cat >"$work/sensor.sh" <<EOF
#!/bin/sh
while read line; do
  [ "\$line" = quit ] && exit 0
  echo begin
  echo "$host:$complex:7"
  echo end
done
EOF
chmod 0755 "$work/sensor.sh"
qconf -sc >"$work/complexes"
echo "$complex $complex INT <= YES NO 0 0" >>"$work/complexes"
qconf -Mc "$work/complexes" >/dev/null

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

{ cat "$work/localconf.orig"; echo "load_sensor $work/sensor.sh"; } >"$work/$host"
t=$(now)
qconf -Mconf "$work/$host" >/dev/null
started=""
for _ in $(seq 1 600); do
  if [ -z "$started" ] && pgrep -f "$work/sensor.sh" >/dev/null; then
    started=$(since "$t")
  fi
  if qhost -F "$complex" -h "$host" | grep -q "$complex=7"; then
    printf 'sensor added: started after %.1f s, its value at the qmaster after %.1f s\n' "${started:-0}" "$(since "$t")"
    break
  fi
  sleep 0.5
done

cp "$work/localconf.orig" "$work/$host"
t=$(now)
qconf -Mconf "$work/$host" >/dev/null
for _ in $(seq 1 600); do
  qconf -sc | grep -v "^$complex " >"$work/complexes"
  if qconf -Mc "$work/complexes" >/dev/null 2>&1; then
    printf 'sensor removed: its complex could be deleted after %.1f s\n' "$(since "$t")"
    break
  fi
  sleep 0.5
done
