# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's modules put in their results the same way (target side, standard
library only, Python >= 3.8): the ``diff`` of diff mode, a text before and after under one
header (the Grid Engine object, or the balancer file's path)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def with_diff(module, result, before, after, header):
    """``result`` with a ``diff`` of the texts ``before`` and ``after`` (both under ``header``)
    when the task runs in diff mode."""
    if module._diff:
        result["diff"] = dict(before=before, after=after, before_header=header, after_header=header)
    return result
