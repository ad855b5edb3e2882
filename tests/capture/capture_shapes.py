# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture every job shape of issue 19 from the real local Grid Engine cluster.

Run as root on the qmaster of the local test cluster (docs/local-cluster.md: qmaster ``vm`` with
its own execd, nodes ``node001`` and ``node002``, queue ``all.q`` with 2 slots per host, PE
``smp``, job user ``tester``), with nothing else queued or running::

    python3 tests/capture/capture_shapes.py --out tests/unit/fixtures/sge/captured

It adds temporary objects, all named ``cap_...`` (the host ``cap-ghost``: a host name cannot hold
an underscore), brings the cluster into each state below, saves for each state

    qstat_u_f_r.xml     LC_ALL=C qstat -u '*' -f -r -xml
    qstat_u.xml         LC_ALL=C qstat -u '*' -xml           (no -f, no -r)
    qstat_u_g_dt_r.xml  LC_ALL=C qstat -u '*' -g dt -r -xml  (one row per task and PE slot)
    qstat_u_g_dt.xml    LC_ALL=C qstat -u '*' -g dt -xml     (the same without -r)
    qhost_q.xml         LC_ALL=C qhost -q -xml
    qstat_g_c.xml       LC_ALL=C qstat -g c -xml
    meta.json           when it was taken, the job ids by job name, the Grid Engine version

plus ``qacct_j_pe.txt`` (``qacct -j`` of a finished ``$fill_up`` job that ran on two nodes) in the
first state and ``qacct_j_error.txt`` (the record of the job that failed to start) in the second,
writes one provenance line per file into ../fixtures/sge/PROVENANCE.md (its block between the
``capture_shapes.py`` markers is rewritten by every run), and removes everything it added in a
``finally:``. The cluster's configuration (``qconf -sql/-spl/-sel/-ssconf/-sq all.q``,
the host groups and ``/etc/hosts``) is compared before and after; a difference is printed as a
diff and the program exits 1.

The temporary objects:

* PE ``cap_fill`` (``$fill_up``, control_slaves TRUE) and ``cap_rr`` (``$round_robin``,
  job_is_first_task FALSE);
* ``all.q``'s pe_list gets ``cap_fill``; the scheduler gets ``max_reservation 10`` and
  ``default_duration 0:10:0`` (reservations need an end time for running jobs);
* queue ``cap_three.q``: 3 slots per host (all.q has 2), PE ``cap_rr``, on ``vm``, ``node001``,
  ``node002`` and ``cap-ghost``; the instance on node002 is disabled (``qmod -d``);
* exec host ``cap-ghost``: an address in 10.77.0.0/24 that nothing uses, in ``/etc/hosts`` with the
  marker ``# gridengine.balancer capture_shapes``; it never reports, so its queue instance is
  in state ``u``.

The states:

``pe_and_arrays``
    ``cap_pe_slots`` (smp 2, ``-q all.q@vm``: bound to a host) running on vm;
    ``cap_fill_up`` (cap_fill 4) running 2+2 on node001 and node002;
    ``cap_round_robin`` (cap_rr 2) running 1+1 in cap_three.q on vm and node001;
    ``cap_array_range`` (``-t 1-10``, ``-q cap_three.q``: bound to a queue) with tasks 1-4
    running, task 7 deleted while pending, so 5-6 and 8-10 wait (a comma list);
    ``cap_array_step`` (``-t 2-10:2``) waiting; ``cap_pe_waiting`` (cap_fill 2-4) waiting.
``mixed``
    ``cap_error`` (``-o /nonexistent/...``: Eqw); ``cap_array_states`` (``-t 1-6`` on
    ``all.q@node001``: tasks 1-2 Eqw, 3-4 qw, 5-6 hqw); ``cap_suspended`` (``qmod -sj``: s) and
    ``cap_host_bound`` (``-l h=node001``) running on node001; ``cap_queue_bound``
    (``-q cap_three.q``) running; ``cap_reserve`` (``-R y``, smp 2 on ``all.q@node001``)
    waiting (qstat does not show a resource reservation: its ``resv`` counts advance
    reservations only); an advance reservation (``qrsub``) of one slot on ``all.q@vm``; ``cap_held`` (``-h``: hqw); ``cap_no_such_memory``
    (``-l mem_free=999G``); ``cap_pe_too_wide`` (cap_fill 8 > the 6 slots of all.q) waiting
    while node002 is idle.

Standard library only; every command is an argv list, never a shell string.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse
import difflib
import functools
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

