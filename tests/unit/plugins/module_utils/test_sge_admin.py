# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sge_admin: qconf object parsing and rendering on real SoGE 8.1.9 captures
(tests/unit/fixtures/qconf/, see PROVENANCE.md), value comparison, name validation."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_admin
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    EXEC_HOST_ATTRIBUTES,
    QUEUE_TEMPLATE,
    SgeAdmin,
    SgeAdminError,
    canonical,
    check_names,
    name_error,
    parse_list,
    parse_object,
    parse_pairs,
    render_object,
    same_host,
    same_value,
    split_list,
    split_value,
    to_sge_value,
    value_error,
)

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "..", "..", "fixtures", "qconf"))


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# -- parsing real captures --------------------------------------------------------------------

def test_exec_host_continuation_lines_are_joined():
    obj = parse_object(fixture("qconf_se_node001.txt"))
    assert obj["hostname"] == "node001"
    assert obj["processors"] == "2"
    assert obj["complex_values"] == "NONE"
    # 11 physical lines of load_values, one value
    assert obj["load_values"].startswith("load_avg=1.388184,load_short=1.458984,load_medium=")
    assert obj["load_values"].endswith("np_load_medium=0.694092,np_load_long=0.435547")
    assert "\\" not in obj["load_values"]
    pairs = parse_pairs(obj["load_values"])
    assert len(pairs) == 25
    assert pairs["m_topology"] == "SCC"
    assert pairs["num_proc"] == "2"
    assert list(obj)[-1] == "report_variables"
    assert parse_pairs(obj["complex_values"]) == {}


def test_queue_per_host_overrides_and_continuation_inside_brackets():
    obj = parse_object(fixture("qconf_sq_gebtest.q_overrides.txt"))
    assert split_value(obj["slots"]) == (["1"], [("vm", "2")])
    assert split_value(obj["pe_list"]) == (["smp"], [("vm", "NONE")])
    assert split_value(obj["load_thresholds"]) == (
        ["np_load_avg=1.75", "mem_free=1G", "np_load_short=2.5", "np_load_medium=2.25",
         "np_load_long=2.0"],
        [("vm", "np_load_avg=1.5,mem_free=2G")])
    # qconf broke this line inside the brackets: "[vm=h_vmem=2G,mem_free=4G, \" + "slots=2]"
    default, overrides = split_value(obj["complex_values"])
    assert default == ["h_vmem=4G", "mem_free=8G", "slots=4"]
    assert overrides == [("vm", "h_vmem=2G,mem_free=4G,slots=2")]
    assert same_value("complex_values", obj["complex_values"],
                      "slots=4,h_vmem=4G,mem_free=8G,[vm=slots=2,h_vmem=2G,mem_free=4G]")
    assert split_list(obj["user_lists"]) == ["arusers", "deadlineusers"]
    assert obj["notify"] == "60"
    assert obj["s_rt"] == "1:0:0"
    assert obj["rerun"] == "TRUE"
    assert len(obj) == len(QUEUE_TEMPLATE)


def test_all_q_and_host_group_and_lists():
    queue = parse_object(fixture("qconf_sq_all.q.txt"))
    assert queue["qname"] == "all.q"
    assert queue["hostlist"] == "@allhosts"
    assert queue["qtype"] == "BATCH INTERACTIVE"
    assert split_list(queue["qtype"]) == ["BATCH", "INTERACTIVE"]
    assert split_list(queue["ckpt_list"]) == []
    assert list(queue) == [k for k, _v in QUEUE_TEMPLATE]
    group = parse_object(fixture("qconf_shgrp_allhosts.txt"))
    assert group == {"group_name": "@allhosts", "hostlist": "vm node002 node001"}
    assert split_list(group["hostlist"]) == ["vm", "node002", "node001"]
    assert parse_list(fixture("qconf_sel.txt")) == ["node001", "node002", "vm"]
    assert parse_list(fixture("qconf_ss.txt")) == ["vm"]


def test_builtin_templates_match_the_captured_ones():
    queue = parse_object(fixture("qconf_aq_editor_template.txt"))
    assert queue == dict(QUEUE_TEMPLATE, qname="gebtest.q")
    assert list(queue) == [k for k, _v in QUEUE_TEMPLATE]
    host = parse_object(fixture("qconf_ae_editor_template.txt"))
    assert tuple(host) == EXEC_HOST_ATTRIBUTES
    assert host["hostname"] == "template"


