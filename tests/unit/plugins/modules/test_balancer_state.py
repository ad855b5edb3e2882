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


@pytest.mark.parametrize("text, words", [
    ("{not json", "is not valid JSON"),
    ("", "is not valid JSON"),
    ("[1, 2]", "holds a JSON list, not an object"),
    (b"\xff\xfe{}", "is not UTF-8"),
])
def test_read_corrupt_file_fails_naming_the_path(capsys, tmp_path, text, words):
    path = tmp_path / "state.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    res = run_module(capsys, {"path": str(path)})
    assert res["rc"] == 1 and res["failed"] is True
    assert str(path) in res["msg"] and words in res["msg"]
    # never reset silently
    assert path.read_bytes() == (text if isinstance(text, bytes) else text.encode())


def test_read_a_directory_fails(capsys, tmp_path):
    res = run_module(capsys, {"path": str(tmp_path)})
    assert res["failed"] is True and str(tmp_path) in res["msg"]


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


def test_present_replaces_an_unreadable_file_with_a_warning(capsys, tmp_path):
    path = tmp_path / "state.json"
    path.write_text("{broken")
    res = run_module(capsys, {"path": str(path), "state": "present", "content": {}})
    assert res["changed"] is True and json.loads(path.read_text()) == {}
    # ansible-core 2.19 returns warnings as structured events; once controller code has been
    # imported in this process (the action plugin tests), it displays them on stderr instead
    warned = json.dumps(res.get("warnings", [])) + res["_stderr"]
    assert "not valid JSON" in warned and "replacing it" in warned


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
