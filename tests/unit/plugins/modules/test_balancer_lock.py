# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.balancer_lock: one balancer per cluster (module and module_utils)."""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import balancer_lock
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_lock as bl

NOW = 1700000000.0


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """A clock the tests move by hand: ``clock[0]`` is now."""
    now = [NOW]
    monkeypatch.setattr(bl, "_now", lambda: now[0])
    return now


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            balancer_lock.main()
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    result["rc"] = exc.value.code
    result["_stderr"] = captured.err
    return result


def warnings(result):
    """Warning texts. ansible-core 2.19 returns them as structured events; once controller code
    has been imported in this process (the action plugin tests), it displays them on stderr."""
    texts = []
    for warning in result.get("warnings", []):
        texts.append(warning["event"]["msg"] if isinstance(warning, dict) else warning)
    if result.get("_stderr"):
        texts.append(" ".join(result["_stderr"].split()))
    return texts


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def lock_path(tmp_path):
    return tmp_path / "gridengine-balancer" / "mycluster" / "lock.json"


def acquire(capsys, path, owner="ctl1 pid 100 loadbalance.yml", **extra):
    args = {"path": str(path), "cluster": "mycluster", "owner": owner}
    args.update(extra)
    return run_module(capsys, args)


def write_lock(path, owner="ctl2 pid 7", token="deadbeef", acquired=NOW - 2000, ttl=900,
               cluster="mycluster"):
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"schema": 1, "cluster": cluster, "owner": owner, "token": token,
              "acquired": acquired, "renewed": acquired, "expires": acquired + ttl, "ttl": ttl}
    path.write_text(json.dumps(record))
    return record


# ---------------------------------------------------------------------------------------------
# acquire
# ---------------------------------------------------------------------------------------------

def test_acquire_creates_the_lock_0600_in_a_0700_dir(capsys, tmp_path):
    path = lock_path(tmp_path)
    res = acquire(capsys, path, ttl=600)
    assert res["rc"] == 0 and res["changed"] is True and res["action"] == "acquired"
    on_disk = json.loads(path.read_text())
    assert on_disk == res["lock"]
    assert on_disk["token"] == res["token"] and len(res["token"]) == 32
    assert on_disk["owner"] == "ctl1 pid 100 loadbalance.yml"
    assert on_disk["cluster"] == "mycluster"
    assert on_disk["acquired"] == NOW and on_disk["expires"] == NOW + 600 == res["expires"]
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    # the lock and its guard, no temporary file left
    assert sorted(os.listdir(path.parent)) == [".lock.json.guard", "lock.json"]
    assert mode(path.parent / ".lock.json.guard") == 0o600
    assert "taken_over_from" not in res


def test_default_path_from_cluster(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bl, "DEFAULT_ROOT", str(tmp_path))
    res = run_module(capsys, {"cluster": "mycluster", "owner": "me"})
    assert res["rc"] == 0, res
    assert res["path"] == str(tmp_path / "mycluster" / "lock.json")


def test_acquire_refused_while_another_holds_it(capsys, tmp_path, clock):
    path = lock_path(tmp_path)
    first = acquire(capsys, path, owner="ctl1 pid 100")
    before = path.read_bytes()
    clock[0] += 300
    res = acquire(capsys, path, owner="ctl2 pid 200")
    assert res["rc"] == 1 and res["failed"] is True
    assert res["msg"] == ("cluster mycluster is locked by ctl1 pid 100 since 2023-11-14 22:13:20 UTC "
                          "(expires in 600s); another balancer is running")
    assert res["locked_by"]["owner"] == "ctl1 pid 100"
    assert res["locked_by"]["expires_in"] == 600
    assert "token" not in res["locked_by"]  # never hand out the holder's token
    assert first["token"] not in json.dumps(res)
    assert path.read_bytes() == before


def test_acquire_in_check_mode_writes_nothing(capsys, tmp_path):
    path = lock_path(tmp_path)
    res = acquire(capsys, path, _ansible_check_mode=True)
    assert res["rc"] == 0 and res["changed"] is True and res["action"] == "acquired"
    assert res["token"] and res["lock"]["owner"].startswith("ctl1")
    assert not path.parent.exists()  # not even the directory


