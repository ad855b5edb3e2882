# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_leave reads the node's address from the master's /etc/hosts (issue 20, finding 6).

Before, the first word of any line whose second word was the node was taken, so a commented line
``#10.77.0.99 node005`` gave ``#10.77.0.99``; the host_address filter failed the removal after
the node had left Grid Engine and before the provider terminated it, and every later poll
replayed the journal into the same failure. Now comments are dropped, the node may be any name of
the line (aliases), and only addresses are kept. The task's own Jinja is rendered here with
Ansible's templar.
"""

from __future__ import annotations

import base64
import os

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gridengine.balancer.plugins.filter.nodes import host_address

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def _addresses(hosts, node="node005", hostvars=None):
    tasks = DataLoader().load_from_file(os.path.join(REPO, "roles", "node_leave", "tasks", "remove_rest.yml"))
    block = [t for t in tasks if "block" in t and t["name"].startswith("Remove the rest of an exec node")][0]["block"]
    spec = [t for t in block if t["name"] == "Remember the node's addresses"][0]["ansible.builtin.set_fact"]
    variables = {"node_leave_hosts": {"content": base64.b64encode(hosts.encode()).decode()},
                 "node_leave_name": node, "hostvars": hostvars or {}}
    templar = Templar(loader=DataLoader(), variables=variables)
    # the collection's filter is applied here (the unit templar has no collection loader); it is
    # the same function the role calls
    expression = spec["node_leave_addresses"].replace("| map('gridengine.balancer.host_address')", "")
    assert expression != spec["node_leave_addresses"]
    return [host_address(a) for a in templar.template(trust_as_template(expression))]


HOSTS = """127.0.0.1 localhost
# written by node_join
#10.77.0.99 node005
   # 10.77.0.98 node005
10.77.0.5 node005
10.77.0.50 node0050
10.77.0.51 other node005x
10.77.0.6\tnode006 node005-old
10.77.0.7 node007.example.org node007 # node005 was here
fd00::5 node005.example.org node005
"""


def test_commented_lines_and_other_nodes_are_not_the_node():
    assert sorted(_addresses(HOSTS)) == ["10.77.0.5", "fd00::5"]


@pytest.mark.parametrize("line, expected", [
    ("#10.77.0.99 node005\n", []),
    ("10.77.0.5 node005 # comment\n", ["10.77.0.5"]),
    ("10.77.0.5 alias node005\n", ["10.77.0.5"]),
    ("10.77.0.5 node005#x\n", ["10.77.0.5"]),     # hosts(5): a comment starts anywhere
    ("10.77.0.5#node005\n", []),
    ("junk-word node005\n", []),        # not an address: left for a person, never fails the removal
    ("", []),
])
def test_one_line(line, expected):
    assert _addresses(line) == expected


def test_the_removed_lines_are_the_node_lines_not_comments():
    variables = DataLoader().load_from_file(os.path.join(REPO, "roles", "node_leave", "vars", "main.yml"))
    import re  # pylint: disable=import-outside-toplevel
    regexp = re.compile(variables["node_leave_hosts_regexp"].format(re.escape("node005")))
    assert regexp.search("10.77.0.5 node005")
    assert regexp.search("  10.77.0.5\tnode005 alias")
    for kept in ("#10.77.0.99 node005", "# 10.77.0.99 node005", "10.77.0.50 node0050", "10.77.0.6 node006 node005"):
        assert not regexp.search(kept), kept


def test_the_controller_forgets_the_node_host_keys_after_terminating_it():
    """provider_ec2 connects with StrictHostKeyChecking=accept-new: the host key of a removed node
    stayed in the controller's known_hosts, and a new instance on the reused address (or name) was
    refused as a changed host key (issue 20, finding 7)."""
    tasks = DataLoader().load_from_file(os.path.join(REPO, "roles", "node_leave", "tasks", "remove_rest.yml"))
    names = [t.get("name", "") for t in tasks]
    terminate = [i for i, n in enumerate(names) if n.startswith("Terminate the node with the provider")][0]
    block = [t for t in tasks if t.get("name") == "Remove the node's /etc/hosts lines"][0]
    assert names.index("Remove the node's /etc/hosts lines") > terminate
    forget = [t for t in block["block"] if "ansible.builtin.known_hosts" in t]
    assert len(forget) == 1
    spec = forget[0]["ansible.builtin.known_hosts"]
    assert spec["state"] == "absent" and spec["name"] == "{{ item }}"
    assert forget[0]["delegate_to"] == "localhost" and forget[0]["become"] is False
    assert "node_leave_name" in forget[0]["loop"] and "node_leave_addresses" in forget[0]["loop"]
