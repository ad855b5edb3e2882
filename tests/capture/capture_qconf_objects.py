# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture what qconf prints for the objects of sge_complex, sge_pe, sge_sched_conf and sge_conf.

Run as root (a Grid Engine manager) on the qmaster of the local test cluster (docs/local-cluster.md:
qmaster ``vm`` with its own execd, nodes ``node001`` and ``node002``, PE ``smp``)::

    python3 tests/capture/capture_qconf_objects.py --out tests/unit/fixtures/qconf/captured_objects

Only reads; nothing on the cluster is changed. It writes, each the unedited stdout of one command
run with ``LC_ALL=C``:

    qconf_sc.txt                 qconf -sc
    qconf_spl.txt                qconf -spl
    qconf_sp_smp.txt             qconf -sp smp
    qconf_ssconf.txt             qconf -ssconf
    qconf_sconf_global.txt       qconf -sconf
    qconf_sconfl.txt             qconf -sconfl (the hosts with a local configuration)
    qconf_sconf_<master>.txt     qconf -sconf <master> (the master's local configuration)
    qconf_se_global.txt          qconf -se global (the global host's attributes)
    qconf_ap_editor_template.txt the file ``qconf -ap NAME`` hands to $EDITOR: an EDITOR script
                                 copies it and exits 1, so no PE is added (as the queue template
                                 of ../unit/fixtures/qconf/ was captured)
    meta.json                    when, the Grid Engine version, and the exit code, stdout and
                                 stderr of the commands whose answer is a message: ``qconf -sp``
                                 of a PE that does not exist, ``qconf -sconf`` of an execution
                                 host without a local configuration (when there is one), and
                                 ``qconf -ap`` with the copying editor

plus one provenance line per file in ../unit/fixtures/qconf/PROVENANCE-objects.md, between this
program's own markers. After it ran, the unit tables test_sge_{complex,pe,sched_conf,conf,exec_host}.yaml
can read these files instead of the package stand-ins (each table names its stand-in in one anchor).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SGE_ROOT = os.environ.get("SGE_ROOT", "/var/lib/gridengine")
SGE_CELL = os.environ.get("SGE_CELL", "default")
ENV = dict(os.environ, SGE_ROOT=SGE_ROOT, SGE_CELL=SGE_CELL, LC_ALL="C")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "unit", "fixtures", "qconf"))
PROVENANCE = os.path.join(FIXTURES, "PROVENANCE-objects.md")
BEGIN = "<!-- begin: written by tests/capture/capture_qconf_objects.py, do not edit by hand -->"
END = "<!-- end: written by tests/capture/capture_qconf_objects.py -->"
MISSING_PE = "geb-capture-nosuch-pe"
HOST_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9.-]{0,252}\Z")


def run(argv, env=None):
    return subprocess.run(argv, env=env or ENV, capture_output=True, text=True, check=False, timeout=60)


def must(argv):
    proc = run(argv)
    if proc.returncode != 0:
        sys.exit("capture_qconf_objects: %s failed (rc %d): %s"
                 % (" ".join(argv), proc.returncode, proc.stderr.strip()))
    return proc.stdout


def answer(argv, env=None):
    proc = run(argv, env)
    return {"argv": argv, "rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def editor_template(workdir):
    """The file qconf -ap hands to $EDITOR, copied by an editor that then exits 1."""
    copy = os.path.join(workdir, "template")
    editor = os.path.join(workdir, "editor.sh")
    with open(editor, "w", encoding="ascii") as handle:
        handle.write('#!/bin/sh\ncp "$1" "%s"\nexit 1\n' % copy)
    os.chmod(editor, 0o700)
    result = answer(["qconf", "-ap", MISSING_PE], env=dict(ENV, EDITOR=editor, VISUAL=editor))
    text = None
    if os.path.exists(copy):
        with open(copy, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    return text, result


def write(out, name, text):
    fd, tmp = tempfile.mkstemp(dir=out, prefix="." + name)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(out, name))


def provenance(out, stamp, version, master, files):
    rel = os.path.relpath(out, FIXTURES)
    where = ("captured %s by `python3 tests/capture/capture_qconf_objects.py --out %s` on the local test "
             "cluster (Debian gridengine-master %s; qmaster %s), read only"
             % (stamp, os.path.relpath(out, os.path.join(HERE, "..", "..")), version, master))
    described = [(name, what if what.startswith("the ") else "real `LC_ALL=C %s`" % what) for name, what in files]
    lines = [BEGIN] + ["- `%s/%s`: %s, %s" % (rel, name, what, where) for name, what in described] + [END]
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
    parser.add_argument("--out", required=True, help="directory for the captured files and meta.json")
    opts = parser.parse_args()
    with open(os.path.join(SGE_ROOT, SGE_CELL, "common", "act_qmaster"), encoding="ascii") as handle:
        master = handle.read().strip()
    if not HOST_RE.match(master):
        sys.exit("capture_qconf_objects: act_qmaster names %r, not a host name" % master)
    version = run(["dpkg-query", "-W", "-f", "${Version}", "gridengine-master"]).stdout.strip() or "unknown"
    if MISSING_PE in must(["qconf", "-spl"]).split():
        sys.exit("capture_qconf_objects: a PE named %s exists; delete it first" % MISSING_PE)

    files = [
        ("qconf_sc.txt", "qconf -sc"),
        ("qconf_spl.txt", "qconf -spl"),
        ("qconf_sp_smp.txt", "qconf -sp smp"),
        ("qconf_ssconf.txt", "qconf -ssconf"),
        ("qconf_sconf_global.txt", "qconf -sconf"),
        ("qconf_sconfl.txt", "qconf -sconfl"),
        ("qconf_sconf_%s.txt" % master, "qconf -sconf %s" % master),
        ("qconf_se_global.txt", "qconf -se global"),
    ]
    texts = dict((name, must(what.split())) for name, what in files)
    answers = {"sp_missing": answer(["qconf", "-sp", MISSING_PE])}
    local = set(texts["qconf_sconfl.txt"].split())
    without = [h for h in must(["qconf", "-sel"]).split() if h not in local and HOST_RE.match(h)]
    if without:
        answers["sconf_missing"] = answer(["qconf", "-sconf", without[0]])
    workdir = tempfile.mkdtemp(prefix="capqconf-")
    try:
        template, answers["ap_editor"] = editor_template(workdir)
    finally:
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)
    if MISSING_PE in must(["qconf", "-spl"]).split():
        sys.exit("capture_qconf_objects: qconf -ap added %s although the editor exited 1; delete it "
                 "(qconf -dp %s)" % (MISSING_PE, MISSING_PE))
    if template is not None:
        texts["qconf_ap_editor_template.txt"] = template
        files.append(("qconf_ap_editor_template.txt", "the file `qconf -ap %s` handed to $EDITOR (an editor "
                      "script copied it and exited 1, nothing was added)" % MISSING_PE))

    os.makedirs(opts.out, exist_ok=True)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for name, text in texts.items():
        write(opts.out, name, text)
    write(opts.out, "meta.json", json.dumps({"captured": stamp, "gridengine": version, "master": master,
                                             "answers": answers}, indent=1, sort_keys=True) + "\n")
    files.append(("meta.json", "the answers (rc, stdout, stderr) of `qconf -sp %s`, `qconf -sconf` of an exec "
                  "host without a local configuration and `qconf -ap` with the copying editor" % MISSING_PE))
    provenance(opts.out, stamp, version, master, files)
    print("capture_qconf_objects: %d files into %s" % (len(files), opts.out))


if __name__ == "__main__":
    main()
