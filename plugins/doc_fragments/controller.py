# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The attributes of the modules that are action plugins running on the controller
    (``plugins/action/``): the decisions and the poll loop. The attribute descriptions come from
    ``ansible.builtin.action_common_attributes`` and its ``.flow``, which such a module lists
    before this fragment.

    ``DOCUMENTATION``: what all of them share. ``STATE``: a decision that saves its state file on
    the qmaster with M(gridengine.balancer.balancer_state) (check mode writes nothing, diff shows
    the file). ``PLAN``: a decision that only plans (nothing changes in either mode)."""

    DOCUMENTATION = r"""
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  platform:
    platforms: posix
"""

    STATE = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Shows the state file's text before and after.
"""

    PLAN = r"""
attributes:
  check_mode:
    support: full
    details: The plan is computed the same way; nothing is changed in either mode.
  diff_mode:
    support: none
"""
