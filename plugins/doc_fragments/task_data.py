# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """What the modules that work on a node's task data share (task_data, task_data_info): the
    option O(data_root). The argument spec is ``data_root_spec`` in
    ``plugins/module_utils/task_data.py``. Their author and attributes are
    ``gridengine.balancer.attributes`` with ``.no_diff``."""

    DOCUMENTATION = r"""
options:
  data_root:
    description:
      - Absolute path of the node's task data root. C(/) and paths with control characters are
        refused (the module fails naming O(data_root)); nothing outside it is read or written.
    type: path
    default: /var/lib/gridengine-balancer/tasks
"""
