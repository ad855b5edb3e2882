# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """What every Grid Engine module shares: its author, which installation, cell and qmaster to talk to
    (the argument spec is ``sge_argument_spec`` in ``plugins/module_utils/sge_cmd.py``), the
    action group ``gridengine.balancer.sge`` of ``meta/runtime.yml``, and the wording of the
    check and diff mode attributes (each module states its own ``support``).

    ``ADMIN`` (``gridengine.balancer.sge.admin``, listed after this one): what the modules that
    change a Grid Engine object through ``sge_admin.SgeAdmin`` add, full check and diff mode and
    the notes on check mode (the changing commands are only recorded) and on the ``commands``
    each of them returns (its RETURN says only what they are for that module).

    ``SHARES`` (``gridengine.balancer.sge.shares``): the share options of projects and user sets
    (sge_project, sge_userset; argument spec ``shares_spec`` in ``sge_access.py``)."""

    DOCUMENTATION = r"""
author:
  - gridengine.balancer developers (@gridengine)
options:
  sge_root:
    description:
      - Grid Engine installation directory (E(SGE_ROOT)). Must be an absolute path without control
        characters; otherwise the module fails, naming O(sge_root), before anything runs.
    type: path
    default: /var/lib/gridengine
  sge_cell:
    description:
      - Grid Engine cell (E(SGE_CELL)), one directory under O(sge_root) whose name has letters,
        digits, V(_), V(.) and V(-) only and does not start with V(.) or V(-) (so not V(..));
        otherwise the module fails, naming O(sge_cell), before anything runs.
    type: str
    default: default
  sge_qmaster_port:
    description:
      - TCP port of the qmaster (E(SGE_QMASTER_PORT)).
      - When not set, the value from C($SGE_ROOT/$SGE_CELL/common/settings.sh) is used, else
        Grid Engine's own default.
    type: int
attributes:
  action_group:
    description: Use C(group/gridengine.balancer.sge) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - gridengine.balancer.sge
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
"""

    SHARES = r"""
options:
  fshare:
    description:
      - Functional shares of the project, or of the department (a user set of type V(DEPT)). A
        new project or user set gets C(0) when not given; a negative number fails before anything runs.
    type: int
  oticket:
    description:
      - Override tickets of the project, or of the department. A new project or user set gets C(0)
        when not given; a negative number fails before anything runs.
    type: int
"""

    ADMIN = r"""
notes:
  - In check mode nothing is run that changes the cluster; the result tells what would change.
  - The result's C(commands) lists the commands that changed the cluster, in order; in check mode,
    those that would have run. C(FILE) stands for the temporary file a command reads the object
    from. When the task fails, C(commands) lists the commands run so far, the failing one last.
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
"""
