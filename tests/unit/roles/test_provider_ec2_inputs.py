# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""provider_ec2's launch checks the node name as a host name and the cluster name (issue 20).

Before, ``roles/provider_ec2/tasks/launch.yml`` only checked ``length > 0``: a node name with a
newline, a blank, ``$(...)`` or 10,000 characters went on to the instance's tags and, through
node_join, to Grid Engine and /etc/hosts lines. Now it uses the host-name pattern of node_join and
node_leave (RFC 1123, at most 253 characters) and the cluster pattern of node_leave, anchored
with ``\\Z``. The role's own ``assert`` conditions are evaluated with Ansible's templar, as
tests/unit/test_hostile_input.py does for the other roles, on its hostile values.
"""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.tests.unit.test_hostile_input import (
    HOSTILE_IDS, _asserts, _role_vars, failing, hostile)

# the roles' regexps end in \Z inside Jinja string literals: Jinja warns about the escape
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

LAUNCH = "roles/provider_ec2/tasks/launch.yml"
BASE = {"provider_cluster": "mycluster", "provider_node_name": "node003", "provider_ec2_image_id": "ami-12345678",
        "provider_ec2_instance_types": ["t3.micro"], "provider_ec2_subnet_ids": ["subnet-1"]}
# the pattern node_join's and node_leave's validate.yml use for a node name
NODE_JOIN_PATTERN = ("node_join_name is match('^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                     "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\Z')")


def _refused(**values):
    variables = _role_vars("provider_ec2", BASE)
    variables.update(values)
    return failing(_asserts(LAUNCH), variables)


@pytest.mark.parametrize("name", ["node003", "n1", "Node-7", "node003.example.org", "a" * 63,
                                  ".".join(["a" * 63] * 3) + "." + "a" * 61])
def test_host_names_pass(name):
    assert _refused(provider_ec2_node_name=name) == []


@pytest.mark.parametrize("kind", HOSTILE_IDS)
def test_hostile_node_names_are_refused(kind):
    assert _refused(provider_ec2_node_name=hostile(kind, "/tmp/owned"))


@pytest.mark.parametrize("name", ["", "node_3", "-node", "node-", "node..x", "node 3", "a" * 64,
                                  ".".join(["a" * 63] * 4), "node3.", "node3\n", 7])
def test_other_non_host_names_are_refused(name):
    assert _refused(provider_ec2_node_name=name)


@pytest.mark.parametrize("kind", HOSTILE_IDS)
def test_hostile_cluster_names_are_refused(kind):
    assert _refused(provider_ec2_cluster=hostile(kind, "/tmp/owned"))


def test_the_check_is_node_joins():
    """The node-name condition is node_join's, written out for this role's variable."""
    (ec2,) = [c for c in _asserts(LAUNCH) if "provider_ec2_node_name is match(" in c]
    assert ec2 == NODE_JOIN_PATTERN.replace("node_join_name", "provider_ec2_node_name")
    assert NODE_JOIN_PATTERN in _asserts("roles/node_join/tasks/validate.yml")
