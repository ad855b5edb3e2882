# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture what Grid Engine prints for host lists, managers, operators, projects, user sets and
daemon status, on the real local cluster, for the tables of sge_host_list, sge_manager,
sge_project, sge_userset and sge_daemon.

Run as root on the qmaster of the local test cluster (docs/local-cluster.md: qmaster ``vm`` with
its own execd, nodes ``node001`` and ``node002``, job user ``tester``)::

    python3 tests/capture/capture_access.py --out tests/unit/fixtures/qconf/captured_access

Every command's stdout, stderr and exit code are written unedited, one file per stream:
``<name>.out``, ``<name>.err`` and ``<name>.rc``; ``meta.json`` lists the commands in order with
when, and the Grid Engine version. One provenance line per command goes into
../unit/fixtures/qconf/PROVENANCE-access.md, between this program's own markers.

What it changes, and restores before it ends (also after a failure):

* a project ``capacc_prj`` (``qconf -Aprj``, ``-Mprj``, ``-dprj``);
* a user set ``capacc_us`` (``qconf -Au``, ``-Mu``, ``-dul``);
* the job user ``tester`` as an operator and as a manager (``qconf -ao``/``-do``,
  ``-am``/``-dm``), only when it was not one already;
* the submit host list: ``node001`` added and removed (``qconf -as``/``-ds``) when it was not a
  submit host.

It stops no daemon: the daemons' status is read with ``qping -info`` (qmaster and every execd the
qmaster lists), and a stopped daemon is shown by a ``qping`` to a port where nothing listens on
the qmaster host (``--closed-port``, default 1) and a ``qconf -sh`` with ``SGE_QMASTER_PORT`` set
to it (the answer of a qmaster that does not run).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

SGE_ROOT = os.environ.get("SGE_ROOT", "/var/lib/gridengine")
SGE_CELL = os.environ.get("SGE_CELL", "default")
ENV = dict(os.environ, SGE_ROOT=SGE_ROOT, SGE_CELL=SGE_CELL, LC_ALL="C")
JOB_USER = "tester"
PROJECT = "capacc_prj"
USERSET = "capacc_us"
SUBMIT_HOST = "node001"
HERE = os.path.dirname(os.path.abspath(__file__))
PROVENANCE = os.path.join(HERE, "..", "unit", "fixtures", "qconf", "PROVENANCE-access.md")
BEGIN = "<!-- begin: written by tests/capture/capture_access.py, do not edit by hand -->"
END = "<!-- end: written by tests/capture/capture_access.py -->"


class Capture(object):
    def __init__(self, out):
        self.out = out
        self.done = []
        self.undo = []
        os.makedirs(out, exist_ok=True)

    def run(self, name, argv, env=None, note=""):
        """Run ``argv`` and keep its stdout, stderr and exit code as ``name``.*"""
        proc = subprocess.run(argv, env=env or ENV, capture_output=True, text=True, check=False,
                              timeout=120)
        for ext, text in (("out", proc.stdout), ("err", proc.stderr), ("rc", "%d\n" % proc.returncode)):
            fd, tmp = tempfile.mkstemp(dir=self.out, prefix="." + name)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, os.path.join(self.out, "%s.%s" % (name, ext)))
        self.done.append({"name": name, "argv": argv, "rc": proc.returncode, "note": note,
                          "env": {k: v for k, v in (env or {}).items() if k == "SGE_QMASTER_PORT"}})
        return proc

    def with_file(self, name, option, text, note=""):
        """``qconf OPTION FILE`` with ``text`` in a private temporary file."""
        fd, path = tempfile.mkstemp(prefix="capacc-", suffix=".conf")
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(text)
            return self.run(name, ["qconf", option, path], note=note + " (object file: %r)" % text)
        finally:
            os.unlink(path)


def lines(proc):
    return [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]


def silent(argv):
    return subprocess.run(argv, env=ENV, capture_output=True, text=True, check=False, timeout=120)


def qmaster_port():
    if os.environ.get("SGE_QMASTER_PORT"):
        return int(os.environ["SGE_QMASTER_PORT"])
    try:
        return socket.getservbyname("sge_qmaster", "tcp")
    except OSError:
        return 6444


def execd_port():
    if os.environ.get("SGE_EXECD_PORT"):
        return int(os.environ["SGE_EXECD_PORT"])
    try:
        return socket.getservbyname("sge_execd", "tcp")
    except OSError:
        return 6445


