# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""qstat's listing parsed as it arrives (sge_xml.parse_qstat_stream, sge_cmd.run_sge_stream).

The stream is held to the bytes path: for every captured qstat listing, cut into chunks of
several sizes, with the head that decides between the two paths shrunk to one byte so that the
streaming path itself runs, the result is the bytes path's result and an error is an
SgeParseError wherever the bytes path raises one (mutated listings:
tests/unit/plugins/test_fuzz_parsers.py; the command side through AnsibleModule:
tests/unit/plugins/modules/test_sge_queue_facts.py). Standard library and pytest only: this file
also runs under the nodes' Python (scripts/unit_nodes_python.sh).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess
import sys

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_cmd, sge_xml

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "sge")


def _listings():
    """Every captured qstat listing of the fixtures (job_info documents, not qstat -g c), once."""
    found = []
    for dirpath, dirnames, filenames in os.walk(FIXTURES):
        dirnames.sort()
        for name in sorted(filenames):
            with open(os.path.join(dirpath, name), "rb") as handle:
                data = handle.read()
            if b"<job_info" in data and b"cluster_queue_summary" not in data and data not in found:
                found.append(data)
    return found


QSTAT = _listings()


def chunked(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)]


def outcome(parse, *args):
    try:
        return "ok", parse(*args)
    except sge_xml.SgeParseError as exc:
        return "error", str(exc)


def test_there_are_listings_to_compare():
    assert len(QSTAT) >= 10


@pytest.mark.parametrize("head", [1, sge_xml._HEAD])
@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_stream_gives_the_bytes_result(monkeypatch, head, size):
    monkeypatch.setattr(sge_xml, "_HEAD", head)
    compared = 0
    for data in QSTAT:
        if size == 1 and len(data) > 200000:
            continue
        expected = outcome(sge_xml.parse_qstat, data)
        got = outcome(sge_xml.parse_qstat_stream, iter(chunked(data, size)))
        if expected[0] == "ok":
            assert got == expected
        else:
            assert got[0] == "error", expected
        compared += 1
    assert compared >= 10


def test_bad_bytes_across_chunks_are_read_cleaned(monkeypatch):
    """A job name in Latin-1, one with a control character and a UTF-8 name cut between two
    chunks: read as the bytes path reads them after its second pass (U+FFFD for what is not XML)."""
    monkeypatch.setattr(sge_xml, "_HEAD", 1)
    base = next(d for d in QSTAT if b"<JB_name>" in d and len(d) > 2000)
    start = base.index(b"<JB_name>") + len(b"<JB_name>")
    for name in (b"caf\xe9", b"a\x01b", u"sm\u00f8rrebr\u00f8d".encode("utf-8")):
        data = base[:start] + name + base[base.index(b"</JB_name>", start):]
        expected = sge_xml.parse_qstat(data)
        for cut in range(start, start + len(name) + 1):
            pieces = [data[:cut], data[cut:]]
            assert sge_xml._parse_stream(iter(pieces), sge_xml.QSTAT, ("job_info",), True,
                                         lambda: sge_xml._QstatReader().consume)[1] == \
                dict((k, v) for k, v in expected.items() if k != "flavour")


def test_declared_encoding_other_than_utf8_is_read_whole():
    """Latin-1 declared: the bytes are Latin-1 text, not bytes to replace; the stream is gathered
    and read as bytes (the same result as parse_qstat)."""
    data = (b"<?xml version='1.0' encoding='ISO-8859-1'?>\n<job_info><queue_info/><job_info>"
            b"<job_list state='pending'><JB_job_number>7</JB_job_number><JB_name>caf\xe9</JB_name>"
            b"<JB_owner>u</JB_owner><state>qw</state><JB_submission_time>2023-11-14T22:13:20</JB_submission_time>"
            b"<slots>1</slots></job_list></job_info></job_info>\n") + b" " * 70000
    expected = sge_xml.parse_qstat(data)
    assert expected["pending"][0]["name"] == u"caf\u00e9"
    assert sge_xml.parse_qstat_stream(iter(chunked(data, 100))) == expected


def test_doctype_is_refused_before_the_rest_is_read():
    read = []

    def chunks():
        yield b"<?xml version='1.0'?>\n<!DOCTYPE x [<!ENTITY a 'b'>]>\n<job_info>" + b" " * 70000
        read.append("more")
        yield b"</job_info>"

    with pytest.raises(sge_xml.SgeParseError, match="document type/entity declarations are not accepted"):
        sge_xml.parse_qstat_stream(chunks())
    assert read == []


def _drain(tmp_path, body, consume):
    """sge_cmd.PipeDrain over a real process (``python -c body``) as run_command would call it."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys\n" + body],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    drain = sge_cmd.PipeDrain(consume=consume)
    drain(proc)
    return proc.wait(), drain


def test_pipe_drain_parses_a_real_pipe(tmp_path):
    """A real process prints a listing in small writes while writing to stderr: the parse is
    that of the bytes, and the drain keeps only the head of the output."""
    data = max((d for d in QSTAT if outcome(sge_xml.parse_qstat, d)[0] == "ok"), key=len)
    path = tmp_path / "qstat.xml"
    path.write_bytes(data)
    rc, drain = _drain(tmp_path, "data = open(%r, 'rb').read()\n"
                                 "for i in range(0, len(data), 3000):\n"
                                 "    sys.stdout.buffer.write(data[i:i + 3000]); sys.stdout.flush()\n"
                                 "    sys.stderr.write('w\\n'); sys.stderr.flush()\n" % str(path),
                       sge_xml.parse_qstat_stream)
    assert rc == 0 and drain.error is None and drain.out is None
    assert drain.result == sge_xml.parse_qstat(data)
    assert drain.size == len(data) and drain.head == data[:sge_cmd.PipeDrain.HEAD]
    assert drain.err == b"w\n" * len(range(0, len(data), 3000))


def test_pipe_drain_keeps_the_parser_error_and_reads_the_rest(tmp_path):
    """The parser stops at an error early in a long output: the error is kept (raised by
    run_sge_stream after the exit status), the rest is read and dropped, so the command is not
    left blocked on a full pipe and ends normally."""
    rc, drain = _drain(tmp_path, "sys.stdout.write('<job_info><bad></job_info>' + ' ' * (8 << 20))\n"
                                 "sys.stdout.flush()\nsys.stderr.write('done\\n')\n",
                       sge_xml.parse_qstat_stream)
    assert rc == 0 and drain.result is None
    assert isinstance(drain.error, sge_xml.SgeParseError) and "mismatched tag" in str(drain.error)
    assert drain.size == len('<job_info><bad></job_info>') + (8 << 20) and drain.err == b"done\n"
