# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node operation that keeps failing is parked, not replayed forever (issue 20, finding 6).

Before, a leave that failed (a commented /etc/hosts line) stayed in the journal and every later
poll replayed it into the same failure: the balancer stopped acting. Now every replay counts an
attempt (module_utils.balancer_journal.attempt); after ``max_attempts`` failed attempts the
record is parked: kept (the node stays excluded from the plan and a person is told), never
replayed again, while the rest of the poll goes on. Standard library and pytest only (also run
under the nodes' /usr/bin/python3).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_journal as bj

NOW = 1700000000.0


def _ops():
    ops, dummy, dummy = bj.record([], "node005", "leave", now=NOW)
    ops, dummy, dummy = bj.record(ops, "node006", "join", now=NOW)
    return ops


def test_attempts_are_counted_and_the_operation_is_parked_after_the_limit():
    ops = _ops()
    for n in (1, 2, 3):
        ops, changed, entry = bj.attempt(ops, "node005", max_attempts=3, now=NOW + n)
        assert changed and entry["attempts"] == n and not entry.get("parked")
        assert bj.replayable(ops) == ops                    # still replayed
    ops, changed, entry = bj.attempt(ops, "node005", max_attempts=3, error="hosts line", now=NOW + 4)
    assert changed and entry["parked"] is True and entry["attempts"] == 3
    assert entry["parked_at"] == NOW + 4 and entry["last_error"] == "hosts line"
    assert [e["node"] for e in bj.replayable(ops)] == ["node006"]
    assert [e["node"] for e in bj.parked(ops)] == ["node005"]
    # a parked record is not counted again and stays (the node stays out of the plan)
    again, changed, entry = bj.attempt(ops, "node005", max_attempts=3, now=NOW + 5)
    assert not changed and again == ops and bj.find(again, "node005") is not None


def test_the_other_operations_are_untouched():
    ops = _ops()
    ops, dummy, dummy = bj.attempt(ops, "node005", max_attempts=1, now=NOW)
    ops, dummy, entry = bj.attempt(ops, "node005", max_attempts=1, now=NOW)
    assert entry["parked"]
    assert bj.find(ops, "node006") == {"node": "node006", "operation": "join", "started": NOW, "detail": {}}


def test_a_parked_journal_round_trips_and_old_journals_load(tmp_path):
    path = str(tmp_path / "journal.json")
    ops = _ops()
    ops, dummy, dummy = bj.attempt(ops, "node005", max_attempts=0, error="x\ny", now=NOW)
    with open(path, "w") as handle:
        handle.write(bj.render(ops))
    loaded, exists = bj.read_journal(path)
    assert exists and loaded == ops and bj.parked(loaded)[0]["node"] == "node005"
    # a journal of the previous version (no attempts) is still a journal
    with open(path, "w") as handle:
        json.dump({"schema": 1, "operations": [{"node": "n1", "operation": "join", "started": NOW}]}, handle)
    assert bj.read_journal(path)[0][0].get("attempts", 0) == 0


@pytest.mark.parametrize("bad", [{"attempts": -1}, {"attempts": "3"}, {"attempts": True}, {"parked": "yes"},
                                 {"last_error": 5}])
def test_bad_attempt_fields_make_the_journal_unusable(tmp_path, bad):
    path = str(tmp_path / "journal.json")
    entry = dict({"node": "n1", "operation": "join", "started": NOW}, **bad)
    with open(path, "w") as handle:
        json.dump({"schema": 1, "operations": [entry]}, handle)
    with pytest.raises(bj.JournalError, match="n1"):
        bj.read_journal(path)


def test_unknown_node_and_bad_limit():
    with pytest.raises(ValueError):
        bj.attempt(_ops(), "node005", max_attempts=-1)
    ops, changed, entry = bj.attempt(_ops(), "node099", max_attempts=3)
    assert not changed and entry is None
