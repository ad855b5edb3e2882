# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture Grid Engine accounting records of known job shapes from the real local cluster.

Run as root on the qmaster of the local test cluster (docs/local-cluster.md: qmaster ``vm`` with
its own execd, nodes ``node001`` and ``node002``, queue ``all.q`` with 2 slots per host, PE
``smp``, job user ``tester``), with nothing else queued::

    python3 tests/capture/capture_accounting.py --out tests/unit/fixtures/sge/captured/accounting

It submits, as the job user, jobs named ``capacct_...``:

* ``capacct_ok``: a serial job that sleeps 2 s and exits 0;
* ``capacct_exit3``: a serial job that exits 3;
* ``capacct_array``: an array job ``-t 1-3`` (one record per task);
* ``capacct_pe``: a 2-slot job of PE ``smp``;
* ``capacct_nostart``: a job whose working directory does not exist (it fails before it starts:
  a record with ``failed`` set and no run time);

waits until every one has its accounting record, and writes

    accounting       the header lines of ``$SGE_ROOT/$SGE_CELL/common/accounting`` and the
                     records of these jobs, as Grid Engine wrote them (sge_accounting(5))
    qacct_j.txt      ``LC_ALL=C qacct -j <id>`` of each job, one after the other
    meta.json        when, the job ids by name, the Grid Engine version

plus one provenance line per file in ../fixtures/sge/PROVENANCE.md, between this program's own
markers. The records are copied, never edited; the program submits nothing else, deletes the job
left in error state (``capacct_nostart``, state Eqw) at the end, and changes no configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SGE_ROOT = os.environ.get("SGE_ROOT", "/var/lib/gridengine")
SGE_CELL = os.environ.get("SGE_CELL", "default")
ENV = dict(os.environ, SGE_ROOT=SGE_ROOT, SGE_CELL=SGE_CELL, LC_ALL="C")
JOB_USER = "tester"
HERE = os.path.dirname(os.path.abspath(__file__))
PROVENANCE = os.path.join(HERE, "..", "unit", "fixtures", "sge", "PROVENANCE.md")
BEGIN = "<!-- begin: written by tests/capture/capture_accounting.py, do not edit by hand -->"
END = "<!-- end: written by tests/capture/capture_accounting.py -->"
# name: (qsub options, the job script's body)
SHAPES = {
    "capacct_ok": ([], "sleep 2\nexit 0\n"),
    "capacct_exit3": ([], "sleep 1\nexit 3\n"),
    "capacct_array": (["-t", "1-3"], "sleep 1\nexit 0\n"),
    "capacct_pe": (["-pe", "smp", "2"], "sleep 2\nexit 0\n"),
    "capacct_nostart": (["-wd", "/nonexistent-capacct"], "exit 0\n"),
}
EXPECTED_RECORDS = {"capacct_ok": 1, "capacct_exit3": 1, "capacct_array": 3, "capacct_pe": 1, "capacct_nostart": 1}


def run(argv, **kwargs):
    return subprocess.run(argv, env=ENV, capture_output=True, text=True, check=False, timeout=120, **kwargs)


def submit(name, options, body, scripts):
    """qsub a job script (written into ``scripts``, readable by the job user) as the job user."""
    script = os.path.join(scripts, name + ".sh")
    with open(script, "w", encoding="ascii") as handle:
        handle.write("#!/bin/sh\n" + body)
    os.chmod(script, 0o755)
    argv = ["runuser", "-u", JOB_USER, "--", "qsub", "-terse", "-N", name, "-o", "/dev/null", "-e", "/dev/null",
            "-S", "/bin/sh"] + options + [script]
    proc = run(argv, cwd=scripts)
    if proc.returncode != 0:
        sys.exit("capture_accounting: qsub of %s failed: %s" % (name, proc.stderr.strip()))
    return int(proc.stdout.strip().split(".")[0])


