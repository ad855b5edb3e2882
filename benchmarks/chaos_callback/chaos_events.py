# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback for benchmarks/chaos_real.py: the balancer's events as JSON lines, in real time.

GEB_CHAOS_EVENTS=path: append one JSON object per line and flush at once:
  {"t": epoch, "ev": "task", "name": ...}            every task start
  {"t": ..., "ev": "plan", "add": N, "remove": [...], "msg": ...}   each decision
  {"t": ..., "ev": "leave", "result": {...}}          node_leave's outcome (removed or kept, why)
  {"t": ..., "ev": "join", "result": {...}}           node_join's outcome
  {"t": ..., "ev": "failed"|"unreachable", "task": ..., "host": ..., "msg": ...}
It keeps nothing in memory between events (the soak measures the controller's memory, so the
callback must not grow with the run, as the stock JSON callbacks do).
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = '''
name: chaos_events
type: aggregate
short_description: the balancer's events as JSON lines (benchmarks/chaos_real.py)
description: Used by benchmarks/chaos_real.py only; see its docstring.
'''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'chaos_events'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.path = os.environ.get('GEB_CHAOS_EVENTS')

    def _write(self, **event):
        if not self.path:
            return
        event['t'] = round(time.time(), 3)
        with open(self.path, 'a') as handle:
            handle.write(json.dumps(event, default=str) + '\n')

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write(ev='task', name=task.get_name())

    def v2_runner_on_ok(self, result):
        facts = result._result.get('ansible_facts') or {}
        for key, kind in (('node_leave_result', 'leave'), ('node_join_result', 'join')):
            if key in facts:
                self._write(ev=kind, result=facts[key])
        plan = result._result.get('plan')
        if result._task.get_name() == 'Decide what to add and remove' and isinstance(plan, dict):
            self._write(ev='plan', add=plan.get('add'), remove=plan.get('remove'),
                        msg=result._result.get('msg', ''))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(ev='ignored' if ignore_errors else 'failed', task=result._task.get_name(),
                    host=result._host.get_name(), msg=str(result._result.get('msg', ''))[:500])

    def v2_runner_on_unreachable(self, result):
        self._write(ev='unreachable', task=result._task.get_name(), host=result._host.get_name(),
                    msg=str(result._result.get('msg', ''))[:500])