def test_rendered_queue_is_byte_identical_to_qconf_output():
    # gebtest.q was created from this rendering; qconf -sq printed exactly the same text
    obj = dict(QUEUE_TEMPLATE, qname="gebtest.q", hostlist="@gebtest", pe_list="NONE",
               qtype="NONE")
    assert render_object(obj) == fixture("qconf_sq_gebtest.q.txt")
    assert render_object(parse_object(fixture("qconf_sq_all.q.txt"))) == \
        fixture("qconf_sq_all.q.txt")


@pytest.mark.parametrize("name", ["qconf_sq_gebtest.q_overrides.txt", "qconf_se_node001.txt",
                                  "qconf_se_vm.txt", "qconf_sq_all.q.txt"])
def test_render_parse_round_trip(name):
    obj = parse_object(fixture(name))
    text = render_object(obj)
    for line in text.splitlines():
        assert len(line) <= 80 or " " not in line.strip()[22:], line
    again = parse_object(text)
    assert again == obj
    assert list(again) == list(obj)


def test_long_values_are_cut_outside_brackets_only():
    value = ",".join("h%02d=%d" % (i, i) for i in range(40)) + ",[node001=a,b,c,d,e,f,g,h]"
    text = render_object({"complex_values": value})
    lines = text.splitlines()
    assert len(lines) > 3
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert lines[-1].strip().endswith("[node001=a,b,c,d,e,f,g,h]")
    assert parse_object(text)["complex_values"].replace(" ", "") == value
    hosts = " ".join("node%04d" % i for i in range(500))
    assert split_list(parse_object(render_object({"hostlist": hosts}))["hostlist"]) == \
        hosts.split()


# -- values -----------------------------------------------------------------------------------

@pytest.mark.parametrize("attr, a, b", [
    ("notify", "00:00:60", "60"),
    ("suspend_interval", "00:05:00", "300"),
    ("s_rt", "1:0:0", "01:00:00"),
    ("rerun", "TRUE", "true"),
    ("calendar", "NONE", "none"),
    ("calendar", "NONE", ""),
    ("pe_list", "make smp mpi", "mpi,make, smp"),
    ("hostlist", "@allhosts node001", "NODE001 @allhosts"),
    ("slots", "1,[node001=2],[node002=4]", "1, [node002=4], [NODE001=2]"),
    ("load_thresholds", "np_load_avg=1.75", "np_load_avg=1.750"),
    ("seq_no", "0", "0.0"),
])
def test_same_meaning(attr, a, b):
    assert same_value(attr, a, b)


@pytest.mark.parametrize("attr, a, b", [
    ("slots", "1,[node001=2]", "1"),
    ("slots", "1,[node001=2]", "1,[node002=2]"),
    ("prolog", "/bin/p a b", "/bin/p b a"),
    ("hostlist", "@allhosts", "@ALLHOSTS"),
    ("h_vmem", "1G", "2G"),
    ("pe_list", "smp", "smp mpi"),
])
def test_different_meaning(attr, a, b):
    assert not same_value(attr, a, b)


def test_split_value_edge_cases():
    assert split_value("NONE") == ([], [])
    assert split_value("") == ([], [])
    assert split_value("1,[@big=4]") == (["1"], [("@big", "4")])
    assert split_value("smp,[vm=smp mpi]") == (["smp"], [("vm", "smp mpi")])
    assert canonical("pe_list", "smp,[vm=mpi smp]") == canonical("pe_list", "smp,[vm=smp,mpi]")


def test_overrides_nested_deep_are_compared_as_text():
    # found by the parser fuzzing (docs/reliability/fuzzing.md): canonical followed an override
    # inside an override, 1,000 deep raised RecursionError. Grid Engine never nests them: the
    # override's own value is normalised, what is nested in it is compared as text.
    deep = "1," + "[h=" * 5000 + "2" + "]" * 5000
    assert canonical("slots", deep) == canonical("slots", deep.replace("[h=", "[H=", 1))
    assert canonical("slots", "1,[h=[g=2]]") == (("1",), (("h", ((), (("g", "2"),))),))
    assert canonical("slots", "1,[h=[g=2]]") != canonical("slots", "1,[h=[g=2.0]]")
    # real values are read as before: the override's value normalised, keyed by host
    assert canonical("load_thresholds", "np_load_avg=1.75,[VM=mem_free=2G,np_load_avg=1.50]") == (
        ("np_load_avg=1.75",), (("vm", (("mem_free=2G", "np_load_avg=1.5"), ())),))


