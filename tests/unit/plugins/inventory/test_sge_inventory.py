# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure part of the inventory plugin (plugins/plugin_utils/sge_inventory.py).

Inputs are the real captures in tests/unit/fixtures/inventory/ (see PROVENANCE.md there); a
variant of a real file is made by the ``replace`` of its table row, on top of the unedited file.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils import sge_inventory as inv

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "inventory")


def fixture(name, replace=()):
    with open(os.path.join(FIX, name), "rb") as handle:
        data = handle.read()
    for old, new in replace:
        assert old.encode() in data, (name, old)
        data = data.replace(old.encode(), new.encode())
    return data


GIB = 1024 ** 3
MIB = 1024 ** 2

# --------------------------------------------------------------------------- build_inventory

BUILD_CASES = [
    {
        "id": "real-vm-only",
        "qhost": "qhost_xml_q_vm.xml",
        "groups": "qconf_shgrp_allhosts_vm.txt",
        "master": "qconf_sss.txt",
        "flavour": "SoGE 8.1",
        "hosts": {
            "vm": {"slots": 2, "slots_used": 0, "slots_free": 2, "state": [], "load_avg": 0.60,
                   "mem_total": int(round(23.5 * GIB)), "mem_used": int(round(587.3 * MIB)),
                   "num_proc": 2,
                   "arch": "lx-amd64", "hostgroups": ["@allhosts"],
                   "queues": {"all.q": {"qtype": "BIP", "slots": 2, "used": 0, "reserved": 0,
                                        "state": ""}}},
        },
        "hostgroups": {"@allhosts": ["vm"]},
        "queues": {"all.q": ["vm"]},
        "states": {"": ["vm"]},
        "master_name": "vm",
    },
    {
        "id": "real-three-hosts",
        "qhost": "qhost_xml_q_3hosts.xml",
        "groups": "qconf_shgrp_allhosts_3hosts.txt",
        "hosts": {
            "node001": {"slots": 2, "state": [], "load_avg": 0.64,
                        "mem_used": int(round(514.7 * MIB)), "swap_total": 0,
                        "hostgroups": ["@allhosts"]},
            "node002": {"slots": 2, "state": [], "hostgroups": ["@allhosts"]},
            "vm": {"slots": 2, "state": [], "load_avg": 0.65, "hostgroups": ["@allhosts"]},
        },
        "hostgroups": {"@allhosts": ["node001", "node002", "vm"]},
        "queues": {"all.q": ["node001", "node002", "vm"]},
        "states": {"": ["node001", "node002", "vm"]},
        "master_name": None,
    },
    {
        "id": "real-node-not-reporting",
        "qhost": "qhost_q_local_soge819.xml",
        "groups": None,
        "hosts": {
            "node002": {"slots": 2, "state": ["a", "u"], "load_avg": None, "mem_total": None,
                        "arch": None, "num_proc": None, "hostgroups": []},
            "vm": {"slots": 2, "state": [], "load_avg": 1.22},
        },
        "hostgroups": {},
        "queues": {"all.q": ["node002", "vm"]},
        "states": {"a": ["node002"], "u": ["node002"], "": ["vm"]},
    },
    {
        "id": "fqdn-nested-groups",
        "qhost": "handmade_qhost_q_soge819_fqdn.xml",
        "groups": "handmade_qconf_shgrp_nested.txt",
        "hosts": {
            "ip-10-0-0-116.eu-west-1.compute.internal": {
                "slots": 4, "state": ["a", "u"], "hostgroups": ["@allhosts", "@compute"]},
            # listed as the short name ip-10-0-0-166 in @compute
            "ip-10-0-0-166.eu-west-1.compute.internal": {
                "slots": 4, "state": [], "hostgroups": ["@allhosts", "@compute"]},
            "ip-10-0-0-52.eu-west-1.compute.internal": {
                "slots": 8, "state": ["d"], "hostgroups": ["@allhosts", "@big"]},
        },
        "hostgroups": {
            "@allhosts": ["ip-10-0-0-116.eu-west-1.compute.internal",
                          "ip-10-0-0-166.eu-west-1.compute.internal",
                          "ip-10-0-0-52.eu-west-1.compute.internal"],
            "@big": ["ip-10-0-0-52.eu-west-1.compute.internal"],
            "@compute": ["ip-10-0-0-116.eu-west-1.compute.internal",
                         "ip-10-0-0-166.eu-west-1.compute.internal"],
            "@empty": [],
        },
        "states": {"a": ["ip-10-0-0-116.eu-west-1.compute.internal"],
                   "u": ["ip-10-0-0-116.eu-west-1.compute.internal"],
                   "d": ["ip-10-0-0-52.eu-west-1.compute.internal"],
                   "": ["ip-10-0-0-166.eu-west-1.compute.internal"]},
        # ip-10-0-0-7 is in @compute but no execution host
        "notes": ["ip-10-0-0-7.eu-west-1.compute.internal"],
    },
    {
        "id": "two-queues",
        "qhost": "handmade_qhost_q_two_queues.xml",
        "groups": "qconf_shgrp_allhosts_3hosts.txt",
        "hosts": {
            "node001": {"slots": 6, "slots_used": 3, "slots_reserved": 1, "slots_free": 2,
                        "state": ["d"]},
            "node002": {"slots": 2, "slots_used": 2, "slots_free": 0, "state": []},
            "vm": {"slots": 6, "slots_used": 0, "slots_free": 6, "state": ["E"],
                   "queues": {"all.q": {"qtype": "BIP", "slots": 2, "used": 0, "reserved": 0,
                                        "state": ""},
                              "big.q": {"qtype": "BIP", "slots": 4, "used": 0, "reserved": 0,
                                        "state": "E"}}},
        },
        "queues": {"all.q": ["node001", "node002", "vm"], "big.q": ["node001", "vm"]},
        "states": {"d": ["node001"], "E": ["vm"], "": ["node002"]},
    },
    {
        "id": "ge62-flavour",
        "qhost": "handmade_qhost_q_sge62.xml",
        "groups": None,
        "flavour": "SGE 6.2",
        "hosts": {"worker": {"slots": 1, "state": [], "load_avg": 0.01}},
        "queues": {"general.q": ["worker"]},
    },
]


