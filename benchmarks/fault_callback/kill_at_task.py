# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback for benchmarks/fault_inject.py: kill the controller before its Nth task starts.

GEB_KILL_AT_TASK=N: at the start of the Nth task (1-based; every task start counts, included
tasks too) the whole process group of ansible-playbook gets SIGKILL, which is a controller that
dies between task N-1 and task N, workers and module processes included.
GEB_TASK_LOG=path: append each task start as "<n>\t<task name>" (to count and name the points).
"""

from __future__ import annotations

import os
import signal

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = '''
name: kill_at_task
type: aggregate
short_description: kill the controller before a given task (fault injection for benchmarks)
description: Used by benchmarks/fault_inject.py only; see its docstring.
'''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'kill_at_task'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.count = 0
        self.kill_at = int(os.environ.get('GEB_KILL_AT_TASK') or 0)
        self.log = os.environ.get('GEB_TASK_LOG')

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.count += 1
        if self.log:
            with open(self.log, 'a') as handle:
                handle.write('%d\t%s\n' % (self.count, task.get_name().replace('\n', ' ')))
        if self.kill_at and self.count == self.kill_at:
            os.killpg(os.getpgid(0), signal.SIGKILL)