SGE_ROOT = "/var/lib/gridengine"
SGE_CELL = "default"
JOB_USER = "tester"
MASTER = "vm"
NODES = ("node001", "node002")
GHOST = "cap-ghost"
GHOST_ADDRESS = "10.77.0.231"     # nodes use .1-.30 (node K is .10+K); nothing uses .231
HOSTS_MARKER = "# gridengine.balancer capture_shapes"
PE_FILL = "cap_fill"
PE_RR = "cap_rr"
QUEUE = "cap_three.q"
QUEUE_SLOTS = 3
PROGRAM = "tests/capture/capture_shapes.py"
BEGIN = "<!-- begin: written by tests/capture/capture_shapes.py, do not edit by hand -->"
END = "<!-- end: written by tests/capture/capture_shapes.py -->"

ENV = {"SGE_ROOT": SGE_ROOT, "SGE_CELL": SGE_CELL, "LC_ALL": "C"}

CAPTURES = (
    # file name, argv
    ("qstat_u_f_r.xml", ["qstat", "-u", "*", "-f", "-r", "-xml"]),
    ("qstat_u.xml", ["qstat", "-u", "*", "-xml"]),
    ("qstat_u_g_dt_r.xml", ["qstat", "-u", "*", "-g", "dt", "-r", "-xml"]),
    ("qstat_u_g_dt.xml", ["qstat", "-u", "*", "-g", "dt", "-xml"]),
    ("qhost_q.xml", ["qhost", "-q", "-xml"]),
    ("qstat_g_c.xml", ["qstat", "-g", "c", "-xml"]),
)


class CaptureError(Exception):
    pass


def log(text):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), text))
    sys.stderr.flush()


def shown(argv):
    out = []
    for arg in argv:
        if not arg or re.search(r"[^\w@%+=:,./-]", arg):
            out.append("'" + arg.replace("'", "'\"'\"'") + "'")
        else:
            out.append(arg)
    return " ".join(out)


def run(argv, check=True, timeout=60, user=False):
    """Run ``argv`` (a list) with the Grid Engine environment; as the job user when ``user``."""
    assert isinstance(argv, list)
    if user:
        argv = ["runuser", "-u", JOB_USER, "--", "env"] + ["%s=%s" % kv for kv in sorted(ENV.items())] + argv
    env = dict(os.environ)
    env.update(ENV)
    proc = subprocess.run(argv, env=env, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise CaptureError("%s failed (rc %d): %s%s" % (
            shown(argv), proc.returncode, proc.stderr.decode("utf-8", "replace").strip(),
            proc.stdout.decode("utf-8", "replace").strip()))
    return proc


def out(argv, **kwargs):
    return run(argv, **kwargs).stdout.decode("utf-8", "replace")


def wait_for(what, predicate, timeout=90, poll=1.0):
    deadline = time.time() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.time() > deadline:
            raise CaptureError("timed out after %ds waiting for %s" % (timeout, what))
        time.sleep(poll)


def retry(what, argv, ok, timeout=90):
    """qconf commands that name a host the qmaster may not resolve yet (its negative cache)."""
    def attempt():
        proc = run(argv, check=False)
        text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        if proc.returncode == 0 and ok(text):
            return True
        log("  %s: %s (retrying)" % (what, text.strip()))
        return False
    wait_for(what, attempt, timeout=timeout, poll=3)


# ---------------------------------------------------------------------------------------------
# reading the cluster
# ---------------------------------------------------------------------------------------------

def job_rows():
    """Rows of plain ``qstat -u '*' -xml``: [{id, state, tasks, slots, queue}] (running tasks are
    rows of their own, pending tasks of one job and state are one row with a range)."""
    root = ET.fromstring(run(["qstat", "-u", "*", "-xml"]).stdout)
    rows = []
    for job in root.iter("job_list"):
        rows.append({
            "id": int(job.findtext("JB_job_number")),
            "name": job.findtext("JB_name"),
            "state": job.findtext("state") or "",
            "tasks": job.findtext("tasks"),
            "slots": int(job.findtext("slots") or 1),
            "queue": job.findtext("queue_name"),
        })
    return rows


def rows_of(jid):
    return [r for r in job_rows() if r["id"] == jid]


def in_state(jid, state):
    return any(r["state"] == state for r in rows_of(jid))


def task_states(jid):
    """{state: number of tasks} of a job (ranges counted)."""
    counts = {}
    for row in rows_of(jid):
        n = 0
        for part in (row["tasks"] or "1").split(","):
            rng, _sep, step = part.partition(":")
            first, _sep, last = rng.partition("-")
            n += (int(last or first) - int(first)) // int(step or 1) + 1
        counts[row["state"]] = counts.get(row["state"], 0) + n
    return counts


def queue_rows():
    """{queue instance: {slots_used, slots_resv, state}} from ``qstat -f -xml``."""
    root = ET.fromstring(run(["qstat", "-u", "*", "-f", "-xml"]).stdout)
    out_ = {}
    for q in root.iter("Queue-List"):
        out_[q.findtext("name")] = {"used": int(q.findtext("slots_used") or 0),
                                    "resv": int(q.findtext("slots_resv") or 0),
                                    "state": q.findtext("state") or ""}
    return out_


def granted_hosts(jid):
    """{host: slots} of a running job, from ``qstat -f -xml`` (one row per queue instance)."""
    root = ET.fromstring(run(["qstat", "-u", "*", "-f", "-xml"]).stdout)
    hosts = {}
    for q in root.iter("Queue-List"):
        host = q.findtext("name").partition("@")[2]
        for job in q.iter("job_list"):
            if int(job.findtext("JB_job_number")) == jid:
                hosts[host] = hosts.get(host, 0) + int(job.findtext("slots") or 1)
    return hosts


def config_view():
    """The configuration that must be the same before and after, as {name: text}."""
    view = {}
    for name, argv in (("qconf -sql", ["qconf", "-sql"]), ("qconf -spl", ["qconf", "-spl"]),
                       ("qconf -sel", ["qconf", "-sel"]), ("qconf -ssconf", ["qconf", "-ssconf"]),
                       ("qconf -sq all.q", ["qconf", "-sq", "all.q"]),
                       ("qconf -shgrpl", ["qconf", "-shgrpl"]), ("qrstat -u '*'", ["qrstat", "-u", "*"])):
        proc = run(argv, check=False)
        view[name] = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    for group in view["qconf -shgrpl"].split():
        view["qconf -shgrp " + group] = out(["qconf", "-shgrp", group])
    with open("/etc/hosts") as handle:
        view["/etc/hosts"] = handle.read()
    return view


def diff_views(before, after):
    lines = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name, ""), after.get(name, "")
        if a != b:
            lines.extend(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                              "before: " + name, "after: " + name))
    return "".join(lines)


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------