def test_acquire_in_check_mode_still_fails_when_held(capsys, tmp_path):
    path = lock_path(tmp_path)
    acquire(capsys, path, owner="ctl1")
    res = acquire(capsys, path, owner="ctl2", _ansible_check_mode=True)
    assert res["rc"] == 1 and "is locked by ctl1" in res["msg"]
    assert res["locked_by"]["owner"] == "ctl1"


def test_acquire_with_diff(capsys, tmp_path):
    path = lock_path(tmp_path)
    res = acquire(capsys, path, _ansible_diff=True)
    assert res["diff"]["before"] == ""
    assert json.loads(res["diff"]["after"]) == res["lock"]


@pytest.mark.parametrize("args, words", [
    ({"owner": None}, "owner is required"),
    ({"owner": "  "}, "owner is required"),
    ({"ttl": 0}, "ttl must be a positive"),
    ({"ttl": -5}, "ttl must be a positive"),
    ({"cluster": "../etc"}, "not a valid cluster name"),
])
def test_bad_input_is_named_and_nothing_written(capsys, tmp_path, args, words):
    path = lock_path(tmp_path)
    full = {"path": str(path), "cluster": "mycluster", "owner": "me"}
    full.update(args)
    full = dict((k, v) for k, v in full.items() if v is not None)
    res = run_module(capsys, full)
    assert res["rc"] == 1 and words in res["msg"]
    assert not path.parent.exists()


def test_cluster_or_path_required(capsys):
    res = run_module(capsys, {"owner": "me"})
    assert res["rc"] == 1 and "cluster" in res["msg"] and "path" in res["msg"]


# ---------------------------------------------------------------------------------------------
# renew
# ---------------------------------------------------------------------------------------------

def test_renew_extends_the_expiry(capsys, tmp_path, clock):
    path = lock_path(tmp_path)
    first = acquire(capsys, path, ttl=900)
    clock[0] += 800
    res = run_module(capsys, {"path": str(path), "token": first["token"], "ttl": 600})
    assert res["rc"] == 0 and res["changed"] is True and res["action"] == "renewed"
    assert res["token"] == first["token"]
    on_disk = json.loads(path.read_text())
    assert on_disk["acquired"] == NOW
    assert on_disk["renewed"] == NOW + 800
    assert on_disk["expires"] == NOW + 1400 == res["expires"]
    assert on_disk["owner"] == first["lock"]["owner"]
    assert mode(path) == 0o600


def test_renew_after_expiry_that_nobody_took_over(capsys, tmp_path, clock):
    path = lock_path(tmp_path)
    first = acquire(capsys, path, ttl=60)
    clock[0] += 120
    res = run_module(capsys, {"path": str(path), "token": first["token"]})
    assert res["rc"] == 0 and res["action"] == "renewed" and res["expires"] == NOW + 120 + 900


def test_renew_in_check_mode_writes_nothing(capsys, tmp_path, clock):
    path = lock_path(tmp_path)
    first = acquire(capsys, path)
    before = path.read_bytes()
    clock[0] += 10
    res = run_module(capsys, {"path": str(path), "token": first["token"], "_ansible_check_mode": True})
    assert res["rc"] == 0 and res["changed"] is True and res["expires"] == NOW + 910
    assert path.read_bytes() == before


def test_renew_of_a_lock_taken_over_fails_naming_the_new_holder(capsys, tmp_path, clock):
    path = lock_path(tmp_path)
    first = acquire(capsys, path, owner="ctl1", ttl=60)
    clock[0] += 61
    second = acquire(capsys, path, owner="ctl2")
    assert second["action"] == "taken_over"
    res = run_module(capsys, {"path": str(path), "token": first["token"]})
    assert res["rc"] == 1
    assert "was lost" in res["msg"] and "locked by ctl2" in res["msg"]
    assert res["locked_by"]["owner"] == "ctl2"
    assert json.loads(path.read_text())["token"] == second["token"]


def test_renew_of_a_missing_lock_fails(capsys, tmp_path):
    path = lock_path(tmp_path)
    res = run_module(capsys, {"path": str(path), "token": "abc123"})
    assert res["rc"] == 1 and "is gone" in res["msg"] and str(path) in res["msg"]
    assert not path.exists()


# ---------------------------------------------------------------------------------------------
# release
# ---------------------------------------------------------------------------------------------

