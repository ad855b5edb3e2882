# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """What the modules that keep one of a cluster's balancer files on the qmaster share
    (balancer_state, balancer_journal, balancer_journal_info, balancer_lock, task_registry): the
    option O(cluster), which names the file's directory. The argument spec is ``cluster_file_spec``
    in ``plugins/module_utils/balancer_state.py``. Their author and attributes are
    those of ``gridengine.balancer.attributes`` (with ``.diff``, or ``.no_diff`` for the read-only
    balancer_journal_info).

    O(path) names the file, so a module documents it itself, unless two modules keep the same
    file: ``JOURNAL`` (``gridengine.balancer.cluster_file.journal``, listed after this one) is the
    O(path) of the journal, for balancer_journal and balancer_journal_info."""

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

    JOURNAL = r"""
options:
  path:
    description:
      - Path of the journal on the target host. Overrides the default derived from O(cluster),
        C(/var/lib/gridengine-balancer/<cluster>/journal.json).
    type: path
"""
