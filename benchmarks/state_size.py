#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Size of the balancer's state file with many pending jobs (issue 20, finding 7).

Two polls of the real policy (``elastic.decide``) on a snapshot of a small cluster (a master and
four busy nodes) with ``--pending`` waiting jobs, 60 s apart, the second one on the first one's
state, as a poll writes it (``balancer_state.dumps``: sorted keys, indent 1). Prints the state's
size, its per-job records and the time of one decide. Run from the collection root:

    .venv/bin/python benchmarks/state_size.py                       # 200,000 pending jobs
    .venv/bin/python benchmarks/state_size.py --unbounded           # as before the bound
    .venv/bin/python benchmarks/state_size.py --pending 20000 --no-submit-time

Times are wall seconds on whatever machine runs it (noisy on a shared one); the sizes are exact.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".collections"))

from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import dumps  # noqa: E402
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic, elastic_state  # noqa: E402

T0 = 1700000000.0


def snapshot(now, pending, submit_time):
    hosts = {}
    running = []
    for index, name in enumerate(["master", "node001", "node002", "node003", "node004"]):
        hosts[name] = {"arch": "lx-amd64", "num_proc": 2, "load_avg": 1.0, "mem_total": 2 << 30, "mem_used": 0,
                       "slots_total": 2, "slots_used": 2, "slots_reserved": 0, "states": "", "queues": ["all.q"],
                       "running_jobs": 1}
        running.append({"id": 10 + index, "task": None, "state": "r", "queue": "all.q", "host": name,
                        "hosts": {name: 2}, "slots": 2, "start_time": T0 - 600})
    jobs = [{"id": 1000 + i, "state": "qw", "submit_time": (T0 - 3600 + i * 0.01) if submit_time else None,
             "task_count": 1, "slots": 1, "hard_requests": {}, "hard_queues": [], "held": False, "error": False}
            for i in range(pending)]
    return {"schema": 1, "taken_at": now, "hosts": hosts, "queues": [], "pending": jobs, "running": running}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--pending", type=int, default=200000, help="pending jobs (default 200,000)")
    parser.add_argument("--no-submit-time", action="store_true", help="jobs without a submit time")
    parser.add_argument("--unbounded", action="store_true",
                        help="one record per pending job, as before the bound (PENDING_RECORDS_LIMIT lifted)")
    args = parser.parse_args()
    if args.unbounded:
        elastic_state.PENDING_RECORDS_LIMIT = sys.maxsize
    config = {"master": "master", "max_nodes": 5, "stabilization_time": 0}
    state = {}
    for poll in (0, 1):
        now = T0 + 60 * poll
        snap = snapshot(now, args.pending, not args.no_submit_time)
        started = time.perf_counter()
        plan = elastic.decide(snap, state, config, now)
        took = time.perf_counter() - started
        state = plan["state"]
        started = time.perf_counter()
        size = len(dumps(state).encode("utf-8"))
        took_dumps = time.perf_counter() - started
        print("poll %d: %d pending jobs, %d per-job records in the state, state file %d bytes (%.2f MB); "
              "decide %.2f s, writing the text %.2f s" % (poll + 1, args.pending, len(state["jobs"]["pending"]),
                                                          size, size / 1e6, took, took_dumps))
    bound = getattr(elastic_state, "PENDING_RECORDS_LIMIT", None)
    print("records bound: %s" % ("none (one record per pending job)" if bound in (None, sys.maxsize) else bound))


if __name__ == "__main__":
    main()
