# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node name and address filters (plugins/filter/nodes.py)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gridengine.balancer.plugins.filter import nodes
from ansible_collections.gridengine.balancer.plugins.filter.nodes import (
    FilterModule,
    host_address,
    next_node_names,
    node_index,
)

try:
    from ansible.errors import AnsibleTypeError
except ImportError:  # pragma: no cover
    from ansible.errors import AnsibleFilterTypeError as AnsibleTypeError


# --------------------------------------------------------------------------- next_node_names

@pytest.mark.parametrize("existing, count, fmt, expected", [
    # the seed's example: node001, node003, node005 are up -> node006 next
    (["node001", "node003", "node005"], 2, "node%03d", ["node006", "node007"]),
    (["node005", "node001", "node003"], 1, "node%03d", ["node006"]),
    # the master and other names are ignored
    (["vm", "master", "node002", "gpu001"], 1, "node%03d", ["node003"]),
    # nothing matches: start at 1
    ([], 3, "node%03d", ["node001", "node002", "node003"]),
    (["vm"], 1, "node%03d", ["node001"]),
    (None, 1, "node%03d", ["node001"]),
    # only names the format makes exactly count: node01 / node0005 / Node009 are not node%03d
    (["node01", "node0005", "Node009", "node002"], 1, "node%03d", ["node003"]),
    # past the padding width
    (["node999"], 2, "node%03d", ["node1000", "node1001"]),
    (["node1000", "node999"], 1, "node%03d", ["node1001"]),
    # count 0
    (["node001"], 0, "node%03d", []),
    # count as a string of digits (Jinja often hands strings over)
    (["node001"], "2", "node%03d", ["node002", "node003"]),
    # other formats
    (["exec-7", "exec-12", "exec-x"], 1, "exec-%d", ["exec-13"]),
    (["exec-07"], 1, "exec-%d", ["exec-1"]),
    (["n1.cluster", "n2.cluster", "n2"], 1, "n%i.cluster", ["n3.cluster"]),
    (["x%1", "x%4"], 1, "x%%%u", ["x%5"]),
    (["c01-node"], 1, "c%02d-node", ["c02-node"]),
    # a dict counts with its keys (e.g. ansible_facts.sge.hosts)
    ({"vm": {}, "node004": {}, "node002": {}}, 1, "node%03d", ["node005"]),
    # duplicates and non-strings are harmless
    (["node002", "node002", 7, None], 1, "node%03d", ["node003"]),
    # tuples and sets
    (("node002",), 1, "node%03d", ["node003"]),
    ({"node008"}, 1, "node%03d", ["node009"]),
])
def test_next_node_names(existing, count, fmt, expected):
    assert next_node_names(existing, count, fmt) == expected


def test_next_node_names_defaults():
    assert next_node_names(["node001", "node003", "node005"]) == ["node006"]
    assert next_node_names([], 2, start=10) == ["node010", "node011"]
    # start only applies when nothing matches
    assert next_node_names(["node002"], 1, start=10) == ["node003"]


def test_next_node_names_never_returns_an_existing_name():
    existing = ["node%03d" % n for n in (1, 2, 3, 7, 9, 10, 11)]
    new = next_node_names(existing, 5)
    assert not set(new) & set(existing)
    assert new == ["node012", "node013", "node014", "node015", "node016"]


@pytest.mark.parametrize("fmt", [
    "node", "", "node%s", "node%d%d", "%03d-%s", "node%.3d", "node%x", "node%-3d", "node%", "n%(i)d",
    None, 3,
])
def test_next_node_names_bad_format(fmt):
    with pytest.raises(AnsibleFilterError) as err:
        next_node_names(["node001"], 1, fmt)
    assert "format" in str(err.value)


@pytest.mark.parametrize("count", [-1, "x", "-1", 1.5, True, None])
def test_next_node_names_bad_count(count):
    with pytest.raises((AnsibleFilterError, AnsibleTypeError)) as err:
        next_node_names(["node001"], count)
    assert "count" in str(err.value)


def test_next_node_names_rejects_a_single_string():
    with pytest.raises(AnsibleTypeError) as err:
        next_node_names("node001", 1)
    assert "list of node names" in str(err.value)


def test_next_node_names_rejects_a_non_iterable():
    with pytest.raises(AnsibleTypeError):
        next_node_names(5, 1)


# avoid: names of nodes removed recently (elastic_plan's plan.recently_removed)

