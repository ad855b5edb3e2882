# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """What the EC2 node modules share (ec2_node, ec2_node_info): the cluster whose instances they
    work on and the retries of throttled API calls. The argument spec is
    ``ec2_argument_spec`` in ``plugins/module_utils/ec2_nodes.py``. Such a module lists
    ``gridengine.balancer.attributes`` (author, attributes) and the ``amazon.aws`` fragments
    (credentials, region, boto3) before this one, and ``gridengine.balancer.attributes.no_diff``."""

    DOCUMENTATION = r"""
options:
  cluster:
    description:
      - The cluster (the tag C(gridengine-balancer:cluster)).
      - 1-255 letters, digits, V(_), V(.) or V(-), starting with a letter or digit; anything else
        fails the module, naming O(cluster), before any API call.
    type: str
    required: true
  api_retries:
    description:
      - How many times a throttled API call is retried (jittered exponential back-off); V(0) makes one
        call only.
    type: int
    default: 10
  api_retry_delay:
    description: First back-off delay in seconds.
    type: float
    default: 3
"""