def capture(cap, closed_port):
    master = open(os.path.join(SGE_ROOT, SGE_CELL, "common", "act_qmaster"), encoding="ascii").read().split()[0]
    # -- lists --------------------------------------------------------------------------------
    cap.run("qconf_sh", ["qconf", "-sh"], note="administrative hosts")
    submit = cap.run("qconf_ss", ["qconf", "-ss"], note="submit hosts")
    managers = cap.run("qconf_sm", ["qconf", "-sm"], note="managers")
    operators = cap.run("qconf_so", ["qconf", "-so"], note="operators (the list as found)")
    cap.run("qconf_sul", ["qconf", "-sul"], note="user sets")
    cap.run("qconf_su_arusers", ["qconf", "-su", "arusers"], note="the installer's ACL arusers")
    cap.run("qconf_su_defaultdepartment", ["qconf", "-su", "defaultdepartment"],
            note="the installer's department")
    projects = cap.run("qconf_sprjl_before", ["qconf", "-sprjl"], note="projects (the list as found)")
    cap.run("qconf_sprj_missing", ["qconf", "-sprj", "capacc_missing"], note="a project that does not exist")
    cap.run("qconf_su_missing", ["qconf", "-su", "capacc_missing"], note="a user set that does not exist")

    # -- submit host added and removed -----------------------------------------------------------
    if SUBMIT_HOST not in lines(submit):
        cap.undo.append(["qconf", "-ds", SUBMIT_HOST])
        cap.run("qconf_as", ["qconf", "-as", SUBMIT_HOST], note="add a submit host")
        cap.run("qconf_as_again", ["qconf", "-as", SUBMIT_HOST], note="add it again")
        cap.run("qconf_ss_with_node001", ["qconf", "-ss"], note="submit hosts with node001")
        cap.run("qconf_ds", ["qconf", "-ds", SUBMIT_HOST], note="remove it")
        cap.undo.pop()
        cap.run("qconf_ds_again", ["qconf", "-ds", SUBMIT_HOST], note="remove it again")
    cap.run("qconf_dh_unknown", ["qconf", "-dh", "capacc-nosuch"], note="remove an admin host that does not resolve")

    # -- operator and manager ------------------------------------------------------------------
    if JOB_USER not in lines(operators):
        cap.undo.append(["qconf", "-do", JOB_USER])
        cap.run("qconf_ao", ["qconf", "-ao", JOB_USER], note="add an operator")
        cap.run("qconf_so_with_tester", ["qconf", "-so"], note="operators with tester")
        cap.run("qconf_do", ["qconf", "-do", JOB_USER], note="remove the operator")
        cap.undo.pop()
        cap.run("qconf_so_after", ["qconf", "-so"], note="operators after")
    if JOB_USER not in lines(managers):
        cap.undo.append(["qconf", "-dm", JOB_USER])
        cap.run("qconf_am", ["qconf", "-am", JOB_USER], note="add a manager")
        cap.run("qconf_sm_with_tester", ["qconf", "-sm"], note="managers with tester")
        cap.run("qconf_dm", ["qconf", "-dm", JOB_USER], note="remove the manager")
        cap.undo.pop()

    # -- project --------------------------------------------------------------------------------
    if PROJECT in lines(projects):
        sys.exit("capture_access: project %s exists already; delete it first" % PROJECT)
    cap.undo.append(["qconf", "-dprj", PROJECT])
    cap.with_file("qconf_Aprj", "-Aprj", "name %s\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n" % PROJECT,
                  note="add a project")
    cap.run("qconf_sprjl", ["qconf", "-sprjl"], note="projects with %s" % PROJECT)
    cap.run("qconf_sprj", ["qconf", "-sprj", PROJECT], note="the new project")
    cap.with_file("qconf_Aprj_again", "-Aprj", "name %s\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n" % PROJECT,
                  note="add it again")
    cap.with_file("qconf_Mprj", "-Mprj", "name %s\noticket 5\nfshare 100\nacl arusers deadlineusers\nxacl NONE\n"
                  % PROJECT, note="change oticket, fshare and acl (two names, separated by a space)")
    cap.run("qconf_sprj_changed", ["qconf", "-sprj", PROJECT], note="the changed project")
    cap.run("qconf_dprj", ["qconf", "-dprj", PROJECT], note="delete the project")
    cap.undo.pop()
    cap.run("qconf_dprj_again", ["qconf", "-dprj", PROJECT], note="delete it again")

    # -- user set -------------------------------------------------------------------------------
    cap.undo.append(["qconf", "-dul", USERSET])
    cap.with_file("qconf_Au", "-Au", "name %s\ntype ACL\nfshare 0\noticket 0\nentries %s,@%s\n"
                  % (USERSET, JOB_USER, JOB_USER), note="add an ACL with a user and a group")
    cap.run("qconf_su", ["qconf", "-su", USERSET], note="the new user set")
    cap.with_file("qconf_Mu", "-Mu", "name %s\ntype ACL,DEPT\nfshare 10\noticket 0\nentries %s\n"
                  % (USERSET, JOB_USER), note="make it ACL and DEPT with one entry")
    cap.run("qconf_su_changed", ["qconf", "-su", USERSET], note="the changed user set")
    cap.run("qconf_dul", ["qconf", "-dul", USERSET], note="delete the user set")
    cap.undo.pop()
    cap.run("qconf_dul_again", ["qconf", "-dul", USERSET], note="delete it again")

    # -- daemons --------------------------------------------------------------------------------
    cap.run("qping_qmaster", ["qping", "-info", master, str(qmaster_port()), "qmaster", "1"],
            note="the running qmaster")
    for host in lines(silent(["qconf", "-sel"])):
        cap.run("qping_execd_%s" % host, ["qping", "-info", host, str(execd_port()), "execd", "1"],
                note="the execd of %s" % host)
        cap.run("qhost_h_%s" % host, ["qhost", "-h", host, "-xml"], note="its load values at the qmaster")
    cap.run("qping_closed_port", ["qping", "-info", master, str(closed_port), "execd", "1"],
            note="a port where nothing listens (a stopped daemon)")
    cap.run("qconf_sh_no_qmaster", ["qconf", "-sh"], env=dict(ENV, SGE_QMASTER_PORT=str(closed_port)),
            note="qconf -sh to a port where no qmaster listens")


