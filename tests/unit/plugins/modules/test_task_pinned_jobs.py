# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pending jobs pinned to a task's old host follow its live copy, also after a crashed move is
resumed (issue 23, item 5): module_utils/task_pinned.py, the module task_pinned_jobs, and the
role task_rebalance's finish/resume path.

The fake qmaster is the real ``qstat -u '*' -f -r -xml`` of the local cluster in state ``mixed``
(tests/unit/fixtures/sge/captured/mixed/qstat_u_f_r.xml, see its PROVENANCE line) held as an
element tree: a test gives some of its jobs the names of registry tasks (``JB_name`` and
``full_job_name`` set to ``task.<job>.<task>``; the shapes are the captured ones), ``qstat``
prints the tree, and ``qalter -q``/``-l`` replace the job's ``hard_req_queue``/``hard_request``
elements the way Grid Engine replaces its hard lists. Jobs used (all owned by ``tester``):
304 ``cap_reserve`` pending, ``-q all.q@node001``; 300 ``cap_array_states`` pending (Eqw, qw,
hqw rows), ``-q all.q@node001``; 301 ``cap_suspended`` running, ``-q all.q@node001``; 302
``cap_host_bound`` running, ``-l h=node001 -q all.q``. A *pending* job with ``-l hostname=``
was not captured; that rewrite is checked on the parsed form (a dict) below.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gridengine.balancer.plugins.module_utils import task_pinned
from ansible_collections.gridengine.balancer.plugins.module_utils import task_registry as tr
from ansible_collections.gridengine.balancer.plugins.module_utils.sge_xml import parse_qstat
from ansible_collections.gridengine.balancer.plugins.modules import task_pinned_jobs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
CAPTURED = os.path.join(REPO, "tests", "unit", "fixtures", "sge", "captured", "mixed", "qstat_u_f_r.xml")


class FakeQmaster:
    """qstat prints the captured document; qalter replaces a job's hard lists in it."""

    def __init__(self, names):
        with open(CAPTURED, "rb") as handle:
            self.raw = handle.read()
        self.tree = ET.ElementTree(ET.fromstring(self.raw))
        self.calls = []
        for job in self.jobs():
            jid = int(job.findtext("JB_job_number"))
            if jid in names:
                for tag in ("JB_name", "full_job_name"):
                    if job.find(tag) is not None:
                        job.find(tag).text = names[jid]

    def jobs(self, jid=None):
        return [j for j in self.tree.iter("job_list")
                if jid is None or j.findtext("JB_job_number") == str(jid)]

    def qstat(self):
        # the captured prolog (declaration and schema attributes) stays as Grid Engine printed it
        return b'<?xml version="1.0"?>\n' + ET.tostring(self.tree.getroot())

    def qalter(self, argv):
        jid, opts = argv[-1], argv[1:-1]
        rows = self.jobs(jid)
        assert rows, "qalter on a job that does not exist: %s" % argv
        assert all(r.get("state") == "pending" for r in rows), "qalter on a running job: %s" % argv
        for opt, value in zip(opts[::2], opts[1::2]):
            for row in rows:
                if opt == "-q":
                    for old in row.findall("hard_req_queue"):
                        row.remove(old)
                    for queue in value.split(","):
                        ET.SubElement(row, "hard_req_queue").text = queue
                elif opt == "-l":
                    for old in row.findall("hard_request"):
                        row.remove(old)
                    for item in value.split(","):
                        name, _eq, val = item.partition("=")
                        ET.SubElement(row, "hard_request", name=name, resource_contribution="0.000000").text = val
                else:
                    raise AssertionError("unexpected qalter option %s" % opt)

    def run_command(self, _module, args, **_kwargs):
        self.calls.append(list(args))
        name = os.path.basename(args[0])
        if name == "qstat":
            return 0, self.qstat(), b""
        if name == "qalter":
            self.qalter(args)
            return 0, b'root@vm modified hard queue list of job %s\n' % args[-1].encode(), b""
        raise AssertionError("unexpected command %s" % args)

    def pending(self, jid):
        entries = [e for e in parse_qstat(self.qstat())["pending"] if e["id"] == jid]
        return [(e["hard_queues"], e["hard_requests"]) for e in entries]


def run_module(capsys, monkeypatch, fake, check=False, **args):
    def run_command(module, args, **kwargs):
        return fake.run_command(module, args, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda _self, name, required=False, opt_dirs=None: "/fake/sge/bin/lx-amd64/" + name)
    params = dict({"job": "itlogs", "task": "11", "source": "node001", "target": "node002",
                   "sge_root": "/nonexistent/sge", "_ansible_check_mode": check, "_ansible_diff": True}, **args)
    with patch_module_args(params):
        with pytest.raises(SystemExit) as exc:
            task_pinned_jobs.main()
    result = json.loads(capsys.readouterr().out)
    result["rc"] = exc.value.code
    return result


def qalters(fake):
    return [c[1:] for c in fake.calls if os.path.basename(c[0]) == "qalter"]


# ------------------------------------------------------------------------------ the module --