class Capture(object):

    def __init__(self, out_dir, provenance):
        self.out_dir = out_dir
        self.provenance = provenance
        self.jobs = []                 # every job id submitted (all deleted at the end)
        self.names = {}                # state -> {job name: id}
        self.added = []                # what to undo, in order of adding
        self.stage = None
        self.work = None
        self.version = None
        self.records = []              # (relative path, command, state, what it holds)
        self.taken = {}                # state -> ISO UTC time of the capture
        self.sconf = self.all_q = None  # the scheduler configuration and all.q as they were
        self.qacct = None              # (job id, qacct -j text, hosts, records)
        self.ars = []                  # advance reservations made (all deleted at the end)
        self.error_qacct = None        # (job id, qacct -j text or None) of cap_error

    # -- preconditions --------------------------------------------------------------------
    def check_cluster(self):
        if os.geteuid() != 0:
            raise CaptureError("run as root on the qmaster (qconf, runuser, /etc/hosts)")
        self.version = out(["dpkg-query", "-W", "-f", "${Version}", "gridengine-master"]).strip()
        pwd.getpwnam(JOB_USER)
        leftovers = []
        if QUEUE in out(["qconf", "-sql"]).split():
            leftovers.append("queue " + QUEUE)
        for pe in (PE_FILL, PE_RR):
            if pe in out(["qconf", "-spl"]).split():
                leftovers.append("PE " + pe)
        if GHOST in out(["qconf", "-sel"]).split():
            leftovers.append("exec host " + GHOST)
        with open("/etc/hosts") as handle:
            if HOSTS_MARKER in handle.read():
                leftovers.append("/etc/hosts line " + HOSTS_MARKER)
        if leftovers:
            raise CaptureError("left over from an interrupted run: %s; remove them with --cleanup"
                               % ", ".join(leftovers))
        rows = job_rows()
        if rows:
            raise CaptureError("the cluster is not idle (%d job rows in qstat -u '*'): the states "
                               "need every slot; run when nothing else is queued" % len(rows))
        root = ET.fromstring(run(["qhost", "-q", "-xml"]).stdout)
        hosts = {}
        for host in root.iter("host"):
            name = host.get("name")
            if name == "global":
                continue
            load = [v.text for v in host.iter("hostvalue") if v.get("name") == "load_avg"]
            slots = dict((q.get("name"), [v.text for v in q.iter("queuevalue") if v.get("name") == "slots"])
                         for q in host.iter("queue"))
            hosts[name] = (load[0] if load else "-", slots.get("all.q", [None])[0])
        for name in (MASTER,) + NODES:
            if name not in hosts:
                raise CaptureError("host %s is not an execution host (qhost); bring the local "
                                   "cluster up first (docs/local-cluster.md)" % name)
            if hosts[name][0] in (None, "-"):
                raise CaptureError("host %s reports no load: its execd is down" % name)
            if hosts[name][1] != "2":
                raise CaptureError("all.q@%s has %s slots, the states assume 2" % (name, hosts[name][1]))
        if "smp" not in out(["qconf", "-spl"]).split():
            raise CaptureError("PE smp is missing")
        with open("/etc/hosts") as handle:
            if re.search(r"(^|\s)%s(\s|$)" % re.escape(GHOST_ADDRESS), handle.read(), re.M):
                raise CaptureError("%s is already in /etc/hosts" % GHOST_ADDRESS)

    # -- temporary objects --------------------------------------------------------------------
    def write(self, name, text):
        path = os.path.join(self.stage, name)
        with open(path, "w") as handle:
            handle.write(text)
        return path

    def setup(self):
        log("setting up the temporary objects")
        user = pwd.getpwnam(JOB_USER)
        self.work = tempfile.mkdtemp(prefix="cap-", dir=user.pw_dir)
        os.chown(self.work, user.pw_uid, user.pw_gid)
        os.chmod(self.work, 0o755)
        self.script("sleep.sh", "#!/bin/sh\nsleep \"${1:-900}\"\nexit 0\n")
        # the finished PE job: its master task starts one task on every other host it was given
        # (qrsh -inherit), so that qacct holds a record per host
        self.script("pe_two_hosts.sh",
                    "#!/bin/sh\n"
                    "me=$(hostname)\n"
                    "while read -r host slots queue rest; do\n"
                    "  [ \"$host\" = \"$me\" ] && continue\n"
                    "  qrsh -inherit \"$host\" /bin/sleep 2 || echo \"qrsh -inherit $host failed\" >&2\n"
                    "done < \"$PE_HOSTFILE\"\n"
                    "sleep 2\n"
                    "exit 0\n")

        # scheduler: reservations on, and an end time for jobs without h_rt
        self.sconf = out(["qconf", "-ssconf"])
        self.added.append(("sconf", None))
        text = re.sub(r"(?m)^max_reservation\s+.*$", "max_reservation                   10", self.sconf)
        text = re.sub(r"(?m)^default_duration\s+.*$", "default_duration                  0:10:0", text)
        run(["qconf", "-Msconf", self.write("sconf", text)])

        for name, rule, first, control in ((PE_FILL, "$fill_up", "TRUE", "TRUE"),
                                           (PE_RR, "$round_robin", "FALSE", "FALSE")):
            self.added.append(("pe", name))
            run(["qconf", "-Ap", self.write(name, (
                "pe_name            %s\nslots              999\nuser_lists         NONE\n"
                "xuser_lists        NONE\nstart_proc_args    NONE\nstop_proc_args     NONE\n"
                "allocation_rule    %s\ncontrol_slaves     %s\njob_is_first_task  %s\n"
                "urgency_slots      min\naccounting_summary FALSE\nqsort_args         NONE\n")
                % (name, rule, control, first))])
        self.all_q = out(["qconf", "-sq", "all.q"])
        self.added.append(("all.q", None))
        run(["qconf", "-aattr", "queue", "pe_list", PE_FILL, "all.q"])

        # the host that never reports
        self.added.append(("hosts", None))
        with open("/etc/hosts", "a") as handle:
            handle.write("%s %s %s\n" % (GHOST_ADDRESS, GHOST, HOSTS_MARKER))
        self.added.append(("exechost", GHOST))
        retry("qconf -Ae " + GHOST, ["qconf", "-Ae", self.write("ghost", (
            "hostname              %s\nload_scaling          NONE\ncomplex_values        NONE\n"
            "user_lists            NONE\nxuser_lists           NONE\nprojects              NONE\n"
            "xprojects             NONE\nusage_scaling         NONE\nreport_variables      NONE\n")
            % GHOST)], lambda t: "added" in t)

        # the second queue: 3 slots per host, built from all.q's own definition
        queue = self.all_q
        for key, value in (("qname", QUEUE), ("hostlist", " ".join((MASTER,) + NODES + (GHOST,))),
                           ("slots", str(QUEUE_SLOTS)), ("pe_list", PE_RR)):
            queue = re.sub(r"(?m)^%s\s+.*$" % key, "%-21s %s" % (key, value), queue)
        self.added.append(("queue", QUEUE))
        retry("qconf -Aq " + QUEUE, ["qconf", "-Aq", self.write("queue", queue)],
              lambda t: "added" in t)
        run(["qmod", "-d", "%s@%s" % (QUEUE, NODES[1])])
        wait_for("the queue instances of %s" % QUEUE, self.queues_ready)

    def queues_ready(self):
        q = queue_rows()
        ghost = q.get("%s@%s" % (QUEUE, GHOST))
        disabled = q.get("%s@%s" % (QUEUE, NODES[1]))
        return (ghost is not None and "u" in ghost["state"] and disabled is not None
                and "d" in disabled["state"] and "%s@%s" % (QUEUE, MASTER) in q)

    def script(self, name, body):
        user = pwd.getpwnam(JOB_USER)
        path = os.path.join(self.work, name)
        with open(path, "w") as handle:
            handle.write(body)
        os.chmod(path, 0o755)
        os.chown(path, user.pw_uid, user.pw_gid)
        return path

    def qsub(self, state, name, options, script="sleep.sh", args=("900",)):
        streams = [] if "-o" in options else ["-o", "/dev/null", "-e", "/dev/null"]
        argv = (["qsub", "-terse", "-N", name, "-S", "/bin/sh"] + streams + list(options)
                + [os.path.join(self.work, script)] + list(args))
        text = out(argv, user=True).strip()
        jid = int(text.split(".")[0])
        self.jobs.append(jid)
        self.names.setdefault(state, {})[name] = jid
        log("  %s: job %d (%s)" % (name, jid, " ".join(options)))
        return jid

    # -- the finished PE job -----------------------------------------------------------------
    def finished_pe_job(self):
        log("a short $fill_up job on two hosts, for qacct")
        jid = self.qsub("pe_and_arrays", "cap_pe_done",
                        ["-pe", PE_FILL, "4", "-q", "all.q@%s,all.q@%s" % NODES],
                        script="pe_two_hosts.sh", args=())
        spans = wait_for("job %d to run" % jid, lambda: granted_hosts(jid), timeout=90)
        log("  running on %s" % spans)
        wait_for("job %d to end" % jid, lambda: not rows_of(jid), timeout=120)

        def records():
            proc = run(["qacct", "-j", str(jid)], check=False)
            text = proc.stdout.decode("utf-8", "replace")
            n = len(re.findall(r"(?m)^jobnumber\s", text))
            return text if proc.returncode == 0 and n >= 1 + len(spans) - 1 else None
        try:
            text = wait_for("qacct records of job %d" % jid, records, timeout=60, poll=2)
        except CaptureError:
            text = out(["qacct", "-j", str(jid)])
            log("  qacct has fewer records than hosts (qrsh -inherit failed?); kept as it is")
        self.qacct = (jid, text, sorted(spans), len(re.findall(r"(?m)^jobnumber\s", text)))

    # -- states --------------------------------------------------------------------------------
    def state_pe_and_arrays(self):
        state = "pe_and_arrays"
        log("state %s" % state)
        pes = self.qsub(state, "cap_pe_slots", ["-pe", "smp", "2", "-q", "all.q@" + MASTER])
        wait_for("cap_pe_slots to run", lambda: granted_hosts(pes) == {MASTER: 2})
        fill = self.qsub(state, "cap_fill_up", ["-pe", PE_FILL, "4"])
        wait_for("cap_fill_up on two nodes", lambda: granted_hosts(fill) == {NODES[0]: 2, NODES[1]: 2})
        rr = self.qsub(state, "cap_round_robin", ["-pe", PE_RR, "2"])
        wait_for("cap_round_robin on two hosts", lambda: len(granted_hosts(rr)) == 2)
        arr = self.qsub(state, "cap_array_range", ["-t", "1-10", "-q", QUEUE])

        def four_running():
            rows = rows_of(arr)
            return len([r for r in rows if "r" in r["state"] and "q" not in r["state"]]) == 4 and any(
                r["tasks"] and "5-10" in r["tasks"] for r in rows)
        wait_for("tasks 1-4 of cap_array_range to run", four_running)
        run(["qdel", "%d.7" % arr], user=True)
        wait_for("task 7 of cap_array_range to go", lambda: any(
            r["tasks"] and "," in r["tasks"] for r in rows_of(arr)), timeout=30)
        step = self.qsub(state, "cap_array_step", ["-t", "2-10:2"])
        wait = self.qsub(state, "cap_pe_waiting", ["-pe", PE_FILL, "2-4"])
        for jid in (step, wait):
            wait_for("job %d to be listed as waiting" % jid, functools.partial(in_state, jid, "qw"),
                     timeout=30)
        time.sleep(4)  # a few scheduler runs: the waiting jobs stay waiting
        self.capture(state, (
            "cap_pe_slots (PE smp $pe_slots, 2 slots, -q all.q@vm) running on vm; cap_fill_up "
            "(PE cap_fill $fill_up, 4 slots) running 2+2 on node001 and node002; cap_round_robin "
            "(PE cap_rr $round_robin, job_is_first_task FALSE, 2 slots) running 1+1 in cap_three.q; "
            "cap_array_range (-t 1-10, -q cap_three.q) tasks 1-4 running, 7 deleted, 5-6,8-10 "
            "waiting; cap_array_step (-t 2-10:2) and cap_pe_waiting (cap_fill 2-4) waiting; "
            "cap_three.q (3 slots) beside all.q (2 slots), cap_three.q@node002 disabled (d), "
            "cap_three.q@cap-ghost unknown (u)"))

    def state_mixed(self):
        state = "mixed"
        log("state %s" % state)
        self.delete_jobs()
        node = NODES[0]
        bad_output = ["-o", "/nonexistent/capture/out", "-e", "/dev/null"]
        err = self.qsub(state, "cap_error", ["-q", "all.q@" + node] + bad_output, args=("5",))
        wait_for("cap_error in error state", functools.partial(in_state, err, "Eqw"))
        # one array job whose tasks are in three states: 1-2 fail once dispatched (Eqw), 3-4 wait
        # for a slot of all.q@node001 (qw), 5-6 stay held (hqw)
        arr = self.qsub(state, "cap_array_states", ["-t", "1-6", "-h", "-q", "all.q@" + node] + bad_output,
                        args=("5",))
        run(["qrls", "%d.1-2" % arr], user=True)
        wait_for("tasks 1-2 of cap_array_states in error state",
                 lambda: task_states(arr) == {"Eqw": 2, "hqw": 4})
        susp = self.qsub(state, "cap_suspended", ["-q", "all.q@" + node])
        wait_for("cap_suspended to run", functools.partial(in_state, susp, "r"))
        run(["qmod", "-sj", str(susp)])
        wait_for("cap_suspended to be suspended", functools.partial(in_state, susp, "s"))
        host = self.qsub(state, "cap_host_bound", ["-l", "h=" + node, "-q", "all.q"])
        wait_for("cap_host_bound to run", lambda: granted_hosts(host) == {node: 1})
        run(["qrls", "%d.3-4" % arr], user=True)
        wait_for("tasks 3-4 of cap_array_states waiting",
                 lambda: task_states(arr) == {"Eqw": 2, "qw": 2, "hqw": 2})
        queue = self.qsub(state, "cap_queue_bound", ["-q", QUEUE])
        wait_for("cap_queue_bound to run", lambda: granted_hosts(queue) != {})
        resv = self.qsub(state, "cap_reserve", ["-R", "y", "-pe", "smp", "2", "-q", "all.q@" + node])
        self.qsub(state, "cap_held", ["-h"])
        self.qsub(state, "cap_no_such_memory", ["-l", "mem_free=999G"])
        self.qsub(state, "cap_pe_too_wide", ["-pe", PE_FILL, "8"])
        # qstat and qhost show no resource reservation (-R y: the scheduler's own plan; "resv" is
        # "the number of slots reserved by advance reservation (not resource reservation)", man
        # qstat): an advance reservation of one slot on all.q@vm shows what they do show
        text = out(["qrsub", "-N", "cap_ar", "-d", "0:10:0", "-q", "all.q@" + MASTER])
        found = re.search(r"advance reservation (\d+)", text)
        if not found:
            raise CaptureError("qrsub said %r" % text)
        self.ars.append(int(found.group(1)))
        wait_for("the advance reservation in all.q@vm", lambda: queue_rows()["all.q@" + MASTER]["resv"] == 1)
        wait_for("cap_reserve to wait", functools.partial(in_state, resv, "qw"))
        time.sleep(3)

        # the accounting record Grid Engine writes for a job that failed before it started
        # (written when the execd reports the failure, flushed to the file within seconds)
        def record():
            proc = run(["qacct", "-j", str(err)], check=False)
            return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None
        self.error_qacct = (err, wait_for("the accounting record of cap_error", record, timeout=60, poll=2))
        if task_states(arr) != {"Eqw": 2, "qw": 2, "hqw": 2}:
            raise CaptureError("cap_array_states changed: %r" % task_states(arr))
        self.capture(state, (
            "cap_error (-o /nonexistent/...: Eqw); cap_array_states (-t 1-6, -q all.q@node001, "
            "tasks 1-2 Eqw, 3-4 qw, 5-6 hqw); cap_suspended (qmod -sj: s) and cap_host_bound "
            "(-l h=node001 -q all.q) running on node001; cap_queue_bound (-q cap_three.q) running; "
            "cap_reserve (-R y, smp 2, -q all.q@node001) waiting (a resource reservation: qstat does "
            "not show it); an advance reservation (qrsub -d 0:10:0 -q all.q@vm: resv 1 on all.q@vm); "
            "cap_held (-h: hqw); cap_no_such_memory (-l mem_free=999G); cap_pe_too_wide (cap_fill 8 "
            "> the 6 slots of all.q) waiting while node002 is idle; queues as in pe_and_arrays"))

    # -- saving ----------------------------------------------------------------------------------
    def capture(self, state, what):
        path = os.path.join(self.stage, "captured", state)
        os.makedirs(path)
        taken = time.time()
        for name, argv in CAPTURES:
            data = run(argv).stdout
            with open(os.path.join(path, name), "wb") as handle:
                handle.write(data)
            self.records.append((state + "/" + name, "LC_ALL=C " + shown(argv), state, what))
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(taken))
        self.taken[state] = iso
        meta = {"state": state, "taken_at": round(taken, 3), "taken_utc": iso,
                "program": PROGRAM, "gridengine_master": self.version,
                "jobs": self.names.get(state, {}), "description": what,
                # qstat prints local time without a zone: the tests parse in this zone
                "utc_offset": time.strftime("%z", time.localtime(taken))}
        if state == "pe_and_arrays":
            jid, text, hosts, count = self.qacct
            with open(os.path.join(path, "qacct_j_pe.txt"), "w") as handle:
                handle.write(text)
            meta["qacct_job"] = jid
            meta["qacct_hosts"] = hosts
            self.records.append((state + "/qacct_j_pe.txt", "LC_ALL=C qacct -j %d" % jid, state,
                                 "cap_pe_done (PE cap_fill $fill_up, control_slaves TRUE, 4 slots, "
                                 "-q all.q@node001,all.q@node002) finished: ran 2+2 on %s, its master "
                                 "task started a task on the other host with qrsh -inherit; %d "
                                 "records" % (" and ".join(hosts), count)))
        if state == "mixed":
            meta["advance_reservations"] = {"cap_ar": self.ars[-1]}
            jid, text = self.error_qacct
            if text is not None:
                with open(os.path.join(path, "qacct_j_error.txt"), "w") as handle:
                    handle.write(text)
                meta["qacct_job"] = jid
                self.records.append((state + "/qacct_j_error.txt", "LC_ALL=C qacct -j %d" % jid, state,
                                     "cap_error (-o /nonexistent/capture/out) after the execd failed to "
                                     "start it, while it waits in Eqw"))
        with open(os.path.join(path, "meta.json"), "w") as handle:
            json.dump(meta, handle, indent=1, sort_keys=True)
            handle.write("\n")
        log("  captured %s" % state)

    def publish(self):
        """Replace the captured states in the output directory and the provenance block."""
        for state in sorted(os.listdir(os.path.join(self.stage, "captured"))):
            target = os.path.join(self.out_dir, state)
            if os.path.isdir(target):
                shutil.rmtree(target)
            shutil.copytree(os.path.join(self.stage, "captured", state), target)
        prefix = os.path.relpath(self.out_dir, os.path.dirname(self.provenance)).replace(os.sep, "/")
        lines = [BEGIN]
        for rel, command, state, what in self.records:
            lines.append("- `%s/%s`: real `%s` captured %s by `python3 %s --out %s` on the local test "
                         "cluster (Debian gridengine-master %s, SoGE 8.1.9; qmaster vm with its execd, "
                         "nodes node001 and node002), state `%s`: %s"
                         % (prefix, rel, command, self.taken[state], PROGRAM,
                            os.path.relpath(self.out_dir), self.version, state, what))
        lines.append(END)
        with open(self.provenance) as handle:
            text = handle.read()
        block = "\n".join(lines) + "\n"
        if BEGIN in text and END in text:
            head, _sep, rest = text.partition(BEGIN)
            _old, _sep, tail = rest.partition(END)
            text = head + block + tail.lstrip("\n")
        else:
            text = text.rstrip("\n") + "\n" + block
        tmp = self.provenance + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text)
        os.rename(tmp, self.provenance)

    # -- undo ---------------------------------------------------------------------------------
    def delete_jobs(self):
        mine = set(self.jobs)
        if not mine:
            return
        live = sorted(set(r["id"] for r in job_rows()) & mine)
        if live:
            run(["qdel"] + [str(j) for j in live], check=False)
        try:
            wait_for("the jobs to go", lambda: not (set(r["id"] for r in job_rows()) & mine), timeout=90)
        except CaptureError:
            live = sorted(set(r["id"] for r in job_rows()) & mine)
            log("  qdel -f %s" % live)
            run(["qdel", "-f"] + [str(j) for j in live], check=False)
            wait_for("the jobs to go (qdel -f)", lambda: not (set(r["id"] for r in job_rows()) & mine),
                     timeout=60)

    def cleanup(self):
        log("removing everything added")
        problems = []

        def step(what, func):
            try:
                func()
            except Exception as err:  # keep undoing the rest
                problems.append("%s: %s" % (what, err))
                log("  FAILED %s: %s" % (what, err))
        step("delete jobs", self.delete_jobs)
        for ar in self.ars:
            step("qrdel %d" % ar, functools.partial(run, ["qrdel", str(ar)]))
        for kind, name in reversed(self.added):
            if kind == "queue":
                # the qmaster may still hold a job that just ended: retried
                step("qconf -dq " + name, functools.partial(
                    retry, "qconf -dq " + name, ["qconf", "-dq", name], lambda t: "removed" in t, 60))
            elif kind == "exechost":
                step("qconf -de " + name, functools.partial(
                    retry, "qconf -de " + name, ["qconf", "-de", name], lambda t: "removed" in t, 60))
            elif kind == "hosts":
                step("/etc/hosts", remove_hosts_line)
            elif kind == "all.q":
                step("all.q pe_list", self.restore_all_q)
            elif kind == "pe":
                step("qconf -dp " + name, functools.partial(run, ["qconf", "-dp", name]))
            elif kind == "sconf":
                step("scheduler configuration", self.restore_sconf)
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
        return problems

    def restore_sconf(self):
        run(["qconf", "-Msconf", self.write("sconf.orig", self.sconf)])

    def restore_all_q(self):
        run(["qconf", "-dattr", "queue", "pe_list", PE_FILL, "all.q"], check=False)
        if out(["qconf", "-sq", "all.q"]) != self.all_q:
            run(["qconf", "-Mq", self.write("all.q.orig", self.all_q)])