@pytest.mark.parametrize("case", BUILD_CASES, ids=[c["id"] for c in BUILD_CASES])
def test_build_inventory(case):
    group_text = fixture(case["groups"]) if case.get("groups") else None
    master = fixture(case["master"]).decode() if case.get("master") else None
    model = inv.build_inventory(fixture(case["qhost"]), hostgroup_text=group_text, master=master)
    assert model["schema"] == inv.MODEL_SCHEMA
    assert model["warnings"] == []
    if "flavour" in case:
        assert model["flavour"] == case["flavour"]
    assert sorted(model["hosts"]) == sorted(case["hosts"])
    for host, expected in case["hosts"].items():
        for key, value in expected.items():
            assert model["hosts"][host][key] == value, (host, key)
    for key in ("hostgroups", "queues", "states"):
        if key in case:
            assert model[key] == case[key], key
    if "master_name" in case:
        assert model["master"] == case["master_name"]
    for member in case.get("notes", []):
        assert any(member in note for note in model["notes"]), model["notes"]
    # what the plugin caches must survive JSON (the jsonfile cache plugin)
    assert json.loads(json.dumps(model)) == model


# --------------------------------------------------------------------------- broken input

BROKEN_CASES = [
    ("broken/xenon_jobs-empty.xml", (), "qhost -xml: document is empty"),
    ("broken/xenon_jobs-no-document-element.xml", (), "no document element"),
    ("broken/diamond_707.xml", (), "root element is <job_info>, expected <qhost>"),
    ("broken/xenon_queues.xml", (), "root element is <job_info>, expected <qhost>"),
    ("broken/xenon_jobs-wrong-schema.xml", (), "root element is <job_info>"),
    # variants of a real capture
    ("qhost_xml_q_3hosts.xml", (("</qhost>", ""),),
     "document ends before its root element is closed"),
    ("qhost_xml_q_3hosts.xml", (("<?xml version='1.0'?>", "\n<?xml version='1.0'?>"),),
     "XML or text declaration not at start of entity"),
    ("qhost_xml_q_3hosts.xml", (("arc.liv.ac.uk/repos/darcs/sge", "example.org/other"),),
     "unrecognised schema"),
    ("qhost_xml_q_3hosts.xml",
     (("<?xml version='1.0'?>",
       "<?xml version='1.0'?>\n<!DOCTYPE qhost [<!ENTITY big \"x\">]>"),),
     "document type/entity declarations are not accepted"),
    ("qhost_xml_q_3hosts.xml", (("<host name='node001'>", "<host>"),), "host without name"),
]


