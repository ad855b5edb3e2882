# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Chaos model: ``node_leave``'s drain against Grid Engine's scheduler, driven by ``decide``.

Issue 7 part 3, the simulated half: many scale-down events while jobs keep arriving at random,
and a count of the jobs a removal killed or lost.  Pure: no clock, no I/O, no Ansible import; a
seeded :class:`random.Random` decides everything, so a run is repeated exactly by its seed.
docs/reliability/chaos-sim.md has the long version.  Test apparatus, not product: it lives
under tests/unit (run by test_drain_chaos.py and benchmarks/chaos_sim.py) and is not in the
built collection.  The model:

* **The balancer** is ``playbooks/loadbalance.yml`` with ``continuous=true``: one poll reads a
  snapshot (docs/snapshot.md schema), calls the public :func:`policy.elastic.decide` with the
  ``default`` profile exactly as the trace simulator runs it (:func:`engine.policy_config`),
  then joins the nodes the plan adds, one after the other, then runs ``node_leave`` for each node
  the plan removes, one after the other, then pauses ``interval`` seconds.  Polls never overlap
  (the cluster lock).  Idle nodes become removal candidates by ``decide`` alone.
* **node_leave** is its task list (roles/node_leave/tasks/drain.yml, remove.yml), task by task,
  each taking a random Ansible task time: look for jobs (``qstat``, the first check, keep the
  node when one runs), list and disable the node's queue instances, pause the settle time, look
  again (the re-check), and back out (enable again what it disabled, keep the node) when a job is
  there; else out of the host group, ``sge_exec_host state=absent`` (``qconf -ke`` then ``-de``,
  ``-dh``), exports, terminate, hosts lines.  The journal tasks of playbooks/tasks/
  node_operation.yml are around it.  :data:`PROTOCOLS` holds the role and two broken variants.
* **Grid Engine's qmaster and scheduler**: the scheduler runs every ``schedule_interval``
  seconds, and once more shortly after a submit that asks for it (as ``flush_submit_sec`` does).
  A run reads its view at its start (pending jobs in submit order, queue instances enabled with a
  free slot, each with its version), places jobs on the least used host first, and sends its
  orders at its end.  The qmaster applies each order then: the job becomes ``t`` on the host
  (``qstat -s rs`` shows it from that moment) and ``r`` after the transfer to the execd.  An
  order for a queue instance that is gone, or has no free slot, is refused and the job stays
  pending.  ``stale_orders`` says what happens to an order for an instance whose state changed
  after the run read it (``qmod -d`` increases the instance's version): ``"reject"`` is Grid
  Engine's rule (sge_follow.c refuses an order whose queue version is not the instance's
  current one), ``"accept"`` is a pessimistic qmaster without that check, so a run that began
  before the disable can still place a job on the disabled node.
* **Jobs** arrive as a Poisson process whose rate switches between busy and quiet phases (so
  the balancer grows and shrinks), plus the adversary's jobs, timed by the drain's own schedule:
  in the last second before the first check or before the disable, dispatched by a scheduler run
  that ends just before the disable or that began before it and ends after it (the same
  scheduler run as the disable), just before the re-check and just before ``qconf -ke``.  Ties
  between equally used hosts go to the node being drained (the worst case).  Every job has a
  random duration and its own exit status, reported when it ends.
* **Counts**: a job is *killed* when it is on a node (``t`` or ``r``) when ``qconf -ke`` stops
  the node's execd or the provider terminates it; *lost* when at the end it has neither ended,
  been killed, nor is pending or running on a live node.  The run stops starting drains after
  ``events`` of them and goes on until every job submitted has ended.
"""

from __future__ import annotations

import heapq
import math
import random

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic
from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import engine

MASTER = engine.MASTER
EPOCH = engine.EPOCH
STALE_ORDERS = ("accept", "reject")


class Protocol(object):
    """A drain protocol: the role's own (``node_leave``) or a variant of it."""

    __slots__ = ("name", "settle_time", "recheck", "final_check", "text")

    def __init__(self, name, settle_time, recheck, text, final_check=False):
        self.name = name
        self.settle_time = float(settle_time)
        self.recheck = recheck
        self.final_check = final_check
        self.text = text