def test_release_with_the_token(capsys, tmp_path):
    path = lock_path(tmp_path)
    first = acquire(capsys, path)
    res = run_module(capsys, {"path": str(path), "state": "absent", "token": first["token"],
                              "_ansible_diff": True})
    assert res["rc"] == 0 and res["changed"] is True and res["action"] == "released"
    assert res["lock"] is None and "expires" not in res
    assert json.loads(res["diff"]["before"])["token"] == first["token"]
    assert res["diff"]["after"] == ""
    assert not path.exists()
    # again: nothing held, nothing to do
    res = run_module(capsys, {"path": str(path), "state": "absent", "token": first["token"]})
    assert res["rc"] == 0 and res["changed"] is False and res["action"] == "not_held"


def test_release_without_any_lock_creates_nothing(capsys, tmp_path):
    path = lock_path(tmp_path)
    res = run_module(capsys, {"path": str(path), "state": "absent", "token": "abc"})
    assert res["rc"] == 0 and res["changed"] is False and res["action"] == "not_held"
    assert not path.parent.exists()


def test_release_needs_a_token(capsys, tmp_path):
    res = run_module(capsys, {"path": str(lock_path(tmp_path)), "state": "absent"})
    assert res["rc"] == 1 and "token" in res["msg"]


def test_release_in_check_mode_keeps_the_lock(capsys, tmp_path):
    path = lock_path(tmp_path)
    first = acquire(capsys, path)
    res = run_module(capsys, {"path": str(path), "state": "absent", "token": first["token"],
                              "_ansible_check_mode": True})
    assert res["rc"] == 0 and res["changed"] is True and res["action"] == "released"
    assert path.exists()


def test_release_with_a_foreign_token_is_refused(capsys, tmp_path):
    path = lock_path(tmp_path)
    acquire(capsys, path, owner="ctl1")
    before = path.read_bytes()
    res = run_module(capsys, {"path": str(path), "state": "absent", "token": "not-mine"})
    assert res["rc"] == 1 and "is locked by ctl1" in res["msg"] and "not released" in res["msg"]
    assert res["locked_by"]["owner"] == "ctl1" and "token" not in res["locked_by"]
    assert path.read_bytes() == before


def test_release_of_a_foreign_stale_lock_is_refused_too(capsys, tmp_path):
    path = lock_path(tmp_path)
    write_lock(path, owner="dead ctl", token="deadbeef", acquired=NOW - 2000, ttl=900)
    before = path.read_bytes()
    res = run_module(capsys, {"path": str(path), "state": "absent", "token": "not-mine"})
    assert res["rc"] == 1 and "stale for 1100s" in res["msg"] and "not released" in res["msg"]
    assert path.read_bytes() == before


# ---------------------------------------------------------------------------------------------
# stale locks
# ---------------------------------------------------------------------------------------------

def test_stale_lock_is_taken_over(capsys, tmp_path):
    path = lock_path(tmp_path)
    stale = write_lock(path, owner="dead ctl pid 9", token="deadbeef", acquired=NOW - 2000, ttl=900)
    res = acquire(capsys, path, owner="ctl1")
    assert res["rc"] == 0 and res["changed"] is True and res["action"] == "taken_over"
    assert res["taken_over_from"]["owner"] == "dead ctl pid 9"
    assert res["taken_over_from"]["token"] == "deadbeef"
    assert res["taken_over_from"]["expires"] == stale["expires"]
    assert res["taken_over_from"]["expires_in"] == -1100
    assert any("took over the stale lock of dead ctl pid 9" in w for w in warnings(res))
    on_disk = json.loads(path.read_text())
    assert on_disk["token"] == res["token"] and on_disk["owner"] == "ctl1"
    # the stale file was moved aside and then removed
    assert sorted(os.listdir(path.parent)) == [".lock.json.guard", "lock.json"]


def test_lock_expiring_exactly_now_is_stale(capsys, tmp_path):
    path = lock_path(tmp_path)
    write_lock(path, acquired=NOW - 900, ttl=900)
    res = acquire(capsys, path)
    assert res["rc"] == 0 and res["action"] == "taken_over"


def test_stale_takeover_in_check_mode_writes_nothing(capsys, tmp_path):
    path = lock_path(tmp_path)
    write_lock(path, owner="dead ctl")
    before = path.read_bytes()
    res = acquire(capsys, path, _ansible_check_mode=True)
    assert res["rc"] == 0 and res["action"] == "taken_over"
    assert res["taken_over_from"]["owner"] == "dead ctl"
    assert any("would take over" in w for w in warnings(res))
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == ["lock.json"]