def remove_hosts_line():
    with open("/etc/hosts") as handle:
        lines = handle.readlines()
    keep = [line for line in lines if HOSTS_MARKER not in line]
    if keep != lines:
        # rewrite in place (the file may be a bind mount: no rename over it)
        with open("/etc/hosts", "w") as handle:
            handle.writelines(keep)


def cleanup_leftovers():
    """--cleanup: remove what an interrupted run may have left (names of this program only)."""
    for argv in (["qconf", "-dq", QUEUE], ["qconf", "-de", GHOST],
                 ["qconf", "-dattr", "queue", "pe_list", PE_FILL, "all.q"],
                 ["qconf", "-dp", PE_FILL], ["qconf", "-dp", PE_RR]):
        proc = run(argv, check=False)
        log("%s: %s" % (shown(argv), (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()))
    remove_hosts_line()
    log("the scheduler configuration is not known to this run: check max_reservation and "
        "default_duration (qconf -ssconf) yourself")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--out", default="tests/unit/fixtures/sge/captured",
                        help="directory of the captured states (default: %(default)s)")
    parser.add_argument("--provenance", default=None,
                        help="PROVENANCE.md to update (default: the one beside --out)")
    parser.add_argument("--cleanup", action="store_true",
                        help="only remove what an interrupted run left behind")
    args = parser.parse_args(argv)
    if args.cleanup:
        cleanup_leftovers()
        return 0
    out_dir = os.path.abspath(args.out)
    provenance = args.provenance or os.path.join(os.path.dirname(out_dir), "PROVENANCE.md")
    if not os.path.isfile(provenance):
        raise SystemExit("no %s" % provenance)
    os.makedirs(out_dir, exist_ok=True)
    cap = Capture(out_dir, provenance)
    cap.stage = tempfile.mkdtemp(prefix="capture-shapes-")
    started = time.time()
    try:
        cap.check_cluster()
    except CaptureError as err:
        shutil.rmtree(cap.stage, ignore_errors=True)
        log("not started: %s" % err)
        return 2
    before = config_view()
    failure = None
    try:
        cap.setup()
        cap.finished_pe_job()
        cap.state_pe_and_arrays()
        cap.state_mixed()
    except Exception as err:
        failure = err
        log("capture FAILED: %s: %s" % (type(err).__name__, err))
    finally:
        problems = cap.cleanup()
    after = config_view()
    diff = diff_views(before, after)
    if failure is None and not problems:
        cap.publish()
        log("wrote %d files in %d states under %s (%.0f s)" % (
            len(cap.records) + len(cap.taken), len(cap.taken), out_dir, time.time() - started))
    shutil.rmtree(cap.stage, ignore_errors=True)
    if diff:
        print("the cluster's configuration differs from before the run:\n" + diff)
        return 1
    print("cluster configuration identical before and after (%s)" % ", ".join(sorted(before)))
    if problems:
        print("cleanup problems: " + "; ".join(problems))
        return 1
    return 1 if failure is not None else 0


if __name__ == "__main__":
    sys.exit(main())