#: ``node_leave``: the role with its defaults (node_leave_settle_time 15, drain_timeout 0).
#: ``no_recheck`` and ``settle0`` are there to show that the checker finds kills when the drain
#: is wrong; ``final_check`` is a proposed change (not in the role): one more look for jobs after
#: the node left the host group, where no order can reach it any more, backing out by putting it
#: back into the host group and enabling it.
PROTOCOLS = {
    "node_leave": Protocol("node_leave", 15.0, True, "roles/node_leave as implemented (settle 15 s, re-check)"),
    "no_recheck": Protocol("no_recheck", 15.0, False, "without the re-check (no second qstat, no back-out)"),
    "settle0": Protocol("settle0", 0.0, True, "node_leave_settle_time=0 (the pause skipped)"),
    "final_check": Protocol("final_check", 15.0, True, "proposed: node_leave plus a third qstat after the "
                            "host group removal", final_check=True),
}

#: The adversary's arrivals per drain: name -> weight (``none``: no extra job).
SCENARIOS = {
    "none": 1.0,
    "last_second_before_check": 1.0,      # submitted < 1 s before the first qstat, dispatched before it
    "last_second_before_disable": 1.0,    # submitted < 1 s before qmod -d, no extra scheduler run
    "dispatched_before_disable": 2.0,     # a scheduler run that ends just before qmod -d
    "same_run_as_disable": 2.0,           # a run that reads before qmod -d and ends after it
    "last_second_before_recheck": 1.0,    # submitted and scheduled < 1 s before the second qstat
    "last_second_before_ke": 1.0,         # submitted and scheduled < 1 s before qconf -ke
}

OPTIONS = {
    "cap": 8,                       # worker nodes at most (max_nodes = cap + 1: the master counts)
    "slots_per_node": 2,
    "schedule_interval": 15.0,      # sched_conf schedule_interval (SoGE's default 0:0:15)
    "sched_run_time": (0.02, 1.0),  # seconds a scheduler run takes (uniform)
    "straddle_time": (0.05, 4.0),   # same_run_as_disable: its orders arrive this long after qmod -d
    "transfer_time": (0.2, 1.5),    # qmaster order -> job running on the execd (state t -> r)
    "task_time": (0.15, 0.6),       # one Ansible task that runs a command or module
    "fact_time": (0.02, 0.1),       # set_fact, debug
    "skip_time": (0.01, 0.04),      # a task skipped by its condition
    "join_time": (12.0, 20.0),      # node_join, launch to the execd's first load report
    "busy_mean": 900.0,             # mean length of a busy phase (exponential), seconds
    "quiet_mean": 1800.0,           # mean length of a quiet phase
    "busy_load": 1.3,               # busy arrival rate as a multiple of what cap x slots can run
    "quiet_gap": 150.0,             # mean seconds between arrivals in a quiet phase
    "job_median": 90.0,             # log-normal job duration: median, sigma, at most max
    "job_sigma": 1.0,
    "job_max": 3600.0,
    "short_jobs": 0.15,             # share of jobs of 1-10 s (they may end within a drain)
    "adversary": 1.0,               # share of drains that get the adversary's jobs
    "scenarios": None,              # None: SCENARIOS
    "prefer_draining": True,        # ties between equally used hosts go to the drained node
    "stale_orders": "accept",
    "policy_overrides": None,       # decide options changed from the simulator's default profile
    "horizon": 30 * 86400.0,        # seconds after the last drain to let every job end
}


def _pair(name, value):
    ok = (isinstance(value, (tuple, list)) and len(value) == 2
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
          and 0 <= value[0] <= value[1])
    if not ok:
        raise ValueError("%s: must be a pair (low, high) of seconds with 0 <= low <= high, got %r" % (name, value))
    return (float(value[0]), float(value[1]))