@pytest.mark.parametrize("text, words", [
    ("{not json", "is not valid JSON"),
    ("", "is empty"),
    ("\n", "is empty"),
    ('{"owner": "ctl1", "token": "abc", "acq', "is not valid JSON"),
    ("[1]", "holds a JSON list"),
    ('{"owner": "x", "acquired": 1, "expires": 2}', "has no valid token"),
    ('{"owner": "x", "token": "../../etc", "acquired": 1, "expires": 2}', "has no valid token"),
    ('{"owner": "x", "token": "abc", "acquired": 1, "expires": "soon"}', "has no numeric expires"),
])
@pytest.mark.parametrize("state", ["acquire", "release", "renew"])
def test_corrupt_lock_fails_naming_the_path_and_is_kept(capsys, tmp_path, text, words, state):
    path = lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    args = {"path": str(path), "owner": "me"}
    if state == "release":
        args.update(state="absent", token="abc")
    elif state == "renew":
        args.update(token="abc")
    res = run_module(capsys, args)
    assert res["rc"] == 1 and str(path) in res["msg"] and words in res["msg"]
    assert "remove it by hand" in res["msg"]
    assert path.read_text() == text


@pytest.mark.parametrize("text", ["", '{"owner": "ctl1", "tok', "\x00\x00\x00", '{"owner": "x"}', "[]"])
def test_corrupt_lock_is_held_until_mtime_plus_ttl_then_moved_aside_and_taken_over(capsys, tmp_path, clock,
                                                                                   text):
    """A corrupt lock names no holder or expiry: it counts as taken when the file was written."""
    path = lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    os.utime(path, (NOW - 100, NOW - 100))
    res = acquire(capsys, path, ttl=900)
    assert res["rc"] == 1 and str(path) in res["msg"]
    assert "last written 100s ago" in res["msg"] and "treated as held until 2023-11-14 22:26:40 UTC" in res["msg"]
    assert path.read_text() == text
    clock[0] = NOW - 100 + 900  # mtime + ttl: stale
    res = acquire(capsys, path, ttl=900, _ansible_check_mode=True)
    assert res["rc"] == 0 and res["action"] == "taken_over" and res["corrupt_lock"]["moved_to"] is None
    assert path.read_text() == text
    res = acquire(capsys, path, ttl=900)
    assert res["rc"] == 0 and res["action"] == "taken_over" and "taken_over_from" not in res
    moved = res["corrupt_lock"]["moved_to"]
    assert moved == "%s.corrupt-20231114T222640Z.%s" % (path, res["token"])
    assert open(moved).read() == text  # kept for a person, never deleted
    assert res["corrupt_lock"]["modified"] == NOW - 100
    assert any("kept as %s" % moved in w for w in warnings(res))
    assert json.loads(path.read_text())["token"] == res["token"]
    # the next one finds the new, live lock
    res2 = acquire(capsys, path, owner="ctl2")
    assert res2["rc"] == 1 and "locked by ctl1 pid 100 loadbalance.yml" in res2["msg"]


def test_corrupt_lock_grace_uses_the_takers_ttl(capsys, tmp_path, clock):
    path = lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("garbage")
    os.utime(path, (NOW - 100, NOW - 100))
    assert acquire(capsys, path, ttl=101)["rc"] == 1
    res = acquire(capsys, path, ttl=100)
    assert res["rc"] == 0 and res["action"] == "taken_over"


def test_corrupt_lock_replaced_between_read_and_rename_is_put_back(tmp_path):
    path = lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("garbage")
    os.utime(path, (NOW - 5000, NOW - 5000))
    with pytest.raises(bl.LockCorrupt) as exc:
        bl.read_lock(str(path))
    corrupt = bl._corrupt_lock(str(path), exc.value, 900, NOW)
    # another process (without the guard) replaced it with a real lock meanwhile
    os.unlink(path)
    fresh = write_lock(path, owner="winner", token="f00d", acquired=NOW)
    assert bl._take_over_corrupt(str(path), corrupt, "{}", "cafe", NOW) is False
    assert json.loads(path.read_text()) == fresh
    assert os.listdir(path.parent) == ["lock.json"]