@pytest.mark.parametrize("existing, count, avoid, expected", [
    # node003 was the highest and left a minute ago: without avoid it would be handed out again
    (["master", "node001", "node002"], 1, ["node003"], ["node004"]),
    (["master", "node001", "node002"], 1, [], ["node003"]),
    (["master", "node001", "node002"], 1, None, ["node003"]),
    # several in a row, and one further up: passed over, the numbers in between are used
    (["node001"], 3, ["node002", "node003", "node005"], ["node004", "node006", "node007"]),
    # avoided names below the highest existing one change nothing (gaps are never filled)
    (["node001", "node005"], 1, ["node002", "node003"], ["node006"]),
    # they do not move the first number either: node002 is free although node004 is avoided
    (["node001"], 1, ["node004"], ["node002"]),
    # names the format does not make exactly are ignored
    (["node001"], 1, ["node02", "vm", "node0002", 7, None], ["node002"]),
    # a dictionary counts with its keys
    (["node001"], 1, {"node002": 1700000000.0}, ["node003"]),
    # no existing node: start, passing over avoided names
    ([], 2, ["node001"], ["node002", "node003"]),
    ([], 0, ["node001"], []),
])
def test_next_node_names_avoid(existing, count, avoid, expected):
    new = next_node_names(existing, count, avoid=avoid)
    assert new == expected
    assert not set(new) & set(existing) and not set(new) & set(avoid or [])


def test_next_node_names_avoid_with_another_format_and_start():
    assert next_node_names(["exec-7"], 2, "exec-%d", avoid=["exec-8", "exec-10"]) == ["exec-9", "exec-11"]
    assert next_node_names([], 1, start=10, avoid=["node010"]) == ["node011"]


def test_next_node_names_avoid_must_be_a_list():
    with pytest.raises(AnsibleTypeError) as err:
        next_node_names(["node001"], 1, avoid="node002")
    assert "avoid must be a list of node names" in str(err.value)
    with pytest.raises(AnsibleTypeError):
        next_node_names(["node001"], 1, avoid=5)


# --------------------------------------------------------------------------- node_index

@pytest.mark.parametrize("name, fmt, expected", [
    ("node001", "node%03d", 1),
    ("node020", "node%03d", 20),
    ("node1000", "node%03d", 1000),
    ("exec-12", "exec-%d", 12),
    ("n3.cluster", "n%i.cluster", 3),
])
def test_node_index(name, fmt, expected):
    assert node_index(name, fmt) == expected


def test_node_index_default_format():
    assert node_index("node005") == 5


@pytest.mark.parametrize("name", ["vm", "node01", "node0005", "node", "xnode001", "node001x", None, 1])
def test_node_index_not_a_node_name(name):
    with pytest.raises(AnsibleFilterError) as err:
        node_index(name)
    assert "is not a node name" in str(err.value)


# --------------------------------------------------------------------------- host_address

@pytest.mark.parametrize("value, expected", [
    ("10.77.0.30", "10.77.0.30"),
    ("192.168.1.1", "192.168.1.1"),
    ("10.0.0.0", "10.0.0.0"),         # a host may have the first address of a larger network
    ("2001:DB8:0:0::1", "2001:db8::1"),
    ("fe80::1", "fe80::1"),
    ("::ffff:10.0.0.1", "::ffff:a00:1"),
])
def test_host_address_valid(value, expected):
    assert host_address(value) == expected


@pytest.mark.parametrize("value, words", [
    ("*", "not a single"),
    ("10.0.0.0/8", "not a single"),
    ("10.77.0.30/32", "not a single"),
    ("10.77.0.30(rw) *", "not a single"),
    ("10.77.0.30 *", "not a single"),
    ("node020", "not a single"),
    ("10.77.0", "not a single"),
    ("10.77.0.300", "not a single"),
    ("010.77.0.30", "not a single"),
    ("10.77.0.30-40", "not a single"),
    ("", "empty"),
    (" 10.77.0.30", "spaces"),
    ("10.77.0.30\n", "spaces"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("127.0.0.1", "loopback"),
    ("127.0.1.1", "loopback"),
    ("::1", "loopback"),
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("fe80::1%eth0", "zone"),
])
def test_host_address_refused(value, words):
    with pytest.raises(AnsibleFilterError) as err:
        host_address(value)
    assert words in str(err.value)
    assert repr(value) in str(err.value)


@pytest.mark.parametrize("value", [None, 10, ["10.0.0.1"], {"a": 1}])
def test_host_address_not_a_string(value):
    with pytest.raises(AnsibleTypeError):
        host_address(value)


# --------------------------------------------------------------------------- plugin

def test_filter_module_lists_the_filters():
    filters = FilterModule().filters()
    assert filters == {
        "next_node_names": next_node_names,
        "node_index": node_index,
        "host_address": host_address,
    }
    assert nodes.DEFAULT_FORMAT == "node%03d"