def validate_options(options):
    """Every option at its default unless given; ``ValueError`` naming a bad one."""
    options = dict(options or {})
    unknown = sorted(k for k in options if k not in OPTIONS)
    if unknown:
        raise ValueError("%s: unknown option (known: %s)" % (", ".join(unknown), ", ".join(sorted(OPTIONS))))
    opt = dict(OPTIONS)
    opt.update(options)
    for name in ("cap", "slots_per_node"):
        if not (isinstance(opt[name], int) and not isinstance(opt[name], bool) and opt[name] >= 1):
            raise ValueError("%s: must be an integer >= 1, got %r" % (name, opt[name]))
    for name in ("schedule_interval", "busy_mean", "quiet_mean", "busy_load", "quiet_gap", "job_median",
                 "job_max", "horizon"):
        value = opt[name]
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
            raise ValueError("%s: must be a number > 0, got %r" % (name, value))
        opt[name] = float(value)
    for name in ("job_sigma", "short_jobs", "adversary"):
        value = opt[name]
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0):
            raise ValueError("%s: must be a number >= 0, got %r" % (name, value))
    for name in ("short_jobs", "adversary"):
        if opt[name] > 1:
            raise ValueError("%s: must be a share between 0 and 1, got %r" % (name, opt[name]))
    for name in ("sched_run_time", "straddle_time", "transfer_time", "task_time", "fact_time", "skip_time",
                 "join_time"):
        opt[name] = _pair(name, opt[name])
    scen = SCENARIOS if opt["scenarios"] is None else opt["scenarios"]
    if (not isinstance(scen, dict) or not scen or any(k not in SCENARIOS for k in scen)
            or any(not isinstance(w, (int, float)) or isinstance(w, bool) or w < 0 for w in scen.values())
            or sum(scen.values()) <= 0):
        raise ValueError("scenarios: must map names of %s to weights >= 0 (not all 0), got %r"
                         % (", ".join(SCENARIOS), scen))
    opt["scenarios"] = dict(scen)
    if opt["stale_orders"] not in STALE_ORDERS:
        raise ValueError("stale_orders: must be one of %s, got %r" % (", ".join(STALE_ORDERS), opt["stale_orders"]))
    if not isinstance(opt["prefer_draining"], bool):
        raise ValueError("prefer_draining: must be a boolean, got %r" % (opt["prefer_draining"],))
    return opt


class Result(object):
    """Counts of one run; :func:`summarize` turns them into a dict of figures."""

    def __init__(self, protocol, stale_orders, seed, events):
        self.protocol = protocol
        self.stale_orders = stale_orders
        self.seed = seed
        self.events = events
        self.drains_started = 0
        self.drains_removed = 0
        self.backed_out_first = 0     # a job ran there at the first check: nothing changed
        self.backed_out_recheck = 0   # a job was dispatched during the drain: enabled again, kept
        self.backed_out_final = 0     # final_check only: a job found after the host group removal
        self.removals_planned = 0     # node names in decide's plans (not the master)
        self.polls = 0
        self.plans_removing = 0
        self.joins = 0
        self.jobs_submitted = 0
        self.jobs_adversary = 0
        self.jobs_finished = 0
        self.exit_status_own = 0      # finished with the exit status the job was given
        self.jobs_killed = 0
        self.jobs_lost = 0
        self.pending_end = 0
        self.killed_at = {}           # step -> jobs killed there
        self.kills = []               # the first few kills, for people
        self.scenario_counts = dict.fromkeys(SCENARIOS, 0)
        self.adversary_hits = 0       # adversary jobs that landed on the node being drained
        self.dispatched_during_drain = 0   # orders applied to a node between its drain's start and end
        self.dispatched_disabled = 0  # orders applied to a disabled instance (stale orders accepted)
        self.orders_refused_stale = 0
        self.orders_refused_other = 0
        self.scheduler_runs = 0
        self.removed_seconds = 0.0    # node_leave's time, summed over the drains that removed
        self.sim_seconds = 0.0
        self.max_nodes = 0


def summarize(res):
    """The figures of a run as a flat dict."""
    return {
        "protocol": res.protocol,
        "stale_orders": res.stale_orders,
        "seed": res.seed,
        "drains_started": res.drains_started,
        "drains_removed": res.drains_removed,
        "backed_out": res.backed_out_first + res.backed_out_recheck + res.backed_out_final,
        "backed_out_first_check": res.backed_out_first,
        "backed_out_recheck": res.backed_out_recheck,
        "backed_out_final_check": res.backed_out_final,
        "removals_planned": res.removals_planned,
        "polls": res.polls,
        "joins": res.joins,
        "jobs_submitted": res.jobs_submitted,
        "jobs_adversary": res.jobs_adversary,
        "jobs_finished": res.jobs_finished,
        "exit_status_own": res.exit_status_own,
        "jobs_killed": res.jobs_killed,
        "jobs_lost": res.jobs_lost,
        "pending_end": res.pending_end,
        "killed_at": dict(res.killed_at),
        "adversary_hits": res.adversary_hits,
        "dispatched_during_drain": res.dispatched_during_drain,
        "dispatched_disabled": res.dispatched_disabled,
        "orders_refused_stale": res.orders_refused_stale,
        "orders_refused_other": res.orders_refused_other,
        "scheduler_runs": res.scheduler_runs,
        "drain_mean_seconds": res.removed_seconds / res.drains_removed if res.drains_removed else 0.0,
        "sim_hours": res.sim_seconds / 3600.0,
        "max_nodes": res.max_nodes,
        "scenarios": dict(res.scenario_counts),
    }