def test_lock_file_that_is_a_directory_fails(capsys, tmp_path):
    path = lock_path(tmp_path)
    path.mkdir(parents=True)
    res = acquire(capsys, path)
    assert res["rc"] == 1 and str(path) in res["msg"]


# ---------------------------------------------------------------------------------------------
# module_utils details
# ---------------------------------------------------------------------------------------------

def test_without_hard_links_o_excl_is_used(monkeypatch, tmp_path):
    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(bl.os, "link", no_link)
    path = str(lock_path(tmp_path))
    first = bl.acquire(path, "ctl1", 900)
    assert json.loads(open(path).read())["token"] == first["token"]
    assert mode(path) == 0o600
    with pytest.raises(bl.LockHeld):
        bl.acquire(path, "ctl2", 900)
    assert sorted(os.listdir(os.path.dirname(path))) == [".lock.json.guard", "lock.json"]


def test_takeover_gives_back_a_file_that_is_not_the_stale_one(tmp_path):
    """Without the guard, the file at the lock's name may change between read and rename: a
    taker that moved another file than the stale one it read puts it back and does not win."""
    path = str(lock_path(tmp_path))
    stale = write_lock(lock_path(tmp_path), token="deadbeef")
    # another taker won meanwhile: a fresh lock now has the name
    os.unlink(path)
    fresh = write_lock(lock_path(tmp_path), owner="winner", token="f00d", acquired=NOW)
    assert bl._take_over(path, stale, "{}", "cafe") is False
    assert json.loads(open(path).read()) == fresh
    assert os.listdir(os.path.dirname(path)) == ["lock.json"]


def test_takeover_gives_back_a_lock_its_owner_renewed(tmp_path):
    path = str(lock_path(tmp_path))
    stale = write_lock(lock_path(tmp_path), token="deadbeef", acquired=NOW - 2000)
    renewed = dict(stale, renewed=NOW, expires=NOW + 900)
    lock_path(tmp_path).write_text(json.dumps(renewed))
    assert bl._take_over(path, stale, "{}", "cafe") is False
    assert json.loads(open(path).read()) == renewed
    assert os.listdir(os.path.dirname(path)) == ["lock.json"]


def test_takeover_loses_when_the_name_is_taken_after_the_rename(monkeypatch, tmp_path):
    path = str(lock_path(tmp_path))
    stale = write_lock(lock_path(tmp_path), token="deadbeef")
    real_create = bl._create_exclusive

    def someone_first(p, text):
        write_lock(lock_path(tmp_path), owner="quick", token="f00d", acquired=NOW)
        return real_create(p, text)
    monkeypatch.setattr(bl, "_create_exclusive", someone_first)
    assert bl._take_over(path, stale, "{}", "cafe") is False
    assert json.loads(open(path).read())["owner"] == "quick"
    assert os.listdir(os.path.dirname(path)) == ["lock.json"]  # the stale one is gone


def test_public_strips_the_token():
    record = {"owner": "a", "token": "t", "acquired": NOW, "expires": NOW + 10.2}
    assert bl.public(record, now=NOW) == {"owner": "a", "acquired": NOW, "expires": NOW + 10.2,
                                          "expires_in": 11}


# ---------------------------------------------------------------------------------------------
# races between processes (real processes, real files)
# ---------------------------------------------------------------------------------------------

ROUNDS = 50


def _race_worker(name, paths, barrier, results, use_guard):
    if not use_guard:
        bl.guard = lambda path: contextlib.nullcontext()
    for index, path in enumerate(paths):
        barrier.wait()
        try:
            outcome = bl.acquire(path, name, 900)
            results.put((index, name, "won", outcome["token"], outcome["action"]))
        except bl.LockHeld as exc:
            results.put((index, name, "held", exc.holder["token"], None))
        except Exception as exc:  # pragma: no cover - reported as a test failure
            results.put((index, name, "error", repr(exc), None))