def test_a_pending_job_pinned_to_the_source_follows_and_a_rerun_changes_nothing(capsys, monkeypatch):
    fake = FakeQmaster({304: "task.itlogs.11"})
    result = run_module(capsys, monkeypatch, fake)
    assert result["rc"] == 0 and result["changed"], result
    assert qalters(fake) == [["-q", "all.q@node002", "304"]]
    assert fake.pending(304) == [(["all.q@node002"], {})]
    assert result["diff"] == {"before": "304: -q all.q@node001\n", "after": "304: -q all.q@node002\n"}
    again = run_module(capsys, monkeypatch, fake)
    assert again["rc"] == 0 and not again["changed"] and again["jobs"] == [], again
    assert len(qalters(fake)) == 1
    assert "no pending job of itlogs/11 is pinned to node001" in again["msg"]


def test_check_mode_names_the_job_and_runs_no_qalter(capsys, monkeypatch):
    fake = FakeQmaster({304: "task.itlogs.11"})
    result = run_module(capsys, monkeypatch, fake, check=True)
    assert result["changed"] and [j["id"] for j in result["jobs"]] == [304]
    assert result["msg"] == "would re-point 304 (task.itlogs.11): -q all.q@node001 -> all.q@node002"
    assert qalters(fake) == [] and fake.pending(304) == [(["all.q@node001"], {})]


def test_running_jobs_and_jobs_of_other_tasks_are_untouched(capsys, monkeypatch):
    # 301 (running, -q all.q@node001) and 302 (running, -l h=node001) are the task's own running
    # work; 300 is pending and pinned to node001 but works on another task
    fake = FakeQmaster({301: "task.itlogs.11", 302: "task.itlogs.11", 300: "task.itlogs.12"})
    result = run_module(capsys, monkeypatch, fake)
    assert result["rc"] == 0 and not result["changed"], result
    assert qalters(fake) == []
    assert fake.pending(300) and all(q == ["all.q@node001"] for q, _r in fake.pending(300))


def test_an_array_job_with_three_pending_rows_is_altered_once(capsys, monkeypatch):
    fake = FakeQmaster({300: "task.itlogs.11"})
    result = run_module(capsys, monkeypatch, fake)
    assert qalters(fake) == [["-q", "all.q@node002", "300"]], result
    assert all(q == ["all.q@node002"] for q, _r in fake.pending(300)) and len(fake.pending(300)) == 3


def test_jobs_of_other_users_are_left_when_owners_are_given(capsys, monkeypatch):
    fake = FakeQmaster({304: "task.itlogs.11"})
    result = run_module(capsys, monkeypatch, fake, owners=["etl"])
    assert not result["changed"] and qalters(fake) == []
    assert [s["id"] for s in result["skipped"]] == [304]
    assert "belongs to tester" in result["skipped"][0]["reason"]
    mine = run_module(capsys, monkeypatch, fake, owners=["tester"])
    assert mine["changed"] and qalters(fake) == [["-q", "all.q@node002", "304"]]


def test_bad_names_fail_before_any_command(capsys, monkeypatch):
    fake = FakeQmaster({})
    result = run_module(capsys, monkeypatch, fake, task="../11")
    assert result["failed"] and "task" in result["msg"] and fake.calls == []
    result = run_module(capsys, monkeypatch, fake, target="node002;rm")
    assert result["failed"] and "target" in result["msg"] and fake.calls == []


# -------------------------------------------------------------- the rewrite (parsed form) --

def _entry(jid, name, queues=(), requests=None, owner="tester"):
    return {"id": jid, "name": name, "owner": owner, "hard_queues": list(queues), "hard_requests": dict(requests or {})}


def test_a_host_name_request_is_rewritten_and_the_other_requests_kept():
    sge = {"pending": [_entry(7, "task.logs.3", requests={"mem_free": "1G", "hostname": "node001", "arch": "lx-amd64"})],
           "running": []}
    changes, skipped = task_pinned.plan_repoint(sge, "logs", "3", "node001", "node003")
    assert skipped == [] and changes[0]["args"] == ["-l", "mem_free=1G,hostname=node003,arch=lx-amd64"]
    assert sge["pending"][0]["hard_requests"]["hostname"] == "node001"  # the input is not changed


def test_only_the_source_entries_of_the_queue_list_change():
    sge = {"pending": [_entry(8, "task.logs.3", queues=["all.q@node001", "big.q", "all.q@node004", "all.q@@allhosts"],
                              requests={"h": "NODE001"})], "running": []}
    changes, _skipped = task_pinned.plan_repoint(sge, "logs", "3", "node001", "node003")
    assert changes[0]["args"] == ["-q", "all.q@node003,big.q,all.q@node004,all.q@@allhosts", "-l", "h=node003"]


@pytest.mark.parametrize("value", ["node00*", "node001|node002", "node001.example.org", "!node001"])
def test_expressions_and_other_spellings_are_not_pins(value):
    sge = {"pending": [_entry(9, "task.logs.3", requests={"hostname": value})], "running": []}
    assert task_pinned.plan_repoint(sge, "logs", "3", "node001", "node003") == ([], [])