def test_a_host_group_continued_over_100000_lines():
    # found by the parser fuzzing: each continuation line copied the whole value so far (3.4 MB of
    # qconf -shgrp took over 5 s); the pieces are now joined once
    hosts = ["node%06d.example.org" % i for i in range(100000)]
    text = "group_name @big\nhostlist " + " \\\n         ".join(hosts) + "\n"
    assert parse_object(text) == {"group_name": "@big", "hostlist": " ".join(hosts)}
    assert parse_object("a x, \\\n  y \\\n z,\\\n\nb \\\n  \\\n w\n") == {"a": "x,y z,", "b": "w"}


@pytest.mark.parametrize("attr, value, text", [
    ("rerun", True, "TRUE"),
    ("rerun", False, "FALSE"),
    ("slots", 2, "2"),
    ("calendar", None, "NONE"),
    ("calendar", "", "NONE"),
    ("pe_list", ["smp", "mpi"], "smp mpi"),
    ("pe_list", [], "NONE"),
    ("load_thresholds", ["np_load_avg=1.75", "mem_free=1G"], "np_load_avg=1.75,mem_free=1G"),
    ("complex_values", {"slots": 4, "h_vmem": "8G"}, "slots=4,h_vmem=8G"),
    ("complex_values", {}, "NONE"),
    ("hostlist", " @allhosts ", "@allhosts"),
])
def test_to_sge_value(attr, value, text):
    assert to_sge_value(attr, value) == text


def test_value_error():
    assert value_error("prolog", "/bin/prolog $host") is None
    assert "line break" in value_error("hostlist", "@a\nslots 9")
    assert "line break" in value_error("hostlist", "@a\rslots 9")
    assert "backslash" in value_error("prolog", "/bin/x \\")


# -- names ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, name", [
    ("host", "vm"), ("host", "node001"), ("host", "Node-1.cluster.example"),
    ("host", "10.77.0.11"), ("host", "a" * 63),
    ("hostgroup", "@allhosts"), ("hostgroup", "@gpu_nodes.v2-x"),
    ("queue", "all.q"), ("queue", "gebtest.q"), ("queue", "long_q-2"),
    ("host_or_group", "@allhosts"), ("host_or_group", "node001"),
])
def test_valid_names(kind, name):
    assert name_error(kind, name, "name") is None


@pytest.mark.parametrize("kind, name", [
    ("host", "node;rm -rf /"), ("host", "$(id)"), ("host", "`id`"), ("host", "node001\n"),
    ("host", "\nnode001"), ("host", "-de"), ("host", "node_1"), ("host", "a" * 64),
    ("host", "node..1"), ("host", "node-"), ("host", ""), ("host", "node 1"),
    ("host", ".".join(["a" * 60] * 5)), ("host", "@allhosts"),
    ("hostgroup", "allhosts"), ("hostgroup", "@"), ("hostgroup", "@a b"),
    ("hostgroup", "@x;id"), ("hostgroup", "@x\n"),
    ("queue", "-dq"), ("queue", "all.q;id"), ("queue", "$(id)"), ("queue", "all.q\n"),
    ("queue", "all q"), ("queue", "all.q@node001"), ("queue", ""),
    ("host_or_group", "@x y"), ("host_or_group", "x;y"),
])
def test_invalid_names(kind, name):
    msg = name_error(kind, name, "name")
    assert msg and msg.startswith("name: %r is not a valid name" % name)
    with pytest.raises(SgeAdminError):
        check_names(kind, ["ok", name], "name")


@pytest.mark.parametrize("a, b, same", [
    ("vm", "VM", True),
    ("node001", "node001.cluster.example", True),
    ("node001.a.example", "node001.b.example", False),
    ("node001", "node0011", False),
    ("@allhosts", "allhosts", False),
])
def test_same_host(a, b, same):
    assert same_host(a, b) is same