def _race(tmp_path, stale, use_guard):
    ctx = multiprocessing.get_context("fork")
    paths = []
    for index in range(ROUNDS):
        path = tmp_path / ("round%02d" % index) / "lock.json"
        path.parent.mkdir(parents=True)
        if stale:
            write_lock(path, owner="dead", token="dead%04d" % index, acquired=0.0, ttl=900)
        paths.append(str(path))
    barrier = ctx.Barrier(2, timeout=60)
    results = ctx.Queue()
    workers = [ctx.Process(target=_race_worker, args=(name, paths, barrier, results, use_guard))
               for name in ("ctl-a", "ctl-b")]
    for worker in workers:
        worker.start()
    got = [results.get(timeout=120) for _result in range(2 * ROUNDS)]
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    by_round = {}
    for index, name, outcome, token, action in got:
        assert outcome != "error", token
        by_round.setdefault(index, []).append((outcome, name, token, action))
    wins = {}
    for index in range(ROUNDS):
        entries = sorted(by_round[index])
        assert [e[0] for e in entries] == ["held", "won"], (index, entries)
        held, won = entries
        # the loser saw the winner's lock, and the winner's lock is the one on disk
        assert held[2] == won[2]
        assert json.loads(open(paths[index]).read())["token"] == won[2]
        if stale and use_guard:
            assert won[3] == "taken_over"
        elif not stale:
            assert won[3] == "acquired"
        # (link-rename-only: the loser of a takeover may have moved the stale lock aside just
        # before the winner looked, who then finds no lock and acquires it)
        names = sorted(os.listdir(os.path.dirname(paths[index])))
        assert names == ([".lock.json.guard", "lock.json"] if use_guard else ["lock.json"])
        wins[won[1]] = wins.get(won[1], 0) + 1
    return wins


@pytest.mark.parametrize("use_guard", [True, False], ids=["guarded", "link-only"])
def test_two_processes_race_to_acquire_exactly_one_wins(tmp_path, use_guard):
    _race(tmp_path, stale=False, use_guard=use_guard)


@pytest.mark.parametrize("use_guard", [True, False], ids=["guarded", "link-rename-only"])
def test_two_processes_race_to_take_over_a_stale_lock_exactly_one_wins(tmp_path, use_guard):
    _race(tmp_path, stale=True, use_guard=use_guard)


def test_result_is_not_treated_as_a_file_result(capsys, tmp_path, monkeypatch):
    """AnsibleModule stats a result's ``path`` (exists(), then lstat/stat) and adds owner, mode,
    state...; a lock released by its holder between the two crashed a losing balancer with a
    traceback (FileNotFoundError) instead of naming the holder. The modules now return ``path``
    as it is."""
    from ansible.module_utils import basic
    path = lock_path(tmp_path)
    holder = acquire(capsys, path, owner="ctl1")
    os.unlink(path)  # released meanwhile ...
    write_lock(path, owner="ctl3", acquired=NOW)
    real_exists = basic.os.path.exists

    def exists_then_gone(p):
        found = real_exists(p)
        if found and os.fsdecode(p) == str(path):
            os.unlink(path)  # ... right after exists() said yes
        return found

    monkeypatch.setattr(basic.os.path, "exists", exists_then_gone)
    res = acquire(capsys, path, owner="ctl2")
    assert res["rc"] == 1 and "locked by ctl3" in res["msg"] and res["locked_by"]["owner"] == "ctl3"
    assert not {"uid", "gid", "owner", "group", "mode", "state", "size"} & set(res)
    assert holder["token"]


@pytest.mark.parametrize("text, words", [
    ("[" * 100000 + "]" * 100000, "is not valid JSON (nested too deeply)"),
    ('{"owner": "x", "token": "abc", "acquired": 1, "expires": Infinity}', "has no numeric expires"),
    ('{"owner": "x", "token": "abc", "acquired": NaN, "expires": 2}', "has no numeric acquired"),
    ('{"owner": "x", "token": "abc", "acquired": 1e300, "expires": 2}', "has no numeric acquired"),
    ('{"owner": "x", "token": "abc", "acquired": 1, "expires": -1e300}', "has no numeric expires"),
])
def test_fuzzed_lock_files_are_corrupt_not_a_traceback(capsys, tmp_path, text, words):
    """Found by benchmarks/fuzz_parsers.py: RecursionError from json.loads, OverflowError when a
    time that json reads (Infinity, 1e300) was printed in the message naming the holder."""
    path = lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(bl.LockCorrupt) as exc:
        bl.read_lock(str(path))
    assert words in str(exc.value)
    for args in ({"owner": "me"}, {"token": "abc"}, {"state": "absent", "token": "abc"}):
        res = run_module(capsys, dict(args, path=str(path)))
        assert res["rc"] == 1 and words in res["msg"]