@pytest.mark.parametrize("name, replace, message", BROKEN_CASES)
def test_build_inventory_broken(name, replace, message):
    with pytest.raises(inv.InventoryDataError) as err:
        inv.build_inventory(fixture(name, replace))
    assert message in str(err.value)
    assert str(err.value).startswith("qhost -xml")


# --------------------------------------------------------------------------- hostile names

HOSTILE_CASES = [
    # host names: never a host, never a group member, named in a warning
    ("host", "node001;touch /tmp/x", "node001"),
    ("host", "-oProxyCommand=touch /tmp/x", "node001"),
    ("host", "{{ lookup('pipe', 'id') }}", "node001"),
    ("host", "node001\n", "node001"),
    ("host", "node_001", "node001"),
    ("host", "a" * 64, "node001"),
    # queue names: the queue is skipped, the host stays
    ("queue", "-q", "all.q"),
    ("queue", "all.q;id", "all.q"),
    ("queue", "$(id)", "all.q"),
]


@pytest.mark.parametrize("kind, bad, original", HOSTILE_CASES)
def test_hostile_names_are_skipped(kind, bad, original):
    if kind == "host":
        replace = (("<host name='%s'>" % original,
                    "<host name='%s'>" % bad.replace("'", "&apos;").replace("\n", "&#10;")),)
    else:
        replace = (("'%s'" % original, "'%s'" % bad),)
    model = inv.build_inventory(fixture("qhost_xml_q_3hosts.xml", replace),
                                hostgroup_text=fixture("qconf_shgrp_allhosts_3hosts.txt"))
    text = json.dumps(model["hosts"]) + json.dumps(model["queues"]) + json.dumps(model["hostgroups"])
    assert json.dumps(bad)[1:-1] not in text
    assert any(repr(bad) in w for w in model["warnings"]), model["warnings"]
    if kind == "host":
        assert sorted(model["hosts"]) == ["node002", "vm"]
        assert model["hostgroups"]["@allhosts"] == ["node002", "vm"]
    else:
        assert sorted(model["hosts"]) == ["node001", "node002", "vm"]
        assert model["queues"] == {}
        assert model["hosts"]["vm"]["slots"] == 0


def test_hostile_master_is_skipped():
    model = inv.build_inventory(fixture("qhost_xml_q_vm.xml"), master="vm;id\n")
    assert model["master"] is None
    assert model["warnings"] == ["qconf -sss: skipped master 'vm;id' (not a valid host name)"]


def test_master_matched_case_insensitively_and_outside_qhost():
    model = inv.build_inventory(fixture("qhost_xml_q_vm.xml"), master="VM\n")
    assert model["master"] == "vm"
    model = inv.build_inventory(fixture("qhost_xml_q_vm.xml"), master="qmaster.example.org")
    assert model["master"] == "qmaster.example.org"
    assert "qmaster.example.org" not in model["hosts"]


# --------------------------------------------------------------------------- qconf helpers

@pytest.mark.parametrize("text, names, warned", [
    (fixture("qconf_shgrpl.txt"), ["@allhosts"], []),
    (fixture("handmade_qconf_shgrpl_nested.txt"), ["@allhosts", "@big", "@compute", "@empty"], []),
    (b"no host group list defined\n", [], []),
    (b"", [], []),
    (b"@ok\n@bad;id\n-shgrp\n@ok\n", ["@ok"], ["'@bad;id'", "'-shgrp'"]),
])
def test_parse_hostgroup_names(text, names, warned):
    warnings = []
    assert inv.parse_hostgroup_names(text, warnings) == names
    assert len(warnings) == len(warned)
    for fragment, warning in zip(warned, warnings):
        assert fragment in warning