class _Job(object):
    __slots__ = ("id", "submit", "run", "exit_status", "state", "node", "dispatched", "token", "adversary",
                 "reported")

    def __init__(self, jid, submit, run, exit_status, adversary):
        self.id = jid
        self.submit = submit
        self.run = run
        self.exit_status = exit_status
        self.state = "qw"          # qw, t, r, done, killed
        self.node = None
        self.dispatched = None
        self.token = 0
        self.adversary = adversary
        self.reported = None


class _Node(object):
    __slots__ = ("name", "seq", "exec_host", "execd", "alive", "instance", "disabled", "version", "jobs",
                 "draining")

    def __init__(self, name, seq):
        self.name = name
        self.seq = seq
        self.exec_host = True      # qconf -sel lists it
        self.execd = True          # its execd runs and reports load
        self.alive = True          # the provider's machine exists
        self.instance = True       # all.q@name exists (the node is in @allhosts)
        self.disabled = False      # qmod -d
        self.version = 1           # QU_version of all.q@name
        self.jobs = {}             # job id -> _Job, states t and r
        self.draining = False


# event kinds (the order breaks ties at the same instant after time: a commit before a tick)
_SUBMIT, _COMMIT, _START, _END, _TICK, _RUN, _CTRL, _ADV = range(8)


