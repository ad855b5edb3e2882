# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every parser of external text under fuzzing, at a small size (docs/reliability/fuzzing.md).

The same machinery as benchmarks/fuzz_parsers.py (tests/unit/fuzzing.py), seeded from the
fixtures in tests/unit/fixtures only, with a fixed seed (the same inputs on every run), in this
process. Fails on any crash: an exception other than the parser's documented parse error, an
input over the time limit, or an attempt to read /etc/passwd or the run's secret file.

KNOWN lists crashes the fuzzing found in files that other changes own at the time of writing
(their fix is proposed in docs/reliability/fuzzing.md); each is matched by parser, exception
type and the file it comes from, so that any other crash still fails the test. Remove an entry
when its fix lands (all are fixed at the time of writing: the list is empty).
"""

from __future__ import annotations

import io
import random
import re
import tarfile

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_xml
from ansible_collections.gridengine.balancer.tests.unit import fuzzing

INPUTS = 3000
SEED = 11

# (parser, exception type or "*", file, function where it was found): see the module docstring
KNOWN = (
    # none at present: the crashes of balancer_state, balancer_journal, balancer_lock and sge_cmd
    # were fixed in 9302f3c, those of transfer, transfer_remote, local_node, sge_admin, sge_submit,
    # task_data and task_registry in the change after the first run (docs/reliability/fuzzing.md)
)


def _known(name, signature):
    """True when the crash is a KNOWN one: same parser, exception type and file (the function is
    not compared, so that the owners may move code around before they fix it)."""
    kind, where = signature
    for parser, exc, path, _function in KNOWN:
        if parser == name and exc in ("*", kind.rsplit(".", 1)[-1]) and re.match(
                r"\A%s:\d+ " % re.escape(path), where or ""):
            return True
    return False


@pytest.fixture(scope="module")
def setup():
    corpus = fuzzing.Corpus([fuzzing.os.path.join(fuzzing.FIXTURES, d) for d in ("sge", "qconf", "inventory")])
    ws = fuzzing.Workspace()
    fuzzing.install_audit_hook(ws.secret)
    targets = fuzzing.build_targets(ws, corpus)
    yield corpus, ws, fuzzing.Mutator(corpus, ws.secret), targets, fuzzing.split_inputs(targets, INPUTS)
    ws.close()


def test_every_parser_is_fuzzed(setup):
    """The seeds cover every format, and the parsers of issue 7 are all there."""
    corpus, _ws, _mutator, targets, plans = setup
    names = set(t.name for t in targets)
    for name in ("sge_xml.parse_qstat", "sge_xml.parse_qhost", "sge_xml.parse_qstat_j", "sge_xml.parse_qacct",
                 "sge_rqs.parse_rqs", "sge_admin.parse_object", "sge_inventory.build_inventory", "sim.swf.parse",
                 "balancer_state.read_state", "task_registry.read", "transfer.parse_qsub_terse",
                 "transfer.parse_qstat_j", "transfer.parse_qacct"):
        assert name in names
    for target in targets:
        assert target.make is not None or corpus.formats[target.fmt] or target.fmt in ("values", "swf"), target.name
    assert sum(sum(p) for p in plans.values()) >= INPUTS


def test_no_parser_crashes(setup):
    corpus, _ws, mutator, targets, plans = setup
    failures = []
    total = 0
    for target in targets:
        stats = fuzzing.run_target(target, corpus, mutator, SEED, *plans[target.name], limit=5.0)
        total += stats.inputs
        assert stats.inputs == stats.accepted + stats.errors + stats.crashes
        for signature, (count, text) in stats.samples.items():
            if not _known(target.name, signature):
                failures.append("%s (%s): %dx %s" % (target.name, target.where, count, text))
    assert total >= INPUTS * 0.98
    assert not failures, "crashes under fuzzing:\n" + "\n".join(failures)


def test_external_entities_are_never_read(setup):
    """The XML parsers refuse DTDs; nothing opens /etc/passwd or the secret file, however the
    entity is declared."""
    corpus, ws, mutator, targets, _plans = setup
    by_name = dict((t.name, t) for t in targets)
    seed = [d for d in corpus.formats["xml"] if b"<job_info" in d][0]
    rng = fuzzing.random.Random(1)
    for kind in range(40):
        data = mutator.entities(rng, seed, None)
        for name in ("sge_xml.parse_qstat", "transfer.parse_jobs", "transfer.count_pending"):
            if name not in by_name:
                continue
            stats = fuzzing.Stats(name)
            target = by_name[name]
            fuzzing.run_one(target, target.convert(data), stats, 5.0, "mutation")
            assert not any(sig[0] in ("forbidden access", "leak") for sig in stats.samples), (kind, stats.samples)
    assert fuzzing.SECRET_MARK in open(ws.secret).read()


def test_the_harness_sees_crashes_reads_and_hangs(setup):
    """The checks are not vacuous: an XML parser that resolves external entities, a parser that
    raises an undocumented exception and one that never returns are all counted as crashes."""
    import xml.sax  # pylint: disable=import-outside-toplevel

    _corpus, ws, _mutator, _targets, _plans = setup

    def resolving(data):
        parser = xml.sax.make_parser()
        parser.setFeature(xml.sax.handler.feature_external_ges, True)
        parser.setContentHandler(xml.sax.handler.ContentHandler())
        parser.feed(data)
        parser.close()

    def looping(_data):
        while True:
            pass

    doc = (b"<!DOCTYPE job_info [<!ENTITY xxe SYSTEM \"file://" + ws.secret.encode() + b"\">]>"
           b"<job_info><JB_name>&xxe;</JB_name></job_info>")
    cases = ((resolving, doc, "forbidden access"), (lambda d: d.no_such_attribute, b"x", "AttributeError"),
             (looping, b"x", "Hang"))
    for call, data, kind in cases:
        target = fuzzing.Target("selftest", "tests", call, (ValueError,), "ValueError", "xml", None)
        stats = fuzzing.Stats("selftest")
        assert fuzzing.run_one(target, data, stats, 0.5, "mutation") == "crash"
        assert [sig[0] for sig in stats.samples] == [kind]


# ---------------------------------------------------------------------------------------------
# the crashes the fuzzing found, fixed: one small input each
# ---------------------------------------------------------------------------------------------

_SOGE = b'<job_info xmlns:xsd="http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd">'


@pytest.mark.parametrize("data, message", [
    (b'<?xml version="1.0" encoding="bogus"?>' + _SOGE + b"</job_info>", "unsupported encoding"),
    (b'<?xml version="1.0" encoding="UTF-16"?>' + _SOGE + b"</job_info>", "encoding"),
    (b'<?xml version="1.0" encoding="UTF-7"?>\n', "unsupported encoding"),
    (_SOGE + b'<job_info><job_list state="pending"><JB_job_number>7</JB_job_number><state>qw</state>'
     b'<requested_PE name="mpi"/></job_list></job_info></job_info>', "job 7 has an unreadable PE range None"),
])
def test_qstat_documents_that_crashed(data, message):
    sge_xml = fuzzing.sge_xml
    with pytest.raises(sge_xml.SgeParseError, match=re.escape(message)):
        sge_xml.parse_qstat(data)


def test_values_that_crashed():
    sge_xml = fuzzing.sge_xml
    for text in ("1e400G", "-inf", "inf", "1e309"):
        assert sge_xml.parse_memory(text) is None
    gc_doc = (b'<job_info><cluster_queue_summary><name>all.q</name><used>1e309</used><total>-inf</total>'
              b'</cluster_queue_summary></job_info>')
    assert sge_xml.parse_qstat_gc(gc_doc)["cluster_queues"][0]["used"] is None
    with pytest.raises(ValueError):
        sge_xml.parse_time("Wed Oct 24 20:22999999999999999999999:31 2018")
    with pytest.raises(sge_xml.SgeParseError, match="unreadable taskid"):
        sge_xml.parse_qacct("jobnumber 5\ntaskid \u00b2\nfailed 0\n")
    qhost = (b'<qhost><host name="node001"><hostvalue name="num_proc">1e309</hostvalue><queue><queuevalue '
             b'name="slots">1</queuevalue></queue></host></qhost>')
    with pytest.raises(sge_xml.SgeParseError, match="node001 has a queue without name"):
        sge_xml.parse_qhost(qhost)


@pytest.mark.parametrize("inner, message", [
    (b"<JB_ja_tasks><element><JAT_task_number>x</JAT_task_number></element></JB_ja_tasks>",
     "job 1 has an unreadable JAT_task_number 'x'"),
    (b"<JB_ja_tasks><element><JAT_task_number>1</JAT_task_number><JAT_start_time>soon</JAT_start_time>"
     b"</element></JB_ja_tasks>", "job 1 task 1 has an unreadable JAT_start_time 'soon'"),
    (b"<JB_ja_structure><element><RN_min>1</RN_min><RN_max>4.8e+231</RN_max><RN_step>1</RN_step></element>"
     b"</JB_ja_structure>", "job 1 has an unreadable task range"),
])
def test_qstat_j_documents_that_crashed(inner, message):
    sge_xml = fuzzing.sge_xml
    data = b"<detailed_job_info><djob_info><element><JB_job_number>1</JB_job_number>" + inner + \
        b"</element></djob_info></detailed_job_info>"
    with pytest.raises(sge_xml.SgeParseError, match=re.escape(message)):
        sge_xml.parse_qstat_j(data)


def test_hostgroup_chain_and_cycle():
    inv = fuzzing.sge_inventory
    text = "\n".join("group_name @g%d\nhostlist @g%d node%d" % (i, i + 1, i) for i in range(3000))
    warnings = []
    resolved = inv.resolve_hostgroups(inv.parse_hostgroups(text, warnings), warnings)
    assert resolved["@g0"][:2] == ["node2999", "node2998"] and len(resolved["@g0"]) == 3000
    assert warnings == ["host group @g2999: member group '@g3000' is not defined; skipped"]
    warnings = []
    assert inv.resolve_hostgroups({"@a": ["@b", "h1"], "@b": ["@a", "h2"]}, warnings) == {
        "@b": ["h2"], "@a": ["h2", "h1"]}
    assert warnings == ["host group @b: cycle through @a -> @b -> @a skipped"]


def test_stats_files_that_crashed(tmp_path):
    stats = fuzzing.stats
    path = tmp_path / "sge-stats.csv"
    good = "2023-11-14T22:13:20Z,3,5,2,12,61.5,3.25,0.75\n"
    path.write_bytes(b"\xe9t\xe9,1\n" + b"1e300,1,2,3,4,5,6,7\n" + b"9" * 200000 + b"\n" + good.encode())
    rows = stats.read_rows(str(path))
    assert [r["hosts"] for r in rows] == [3.0]
    path.write_bytes(b"2023-11-14T22:13:20Z,3,5,2,1\r2,61.5,3.25,0.75\n" + good.encode())
    row = stats.write_row(str(path), {"time": 1.8e9, "hosts": 2, "running_jobs": 1, "queued_jobs": 0, "slots": 4,
                                      "avg_duration": None, "avg_wait": None, "avg_load": 0.5},
                          instance_hour_price=0.1)
    assert row["total_node_hours"] > 0
    assert path.read_bytes().startswith(b"time,") and b"1\r2,61.5" in path.read_bytes()    # nothing lost


@pytest.mark.parametrize("rule, message", [
    ("DTSTART:20240101T000000Z RRULE:FREQ=DAILY;INTERVAL=00", "INTERVAL must be a whole number"),
    ("DTSTART:20240101T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1;BYSETPOS=2", "BYSETPOS is not supported"),
    ("DTSTART:20240101T000000Z RRULE:FREQ=HOURLY;INTERVAL=1;BYMONTH=2;BYMONTHDAY=30", "it never fires"),
    ("DTSTART:2024010199999999999999999999999T000000Z RRULE:FREQ=HOURLY;INTERVAL=1", "cannot parse"),
    ("DTSTART;TZID=Europe/Stockholm:4294967296 RRULE:FREQ=DAILY;INTERVAL=1", "cannot parse"),
])
def test_schedules_that_crashed_or_hung(rule, message):
    with pytest.raises(ValueError, match=message):
        fuzzing.awx_defs.parse_rrule(rule)


# the crashes found in files other work owned at the time, fixed since: one input each, through the
# harness (a crash is any undocumented exception or an input over 5 s, as in the fuzzing run)

def _deep_json():
    return b'{"local": ' + b"[" * 100000 + b"]" * 100000 + b"}"


def _tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, extra in members:
            info = tarfile.TarInfo(name)
            if kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, extra
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(extra)
            tar.addfile(info, io.BytesIO(extra) if kind == "file" else None)
    return buf.getvalue()


def _big_group():
    """qconf -shgrp of a group of 100,000 hosts, one continuation line each (3.4 MB)."""
    return b"group_name @big\nhostlist " + b" \\\n         ".join(
        b"node%06d.example.org" % i for i in range(100000)) + b"\n"


FIXED_ELSEWHERE = [
    ("transfer.load_config", lambda: b'{"acquired": 170\xed\xa0\x800000000.0}'),
    ("transfer.load_config", _deep_json),
    ("transfer.read_own_json", _deep_json),
    ("transfer_remote._records", _deep_json),
    ("local_node.read_record", _deep_json),
    ("task_registry.read", _deep_json),
    ("transfer.cluster_memory", lambda: b"<qhost>" + b'<host name="h"><hostvalue name="mem_total">1G</hostvalue>'
     * 100000 + b"</host>" * 100000 + b"</qhost>"),
    ("sge_admin.parse_object", lambda: b"slots 1," + b"[h=" * 5000 + b"2" + b"]" * 5000),
    ("sge_admin.parse_object", _big_group),
    ("sge_inventory.parse_hostgroups", _big_group),
    ("sge_submit.parse_terse", lambda: b"9" * 5858),
    ("task_data.receive", lambda: b"not a tar archive" * 100),
    ("task_data.receive", lambda: _tar([(".", "file", b"x")])),
    ("task_data.receive", lambda: _tar([(".", "dir", None), ("x", "dir", None), ("x", "sym", "y"),
                                        ("y", "sym", "x")])),
]


@pytest.mark.parametrize("name, make", FIXED_ELSEWHERE, ids=["%s-%d" % (c[0], i) for i, c in enumerate(FIXED_ELSEWHERE)])
def test_inputs_that_crashed_in_other_files(setup, name, make):
    _corpus, _ws, _mutator, targets, _plans = setup
    target = dict((t.name, t) for t in targets)[name]
    stats = fuzzing.Stats(name)
    assert fuzzing.run_one(target, target.convert(make()), stats, 5.0, "mutation") != "crash", stats.samples


# ---- qstat read as it arrives (sge_xml.parse_qstat_stream) against the bytes path ----

def _outcome(parse, *args):
    try:
        return "ok", parse(*args)
    except sge_xml.SgeParseError as exc:
        return "error", str(exc)


def test_mutated_listings_stream_as_bytes(monkeypatch):
    """Mutated listings, fixed seed: where the bytes path reads one, the stream reads the same;
    where it refuses one, the stream refuses it too. Each is cut at random points, so that a
    multi-byte character or a replaced byte falls across two chunks."""
    monkeypatch.setattr(sge_xml, "_HEAD", 1)  # (so that the stream path runs, not the bytes one)
    corpus = fuzzing.Corpus([fuzzing.os.path.join(fuzzing.FIXTURES, "sge")])
    qstat = corpus.qstat
    ws = fuzzing.Workspace()
    try:
        mutator = fuzzing.Mutator(corpus, ws.secret)
        rng = random.Random(5)
        counts = {"ok": 0, "error": 0}
        for _dummy in range(400):
            data = mutator.mutate(rng, rng.choice(qstat), "xml", qstat)
            cuts = sorted(rng.sample(range(1, max(2, len(data))), min(12, max(0, len(data) - 2))))
            chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
            expected = _outcome(sge_xml.parse_qstat, data)
            got = _outcome(sge_xml.parse_qstat_stream, iter(chunks))
            if expected[0] == "ok":
                assert got == expected, data[:300]
            else:
                assert got[0] == "error", (expected, data[:300])
            counts[expected[0]] += 1
    finally:
        ws.close()
    assert counts["ok"] >= 40 and counts["error"] >= 40, counts
