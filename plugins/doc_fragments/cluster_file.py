# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """What the modules that keep one of a cluster's balancer files on the qmaster share
    (balancer_state, balancer_journal, balancer_journal_info, balancer_lock, task_registry): the
    option O(cluster), which names the file's directory. Each module
    documents O(path) itself, with its file's name. The argument spec is ``cluster_file_spec``
    in ``plugins/module_utils/balancer_state.py``. Their author and attributes are
    those of ``gridengine.balancer.attributes`` (with ``.diff``, or ``.no_diff`` for the read-only
    balancer_journal_info)."""

    DOCUMENTATION = r"""
options:
  cluster:
    description:
      - Name of the cluster; gives the default O(path), a file in
        C(/var/lib/gridengine-balancer/<cluster>/).
      - Letters, digits, V(_), V(.) and V(-), starting with a letter or digit.
      - One of O(cluster) and O(path) is required.
    type: str
"""
