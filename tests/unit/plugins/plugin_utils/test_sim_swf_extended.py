# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Extended SWF (MetaCentrum / Alea: more than 18 fields, a ``.machines`` file) and the machine size.

The extended lines and the ``.machines`` file below are written here in the layout of the
workloads published with the Alea simulator (aleasimulator/SWF_Workload_Generator,
generated_workloads/*.swf and *.swf.machines: fields 19-21 are GPUs, a soft walltime and a cluster
property; a machines line is ``id name nodes CPUs speed GB_RAM properties GPUs``); the values are
made up for the tests.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import swf

TRACES = os.path.join(os.path.dirname(__file__), *([os.pardir] * 4), os.pardir, "shared", "data", "traces")

EXTENDED = [
    "; Version: 1.0",
    "; Computer:  Synthetic",
    "1 1 0 3609 40 3609 33554432 40 7200 33554432 1 0 0 -1 0 -1 -1 -1 40 3609 all",
    "2 1 0 60 1 60 33554432 1 600 33554432 1 1 0 -1 0 -1 -1 -1 1 60 all",
    "3 2 0 5362 32 5362 8388608 32 7200 8388608 1 2 1 -1 1 -1 -1 -1 0 5362 normal",
]
MACHINES = [
    ";cl_id\tname\t\tnodes\tCPUs\tspeed\tGB_RAM\tproperties\tGPUs",
    ";-----------------------------------------------------------------------------",
    "0\tcl_dedicated \t 4 \t 4 \t 1 \t 256 \t dedicated \t 4",
    "1\tcl_normal_1 \t 6 \t 64 \t 1 \t 256 \t normal \t 8",
]


def test_extended_lines_are_read_and_the_extra_fields_counted():
    trace = swf.parse(EXTENDED, name="alea.swf")
    assert [(j.id, j.submit, j.run, j.procs) for j in trace.jobs] == [
        (1, 1.0, 3609.0, 40), (2, 1.0, 60.0, 1), (3, 2.0, 5362.0, 32)]
    assert trace.notes == {"extended SWF: fields after the 18th not used": 3}


def test_machines_file_gives_the_size_and_cpus_per_node():
    clusters = swf.parse_machines(MACHINES, name="alea.swf.machines")
    assert [(c.name, c.nodes, c.cpus) for c in clusters] == [("cl_dedicated", 4, 4), ("cl_normal_1", 6, 64)]
    trace = swf.parse(EXTENDED, name="alea.swf", machines=clusters, machines_name="alea.swf.machines")
    assert trace.machine_size() == (4 * 4 + 6 * 64, "alea.swf.machines (2 clusters)")
    assert trace.cpus_per_node() is None            # mixed: the caller must choose slots per node
    same = swf.parse(EXTENDED, machines=[clusters[0], clusters[0]._replace(nodes=2)])
    assert same.machine_procs() == 24 and same.cpus_per_node() == 4


@pytest.mark.parametrize("bad, message", [
    ("0 cl 4", "line 3: 3 fields, a cluster line has at least 4"),
    ("0 cl four 4", "line 3: nodes (field 3) must be a whole number >= 1, got 'four'"),
    ("0 cl 4 0", "line 3: CPUs per node (field 4) must be a whole number >= 1, got '0'"),
    ("0 cl 4 2.5", "line 3: CPUs per node (field 4) must be a whole number >= 1"),
])
def test_malformed_machines_line_names_file_and_line(bad, message):
    with pytest.raises(swf.SwfError) as err:
        swf.parse_machines(["; head", "0 a 1 1", bad], name="m.machines")
    assert str(err.value).startswith("m.machines: ") and message in str(err.value)


def test_machines_file_without_clusters_is_an_error():
    with pytest.raises(swf.SwfError, match="no cluster lines"):
        swf.parse_machines(["; only comments"], name="m.machines")


def test_load_finds_the_machines_file_next_to_the_trace(tmp_path):
    trace_path = tmp_path / "meta.mwf"
    trace_path.write_text("\n".join(EXTENDED) + "\n")
    with pytest.raises(swf.MachineSizeUnknown):
        swf.load(str(trace_path)).machine_procs()
    (tmp_path / "meta.mwf.machines").write_text("\n".join(MACHINES) + "\n")
    assert swf.load(str(trace_path)).machine_procs() == 400
    assert swf.machines_path(str(trace_path)) == str(trace_path) + ".machines"
    with pytest.raises(swf.MachineSizeUnknown):      # machines=False: do not look
        swf.load(str(trace_path), machines=False).machine_procs()
    other = tmp_path / "other.machines"
    other.write_text("0 one 3 2\n")
    assert swf.load(str(trace_path), machines=str(other)).machine_size() == (6, "%s (1 clusters)" % other)


def test_header_wins_over_machines_file():
    clusters = swf.parse_machines(MACHINES)
    trace = swf.parse(["; MaxProcs: 64"] + EXTENDED, machines=clusters)
    assert trace.machine_size() == (64, "header MaxProcs")


@pytest.mark.parametrize("name, procs, source", [
    ("KTH-SP2-1996-2.1-cln.swf", 100, "header MaxProcs"),
    ("NASA-iPSC-1993-3.1-cln.swf", 128, "header MaxProcs"),
    ("lublin_256.swf", 256, "header MaxNodes"),
])
def test_traces_with_headers_keep_their_size(name, procs, source):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip("%s not here" % path)
    with open(path) as handle:
        head = [ln for _i, ln in zip(range(200), handle)]
    assert swf.parse(head, name=name).machine_size() == (procs, source)
