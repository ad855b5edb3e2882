# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.balancer_state: read/write the balancer's state file."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import balancer_state
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs

STATE = {"schema": 1, "last_poll": 1700000000.0, "last_change": None,
         "nodes": {"node001": {"first_seen": 1699990000.0, "joined": None, "last_busy": 1699999000.0}},
         "booting": [], "jobs": {"pending": {"42": {"submit_time": 1.5, "first_seen": 2.0}}}}


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            balancer_state.main()
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    result["rc"] = exc.value.code
    result["_stderr"] = captured.err
    return result


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_read_missing_file_is_empty_state(capsys, tmp_path):
    path = tmp_path / "nothing" / "state.json"
    res = run_module(capsys, {"path": str(path)})
    assert res["rc"] == 0 and res["changed"] is False
    assert res["content"] == {} and res["exists"] is False
    assert not path.parent.exists()  # reading creates nothing


CORRUPT = [
    ("{not json", "is not valid JSON"),
    ('{"schema": 1, "last_poll": 1700000000.0, "nodes": {"node001": {"first_se', "is not valid JSON"),
    ("", "is empty (0 bytes)"),
    ("\n  \n", "is empty (4 bytes)"),
    ("[1, 2]", "holds a JSON list, not an object"),
    ('"state"', "holds a JSON str, not an object"),
    ("null", "holds a JSON NoneType, not an object"),
    (b"\xff\xfe{}", "is not UTF-8"),
    (b"\x00" * 64, "is not valid JSON"),
]


def write_raw(path, text):
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return text if isinstance(text, bytes) else text.encode()


def warned(res):
    """Warning texts: ansible-core 2.19 returns structured events; once controller code has been
    imported in this process (the action plugin tests), it displays them on stderr instead."""
    return json.dumps(res.get("warnings", [])) + " ".join(res["_stderr"].split())


def aside_files(directory, label="corrupt"):
    return sorted(p for p in os.listdir(directory) if ".%s-" % label in p)


@pytest.mark.parametrize("text, words", CORRUPT)
def test_read_corrupt_file_moves_it_aside_and_reads_an_empty_state(capsys, tmp_path, text, words):
    path = tmp_path / "state.json"
    raw = write_raw(path, text)
    res = run_module(capsys, {"path": str(path)})
    assert res["rc"] == 0 and res["content"] == {} and res["changed"] is True and res["exists"] is True
    moved = res["corrupt"]["moved_to"]
    assert words in res["corrupt"]["problem"] and str(path) in res["corrupt"]["problem"]
    assert os.path.basename(moved).startswith("state.json.corrupt-") and aside_files(tmp_path) == [os.path.basename(moved)]
    assert open(moved, "rb").read() == raw  # kept, not deleted
    assert not path.exists()
    assert "moved it aside to %s" % moved in warned(res) and "started from an empty state" in warned(res)
    # the next read is an ordinary empty state: no new warning, the aside file stays
    res = run_module(capsys, {"path": str(path)})
    assert res["content"] == {} and res["changed"] is False and "corrupt" not in res
    assert aside_files(tmp_path) == [os.path.basename(moved)]


@pytest.mark.parametrize("text, words", CORRUPT[:3])
def test_read_corrupt_file_with_on_corrupt_fail_fails_and_keeps_it(capsys, tmp_path, text, words):
    path = tmp_path / "state.json"
    raw = write_raw(path, text)
    res = run_module(capsys, {"path": str(path), "on_corrupt": "fail"})
    assert res["rc"] == 1 and res["failed"] is True
    assert str(path) in res["msg"] and words in res["msg"] and "nothing was changed" in res["msg"]
    assert path.read_bytes() == raw and aside_files(tmp_path) == []