def provenance(cap, out, stamp, version):
    rel = os.path.relpath(out, os.path.dirname(PROVENANCE))
    lines_ = [BEGIN,
              "Captured %s by `python3 tests/capture/capture_access.py --out %s` on the local test cluster "
              "(Debian gridengine-master %s, SoGE 8.1.9; qmaster vm with its execd, nodes node001 and node002). "
              "Each command's stdout, stderr and exit code are `%s/<name>.out`, `.err`, `.rc`, unedited:"
              % (stamp, os.path.relpath(out, os.path.join(HERE, "..", "..")), version, rel), ""]
    for item in cap.done:
        env = " ".join("%s=%s" % kv for kv in item["env"].items())
        lines_.append("- `%s`: `LC_ALL=C %s%s` (rc %d): %s" % (
            item["name"], (env + " ") if env else "", " ".join(item["argv"]), item["rc"], item["note"]))
    lines_.append(END)
    text = open(PROVENANCE, encoding="utf-8").read() if os.path.exists(PROVENANCE) else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + "\n".join(lines_) + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines_) + "\n"
    tmp = PROVENANCE + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, PROVENANCE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--out", required=True, help="directory for the <name>.out/.err/.rc files and meta.json")
    parser.add_argument("--closed-port", type=int, default=1,
                        help="a TCP port of the qmaster host where nothing listens (default 1)")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("capture_access: run it as root on the qmaster host")
    version = silent(["dpkg-query", "-W", "-f", "${Version}", "gridengine-master"]).stdout.strip() or "unknown"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cap = Capture(os.path.abspath(opts.out))
    try:
        capture(cap, opts.closed_port)
    finally:
        for argv in reversed(cap.undo):
            proc = silent(argv)
            print("capture_access: restored with %s (rc %d)" % (" ".join(argv), proc.returncode))
    with open(os.path.join(cap.out, "meta.json"), "w", encoding="utf-8") as handle:
        json.dump({"captured": stamp, "gridengine": version, "commands": cap.done}, handle, indent=1,
                  sort_keys=True)
        handle.write("\n")
    provenance(cap, cap.out, stamp, version)
    print("capture_access: %d commands into %s" % (len(cap.done), cap.out))


if __name__ == "__main__":
    main()
