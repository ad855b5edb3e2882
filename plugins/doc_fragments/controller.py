# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The attributes that the modules that are action plugins running on the controller
    (``plugins/action/``), the decisions and the poll loop, add to ``gridengine.balancer.attributes``
    (listed before this fragment): those of ansible-core's
    ``ansible.builtin.action_common_attributes.flow``, with their descriptions written here once so
    that a module need not list that fragment as well.

    ``DOCUMENTATION``: what all of them share. ``STATE``: a decision that saves its state file on
    the qmaster with M(gridengine.balancer.balancer_state) (check mode writes nothing, diff shows
    the file). ``PLAN``: a decision that only plans (nothing changes in either mode; a note says
    so). A module that is neither (the poll loop) states its own check mode details and diff mode
    support."""

    DOCUMENTATION = r"""
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller
    support: full
  async:
    description: Supports being used with the C(async) keyword
    support: none
  bypass_host_loop:
    description:
      - Forces a 'global' task that does not execute per host, this bypasses per host templating and serial,
        throttle and other loop considerations
      - Conditionals will work as if C(run_once) is being used, variables used will be from the first available host
      - This action will not work normally outside of lockstep strategies
    support: none
"""

    STATE = r"""
attributes:
  diff_mode:
    support: full
    details: Shows the state file's text before and after.
"""

    PLAN = r"""
notes:
  - The plan is only a decision; it changes nothing and always reports C(changed=false).
attributes:
  check_mode:
    details: The plan is computed the same way; nothing is changed in either mode.
  diff_mode:
    support: none
"""
