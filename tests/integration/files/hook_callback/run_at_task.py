# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback for tests/integration/test_infra_faults_real.py: a fault at a chosen task.

GEB_HOOK_TASK=name: when a task of that name (in a role or not) starts for the first time, the controller runs
GEB_HOOK_ARGV (a JSON list: the program and its arguments, no shell) and waits for it, so the
fault is in place before the task runs. GEB_HOOK_LOG=path: the hook's rc is written there.
"""

from __future__ import annotations

import json
import os
import subprocess

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = '''
name: run_at_task
type: aggregate
short_description: run a program when a given task starts (fault injection for integration tests)
description: Used by tests/integration/test_infra_faults_real.py only; see its docstring.
'''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'run_at_task'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.task = os.environ.get('GEB_HOOK_TASK')
        self.argv = json.loads(os.environ.get('GEB_HOOK_ARGV') or '[]')
        self.log = os.environ.get('GEB_HOOK_LOG')
        self.done = False

    def v2_playbook_on_task_start(self, task, is_conditional):
        name = task.get_name()  # a role's task is named "<role> : <task>"
        if self.done or not self.task or not (name == self.task or name.endswith(' : ' + self.task)):
            return
        self.done = True
        proc = subprocess.run(self.argv, check=False, timeout=120)
        if self.log:
            with open(self.log, 'w') as handle:
                handle.write('%d\n' % proc.returncode)