def test_read_corrupt_file_in_check_mode_moves_nothing(capsys, tmp_path):
    path = tmp_path / "state.json"
    path.write_text("{oops")
    res = run_module(capsys, {"path": str(path), "_ansible_check_mode": True})
    assert res["rc"] == 0 and res["content"] == {} and res["changed"] is True
    assert res["corrupt"]["moved_to"] is None and "would move it aside" in warned(res)
    assert path.read_text() == "{oops" and aside_files(tmp_path) == []


def test_read_a_directory_fails_and_changes_nothing(capsys, tmp_path):
    path = tmp_path / "state.json"
    path.mkdir()
    res = run_module(capsys, {"path": str(path)})
    assert res["failed"] is True and str(path) in res["msg"] and "it is a directory" in res["msg"]
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE})
    assert res["failed"] is True and "it is a directory" in res["msg"]
    assert path.is_dir() and os.listdir(tmp_path) == ["state.json"]


@pytest.mark.parametrize("state", ["read", "present"])
def test_unreadable_file_fails_and_is_never_replaced(capsys, tmp_path, monkeypatch, state):
    """Permission denied (injected: these tests run as root, who reads any file)."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(STATE))
    real_open = open

    def deny(name, *args, **kw):
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(name, *args, **kw)

    monkeypatch.setattr(bs, "open", deny, raising=False)
    args = {"path": str(path)}
    if state == "present":
        args.update(state="present", content={"schema": 1})
    res = run_module(capsys, args)
    assert res["failed"] is True
    assert res["msg"] == "cannot read state file %s: Permission denied; nothing was changed" % path
    assert json.loads(path.read_text()) == STATE and os.listdir(tmp_path) == ["state.json"]


def test_write_creates_dir_0700_and_file_0600_atomically(capsys, tmp_path):
    path = tmp_path / "var" / "mycluster" / "state.json"
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE})
    assert res["rc"] == 0 and res["changed"] is True and res["exists"] is False
    assert json.loads(path.read_text()) == STATE
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    # only the file: no temporary file left behind
    assert os.listdir(path.parent) == ["state.json"]
    # and it reads back
    res = run_module(capsys, {"path": str(path)})
    assert res["content"] == STATE and res["exists"] is True


def test_write_is_idempotent_by_content(capsys, tmp_path):
    path = tmp_path / "state.json"
    # same content, other formatting and key order: not a change
    path.write_text(json.dumps(dict(reversed(list(STATE.items())))))
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE})
    assert res["changed"] is False
    res = run_module(capsys, {"path": str(path), "state": "present", "content": dict(STATE, last_poll=1700000060.0)})
    assert res["changed"] is True
    res = run_module(capsys, {"path": str(path), "state": "present", "content": dict(STATE, last_poll=1700000060.0)})
    assert res["changed"] is False


def test_write_empty_state_to_missing_file_creates_it(capsys, tmp_path):
    path = tmp_path / "state.json"
    res = run_module(capsys, {"path": str(path), "state": "present", "content": {}})
    assert res["changed"] is True and path.read_text() == "{}\n"


def test_check_mode_writes_nothing(capsys, tmp_path):
    path = tmp_path / "new" / "state.json"
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE,
                              "_ansible_check_mode": True, "_ansible_diff": True})
    assert res["changed"] is True
    assert not path.parent.exists()
    assert res["diff"]["before"] == "" and json.loads(res["diff"]["after"]) == STATE
    path.parent.mkdir()
    path.write_text(json.dumps(STATE))
    before = path.read_text()
    res = run_module(capsys, {"path": str(path), "state": "present", "content": {"schema": 1},
                              "_ansible_check_mode": True})
    assert res["changed"] is True and path.read_text() == before


def test_diff(capsys, tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"schema": 1, "last_poll": 1.0}))
    res = run_module(capsys, {"path": str(path), "state": "present", "content": {"schema": 1, "last_poll": 2.0},
                              "_ansible_diff": True})
    assert res["diff"]["before_header"] == str(path)
    assert '"last_poll": 1.0' in res["diff"]["before"] and '"last_poll": 2.0' in res["diff"]["after"]


def test_present_moves_a_corrupt_file_aside_before_writing(capsys, tmp_path):
    path = tmp_path / "state.json"
    path.write_text("{broken")
    res = run_module(capsys, {"path": str(path), "state": "present", "content": {}})
    assert res["changed"] is True and json.loads(path.read_text()) == {}
    assert open(res["corrupt"]["moved_to"]).read() == "{broken"
    assert "not valid JSON" in warned(res) and "moved it aside" in warned(res)


def test_present_keeps_a_copy_of_a_newer_schema(capsys, tmp_path):
    path = tmp_path / "state.json"
    newer = {"schema": 2, "nodes": {}, "something_new": [1, 2]}
    path.write_text(json.dumps(newer))
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE,
                              "_ansible_check_mode": True})
    assert "would keep a copy" in warned(res) and aside_files(tmp_path, "schema2") == []
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE})
    assert res["changed"] is True and json.loads(path.read_text()) == STATE
    assert json.loads(open(res["schema_copy"]).read()) == newer
    assert "has schema 2, newer than the content written (1)" in warned(res)
    # same or newer content schema: no copy
    res = run_module(capsys, {"path": str(path), "state": "present", "content": dict(STATE, last_poll=2.0)})
    assert "schema_copy" not in res and len(aside_files(tmp_path, "schema2")) == 1


def test_module_result_has_no_file_attributes(capsys, tmp_path):
    path = tmp_path / "state.json"
    res = run_module(capsys, {"path": str(path), "state": "present", "content": STATE})
    assert not {"uid", "gid", "owner", "group", "mode", "state", "size"} & set(res)


def test_default_path_from_cluster_and_bad_names(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bs, "DEFAULT_ROOT", str(tmp_path))
    res = run_module(capsys, {"cluster": "mycluster", "state": "present", "content": {"schema": 1}})
    assert res["path"] == str(tmp_path / "mycluster" / "state.json")
    assert (tmp_path / "mycluster" / "state.json").exists()
    assert bs.default_path.__doc__  # documented
    for bad in ("../etc", "a/b", ".hidden", ""):
        res = run_module(capsys, {"cluster": bad})
        assert res["failed"] is True and res["msg"].startswith("cluster:")


def test_argument_errors(capsys, tmp_path):
    res = run_module(capsys, {"state": "read"})
    assert res["failed"] is True and "cluster" in res["msg"] and "path" in res["msg"]
    res = run_module(capsys, {"path": str(tmp_path / "s.json"), "state": "present"})
    assert res["failed"] is True and "content" in res["msg"]


def test_write_atomic_keeps_old_file_when_rename_fails(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    bs.write_atomic(str(path), bs.dumps(STATE))

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", boom)
    with pytest.raises(bs.StateFileError, match=str(path)):
        bs.write_atomic(str(path), bs.dumps({"schema": 1}))
    assert json.loads(path.read_text()) == STATE
    assert os.listdir(tmp_path) == ["state.json"]


def test_module_utils_is_python38_syntax():
    """Target-side code must compile for old Pythons: no 3.9+ only syntax or builtins used."""
    import ast
    for mod in (bs, balancer_state):
        tree = ast.parse(open(mod.__file__).read(), feature_version=(3, 8))
        assert tree


# ---- write faults ---------------------------------------------------------------------------

class _FullDisk(object):
    """A file object whose write fails like a full disk (no tiny tmpfs: the error is injected)."""

    def __init__(self, handle, fail_in):
        self.handle, self.fail_in = handle, fail_in

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def write(self, data):
        if self.fail_in == "write":
            self.handle.write(data[:len(data) // 2])  # part of it reached the disk
            raise OSError(28, "No space left on device")
        return self.handle.write(data)

    def flush(self):
        self.handle.flush()

    def fileno(self):
        return self.handle.fileno()


@pytest.mark.parametrize("fail_in, strerror", [("write", "No space left on device"),
                                               ("fsync", "Input/output error")])
def test_write_failure_leaves_the_old_file_and_no_temporary_file(capsys, tmp_path, monkeypatch, fail_in, strerror):
    path = tmp_path / "state.json"
    path.write_text(bs.dumps(STATE))
    real_fdopen = os.fdopen
    monkeypatch.setattr(bs.os, "fdopen", lambda fd, mode: _FullDisk(real_fdopen(fd, mode), fail_in))
    if fail_in == "fsync":
        def eio(fd):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(bs.os, "fsync", eio)
    res = run_module(capsys, {"path": str(path), "state": "present", "content": dict(STATE, last_poll=2.0)})
    assert res["failed"] is True
    assert res["msg"] == "cannot write state file %s: %s; the file was left as it was" % (path, strerror)
    assert json.loads(path.read_text()) == STATE
    assert os.listdir(tmp_path) == ["state.json"]


def _write_and_hang(path, ready):
    """A writer killed mid-write: it hangs in fsync, after writing its temporary file."""
    import time

    def hang(fd):
        os.write(ready, b"x")
        time.sleep(3600)
    bs.os.fsync = hang
    bs.write_atomic(path, bs.dumps({"schema": 1, "last_poll": 99.0}) * 1000)


def test_writer_killed_mid_write_leaves_the_old_file_then_its_temp_file_is_cleaned(tmp_path):
    import multiprocessing
    path = tmp_path / "state.json"
    bs.write_atomic(str(path), bs.dumps(STATE))
    ready_r, ready_w = os.pipe()
    proc = multiprocessing.get_context("fork").Process(target=_write_and_hang, args=(str(path), ready_w), daemon=True)
    proc.start()
    assert os.read(ready_r, 1) == b"x"
    proc.kill()  # SIGKILL between the write of the temporary file and the rename
    proc.join(30)
    assert json.loads(path.read_text()) == STATE  # the old file, whole
    temps = [p for p in os.listdir(tmp_path) if p.startswith(".state.json.") and p.endswith(".tmp")]
    assert len(temps) == 1
    # a later write removes it once it is an hour old, and not before
    bs.write_atomic(str(path), bs.dumps(STATE))
    assert temps[0] in os.listdir(tmp_path)
    old = tmp_path / temps[0]
    os.utime(old, (old.stat().st_mtime - 3601, old.stat().st_mtime - 3601))
    bs.write_atomic(str(path), bs.dumps(dict(STATE, last_poll=3.0)))
    assert os.listdir(tmp_path) == ["state.json"]
    assert json.loads(path.read_text())["last_poll"] == 3.0


def test_corrupt_file_replaced_by_a_writer_meanwhile_is_not_moved(tmp_path, monkeypatch):
    """read_state_or_move_aside only moves the file it judged (a writer may have replaced it)."""
    path = tmp_path / "state.json"
    path.write_text("{oops")
    real_lstat = os.lstat
    calls = []

    def lstat_after_replace(name, *args, **kw):
        if os.fspath(name) == str(path) and not calls:
            calls.append(1)
            bs.write_atomic(str(path), bs.dumps(STATE))  # a valid state arrives just now
        return real_lstat(name, *args, **kw)

    monkeypatch.setattr(bs.os, "lstat", lstat_after_replace)
    content, text, problem, moved = bs.read_state_or_move_aside(str(path))
    assert content == STATE and problem is None and moved is None
    assert os.listdir(tmp_path) == ["state.json"]


def test_json_nested_too_deeply_is_corrupt_not_a_traceback(capsys, tmp_path):
    """Found by benchmarks/fuzz_parsers.py: json.loads raised RecursionError."""
    path = tmp_path / "state.json"
    path.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(bs.StateFileCorrupt, match="is not valid JSON \\(nested too deeply\\)"):
        bs.read_state(str(path))
    res = run_module(capsys, {"path": str(path)})
    assert res["rc"] == 0 and res["content"] == {} and "nested too deeply" in res["corrupt"]["problem"]