def records(path, ids):
    """(header lines, {job id: [record lines]}) of the accounting file."""
    header, found = [], {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("#"):
                if not found:
                    header.append(line)
                continue
            fields = line.rstrip("\n").split(":")
            if len(fields) > 5 and fields[5].isdigit() and int(fields[5]) in ids:
                found.setdefault(int(fields[5]), []).append(line)
    return header, found


def provenance(out, stamp, version, ids):
    rel = os.path.relpath(out, os.path.join(HERE, "..", "unit", "fixtures", "sge"))
    what = ("jobs capacct_ok (exit 0), capacct_exit3 (exit 3), capacct_array (-t 1-3), capacct_pe (PE smp, 2 slots), "
            "capacct_nostart (-wd of a missing directory: fails before it starts); ids %s" % json.dumps(ids, sort_keys=True))
    where = ("on the local test cluster (Debian gridengine %s; qmaster vm with its execd, nodes node001 and node002)"
             % version)
    lines = [BEGIN,
             "- `%s/accounting`: real records of `$SGE_ROOT/default/common/accounting` (header lines and these jobs' "
             "lines, copied unedited) captured %s by `python3 tests/capture/capture_accounting.py --out %s` %s: %s"
             % (rel, stamp, os.path.relpath(out, os.path.join(HERE, "..", "..")), where, what),
             "- `%s/qacct_j.txt`: real `LC_ALL=C qacct -j <id>` of the same jobs, same capture" % rel,
             END]
    text = open(PROVENANCE, encoding="utf-8").read() if os.path.exists(PROVENANCE) else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + "\n".join(lines) + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
    tmp = PROVENANCE + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, PROVENANCE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--out", required=True, help="directory for accounting, qacct_j.txt, meta.json")
    parser.add_argument("--timeout", type=int, default=300)
    opts = parser.parse_args()
    accounting = os.path.join(SGE_ROOT, SGE_CELL, "common", "accounting")
    version = run(["dpkg-query", "-W", "-f", "${Version}", "gridengine-master"]).stdout.strip() or "unknown"
    scripts = tempfile.mkdtemp(prefix="capacct-")  # 0700 and root's: opened for the job user below
    os.chmod(scripts, 0o755)
    ids = {name: submit(name, options, body, scripts) for name, (options, body) in SHAPES.items()}
    deadline = time.time() + opts.timeout
    while True:
        _header, found = records(accounting, set(ids.values()))
        if all(len(found.get(ids[name], [])) >= count for name, count in EXPECTED_RECORDS.items()):
            break
        if time.time() > deadline:
            sys.exit("capture_accounting: no accounting record after %d s for %s" % (opts.timeout, sorted(
                name for name, count in EXPECTED_RECORDS.items() if len(found.get(ids[name], [])) < count)))
        time.sleep(2)
    time.sleep(2)  # a record is written whole, but give qacct's reader a quiet file
    header, found = records(accounting, set(ids.values()))
    os.makedirs(opts.out, exist_ok=True)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    qacct = []
    for name in SHAPES:
        proc = run(["qacct", "-j", str(ids[name])])
        if proc.returncode != 0:
            sys.exit("capture_accounting: qacct -j %d failed: %s" % (ids[name], proc.stderr.strip()))
        qacct.append(proc.stdout)
    outputs = {
        "accounting": "".join(header) + "".join(line for name in SHAPES for line in found[ids[name]]),
        "qacct_j.txt": "".join(qacct),
        "meta.json": json.dumps({"captured": stamp, "jobs": ids, "gridengine": version}, indent=1, sort_keys=True) + "\n",
    }
    for fname, text in outputs.items():
        fd, tmp = tempfile.mkstemp(dir=opts.out, prefix="." + fname)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(opts.out, fname))
    provenance(opts.out, stamp, version, ids)
    # the job that failed before it started stays listed in error state (Eqw): delete it, so that
    # nothing of this program is left queued
    run(["qdel", str(ids["capacct_nostart"])])
    for name in SHAPES:
        os.unlink(os.path.join(scripts, name + ".sh"))
    os.rmdir(scripts)
    print("capture_accounting: %d records of %d jobs into %s" % (
        sum(len(found[i]) for i in ids.values()), len(ids), opts.out))


if __name__ == "__main__":
    main()