class _Chaos(object):

    def __init__(self, events, seed, protocol, opt):
        self.events_wanted = events
        self.rng = random.Random(seed)
        self.proto = protocol
        self.opt = opt
        self.res = Result(protocol.name, opt["stale_orders"], seed, events)
        spn = opt["slots_per_node"]
        self.spn = spn
        self.cfg = engine.policy_config("default", opt["cap"], spn, "per_second", overrides=opt["policy_overrides"])
        self.interval = float(self.cfg["interval"])
        self.heap = []
        self.seq = 0
        self.nodes = {}            # name -> _Node (exec hosts and nodes being removed)
        self.node_counter = 0
        self.jobs = {}             # id -> _Job (every job submitted)
        self.pending = {}          # id -> _Job in submit order
        self.job_counter = 0
        self.state = {}
        self.closing = False
        self.drain_target = None   # the node node_leave works on now
        self.drain_next = set()    # nodes later in this poll's removal list
        self.sched_busy = False
        self.sched_queue = []      # run lengths asked for while a run was under way
        self.now = EPOCH
        names = sorted(opt["scenarios"])
        self.scen_names = names
        self.scen_weights = [opt["scenarios"][n] for n in names]
        self.busy = False
        self.phase_end = EPOCH

    # ---- plumbing ---------------------------------------------------------------------------
    def _push(self, when, kind, payload=None):
        self.seq += 1
        heapq.heappush(self.heap, (when, kind, self.seq, payload))

    def _uniform(self, pair):
        return self.rng.uniform(pair[0], pair[1])

    # ---- jobs -------------------------------------------------------------------------------
    def _duration(self):
        rng, opt = self.rng, self.opt
        if rng.random() < opt["short_jobs"]:
            return rng.uniform(1.0, 10.0)
        return min(opt["job_max"], max(1.0, rng.lognormvariate(math.log(opt["job_median"]), opt["job_sigma"])))

    def _submit(self, adversary=False):
        self.job_counter += 1
        job = _Job(self.job_counter, self.now, self._duration(), self.rng.randrange(256), adversary)
        self.jobs[job.id] = job
        self.pending[job.id] = job
        self.res.jobs_submitted += 1
        if adversary:
            self.res.jobs_adversary += 1
        return job

    def _next_background(self):
        """Schedule the next Poisson arrival (the rate switches with busy and quiet phases)."""
        opt, rng = self.opt, self.rng
        t = self.now
        while True:
            if t >= self.phase_end:
                self.busy = not self.busy
                self.phase_end = t + rng.expovariate(1.0 / (opt["busy_mean"] if self.busy else opt["quiet_mean"]))
            if self.busy:
                mean_run = opt["job_median"] * math.exp(opt["job_sigma"] ** 2 / 2.0)
                rate = opt["busy_load"] * opt["cap"] * self.spn / mean_run
            else:
                rate = 1.0 / opt["quiet_gap"]
            gap = rng.expovariate(rate)
            if t + gap < self.phase_end:
                self._push(t + gap, _SUBMIT)
                return
            t = self.phase_end

    def _job_ended(self, job):
        node = job.node
        del node.jobs[job.id]
        job.state = "done"
        job.reported = job.exit_status       # the execd reports the job's own exit status
        self.res.jobs_finished += 1
        if job.reported == job.exit_status:
            self.res.exit_status_own += 1

    def _kill_jobs(self, node, step):
        for job in list(node.jobs.values()):
            job.state = "killed"
            job.token += 1
            job.reported = 137
            del node.jobs[job.id]
            self.res.jobs_killed += 1
            self.res.killed_at[step] = self.res.killed_at.get(step, 0) + 1
            if len(self.res.kills) < 20:
                self.res.kills.append({"job": job.id, "node": node.name, "step": step,
                                       "dispatched": round(job.dispatched - EPOCH, 3),
                                       "killed": round(self.now - EPOCH, 3), "adversary": job.adversary})

    # ---- the scheduler and the qmaster ---------------------------------------------------------
    def _request_run(self, length=None):
        if self.sched_busy:
            if len(self.sched_queue) < 2 or length is not None:
                self.sched_queue.append(length)
            return
        self._start_run(length)

    def _start_run(self, length):
        self.sched_busy = True
        self.res.scheduler_runs += 1
        if length is None:
            length = self._uniform(self.opt["sched_run_time"])
        orders = []
        if self.pending:
            free = []
            for node in self.nodes.values():
                if node.instance and not node.disabled and node.execd and node.exec_host:
                    room = self.spn - len(node.jobs)
                    if room > 0:
                        free.append([node, room])
            if free:
                prefer = self.opt["prefer_draining"]
                for job in list(self.pending.values()):
                    best = None
                    best_key = None
                    for entry in free:
                        node, room = entry
                        if room <= 0:
                            continue
                        rank = 2
                        if prefer:
                            rank = 0 if node is self.drain_target else (1 if node.name in self.drain_next else 2)
                        key = (self.spn - room, rank, node.seq)
                        if best_key is None or key < best_key:
                            best, best_key = entry, key
                    if best is None:
                        break
                    best[1] -= 1
                    orders.append((job, best[0], best[0].version))
        self._push(self.now + length, _COMMIT, orders)

    def _commit(self, orders):
        res = self.res
        for job, node, version in orders:
            if job.state != "qw":
                continue
            if (not node.instance or not node.exec_host or not node.alive or len(node.jobs) >= self.spn):
                res.orders_refused_other += 1
                continue
            if node.version != version and self.opt["stale_orders"] == "reject":
                res.orders_refused_stale += 1
                continue
            del self.pending[job.id]
            job.state = "t"
            job.node = node
            job.dispatched = self.now
            node.jobs[job.id] = job
            if node.disabled:
                res.dispatched_disabled += 1
            if node.draining:
                res.dispatched_during_drain += 1
                if job.adversary:
                    res.adversary_hits += 1
            self._push(self.now + self._uniform(self.opt["transfer_time"]), _START, (job, job.token))
        self.sched_busy = False
        if self.sched_queue:
            self._start_run(self.sched_queue.pop(0))

    # ---- the snapshot and the balancer -----------------------------------------------------------
    def _snapshot(self):
        hosts = {}
        running = []
        for name, node in self.nodes.items():
            if not node.exec_host:
                continue
            used = len(node.jobs)
            hosts[name] = {"arch": "lx-amd64", "num_proc": self.spn,
                           "load_avg": float(used) if node.execd else None,
                           "mem_total": None, "mem_used": None,
                           "slots_total": self.spn if node.instance else 0, "slots_used": used,
                           "slots_reserved": 0, "states": "d" if node.disabled else "",
                           "queues": ["all.q"] if node.instance else [], "running_jobs": used}
            for job in node.jobs.values():
                running.append({"id": job.id, "task": None, "name": "chaos%d" % job.id, "owner": "chaos",
                                "project": None, "state": job.state, "queue": "all.q", "host": name,
                                "hosts": {name: 1}, "slots": 1, "start_time": job.dispatched})
        pending = [{"id": job.id, "name": "chaos%d" % job.id, "owner": "chaos", "project": None, "state": "qw",
                    "priority": 0.0, "submit_time": job.submit, "tasks": None, "task_count": 1, "slots": 1,
                    "pe": None, "pe_range": None, "hard_requests": {}, "hard_queues": [], "held": False,
                    "error": False} for job in self.pending.values()]
        return {"schema": 1, "taken_at": self.now, "flavour": "simulated", "cell": "default", "master": MASTER,
                "hosts": hosts, "pending": pending, "running": running}

    def _poll(self):
        plan = elastic.decide(self._snapshot(), self.state, self.cfg, self.now)
        self.state = plan["state"]
        self.res.polls += 1
        return plan

    def _task(self, kind="cmd"):
        return self._uniform(self.opt[{"cmd": "task_time", "fact": "fact_time", "skip": "skip_time"}[kind]])

    def _controller(self):
        """playbooks/loadbalance.yml, continuous: poll, join, drain and remove, pause."""
        res = self.res
        while True:
            plan = self._poll()
            yield self._task("cmd")                  # elastic_plan, show the plan
            for _i in range(plan["add"]):
                yield self._task("cmd")              # journal: in flight
                yield self._uniform(self.opt["join_time"])
                self.node_counter += 1
                node = _Node("node%05d" % self.node_counter, self.node_counter)
                self.nodes[node.name] = node
                res.joins += 1
                res.max_nodes = max(res.max_nodes, len(self.nodes))
                yield self._task("cmd")              # journal: done
            remove = [n for n in plan["remove"] if n != MASTER]
            if remove and not self.closing:
                res.plans_removing += 1
            for index, name in enumerate(remove):
                if self.closing:
                    break
                res.removals_planned += 1
                node = self.nodes.get(name)
                if node is None:
                    continue
                self.drain_next = set(remove[index + 1:])
                yield from self._node_leave(node)
                self.drain_next = set()
                if res.drains_started >= self.events_wanted:
                    self.closing = True
            if self.closing and not self.pending and not any(n.jobs for n in self.nodes.values()):
                return
            yield self.interval                      # "Wait for the next poll"

    # ---- node_leave ---------------------------------------------------------------------------
    def _leave_tasks(self):
        """roles/node_leave's tasks in order: (task, kind, action) -- kind picks the task's time."""
        proto = self.proto
        tasks = [
            ("journal: Record the operation as in flight", "cmd", None),
            ("validate.yml: two asserts, slurp act_qmaster, set_fact, assert", "validate", None),
            ("Read Grid Engine's exec hosts", "cmd", None),
            ("Find the node among them", "fact", None),
            ("Look for jobs on the node (qstat)", "cmd", "check1"),
            ("Remember the jobs on the node", "fact", None),
            ("Keep a node that runs a job (the balancer only removes idle nodes)", "fact", "keep1"),
            ("List the node's queue instances", "cmd", None),
            ("Disable the node's queue instances (no new job starts there)", "cmd", "disable"),
            ("Wait for the jobs on the node to end", "skip", None),       # drain_timeout 0
            ("Let a job dispatched before the disable show up", "settle", "settled"),
            ("No task data problem yet", "fact", None),
            ("Move the node's task data to other nodes", "skip", None),   # move_tasks false
        ]
        if proto.recheck:
            tasks += [
                ("Look again for jobs on the node (qstat)", "cmd", "check2"),
                ("Remember the jobs on the node now", "fact", None),
                ("Back out when a job is there", "skip", "backout"),
            ]
        tasks += [
            ("Remove the node: include remove.yml", "fact", None),
            ("List the host groups", "cmd", None),
            ("Take the node out of the host group - @allhosts", "cmd", "hostgroup"),
        ]
        if proto.final_check:
            tasks += [
                ("(proposed) Look for jobs once more, out of the host group (qstat)", "cmd", "check3"),
                ("(proposed) Back out when a job is there", "skip", None),
            ]
        tasks += [
            ("Remove the node from Grid Engine: read references, qhost -h", "cmd", None),
            ("Remove the node from Grid Engine: qconf -ke", "qconf", "ke"),
            ("Remove the node from Grid Engine: qconf -de", "qconf", "de"),
            ("Remove the node from Grid Engine: qconf -dh", "qconf", None),
            ("Read the master's /etc/hosts", "cmd", None),
            ("Remember the node's addresses", "fact", None),
            ("Does the node still answer ssh?", "cmd", None),
            ("Unmount the shares on the node", "cmd", None),
            ("Stop exporting the shares to the node", "cmd", None),
            ("Read the current export table (exportfs -s)", "cmd", None),
            ("Cut the node off (exportfs -ra)", "cmd", None),
            ("Terminate the node with the provider", "cmd", "terminate"),
            ("Remove the node's line on the other members", "cmd", None),
            ("Remove the node's line on the master", "cmd", None),
            ("Delete the node's execd spool directory on the master", "cmd", None),
            ("Mark the node as removed in this run's inventory", "fact", None),
            ("Refresh the inventory", "fact", None),
            ("Return the outcome", "fact", None),
            ("journal: Mark the operation done", "cmd", None),
        ]
        out = []
        for name, kind, action in tasks:
            if kind == "validate":
                dur = sum(self._task("cmd") for _i in range(3)) + sum(self._task("fact") for _i in range(2))
            elif kind == "settle":
                dur = (proto.settle_time + self._task("fact")) if proto.settle_time > 0 else self._task("skip")
            elif kind == "qconf":
                dur = self._uniform(self.opt["task_time"]) / 3.0
            else:
                dur = self._task(kind)
            out.append((name, dur, action))
        return out

    def _node_leave(self, node):
        res = self.res
        res.drains_started += 1
        node.draining = True
        self.drain_target = node
        tasks = self._leave_tasks()
        began = self.now
        at = {}
        t = self.now
        for _name, dur, action in tasks:
            t += dur
            if action:
                at[action] = t
        if self.rng.random() < self.opt["adversary"]:
            self._plan_adversary(at)
        first = None
        changed = False
        try:
            for _name, dur, action in tasks:
                yield dur
                if action == "check1":
                    first = list(node.jobs)
                elif action == "keep1" and first:
                    res.backed_out_first += 1        # "job N runs on NAME": nothing changed
                    for _i in range(3):
                        yield self._task("skip")     # the rest of the drain block, nothing.yml
                    yield self._task("fact")         # Return the outcome
                    yield self._task("cmd")          # journal: done
                    return
                elif action == "disable":
                    if node.instance and not node.disabled:
                        node.disabled = True
                        node.version += 1
                        changed = True
                elif action == "check2" and node.jobs:
                    yield self._task("cmd")          # Enable again the queue instances disabled here
                    if changed and node.instance:
                        node.disabled = False
                        node.version += 1
                    yield self._task("fact")         # Keep the node
                    res.backed_out_recheck += 1
                    yield self._task("skip")         # nothing.yml
                    yield self._task("fact")         # Return the outcome
                    yield self._task("cmd")          # journal: done
                    return
                elif action == "hostgroup":
                    node.instance = False            # all.q@node is gone (orphaned while jobs run)
                    node.version += 1
                elif action == "check3" and node.jobs:
                    yield self._task("cmd")          # back into @allhosts: the instance again
                    node.instance = True
                    node.version += 1
                    yield self._task("cmd")          # enable it
                    node.disabled = False
                    node.version += 1
                    res.backed_out_final += 1
                    yield self._task("fact")         # Return the outcome
                    yield self._task("cmd")          # journal: done
                    return
                elif action == "ke":
                    self._kill_jobs(node, "qconf -ke")
                    node.execd = False
                elif action == "de":
                    node.exec_host = False
                elif action == "terminate":
                    self._kill_jobs(node, "terminate")
                    node.alive = False
                    del self.nodes[node.name]
            res.drains_removed += 1
            res.removed_seconds += self.now - began
        finally:
            node.draining = False
            self.drain_target = None

    # ---- the adversary ----------------------------------------------------------------------------
    def _plan_adversary(self, at):
        rng = self.rng
        name = rng.choices(self.scen_names, weights=self.scen_weights)[0]
        self.res.scenario_counts[name] += 1
        if name == "none":
            return
        count = rng.randint(1, 3)
        if name == "last_second_before_check":
            ref = at["check1"]
            submit = ref - rng.uniform(0.05, 1.0)
            start = submit + rng.uniform(0.0, 0.02)
            length = rng.uniform(0.0, max(0.0, ref - start - 0.01))
        elif name == "last_second_before_disable":
            submit, start, length = at["disable"] - rng.uniform(0.0, 1.0), None, None
        elif name == "dispatched_before_disable":
            ref = at["disable"]
            submit = ref - rng.uniform(0.05, 1.0)
            start = submit + rng.uniform(0.0, 0.02)
            length = rng.uniform(0.0, max(0.0, ref - start - 0.01))
        elif name == "same_run_as_disable":
            ref = at["disable"]
            submit = ref - rng.uniform(0.02, 1.0)
            start = rng.uniform(submit + 0.001, ref - 0.001)
            length = ref - start + self._uniform(self.opt["straddle_time"])
        else:
            ref = at.get("check2" if name == "last_second_before_recheck" else "ke")
            if ref is None:                          # a protocol without that step
                ref = at["settled"]
            submit = ref - rng.uniform(0.05, 1.0)
            start = submit + rng.uniform(0.0, 0.02)
            length = rng.uniform(0.0, max(0.0, ref - start - 0.01))
        if submit < self.now:
            return
        self._push(submit, _ADV, (count, start, length))

    # ---- main loop ----------------------------------------------------------------------------------
    def run(self):
        res = self.res
        self._next_background()
        self._push(self.now + self.rng.uniform(0.0, self.opt["schedule_interval"]), _TICK)
        ctrl = self._controller()
        self._push(self.now, _CTRL, ctrl)
        stop_at = math.inf
        while self.heap:
            when, kind, _seq, payload = heapq.heappop(self.heap)
            if when > stop_at:
                break
            self.now = when
            if kind == _CTRL:
                try:
                    delay = next(payload)
                except StopIteration:
                    break
                self._push(when + delay, _CTRL, payload)
                if self.closing and stop_at == math.inf:
                    stop_at = when + self.opt["horizon"]
            elif kind == _SUBMIT:
                if not self.closing:
                    self._submit()
                    self._next_background()
            elif kind == _ADV:
                if self.closing:
                    continue
                count, start, length = payload
                for _i in range(count):
                    self._submit(adversary=True)
                if start is not None:
                    self._push(max(start, when), _RUN, length)
            elif kind == _RUN:
                self._request_run(payload)
            elif kind == _TICK:
                self._request_run(None)
                self._push(when + self.opt["schedule_interval"], _TICK)
            elif kind == _COMMIT:
                self._commit(payload)
            elif kind == _START:
                job, token = payload
                # a job whose execd is gone never starts or ends: it is lost unless a kill counted it
                if job.state == "t" and job.token == token and job.node.execd:
                    job.state = "r"
                    self._push(when + job.run, _END, (job, token))
            elif kind == _END:
                job, token = payload
                if job.state == "r" and job.token == token and job.node.execd:
                    self._job_ended(job)
        res.sim_seconds = self.now - EPOCH
        res.pending_end = len(self.pending)
        # lost: neither ended with its exit status, killed, pending, nor on a live node (a job on
        # a removed machine that no kill was counted for, or one that vanished from the books)
        self.running_end = 0
        for job in self.jobs.values():
            if job.state in ("done", "killed") or (job.state == "qw" and job.id in self.pending):
                continue
            if job.state in ("t", "r") and job.node.alive and job.id in job.node.jobs:
                self.running_end += 1
                continue
            res.jobs_lost += 1
        return res


def run(events=10000, seed=1, protocol="node_leave", options=None):
    """Run the model until ``events`` drains have started and every job has ended; a :class:`Result`.

    ``protocol``: a name of :data:`PROTOCOLS` or a :class:`Protocol`.  ``options``: see
    :data:`OPTIONS` (``stale_orders``, the workload, the task times, the adversary).
    """
    if isinstance(protocol, str):
        if protocol not in PROTOCOLS:
            raise ValueError("protocol: must be one of %s, got %r" % (", ".join(PROTOCOLS), protocol))
        protocol = PROTOCOLS[protocol]
    elif not isinstance(protocol, Protocol):
        raise ValueError("protocol: must be a name or a Protocol, got %r" % (protocol,))
    if not (isinstance(events, int) and not isinstance(events, bool) and events >= 1):
        raise ValueError("events: must be an integer >= 1, got %r" % (events,))
    opt = validate_options(options)
    sim = _Chaos(events, seed, protocol, opt)
    res = sim.run()
    res.running_end = sim.running_end
    return res
