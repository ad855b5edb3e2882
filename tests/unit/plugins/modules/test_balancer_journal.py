# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.balancer_journal and balancer_journal_info: node operations in flight."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import balancer_journal
from ansible_collections.gridengine.balancer.plugins.modules import balancer_journal_info
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_journal as bj

NOW = 1700000000.0


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    now = [NOW]
    monkeypatch.setattr(bj, "_now", lambda: now[0])
    return now


def run(capsys, module, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    result["rc"] = exc.value.code
    return result


def journal(capsys, path, **args):
    args["path"] = str(path)
    return run(capsys, balancer_journal, args)


def info(capsys, path, **args):
    args["path"] = str(path)
    return run(capsys, balancer_journal_info, args)


def journal_path(tmp_path):
    return tmp_path / "gridengine-balancer" / "mycluster" / "journal.json"


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_record_a_join(capsys, tmp_path):
    path = journal_path(tmp_path)
    res = journal(capsys, path, node="node003", operation="join", detail={"address": "10.0.0.13"})
    assert res["rc"] == 0 and res["changed"] is True and res["exists"] is False
    entry = {"node": "node003", "operation": "join", "started": NOW, "detail": {"address": "10.0.0.13"}}
    assert res["record"] == entry and res["operations"] == [entry]
    assert json.loads(path.read_text()) == {"schema": 1, "operations": [entry]}
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    assert sorted(os.listdir(path.parent)) == [".journal.json.guard", "journal.json"]


def test_default_path_from_cluster(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(bj, "DEFAULT_ROOT", str(tmp_path))
    res = run(capsys, balancer_journal, {"cluster": "c1", "node": "n1", "operation": "leave"})
    assert res["rc"] == 0 and res["path"] == str(tmp_path / "c1" / "journal.json")
    res = run(capsys, balancer_journal_info, {"cluster": "c1"})
    assert [e["node"] for e in res["operations"]] == ["n1"]


def test_record_is_idempotent_and_keeps_the_start_time(capsys, tmp_path, clock):
    path = journal_path(tmp_path)
    journal(capsys, path, node="node003", operation="join", detail={"address": "10.0.0.13"})
    before = path.read_bytes()
    clock[0] += 60
    res = journal(capsys, path, node="node003", operation="join", detail={"address": "10.0.0.13"})
    assert res["rc"] == 0 and res["changed"] is False and res["record"]["started"] == NOW
    res = journal(capsys, path, node="node003", operation="join")  # no detail: keep the recorded one
    assert res["changed"] is False and res["record"]["detail"] == {"address": "10.0.0.13"}
    assert path.read_bytes() == before


def test_new_detail_replaces_the_recorded_one(capsys, tmp_path, clock):
    path = journal_path(tmp_path)
    journal(capsys, path, node="node003", operation="join", detail={"address": "10.0.0.13"})
    clock[0] += 60
    res = journal(capsys, path, node="node003", operation="join", detail={"address": "10.0.0.14"},
                  _ansible_diff=True)
    assert res["changed"] is True
    assert res["record"] == {"node": "node003", "operation": "join", "started": NOW,
                             "detail": {"address": "10.0.0.14"}}
    assert "10.0.0.13" in res["diff"]["before"] and "10.0.0.14" in res["diff"]["after"]


def test_operations_keep_their_start_order(capsys, tmp_path, clock):
    path = journal_path(tmp_path)
    for node, op in (("node009", "leave"), ("node001", "join"), ("node005", "join")):
        journal(capsys, path, node=node, operation=op)
        clock[0] += 1
    res = info(capsys, path)
    assert [(e["node"], e["operation"]) for e in res["operations"]] == [
        ("node009", "leave"), ("node001", "join"), ("node005", "join")]


def test_a_node_has_one_operation_in_flight(capsys, tmp_path):
    path = journal_path(tmp_path)
    journal(capsys, path, node="node003", operation="join")
    before = path.read_bytes()
    res = journal(capsys, path, node="node003", operation="leave")
    assert res["rc"] == 1
    assert res["msg"] == ("cannot record leave of node node003: node node003 has a join in flight "
                          "since 2023-11-14 22:13:20 UTC (recorded in %s); finish it or remove its "
                          "record first" % path)
    assert res["in_flight"]["operation"] == "join"
    assert path.read_bytes() == before


def test_remove(capsys, tmp_path):
    path = journal_path(tmp_path)
    journal(capsys, path, node="node003", operation="join")
    journal(capsys, path, node="node004", operation="leave")
    res = journal(capsys, path, node="node003", state="absent", _ansible_diff=True)
    assert res["rc"] == 0 and res["changed"] is True and res["record"]["node"] == "node003"
    assert [e["node"] for e in res["operations"]] == ["node004"]
    assert "node003" in res["diff"]["before"] and "node003" not in res["diff"]["after"]
    assert [e["node"] for e in json.loads(path.read_text())["operations"]] == ["node004"]
    # again: nothing to remove
    res = journal(capsys, path, node="node003", state="absent")
    assert res["rc"] == 0 and res["changed"] is False and res["record"] is None


def test_remove_of_another_operation_changes_nothing(capsys, tmp_path):
    path = journal_path(tmp_path)
    journal(capsys, path, node="node003", operation="join")
    before = path.read_bytes()
    res = journal(capsys, path, node="node003", operation="leave", state="absent")
    assert res["rc"] == 0 and res["changed"] is False and res["record"] is None
    assert path.read_bytes() == before
    res = journal(capsys, path, node="node003", operation="join", state="absent")
    assert res["changed"] is True and json.loads(path.read_text())["operations"] == []


def test_remove_from_a_missing_journal_creates_nothing(capsys, tmp_path):
    path = journal_path(tmp_path)
    res = journal(capsys, path, node="node003", state="absent")
    assert res["rc"] == 0 and res["changed"] is False and res["exists"] is False
    assert not path.parent.exists()


def test_check_mode_writes_nothing(capsys, tmp_path):
    path = journal_path(tmp_path)
    res = journal(capsys, path, node="node003", operation="join", _ansible_check_mode=True)
    assert res["rc"] == 0 and res["changed"] is True and res["record"]["node"] == "node003"
    assert not path.parent.exists()
    journal(capsys, path, node="node003", operation="join")
    before = path.read_bytes()
    res = journal(capsys, path, node="node003", state="absent", _ansible_check_mode=True)
    assert res["changed"] is True and res["operations"] == []
    res = journal(capsys, path, node="node004", operation="leave", _ansible_check_mode=True)
    assert res["changed"] is True and len(res["operations"]) == 2
    res = journal(capsys, path, node="node003", operation="leave", _ansible_check_mode=True)
    assert res["rc"] == 1 and "join in flight" in res["msg"]
    assert path.read_bytes() == before


def test_info_of_a_missing_journal(capsys, tmp_path):
    path = journal_path(tmp_path)
    res = info(capsys, path)
    assert res["rc"] == 0 and res["changed"] is False
    assert (res["path"], res["exists"], res["operations"]) == (str(path), False, [])
    assert not path.parent.exists()


@pytest.mark.parametrize("text, words", [
    ("{not json", "is not valid JSON"),
    ('{"schema": 1, "operations": [{"node": "node003", "operation": "jo', "is not valid JSON"),
    ("", "is empty (0 bytes)"),
    ("[]", "holds a JSON list, not an object"),
    ("null", "holds a JSON NoneType, not an object"),
    ('{"schema": 2, "operations": []}', "has schema 2, not 1 (another version of the balancer wrote it)"),
    ('{"schema": "1", "operations": []}', "has schema '1', not 1"),
    ('{"schema": 1}', "has no list of operations"),
    ('{"operations": {}}', "has no list of operations"),
    ('{"operations": [1]}', "an entry is a JSON int"),
    ('{"operations": [{"operation": "join", "started": 1}]}', "an entry has no valid node"),
    ('{"operations": [{"node": "n1", "operation": "reboot", "started": 1}]}',
     "the entry of n1 has operation 'reboot'"),
    ('{"operations": [{"node": "n1", "operation": "join"}]}', "the entry of n1 has no numeric started"),
    ('{"operations": [{"node": "n1", "operation": "join", "started": 1, "detail": []}]}',
     "the detail of n1 is not an object"),
    ('{"operations": [{"node": "n1", "operation": "join", "started": 1},'
     ' {"node": "n1", "operation": "leave", "started": 2}]}', "names node n1 twice"),
])
@pytest.mark.parametrize("action", ["info", "present", "absent"])
def test_corrupt_journal_fails_naming_the_path_and_is_kept(capsys, tmp_path, text, words, action):
    path = journal_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    if action == "info":
        res = info(capsys, path)
    elif action == "present":
        res = journal(capsys, path, node="n2", operation="join")
    else:
        res = journal(capsys, path, node="n1", state="absent")
    assert res["rc"] == 1 and str(path) in res["msg"] and words in res["msg"]
    assert "the balancer does not act while it cannot tell which node operations" in res["msg"]
    assert path.read_text() == text
    assert sorted(os.listdir(path.parent)) in (["journal.json"], [".journal.json.guard", "journal.json"])


@pytest.mark.parametrize("action", ["info", "present"])
def test_unreadable_journal_or_a_directory_refuses_and_changes_nothing(capsys, tmp_path, monkeypatch, action):
    path = journal_path(tmp_path)
    path.mkdir(parents=True)  # a directory where the journal should be
    res = info(capsys, path) if action == "info" else journal(capsys, path, node="n2", operation="join")
    assert res["rc"] == 1 and "cannot read journal %s: it is a directory" % path in res["msg"]
    assert "does not act" in res["msg"] and path.is_dir()
    path.rmdir()
    path.write_text('{"schema": 1, "operations": []}')
    real_open = open

    def deny(name, *args, **kw):  # injected: these tests run as root
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(name, *args, **kw)

    from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
    monkeypatch.setattr(bs, "open", deny, raising=False)
    res = info(capsys, path) if action == "info" else journal(capsys, path, node="n2", operation="join")
    assert res["rc"] == 1 and "cannot read journal %s: Permission denied" % path in res["msg"]
    monkeypatch.undo()
    assert path.read_text() == '{"schema": 1, "operations": []}'


def test_journal_write_failure_keeps_the_record_it_had(capsys, tmp_path, monkeypatch):
    path = journal_path(tmp_path)
    assert journal(capsys, path, node="n1", operation="join")["changed"] is True
    before = path.read_text()

    def full(fd):
        raise OSError(28, "No space left on device")

    from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
    monkeypatch.setattr(bs.os, "fsync", full)
    res = journal(capsys, path, node="n1", state="absent")
    assert res["rc"] == 1 and "No space left on device" in res["msg"] and "left as it was" in res["msg"]
    monkeypatch.undo()
    assert path.read_text() == before  # the join is still recorded: the next poll finishes it


def test_an_empty_object_is_an_empty_journal(capsys, tmp_path):
    path = journal_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    assert info(capsys, path)["operations"] == []
    res = journal(capsys, path, node="n1", operation="join")
    assert res["changed"] is True and json.loads(path.read_text())["schema"] == 1


@pytest.mark.parametrize("args, words", [
    ({"node": "node 3", "operation": "join"}, "is not a node name"),
    ({"node": "", "operation": "join"}, "is not a node name"),
    ({"node": "n1"}, "operation"),
    ({"node": "n1", "operation": "reboot"}, "operation"),
])
def test_bad_input(capsys, tmp_path, args, words):
    path = journal_path(tmp_path)
    res = journal(capsys, path, **args)
    assert res["rc"] == 1 and words in res["msg"]
    assert not path.parent.exists()


def test_record_and_remove_are_pure():
    ops, changed, entry = bj.record([], "n1", "join", {"a": 1}, now=5.0)
    assert changed and ops == [entry] and entry["started"] == 5.0
    again, changed, same = bj.record(ops, "n1", "join", None, now=9.0)
    assert not changed and again is ops and same is entry
    rest, changed, removed = bj.remove(ops, "n1")
    assert changed and rest == [] and removed == entry and ops == [entry]
    with pytest.raises(bj.JournalConflict):
        bj.record(ops, "n1", "leave")


def _record_worker(path, node, barrier, results):
    barrier.wait()
    try:
        bj.update(path, lambda ops: bj.record(ops, node, "join", {"n": node}))
        results.put((node, "ok"))
    except Exception as exc:  # pragma: no cover - reported as a test failure
        results.put((node, repr(exc)))


def test_concurrent_records_are_all_kept(tmp_path):
    """node_join runs for many nodes at once: no record may be lost to a read-modify-write race."""
    path = str(journal_path(tmp_path))
    nodes = ["node%03d" % i for i in range(12)]
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(nodes), timeout=60)
    results = ctx.Queue()
    workers = [ctx.Process(target=_record_worker, args=(path, node, barrier, results)) for node in nodes]
    for worker in workers:
        worker.start()
    got = sorted(results.get(timeout=120) for _node in nodes)
    for worker in workers:
        worker.join(60)
    assert got == [(node, "ok") for node in nodes]
    operations, exists = bj.read_journal(path)
    assert exists and sorted(e["node"] for e in operations) == nodes


@pytest.mark.parametrize("text, words", [
    ("[" * 100000 + "]" * 100000, "is not valid JSON (nested too deeply)"),
    ('{"schema": 1, "operations": [{"node": "n1", "operation": "join", "started": Infinity}]}',
     "the entry of n1 has no numeric started"),
    ('{"schema": 1, "operations": [{"node": "n1", "operation": "join", "started": NaN}]}',
     "the entry of n1 has no numeric started"),
])
def test_fuzzed_journals_are_refused_not_a_traceback(capsys, tmp_path, text, words):
    path = journal_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    for res in (info(capsys, path), journal(capsys, path, node="n1", operation="join")):
        assert res["rc"] == 1 and words in res["msg"] and "does not act" in res["msg"]
