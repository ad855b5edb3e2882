# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/sge_objects.py on its own (standard library and pytest only, so
scripts/unit_nodes_python.sh runs it under the nodes' /usr/bin/python3 as well).

The complex list is the real ``qconf -sc`` of the local cluster
(tests/unit/fixtures/qconf/captured_objects/qconf_sc.txt, written by
tests/capture/capture_qconf_objects.py: PROVENANCE-objects.md)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import SgeAdminError
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_objects import (
    checked_parameters,
    complex_defaults,
    complex_same,
    parse_complexes,
    render_complexes,
)

SC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "qconf", "captured_objects",
                  "qconf_sc.txt")


def _sc():
    with open(SC) as handle:
        return handle.read()


def test_the_captured_list_is_read_whole():
    entries = parse_complexes(_sc())
    assert len(entries) == len([ln for ln in _sc().splitlines() if not ln.startswith("#")]) == 52
    assert entries["slots"] == {"shortcut": "s", "type": "INT", "relop": "<=", "requestable": "YES",
                                "consumable": "YES", "default": "1", "urgency": "1000", "extra": []}
    assert list(entries)[:2] == ["arch", "calendar"]


def test_rendering_gives_back_what_qconf_prints():
    assert render_complexes(parse_complexes(_sc())) == _sc()


def test_extra_columns_of_other_grid_engines_are_kept():
    text = "gpu   gpu   RSMAP   <=   YES   YES   0   0   NONE   0\n"
    entries = parse_complexes(text)
    assert entries["gpu"]["extra"] == ["NONE", "0"]
    assert render_complexes(entries).splitlines()[2].split() == text.split()


def test_a_short_line_is_an_error_naming_it():
    with pytest.raises(SgeAdminError, match="cannot read the line 'gpu gpu INT'"):
        parse_complexes("gpu gpu INT\n")


@pytest.mark.parametrize("ctype, relop, default", [
    ("INT", "<=", "0"), ("MEMORY", "<=", "0"), ("TIME", "<=", "0"), ("RESTRING", "==", "NONE"),
    ("HOST", "==", "NONE"), ("BOOL", "==", "FALSE"),
])
def test_defaults_of_a_new_attribute(ctype, relop, default):
    got = complex_defaults(ctype)
    assert (got["relop"], got["default"], got["requestable"], got["consumable"], got["urgency"]) == \
        (relop, default, "YES", "NO", "0")


@pytest.mark.parametrize("field, a, b, same", [
    ("type", "int", "INT", True), ("consumable", "yes", "YES", True), ("default", "0:0:0", "0", True),
    ("urgency", "1000", "1000.0", True), ("shortcut", "S", "s", False), ("relop", "<=", "<", False),
])
def test_columns_compared_as_grid_engine_means_them(field, a, b, same):
    assert complex_same(field, a, b) is same


def test_parameters_are_checked_and_ordered():
    assert list(checked_parameters({"b": True, "a": 1, "c": None}, "p", keep_none=True).items()) == \
        [("a", "1"), ("b", "TRUE"), ("c", None)]
    assert checked_parameters({"c": None}, "p") == {"c": "NONE"}
    with pytest.raises(SgeAdminError, match="p: '-Mconf' is not a valid name"):
        checked_parameters({"-Mconf": 1}, "p")
    with pytest.raises(SgeAdminError, match="p.x: value"):
        checked_parameters({"x": "1\nmaxujobs 2"}, "p")
