# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The attributes of the collection's modules that run on a POSIX target with full check
    mode: ``DOCUMENTATION`` with full diff mode, ``NO_DIFF`` (``gridengine.balancer.attributes.no_diff``)
    without. A module adds its own ``details``; the attribute descriptions come from
    ``ansible.builtin.action_common_attributes``, which such a module lists before this one.
    The Grid Engine modules have theirs in ``gridengine.balancer.sge``, the controller-side ones
    in ``gridengine.balancer.controller``."""

    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
"""

    NO_DIFF = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""