def test_parse_hostgroups_real_and_continuation():
    warnings = []
    assert inv.parse_hostgroups(fixture("qconf_shgrp_allhosts_3hosts.txt"), warnings) == {
        "@allhosts": ["vm", "node001", "node002"]}
    groups = inv.parse_hostgroups(fixture("handmade_qconf_shgrp_nested.txt"), warnings)
    assert groups["@compute"] == ["ip-10-0-0-116.eu-west-1.compute.internal", "ip-10-0-0-166",
                                  "ip-10-0-0-7.eu-west-1.compute.internal"]
    assert groups["@empty"] == []
    assert groups["@allhosts"] == ["@compute", "@big"]
    assert warnings == []


def test_parse_hostgroups_rejects_garbage():
    with pytest.raises(inv.InventoryDataError, match="unexpected line before the first group_name"):
        inv.parse_hostgroups(b"error: something else\ngroup_name @a\nhostlist x\n", [])
    warnings = []
    assert inv.parse_hostgroups(b"group_name @a;id\nhostlist x\n", warnings) == {}
    assert "'@a;id'" in warnings[0]


def test_resolve_hostgroups_cycles_and_undefined():
    warnings = []
    groups = {"@a": ["@b", "h1"], "@b": ["@a", "h2", "@ghost"], "@c": ["@a", "h1"]}
    resolved = inv.resolve_hostgroups(groups, warnings)
    assert resolved["@a"] == ["h2", "h1"]
    assert resolved["@c"] == ["h2", "h1"]
    assert any("cycle" in w and "@a -> @b -> @a" in w for w in warnings), warnings
    assert any("'@ghost' is not defined" in w for w in warnings), warnings


def test_shgrp_args():
    assert inv.shgrp_args(["@allhosts", "@big"]) == ["-shgrp", "@allhosts", "-shgrp", "@big"]
    for bad in ("allhosts", "@a b", "-shgrp", "@a;id", ""):
        with pytest.raises(inv.InventoryDataError):
            inv.shgrp_args([bad])


@pytest.mark.parametrize("err, harmless", [
    (fixture("qconf_shgrp_allhosts_nosuch.err"), True),
    (fixture("qconf_shgrpl_port6999.err"), False),
    (b"", False),
    (b'Host group "@a" does not exist\nerror: commlib error\n', False),
])
def test_hostgroup_error_is_harmless(err, harmless):
    assert inv.hostgroup_error_is_harmless(err) is harmless


def test_group_names_and_host_variables():
    model = inv.build_inventory(fixture("handmade_qhost_q_two_queues.xml"),
                                hostgroup_text=fixture("qconf_shgrp_allhosts_3hosts.txt"),
                                master="vm")
    assert inv.group_names(model, "c") == {
        "c_hostgroup_allhosts": ["node001", "node002", "vm"],
        "c_queue_all.q": ["node001", "node002", "vm"],
        "c_queue_big.q": ["node001", "vm"],
        "c_state_disabled": ["node001"],
        "c_state_error": ["vm"],
        "c_state_ok": ["node002"],
        "c_exec": ["node001", "node002", "vm"],
        "c_master": ["vm"],
    }
    hv = inv.host_variables(model, "node001", "c")
    assert hv["sge_cluster"] == "c"
    assert hv["sge_master"] is False
    assert hv["sge_exec"] is True
    assert hv["sge_queues"]["big.q"] == {"qtype": "BIP", "slots": 4, "used": 3, "reserved": 1,
                                         "state": "d"}
    assert hv["sge_state"] == ["d"]
    assert hv["sge_hostgroups"] == ["@allhosts"]
    assert set(hv) == {"sge_cluster", "sge_master", "sge_exec", "sge_arch", "sge_num_proc",
                       "sge_load_avg", "sge_mem_total", "sge_mem_used", "sge_swap_total",
                       "sge_swap_used", "sge_slots", "sge_slots_used", "sge_slots_reserved",
                       "sge_slots_free", "sge_queues", "sge_state", "sge_hostgroups"}
    # a master that is no execution host gets only what is known about it
    model["master"] = "qmaster"
    assert inv.host_variables(model, "qmaster", "c") == {
        "sge_cluster": "c", "sge_master": True, "sge_exec": False}


def test_state_names():
    assert inv.state_group_suffix("d") == "disabled"
    assert inv.state_group_suffix("u") == "unknown"
    assert inv.state_group_suffix("E") == "error"
    assert inv.state_group_suffix("Z") == "Z"