# -- reading qstat / qhost through SgeAdmin ---------------------------------------------------

class FakeModule(object):
    check_mode = False

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.calls = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name

    def run_command(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        rc, out = self.outputs.pop(0)
        if kwargs.get("encoding", "utf-8") is None:
            out = out.encode("utf-8")
        return rc, out, ""


def admin_for(outputs):
    module = FakeModule(outputs)
    return module, SgeAdmin(module, "/nonexistent/sge-root", "default")


def test_queue_instance_states_from_real_qstat():
    module, admin = admin_for([(0, fixture("qstat_f_q_all.q.xml")),
                               (0, fixture("qstat_f_q_gebtest.q_enabled.xml")),
                               (0, fixture("qstat_f_q_gebtest.q_disabled.xml")),
                               (1, "")])
    assert admin.queue_instances("q", "all.q") == {"node001": "", "node002": "", "vm": ""}
    assert admin.queue_instances("q", "gebtest.q") == {"vm": ""}
    assert admin.queue_instances("q", "gebtest.q") == {"vm": "d"}
    assert admin.queue_instances("q", "gebtest.q") == {}
    argv, kwargs = module.calls[0]
    assert argv == ["/usr/bin/qstat", "-f", "-q", "all.q", "-xml"]
    assert kwargs["environ_update"]["LC_ALL"] == "C"
    assert kwargs["environ_update"]["SGE_ROOT"] == "/nonexistent/sge-root"
    assert kwargs["environ_update"]["SGE_CELL"] == "default"
    assert kwargs["expand_user_and_vars"] is False


def test_execd_reporting_from_real_qhost():
    xml = fixture("qhost_h_node001.xml")
    silent = xml.replace("<hostvalue name='load_avg'>1.39</hostvalue>",
                         "<hostvalue name='load_avg'>-</hostvalue>")
    _module, admin = admin_for([(0, xml), (0, silent), (0, xml)])
    assert admin.execd_reporting("h", "node001") is True
    assert admin.execd_reporting("h", "node001") is False
    assert admin.execd_reporting("h", "node002") is False


def test_empty_lists_and_missing_objects():
    _module, admin = admin_for([(1, "no host group list defined"), (1, "no submit host defined")])
    assert admin.show_list("x", "-shgrpl") == []
    assert admin.show_list("x", "-ss") == []


def test_qmaster_port_is_checked_and_passed():
    with pytest.raises(SgeAdminError):
        SgeAdmin(FakeModule([]), "/nonexistent/sge-root", "default", 70000)
    module = FakeModule([(0, "vm\n")])
    admin = SgeAdmin(module, "/nonexistent/sge-root", "remote", 6446)
    assert admin.show_list("x", "-sh") == ["vm"]
    env = module.calls[0][1]["environ_update"]
    assert env["SGE_QMASTER_PORT"] == "6446" and env["SGE_CELL"] == "remote"


def test_check_mode_records_but_runs_nothing():
    module = FakeModule([])
    module.check_mode = True
    admin = SgeAdmin(module, "/nonexistent/sge-root", "default")
    assert admin.change("x", "qconf", ["-dh", "node003"]) == ""
    assert admin.change_with_file("x", "-Ahgrp", {"group_name": "@g", "hostlist": "NONE"}) == ""
    assert module.calls == []
    assert admin.commands == ["qconf -dh node003", "qconf -Ahgrp FILE"]


def test_resolve_retry_stops_at_the_deadline(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(sge_admin, "_clock", lambda: clock[0])
    monkeypatch.setattr(sge_admin, "_sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    module = FakeModule([(1, 'can\'t resolve hostname "node003"')] * 20)
    admin = SgeAdmin(module, "/nonexistent/sge-root", "default")
    with pytest.raises(SgeAdminError) as err:
        admin.change("exec host node003", "qconf", ["-ah", "node003"], resolve_timeout=90)
    assert len(module.calls) == 19           # t = 0, 5, ..., 90
    assert clock[0] == 90
    assert str(err.value) == ("exec host node003: qconf -ah node003 failed (rc 1): "
                              "can't resolve hostname \"node003\"")
