# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind gridengine.balancer.poll_loop (documentation: plugins/modules/poll_loop.py).

Continuous mode as a loop of fresh processes: each poll is the current ansible-playbook command
line run again with ``continuous=false`` added last. Memory is flat by construction, since no
process lives longer than one poll except this small loop, which keeps a bounded record.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ansible import context
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gridengine.balancer.plugins.action.elastic_plan import argument_spec_from_doc
from ansible_collections.gridengine.balancer.plugins.modules import poll_loop as _doc
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic

display = Display()

ARGUMENT_SPEC = argument_spec_from_doc(_doc.DOCUMENTATION)
RECENT = 20
KILLED = "cluster-killed"  # written by playbooks/tasks/kill_cluster.yml into balancer_poll_loop_dir
# command-line options that make ansible-playbook ask a person something: refused, nobody answers
# them at every poll (their names in ansible's CLIARGS, and the option a user typed)
PROMPTS = (("ask_pass", "--ask-pass"), ("become_ask_pass", "--ask-become-pass"),
           ("ask_vault_pass", "--ask-vault-password"), ("step", "--step"))


def rss_kib(pid):
    """Resident memory of a running process in KiB (None when it cannot be read)."""
    try:
        with open("/proc/%d/status" % pid, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def poll_argv(argv, override_path):
    """The argv of one poll: this run's own command line, its interpreter first, with the
    override file (continuous=false) as the last extra vars, so it wins over every -e before it."""
    if not argv or os.path.basename(argv[0]) != "ansible-playbook":
        raise AnsibleActionFail("poll_loop runs inside ansible-playbook only (this process is %r)"
                                % (argv[0] if argv else ""))
    program = argv[0]
    if not os.path.isabs(program):
        program = shutil.which(program) or os.path.abspath(program)
    return [sys.executable, program] + list(argv[1:]) + ["-e", "@" + override_path]


def fmt_mib(kib):
    return "?" if kib is None else "%.1f MiB" % (kib / 1024.0)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _valid, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        interval = args["interval"]
        if interval is None:
            try:
                interval = elastic.default_config(args["profile"])["interval"]
            except (KeyError, ValueError) as exc:
                raise AnsibleActionFail("profile: %s" % exc) from exc
        if not 0 <= interval <= elastic.MAX_INTERVAL:
            raise AnsibleActionFail("interval: must be 0 to %d seconds, got %r" % (elastic.MAX_INTERVAL, interval))
        if args["max_polls"] < 1:
            raise AnsibleActionFail("max_polls: must be 1 or more, got %r" % args["max_polls"])
        asked = [flag for key, flag in PROMPTS if context.CLIARGS.get(key)]
        if asked:
            raise AnsibleActionFail(
                "continuous mode runs ansible-playbook again for every poll and nobody answers its prompts: "
                "run without %s (a password or vault file, an ssh agent)" % ", ".join(asked))

        workdir = tempfile.mkdtemp(prefix="geb-poll-loop-")  # 0700, this run's own
        try:
            override = os.path.join(workdir, "continuous-off.json")
            with open(override, "w", encoding="utf-8") as handle:
                # balancer_poll_loop_dir: where a poll that terminated the cluster (kill_cluster) says so
                json.dump({"continuous": False, "balancer_poll_loop_dir": workdir}, handle)
            argv = poll_argv(sys.argv, override)
            result.update(self._loop(argv, interval, args["max_polls"], args["kill_timeout"],
                                     os.path.join(workdir, KILLED)))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        result["changed"] = False
        return result

    def _loop(self, argv, interval, max_polls, kill_timeout, killed_path):
        recent, peak, loop_rss = [], 0, {}
        main_pid = os.getppid()  # the ansible-playbook this worker belongs to
        for poll in range(1, max_polls + 1):
            display.display("poll_loop: poll %d of %d (a new ansible-playbook)" % (poll, max_polls))
            started = time.monotonic()
            rc, pid, peak_kib = self._one_poll(argv, kill_timeout)
            seconds = round(time.monotonic() - started, 1)
            loop_kib = rss_kib(main_pid)
            loop_rss.setdefault("first", loop_kib)
            loop_rss["last"] = loop_kib
            peak = max(peak, peak_kib or 0)
            recent = (recent + [{"poll": poll, "rc": rc, "seconds": seconds, "pid": pid,
                                 "peak_rss_kib": peak_kib, "loop_rss_kib": loop_kib}])[-RECENT:]
            display.display("poll_loop: poll %d ended with exit status %d in %.1f s; its largest process peaked at "
                            "%s; this run's ansible-playbook holds %s"
                            % (poll, rc, seconds, fmt_mib(peak_kib), fmt_mib(loop_kib)))
            summary = {"polls": poll, "recent": recent, "peak_rss_kib": peak, "loop_rss_kib": loop_rss}
            if rc != 0:
                summary.update(failed=True, failed_poll=poll, rc=rc,
                               msg="poll %d of %d failed (exit status %d): continuous mode stops here; its output "
                                   "is above. The next run finishes what it left half-done." % (poll, max_polls, rc))
                return summary
            if os.path.exists(killed_path):
                summary["killed"] = True
                summary["msg"] = ("poll %d terminated the cluster (kill_cluster): continuous mode ends here" % poll)
                display.display("poll_loop: " + summary["msg"])
                return summary
            if poll < max_polls:
                display.display("poll_loop: next poll in %s s" % (int(interval) if interval == int(interval) else interval))
                time.sleep(interval)
        summary["msg"] = "%d polls, each in its own process" % max_polls
        return summary

    @staticmethod
    def _one_poll(argv, kill_timeout):
        """Run one poll, showing its output as it comes; (exit status, pid, peak RSS in KiB)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # pylint: disable=consider-using-with
                                stderr=subprocess.STDOUT, env=env)
        try:
            for raw in proc.stdout:
                display.display(raw.decode("utf-8", errors="replace").rstrip("\n"))
        except BaseException:
            # interrupted: the poll got the same signal (one process group); let it give its lock back
            try:
                proc.wait(timeout=kill_timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)
                proc.wait()
            raise
        finally:
            proc.stdout.close()
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, proc.pid, usage.ru_maxrss
