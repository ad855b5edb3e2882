# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The author and the attributes of the collection's modules that run on a POSIX target with
    full check mode, and of the controller-side ones (``gridengine.balancer.controller`` adds
    theirs). The attribute descriptions are ansible-core's
    (``ansible.builtin.action_common_attributes``), written here once so that a module need not
    list that fragment as well.

    ``DOCUMENTATION`` leaves the support of diff mode to the module: ``DIFF``
    (``gridengine.balancer.attributes.diff``) full, ``NO_DIFF``
    (``gridengine.balancer.attributes.no_diff``) none; a controller-side module has it from
    ``gridengine.balancer.controller.state`` or ``.plan``, or states it. A module adds its own
    ``details``. The Grid Engine modules have their attributes in ``gridengine.balancer.sge``."""

    DOCUMENTATION = r"""
author:
  - gridengine.balancer developers (@gridengine)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target, if not supported the action will be skipped.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode
  platform:
    description: Target OS/families that can be operated against
    support: N/A
    platforms: posix
"""

    DIFF = r"""
attributes:
  diff_mode:
    support: full
"""

    NO_DIFF = r"""
attributes:
  diff_mode:
    support: none
"""