def test_an_array_job_with_running_tasks_is_reported_not_altered():
    sge = {"pending": [_entry(10, "task.logs.3", queues=["all.q@node001"])],
           "running": [{"id": 10, "name": "task.logs.3", "task": "1"}]}
    changes, skipped = task_pinned.plan_repoint(sge, "logs", "3", "node001", "node003")
    assert changes == [] and "running tasks" in skipped[0]["reason"]


# ------------------------------------------------------- a crashed move, resumed (the role) --

def _load_yaml(*parts):
    from ansible.parsing.dataloader import DataLoader
    return DataLoader().load_from_file(os.path.join(REPO, *parts))


def test_a_move_that_crashed_after_the_copy_re_points_when_resumed_and_a_rerun_changes_nothing(
        capsys, monkeypatch, tmp_path):
    """The registry and Grid Engine as the role leaves and reads them: the move of itlogs/11
    from node001 to node002 is recorded, the target's copy verified, then the controller dies
    before the registry is switched. The next run finds the record and a complete target copy
    (resume.yml), so it finishes the move with finish.yml's steps: switch (expect the source),
    re-point (task_pinned_jobs with the record's source and target: no job ids needed), drop."""
    path = str(tmp_path / "tasks.json")
    tr.update(path, lambda reg: tr.define_job(reg, "itlogs", tasks={"11": "node001", "12": "node001"}))
    tr.update(path, lambda reg: tr.begin_move(reg, "itlogs", "11", "node001", "node002", "live", now=1.0))
    # the crash: the data is on node002 (verified), the registry still points at node001
    fake = FakeQmaster({304: "task.itlogs.11", 300: "task.itlogs.12", 301: "task.itlogs.11"})

    # the next run: resume.yml finishes every recorded move whose target holds the copy
    record = tr.read(path)["moves"]["itlogs/11"]
    tr.update(path, lambda reg: tr.switch(reg, record["job"], record["task"], record["target"], expect=record["source"]))
    result = run_module(capsys, monkeypatch, fake, job=record["job"], task=record["task"],
                        source=record["source"], target=record["target"])
    tr.update(path, lambda reg: tr.end_move(reg, record["job"], record["task"]))
    assert result["changed"] and qalters(fake) == [["-q", "all.q@node002", "304"]]
    assert all(q == ["all.q@node001"] for q, _r in fake.pending(300))   # another task's job
    reg = tr.read(path)
    assert reg["moves"] == {} and reg["jobs"]["itlogs"]["tasks"]["11"]["live"] == "node002"

    # a crash after the re-point and before the record was dropped: the finish runs again
    # (switch with expect is idempotent, the module finds nothing left to do)
    again = run_module(capsys, monkeypatch, fake, job="itlogs", task="11", source="node001", target="node002")
    _b, _a, changed = tr.update(path, lambda reg: tr.switch(reg, "itlogs", "11", "node002", expect="node001"))
    assert not again["changed"] and not changed and len(qalters(fake)) == 1


def test_the_role_finishes_resumed_moves_through_the_same_re_point_step():
    finish = _load_yaml("roles", "task_rebalance", "tasks", "finish.yml")
    step = [t for t in finish if "gridengine.balancer.task_pinned_jobs" in t]
    assert len(step) == 1, [t.get("name") for t in finish]
    spec = step[0]["gridengine.balancer.task_pinned_jobs"]
    assert spec["source"] == "{{ task_rebalance_f.source }}" and spec["target"] == "{{ task_rebalance_f.target }}"
    assert not any("ansible.builtin.command" in t for t in finish)  # no raw qalter any more
    names = [t.get("name") for t in finish]
    assert names.index(step[0]["name"]) < names.index("Drop the record of the move")
    resume = _load_yaml("roles", "task_rebalance", "tasks", "resume.yml")
    finishing = [t for t in resume if t.get("ansible.builtin.include_tasks") == "finish.yml"]
    assert finishing and finishing[0]["vars"]["task_rebalance_f"] == "{{ task_rebalance_inflight }}"
    # check mode runs the resume too (every step is a module that only reports in check mode)
    rounds = _load_yaml("roles", "task_rebalance", "tasks", "round.yml")[0]["block"]
    res = [t for t in rounds if t.get("ansible.builtin.include_tasks") == "resume.yml"][0]
    assert "when" not in res


@pytest.mark.parametrize("option", ["job", "task", "source", "target"])
@pytest.mark.parametrize("value", ["$(touch /tmp/owned)", "a\nb", "a b", "x;y", "-q", "", "a" * 300, "../x"])
def test_hostile_names_fail_naming_the_option_and_run_nothing(capsys, monkeypatch, option, value):
    fake = FakeQmaster({})
    result = run_module(capsys, monkeypatch, fake, **{option: value})
    assert result["failed"] and result["msg"].startswith(option) and fake.calls == [], result


@pytest.mark.parametrize("value", ["task\n", "a@b"])
def test_a_prefix_that_could_not_name_a_job_is_refused(capsys, monkeypatch, value):
    fake = FakeQmaster({})
    result = run_module(capsys, monkeypatch, fake, job_name_prefix=value)
    assert result["failed"] and "job_name_prefix" in result["msg"] and fake.calls == []
