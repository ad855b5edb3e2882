# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""balancer_journal attempt=true: bounded replays of a node operation (issue 20, finding 6)."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.modules import balancer_journal
from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_journal as bj

NOW = 1700000000.0


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(bj, "_now", lambda: NOW)


def run(capsys, args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            balancer_journal.main()
    return json.loads(capsys.readouterr().out)


def test_replays_are_counted_then_the_operation_is_parked_loudly(capsys, tmp_path, monkeypatch):
    said = []
    real_warn = balancer_journal.AnsibleModule.warn

    def warn(self, warning):
        said.append(warning)
        return real_warn(self, warning)
    # recorded here: the warnings in the result depend on ansible-core's process-wide warning
    # state, which other tests of the same process leave behind
    monkeypatch.setattr(balancer_journal.AnsibleModule, "warn", warn)
    path = str(tmp_path / "c" / "journal.json")
    base = {"path": path, "node": "node005", "operation": "leave"}
    assert run(capsys, base)["changed"]
    for n in (1, 2):
        result = run(capsys, dict(base, attempt=True, max_attempts=2))
        assert result["changed"] and result["record"]["attempts"] == n and not result["parked"]
        assert not said
    result = run(capsys, dict(base, attempt=True, max_attempts=2, error="remove_rest failed"))
    assert result["changed"] and result["parked"] and result["record"]["parked"]
    warnings = json.dumps(said)
    assert "parked after 2 attempts" in warnings and "node005" in warnings and "not be replayed" in warnings
    assert "remove_rest failed" in warnings
    # parked: nothing more changes; the record stays
    result = run(capsys, dict(base, attempt=True, max_attempts=2))
    assert not result["changed"] and result["parked"]
    assert bj.read_journal(path)[0][0]["parked"] is True


def test_check_mode_changes_nothing(capsys, tmp_path):
    path = str(tmp_path / "c" / "journal.json")
    run(capsys, {"path": path, "node": "node005", "operation": "leave"})
    before = open(path).read()
    result = run(capsys, {"path": path, "node": "node005", "operation": "leave", "attempt": True}, check_mode=True)
    assert result["changed"] and result["record"]["attempts"] == 1
    assert open(path).read() == before


def test_attempt_needs_state_present(capsys, tmp_path):
    result = run(capsys, {"path": str(tmp_path / "j.json"), "node": "n", "state": "absent", "attempt": True})
    assert result["failed"] and "attempt" in result["msg"]
